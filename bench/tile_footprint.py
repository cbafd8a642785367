"""Does the ranker gain from the tiled block's parallel grain and cache footprints? The shipped rows
with 7 columns beside them, against the shipped rows; leave one network out on the training tasks
(issue #12, offline; docs/decisions.md §104).

The columns come from the candidate's trace (its sampled tile factors, the post-processor's
``Fuse`` + ``Parallel`` of the tiled block) and the *unscheduled* workload ``s_0`` (the tiled
block's buffers and their affine index expressions), never from the candidate's program: no
replay, so not a snapshot model (DESIGN.md §5).

* ``parallel_log2_extent``: ``log2`` of the product of the extents of the tiled block's loops that
  the post-processor fuses and parallelises (0 when it parallelises none: the block runs on one
  core);
* ``parallel_idle_share_2_cores``: the share of 2 cores idle in the last wave of those iterations;
* ``footprint_log2_bytes_below_group{g}``: for each boundary between the groups of the tiling
  structure (``SSRSRS`` on a CPU: 5), outermost first, ``log2`` of the bytes that the body below
  it touches, summed over the block's buffers; a buffer's box along a dimension indexed by
  ``sum c_v * v`` is ``sum |c_v| (e_v - 1) + 1`` (a strided window's halo included), where
  ``e_v`` is the product of ``v``'s tile factors below the boundary.

:data:`ABSENT` for a trace without a tiled nest, or whose block does not match ``s_0``'s.
Fold rankers, metrics and intervals as ``bench/decoded_columns.py``.

    PYTHONPATH=python .venv/bin/python bench/tile_footprint.py [--out NAME]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402

BASELINE = "fold ranker (shipped rows)"
FOOTPRINT_LEVELS = 5
CORES = 2  # every training record was measured on a 2-core host
ABSENT = -1.0
NAMES = (("parallel_log2_extent", "parallel_idle_share_2_cores")
         + tuple(f"footprint_log2_bytes_below_group{g + 1}" for g in range(FOOTPRINT_LEVELS)))


def tiled_nest(trace: str):
    """``(block name, nest, parallel loops)`` of a trace's first multi-level-tiled block, or None.
    ``nest``: ``(source loop index, tile position, factor)`` of each tiled loop, outermost first, as
    its ``Reorder`` orders them; ``parallel loops``: how many of the outermost the post-processor
    fuses and parallelises (0: none)."""
    insts, decisions = json.loads(trace)
    decided = {int(i): v for i, v in decisions}
    names, loops_of, factor_of, split_of = {}, {}, {}, {}
    block, nest, postproc, events = None, None, False, []
    for i, (kind, inputs, attrs, outputs) in enumerate(insts):
        if kind == "GetSBlock":
            names[outputs[0]] = attrs[0]
        elif kind == "Annotate" and attrs == ["meta_schedule.tiling_structure"] and block is None:
            block = inputs[0]
        elif kind == "GetLoops" and not postproc:
            loops_of.setdefault(inputs[0], outputs)
        elif kind == "SamplePerfectTile" and i in decided:
            factor_of.update(zip(outputs, decided[i]))
        elif kind == "Split" and block is not None and inputs[0] in loops_of.get(block, ()):
            source = loops_of[block].index(inputs[0])
            for p, (v, out) in enumerate(zip(inputs[1:], outputs)):
                split_of[out] = (source, p, v, len(outputs))
        elif kind == "Reorder" and nest is None and inputs and all(v in split_of for v in inputs):
            nest, arity = [], []
            for v in inputs:
                source, p, factor, a = split_of[v]
                if factor not in factor_of:
                    return None
                nest.append((source, p, int(factor_of[factor])))
                arity.append(a)
        elif kind == "EnterPostproc":
            postproc = True
        elif postproc and kind == "GetLoops":
            following = insts[i + 1:i + 3]
            fused = (len(following) == 2 and following[0][0] == "Fuse" and following[1][0] == "Parallel"
                     and following[0][1] == outputs[:len(following[0][1])])
            events.append((len(outputs), len(following[0][1]) if fused else 0))
    if block is None or not nest:
        return None
    outer = next((k for k, a in enumerate(arity) if a != arity[0]), len(arity))
    return names.get(block), nest, parallel_loops(len(nest), outer, events)


def parallel_loops(n_nest: int, outer: int, events) -> int:
    """How many of a nest's ``n_nest`` loops, outermost first, the post-processor fuses and
    parallelises, from its ``(loops, fused for Parallel)`` of each block it visits. The tiled
    block's visit is the one with the most loops, no more than the nest's and no fewer than the
    nest less its ``outer`` leading spatial loops: a block that shares the nest's outer loops and is
    visited first fuses them, and the tiled block then sees them as one."""
    mine = [e for e in events if n_nest - outer + 1 <= e[0] <= n_nest]
    if not mine:
        return 0
    loops, fused = max(mine, key=lambda e: e[0])
    if loops == n_nest:
        return fused
    return n_nest - loops + 1
    if block is None or not nest:
        return None
    return names.get(block), nest, parallel


def groups(nest) -> list[list[int]]:
    """The nest's positions split into runs of one tile position over increasing source loops."""
    out: list[list[int]] = []
    for k, (source, p, _) in enumerate(nest):
        if out and nest[out[-1][-1]][1] == p and nest[out[-1][-1]][0] < source:
            out[-1].append(k)
        else:
            out.append([k])
    return out


