"""The standalone C++ scorer (cwm_score) against WorldModel.score, and its input exporter.

The fixture tests/data/scorer_fixture (tools/make_scorer_fixture.py) must still be what the
Python scorer gives: ctest's test_scorer pins the C++ side to it. The CLI tests build nothing:
they run ``build/cmake/cwm_score`` (or ``$CWM_SCORE``) and skip when it is not built
(`cmake -S . -B build/cmake && cmake --build build/cmake`); ctest is the mandatory check.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "scorer_fixture"
FIXTURE_V3 = ROOT / "tests" / "data" / "scorer_fixture_v3"  # the same encoder and transition, a v3 ranker
FIXTURE_V6 = ROOT / "tests" / "data" / "scorer_fixture_v6"  # the same model and a sequence head
CLI = Path(os.environ.get("CWM_SCORE", ROOT / "build" / "cmake" / "cwm_score"))
needs_cli = pytest.mark.skipif(not CLI.is_file(), reason=f"{CLI} is not built (cmake --build build/cmake)")


@pytest.fixture(scope="module")
def model():
    from cwm.model.world_model import WorldModel

    return WorldModel.load(FIXTURE / "model")


def _lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def test_fixture_is_current(model, workload_mods):
    """input.jsonl's z0 and expected.jsonl's scores are what the Python code gives today."""
    inputs, expected = _lines(FIXTURE / "input.jsonl"), _lines(FIXTURE / "expected.jsonl")
    assert [t["task"] for t in inputs] == [e["task"] for e in expected] and len(inputs) == 3
    for task, exp in zip(inputs, expected):
        mod = workload_mods[task["task"]]
        # z0 is bit-exact on every host (StateEncoder.encode runs in float64, tests/test_host_determinism.py)
        np.testing.assert_array_equal(np.float32(task["z0"]), model.z0(mod))
        scores = model.score(mod, task["traces"], task["target"])
        # 1e-6: the scores went through JSON as decimal text; XGBoost sums its trees in a fixed order
        np.testing.assert_allclose(scores, exp["scores"], rtol=1e-6, atol=1e-6)
    assert any(isinstance(t, list) for t in inputs[-1]["traces"])  # the parsed-trace form is covered


def test_v6_fixture_is_current(workload_mods):
    """scorer_fixture_v6's expected.jsonl is what the Python code gives today (ctest pins the C++
    scorer's blend to it), and its head moves the scores away from the v4 model's."""
    from cwm.model.world_model import WorldModel

    v6 = WorldModel.load(FIXTURE_V6 / "model")
    assert v6.sequence_head is not None
    inputs, expected = _lines(FIXTURE / "input.jsonl"), _lines(FIXTURE_V6 / "expected.jsonl")
    plain = _lines(FIXTURE / "expected.jsonl")
    for task, exp, v4 in zip(inputs, expected, plain, strict=True):
        scores = v6.score(workload_mods[task["task"]], task["traces"], task["target"])
        # 1e-6: decimal text in JSON; the head runs in double in a fixed order (src/sequence.cc)
        np.testing.assert_allclose(scores, exp["scores"], rtol=1e-6, atol=1e-6)
        assert np.abs(np.asarray(exp["scores"]) - v4["scores"]).max() > 1e-2


def test_v3_model_still_scores(workload_mods, tmp_path):
    """A v3 directory (no trace structure) loads, scores what it scored, and says so in its
    manifest; one whose feature names are not its version's is refused."""
    import shutil

    from cwm.model import action_stats
    from cwm.model.world_model import WorldModel

    v3 = WorldModel.load(FIXTURE_V3 / "model")
    assert not v3.structure
    inputs, expected = _lines(FIXTURE / "input.jsonl"), _lines(FIXTURE_V3 / "expected.jsonl")
    for task, exp in zip(inputs, expected):
        mod = workload_mods[task["task"]]
        scores = v3.score(mod, task["traces"], task["target"])
        np.testing.assert_allclose(scores, exp["scores"], rtol=1e-6, atol=1e-6)  # decimal text in JSON
    from cwm import native

    fb = native.featurize_batch(inputs[0]["traces"][:2])
    width = v3.tcfg.dim + len(action_stats.NAMES) + len(action_stats.HW_FEATURES)
    assert v3.features(np.zeros((2, v3.tcfg.dim), np.float32), fb, {"kind": "llvm"}, np.zeros(v3.tcfg.dim)).shape == \
        (2, width)
    bad = tmp_path / "model"
    shutil.copytree(FIXTURE_V3 / "model", bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["version"] = 4
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="feature_names"):
        WorldModel.load(bad)


