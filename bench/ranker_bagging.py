"""Does the ranker gain from more trees bagged a round? Measured on the training tasks only
(issue #12; decision 61 chose 4 over 1, and larger values were never measured).

The ranker's latency-weighted top-1 moves by up to 0.44 with its seed alone (decision 61): a
heavy task decides it by its one top pick. Bagging (``RankerConfig.parallel_trees``, XGBoost's
``num_parallel_tree``) averages that pick over more trees. The rows: ``pt4`` (shipped) and
``pt8`` by default (``--trees 4,8[,16]``), each with the protocol of ``bench/breadth_candidates.py``
on the shipped data (the 63 zoo training tasks left one network out, the 257 breadth tasks fitted
on in every fold, Zen 4 re-collection where it exists; ranker seeds 0, 1, 2; then the search
replay, paired against ``pt<first>``).

    PYTHONPATH=python .venv/bin/python bench/ranker_bagging.py [--trees 4,8]
        [--fit-only-data data/dataset_breadth] [--zen4-data data/dataset_breadth_zen4]
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main(argv=None) -> int:
    from breadth_candidates import recollected_tasks, variants
    from common import machine
    from vector_alignment import network_and_replay, save_progress, stopwatch_log, training_arguments, training_setup

    args = training_arguments(argv, __doc__, "probe_ranker_bagging.json", lists=("trees",),
                              paths={"zen4-data": ROOT / "data" / "dataset_breadth_zen4"})
    trees = [int(t) for t in (args.trees or ["4", "8"])]
    if len(trees) < 2 or min(trees) < 1:
        raise SystemExit("--trees: at least two counts, each at least 1 (the first is the base)")
    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data)
    tasks, breadth, cfg = setup["tasks"], setup["fit_only"], setup["model"].ranker.cfg
    zen4 = recollected_tasks(args.zen4_data, breadth, setup, log)
    fit_only = variants(breadth, zen4)["zen4_64"]  # the data the shipped ranker is fitted on
    log(f"{len(tasks)} zoo tasks validated, {len(fit_only)} breadth tasks fitted on ({len(zen4)} from Zen 4), "
        f"shipped config parallel_trees={cfg.parallel_trees}")
    out = {"benchmark": "probe_ranker_bagging", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "split": "train", "protocol": "leave one network out, the breadth tasks fitted on; search replay",
           "model_fingerprint": setup["fingerprint"], "tasks": len(tasks), "fit_only_tasks": len(fit_only),
           "recollected_tasks": len(zen4), "rows_per_task_mean": float(np.mean([len(t["lat"]) for t in fit_only])),
           "network": {}, "replay": {}}
    curves, base = {}, f"pt{trees[0]}"
    for n in trees:
        network_and_replay(out, curves, f"pt{n}", base, tasks, fit_only,
                           dataclasses.replace(cfg, parallel_trees=n), log)
        save_progress(args.out, out, start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
