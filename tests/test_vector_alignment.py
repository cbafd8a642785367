"""The vector-register fill of a trace's vectorized loop (cwm.model.vector_alignment, its native twin)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cwm import native
from cwm.actions import featurize_batch
from cwm.model.vector_alignment import NAMES, vector_alignment
from tests.test_actions import HANDMADE
from tests.test_trace_structure import MATMUL, _batch, _rows


def _features(actions) -> dict:
    ints, nums, lengths = _rows(actions)
    out = vector_alignment(ints, nums, lengths)
    assert np.array_equal(native.vector_alignment(_batch(ints, nums, lengths)), out)
    return dict(zip(NAMES, out[0].tolist()))


def _with_inner_j(tile: int, vector_loops: int = 1):
    """MATMUL with j's innermost tile set to ``tile`` (j's other tiles keep 4, 2, 4) and the
    post-processor vectorizing ``vector_loops`` fused loops."""
    actions = [("Split", 0, 1, [1, 0, 4, 2, 4, tile]) if a[3][2:] == [4, 2, 4, 16] else a for a in MATMUL]
    return [("Fuse", 1, vector_loops, [1]) if a[0] == "Fuse" and a[2] == 1 else a for a in actions]


def test_whole_vectors():
    f = _features(MATMUL)  # j's innermost tile is 16: two AVX2 vectors, one AVX-512 vector
    assert all(f[n] == 1.0 for n in NAMES)


def test_a_remainder_is_a_partly_filled_vector():
    f = _features(_with_inner_j(14))
    assert f["vector_fill16"] == f["last_inner_fill16"] == 14 / 16 and f["vector_whole16"] == 0
    assert f["vector_fill8"] == 14 / 16 and f["vector_whole8"] == 0  # two vectors of 8, one filled 6/8
    f = _features(_with_inner_j(24))
    assert (f["vector_fill8"], f["vector_whole8"]) == (1.0, 1.0)
    assert (f["vector_fill16"], f["vector_whole16"]) == (24 / 32, 0.0)
    f = _features(_with_inner_j(4))
    assert (f["vector_fill8"], f["vector_fill16"]) == (0.5, 0.25)


def test_fused_vector_loops_multiply_their_inner_tiles():
    """Vectorizing i's and j's innermost tiles (4 and 6): 24 lanes, while j's own tile is 6."""
    f = _features(_with_inner_j(6, vector_loops=2))
    assert (f["vector_fill16"], f["vector_whole8"]) == (24 / 32, 1.0)
    assert (f["last_inner_fill8"], f["last_inner_whole8"]) == (6 / 8, 0.0)
    f = _features(_with_inner_j(6, vector_loops=9))  # more loops than the nest has: all of them
    assert f["vector_fill16"] == 24 / 32


def test_no_tiled_nest_gives_zeros():
    assert all(v == 0 for v in _features([("Split", 1, 1, [1, 0, 0, 64]), ("Vectorize", 1, 1, [])]).values())
    assert all(v == 0 for v in _features([]).values())


def test_native_twin_identical(trace_records):
    """Exactly equal: integer products and one double division per value, cast to float32, in both."""
    fb = featurize_batch([r["trace"] for r in trace_records] + [json.dumps(HANDMADE), "[[], []]"])
    ref = vector_alignment(fb.ints, fb.numbers, fb.lengths)
    nat = native.vector_alignment(fb)
    assert nat.shape == ref.shape == (len(trace_records) + 2, len(NAMES)) and nat.dtype == np.float32
    assert np.array_equal(nat, ref)
    assert len(np.unique(ref[:, NAMES.index("vector_fill16")])) > 1  # real candidates differ
    with pytest.raises(ValueError, match="lengths must have shape"):
        native.load().vector_alignment(fb.ints, fb.numbers, fb.lengths[:-1])


