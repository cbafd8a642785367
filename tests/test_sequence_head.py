"""The sequence head of a world model (model v6, cwm.model.sequence_head): the blend's arithmetic,
the directory round trip, the margin WorldModel.score and the cost model give, and the C++
scorer's scores of a v6 directory."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "scorer_fixture"
CLI = Path(os.environ.get("CWM_SCORE", ROOT / "build" / "cmake" / "cwm_score"))


def test_blend_is_the_ranker_margin_plus_the_scaled_sequence_score():
    from cwm.model.sequence_head import SequenceBlend

    blend = SequenceBlend(0.25, ranker_spread=0.8, sequence_spread=2.0)
    r, s = np.array([1.0, -0.5, 0.25]), np.array([2.0, 4.0, -1.0])
    # exact in float64: 0.75 r + 0.25 * 0.4 * s
    np.testing.assert_allclose(blend(r, s), 0.75 * r + 0.1 * s, rtol=1e-15)
    assert np.argmax(SequenceBlend(1e-9, 1.0, 1.0)(r, s)) == np.argmax(r)  # a small weight keeps the ranker's order


def test_within_task_spread_is_the_mean_standard_deviation():
    from cwm.model.sequence_head import within_task_spread

    assert within_task_spread([np.array([0.0, 2.0]), np.array([1.0, 1.0, 4.0, 4.0]), np.array([7.0])]) == 1.25
    with pytest.raises(ValueError, match="do not vary"):
        within_task_spread([np.array([3.0, 3.0])])


@pytest.fixture(scope="module")
def head_model_dir(tmp_path_factory, trace_records):
    """The scorer fixture's model with a small head trained on the recorded traces (2 epochs)."""
    from cwm import native
    from cwm.model.sequence_head import fit_head
    from cwm.model.world_model import WorldModel

    d = tmp_path_factory.mktemp("v6") / "model"
    shutil.copytree(FIXTURE / "model", d)
    model = WorldModel.load(d)
    tasks = []
    for name in sorted({r["workload"] for r in trace_records}):
        recs = [r for r in trace_records if r["workload"] == name][:24]
        lat = np.array([np.median(r["run_secs"]) if r.get("run_secs") else np.inf for r in recs])
        tasks.append({"fb": native.featurize_batch([r["trace"] for r in recs]), "lat": lat})
    margins = [np.random.default_rng(i).normal(size=len(t["lat"])) for i, t in enumerate(tasks)]
    model.sequence_head = fit_head(tasks, margins, 0.25, seed=0, epochs=2, dim=16)
    model.save(d)
    return d


def test_v6_round_trip_scores_the_blend(head_model_dir, workload_mods):
    from cwm import native
    from cwm.model.world_model import WorldModel

    manifest = json.loads((head_model_dir / "manifest.json").read_text())
    assert manifest["version"] == 6 and manifest["sequence_head"]["weight"] == 0.25
    model = WorldModel.load(head_model_dir)
    plain = WorldModel.load(FIXTURE / "model")
    task = json.loads((FIXTURE / "input.jsonl").read_text().splitlines()[0])
    mod, traces = workload_mods[task["task"]], task["traces"]
    scores = model.score(mod, traces, task["target"])
    head = model.sequence_head
    spec = head.blend(plain.score(mod, traces, task["target"]), head.sequence.score({"fb": native.featurize_batch(traces)}))
    # 1e-4: the native head runs in double, its PyTorch specification in float32 (see the parity test)
    np.testing.assert_allclose(scores, spec, rtol=1e-4, atol=1e-4)
    assert not np.allclose(scores, plain.score(mod, traces, task["target"]))  # the head moves the margin
    # a candidate's score does not depend on the others scored with it (search compares calls):
    # the native core scores each candidate alone, so the bits are the same
    np.testing.assert_array_equal(model.score(mod, traces[:3], task["target"]), scores[:3])


def test_native_head_matches_its_pytorch_specification(head_model_dir, trace_records):
    """Every recorded trace (all lengths, padding among longer ones, an empty trace) scores as the
    PyTorch module scores it."""
    from cwm import native
    from cwm.model.world_model import WorldModel

    head = WorldModel.load(head_model_dir).sequence_head
    traces = [r["trace"] for r in trace_records] + ["[[], []]"]  # the last: the unscheduled program
    fb = native.featurize_batch(traces)
    assert fb.lengths.min() == 0 and len(set(fb.lengths.tolist())) > 5  # many lengths: padding in every batch
    got, spec = head.scores(fb), head.sequence.score({"fb": fb})
    # float32 PyTorch against double: the GRU's 20-60 steps each round the state to float32
    # (about 6e-8 relative), and the scores are of order 1-10
    np.testing.assert_allclose(got, spec, rtol=1e-4, atol=1e-4)
    assert got.dtype == np.float64 and np.std(got) > 1e-3  # the scores differ between candidates
    # the second call reads every step's input side from the core's cache: the same bits
    assert head._core.cache_size > 0
    np.testing.assert_array_equal(head.scores(fb), got)


