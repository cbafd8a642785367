"""The loop-nest structure features of a trace (cwm.model.trace_structure, its native twin)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cwm import native
from cwm.actions import featurize_batch
from cwm.actions.featurize import COL, INT_COLUMNS, NUM_NUMBERS
from cwm.actions.vocab import KIND_ID
from cwm.model.trace_structure import NAMES, structure_stats
from tests.test_actions import HANDMADE


def _rows(actions):
    """Arrays of one trace from ``(kind, phase, n_operands, numbers)`` tuples, padded by one row."""
    ints = np.zeros((1, len(actions) + 1, len(INT_COLUMNS)), np.int32)
    nums = np.zeros((1, len(actions) + 1, NUM_NUMBERS), np.float32)
    for t, (kind, phase, n_operands, numbers) in enumerate(actions):
        ints[0, t, COL["kind"]], ints[0, t, COL["phase"]] = KIND_ID[kind], phase
        ints[0, t, COL["n_operands"]], ints[0, t, COL["n_numbers"]] = n_operands, len(numbers)
        nums[0, t, :len(numbers)] = numbers
    return ints, nums, np.array([len(actions)], np.int32)


# a CPU multi-level tiling (SSRSRS) of a 256x512 x 64 matmul: two spatial loops in 4 tiles, one
# reduction loop in 2, then the post-processor fuses 3 loops for Parallel and 1 for Vectorize
MATMUL = [
    ("Split", 0, 1, [1, 0, 2, 4, 8, 4]),     # i = 256
    ("Split", 0, 1, [1, 0, 4, 2, 4, 16]),    # j = 512
    ("Split", 0, 1, [1, 0, 16, 4]),          # k = 64
    ("Split", 0, 1, [1, 0, 0, 8]),           # an inferred factor: not a known tiling, skipped
    ("ComputeAt", 0, 2, [1, -1, 3]),
    ("EnterPostproc", 1, 0, []),
    ("Fuse", 1, 3, [1]), ("Parallel", 1, 1, []),
    ("Fuse", 1, 1, [1]), ("Vectorize", 1, 1, []),
    ("Split", 1, 1, [1, 0, 0, 32]),          # a post-processing split
]


def _features(actions) -> dict:
    ints, nums, lengths = _rows(actions)
    return dict(zip(NAMES, structure_stats(ints, nums, lengths)[0].tolist()))


def test_handmade_tiling():
    f = _features(MATMUL)
    assert f["split4_count"] == 2 and f["split2_count"] == 1 and f["split3_count"] == f["split5_count"] == 0
    # per tile position, log2 of the product over loops: i = 2*4*8*4, j = 4*2*4*16
    assert [f[f"split4_sum_log2_t{p}"] for p in range(4)] == [1 + 2, 2 + 1, 3 + 2, 2 + 4]
    assert [f[f"split4_max_log2_t{p}"] for p in range(4)] == [2, 2, 3, 4]
    assert (f["split2_sum_log2_t0"], f["split2_sum_log2_t1"]) == (4, 2)
    assert f["log2_split_extent"] == 8 + 9 + 6  # the known splits only
    assert f["mean_log2_inner_share"] == pytest.approx(((2 - 8) + (4 - 9) + (2 - 6)) / 3)
    assert (f["parallel_fusions"], f["parallel_fused_max"], f["parallel_fused_sum"]) == (1, 3, 3)
    assert (f["vectorize_fusions"], f["vectorize_fused_max"]) == (1, 1)
    assert (f["postproc_splits"], f["postproc_split_max_log2"]) == (1, 5)
    assert (f["compute_at_count"], f["compute_at_max_loc"], f["compute_at_min_loc"]) == (1, 3, 3)
    # the nest starts i0 j0 i1 j1 ...: Parallel over 3 fused loops = i0 * j0 * i1 = 2 * 4 * 4
    assert f["nest_tiled"] == 1 and f["nest_log2_parallel"] == 1 + 2 + 2
    assert f["nest_log2_spatial_per_parallel"] == 17 - 5
    assert f["nest_log2_vector"] == f["nest_log2_last_inner"] == 4  # j's innermost tile, 16
    assert f["nest_log2_register_tile"] == 2 + 4 + 2  # innermost i, j and k tiles
    assert f["nest_log2_work_per_parallel"] == 23 - 5
    assert (f["nest_parallel_loops"], f["nest_vector_loops"]) == (3, 1)
    assert f["nest_log2_inner_spatial_levels"] == (3 + 2) + (2 + 4)
    assert f["nest_log2_below_outer"] == (2 + 3 + 2) + (1 + 2 + 4) + 6


def test_no_tiling_and_empty_traces():
    f = _features([("Split", 1, 1, [1, 0, 0, 64]), ("Parallel", 1, 1, [])])
    assert f["postproc_splits"] == 1 and f["postproc_split_max_log2"] == 6
    assert f["nest_tiled"] == 0 and f["log2_split_extent"] == 0 and f["parallel_fusions"] == 0
    assert f["compute_at_max_loc"] == f["compute_at_min_loc"] == -2  # no location (-1 is root)
    empty = _features([])
    assert empty["compute_at_max_loc"] == -2
    assert all(v == 0 for k, v in empty.items() if not k.startswith("compute_at_m"))


def test_more_fused_loops_than_the_nest_has():
    """A Parallel over more fused loops than two levels hold takes both outer levels; a Vectorize
    over more loops than there are takes every innermost tile (Python's slice, in both twins)."""
    actions = [a for a in MATMUL if a[0] != "Fuse"]
    actions[5:5] = [("Fuse", 1, 9, [1]), ("Parallel", 1, 1, []), ("Fuse", 1, 7, [1]), ("Vectorize", 1, 1, [])]
    f = _features(actions)
    assert f["nest_log2_parallel"] == 3 + 3 and f["nest_log2_vector"] == 2 + 4
    ints, nums, lengths = _rows(actions)
    assert np.array_equal(native.structure_stats(_batch(ints, nums, lengths)), structure_stats(ints, nums, lengths))


def _batch(ints, nums, lengths):
    from cwm.actions.featurize import FeatureBatch

    return FeatureBatch(ints, nums, lengths, np.zeros(len(lengths), np.int32))


def test_real_traces(trace_records):
    """Every matmul_256 candidate tiles the same 256^3 iteration space, so the log2 extents of
    its split loops add up to 24 whatever the factors (CPU and GPU traces alike)."""
    rows = [r for r in trace_records if r["workload"] == "matmul_256"]
    fb = featurize_batch([r["trace"] for r in rows])
    f = dict(zip(NAMES, structure_stats(fb.ints, fb.numbers, fb.lengths).T))
    assert np.all(f["log2_split_extent"] == 24) and np.all(f["nest_tiled"] == 1)
    assert len(np.unique(f["nest_log2_parallel"])) > 3  # the candidates differ where it matters


def test_native_twin_identical(trace_records):
    """Exactly equal, not close: both add the same double-precision libm ``log2`` values in the
    same order, and neither uses NumPy's CPU-dispatched float32 kernels, so the features (and the
    ranker's scores) are the same on every x86 host."""
    fb = featurize_batch([r["trace"] for r in trace_records] + [json.dumps(HANDMADE), "[[], []]"])
    ref = structure_stats(fb.ints, fb.numbers, fb.lengths)
    nat = native.structure_stats(fb)
    assert nat.shape == ref.shape == (len(trace_records) + 2, len(NAMES)) and nat.dtype == np.float32
    assert np.array_equal(nat, ref)
    with pytest.raises(ValueError, match="lengths must have shape"):
        native.load().structure_stats(fb.ints, fb.numbers, fb.lengths[:-1])
    with pytest.raises(ValueError, match="int32"):
        native.load().structure_stats(fb.ints.astype(np.int64), fb.numbers, fb.lengths)
