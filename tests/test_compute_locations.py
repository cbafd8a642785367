"""Each compute-at location of a trace in trace order (cwm.model.compute_locations, its native twin)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cwm import native
from cwm.actions import featurize_batch
from cwm.model.compute_locations import NAMES, NONE, POSITIONS, compute_locations
from tests.test_actions import HANDMADE
from tests.test_trace_structure import MATMUL, _batch, _rows

# ViT's softmax as MetaSchedule samples it: four blocks placed one after another
SOFTMAX = [("ComputeAt", 0, 2, [1, -1, loc]) for loc in (3, 1, -1, 2)] + [("EnterPostproc", 1, 0, [])]


def _locations(actions) -> list[float]:
    ints, nums, lengths = _rows(actions)
    out = compute_locations(ints, nums, lengths)
    assert np.array_equal(native.compute_locations(_batch(ints, nums, lengths)), out)
    return out[0].tolist()


def test_locations_in_trace_order_then_none():
    assert _locations(SOFTMAX) == [3, 1, -1, 2, NONE, NONE]
    assert _locations(MATMUL) == [3] + [NONE] * (POSITIONS - 1)
    assert _locations([]) == [NONE] * POSITIONS


def test_reverse_compute_at_counts_and_other_actions_do_not():
    actions = [("ReverseComputeAt", 0, 2, [1, -1, 0]), ("Split", 0, 1, [1, 0, 2, 4]), ("ComputeInline", 0, 1, [])]
    assert _locations(actions)[:2] == [0, NONE]


def test_only_the_first_positions_are_kept():
    many = [("ComputeAt", 0, 2, [1, -1, loc]) for loc in range(POSITIONS + 3)]
    assert _locations(many) == list(range(POSITIONS)) and len(NAMES) == POSITIONS


def test_native_twin_identical(trace_records):
    """Exactly equal: both copy the action's float32 number."""
    fb = featurize_batch([r["trace"] for r in trace_records] + [json.dumps(HANDMADE), "[[], []]"])
    ref = compute_locations(fb.ints, fb.numbers, fb.lengths)
    nat = native.compute_locations(fb)
    assert nat.shape == ref.shape == (len(trace_records) + 2, POSITIONS) and nat.dtype == np.float32
    assert np.array_equal(nat, ref)
    assert len(np.unique(ref[:, 0])) > 1  # real candidates place their blocks differently
    with pytest.raises(ValueError, match="lengths must have shape"):
        native.load().compute_locations(fb.ints, fb.numbers, fb.lengths[:-1])


def _model_with_locations(directory, workload_mods, trace_records):
    """The fixture model with the compute-at locations (``"compute_locations": true``)."""
    from tests.test_vector_alignment import flagged_fixture_model

    return flagged_fixture_model("compute_locations", directory, workload_mods, trace_records)


def test_a_model_with_the_locations_saves_loads_and_scores(workload_mods, trace_records, tmp_path):
    from cwm.model.world_model import feature_names

    model = _model_with_locations(tmp_path / "model", workload_mods, trace_records)
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert model.columns == ("compute_locations",) and manifest["compute_locations"] is True
    assert "compute_locations" not in model.meta and "vector_alignment" not in manifest
    assert manifest["feature_names"] == feature_names(model.tcfg.dim, True, False, ("compute_locations",))
    assert manifest["feature_names"][-5 - POSITIONS:-5] == list(NAMES)  # before the hardware features
    used = model.ranker.booster.get_score(importance_type="weight")
    columns = {f"f{manifest['feature_names'].index(n)}" for n in NAMES}
    assert columns & set(used), "the tiny ranker must split on a location for the parity test to cover it"


def test_a_non_boolean_flag_is_refused(tmp_path):
    from tests.test_vector_alignment import assert_python_refuses_the_flag

    assert_python_refuses_the_flag("compute_locations", tmp_path)


def test_cli_matches_python_on_a_model_with_the_locations(workload_mods, trace_records, tmp_path):
    from tests.test_vector_alignment import assert_cli_scores_the_flagged_model

    assert_cli_scores_the_flagged_model(_model_with_locations, "compute_locations", workload_mods, trace_records,
                                        tmp_path)
