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
    everything = ["tile_footprint", "loop_tiles", "compute_locations", "vector_alignment"]
    assert trace_columns.ordered(everything) == trace_columns.FAMILIES
    assert trace_columns.ordered(["compute_locations", "vector_alignment"]) == ("vector_alignment", "compute_locations")
    assert trace_columns.ordered([]) == ()
    with pytest.raises(ValueError, match="unknown trace-column family 'vector_fill'"):
        trace_columns.ordered(["vector_fill"])
    from cwm.model import compute_locations, loop_tiles, tile_footprint, vector_alignment

    assert trace_columns.names(everything) == [
        *vector_alignment.NAMES, *compute_locations.NAMES, *loop_tiles.NAMES, *tile_footprint.NAMES]
    assert set(trace_columns.TASK_FAMILIES) <= set(trace_columns.FAMILIES)


@pytest.mark.parametrize("cores", [2, 3])
def test_every_family_has_a_native_twin_identical_to_its_spec(trace_records, workload_mods, cores):
    """One task's batch at a time (a task family reads that task's facts), the handmade trace and
    an empty one beside its candidates; every column bit for bit. A task family's twin gives the
    same columns from the trace texts and from the nests the native featuriser read in its parse
    (the scoring path)."""
    from cwm import native as core
    from cwm.model.tile_footprint import facts_text, task_facts

    tiled = 0
    for name, workload in sorted(workload_mods.items()):
        traces = [r["trace"] for r in trace_records if r["workload"] == name] + [json.dumps(HANDMADE), "[[], []]"]
        fb = featurize_batch(traces)
        fb.facts = facts_text(task_facts(workload))
        native = trace_columns.native_columns(trace_columns.FAMILIES, fb, cores)
        for family, columns in zip(trace_columns.FAMILIES, native):
            spec = trace_columns.spec_columns(family, fb, cores)
            assert columns.shape == spec.shape == (len(fb.lengths), len(trace_columns.names([family])))
            assert np.array_equal(columns, spec), (name, family)
        read_in_parse = core.featurize_batch(traces, nests=True)
        assert fb.nests is None and len(read_in_parse.nests) == len(traces)
        read_in_parse.facts = fb.facts
        for family, columns in zip(trace_columns.FAMILIES, native):
            if family in trace_columns.TASK_FAMILIES:
                assert np.array_equal(getattr(core, family)(read_in_parse, cores), columns), (name, family)
        tiled += int((native[-1][:, 2] != -1).sum())
    assert tiled > 0, "the fixture's traces must reach the footprint columns"


def test_a_task_family_needs_the_batch_facts(trace_records):
    fb = featurize_batch([trace_records[0]["trace"]])
    with pytest.raises(ValueError, match="task's facts"):
        trace_columns.native_columns(("tile_footprint",), fb, 2)
    with pytest.raises(ValueError, match="task's facts"):
        trace_columns.spec_columns("tile_footprint", fb, 2)


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
    from cwm.model import tile_footprint

    used = {manifest["feature_names"][int(f[1:])] for f in model.ranker.booster.get_score(importance_type="weight")}
    assert used & set(tile_footprint.NAMES), "the tiny ranker must split on the task family for the CLI test to cover it"
    name = sorted(workload_mods)[0]
    fb = model.featurize(workload_mods[name], [r["trace"] for r in trace_records if r["workload"] == name])
    assert fb.facts is not None and len(fb.nests) == len(fb.lengths), "scoring reads the nests in the featuriser's parse"


def test_cli_matches_python_on_a_model_with_every_family(workload_mods, trace_records, tmp_path):
    """The C++ scorer lays the families out in the same order as Python."""
    from tests.test_vector_alignment import assert_cli_scores_the_flagged_model

    assert_cli_scores_the_flagged_model(_model_with_every_family, "compute_locations", workload_mods, trace_records,
                                        tmp_path)
    import subprocess

    from tests.test_scorer_cli import CLI, FIXTURE

    # the fixture's input has no facts: a model with a task family refuses it, naming what is missing
    proc = subprocess.run([str(CLI), str(tmp_path / "model"), str(FIXTURE / "input.jsonl")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "needs its 'facts'" in proc.stderr


def test_refit_ranker_turns_families_on_and_off(tiny_model_dir, tiny_dataset, tmp_path):
    """``tools/refit_ranker.py --<family> true|false``; a family not named keeps what was saved."""
    from cwm.model.world_model import WorldModel
    from tests.tool_modules import tool

    refit = tool("refit_ranker")
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    every = [str(model), "--data", str(tiny_dataset), "--vector-alignment", "true", "--compute-locations", "true",
             "--loop-tiles", "true", "--tile-footprint", "true"]
    assert refit.main(every) == 0
    assert WorldModel.load(model).columns == trace_columns.FAMILIES
    assert refit.main([str(model), "--data", str(tiny_dataset), "--vector-alignment", "false",
                       "--loop-tiles", "false", "--tile-footprint", "false"]) == 0
    assert WorldModel.load(model).columns == ("compute_locations",)
    manifest = json.loads((model / "manifest.json").read_text())
    assert "vector_alignment" not in manifest and "compute_locations" in manifest["ranker_refit"]["features"]
