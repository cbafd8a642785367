"""The optional trace-column families by name (cwm.model.trace_columns), as Python and the C++
scorer both read them from a manifest."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from cwm.actions import featurize_batch
from cwm.model import trace_columns
from tests.test_actions import HANDMADE


def test_families_come_in_row_order_and_unknown_ones_are_refused():
    assert trace_columns.ordered(["loop_tiles", "compute_locations", "vector_alignment"]) == trace_columns.FAMILIES
    assert trace_columns.ordered(["compute_locations", "vector_alignment"]) == ("vector_alignment", "compute_locations")
    assert trace_columns.ordered([]) == ()
    with pytest.raises(ValueError, match="unknown trace-column family 'vector_fill'"):
        trace_columns.ordered(["vector_fill"])
    from cwm.model import compute_locations, loop_tiles, vector_alignment

    assert trace_columns.names(["loop_tiles", "compute_locations", "vector_alignment"]) == [
        *vector_alignment.NAMES, *compute_locations.NAMES, *loop_tiles.NAMES]


def test_every_family_has_a_native_twin_identical_to_its_spec(trace_records):
    fb = featurize_batch([r["trace"] for r in trace_records] + [json.dumps(HANDMADE), "[[], []]"])
    native = trace_columns.native_columns(trace_columns.FAMILIES, fb)
    for family, columns in zip(trace_columns.FAMILIES, native):
        spec = trace_columns.spec_columns(family, fb.ints, fb.numbers, fb.lengths)
        assert columns.shape == spec.shape == (len(fb.lengths), len(trace_columns.names([family])))
        assert np.array_equal(columns, spec), family


def _model_with_every_family(directory, workload_mods, trace_records):
    from tests.test_vector_alignment import flagged_fixture_model

    return flagged_fixture_model(reversed(trace_columns.FAMILIES), directory, workload_mods, trace_records)


def test_a_model_with_every_family_saves_them_in_row_order(workload_mods, trace_records, tmp_path):
    from cwm.model.world_model import feature_names

    model = _model_with_every_family(tmp_path / "model", workload_mods, trace_records)
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert model.columns == trace_columns.FAMILIES and all(manifest[f] is True for f in trace_columns.FAMILIES)
    assert manifest["feature_names"] == feature_names(model.tcfg.dim, True, False, trace_columns.FAMILIES)
    width = len(trace_columns.names(trace_columns.FAMILIES))
    assert manifest["feature_names"][-5 - width:-5] == trace_columns.names(trace_columns.FAMILIES)


def test_cli_matches_python_on_a_model_with_every_family(workload_mods, trace_records, tmp_path):
    """The C++ scorer lays the families out in the same order as Python."""
    from tests.test_vector_alignment import assert_cli_scores_the_flagged_model

    assert_cli_scores_the_flagged_model(_model_with_every_family, "compute_locations", workload_mods, trace_records,
                                        tmp_path)


def test_refit_ranker_turns_families_on_and_off(tiny_model_dir, tiny_dataset, tmp_path):
    """``tools/refit_ranker.py --<family> true|false``; a family not named keeps what was saved."""
    from cwm.model.world_model import WorldModel
    from tests.tool_modules import tool

    refit = tool("refit_ranker")
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    every = [str(model), "--data", str(tiny_dataset), "--vector-alignment", "true", "--compute-locations", "true",
             "--loop-tiles", "true"]
    assert refit.main(every) == 0
    assert WorldModel.load(model).columns == trace_columns.FAMILIES
    assert refit.main([str(model), "--data", str(tiny_dataset), "--vector-alignment", "false",
                       "--loop-tiles", "false"]) == 0
    assert WorldModel.load(model).columns == ("compute_locations",)
    manifest = json.loads((model / "manifest.json").read_text())
    assert "vector_alignment" not in manifest and "compute_locations" in manifest["ranker_refit"]["features"]
