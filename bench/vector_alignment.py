"""Does the ranker gain from the vector-register fill (``cwm.model.vector_alignment``)? Measured on
the training tasks only (issue #12; docs/decisions.md §66), with and without those 8 columns, the
shipped ranker recipe (its config, rows beside the rows less the task's design-space reference):

* ``network``: leave one network out over the zoo's training tasks, the breadth tasks fitted on
  in every fold (decision 52's protocol), ranker seeds 0, 1, 2;
* ``all_tasks``: 5 task-grouped folds over every training task, zoo and breadth validated alike,
  metrics per origin, fold seeds 0, 1, 2 (the generated workloads hold shapes the zoo lacks);
* ``replay``: ``bench/adapt_sim.py``'s search replay with the default ``AdaptConfig``: the prior
  fitted without the task's network, then 4 candidates a round for 6 rounds, the per-task
  residual refitted on the same rows; mean ``pool best / best found`` after each round and the
  paired 95% interval of the difference.

    PYTHONPATH=python .venv/bin/python bench/vector_alignment.py [--out bench/results/probe_vector_alignment.json]
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

SEEDS = (0, 1, 2)
REPRESENTATION, CENTRING = "zt_hat+stats", "both"  # the shipped ranker's rows (decision 62)


def rows(task) -> np.ndarray:
    from cwm.model.probe import representation

    return representation(REPRESENTATION, task, None, CENTRING).astype(np.float32)


def fit(tasks, cfg, transform=None, feature_weights=None):
    """The ranker fitted on ``tasks``' rows, each passed through ``transform`` where given."""
    from cwm.model.ranker import Ranker

    transform = transform or (lambda x: x)
    return Ranker(cfg).fit(np.concatenate([transform(rows(t)) for t in tasks]),
                           np.concatenate([t["lat"] for t in tasks]),
                           np.concatenate([np.full(len(t["lat"]), i) for i, t in enumerate(tasks)]), feature_weights)


def network_cv(tasks, fit_only, cfg, variant=None) -> dict:
    """Leave one network out, ranker seeds :data:`SEEDS`. ``variant(fitting tasks)`` (optional)
    gives a fold's ``(transform of the rows, feature weights)``."""
    from cwm.model.metrics import summarize
    from cwm.model.probe import folds_of

    out = {}
    for seed in SEEDS:
        scored = []
        for _, val_keys in folds_of(tasks, "network", 5, 0):
            fitting = [t for t in tasks if t["key"] not in set(val_keys)] + fit_only
            transform, weights = variant(fitting) if variant else (None, None)
            ranker = fit(fitting, dataclasses.replace(cfg, seed=seed), transform, weights)
            transform = transform or (lambda x: x)
            scored += [(t["lat"], ranker.predict(transform(rows(t))), t["weight"])
                       for t in tasks if t["key"] in set(val_keys)]
        out[f"ranker_seed_{seed}"] = summarize(scored)
    return out


def network_row(tasks, fit_only, cfg) -> dict:
    """:func:`network_cv` with the breadth data it fitted on counted (tasks, rows)."""
    return {"fit_only_tasks": len(fit_only), "fit_only_rows": int(sum(len(t["lat"]) for t in fit_only)),
            **network_cv(tasks, fit_only, cfg)}


def all_tasks_cv(tasks, cfg) -> dict:
    from cwm.model.metrics import summarize
    from cwm.model.probe import task_folds

    out = {}
    for seed in SEEDS:
        scored = {"zoo": [], "breadth": []}
        for val_keys in task_folds([t["key"] for t in tasks], 5, seed):
            ranker = fit([t for t in tasks if t["key"] not in set(val_keys)], dataclasses.replace(cfg, seed=seed))
            for t in tasks:
                if t["key"] in set(val_keys):
                    scored[t["origin"]].append((t["lat"], ranker.predict(rows(t)), t["weight"]))
        out[f"fold_seed_{seed}"] = {origin: summarize(s) for origin, s in scored.items()}
    return out


def search_replay(tasks, fit_only, cfg, variant=None) -> np.ndarray:
    """``[validated tasks, rounds]`` replay curves, the prior fitted out of network (``variant``:
    as in :func:`network_cv`)."""
    from adapt_sim import replay

    from cwm.cost_model.cwm_model import AdaptConfig
    from cwm.model.probe import folds_of

    curves = []
    for _, val_keys in folds_of(tasks, "network", 5, 0):
        fitting = [t for t in tasks if t["key"] not in set(val_keys)] + fit_only
        transform, weights = variant(fitting) if variant else (None, None)
        ranker = fit(fitting, cfg, transform, weights)
        transform = transform or (lambda x: x)
        for t in tasks:
            if t["key"] in set(val_keys):
                x = transform(rows(t))
                curves.append(replay(t["lat"], x, np.asarray(ranker.predict(x), np.float64), AdaptConfig(), 4, 6))
    return np.asarray(curves)


def replay_row(curves: dict, name: str, base: str) -> dict:
    """The mean search replay of ``curves[name]`` per round and, unless it is ``base``, its paired
    difference from ``curves[base]`` (``vs_<base>``: per round the mean and its 95% interval)."""
    from adapt_sim import paired_difference

    row = {"mean_best_ratio": [float(x) for x in curves[name].mean(0)]}
    if name != base:
        row[f"vs_{base}"] = paired_difference(curves[name], curves[base])
    return row


