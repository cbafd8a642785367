"""cwm.model.loop_tiles: which loop gets which tile factors, from the actions alone."""
from __future__ import annotations

import json

import numpy as np


def _trace(spatial, reduction):
    """A minimal MetaSchedule trace (JSON form) of one block tiled SSRSRS-like."""
    insts, decisions, v = [["GetSBlock", [], ["C", "main"], ["b0"]],
                           ["GetLoops", ["b0"], [], [f"l{i}" for i in range(len(spatial) + len(reduction))]]], [], 100
    for i, factors in enumerate(list(spatial) + list(reduction)):
        outs = [f"v{v + j}" for j in range(len(factors))]
        v += len(factors)
        decisions.append([len(insts), list(factors)])
        insts.append(["SamplePerfectTile", [f"l{i}"], [len(factors), 64], outs])
        insts.append(["Split", [f"l{i}", *outs], [True, False], [f"s{v + j}" for j in range(len(factors))]])
    return json.dumps([insts, decisions])


def test_columns_name_each_loop_from_the_innermost_and_each_level_from_the_inside():
    from cwm import native
    from cwm.model.loop_tiles import ABSENT, NAMES, loop_tiles

    fb = native.featurize_batch([_trace([[1, 2, 4, 8], [2, 2, 2, 16]], [[4, 32]])])
    row = dict(zip(NAMES, loop_tiles(fb.ints, fb.numbers, fb.lengths)[0].tolist()))
    # the last spatial loop (from_last0) is [2, 2, 2, 16]: extent 2^7, innermost tile 16
    assert row["spatial_from_last0_log2_extent"] == 7.0 and row["spatial_from_last0_log2_t0_from_inner"] == 4.0
    assert row["spatial_from_last1_log2_t0_from_inner"] == 3.0 and row["spatial_from_last1_log2_t3_from_inner"] == 0.0
    assert row["spatial_from_last2_log2_extent"] == ABSENT
    assert row["reduction_from_last0_log2_t0_from_inner"] == 5.0 and row["reduction_from_last0_log2_t1_from_inner"] == 2.0


def test_two_loops_trading_factor_lists_get_different_columns_and_an_untiled_trace_is_absent():
    from cwm import native
    from cwm.model.loop_tiles import ABSENT, loop_tiles

    fb = native.featurize_batch([_trace([[1, 2, 4, 8], [2, 2, 2, 16]], [[4, 32]]),
                                 _trace([[2, 2, 2, 16], [1, 2, 4, 8]], [[4, 32]]),
                                 _trace([], [[4, 32]])])
    cols = loop_tiles(fb.ints, fb.numbers, fb.lengths)
    assert not np.array_equal(cols[0], cols[1])
    assert (cols[2] == ABSENT).all()  # reductions alone are no tiled nest