def test_cost_model_prior_is_the_blended_score(head_model_dir, workload_mods):
    from cwm.cost_model import CWMCostModel
    from cwm.model.world_model import WorldModel

    task = json.loads((FIXTURE / "input.jsonl").read_text().splitlines()[1])
    mod = workload_mods[task["task"]]
    cost_model = CWMCostModel(model_dir=str(head_model_dir))
    margins = cost_model.margins(mod, task["traces"], task["target"])
    expected = WorldModel.load(head_model_dir).score(mod, task["traces"], task["target"])
    np.testing.assert_allclose(margins, expected, rtol=1e-9, atol=1e-9)  # the same computation, re-run


def test_removing_the_head_gives_back_v4(head_model_dir, tmp_path):
    from cwm.model.world_model import WorldModel

    d = tmp_path / "model"
    shutil.copytree(head_model_dir, d)
    model = WorldModel.load(d)
    model.sequence_head = None
    model.save(d)
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["version"] == 4 and "sequence_head" not in manifest and not (d / "sequence.safetensors").exists()


def test_a_v6_manifest_without_its_weights_is_refused(head_model_dir, tmp_path):
    from cwm.model.world_model import WorldModel

    d = tmp_path / "model"
    shutil.copytree(head_model_dir, d)
    (d / "sequence.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="sequence.safetensors is missing"):
        WorldModel.load(d)


def test_fit_head_checks_the_weight():
    from cwm.model.sequence_head import fit_head

    with pytest.raises(ValueError, match=r"in \(0, 1\)"):
        fit_head([], [], 1.0)


@pytest.mark.skipif(not CLI.is_file(), reason=f"{CLI} is not built (cmake --build build/cmake)")
def test_the_cpp_scorer_scores_a_v6_model_as_python_does(head_model_dir, workload_mods, tmp_path):
    """cwm_score blends the head into the ranker's margin as WorldModel.margins does (the head's
    native core is the same code; the CLI writes float32 scores, hence 1e-5 as ctest's parity)."""
    from cwm.model.world_model import WorldModel

    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([str(CLI), str(head_model_dir), str(FIXTURE / "input.jsonl"), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    model, plain = WorldModel.load(head_model_dir), WorldModel.load(FIXTURE / "model")
    tasks = [json.loads(line) for line in (FIXTURE / "input.jsonl").read_text().splitlines()]
    got = [json.loads(line) for line in out.read_text().splitlines()]
    for task, line in zip(tasks, got, strict=True):
        want = model.score(workload_mods[task["task"]], task["traces"], task["target"])
        np.testing.assert_allclose(line["scores"], want, rtol=1e-5, atol=1e-5)
        assert not np.allclose(line["scores"], plain.score(workload_mods[task["task"]], task["traces"], task["target"]))


def test_fit_sequence_head_tool_keeps_the_rest_and_refit_drops_the_head(tiny_dataset, tiny_model_dir, tmp_path):
    """``tools/fit_sequence_head.py``: the head is added (v6) and encoder, transition and ranker stay
    bit for bit; ``tools/refit_ranker.py`` then drops the head (its blend holds the old ranker's
    spread); ``--weight 0`` removes a head."""
    from tests.tool_modules import tool

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    kept = {p.relative_to(model): p.read_bytes() for p in model.rglob("*") if p.is_file() and p.name != "manifest.json"}
    fit = tool("fit_sequence_head")
    assert fit.main([str(model), "--data", str(tiny_dataset), "--weight", "0.25", "--epochs", "2"]) == 0
    manifest = json.loads((model / "manifest.json").read_text())
    assert manifest["version"] == 6 and manifest["sequence_head_fit"]["tasks"] >= 2
    assert all((model / rel).read_bytes() == data for rel, data in kept.items())
    with pytest.raises(SystemExit, match="not the training data"):
        fit.main([str(model), "--data", str(tmp_path), "--weight", "0.25"])
    assert tool("refit_ranker").main([str(model), "--data", str(tiny_dataset)]) == 0
    assert json.loads((model / "manifest.json").read_text())["version"] == 4
    assert fit.main([str(model), "--data", str(tiny_dataset), "--weight", "0.5", "--epochs", "1"]) == 0
    assert fit.main([str(model), "--data", str(tiny_dataset), "--weight", "0"]) == 0
    manifest = json.loads((model / "manifest.json").read_text())
    assert manifest["version"] == 4 and "sequence_head_fit" not in manifest
