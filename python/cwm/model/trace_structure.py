"""Loop-nest structure of a candidate read from its actions alone (NumPy; the native path's spec).

:mod:`cwm.model.action_stats` pools every ``Split`` into a mean and a max, which loses *where*
a factor sits in the tiling. MetaSchedule's multi-level tiling splits each spatial loop into one
tile per ``S`` of its structure (``SSRSRS`` on CPU: 4) and each reduction loop into one per ``R``
(2), then reorders the tiles level by level; the post-processor fuses the outer loops for
``Parallel`` and the inner ones for ``Vectorize``. These features keep that order. They come from
the trace's own numbers (the sampled tile factors, the counts of fused loops) and never from the
scheduled program: nothing is replayed (DESIGN.md §5). Chosen by task-grouped CV on the training
tasks (docs/decisions.md §44).

Per trace, from the sample-phase ``Split`` rows whose factors are all known (``> 0``):

* per arity 2..5 (factors a split produces): how many, and per tile position the sum and the max
  of ``log2`` factor (the product of that level's tiles over the loops, and its largest tile);
* ``log2`` of the split loops' total extent and the mean ``log2`` share of the innermost tile;
* from the post-processing phase: the loops fused before each ``Parallel`` and ``Vectorize``
  (number of fusions, largest and total count), the post-processing splits and their largest
  factor;
* ``compute-at`` decisions: count, largest and smallest location;
* the tiled nest (splits of the largest arity >= 3 are its spatial loops, arity 2 its reduction
  loops): ``log2`` of the parallel extent (the first ``n`` loops of the reordered nest, ``n`` =
  loops fused before the first ``Parallel``), the spatial work left per parallel iteration, the
  vectorized extent (the innermost tiles of the last ``m`` spatial loops, ``m`` = loops fused
  before the first ``Vectorize``, else the last one), the last loop's innermost tile, the register
  tile (innermost spatial and reduction tiles), the total work per parallel iteration, ``n``,
  ``m``, the two inner spatial levels, and every level below the outermost.
"""
from __future__ import annotations

import math

import numpy as np

from cwm.actions.featurize import COL
from cwm.actions.vocab import KIND_ID

ARITIES = (2, 3, 4, 5)
SPLIT_NAMES = tuple(name for a in ARITIES for name in
                    (f"split{a}_count",) + tuple(f"split{a}_sum_log2_t{p}" for p in range(a)) +
                    tuple(f"split{a}_max_log2_t{p}" for p in range(a)))
SCHEDULE_NAMES = ("log2_split_extent", "mean_log2_inner_share",
                  "parallel_fusions", "parallel_fused_max", "parallel_fused_sum",
                  "vectorize_fusions", "vectorize_fused_max", "postproc_splits", "postproc_split_max_log2",
                  "compute_at_count", "compute_at_max_loc", "compute_at_min_loc")
NEST_NAMES = ("nest_tiled", "nest_log2_parallel", "nest_log2_spatial_per_parallel", "nest_log2_vector",
              "nest_log2_last_inner", "nest_log2_register_tile", "nest_log2_work_per_parallel",
              "nest_parallel_loops", "nest_vector_loops", "nest_log2_inner_spatial_levels",
              "nest_log2_below_outer")
NAMES = SPLIT_NAMES + SCHEDULE_NAMES + NEST_NAMES

_SPLIT, _FUSE, _PARALLEL, _VECTORIZE = KIND_ID["Split"], KIND_ID["Fuse"], KIND_ID["Parallel"], KIND_ID["Vectorize"]
_COMPUTE_AT = (KIND_ID["ComputeAt"], KIND_ID["ReverseComputeAt"])
_NO_LOCATION = -2.0  # compute-at location features when there is none (-1 is "root")


def _factors(ints_row, numbers_row) -> np.ndarray:
    """A ``Split`` row's factors: its numbers after the two attribute flags (0 = inferred)."""
    k = min(int(ints_row[COL["n_numbers"]]), numbers_row.shape[-1])
    return numbers_row[2:k]


def _sum(values) -> float:
    """Left-to-right sum in double precision: the native core adds in the same order."""
    acc = 0.0
    for v in values:
        acc += float(v)
    return acc