def network_and_replay(out: dict, curves: dict, name: str, base: str, tasks, fit_only, cfg, log) -> None:
    """One variant of a bench: :func:`network_row` into ``out["network"][name]``, the search replay
    into ``curves[name]`` and :func:`replay_row` into ``out["replay"][name]``, each logged."""
    out["network"][name] = network_row(tasks, fit_only, cfg)
    log(f"{name}: {seed_line(out['network'][name])}")
    curves[name] = search_replay(tasks, fit_only, cfg)
    out["replay"][name] = replay_row(curves, name, base)
    log(f"{name} replayed: " + " ".join(f"{x:.3f}" for x in curves[name].mean(0)))


def save_progress(path: str, out: dict, start: float) -> None:
    """``out`` with the seconds since ``start`` (``time.perf_counter``), written atomically."""
    from checkpoint import write_json

    out["seconds"] = round(time.perf_counter() - start, 1)
    write_json(path, out)


def with_columns(tasks, model, everything, target, columns) -> None:
    """Append ``columns(ints, numbers, lengths) -> [B, k]`` (a trace featurizer) to every task's
    stats and to its design-space reference (the mean over the same 32 samples), in place."""
    for t in tasks:
        fb = t["fb"]
        t["stats"] = np.concatenate([t["stats"], columns(fb.ints, fb.numbers, fb.lengths)], 1)
        if t["ref"] is not None:
            sfb = model.design_samples(everything.workload(t["key"]), target, 32, 0)
            t["ref"] = np.concatenate([t["ref"], columns(sfb.ints, sfb.numbers, sfb.lengths).mean(0)])


def training_setup(data: str, fit_only_data: str, with_fb: bool = False) -> dict:
    """The shipped model and the probe's rows of every training task (zoo, then breadth), each with
    its ``origin`` and its design-space reference (32 samples, as the shipped ranker's)."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import open_datasets
    from cwm.model import default_model_dir
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.probe import training_tasks
    from cwm.model.probe_features import design_space_reference
    from cwm.model.world_model import WorldModel

    model_dir = default_model_dir()
    model, fingerprint = WorldModel.load(model_dir), model_fingerprint(model_dir)
    loader, cache = DatasetLoader(data), Path.home() / ".cache" / "cwm" / "probe"
    tasks, fit_only = training_tasks(loader, model, [fit_only_data], cache, fingerprint, 64, 0, False,
                                     lambda *_: None, with_fb=with_fb)
    everything = open_datasets([data, fit_only_data])
    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    for origin, group in (("zoo", tasks), ("breadth", fit_only)):
        for t in group:
            t["origin"] = origin
            t["ref"] = design_space_reference(everything, model, t["key"], target, cache, fingerprint, 32)
    return {"model": model, "model_dir": model_dir, "fingerprint": fingerprint, "tasks": tasks,
            "fit_only": fit_only, "everything": everything, "target": target}


def stopwatch_log(start: float):
    """``log(message)``: the message after the seconds since ``start`` (``time.perf_counter``)."""
    return lambda message: print(f"{time.perf_counter() - start:6.0f} s  {message}", flush=True)


def seed_line(network: dict) -> str:
    """A :func:`network_cv` result as ``top-1/per-task top-1/pairwise`` for each ranker seed (the
    counts that :func:`network_row` adds beside the seeds are left out)."""
    return " ".join(f"{m['top1']:.3f}/{m['top1_task_mean']:.3f}/{m['pairwise_acc']:.4f}"
                    for m in network.values() if isinstance(m, dict))


def training_arguments(argv, doc: str, result: str, lists: tuple[str, ...] = (),
                       paths: dict | None = None) -> argparse.Namespace:
    """``--data``, ``--fit-only-data``, ``--out`` (default ``bench/results/<result>``), for each
    name of ``lists`` ``--<name> a,b`` (a list of names; None when not given), and for each
    ``name: default`` of ``paths`` ``--<name> PATH``."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--data", default=str(ROOT / "data" / "dataset"))
    p.add_argument("--fit-only-data", default=str(ROOT / "data" / "dataset_breadth"))
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / result))
    for name in lists:
        p.add_argument(f"--{name}", type=lambda v: v.split(","), default=None)
    for name, default in (paths or {}).items():
        p.add_argument(f"--{name}", default=str(default))
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = training_arguments(argv, __doc__, "probe_vector_alignment.json")

    from adapt_sim import paired_difference
    from checkpoint import write_json
    from common import machine

    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data, with_fb=True)
    model, tasks, fit_only = setup["model"], setup["tasks"], setup["fit_only"]
    if "vector_alignment" in model.columns:
        raise SystemExit(f"{setup['model_dir']} already reads the vector fill; this compares a model without it")
    log(f"{len(tasks)} zoo and {len(fit_only)} breadth training tasks")
    cfg, results, replays = model.ranker.cfg, {}, {}
    for variant in ("without", "with"):
        if variant == "with":
            from cwm.model.vector_alignment import vector_alignment

            with_columns(tasks + fit_only, model, setup["everything"], setup["target"], vector_alignment)
        results[variant] = {"network": network_cv(tasks, fit_only, cfg), "all_tasks": all_tasks_cv(tasks + fit_only, cfg)}
        replays[variant] = search_replay(tasks, fit_only, cfg)
        log(f"{variant} the vector fill: done")
    write_json(args.out, {
        "benchmark": "probe_vector_alignment", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
        "model_fingerprint": setup["fingerprint"], "split": "train", "ranker_input": REPRESENTATION,
        "centring": CENTRING, "tasks": len(tasks), "fit_only_tasks": len(fit_only), "max_candidates_per_task": 64,
        **results,
        "replay": {"per_round": 4, "rounds": 6, "adapt": "AdaptConfig()",
                   "mean_best_ratio": {v: [float(x) for x in c.mean(0)] for v, c in replays.items()},
                   "with_minus_without_mean_ci95": paired_difference(replays["with"], replays["without"])},
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
