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
from dagger_offline import metrics, name_of, open_folds, root_arguments  # noqa: E402
from fold_rankers import PessimisticRanker, bootstrap_rankers, combine, fold_priors  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=5, help="rankers a fold")
    parser.add_argument("--k", default="0,0.5,1,2", help="pessimism weights, comma-separated")
    root_arguments(parser)
    args = parser.parse_args(argv)
    ks = [float(k) for k in args.k.split(",")]
    if args.bootstrap < 2:
        raise SystemExit("--bootstrap must be at least 2: the spread needs two rankers")
    o = open_folds(args)
    single = fold_priors(o.model, o.union, set(o.networks), Path(args.work_root), None, (o.rows, o.folds))
    ensembles = bootstrap_rankers(o.model, (o.rows, o.folds), o.networks, args.bootstrap, Path(args.work_root))

    scorers = ["single", *[f"k={k:g}" for k in ks]]
    sets = {s: {"zoo": [], **{name_of(e): [] for e in o.extras}} for s in scorers}
    for network in o.networks:
        keys = o.folds.get(network, ())
        for set_name, prefix in [("zoo", ""), *[(name_of(e), f"{e}:") for e in o.extras]]:
            for key in (prefix + k for k in keys):
                if key not in o.rows:
                    continue
                features, lat = o.rows[key]
                sets["single"][set_name].append((lat, single[network].predict(features), 1.0))
                scores = PessimisticRanker(ensembles[network]).scores(features)
                for k in ks:
                    sets[f"k={k:g}"][set_name].append((lat, combine(scores, k), 1.0))
    results = {s: {"pooled": {n: metrics(v) for n, v in by_set.items()},
                   "tasks": {n: len(v) for n, v in by_set.items()}} for s, by_set in sets.items()}
    for s, r in results.items():
        log(f"{s}: " + "; ".join(f"{n} pairwise {m['pairwise_acc']:.3f} clear {m['pairwise_clear']:.3f} "
                                 f"top-1 {m['top1']:.3f}" for n, m in r["pooled"].items()))

    payload = {"networks": o.networks, "bootstrap": args.bootstrap, "k": ks,
               "extra_roots": {name_of(e): os.path.relpath(e, ROOT) for e in o.extras},
               "roots": [os.path.relpath(r, ROOT) for r in o.roots], "results": results,
               "machine": machine(), "date": today()}
    write_result("pessimistic_offline.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