def access_model(workload, block_name: str):
    """``(iter extents, buffers)`` of ``s_0``'s block: each buffer as ``(bytes per element, shape,
    dims)``, a dim as ``(coefficients over the block's iter vars or None when not affine, extent)``."""
    from tvm import s_tir
    from tvm.sym.pattern import detect_linear_equation

    sch = s_tir.Schedule(workload)
    block = sch.get(sch.get_sblock(block_name))
    variables = [iv.var for iv in block.iter_vars]
    extents = [int(iv.dom.extent) for iv in block.iter_vars]
    buffers = {}
    for region in list(block.reads) + list(block.writes):
        buf = region.source
        dims = []
        for r in region.region:
            coef = list(detect_linear_equation(r.min, variables))
            dims.append(([int(c) for c in coef[:-1]] if coef else None, int(r.extent)))
        shape = [int(s) for s in buf.shape]
        buffers.setdefault(buf.name, []).append((max(1, buf.dtype.bits // 8), shape, dims))
    return extents, buffers


def footprint_bytes(extents_below: list[int], buffers) -> float:
    total = 0.0
    for accesses in buffers.values():
        best = 0.0
        for elem_bytes, shape, dims in accesses:
            size = float(elem_bytes)
            for (coef, extent), full in zip(dims, shape):
                if coef is None or len(coef) != len(extents_below):
                    size *= full
                else:
                    size *= min(full, sum(abs(c) * (e - 1) for c, e in zip(coef, extents_below)) + extent)
            best = max(best, size)
        total += best
    return total


def columns(trace: str, workload, models: dict) -> list[float]:
    """The 7 columns of :data:`NAMES` of one candidate; ``models`` caches :func:`access_model` by
    block name (one task's)."""
    found = tiled_nest(trace)
    if found is None or found[0] is None:
        return [ABSENT] * len(NAMES)
    name, nest, parallel = found
    extent = math.prod(f for _, _, f in nest[:parallel]) if parallel else 1
    waves = -(-extent // CORES)
    out = [math.log2(extent), 1.0 - extent / (waves * CORES)]
    if name not in models:
        try:
            models[name] = access_model(workload, name)
        except Exception:  # a block s_0 does not hold under that name
            models[name] = None
    model = models[name]
    cuts = [g[-1] + 1 for g in groups(nest)[:-1]][:FOOTPRINT_LEVELS]
    if model is None or max(s for s, _, _ in nest) >= len(model[0]):
        return out + [ABSENT] * FOOTPRINT_LEVELS
    extents, buffers = model
    for cut in cuts:
        below = [1] * len(extents)
        for source, _, factor in nest[cut:]:
            below[source] *= factor
        out.append(math.log2(max(1.0, footprint_bytes(below, buffers))))
    return out + [ABSENT] * (FOOTPRINT_LEVELS - len(cuts))


def footprint_rows(model, union, rows: dict) -> tuple[dict, dict]:
    """``rows`` with :func:`columns` appended to each candidate's row, and counts of what was read."""
    import numpy as np

    from cwm.model.train import _training_trajectories

    out, counts = {}, {"candidates": 0, "tiled": 0, "serial_tiled_block": 0, "footprint": 0}
    for key, trajs in sorted(_training_trajectories(union, model.meta.get("config", {}).get("seed", 0)).items()):
        x, lat = rows[key]
        models: dict = {}
        workload = union.workload(key)
        extra = np.asarray([columns(t.trace, workload, models) for t in trajs], np.float64)
        if len(extra) != len(x):
            raise RuntimeError(f"{key}: {len(extra)} column rows for {len(x)} rows")
        counts["candidates"] += len(extra)
        counts["tiled"] += int((extra[:, 0] != ABSENT).sum())
        counts["serial_tiled_block"] += int((extra[:, 0] == 0.0).sum())
        counts["footprint"] += int((extra[:, 2] != ABSENT).sum())
        out[key] = (np.concatenate([x, extra], 1), lat)
    return out, counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="tile_footprint.json")
    a = p.parse_args(argv)

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from top_rerank import FOUND_AFTER, compare_fold_rankers
    from within_task import zoo_tasks

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    roots, union, rows, _, folds, zoo = zoo_tasks(model)
    variant_rows, counts = footprint_rows(model, union, rows)
    log(f"columns of {len(variant_rows)} training tasks ({time.perf_counter() - start:.0f} s): {counts}")
    variant = f"fold ranker, shipped rows + {len(NAMES)} parallel-grain and footprint columns"
    out, tasks = compare_fold_rankers(model.ranker.cfg, rows, variant_rows, folds, zoo, BASELINE, variant, start)
    write_result(a.out, {
        "benchmark": "tile_footprint", "date": today(), "machine": machine(), "roots": roots,
        "columns": list(NAMES), "counts": counts, "tasks": tasks, "found_after": list(FOUND_AFTER), "by_ranker": out,
        "note": "fold rankers: the shipped ranker config and seed fitted on every training task of the shipped roots "
                "but the network's, on the shipped model's rows and on the same rows with the tiled block's "
                "parallel grain and cache footprints (from the trace and the unscheduled workload) beside them",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
