"""The fold rankers with and without CWM's own searches' records, ranked offline, leaving one
network out (issue #12, the ranker's data; decision 83; training tasks only).

For each network whose tasks ``bench/dagger_collect.py`` tuned, two rankers are fitted without
any task of that network (:func:`search_knobs.fold_priors`, the search-knobs bench's fold
rankers): on the shipped roots alone, and on them plus the ``--extra`` root's tasks as groups of
their own. Each ranks the left-out network's tasks twice:

- ``zoo``: their records in ``data/dataset`` (random samples and ``XGBModel``-guided proposals,
  measured on the AMD EPYC that measured the zoo);
- ``cwm_search``: their records in the extra root (the proposals of a CWM-guided search, measured
  on the collecting machine): how well the ranker orders what CWM's own search proposes.

Reported per data and per set: top-1 (TenSet's, every task weight 1), the per-task mean top-1,
top-5 and pairwise accuracy, pooled over the folds, and each fold's.

    PYTHONPATH=python .venv/bin/python bench/dagger_offline.py [--extra data/dataset_dagger_xeon]

Writes ``bench/results/dagger_offline.json``; the fold rankers are cached under ``--work-root``
(shared with ``bench/search_knobs.py``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402
from search_knobs import fold_priors, open_roots, training_rows  # noqa: E402


def ranked(ranker, rows: dict, keys) -> list:
    """``(latencies, scores, 1.0)`` of each task of ``keys`` that ``rows`` holds."""
    return [(rows[k][1], ranker.predict(rows[k][0]), 1.0) for k in keys if k in rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extra", default=str(ROOT / "data" / "dataset_dagger_xeon"))
    parser.add_argument("--data", action="append", default=None, help="dataset roots (default: the shipped ones)")
    parser.add_argument("--work-root", default=str(ROOT / "work_dirs" / "search_knobs"))
    args = parser.parse_args(argv)

    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.metrics import summarize
    from cwm.model.world_model import WorldModel

    roots, _, _, union = open_roots(args.data)
    extra = DatasetLoader(args.extra)
    networks = sorted({extra.store.get_task(k)["dagger_network_out"] for k in extra.task_keys("train")})
    model = WorldModel.load(default_model_dir())
    rows, folds = training_rows(model, union, args.extra)
    out = {}
    for name, data in (("shipped_roots", None), ("with_cwm_search", args.extra)):
        priors = fold_priors(model, union, set(networks), Path(args.work_root), data, (rows, folds))
        sets = {"zoo": [], "cwm_search": []}
        by_fold = {}
        for network in networks:
            keys = folds.get(network, ())
            zoo = ranked(priors[network], rows, keys)
            own = ranked(priors[network], rows, [f"{args.extra}:{k}" for k in keys])
            sets["zoo"] += zoo
            sets["cwm_search"] += own
            by_fold[network] = {"zoo": summarize(zoo), "cwm_search": summarize(own),
                                "tasks": {"zoo": len(zoo), "cwm_search": len(own)}}
        out[name] = {"pooled": {s: summarize(v) for s, v in sets.items()},
                     "tasks": {s: len(v) for s, v in sets.items()}, "folds": by_fold}
        log(f"{name}: {out[name]['pooled']}")
    payload = {"networks": networks, "extra_root": str(Path(args.extra).relative_to(ROOT))
               if Path(args.extra).resolve().is_relative_to(ROOT) else args.extra,
               "extra_manifest": {k: extra.store.manifest().get(k) for k in ("cpu_model", "collect_config", "records",
                                                                          "finished_tasks")},
               "roots": [str(Path(r).relative_to(ROOT)) for r in roots], "results": out,
               "machine": machine(), "date": today()}
    write_result("dagger_offline.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
