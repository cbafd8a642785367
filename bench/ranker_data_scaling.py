"""Would more measured data pay, and of which kind? The ranker's learning curve on the training
tasks only (issue #12, deliverable 5; docs/decisions.md §68).

Protocol: leave one network out over the zoo's training tasks (the shipped ranker recipe, ranker
seeds 0, 1, 2), with a seeded share of the breadth tasks fitted on in every fold (more workloads),
or every breadth task with a seeded N of its candidates (more records per workload). The full
row (all 257 breadth tasks with all their candidates, 32 each) is the shipped row of
``bench/results/probe_compute_at_level.json`` (same protocol, same seeds).

    PYTHONPATH=python .venv/bin/python bench/ranker_data_scaling.py [--variants tasks25,tasks50,records8,records16]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def subset(fit_only: list[dict], variant: str, seed: int = 0) -> list[dict]:
    """``tasksP``: P % of the breadth tasks; ``recordsN``: every task, N of its candidates;
    ``all``: everything."""
    rng = np.random.default_rng(seed)
    if variant.startswith("tasks"):
        keep = rng.permutation(len(fit_only))[:round(len(fit_only) * int(variant[5:]) / 100)]
        return [fit_only[i] for i in sorted(keep)]
    if variant.startswith("records"):
        n, out = int(variant[7:]), []
        for t in fit_only:  # a seeded subset: the records come in collection order (the search's later rounds last)
            keep = np.sort(rng.permutation(len(t["lat"]))[:n])
            out.append({**t, **{f: v[keep] for f, v in t.items()
                                if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == len(t["lat"])}})
        return out
    if variant == "all":
        return fit_only
    raise SystemExit(f"unknown variant {variant!r}")


def main(argv=None) -> int:
    from vector_alignment import (network_row, save_progress, seed_line, stopwatch_log, training_arguments,
                                  training_setup)

    args = training_arguments(argv, __doc__, "probe_ranker_data_scaling.json", ("variants",))
    from common import machine

    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data)
    tasks, fit_only, cfg = setup["tasks"], setup["fit_only"], setup["model"].ranker.cfg
    out = {"benchmark": "probe_ranker_data_scaling", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "split": "train", "protocol": "leave one network out, a share of the breadth tasks fitted on",
           "model_fingerprint": setup["fingerprint"], "tasks": len(tasks), "fit_only_tasks": len(fit_only),
           "network": {}}
    for variant in args.variants or ["tasks25", "tasks50", "records8", "records16"]:
        chosen = subset(fit_only, variant)
        out["network"][variant] = network_row(tasks, chosen, cfg)
        log(f"{variant} ({len(chosen)} tasks): {seed_line(out['network'][variant])}")
        save_progress(args.out, out, start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
