"""The tiled block's parallel grain and cache footprints, read from a candidate's trace and the
task's *unscheduled* workload (Python; the spec of the native twin ``cwm.native.tile_footprint``).

The other trace-column families read the featurised actions alone. These columns need two things
the actions drop: the post-processor's visits of each block (how many loops each ``GetLoops``
returned, to tell which ``Fuse`` + ``Parallel`` fuses the tiled block's loops), and the tiled
block's buffer accesses in ``s_0`` (the task's :func:`task_facts`, computed once per task as
``z_0`` is). Nothing of the candidate's program is replayed (DESIGN.md §5). Chosen by decision 104
(docs/decisions.md): out of network on the training tasks, pairwise +0.0036 (+0.0013, +0.0058).

* ``parallel_log2_extent``: ``log2`` of the product of the extents of the tiled block's loops that
  the post-processor fuses and parallelises (0 when it parallelises none: the block runs on one
  core; the trace-structure column ``nest_log2_parallel`` reads the trace's *first* ``Parallel``,
  which can be another block's);
* ``parallel_idle_share``: the share of the target's cores idle in the last wave of those
  iterations;
* ``footprint_log2_bytes_below_group{g}``: for each boundary between the groups of the tiling
  structure (``SSRSRS`` on a CPU: 5), outermost first, ``log2`` of the bytes that the body below
  it touches, summed over the block's buffers; a buffer's box along a dimension indexed by
  ``sum c_v * v + d`` is ``sum |c_v| (e_v - 1) + 1`` (a strided window's halo included), where
  ``e_v`` is the product of ``v``'s tile factors below the boundary, capped at the dimension.

:data:`ABSENT` for a trace without a tiled nest; the footprints also when ``s_0`` has no block of
that name or the nest splits a loop the block does not have.
"""
from __future__ import annotations

import json
import math

import numpy as np

FOOTPRINT_LEVELS = 5
ABSENT = -1.0
NAMES = (("parallel_log2_extent", "parallel_idle_share")
         + tuple(f"footprint_log2_bytes_below_group{g + 1}" for g in range(FOOTPRINT_LEVELS)))


