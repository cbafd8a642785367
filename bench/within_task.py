"""Is the ranker short of information, or of transfer? A ranker fitted inside each task, against
the one that never saw the task's network (issue #12; training tasks only).

Every ranker input measured so far reads pairwise 0.75-0.78 out of network, and two measurements
of the same candidates order them at 0.978 (``bench/label_noise.py``): the labels are not what
holds the ranking back. Either the inputs do not carry what orders a task's candidates, or they
do and what is learnt on other workloads does not carry over. This tells the two apart, on the
ranker's own rows (``[ẑ_T - z_0, S]`` as the shipped model computes them, with the design-space
centring):

* each zoo training task's valid candidates are split in two halves (seeded), each half ranked
  once by a ranker fitted on the other half;
* ``out_of_network``: the shipped ranker refitted without any task of the task's network
  (:func:`fold_rankers.fold_priors`, the search benches' priors, cached);
* ``within_task``: the shipped ranker's config fitted on the other half of this task alone;
* ``within_task_regression``: XGBoost regression of ``-log latency`` on the other half (what
  MetaSchedule's ``XGBModel`` does with a task's measurements), 100 rounds, XGBoost's defaults;
* with ``--store``, both again on the pooled per-store features of each candidate's real final
  program (``_store``; a replay, the probe's snapshot) and on them beside the rows (``_rows_store``).

Reported over the tasks of each network fold and pooled: pairwise accuracy and per-task top-1
within the ranked halves, and the learning curve of ``within_task`` fitted on a seeded ``n`` = 8,
16, 32 of the other half (where it holds more).

    PYTHONPATH=python .venv/bin/python bench/within_task.py --store --out within_task_store.json
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import log, machine, today, write_result  # noqa: E402

CURVE = (8, 16, 32)


def halves(n: int, key: str, seed: int) -> tuple[list[int], list[int]]:
    """A seeded split of ``range(n)`` into two halves (the first the larger when ``n`` is odd)."""
    import zlib

    import numpy as np

    order = np.random.default_rng([seed, zlib.crc32(key.encode())]).permutation(n)
    cut = (n + 1) // 2
    return sorted(int(i) for i in order[:cut]), sorted(int(i) for i in order[cut:])


def ranked_half(lat, score) -> dict:
    """Pairwise accuracy and top-1 (best latency ÷ the top pick's) of ``score`` on one half."""
    import numpy as np

    from cwm.model.metrics import pairwise_accuracy

    lat = np.asarray(lat, np.float64)
    pick = lat[int(np.argsort(-np.asarray(score), kind="stable")[0])]
    return {"pairwise": pairwise_accuracy(lat, score), "top1": float(lat.min() / pick)}


def regression_scores(x_fit, lat_fit, x_held, seed: int):
    """XGBoost regression of ``-log latency`` on the fitting half (100 rounds, defaults)."""
    import numpy as np
    import xgboost as xgb

    booster = xgb.train({"seed": seed, "nthread": 2}, xgb.DMatrix(x_fit, label=-np.log(lat_fit)), 100)
    return booster.predict(xgb.DMatrix(x_held))


def task_rows(reps: dict, lat, prior, cfg, key: str, seed: int) -> list[dict]:
    """Both halves of one task ranked by every ranker of the module docstring. ``reps``:
    representation name -> the candidates' rows; ``"rows"`` (the ranker's own) is what the prior
    reads and what the learning curve is taken on; each other one ``NAME`` gets its own
    ``within_task_NAME`` and ``within_task_regression_NAME`` (a candidate missing from any
    representation, a NaN row, is in neither half)."""
    import numpy as np

    from fold_rankers import fit_on

    feats = reps["rows"]
    usable = np.isfinite(lat)
    for name, x in reps.items():
        usable &= np.isfinite(np.asarray(x, np.float64)).all(1) if name != "rows" else True
    valid = np.flatnonzero(usable)
    out = []
    first, second = halves(len(valid), key, seed)
    for fit_idx, held_idx in ((first, second), (second, first)):
        fit, held = valid[fit_idx], valid[held_idx]
        if len(held) < 2 or np.unique(lat[held]).size < 2 or len(fit) < 2:
            continue
        row = {"task": key, "fitted": int(len(fit)), "ranked": int(len(held)),
               "out_of_network": ranked_half(lat[held], prior.predict(feats[held]))}
        for name, x in reps.items():
            tag = "" if name == "rows" else f"_{name}"
            row[f"within_task{tag}"] = ranked_half(lat[held], fit_on(cfg, {key: (x[fit], lat[fit])}, [key]).predict(x[held]))
            row[f"within_task_regression{tag}"] = ranked_half(lat[held], regression_scores(x[fit], lat[fit], x[held], seed))
        for n in CURVE:
            if len(fit) > n:
                sub = np.sort(np.random.default_rng([seed, n]).choice(fit, n, replace=False))
                row[f"within_task_{n}"] = ranked_half(lat[held], fit_on(cfg, {key: (feats[sub], lat[sub])}, [key])
                                                      .predict(feats[held]))
        out.append(row)
    return out


def summary(rows: list[dict], folds: dict) -> dict:
    """Mean of each ranker's metrics over the ranked halves: pooled, and by network fold."""
    import numpy as np

    names = sorted({k for r in rows for k, v in r.items() if isinstance(v, dict)})

    def mean(rs):
        def of(n, m):
            xs = [r[n][m] for r in rs if n in r and np.isfinite(r[n][m])]
            return float(np.mean(xs)) if xs else float("nan")

        return {n: {m: of(n, m) for m in ("pairwise", "top1")} | {"halves": sum(n in r for r in rs)} for n in names}

    return {"pooled": mean(rows),
            "by_network": {net: mean([r for r in rows if r["task"] in set(keys)]) for net, keys in folds.items()}}


def _store_features(union, key: str):
    """Pooled per-store features of every training trajectory of ``key`` (the rows' order)."""
    from cwm.model.probe_features import _per_store

    trajs = [t for t in union.trajectories(key) if t.latency is not None]
    target = union.store.manifest().get("target") or {"kind": "llvm"}
    return _per_store(union, key, union.workload(key), trajs, target)[0]


def zoo_tasks(model):
    """``(roots, union, rows, all_folds, folds, zoo)`` of the shipped roots: ``rows`` every training
    task's ranker rows and latencies (:func:`fold_rankers.training_rows`), ``all_folds`` every
    network's training tasks, ``folds`` each zoo network's, ``zoo`` each zoo training task's
    network (a task of two networks: its last)."""
    from fold_rankers import training_rows
    from search_knobs import open_roots

    roots, _, zoo_loader, union = open_roots(None)
    rows, all_folds = training_rows(model, union)
    zoo_keys = set(zoo_loader.task_keys("train")) & set(rows)
    # the zoo's networks (the generated workloads' "networks" are their corpus families)
    folds = {net: sorted(set(keys) & zoo_keys) for net, keys in all_folds.items() if set(keys) & zoo_keys}
    return roots, union, rows, all_folds, folds, {k: net for net, keys in folds.items() for k in keys}


def zoo_tasks_and_priors(model, work_root: Path):
    """``(roots, union, rows, folds, priors, zoo)``: :func:`zoo_tasks`, and ``priors`` each zoo
    network's fold ranker (fitted without it, cached under ``work_root``)."""
    from fold_rankers import fold_priors

    roots, union, rows, all_folds, folds, zoo = zoo_tasks(model)
    priors = fold_priors(model, union, set(folds), work_root, rows_and_folds=(rows, all_folds))
    return roots, union, rows, folds, priors, zoo


def zoo_tasks_with_margins(model, work_root: Path):
    """``(roots, tasks, folds, zoo)`` of :func:`zoo_tasks_and_priors`, with ``tasks``: key ->
    ``(ranker rows, latencies, its network's fold prior's margins)`` of every zoo training task
    with at least two valid latencies (what the replay benches rank)."""
    import numpy as np

    roots, _, rows, folds, priors, zoo = zoo_tasks_and_priors(model, work_root)
    tasks = {key: (rows[key][0], rows[key][1], np.asarray(priors[net].predict(rows[key][0]), np.float64))
             for key, net in sorted(zoo.items()) if np.isfinite(rows[key][1]).sum() >= 2}
    return roots, tasks, folds, zoo


def fold_ranker_arguments(parser, out: str) -> None:
    """The fold-ranker benches' ``--work-root`` (where the search benches' fold rankers are cached)
    and ``--out`` (the result's name under ``bench/results``)."""
    parser.add_argument("--work-root", type=Path, default=Path(HERE).parent / "work_dirs" / "search_knobs",
                        help="where the fold rankers are cached (the search benches' by default)")
    parser.add_argument("--out", default=out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--store", action="store_true",
                   help="also the pooled per-store features of each candidate's real final program (a replay; "
                        "the probe's snapshot), alone and beside the ranker's rows")
    fold_ranker_arguments(p, "within_task.json")
    a = p.parse_args(argv)

    import numpy as np

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    roots, union, rows, folds, priors, zoo = zoo_tasks_and_priors(model, a.work_root)
    results = []
    for i, (key, net) in enumerate(sorted(zoo.items())):
        feats, lat = rows[key]
        reps = {"rows": feats}
        if a.store:
            store = _store_features(union, key)
            reps |= {"store": store, "rows_store": np.hstack([feats, store])}
        results += task_rows(reps, lat, priors[net], model.ranker.cfg, key, a.seed)
        if (i + 1) % 10 == 0:
            log(f"{i + 1}/{len(zoo)} tasks ({time.perf_counter() - start:.0f} s)")
    out = summary(results, folds)
    payload = {"benchmark": "within_task", "date": today(), "machine": machine(), "roots": roots, "seed": a.seed,
               "tasks": len(zoo), "store": a.store, "seconds": round(time.perf_counter() - start), **out, "halves": results}
    print(write_result(a.out, payload))
    for name, m in out["pooled"].items():
        print(f"{name:<24} pairwise {m['pairwise']:.3f}  top-1 {m['top1']:.3f}  ({m['halves']} halves)")


if __name__ == "__main__":
    main()
