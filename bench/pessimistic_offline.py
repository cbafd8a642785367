"""A pessimistic score, read offline, leaving one network out (issue #12, the ranker's precision
at the top of its own search; decision 85; training tasks only).

Decisions 83-84 found that the fold rankers order CWM's own search's proposals far worse than
other records of the same tasks (pairwise 0.614 against 0.742 on the same host, 0.634 against
0.759 on the pairs at least 10 % apart): the search finds the candidates its ranker overrates.
A score that does not trust the top of the ranker is one answer. For each left-out network,
``--bootstrap`` rankers are fitted (the shipped ranker's config, ranker seed ``b``) on bootstrap
samples of the training tasks (whole tasks drawn with replacement, each draw its own ranking
group) of every other network on the shipped roots; a candidate's score is

    mean_b s_b(x) - k * std_b s_b(x)

for each ``--k`` (k = 0 is the bagged mean: a check on decision 76's bagging). A pairwise
ranker's margins carry an offset of its own, which would enter the spread and, through it, the
order; so each ranker's margins are centred over the task's candidates first. Each score
ranks the left-out network's tasks on every set (:mod:`dagger_offline`'s sets and metrics: the
zoo's records, and each ``--extra`` root's), beside the single fold ranker the search bench uses
(``single``).

    PYTHONPATH=python .venv/bin/python bench/pessimistic_offline.py [--bootstrap 5] [--k 0,0.5,1,2]

Writes ``bench/results/pessimistic_offline.json``; the bootstrap rankers are cached under
``--work-root`` (``ensemble/``; :mod:`fold_rankers`), the single ones shared with
``bench/search_knobs.py``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402
from dagger_offline import metrics, name_of  # noqa: E402
from fold_rankers import PessimisticRanker, bootstrap_rankers, combine, fold_priors, training_rows  # noqa: E402
from search_knobs import open_roots  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=5, help="rankers a fold")
    parser.add_argument("--k", default="0,0.5,1,2", help="pessimism weights, comma-separated")
    parser.add_argument("--extra", action="append", default=None,
                        help="an extra root (repeatable; default: data/dataset_dagger_xeon, data/dataset_control_xeon)")
    parser.add_argument("--data", action="append", default=None, help="dataset roots (default: the shipped ones)")
    parser.add_argument("--work-root", default=str(ROOT / "work_dirs" / "search_knobs"))
    args = parser.parse_args(argv)
    ks = [float(k) for k in args.k.split(",")]
    if args.bootstrap < 2:
        raise SystemExit("--bootstrap must be at least 2: the spread needs two rankers")
    extras = args.extra or [str(ROOT / "data" / "dataset_dagger_xeon"), str(ROOT / "data" / "dataset_control_xeon")]

    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel

    roots, _, _, union = open_roots(args.data)
    loaders = {e: DatasetLoader(e) for e in extras}
    networks = sorted({x.store.get_task(k)["dagger_network_out"] for x in loaders.values()
                       for k in x.task_keys("train")})
    model = WorldModel.load(default_model_dir())
    rows, folds = training_rows(model, union, extras)
    single = fold_priors(model, union, set(networks), Path(args.work_root), None, (rows, folds))
    ensembles = bootstrap_rankers(model, (rows, folds), networks, args.bootstrap, Path(args.work_root))

    scorers = ["single", *[f"k={k:g}" for k in ks]]
    sets = {s: {"zoo": [], **{name_of(e): [] for e in extras}} for s in scorers}
    for network in networks:
        keys = folds.get(network, ())
        for set_name, prefix in [("zoo", ""), *[(name_of(e), f"{e}:") for e in extras]]:
            for key in (prefix + k for k in keys):
                if key not in rows:
                    continue
                features, lat = rows[key]
                sets["single"][set_name].append((lat, single[network].predict(features), 1.0))
                scores = PessimisticRanker(ensembles[network]).scores(features)
                for k in ks:
                    sets[f"k={k:g}"][set_name].append((lat, combine(scores, k), 1.0))
    results = {s: {"pooled": {n: metrics(v) for n, v in by_set.items()},
                   "tasks": {n: len(v) for n, v in by_set.items()}} for s, by_set in sets.items()}
    for s, r in results.items():
        log(f"{s}: " + "; ".join(f"{n} pairwise {m['pairwise_acc']:.3f} clear {m['pairwise_clear']:.3f} "
                                 f"top-1 {m['top1']:.3f}" for n, m in r["pooled"].items()))

    payload = {"networks": networks, "bootstrap": args.bootstrap, "k": ks,
               "extra_roots": {name_of(e): os.path.relpath(e, ROOT) for e in extras},
               "roots": [os.path.relpath(r, ROOT) for r in roots], "results": results,
               "machine": machine(), "date": today()}
    write_result("pessimistic_offline.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
