"""Each compute-at location of a trace in trace order, read from its actions alone (NumPy; the
spec of any native path).

:mod:`cwm.model.trace_structure` keeps the count, the largest and the smallest compute-at
location of a trace. Which location is slow depends on the block: on ViT's softmax, computing the
row sum (``T_softmax_expsum``) at the consumer's innermost loop recomputes it for every element
(records 37-280× the fastest), while location 1 or 2 of another block costs nothing. The
softmax and layer-norm tasks of every transformer share one trace template, so the location at
each position of the template is a column a tree can learn once. The locations are the trace's
own sampled decisions, never read from the scheduled program (DESIGN.md §5). Docs:
docs/decisions.md §67.
"""
from __future__ import annotations

import numpy as np

from cwm.model.trace_structure import compute_at_locations

POSITIONS = 6
NONE = -3.0  # no compute-at at that position (-1 is the root, -2 inlined)
NAMES = tuple(f"compute_at_loc{i}" for i in range(POSITIONS))


def compute_locations(ints: np.ndarray, numbers: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[B, POSITIONS]`` float32 of a padded batch (arrays of ``featurize_batch``): the location of
    each trace's first :data:`POSITIONS` ``ComputeAt`` / ``ReverseComputeAt`` actions, :data:`NONE`
    after its last."""
    out = np.full((ints.shape[0], POSITIONS), NONE, np.float32)
    for i in range(ints.shape[0]):
        n = max(0, min(int(lengths[i]), ints.shape[1]))
        locations = compute_at_locations(ints[i], numbers[i], n)[:POSITIONS]
        out[i, :len(locations)] = locations
    return out
