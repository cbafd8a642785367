"""cwm.model.loop_tiles: which loop gets which tile factors, from the actions alone."""
from __future__ import annotations

import json

import numpy as np
import pytest


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


def test_native_twin_identical(trace_records):
    """Exactly equal: both take libm's double log2 of the float32 factor and add left to right."""
    from cwm import native
    from cwm.actions import featurize_batch
    from cwm.model.loop_tiles import NAMES, loop_tiles
    from tests.test_actions import HANDMADE

    fb = featurize_batch([r["trace"] for r in trace_records] + [json.dumps(HANDMADE), "[[], []]",
                                                                _trace([[1, 3, 5, 7], [2, 2, 2, 16]], [[4, 32]])])
    ref = loop_tiles(fb.ints, fb.numbers, fb.lengths)
    nat = native.loop_tiles(fb)
    assert nat.shape == ref.shape == (len(trace_records) + 3, len(NAMES)) and nat.dtype == np.float32
    assert np.array_equal(nat, ref)
    assert len(np.unique(ref[:, 1])) > 1  # real candidates tile their innermost loop differently
    with pytest.raises(ValueError, match="lengths must have shape"):
        native.load().loop_tiles(fb.ints, fb.numbers, fb.lengths[:-1])


def _model_with_loop_tiles(directory, workload_mods, trace_records):
    """The fixture model with the loop tiles (``"loop_tiles": true``)."""
    from tests.test_vector_alignment import flagged_fixture_model

    return flagged_fixture_model("loop_tiles", directory, workload_mods, trace_records)


def test_a_model_with_the_loop_tiles_saves_loads_and_scores(workload_mods, trace_records, tmp_path):
    from cwm.model.loop_tiles import NAMES
    from cwm.model.world_model import feature_names

    model = _model_with_loop_tiles(tmp_path / "model", workload_mods, trace_records)
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert model.columns == ("loop_tiles",) and manifest["loop_tiles"] is True
    assert manifest["feature_names"] == feature_names(model.tcfg.dim, True, False, ("loop_tiles",))
    assert manifest["feature_names"][-5 - len(NAMES):-5] == list(NAMES)  # before the hardware features


def test_a_non_boolean_flag_is_refused(tmp_path):
    from tests.test_vector_alignment import assert_python_refuses_the_flag

    assert_python_refuses_the_flag("loop_tiles", tmp_path)


def test_cli_matches_python_on_a_model_with_the_loop_tiles(workload_mods, trace_records, tmp_path):
    from tests.test_vector_alignment import assert_cli_scores_the_flagged_model

    assert_cli_scores_the_flagged_model(_model_with_loop_tiles, "loop_tiles", workload_mods, trace_records, tmp_path)