@needs_cli
def test_cli_scores_a_v3_model(tmp_path):
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([str(CLI), str(FIXTURE_V3 / "model"), str(FIXTURE / "input.jsonl"), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for got, want in zip(_lines(out), _lines(FIXTURE_V3 / "expected.jsonl"), strict=True):
        np.testing.assert_allclose(got["scores"], want["scores"], rtol=1e-5, atol=1e-5)  # as ctest's parity


def test_target_dict():
    from cwm.model.scorer_input import target_dict

    assert target_dict({"kind": "llvm"}) == {"kind": "llvm"}
    assert target_dict('{"kind": "cuda", "max_threads_per_block": 1024}')["max_threads_per_block"] == 1024

    class FakeTarget:
        def export(self):
            return {"kind": "llvm", "num-cores": 4}

    assert target_dict(FakeTarget())["num-cores"] == 4
    with pytest.raises(TypeError):
        target_dict(3)


@needs_cli
def test_cli_matches_python_on_fresh_input(model, workload_mods, trace_records, tmp_path):
    from cwm.model.scorer_input import read_scores, write_scorer_input

    tasks = []
    for name, source, n in (("layer_norm_128x768", "tuning", 12), ("softmax_128x768", "sampled", 30),
                            ("depthwise_conv2d_96x56x56_3x3", "tuning", 40)):
        rows = [r for r in trace_records if r["workload"] == name and r["source"] == source][:n]
        tasks.append((name, workload_mods[name], [r["trace"] for r in rows], rows[0]["target"]))
    assert write_scorer_input(model, tasks, tmp_path / "in.jsonl") == 3
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([str(CLI), str(FIXTURE / "model"), str(tmp_path / "in.jsonl"), "-o", str(out),
                           "--threads", "2"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = read_scores(out)
    assert [g["task"] for g in got] == [t[0] for t in tasks]
    worst = 0.0
    for g, (_, mod, traces, target) in zip(got, tasks):
        want = model.score(mod, traces, target)
        assert len(g["scores"]) == len(want)
        worst = max(worst, float(np.max(np.abs(np.asarray(g["scores"]) - want))))
    assert worst <= 1e-5


@needs_cli
def test_cli_errors(tmp_path):
    def run(*args):
        return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=60)

    p = run()
    assert p.returncode == 2 and "usage: cwm_score" in p.stderr
    p = run(tmp_path, FIXTURE / "input.jsonl")
    assert p.returncode == 1 and "not a CWM model directory" in p.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task": "x", "z0": [0.0] * 7, "target": {"kind": "llvm"}, "traces": []}) + "\n")
    p = run(FIXTURE / "model", bad)
    assert p.returncode == 1 and f"{bad}:1: z0 has 7 values, the model's latent size is 16" in p.stderr


@needs_cli
def test_cli_on_a_trained_model_via_the_dataset_exporter(tiny_model_dir, tiny_dataset, tmp_path):
    """End to end: a trained model (dim 128), `python -m cwm.model.scorer_input` on a dataset, cwm_score."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.scorer_input import main, read_scores
    from cwm.model.world_model import WorldModel

    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    assert main([str(tiny_model_dir), str(tiny_dataset), "-o", str(inp), "--split", "all", "--max-traces", "8"]) == 0
    proc = subprocess.run([str(CLI), str(tiny_model_dir), str(inp), "-o", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    model, loader = WorldModel.load(tiny_model_dir), DatasetLoader(tiny_dataset)
    got = read_scores(out)
    assert [g["task"] for g in got] == loader.task_keys()
    for g in got:
        traces = [t.trace for t in loader.trajectories(g["task"])][:8]
        want = model.score(loader.workload(g["task"]), traces, {"kind": "llvm", "num-cores": 2})
        np.testing.assert_allclose(g["scores"], want, rtol=1e-5, atol=1e-5)


def _state_reading_model(directory: Path):
    """The fixture's model with its TransH turned into the state-dependent form (a random ``S``)."""
    import torch

    from cwm.model.transition import with_state_read
    from cwm.model.world_model import WorldModel

    model = WorldModel.load(FIXTURE / "model")
    model.transition = with_state_read(model.transition).eval()
    model.tcfg = model.transition.cfg
    torch.manual_seed(0)
    with torch.no_grad():
        model.transition.state.weight.normal_(0.0, 1.0)
    model.save(directory)
    return WorldModel.load(directory)


def test_state_dependent_model_saves_loads_and_scores(workload_mods, model, tmp_path):
    """The state read is saved in the manifest and read back, and it changes the scores."""
    reads = _state_reading_model(tmp_path / "model")
    assert reads.tcfg.state_dependent and reads.transition.state.weight.abs().sum() > 0
    assert json.loads((tmp_path / "model" / "manifest.json").read_text())["version"] == 5  # v4 readers refuse it
    task = _lines(FIXTURE / "input.jsonl")[0]
    mod = workload_mods[task["task"]]
    got, plain = reads.score(mod, task["traces"], task["target"]), model.score(mod, task["traces"], task["target"])
    assert got.shape == plain.shape and np.abs(got - plain).max() > 1e-3


def assert_cli_matches_python(model_dir: Path, model, workload_mods, out: Path, given: Path | None = None) -> None:
    """cwm_score on ``model_dir`` scores the fixture's input (or ``given``, the same tasks with more
    keys) as ``model`` (loaded from it) does."""
    given = given or FIXTURE / "input.jsonl"
    proc = subprocess.run([str(CLI), str(model_dir), str(given), "-o", str(out),
                           "--threads", "2"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for got, task in zip(_lines(out), _lines(given), strict=True):
        want = model.score(workload_mods[task["task"]], task["traces"], task["target"])
        np.testing.assert_allclose(got["scores"], want, rtol=1e-5, atol=1e-5)  # as ctest's parity (JSON text)


@needs_cli
def test_cli_matches_python_on_a_state_dependent_model(workload_mods, tmp_path):
    reads = _state_reading_model(tmp_path / "model")
    assert_cli_matches_python(tmp_path / "model", reads, workload_mods, tmp_path / "scores.jsonl")


def _with_manifest(src: Path, dst: Path, **changes) -> Path:
    import shutil

    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    manifest.update(changes)
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def test_the_state_read_and_the_version_must_agree(tmp_path):
    """A transition that reads the state is model v5: a v4 manifest that claims one (a reader of
    v4 would roll out the plain form and score wrongly) and a v5 without one are refused."""
    from cwm.model.world_model import WorldModel

    _state_reading_model(tmp_path / "v5")
    with pytest.raises(ValueError, match="a v4 model cannot have transition.state_dependent"):
        WorldModel.load(_with_manifest(tmp_path / "v5", tmp_path / "as_v4", version=4))
    with pytest.raises(ValueError, match="a v5 model must have transition.state_dependent"):
        WorldModel.load(_with_manifest(FIXTURE / "model", tmp_path / "plain_v5", version=5))


@needs_cli
def test_cli_refuses_a_state_read_under_v4(tmp_path):
    _state_reading_model(tmp_path / "v5")
    bad = _with_manifest(tmp_path / "v5", tmp_path / "as_v4", version=4)
    proc = subprocess.run([str(CLI), str(bad), str(FIXTURE / "input.jsonl")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and "a v4 model cannot have transition.state_dependent = true" in proc.stderr


def _bounded_model(directory: Path, bound: float):
    """The fixture's model with its translations capped at ``bound`` (``transition.translation_bound``)."""
    manifest = json.loads((FIXTURE / "model" / "manifest.json").read_text())
    _with_manifest(FIXTURE / "model", directory, transition={**manifest["transition"], "translation_bound": bound})
    from cwm.model.world_model import WorldModel

    return WorldModel.load(directory)


def test_a_translation_bound_is_read_back_and_changes_the_scores(workload_mods, model, tmp_path):
    bounded = _bounded_model(tmp_path / "model", 0.05)
    assert bounded.tcfg.translation_bound == 0.05
    task = _lines(FIXTURE / "input.jsonl")[0]
    mod = workload_mods[task["task"]]
    got, free = bounded.score(mod, task["traces"], task["target"]), model.score(mod, task["traces"], task["target"])
    assert got.shape == free.shape and np.abs(got - free).max() > 1e-3


@needs_cli
def test_cli_matches_python_on_a_bounded_transition(workload_mods, tmp_path):
    bounded = _bounded_model(tmp_path / "model", 0.05)
    assert_cli_matches_python(tmp_path / "model", bounded, workload_mods, tmp_path / "scores.jsonl")