def flagged_fixture_model(family, directory, workload_mods, trace_records):
    """The scorer fixture's encoder and transition taking the trace-column ``family`` (a name or
    several) and a ranker
    refitted (as the fixture's own) on the rows that adds, saved and loaded back."""
    from cwm.model.world_model import WorldModel
    from tests.test_scorer_cli import FIXTURE

    model = WorldModel.load(FIXTURE / "model")
    model.columns = (family,) if isinstance(family, str) else tuple(family)
    from tests.tool_modules import tool

    model.ranker = tool("make_scorer_fixture").fit_tiny_ranker(model, trace_records, workload_mods)
    model.save(directory)
    return WorldModel.load(directory)


def _aligned_model(directory, workload_mods, trace_records):
    """The fixture model with the vector fill (``"vector_alignment": true``)."""
    return flagged_fixture_model("vector_alignment", directory, workload_mods, trace_records)


def test_a_model_with_the_vector_fill_saves_loads_and_scores(workload_mods, trace_records, tmp_path):
    from cwm.model.world_model import feature_names

    model = _aligned_model(tmp_path / "model", workload_mods, trace_records)
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert model.columns == ("vector_alignment",) and manifest["vector_alignment"] is True and "vector_alignment" not in model.meta
    assert manifest["feature_names"] == feature_names(model.tcfg.dim, True, False, ("vector_alignment",))
    assert set(NAMES) <= set(manifest["feature_names"]) and manifest["feature_names"][-5:] == feature_names(16)[-5:]
    used = model.ranker.booster.get_score(importance_type="weight")
    columns = {f"f{manifest['feature_names'].index(n)}" for n in NAMES}
    assert columns & set(used), "the tiny ranker must split on the fill for the parity test to cover it"


def assert_python_refuses_the_flag(flag: str, tmp_path):
    """``WorldModel.load`` refuses a non-boolean manifest ``flag``, and a true one on the fixture's
    manifest, whose feature names lack the columns it adds."""
    from cwm.model.world_model import WorldModel
    from tests.test_scorer_cli import FIXTURE, _with_manifest

    bad = _with_manifest(FIXTURE / "model", tmp_path / "bad", **{flag: "yes"})
    with pytest.raises(ValueError, match=f"{flag} must be true or false"):
        WorldModel.load(bad)
    plain = _with_manifest(FIXTURE / "model", tmp_path / "plain", **{flag: True})
    with pytest.raises(ValueError, match="feature_names are not"):
        WorldModel.load(plain)


def test_a_non_boolean_flag_is_refused(tmp_path):
    assert_python_refuses_the_flag("vector_alignment", tmp_path)


def assert_cli_scores_the_flagged_model(make_model, flag: str, workload_mods, trace_records, tmp_path):
    """``cwm_score`` scores the model ``make_model(directory, workload_mods, trace_records)`` saves
    exactly as Python does, and refuses it with a non-boolean manifest ``flag``."""
    import subprocess

    from cwm.model import trace_columns
    from tests.test_scorer_cli import CLI, FIXTURE, _lines, _with_manifest, assert_cli_matches_python

    if not CLI.is_file():
        pytest.skip(f"{CLI} is not built (cmake --build build/cmake)")
    model = make_model(tmp_path / "model", workload_mods, trace_records)
    given = None
    if any(f in trace_columns.TASK_FAMILIES for f in model.columns):  # the fixture's tasks with their facts
        given = tmp_path / "input.jsonl"
        with open(given, "w") as f:
            for task in _lines(FIXTURE / "input.jsonl"):
                f.write(json.dumps({**task, "facts": json.loads(model.task_facts(workload_mods[task["task"]]))}) + "\n")
    assert_cli_matches_python(tmp_path / "model", model, workload_mods, tmp_path / "scores.jsonl", given)
    bad = _with_manifest(tmp_path / "model", tmp_path / "bad", **{flag: 1})
    proc = subprocess.run([str(CLI), str(bad), str(FIXTURE / "input.jsonl")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and f"{flag} must be a boolean" in proc.stderr


def test_cli_matches_python_on_a_model_with_the_vector_fill(workload_mods, trace_records, tmp_path):
    assert_cli_scores_the_flagged_model(_aligned_model, "vector_alignment", workload_mods, trace_records, tmp_path)
