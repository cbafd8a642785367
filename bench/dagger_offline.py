"""The fold rankers with and without extra roots' records, ranked offline, leaving one network
out (issue #12, the ranker's data; decisions 83-84; training tasks only).

Each ``--extra`` root (default: CWM's own searches, ``bench/dagger_collect.py``, and the control,
the same tasks and trials from an ``XGBModel``-guided search, ``--guide xgb``) holds zoo training
tasks measured on the collecting machine. For each network whose tasks they hold, one ranker is
fitted without any task of that network on the shipped roots alone
(:func:`fold_rankers.fold_priors`, the search-knobs bench's fold rankers), and one on them plus
each extra root's tasks as groups of their own. Each ranks the left-out network's tasks on every
set:

- ``zoo``: their records in ``data/dataset`` (random samples and ``XGBModel``-guided proposals,
  measured on the AMD EPYC that measured the zoo);
- one set per extra root, named by the root: their records there.

Reported per ranker and set: top-1 (TenSet's, every task weight 1), the per-task mean top-1,
top-5 and pairwise accuracy, the pairwise accuracy over the pairs at least 10 % apart, and the
set's spread (the median over tasks of a task's median latency ÷ its best): how close in speed
the candidates are, and so how hard the pairs. Pooled over the folds, and each fold's.

    PYTHONPATH=python .venv/bin/python bench/dagger_offline.py [--extra ROOT ...]

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
from fold_rankers import fold_priors, training_rows  # noqa: E402
from search_knobs import open_roots  # noqa: E402

CLEAR_RATIO = 1.1  # pairs at least this far apart in latency are the "clear" pairs


def ranked(ranker, rows: dict, keys) -> list:
    """``(latencies, scores, 1.0)`` of each task of ``keys`` that ``rows`` holds."""
    return [(rows[k][1], ranker.predict(rows[k][0]), 1.0) for k in keys if k in rows]


def clear_pairwise(lat, score, ratio: float = CLEAR_RATIO) -> float:
    """Pairwise accuracy over the valid pairs whose latencies differ by at least ``ratio``."""
    import numpy as np

    lat, score = np.asarray(lat, np.float64), np.asarray(score, np.float64)
    ok = np.isfinite(lat) & (lat > 0)
    lat, score = lat[ok], score[ok]
    slower = lat[:, None] >= ratio * lat[None, :]  # i clearly slower than j
    return float((score[None, :] > score[:, None])[slower].mean()) if slower.any() else float("nan")


def spread(lat) -> float:
    """A task's median valid latency ÷ its best."""
    import numpy as np

    lat = np.asarray(lat, np.float64)
    lat = lat[np.isfinite(lat) & (lat > 0)]
    return float(np.median(lat) / lat.min()) if len(lat) else float("nan")


def metrics(tasks: list) -> dict:
    import numpy as np

    from cwm.model.metrics import summarize

    return {**summarize(tasks), "pairwise_clear": float(np.nanmean([clear_pairwise(lat, s) for lat, s, _ in tasks]))
            if tasks else float("nan"), "spread": float(np.nanmedian([spread(lat) for lat, _, _ in tasks]))
            if tasks else float("nan")}


def name_of(root: str) -> str:
    return Path(root).name


def root_arguments(parser) -> None:
    """The options the offline fold benches share: ``--extra``, ``--data`` and ``--work-root``."""
    parser.add_argument("--extra", action="append", default=None,
                        help="an extra root (repeatable; default: data/dataset_dagger_xeon, data/dataset_control_xeon)")
    parser.add_argument("--data", action="append", default=None, help="dataset roots (default: the shipped ones)")
    parser.add_argument("--work-root", default=str(ROOT / "work_dirs" / "search_knobs"))


def open_folds(args):
    """What the offline fold benches read, from :func:`root_arguments`' options: ``extras`` (the
    extra roots), ``roots`` and ``union`` (the shipped ones), ``loaders`` (one an extra root),
    ``networks`` (those the extra roots leave out), the shipped ``model``, and its ranker
    ``rows`` and network ``folds`` (:func:`fold_rankers.training_rows`)."""
    from types import SimpleNamespace

    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel

    extras = args.extra or [str(ROOT / "data" / "dataset_dagger_xeon"), str(ROOT / "data" / "dataset_control_xeon")]
    roots, _, _, union = open_roots(args.data)
    loaders = {e: DatasetLoader(e) for e in extras}
    networks = sorted({x.store.get_task(k)["dagger_network_out"] for x in loaders.values()
                       for k in x.task_keys("train")})
    model = WorldModel.load(default_model_dir())
    rows, folds = training_rows(model, union, extras)
    return SimpleNamespace(extras=extras, roots=roots, union=union, loaders=loaders, networks=networks, model=model,
                           rows=rows, folds=folds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root_arguments(parser)
    args = parser.parse_args(argv)
    o = open_folds(args)
    out = {}
    for data in [None, *o.extras]:
        name = "shipped_roots" if data is None else f"with_{name_of(data)}"
        priors = fold_priors(o.model, o.union, set(o.networks), Path(args.work_root), data, (o.rows, o.folds))
        sets = {"zoo": [], **{name_of(e): [] for e in o.extras}}
        by_fold = {}
        for network in o.networks:
            keys = o.folds.get(network, ())
            mine = {"zoo": ranked(priors[network], o.rows, keys),
                    **{name_of(e): ranked(priors[network], o.rows, [f"{e}:{k}" for k in keys]) for e in o.extras}}
            for s, v in mine.items():
                sets[s] += v
            by_fold[network] = {**{s: metrics(v) for s, v in mine.items()}, "tasks": {s: len(v) for s, v in mine.items()}}
        out[name] = {"pooled": {s: metrics(v) for s, v in sets.items()},
                     "tasks": {s: len(v) for s, v in sets.items()}, "folds": by_fold}
        log(f"{name}: {out[name]['pooled']}")

    def shown(path) -> str:
        return str(Path(path).relative_to(ROOT)) if Path(path).resolve().is_relative_to(ROOT) else str(path)

    payload = {"networks": o.networks, "clear_ratio": CLEAR_RATIO,
               "extra_roots": {name_of(e): {"root": shown(e), **{k: x.store.manifest().get(k) for k in (
                   "cpu_model", "collect_config", "records", "finished_tasks")}} for e, x in o.loaders.items()},
               "roots": [shown(r) for r in o.roots], "results": out, "machine": machine(), "date": today()}
    write_result("dagger_offline.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
