"""Which loop of the tiled nest gets which tile factors, read from a candidate's actions alone
(NumPy; the spec of any native path).

:mod:`cwm.model.trace_structure` sums each tile level over the loops and keeps the last loop's
innermost tile, and the shipped rollout forgets the numbers of all but its last few actions
(docs/decisions.md §96), so two candidates whose splits trade factor lists get the same row (§95). On a CPU the loop matters: the innermost
tile of the contiguous loop is the vector width, that of the next loop the rows of the register
block. These columns state, for the last :data:`LOOPS` spatial loops of the tiled nest (counted
from the innermost, the contiguous one, so that the same column means the same role across
operators) and its last :data:`REDUCTION_LOOPS` reduction loops, the ``log2`` of each tile level,
innermost first, and of the loop's extent; :data:`ABSENT` where a trace has fewer loops or levels.
The numbers are the trace's own sampled tile factors, never the scheduled program's (DESIGN.md §5).
"""
from __future__ import annotations

import math

import numpy as np

from cwm.model.trace_structure import known_tilings

LOOPS, LEVELS = 4, 4  # spatial loops kept (from the innermost), tile levels kept (innermost first)
REDUCTION_LOOPS, REDUCTION_LEVELS = 3, 2
ABSENT = -1.0
NAMES = (tuple(f"spatial_from_last{q}_{what}" for q in range(LOOPS)
               for what in ("log2_extent",) + tuple(f"log2_t{p}_from_inner" for p in range(LEVELS)))
         + tuple(f"reduction_from_last{q}_{what}" for q in range(REDUCTION_LOOPS)
                 for what in ("log2_extent",) + tuple(f"log2_t{p}_from_inner" for p in range(REDUCTION_LEVELS))))
_SPATIAL_ARITIES = (3, 4, 5)  # multi-level tiling's spatial splits; 2 = a reduction loop's


def _loop_columns(tilings: list[list[float]], loops: int, levels: int) -> list[float]:
    out: list[float] = []
    for q in range(loops):
        if q < len(tilings):
            logs = [math.log2(float(x)) for x in tilings[len(tilings) - 1 - q]]
            extent = 0.0
            for v in logs:  # left to right in double precision, as trace_structure sums
                extent += v
            inner_first = logs[::-1]
            out += [extent] + [inner_first[p] if p < len(inner_first) else ABSENT for p in range(levels)]
        else:
            out += [ABSENT] * (1 + levels)
    return out


def _one(ints: np.ndarray, nums: np.ndarray, n: int) -> list[float]:
    tilings = [list(f) for f in known_tilings(ints, nums, n)]
    arity = max((a for a in _SPATIAL_ARITIES if any(len(f) == a for f in tilings)), default=0)
    spatial = [f for f in tilings if len(f) == arity] if arity else []
    reduction = [f for f in tilings if len(f) == 2] if arity else []
    return _loop_columns(spatial, LOOPS, LEVELS) + _loop_columns(reduction, REDUCTION_LOOPS, REDUCTION_LEVELS)


def loop_tiles(ints: np.ndarray, numbers: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[B, len(NAMES)]`` float32 columns of a padded batch (arrays of ``featurize_batch``);
    :data:`ABSENT` throughout for a trace without a tiled nest."""
    out = np.full((ints.shape[0], len(NAMES)), ABSENT, np.float32)
    for i in range(ints.shape[0]):
        out[i] = _one(ints[i], numbers[i], max(0, min(int(lengths[i]), ints.shape[1])))
    return out
