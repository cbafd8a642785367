"""How well a candidate's vectorized loop fills the CPU's vector registers, read from its actions
alone (NumPy; the spec of any native path).

:mod:`cwm.model.trace_structure` gives the vectorized extent as a ``log2``: 14 and 16 lanes are
0.19 apart there, and a tree learns the difference per workload, if at all. On a CPU that
difference is a remainder loop (LLVM vectorizes ``16·⌊E/16⌋`` iterations and runs the rest
scalar or masked), so these features state it directly, in integers: for lane counts 8 (AVX2,
float32) and 16 (AVX-512, float32), the fill ``E / (lanes·⌈E/lanes⌉)`` of the vectorized extent
``E`` and of the last loop's innermost tile, and whether each is a whole number of vectors. The
numbers come from the trace's own sampled tile factors and fused-loop counts, never from the
scheduled program (DESIGN.md §5). Docs: docs/decisions.md §66.
"""
from __future__ import annotations

import numpy as np

from cwm.actions.featurize import COL
from cwm.actions.vocab import KIND_ID
from cwm.model.trace_structure import known_tilings

LANES = (8, 16)
NAMES = tuple(f"{what}_{stat}{lanes}" for lanes in LANES for what in ("vector", "last_inner")
              for stat in ("fill", "whole"))

_FUSE, _VECTORIZE = KIND_ID["Fuse"], KIND_ID["Vectorize"]
_SPATIAL_ARITIES = (3, 4, 5)  # multi-level tiling's spatial splits (2 = a reduction loop's)


def _extents(ints: np.ndarray, nums: np.ndarray, n: int) -> tuple[int, int] | None:
    """``(vectorized extent, last loop's innermost tile)`` of one trace, or None when it has no
    tiled nest (no sample-phase split of arity >= 3 with every factor known)."""
    kind, phase = ints[:n, COL["kind"]], ints[:n, COL["phase"]]
    by_arity: dict[int, list[list[int]]] = {a: [] for a in _SPATIAL_ARITIES}
    for f in known_tilings(ints, nums, n):
        if len(f) in by_arity:
            by_arity[len(f)].append([int(x) for x in f])
    arity = max((a for a in _SPATIAL_ARITIES if by_arity[a]), default=0)
    if not arity:
        return None
    vector_loops = next((int(ints[t, COL["n_operands"]]) for t in range(n - 1)
                         if kind[t] == _FUSE and phase[t] == 1 and kind[t + 1] == _VECTORIZE), 0)
    inner = [x[-1] for x in by_arity[arity]]
    vector = int(np.prod(inner[-vector_loops:])) if vector_loops else inner[-1]
    return vector, inner[-1]


def _fill(extent: int, lanes: int) -> tuple[float, float]:
    vectors = -(-extent // lanes)
    return extent / (lanes * vectors), float(extent % lanes == 0)


def vector_alignment(ints: np.ndarray, numbers: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[B, len(NAMES)]`` float32 features of a padded batch (arrays of ``featurize_batch``);
    zeros for a trace without a tiled nest."""
    out = np.zeros((ints.shape[0], len(NAMES)), np.float32)
    for i in range(ints.shape[0]):
        ext = _extents(ints[i], numbers[i], max(0, min(int(lengths[i]), ints.shape[1])))
        if ext is None:
            continue
        out[i] = [v for lanes in LANES for e in ext for v in _fill(e, lanes)]
    return out
