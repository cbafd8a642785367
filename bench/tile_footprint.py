"""Does the ranker gain from the tiled block's parallel grain and cache footprints? The shipped rows
with 7 columns beside them, against the shipped rows; leave one network out on the training tasks
(issue #12, offline; docs/decisions.md §104).

The columns are :mod:`cwm.model.tile_footprint`'s (the spec; its docstring defines them), from the
candidate's trace and the *unscheduled* workload ``s_0``, never from the candidate's program: no
replay, so not a snapshot model (DESIGN.md §5); the idle share on 2 cores, the training hosts'.
Fold rankers, metrics and intervals as ``bench/decoded_columns.py``.
It stops on a model that already takes the family (the shipped model, since decision 106): it
measures the columns against a model without them.

    PYTHONPATH=python .venv/bin/python bench/tile_footprint.py [--out NAME]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, require_family_absent, today, write_result  # noqa: E402

BASELINE = "fold ranker (shipped rows)"
CORES = 2  # every training record was measured on a 2-core host (its target's num-cores)


def footprint_rows(model, union, rows: dict) -> tuple[dict, dict]:
    """``rows`` with :func:`cwm.model.tile_footprint.tile_footprint` appended to each candidate's row, and
    counts of what was read."""
    import numpy as np

    from cwm.model.tile_footprint import ABSENT, task_facts, tile_footprint
    from cwm.model.train import _training_trajectories

    out, counts = {}, {"candidates": 0, "tiled": 0, "serial_tiled_block": 0, "footprint": 0}
    for key, trajs in sorted(_training_trajectories(union, model.meta.get("config", {}).get("seed", 0)).items()):
        x, lat = rows[key]
        extra = tile_footprint([t.trace for t in trajs], task_facts(union.workload(key)), CORES).astype(np.float64)
        if len(extra) != len(x):
            raise RuntimeError(f"{key}: {len(extra)} column rows for {len(x)} rows")
        counts["candidates"] += len(extra)
        counts["tiled"] += int((extra[:, 0] != ABSENT).sum())
        counts["serial_tiled_block"] += int((extra[:, 0] == 0.0).sum())
        counts["footprint"] += int((extra[:, 2] != ABSENT).sum())
        out[key] = (np.concatenate([x, extra], 1), lat)
    return out, counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="tile_footprint.json")
    a = p.parse_args(argv)

    from cwm.model import default_model_dir
    from cwm.model.tile_footprint import NAMES
    from cwm.model.world_model import WorldModel
    from top_rerank import FOUND_AFTER, compare_fold_rankers
    from within_task import zoo_tasks

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    require_family_absent(model.columns, "tile_footprint", "bench/tile_footprint.py")
    roots, union, rows, _, folds, zoo = zoo_tasks(model)
    variant_rows, counts = footprint_rows(model, union, rows)
    log(f"columns of {len(variant_rows)} training tasks ({time.perf_counter() - start:.0f} s): {counts}")
    variant = f"fold ranker, shipped rows + {len(NAMES)} parallel-grain and footprint columns"
    out, tasks = compare_fold_rankers(model.ranker.cfg, rows, variant_rows, folds, zoo, BASELINE, variant, start)
    write_result(a.out, {
        "benchmark": "tile_footprint", "date": today(), "machine": machine(), "roots": roots,
        "columns": list(NAMES), "cores": CORES, "counts": counts, "tasks": tasks, "found_after": list(FOUND_AFTER), "by_ranker": out,
        "note": "fold rankers: the shipped ranker config and seed fitted on every training task of the shipped roots "
                "but the network's, on the shipped model's rows and on the same rows with the tiled block's "
                "parallel grain and cache footprints (from the trace and the unscheduled workload) beside them",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
