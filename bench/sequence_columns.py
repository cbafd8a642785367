"""Is the TLP-style sequence model ahead of CWM's ranker on the training tasks too, and does CWM
gain from blending it in (:mod:`cwm.model.sequence_head`)? Measured on the training tasks only (issue #12; docs/decisions.md §71).

Held out, the sequence-only baseline (:class:`cwm.model.baselines.sequence_model.SequenceBaseline`,
a GRU over the action rows trained with a pairwise loss) passed CWM on every column (decision 70).
This bench puts both in decision 52's protocol: leave one network out over the zoo's training
tasks, the breadth tasks fitted on in every fold (as shipped: each re-collected task with its Zen 4
candidates, the others from ``data/dataset_breadth``), the probe's rows (≤ 64 candidates a task).
In each fold, for each seed, the shipped ranker recipe and the sequence model are fitted on the
same tasks and score the validated network. Rows:

* ``ranker``: CWM's ranker (``[ẑ_T - z_0, stats]``, centred by the design-space reference);
* ``sequence``: the sequence model alone;
* ``blend_<w>``: ``(1 - w)`` × the ranker's score + ``w`` × the sequence model's, each in units
  of its spread within a task (the mean over the fold's fitting tasks of the standard deviation
  of their in-sample scores): constants of the fold, so a candidate's score does not depend on
  the others scored with it, as in search;
* ``zblend_<w>``: the same with each score standardised within the validated task itself;
* with ``--losses pairwise,lambdarank``, the rows of each further training loss of the sequence
  model (``SequenceConfig.loss``) are named ``sequence@<loss>``, ``blend@<loss>_<w>`` and
  ``zblend@<loss>_<w>``; ``--weights`` lists the blend weights (default 0.25, 0.5, 0.75);
* with ``--checkpoints 10,20,30``, the same rows of the model after those epochs of its training
  (tagged ``@e<epochs>``), so one run compares training lengths;
* with ``--state-input displacement`` (or ``absolute``, ``start``), each step of the sequence model
  reads a state as well (``SequenceConfig.state_input``: the shipped TransH's rollout, frozen, as
  its displacement from the start, or itself; or the start state alone); its rows are tagged
  ``@<state input>``.

Nothing of either blend is learned from the validated network.

    PYTHONPATH=python .venv/bin/python bench/sequence_columns.py [--seeds 0,1,2] [--epochs 40]
        [--checkpoints 10,20,30] [--weights 0.25,0.5,0.75] [--losses pairwise] [--state-input none] [--out bench/results/probe_sequence_network.json]

The result is written after every seed; a run that is stopped starts again from the beginning.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

BLEND_WEIGHTS = (0.25, 0.5, 0.75)


def standardised(scores: np.ndarray) -> np.ndarray:
    """``scores`` less their mean over the task, in units of their spread (all zero when constant)."""
    scores = np.asarray(scores, np.float64)
    spread = scores.std()
    return (scores - scores.mean()) / spread if spread > 0 else np.zeros_like(scores)


def row_names(loss: str, weights, epochs: int | None = None, state_input: str = "none") -> tuple[str, list[str], list[str]]:
    """``(sequence row, blend rows, zblend rows)`` of a training loss of the sequence model, of the
    state it reads (tag ``@<state_input>``), and of an earlier epoch of its training
    (``--checkpoints``: tag ``@e<epochs>``); the shipped loss (``pairwise``) on the actions alone
    after all its epochs keeps the plain names."""
    tag = (("" if loss == "pairwise" else f"@{loss}") + ("" if state_input == "none" else f"@{state_input}")
           + ("" if epochs is None else f"@e{epochs}"))
    return f"sequence{tag}", [f"blend{tag}_{w}" for w in weights], [f"zblend{tag}_{w}" for w in weights]


def add_sequence_rows(scored, names, weights, sequence, fitting, validated, ranker_scores, ranker_spread, log,
                      label: str) -> None:
    """Append the rows ``names`` (of :func:`row_names`) of the sequence model as it is now."""
    from cwm.model.sequence_head import SequenceBlend, within_task_spread

    spreads = (ranker_spread, within_task_spread([sequence.score(t) for t in fitting]))
    log(f"{label}: in-sample spreads ranker {spreads[0]:.4f}, sequence {spreads[1]:.4f}")
    sequence_row, blends, zblends = names
    scored.setdefault(sequence_row, [])
    for t, r in zip(validated, ranker_scores):
        s = sequence.score(t)
        scored[sequence_row].append((t["lat"], s, t["weight"]))
        for w, blend, zblend in zip(weights, blends, zblends):
            scored.setdefault(blend, []).append((t["lat"], SequenceBlend(w, *spreads)(r, s), t["weight"]))
            z = SequenceBlend(w, 1.0, 1.0)(standardised(r), standardised(s))
            scored.setdefault(zblend, []).append((t["lat"], z, t["weight"]))


def fold_scores(tasks, fit_only, cfg, seed: int, epochs: int, log, weights=BLEND_WEIGHTS,
                losses=("pairwise",), checkpoints=(), state_input: str = "none") -> dict[str, list]:
    """``{row: [(latencies, scores, weight) of every validated task]}`` over the network folds;
    ``checkpoints``: earlier epochs of the same training also scored (the training has no
    schedule that depends on its length, so epoch ``k`` of it is a ``k``-epoch model)."""
    from vector_alignment import fit, rows

    from cwm.model.baselines.sequence_model import SequenceBaseline
    from cwm.model.probe import folds_of
    from cwm.model.sequence_head import within_task_spread

    scored: dict[str, list] = {"ranker": []}
    for network, val_keys in folds_of(tasks, "network", 5, 0):
        fitting = [t for t in tasks if t["key"] not in set(val_keys)] + fit_only
        validated = [t for t in tasks if t["key"] in set(val_keys)]
        ranker = fit(fitting, dataclasses.replace(cfg, seed=seed))
        ranker_spread = within_task_spread([np.asarray(ranker.predict(rows(t)), np.float64) for t in fitting])
        ranker_scores = [np.asarray(ranker.predict(rows(t)), np.float64) for t in validated]
        scored["ranker"] += [(t["lat"], r, t["weight"]) for t, r in zip(validated, ranker_scores)]
        for loss in losses:
            def checkpoint(done: int, sequence, loss=loss):
                if done in checkpoints and done != epochs:
                    add_sequence_rows(scored, row_names(loss, weights, done, state_input), weights, sequence, fitting, validated,
                                      ranker_scores, ranker_spread, log,
                                      f"seed {seed}, without {network}, {loss}, epoch {done}")

            started = time.perf_counter()
            sequence = SequenceBaseline(seed=seed, epochs=epochs, time_budget_s=float("inf"), loss=loss,
                                        state_input=state_input)
            sequence.fit(fitting, after_epoch=checkpoint if checkpoints else None)
            log(f"seed {seed}, without {network}: sequence model ({loss}) fitted in {time.perf_counter() - started:.0f} s "
                f"({sequence.steps} steps, loss {sequence.history[0]:.4f} -> {sequence.history[-1]:.4f})")
            add_sequence_rows(scored, row_names(loss, weights, None, state_input), weights, sequence, fitting, validated, ranker_scores,
                              ranker_spread, log, f"seed {seed}, without {network}, {loss}, epoch {epochs}")
    return scored


def main(argv=None) -> int:
    from breadth_candidates import recollected_tasks, variants
    from common import machine
    from vector_alignment import save_progress, stopwatch_log, training_arguments, training_setup

    from cwm.model.metrics import summarize

    args = training_arguments(argv, __doc__, "probe_sequence_network.json", lists=("seeds", "weights", "losses", "checkpoints"),
                              paths={"zen4-data": ROOT / "data" / "dataset_breadth_zen4", "epochs": 40,
                                     "state-input": "none"})
    seeds = [int(s) for s in (args.seeds or ["0", "1", "2"])]
    weights = tuple(float(w) for w in args.weights) if args.weights else BLEND_WEIGHTS
    losses = tuple(args.losses or ["pairwise"])
    checkpoints = tuple(int(e) for e in (args.checkpoints or []))
    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data, with_fb=True)
    tasks, cfg = setup["tasks"], setup["model"].ranker.cfg
    zen4 = recollected_tasks(args.zen4_data, setup["fit_only"], setup, log, with_fb=True)
    fit_only = variants(setup["fit_only"], zen4)["zen4_64"]
    if args.state_input != "none":
        from cwm.model.baselines.sequence_model import step_states
        from cwm.model.transition import numpy_weights

        weights_of = numpy_weights(setup["model"].transition)
        for t in tasks + fit_only:
            t["steps"] = step_states(t["z0"], t["fb"], weights_of, setup["model"].tcfg, args.state_input)
        log(f"rolled-out states of {len(tasks) + len(fit_only)} tasks")
    log(f"{len(tasks)} zoo tasks validated, {len(fit_only)} breadth tasks fitted on "
        f"({sum(len(t['lat']) for t in fit_only)} rows)")
    out = {"benchmark": "probe_sequence_network", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "split": "train", "protocol": "leave one network out, the breadth tasks fitted on",
           "model_fingerprint": setup["fingerprint"], "tasks": len(tasks), "fit_only_tasks": len(fit_only),
           "sequence_epochs": int(args.epochs), "sequence_losses": list(losses),
           "sequence_checkpoints": list(checkpoints), "sequence_state_input": args.state_input, "blend": "(1 - w) ranker + w (ranker spread / sequence spread) sequence; the spreads: "
                    "in-sample, the fold's fitting tasks (zblend: each score standardised within the task)",
           "network": {}}
    for seed in seeds:
        scored = fold_scores(tasks, fit_only, cfg, seed, int(args.epochs), log, weights, losses, checkpoints,
                             args.state_input)
        for row, results in scored.items():
            out["network"].setdefault(row, {})[f"seed_{seed}"] = summarize(results)
        log(f"seed {seed}: " + "  ".join(f"{row} {m[f'seed_{seed}']['top1']:.3f}/"
                                         f"{m[f'seed_{seed}']['top1_task_mean']:.3f}/"
                                         f"{m[f'seed_{seed}']['pairwise_acc']:.4f}"
                                         for row, m in out["network"].items()))
        save_progress(args.out, out, start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
