"""Does the ranker gain from knowing which loop gets which tile factors (``cwm.model.loop_tiles``)?
Leave one network out on the training tasks (issue #12; docs/decisions.md §95).

The shipped rollout forgets the numbers of all but its last few actions (decision 96), so two
candidates whose splits trade factor lists roll out to the same state, and the trace-structure
columns keep only per-level sums and the last loop's innermost tile: the ranker's row cannot say
which loop is tiled how. This fits the search benches' fold rankers again (the shipped ranker
config and seed, every training task of the shipped roots but the network's, the breadth
workloads included) with the :mod:`cwm.model.loop_tiles` columns appended to the rows
(uncentred), and compares them on each zoo training task with the same fit without them (the
cached fold rankers' fit, refitted in the run): pairwise accuracy, per-task top-1 (best ÷ pick)
and the best found among the first 16 / 32 / 48 / 64 of the order, with paired 95 % intervals
(tasks resampled; :func:`top_rerank.summary`). With ``--check-swap``, it first shows on one trace
per zoo task that swapping two spatial splits' factor lists leaves the rollout unchanged.
It stops on a model that already takes the family (the shipped model, since decision 98).

    PYTHONPATH=python .venv/bin/python bench/loop_tiles.py
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, require_family_absent, today, write_result  # noqa: E402
from within_task import fold_ranker_arguments  # noqa: E402

BASELINE, VARIANT = "fold ranker (shipped rows)", "fold ranker, + loop tiles"


def swapped(trace):
    """``trace`` (MetaSchedule's JSON form, parsed) with the factor lists of its first two
    ``SamplePerfectTile`` decisions of the largest arity that differ swapped, or None."""
    import copy

    insts, decisions = trace
    tiles = [d for d in decisions if insts[d[0]][0] == "SamplePerfectTile"]
    if not tiles:
        return None
    arity = max(len(d[1]) for d in tiles)
    tiles = [d for d in tiles if len(d[1]) == arity]
    pair = next(((a, b) for i, a in enumerate(tiles) for b in tiles[i + 1:] if a[1] != b[1]), None)
    if pair is None:
        return None
    out = copy.deepcopy(trace)
    for d in out[1]:
        if d[0] == pair[0][0]:
            d[1] = list(pair[1][1])
        elif d[0] == pair[1][0]:
            d[1] = list(pair[0][1])
    return out


def swap_check(model, union, by_task: dict, keys: list[str]) -> dict:
    """For one trace of each task: the largest change of ``ẑ_T`` when two splits trade factors,
    against the change when one split's factors are replaced by another candidate's."""
    import json

    import numpy as np

    target = union.store.manifest().get("target") or {"kind": "llvm"}
    rollout_change, columns_changed = [], []
    for key in keys:
        trace = by_task[key][0].trace
        trace = json.loads(trace) if isinstance(trace, str) else trace
        other = swapped(trace)
        if other is None:
            continue
        fb = model.featurize(union.workload(key), [json.dumps(trace), json.dumps(other)])
        z0 = model.z0(union.workload(key))
        rows = model.raw_features(model.rollout(z0, fb), fb, target, z0)
        dim = model.tcfg.dim
        rollout_change.append(float(np.abs(rows[0, :dim] - rows[1, :dim]).max()))
        columns_changed.append(int((np.abs(rows[0, dim:] - rows[1, dim:]) > 1e-6).sum()))
    return {"traces": len(rollout_change), "max_rollout_change": max(rollout_change, default=0.0),
            "median_other_columns_changed": float(np.median(columns_changed)) if columns_changed else 0.0,
            "traces_with_identical_rows": int(sum(c == 0 for c in columns_changed))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check-swap", action="store_true")
    fold_ranker_arguments(p, "loop_tiles.json")
    a = p.parse_args(argv)

    import numpy as np

    from cwm import native
    from cwm.model import default_model_dir
    from cwm.model.loop_tiles import NAMES, loop_tiles
    from cwm.model.train import _training_trajectories
    from cwm.model.world_model import WorldModel
    from top_rerank import FOUND_AFTER, compare_fold_rankers
    from within_task import zoo_tasks_and_priors

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    require_family_absent(model.columns, "loop_tiles", "bench/loop_tiles.py")
    roots, union, rows, folds, _, zoo = zoo_tasks_and_priors(model, a.work_root)
    by_task = _training_trajectories(union, model.meta.get("config", {}).get("seed", 0))
    swap = swap_check(model, union, by_task, sorted(zoo)) if a.check_swap else None
    if swap:
        log(f"swap check: {swap}")
    extra = {}
    for key in rows:
        fb = native.featurize_batch([t.trace for t in by_task[key]])
        extra[key] = loop_tiles(fb.ints, fb.numbers, fb.lengths)
    wide = {k: (np.hstack([x, extra[k]]).astype(np.float32), lat) for k, (x, lat) in rows.items()}
    log(f"{len(NAMES)} loop-tile columns for {len(rows)} training tasks")
    out, tasks = compare_fold_rankers(model.ranker.cfg, rows, wide, folds, zoo, BASELINE, VARIANT, start)
    write_result(a.out, {
        "benchmark": "loop_tiles", "date": today(), "machine": machine(), "roots": roots,
        "tasks": tasks, "columns": list(NAMES), "swap_check": swap,
        "found_after": list(FOUND_AFTER), "by_ranker": out,
        "note": "fold rankers: the shipped ranker config and seed fitted on every training task of the shipped roots "
                "but the network's (the search benches' fold rankers), with and without the loop-tile columns "
                "appended (uncentred), both fitted in the run",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
