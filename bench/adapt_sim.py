"""Online adaptation replayed on the training tasks: which prior and which ``AdaptConfig`` find a
task's fast candidates in the fewest measurements (issue #12, search; no held-out task is used).

Search measures the top of what the cost model ranks, a round at a time, and CWM's cost model
refits its task model after each round (``cwm.cost_model.task_adaptation``). This replays that
loop on a fixed pool: the probe's cached candidates of every zoo *training* task (≤ 64 a task,
measured). For each network left out (the probe's ``--group-by network`` folds), the prior is the
model's ranker config fitted on the other networks' tasks and the breadth tasks; then, for each
of the left-out network's tasks, ``--per-round`` unmeasured candidates with the highest margin
``prior + w(n) * residual`` are "measured" (their latency revealed), the residual is refitted
with :func:`~cwm.cost_model.task_adaptation.fit_task_model`, and so on. Reported per variant: the mean
over tasks of ``pool best / best found`` after each round (1.0 = the pool's best was found).

It is a pool, not MetaSchedule's evolutionary search: the candidates are those the dataset
measured, so it says how the ranking and its adaptation order a task's candidates, cheaply and
deterministically, not what a tuning run reaches.

    PYTHONPATH=python .venv/bin/python bench/adapt_sim.py [--per-round 4] [--rounds 6]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

#: name -> (ranker input, AdaptConfig fields); fields None: the prior alone, no residual
VARIANTS = {
    "prior only": ("zt_hat+stats", None),
    "default": ("zt_hat+stats", {}),
    "half weight at 4": ("zt_hat+stats", {"half_weight_at": 4}),
    "half weight at 64": ("zt_hat+stats", {"half_weight_at": 64}),
    "min measured 4": ("zt_hat+stats", {"min_measured": 4}),
    "100 rounds": ("zt_hat+stats", {"rounds": 100}),
    "no transition prior, default": ("z0+stats", {}),
}


def top_unmeasured(order, measured: list[int], per_round: int) -> list[int]:
    """The first ``per_round`` of ``order`` (candidates by falling margin) not yet measured: what
    search measures a round (MetaSchedule's pick, ε-greedy aside)."""
    taken = set(measured)
    return [int(i) for i in order if i not in taken][:per_round]


def replay(lat: np.ndarray, x: np.ndarray, prior: np.ndarray, cfg, per_round: int, rounds: int,
           pick=top_unmeasured) -> list[float]:
    """``pool best / best found`` after each round for one task; ``cfg``: the
    :class:`~cwm.cost_model.task_adaptation.AdaptConfig` whose task model is refitted after each
    round (:func:`~cwm.cost_model.task_adaptation.fit_task_model`, the cost model's own), or None:
    the prior alone; ``pick(order, measured, per_round)``: a round's candidates
    (:func:`top_unmeasured` by default)."""
    from cwm.cost_model.task_adaptation import fit_task_model

    lat = np.where(np.isfinite(lat) & (lat > 0), lat, np.inf)
    best = lat[np.isfinite(lat)].min()
    measured: list[int] = []
    margin, out = prior.copy(), []
    for _ in range(rounds):
        measured += pick(np.argsort(-margin, kind="stable"), measured, per_round)
        found = lat[measured].min()
        out.append(float(best / found) if np.isfinite(found) else 0.0)
        if cfg is not None:
            idx = np.asarray(measured)
            task_model = fit_task_model(x[idx], prior[idx], lat[idx], cfg)
            if task_model is not None:
                margin = task_model.margin(x, prior)
    return out


def paired_difference(a: np.ndarray, b: np.ndarray, draws: int = 2000, seed: int = 0) -> list[list[float]]:
    """Per round: the mean of ``a - b`` over tasks and its 95% bootstrap interval (tasks resampled,
    seeded). ``a``, ``b``: ``[tasks, rounds]``, the same tasks in the same order."""
    d = a - b
    idx = np.random.default_rng(seed).integers(0, len(d), (draws, len(d)))
    boot = d[idx].mean(1)
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    return [[float(m), float(x), float(y)] for m, x, y in zip(d.mean(0), lo, hi)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT / "data" / "dataset"))
    p.add_argument("--fit-only-data", default=str(ROOT / "data" / "dataset_breadth"))
    p.add_argument("--per-round", type=int, default=4)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "adapt_sim.json"))
    args = p.parse_args(argv)

    from checkpoint import write_json
    from common import machine
    from cwm.cost_model.cwm_model import AdaptConfig
    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.probe import folds_of, representation, training_tasks
    from cwm.model.ranker import Ranker
    from cwm.model.world_model import WorldModel

    start = time.perf_counter()
    model_dir = default_model_dir()
    model, fingerprint = WorldModel.load(model_dir), model_fingerprint(model_dir)
    cache = Path.home() / ".cache" / "cwm" / "probe"
    tasks, fit_only = training_tasks(DatasetLoader(args.data), model, [args.fit_only_data], cache, fingerprint, 64,
                                     0, False, lambda *_: None)
    ranker_cfg = dataclasses.replace(model.ranker.cfg, seed=0)
    by_key = {t["key"]: t for t in tasks}
    curves = {name: [] for name in VARIANTS}
    for fold, val_keys in folds_of(tasks, "network", 5, 0):
        fit = [t for k, t in by_key.items() if k not in set(val_keys)] + fit_only
        for rep in sorted({r for r, _ in VARIANTS.values()}):
            ranker = Ranker(ranker_cfg).fit(np.concatenate([representation(rep, t, None) for t in fit]),
                                            np.concatenate([t["lat"] for t in fit]),
                                            np.concatenate([np.full(len(t["lat"]), i) for i, t in enumerate(fit)]))
            for name, (r, fields) in VARIANTS.items():
                if r != rep:
                    continue
                cfg = None if fields is None else dataclasses.replace(AdaptConfig(), **fields)
                for k in val_keys:
                    t = by_key[k]
                    x = representation(rep, t, None).astype(np.float32)
                    curves[name].append(replay(t["lat"], x, np.asarray(ranker.predict(x), np.float64), cfg,
                                               args.per_round, args.rounds))
        print(f"{fold}: {len(val_keys)} tasks ({time.perf_counter() - start:.0f} s)", flush=True)
    result = {name: [float(v) for v in np.mean(c, 0)] for name, c in curves.items()}
    paired = {name: paired_difference(np.asarray(c), np.asarray(curves["default"])) for name, c in curves.items()
              if name != "default"}
    for name, c in result.items():
        diff = paired.get(name)
        print(f"{name:<32} " + " ".join(f"{v:.3f}" for v in c) + (
            "   vs default: " + " ".join(f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in diff) if diff else ""))
    write_json(args.out, {
        "benchmark": "adapt_sim", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
        "model_fingerprint": fingerprint,
        "tasks": len(tasks), "fit_only_tasks": len(fit_only), "per_round": args.per_round, "rounds": args.rounds,
        "measured_after_round": [args.per_round * (i + 1) for i in range(args.rounds)],
        "variants": {n: {"ranker_input": r, "adapt": f} for n, (r, f) in VARIANTS.items()},
        "mean_best_ratio": result, "vs_default_mean_ci95": paired, "task_rows": {n: len(c) for n, c in curves.items()},
        "note": "pool = the probe's cached candidates (<= 64 a task) of the zoo's training tasks; prior fitted "
                "without the task's network (leave one network out) on the model's ranker config",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
