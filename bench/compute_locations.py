"""Does the ranker gain from each compute-at location in trace order, not only their count, largest
and smallest (``cwm.model.trace_structure``)? Measured on the training tasks only (issue #12;
docs/decisions.md §67).

Why: out of fold, the shipped recipe's worst pick on the training tasks is ViT's softmax (weight
12; its pick 37× its best, ``bench/results/ranker_contributions.json``). There, the slow records
compute ``T_softmax_expsum`` at the consumer's innermost loop (location 3), so the row sum is
recomputed for every element, and the fast ones at location 1 or 2. Which location recomputes
depends on the block, which the largest / smallest location across all blocks cannot say. The
softmax and layer-norm tasks of every transformer share one trace template, so a column per
position may transfer across networks.

Protocol: leave one network out over the zoo's training tasks, the breadth tasks fitted on,
ranker seeds 0, 1, 2, the shipped ranker recipe, with ``cwm.model.compute_locations`` (the first 6
locations, -3 where a trace has fewer) appended to the trace columns and to the design-space
reference; then ``bench/adapt_sim.py``'s search replay. The shipped recipe's own figures (the
``shipped`` rows of ``bench/results/probe_rollout_regularization.json``, the same protocol and
seeds) are the baseline; they reproduce exactly.

    PYTHONPATH=python .venv/bin/python bench/compute_locations.py [--out bench/results/probe_compute_locations.json]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main(argv=None) -> int:
    from vector_alignment import (network_cv, search_replay, seed_line, stopwatch_log, training_arguments,
                                  training_setup, with_columns)

    from cwm.model.compute_locations import POSITIONS, compute_locations

    args = training_arguments(argv, __doc__, "probe_compute_locations.json")
    from checkpoint import write_json
    from common import machine

    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data, with_fb=True)
    model, tasks, fit_only = setup["model"], setup["tasks"], setup["fit_only"]
    with_columns(tasks + fit_only, model, setup["everything"], setup["target"], compute_locations)
    log(f"{len(tasks)} zoo and {len(fit_only)} breadth training tasks, {POSITIONS} location columns added")
    cfg = model.ranker.cfg
    network = network_cv(tasks, fit_only, cfg)
    log(f"network: {seed_line(network)}")
    curves = search_replay(tasks, fit_only, cfg)
    log("replayed: " + " ".join(f"{x:.3f}" for x in curves.mean(0)))
    write_json(args.out, {
        "benchmark": "probe_compute_locations", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
        "model_fingerprint": setup["fingerprint"], "split": "train",
        "protocol": "leave one network out, breadth fitted on", "positions": POSITIONS, "tasks": len(tasks),
        "fit_only_tasks": len(fit_only), "max_candidates_per_task": 64, "network": network,
        "replay": {"per_round": 4, "rounds": 6, "adapt": "AdaptConfig()",
                   "mean_best_ratio": [float(x) for x in curves.mean(0)]},
        "replay_curves": curves.tolist(), "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