# ------------------------------------------------------------------ the task's facts (from s_0)
def task_facts(workload) -> dict:
    """``{"blocks": {name: {"extents": [...], "buffers": [[access, ...], ...]}}}`` of every block
    under ``s_0``'s root: its iteration extents, and per buffer (reads, then writes, first seen
    first) each access as ``[bytes per element, shape, dims]``, a dim as ``[coefficients over the
    block's iteration variables or None when not affine, extent]``. JSON-able (the scorer's input
    carries it). A block with a symbolic extent or buffer shape is left out (its candidates'
    footprints read :data:`ABSENT`); a symbolic coefficient makes its dimension not affine."""
    from tvm import s_tir
    from tvm.sym.pattern import detect_linear_equation

    def constant(x) -> int:
        if not hasattr(x, "value"):
            raise TypeError(f"not a constant: {x}")
        return int(x.value)

    def coefficients(expr, variables):
        coef = list(detect_linear_equation(expr, variables)) if variables else []
        if not coef or not all(hasattr(c, "value") for c in coef[:-1]):
            return None
        return [int(c.value) for c in coef[:-1]]

    sch = s_tir.Schedule(workload)
    blocks = {}
    pending = list(sch.get_child_blocks(sch.get_sblock("root")))
    while pending:
        rv = pending.pop(0)
        pending += list(sch.get_child_blocks(rv))
        block = sch.get(rv)
        variables = [iv.var for iv in block.iter_vars]
        buffers: dict[str, list] = {}
        try:
            for region in list(block.reads) + list(block.writes):
                buf = region.source
                dims = [[coefficients(r.min, variables), constant(r.extent)] for r in region.region]
                buffers.setdefault(buf.name, []).append(
                    [max(1, buf.dtype.bits // 8), [constant(s) for s in buf.shape], dims])
            extents = [constant(iv.dom.extent) for iv in block.iter_vars]
        except TypeError:  # a symbolic extent or shape
            continue
        blocks[block.name_hint] = {"extents": extents, "buffers": list(buffers.values())}
    return {"blocks": blocks}


def facts_text(facts: dict) -> str:
    """:func:`task_facts` as the compact JSON text the native twin and the scorer read."""
    return json.dumps(facts, separators=(",", ":"))


# ------------------------------------------------------------------ the trace
def tiled_nest(trace: str):
    """``(block name, nest, parallel loops)`` of a trace's first multi-level-tiled block, or None.
    ``nest``: ``(source loop index, tile position, factor)`` of each tiled loop, outermost first,
    as its ``Reorder`` orders them; ``parallel loops``: how many of the outermost the
    post-processor fuses and parallelises (0: none; :func:`parallel_loops`)."""
    insts, decisions = json.loads(trace)
    decided = {int(i): v for i, v in decisions}
    names, loops_of, factor_of, split_of = {}, {}, {}, {}
    block, nest, arity, postproc, events = None, None, [], False, []
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
            nest = []
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
    nest less its ``outer`` leading spatial loops: a block that shares the nest's outer loops and
    is visited first fuses them, and the tiled block then sees them as one."""
    mine = [e for e in events if n_nest - outer + 1 <= e[0] <= n_nest]
    if not mine:
        return 0
    loops, fused = max(mine, key=lambda e: e[0])
    if loops == n_nest:
        return fused
    return n_nest - loops + 1


def groups(nest) -> list[list[int]]:
    """The nest's positions split into runs of one tile position over increasing source loops."""
    out: list[list[int]] = []
    for k, (source, p, _) in enumerate(nest):
        if out and nest[out[-1][-1]][1] == p and nest[out[-1][-1]][0] < source:
            out[-1].append(k)
        else:
            out.append([k])
    return out


def footprint_bytes(extents_below: list[int], buffers) -> float:
    """Bytes of the boxes that tile extents ``extents_below`` (one per iteration variable) touch:
    per buffer the largest of its accesses, summed over the buffers in order."""
    total = 0.0
    for accesses in buffers:
        best = 0.0
        for elem_bytes, shape, dims in accesses:
            size = float(elem_bytes)
            for (coef, extent), full in zip(dims, shape):
                if coef is None or len(coef) != len(extents_below):
                    size *= full
                else:
                    span = extent
                    for c, e in zip(coef, extents_below):
                        span += abs(c) * (e - 1)
                    size *= min(full, span)
            best = max(best, size)
        total += best
    return total


def columns(trace: str, facts: dict, cores: int) -> list[float]:
    """The :data:`NAMES` columns of one candidate of a task whose :func:`task_facts` are ``facts``,
    on a target of ``cores`` cores."""
    found = tiled_nest(trace)
    if found is None or found[0] is None:
        return [ABSENT] * len(NAMES)
    name, nest, parallel = found
    extent = 1
    for _, _, f in nest[:parallel]:
        extent *= f
    cores = max(1, int(cores))
    waves = -(-extent // cores)
    out = [math.log2(extent), 1.0 - extent / (waves * cores)]
    block = facts["blocks"].get(name)
    if block is None or max(s for s, _, _ in nest) >= len(block["extents"]):
        return out + [ABSENT] * FOOTPRINT_LEVELS
    cuts = [g[-1] + 1 for g in groups(nest)[:-1]][:FOOTPRINT_LEVELS]
    for cut in cuts:
        below = [1] * len(block["extents"])
        for source, _, factor in nest[cut:]:
            below[source] *= factor
        out.append(math.log2(max(1.0, footprint_bytes(below, block["buffers"]))))
    return out + [ABSENT] * (FOOTPRINT_LEVELS - len(cuts))


def tile_footprint(traces, facts: dict, cores: int) -> np.ndarray:
    """``[B, len(NAMES)]`` float32 columns of trace JSON texts of one task."""
    out = np.full((len(traces), len(NAMES)), ABSENT, np.float32)
    for i, trace in enumerate(traces):
        out[i] = columns(trace, facts, cores)
    return out
