"""``cwm corpus``: build (resumable, seeded) and inspect the unmeasured-trajectory corpus.

    python -m cwm corpus build --out data/corpus --workloads 1000 --per-workload 100 --jobs 2
    python -m cwm corpus build --out data/corpus_b --seed 1 --exclude-corpus data/corpus ...  # a disjoint part
    python -m cwm corpus stats --out data/corpus
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("build", "stats"))
    p.add_argument("--out", default="data/corpus", help="corpus directory (not committed: rebuilt by this command)")
    p.add_argument("--workloads", type=int, default=1000)
    p.add_argument("--blocks", type=int, default=0,
                   help="also this many tasks of generated network blocks (fused, as the zoo's tasks are)")
    p.add_argument("--per-workload", type=int, default=100, help="sampled trajectories per workload")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", default="data/dataset",
                   help="measured dataset: its held-out tasks are never generated, its target is used")
    p.add_argument("--exclude-corpus", action="append", default=[], metavar="DIR",
                   help="never generate a workload of this corpus again (a second part, another --seed); repeatable")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (each takes every N-th workload)")
    p.add_argument("--part", default=None, help=argparse.SUPPRESS)  # "i/n": one worker's share


def main(argv) -> int:
    p = argparse.ArgumentParser(prog="python -m cwm corpus", description=__doc__.splitlines()[0])
    add_arguments(p)
    args = p.parse_args(argv)
    from cwm.corpus.build import build_corpus, corpus_stats

    if args.action == "stats":
        print(json.dumps(corpus_stats(args.out), indent=1))
        return 0
    if args.workloads < 1 or args.per_workload < 1 or args.jobs < 1:
        p.error("--workloads, --per-workload and --jobs must be at least 1")
    if args.jobs > 1 and args.part is None:
        base = [sys.executable, "-m", "cwm", "corpus", *argv]
        procs = [subprocess.Popen(base + ["--part", f"{i}/{args.jobs}"]) for i in range(args.jobs)]
        codes = [proc.wait() for proc in procs]
        print(json.dumps(corpus_stats(args.out)))
        return max(codes)
    i, n = map(int, (args.part or "0/1").split("/"))
    print(json.dumps(build_corpus(args.out, args.workloads, args.per_workload, args.seed, args.dataset, (i, n),
                                        blocks=args.blocks, exclude_corpora=args.exclude_corpus)))
    return 0
