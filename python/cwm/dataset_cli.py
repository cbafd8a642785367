"""``python -m cwm dataset {tasks,collect,stats,verify}``: the trajectory dataset from the command line.

A top-level module (not ``cwm.dataset.cli``): ``collect`` runs :mod:`cwm.tuning.collect`, which
sits above :mod:`cwm.dataset` (docs/architecture.md).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

DEFAULT_ROOT = "data/dataset"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    t = sub.add_parser("tasks", help="extract the zoo's tuning tasks, register them, print the table")
    t.add_argument("--root", default=DEFAULT_ROOT)
    t.add_argument("--networks", default="all", help="comma-separated zoo names, or 'all'")
    t.add_argument("--from-corpus", default=None, metavar="CORPUS",
                   help="register generated workloads of this corpus instead of the zoo's tasks (use a root of "
                        "their own)")
    t.add_argument("--count", type=int, default=300, help="with --from-corpus: how many, stratified by family")
    t.add_argument("--seed", type=int, default=0, help="with --from-corpus: which sample")
    t.add_argument("--heldout-dataset", default=DEFAULT_ROOT,
                   help="with --from-corpus: skip any workload that is a held-out task of this dataset")
    c = sub.add_parser("collect", help="measure candidates of every registered task (resumable)")
    c.add_argument("--root", default=DEFAULT_ROOT)
    c.add_argument("--trials", type=int, default=200, help="search-phase candidates per task")
    c.add_argument("--random", type=int, default=32, help="random design-space candidates per task")
    c.add_argument("--tasks", default="", help="comma-separated task keys (default: all registered)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--no-progress", action="store_true")
    c.add_argument("--allow-host-change", action="store_true",
                   help="extend a dataset measured on another CPU model or generation (LLVM mcpu; its tasks' "
                        "latencies then mix CPUs)")
    s = sub.add_parser("stats", help="counts of the dataset")
    s.add_argument("--root", default=DEFAULT_ROOT)
    s.add_argument("--json", action="store_true")
    s.add_argument("--skip-corrupt", action="store_true", help="skip unreadable shards instead of failing")
    v = sub.add_parser("verify", help="check every file the manifest lists: shards present, hashes, counts, "
                                      "decodable, actions, replay to the stored program; lists every problem, "
                                      "exit 1 if any")
    v.add_argument("--root", default=DEFAULT_ROOT)
    v.add_argument("--replay", type=int, default=2, help="records replayed per task (-1: all, 0: none)")


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m cwm dataset")
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from cwm.dataset.store import DatasetError

    try:
        return {"tasks": _tasks, "collect": _collect, "stats": _stats, "verify": _verify}[args.action](args)
    except DatasetError as e:  # a missing or unreadable dataset file: one line naming it
        print(f"error: {e}", file=sys.stderr)
        return 2


def _collect(args) -> int:
    from cwm.tuning.collect import CollectConfig, collect
    from cwm.dataset.store import DatasetStore

    store = DatasetStore(args.root)
    keys = [k for k in args.tasks.split(",") if k] or store.task_keys()
    cfg = CollectConfig(trials=args.trials, random_samples=args.random, seed=args.seed)
    out = collect(store, keys, cfg=cfg, progress=not args.no_progress, allow_host_change=args.allow_host_change)
    for key, err in out["failures"].items():
        print(f"task {key} could not be collected: {err}", file=sys.stderr)
    print(f"{out['manifest']['finished_tasks']} tasks finished, {out['manifest']['records']} records")
    return 1 if out["failures"] else 0


def _stats(args) -> int:
    from cwm.dataset.stats import dataset_stats

    stats = dataset_stats(args.root, skip_corrupt=args.skip_corrupt)
    if args.json:
        print(json.dumps(stats))
    else:
        for k, v in stats.items():
            print(f"{k:>16}: {v}")
    return 0


def _verify(args) -> int:
    from cwm.dataset.verify import verify

    report = verify(args.root, args.replay)
    for problem in report["problems"]:
        print(f"PROBLEM {problem}")
    print(json.dumps({k: v for k, v in report.items() if k != "problems"} | {"problems": len(report["problems"])}))
    return 1 if report["problems"] else 0


def _tasks(args) -> int:
    if args.from_corpus:
        from cwm.corpus.tasks import register_corpus_tasks

        if args.count < 1:
            print("--count must be >= 1", file=sys.stderr)
            return 2
        print(register_corpus_tasks(args.root, args.from_corpus, args.count, args.seed, args.heldout_dataset))
        return 0
    from cwm.dataset.zoo_tasks import register_zoo_tasks

    table = register_zoo_tasks(args.root, None if args.networks == "all" else args.networks.split(","))
    print(table)
    return 0
