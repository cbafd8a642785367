"""Which candidate pairs does the prior order wrongly? The pairs of the zoo's training tasks, by
the decisions in which the two candidates differ (issue #12; training tasks only; a report).

Decision 88 found that no input measured orders more than ~0.78 of a task's pairs, though two
measurements of the same candidates agree on 0.98. This says where the wrong quarter lies. For
every zoo training task, each pair of valid candidates whose latencies differ by at least
``--min-ratio`` (default 1.1: clearly apart, beyond the labels' noise of decision 88) is ordered by
the task's network fold prior (the search benches' cached fold ranker, which never saw the task's
network), and classed by what differs between the two candidates, read from the ranker's own
columns (the actions alone):

* ``tiling``: the sample-phase split columns (:data:`cwm.model.trace_structure.SPLIT_NAMES`);
* ``compute_at``: the sampled compute-at locations (``compute_at_*`` columns);
* ``unroll``: the unroll annotations' values;
* ``parallel_vectorize``: the loops fused for ``Parallel`` and ``Vectorize`` and the parallel and
  vectorize annotations;

Reported: the share of pairs the prior orders wrongly, by the set of classes that differ (and for
"only one class differs") and by how far apart the two latencies are (:data:`RATIO_BUCKETS`), with the pairs' count and median latency ratio, pooled over tasks
(each task's pairs weighted by ``1 / its pair count``, as pairwise accuracy averages over tasks).

    PYTHONPATH=python .venv/bin/python bench/pair_errors.py [--min-ratio 1.1]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402
from within_task import fold_ranker_arguments  # noqa: E402

CLASSES = ("tiling", "compute_at", "unroll", "parallel_vectorize")
#: the pairs are also reported by how far apart their latencies are
RATIO_BUCKETS = ((1.1, 1.25), (1.25, 1.5), (1.5, 2.0), (2.0, 4.0), (4.0, float("inf")))


def class_columns(names: list[str]) -> dict[str, list[int]]:
    """Each class's uncentred columns of the ranker's rows ``names``."""
    from cwm.model.centring import PREFIX
    from cwm.model.trace_structure import SPLIT_NAMES

    raw = [n for n in names if not n.startswith(PREFIX)]
    of = {
        "tiling": [n for n in raw if n in SPLIT_NAMES],
        "compute_at": [n for n in raw if n.startswith("compute_at")],
        "unroll": [n for n in raw if "unroll" in n],
        "parallel_vectorize": [n for n in raw if n.startswith(("parallel_", "vectorize_", "nest_parallel",
                                                                  "nest_vector", "annot_meta_schedule.parallel",
                                                                  "annot_meta_schedule.vectorize"))],
    }
    return {c: [names.index(n) for n in cols] for c, cols in of.items()}


def task_pairs(x, lat, score, columns: dict[str, list[int]], min_ratio: float) -> list[tuple[str, bool, float]]:
    """``(differing classes joined by "+", ordered right, latency ratio)`` of each clear pair."""
    import numpy as np

    ok = np.flatnonzero(np.isfinite(lat) & (lat > 0))
    x = np.asarray(x, np.float64)
    out = []
    for a_pos, i in enumerate(ok):
        for j in ok[a_pos + 1:]:
            ratio = max(lat[i], lat[j]) / min(lat[i], lat[j])
            if ratio < min_ratio:
                continue
            differ = [c for c, cols in columns.items() if np.any(np.abs(x[i, cols] - x[j, cols]) > 1e-6)]
            right = (lat[i] < lat[j]) == (score[i] > score[j]) and score[i] != score[j]
            out.append(("+".join(differ) or "none", bool(right), float(ratio)))
    return out


def summary(by_task: dict[str, list[tuple[str, bool, float]]]) -> dict:
    """Per class set (and per single class): weighted share wrong, pairs, median ratio."""
    import numpy as np

    groups: dict[str, list[tuple[float, bool, float]]] = {}
    for pairs in by_task.values():
        if not pairs:
            continue
        w = 1.0 / len(pairs)
        for cls, right, ratio in pairs:
            bucket = next(f"ratio {lo:g}-{hi:g}" for lo, hi in RATIO_BUCKETS if ratio < hi)
            for g in ("all", cls, bucket) + ((f"only {cls}",) if "+" not in cls and cls != "none" else ()):
                groups.setdefault(g, []).append((w, right, ratio))
    out = {}
    for g, rows in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        w = np.array([r[0] for r in rows])
        wrong = np.array([not r[1] for r in rows], np.float64)
        out[g] = {"pairs": len(rows), "weight": float(w.sum()), "wrong": float((w * wrong).sum() / w.sum()),
                  "median_ratio": float(np.median([r[2] for r in rows])),
                  "median_ratio_wrong": float(np.median([r[2] for r in rows if not r[1]])) if wrong.any() else None}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-ratio", type=float, default=1.1)
    fold_ranker_arguments(p, "pair_errors.json")
    a = p.parse_args(argv)

    import numpy as np

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel, feature_names
    from within_task import zoo_tasks_and_priors

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    names = feature_names(model.tcfg.dim, model.structure, bool(model.centring), model.columns)
    columns = class_columns(names)
    roots, _, rows, _, priors, zoo = zoo_tasks_and_priors(model, a.work_root)
    by_task = {}
    for key, net in sorted(zoo.items()):
        x, lat = rows[key]
        by_task[key] = task_pairs(x, lat, np.asarray(priors[net].predict(x), np.float64), columns, a.min_ratio)
    out = summary(by_task)
    log(f"{len(by_task)} tasks, {out['all']['pairs']} pairs at ratio >= {a.min_ratio}")
    for g, m in out.items():
        print(f"{g:<50} wrong {m['wrong']:.3f}  weight {m['weight']:6.2f}  pairs {m['pairs']:7d}  "
              f"median ratio {m['median_ratio']:.2f}")
    write_result(a.out, {
        "benchmark": "pair_errors", "date": today(), "machine": machine(), "roots": roots, "tasks": len(by_task),
        "min_ratio": a.min_ratio, "columns": {c: [names[i] for i in cols] for c, cols in columns.items()},
        "by_classes": out, "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
