"""cwm.model.tile_footprint (the spec) and its native twin: the tiled block's parallel grain and
cache footprints, read from a trace in MetaSchedule's instruction format and the unscheduled
workload's facts, on cases worked by hand."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

TILES = {"i": [2, 1, 2, 2], "j": [1, 2, 2, 2], "k": [4, 2]}  # outermost factor first


def matmul_trace(postproc: list) -> str:
    """A multi-level tiling (``SSRSRS``) of an 8x8x8 matmul block ``C`` in the trace JSON of
    MetaSchedule, with ``postproc`` after ``EnterPostproc``."""
    insts = [["GetSBlock", [], ["C", "main"], ["b0"]],
             ["Annotate", ["b0", '"SSRSRS"'], ["meta_schedule.tiling_structure"], []],
             ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]]]
    decisions, levels = [], {}
    for loop, name in zip(("l1", "l2", "l3"), "ijk"):
        n = len(TILES[name])
        vs = [f"v{name}{p}" for p in range(n)]
        decisions.append([len(insts), TILES[name]])
        insts.append(["SamplePerfectTile", [loop], [n, 64], vs])
        outs = [f"l{name}{p}" for p in range(n)]
        insts.append(["Split", [loop] + vs, [True, False], outs])
        levels[name] = outs
    i, j, k = levels["i"], levels["j"], levels["k"]
    order = [i[0], j[0], i[1], j[1], k[0], i[2], j[2], k[1], i[3], j[3]]
    insts += [["Reorder", order, [], []], ["EnterPostproc", [], [], []]] + postproc
    return json.dumps([insts, decisions])


def visit(block: str, loops: int, parallel: int) -> list:
    """The post-processor's visit of one block: its loops, and a Fuse + Parallel of the first
    ``parallel`` of them when ``parallel``."""
    names = [f"{block}_l{q}" for q in range(loops)]
    out = [["GetSBlock", [], ["C", "main"], [block]], ["GetLoops", [block], [], names]]
    if parallel:
        out += [["Fuse", names[:parallel], [1], [f"{block}_f"]], ["Parallel", [f"{block}_f"], [], []]]
    return out


def matmul_workload():
    import tvm
    from tvm import te

    a, b = te.placeholder((8, 8), name="A"), te.placeholder((8, 8), name="B")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((8, 8), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return tvm.IRModule({"main": te.create_prim_func([a, b, c])})


def test_nest_and_parallel_grain_read_from_the_trace():
    from cwm.model.tile_footprint import tiled_nest

    name, nest, parallel = tiled_nest(matmul_trace(visit("b9", 10, 2)))
    assert name == "C" and parallel == 2
    assert [f for _, _, f in nest] == [2, 1, 1, 2, 4, 2, 2, 2, 2, 2]
    assert [s for s, _, _ in nest] == [0, 1, 0, 1, 2, 0, 1, 2, 0, 1]


@pytest.mark.parametrize("postproc, loops", [
    (visit("b9", 10, 0), 0),                              # the tiled block left serial
    (visit("b8", 6, 3) + visit("b9", 8, 1), 3),           # a block inside the nest fused 3 outer loops first
    (visit("b8", 4, 4) + visit("b9", 10, 1), 1),          # a block at the root: not the nest's loops
])
def test_parallel_loops_of_the_tiled_block(postproc, loops):
    from cwm.model.tile_footprint import tiled_nest

    assert tiled_nest(matmul_trace(postproc))[2] == loops


def test_columns_worked_by_hand():
    from cwm.model.tile_footprint import NAMES, columns, task_facts

    got = columns(matmul_trace(visit("b9", 10, 3)), task_facts(matmul_workload()), cores=2)
    assert len(got) == len(NAMES)
    # parallel: the first 3 loops, extents 2 * 1 * 1 = 2, a full wave on 2 cores
    assert got[:2] == [1.0, 0.0]
    # below each group boundary, (i, j, k) tile extents and bytes of A[i, k] + B[k, j] + C[i, j] (4 B each):
    # (4, 8, 8): 128 + 256 + 128; (4, 4, 8): 128 + 128 + 64; (4, 4, 2): 32 + 32 + 64;
    # (2, 2, 2): 16 + 16 + 16; (2, 2, 1): 8 + 8 + 16
    expected = [512, 320, 128, 48, 32]
    assert got[2:] == pytest.approx([math.log2(b) for b in expected], abs=1e-12)  # exact powers and log2 of ints


def test_a_strided_window_counts_its_halo():
    from cwm.model.tile_footprint import footprint_bytes

    # x[2 * o + r] (float32) with o tiled to 4 and r to 3: 2 * 3 + 2 + 1 = 9 elements
    assert footprint_bytes([4, 3], [[[4, [100], [[[2, 1], 1]]]]]) == 36.0
    # a dimension that is not affine counts whole
    assert footprint_bytes([4, 3], [[[4, [100], [[None, 1]]]]]) == 400.0


def test_a_trace_without_a_tiled_block_reads_absent():
    from cwm.model.tile_footprint import ABSENT, NAMES, columns

    trace = json.dumps([[["GetSBlock", [], ["C", "main"], ["b0"]]], []])
    assert columns(trace, {"blocks": {}}, cores=2) == [ABSENT] * len(NAMES)


def test_task_facts_of_a_matmul():
    from cwm.model.tile_footprint import task_facts

    facts = task_facts(matmul_workload())
    # per buffer (A, B read; C written): [bytes, shape, per dim [coefficients over (i, j, k), extent]]
    assert facts == {"blocks": {"C": {"extents": [8, 8, 8], "buffers": [
        [[4, [8, 8], [[[1, 0, 0], 1], [[0, 0, 1], 1]]]],
        [[4, [8, 8], [[[0, 0, 1], 1], [[0, 1, 0], 1]]]],
        [[4, [8, 8], [[[1, 0, 0], 1], [[0, 1, 0], 1]]]]]}}}


@pytest.mark.parametrize("cores, idle", [(1, 0.0), (2, 0.0), (3, 1 - 4 / 6), (8, 0.5)])
def test_the_idle_share_of_the_last_wave(cores, idle):
    from cwm.model.tile_footprint import columns, task_facts

    # the first 4 loops: extents 2 * 1 * 1 * 2 = 4 parallel iterations
    got = columns(matmul_trace(visit("b9", 10, 4)), task_facts(matmul_workload()), cores)
    assert got[0] == 2.0 and got[1] == pytest.approx(idle, abs=1e-15)  # one float division


def test_a_block_the_workload_lacks_keeps_the_parallel_grain_only():
    from cwm.model.tile_footprint import ABSENT, FOOTPRINT_LEVELS, columns

    got = columns(matmul_trace(visit("b9", 10, 2)), {"blocks": {}}, 2)
    assert got[:2] == [1.0, 0.0] and got[2:] == [ABSENT] * FOOTPRINT_LEVELS


def test_native_twin_reads_the_hand_worked_cases():
    from cwm import native
    from cwm.model.tile_footprint import columns, facts_text, task_facts

    facts = task_facts(matmul_workload())
    traces = [matmul_trace(visit("b9", 10, k)) for k in (0, 2, 3, 4)]
    want = np.asarray([columns(t, facts, 3) for t in traces], np.float32)
    for nests in (False, True):  # from the trace texts, and from the nests read in the featuriser's parse
        fb = native.featurize_batch(traces, nests=nests)
        fb.facts = facts_text(facts)
        assert (fb.nests is not None) == nests
        assert np.array_equal(native.tile_footprint(fb, 3), want), nests


def test_native_twin_refuses_bad_facts():
    from cwm import native
    from cwm.actions.canonical import TraceFormatError

    for nests in (False, True):
        fb = native.featurize_batch([matmul_trace([])], nests=nests)
        fb.facts = '{"blocks": {"C": {"extents": [8], "buffers": [[[4, [8], [["x", 1]]]]]}}}'
        with pytest.raises(TraceFormatError, match="coefficients"):
            native.tile_footprint(fb, 2)


def test_a_block_with_a_symbolic_extent_is_left_out_of_the_facts():
    import tvm
    from tvm import te, tirx

    from cwm.model.tile_footprint import task_facts

    n = tirx.Var("n", "int64")
    a, b = te.placeholder((n, 8), name="A"), te.placeholder((8, 8), name="B")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((n, 8), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    d = te.compute((8, 8), lambda i, j: b[i, j] * 2.0, name="D")
    facts = task_facts(tvm.IRModule({"main": te.create_prim_func([a, b, c, d])}))
    assert list(facts["blocks"]) == ["D"]