def known_tilings(ints: np.ndarray, nums: np.ndarray, n: int) -> list[np.ndarray]:
    """The factors of each sample-phase ``Split`` of one trace whose arity is in :data:`ARITIES` and
    whose factors are all known (``> 0``), in trace order."""
    kind, phase = ints[:n, COL["kind"]], ints[:n, COL["phase"]]
    tilings = [_factors(ints[t], nums[t]) for t in np.nonzero((kind == _SPLIT) & (phase == 0))[0]]
    return [f for f in tilings if len(f) in ARITIES and (f > 0).all()]


def compute_at_locations(ints: np.ndarray, nums: np.ndarray, n: int) -> list[float]:
    """The location of each ``ComputeAt`` / ``ReverseComputeAt`` of one trace, in trace order."""
    kind = ints[:n, COL["kind"]]
    return [float(nums[t, 2]) for t in range(n) if kind[t] in _COMPUTE_AT]


def _one(ints: np.ndarray, nums: np.ndarray, n: int) -> list[float]:
    kind, phase = ints[:n, COL["kind"]], ints[:n, COL["phase"]]
    by_arity: dict[int, list[list[float]]] = {a: [] for a in ARITIES}
    extent, inner_share = 0.0, []
    for f in known_tilings(ints, nums, n):
        lf = [math.log2(float(x)) for x in f]  # libm's double log2, as the native core (not NumPy's SIMD)
        by_arity[len(f)].append(lf)
        extent += _sum(lf)
        inner_share.append(lf[-1] - _sum(lf))
    out: list[float] = []
    for a in ARITIES:
        tiles = by_arity[a]
        out.append(float(len(tiles)))
        out += [_sum(x[p] for x in tiles) for p in range(a)]
        out += [max((x[p] for x in tiles), default=0.0) for p in range(a)]
    parallel, vector, pp_splits = [], [], []
    for t in range(n):
        if kind[t] == _FUSE and phase[t] == 1 and t + 1 < n and kind[t + 1] in (_PARALLEL, _VECTORIZE):
            (parallel if kind[t + 1] == _PARALLEL else vector).append(int(ints[t, COL["n_operands"]]))
        elif kind[t] == _SPLIT and phase[t] == 1:
            f = _factors(ints[t], nums[t])
            f = f[f > 0]
            pp_splits.append(max(math.log2(float(x)) for x in f) if len(f) else 0.0)
    locations = compute_at_locations(ints, nums, n)
    out += [extent, _sum(inner_share) / len(inner_share) if inner_share else 0.0,
            len(parallel), max(parallel, default=0), sum(parallel), len(vector), max(vector, default=0),
            len(pp_splits), max(pp_splits, default=0.0),
            len(locations), max(locations, default=_NO_LOCATION), min(locations, default=_NO_LOCATION)]
    spatial_arity = max((a for a in ARITIES if a >= 3 and by_arity[a]), default=0)
    if not spatial_arity:
        return out + [0.0] * len(NEST_NAMES)
    s, r = by_arity[spatial_arity], by_arity[2]
    n_par = parallel[0] if parallel else 0
    n_vec = vector[0] if vector else 0
    outer_levels = [x[0] for x in s] + [x[1] for x in s]  # the nest starts S0 of every loop, then S1
    par = _sum(outer_levels[:n_par])
    spatial = _sum(v for x in s for v in x)
    reduction = _sum(v for x in r for v in x)
    inner = [x[-1] for x in s]
    return out + [1.0, par, spatial - par, _sum(inner[-n_vec:]) if n_vec else inner[-1], inner[-1],
                  _sum(inner) + _sum(x[-1] for x in r), spatial + reduction - par, n_par, n_vec,
                  _sum(v for x in s for v in x[2:]), _sum(v for x in s for v in x[1:]) + reduction]


def structure_stats(ints: np.ndarray, numbers: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[B, len(NAMES)]`` float32 features of a padded batch (arrays of ``featurize_batch``)."""
    out = np.zeros((ints.shape[0], len(NAMES)), np.float32)
    for i in range(ints.shape[0]):
        out[i] = _one(ints[i], numbers[i], max(0, min(int(lengths[i]), ints.shape[1])))
    return out
