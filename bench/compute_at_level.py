"""Does the ranker gain from the tile level each compute-at attaches to? Measured on the training
tasks only (issue #12; docs/decisions.md §68).

Why: ``cwm.model.compute_locations`` reads a compute-at's *sampled* location (the softmax's row
sum). In a tiled nest MetaSchedule places the epilogue (``ReverseComputeAt``) at a loop of the
tiling instead, ``matmul/1.s0`` (after the first tile level) or ``matmul/1.s1`` (after the
second): the action carries no sampled number, so its location column reads 0 in both cases and
the level is only in the loop operand's hash, which does not transfer across workloads. On
ResNet-50's ``fused_conv2d17_add12_relu9`` the 14 fastest records attach at ``.s1``; on GPT-2's
``fused_matmul4_add6`` the 3 fastest at ``.s0``.

Columns tried (read from the trace's own actions; nothing is replayed):

* ``part``: for each of the first 3 compute-ats, the split part of the loop it attaches to (-1 when
  that loop is not a split part, -3 when the trace has no such compute-at);
* ``part+tile``: also the ``log2`` size of the tile the epilogue is computed per: over the tiled
  nest's spatial splits (the largest arity >= 3), the factors below the attach level.

The part is looked up by the loop operand's hash (``op1_hash``) in a table built from the
canonical traces of every training record; a featurizer column would carry it if adopted.

Protocol: leave one network out over the zoo's training tasks, the breadth tasks fitted on, ranker
seeds 0, 1, 2, the shipped ranker recipe (which already reads the compute-at locations); the
search replay of ``bench/adapt_sim.py`` for each variant.

    PYTHONPATH=python .venv/bin/python bench/compute_at_level.py [--variants part,part+tile]
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

ATTACHES = 3
NONE = -3.0


def part_table(roots) -> dict[int, int]:
    """``fnv1a(loop text) -> split part`` of every compute-at's loop operand in the roots' records."""
    from cwm.actions.canonical import canonicalize
    from cwm.actions.featurize import fnv1a
    from cwm.dataset.loader import DatasetLoader

    table: dict[int, int] = {}
    for root in roots:
        loader = DatasetLoader(root)
        for key in loader.task_keys("train"):
            for r in loader.store.records(key) or []:
                for a in canonicalize(r["trace"]).actions:
                    if a.kind in ("ComputeAt", "ReverseComputeAt") and len(a.operands) > 1:
                        table[fnv1a(a.operands[1].text)] = a.operands[1].part
    return table


def level_columns(table: dict[int, int], with_tile: bool):
    """A ``columns(ints, numbers, lengths)`` featurizer for :func:`vector_alignment.with_columns`."""
    from cwm.actions.featurize import COL
    from cwm.model.trace_structure import _COMPUTE_AT, known_tilings

    def one(ints, nums, n) -> list[float]:
        kind = ints[:n, COL["kind"]]
        parts = [float(table.get(int(ints[t, COL["op1_hash"]]), -1)) for t in range(n) if kind[t] in _COMPUTE_AT]
        out = (parts + [NONE] * ATTACHES)[:ATTACHES]
        if with_tile:
            attach = next((p for p in parts if p >= 0), None)
            tilings = known_tilings(ints, nums, n)
            arity = max((len(f) for f in tilings if len(f) >= 3), default=0)
            if attach is None or not arity:
                out.append(-1.0)
            else:
                out.append(sum(math.log2(float(x)) for f in tilings if len(f) == arity for x in f[int(attach) + 1:]))
        return out

    def columns(ints, numbers, lengths) -> np.ndarray:
        rows = [one(ints[i], numbers[i], max(0, min(int(lengths[i]), ints.shape[1]))) for i in range(ints.shape[0])]
        return np.asarray(rows, np.float32)

    return columns


def main(argv=None) -> int:
    from vector_alignment import (network_and_replay, save_progress, stopwatch_log, training_arguments, training_setup,
                                  with_columns)

    args = training_arguments(argv, __doc__, "probe_compute_at_level.json", ("variants",))
    from common import machine

    start = time.perf_counter()
    log = stopwatch_log(start)
    table = part_table([args.data, args.fit_only_data])
    log(f"{len(table)} compute-at loop operands, parts {sorted(set(table.values()))}")
    out = {"benchmark": "probe_compute_at_level", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "split": "train", "protocol": "leave one network out, breadth fitted on", "network": {}, "replay": {}}
    curves = {}
    for variant in ["shipped"] + (args.variants or ["part", "part+tile"]):
        setup = training_setup(args.data, args.fit_only_data, with_fb=True)
        tasks, fit_only, model = setup["tasks"], setup["fit_only"], setup["model"]
        if variant != "shipped":
            with_columns(tasks + fit_only, model, setup["everything"], setup["target"],
                         level_columns(table, variant == "part+tile"))
        out["model_fingerprint"], out["tasks"], out["fit_only_tasks"] = setup["fingerprint"], len(tasks), len(fit_only)
        cfg = model.ranker.cfg
        network_and_replay(out, curves, variant, "shipped", tasks, fit_only, cfg, log)
        save_progress(args.out, out, start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
