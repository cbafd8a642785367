"""Ranker rows centred on the task's design-space reference (cwm.model.centring, decision 62):
the NumPy arithmetic is the spec, the C++ scorer reproduces it, and a centring model's scores
do not depend on the batch they are scored in."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "scorer_fixture"
CLI = Path(os.environ.get("CWM_SCORE", ROOT / "build" / "cmake" / "cwm_score"))
needs_cli = pytest.mark.skipif(not CLI.is_file(), reason=f"{CLI} is not built (cmake --build build/cmake)")


def _lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def test_mean_row_sums_in_float64_in_order():
    from cwm.model.centring import mean_row

    rows = np.array([[1e8, 1.0], [1.0, 2.0], [-1e8, 3.0]], np.float32)
    got = mean_row(rows)
    assert got.dtype == np.float32
    # in float32 1e8 + 1 rounds back to 1e8 and the 1 is lost; float64 keeps it
    np.testing.assert_array_equal(got, np.float32([1.0 / 3.0, 2.0]))
    np.testing.assert_array_equal(mean_row(np.zeros((0, 2), np.float32)), np.zeros(2, np.float32))


def test_centred_rows_and_names():
    from cwm.model.centring import centred, centred_names, centring_meta

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = centred(x, np.float32([1, 1, 1]))
    np.testing.assert_array_equal(got, np.concatenate([x, x - 1], 1))
    with pytest.raises(ValueError, match="reference of 2 values for rows of 3"):
        centred(x, np.zeros(2, np.float32))
    assert centred_names(["a", "b"]) == ["a", "b", "c_a", "c_b"]
    assert centring_meta(0) == {} and centring_meta(32)["centring"]["samples"] == 32
    with pytest.raises(ValueError):
        centring_meta(-1)


def test_design_samples_are_the_same_on_every_call(workload_mods):
    """The reference must not depend on when it is drawn: MetaSchedule's own initial population
    (a thread pool) changed from call to call, which moved a centring model's scores."""
    from cwm.design_sample import sample_traces

    mod = workload_mods["softmax_128x768"]
    target = {"kind": "llvm", "num-cores": 2}
    first = sample_traces(mod, target, 16, 0)
    assert len(first) == 16 and first == sorted(set(first))  # distinct, sorted
    assert sample_traces(mod, target, 16, 0) == first
    assert sample_traces(mod, target, 16, 1) != first  # the seed matters


def _centring_model(directory: Path, workload_mods):
    """The scorer fixture's encoder and transition with a small ranker fitted on centred rows."""
    from cwm import native
    from cwm.model.centring import centring_meta
    from cwm.model.ranker import Ranker, RankerConfig
    from cwm.model.world_model import WorldModel

    model = WorldModel.load(FIXTURE / "model")
    model.meta.update(centring_meta(8))
    rows, lat, groups = [], [], []
    for g, task in enumerate(_lines(FIXTURE / "input.jsonl")):
        mod = workload_mods[task["task"]]
        fb = native.featurize_batch(task["traces"])
        z0 = model.z0(mod)
        rows.append(model.features(model.rollout(z0, fb), fb, task["target"], z0, model.reference(mod, task["target"])))
        lat += list(np.random.default_rng(g).random(len(task["traces"])))  # labels only shape the trees
        groups += [g] * len(task["traces"])
    model.ranker = Ranker(RankerConfig(n_estimators=10, max_depth=3, n_jobs=1, parallel_trees=1)).fit(
        np.concatenate(rows), np.array(lat), np.array(groups))
    model.save(directory)
    return WorldModel.load(directory)


def test_a_centring_model_saves_loads_and_scores_batch_independently(workload_mods, tmp_path):
    model = _centring_model(tmp_path / "model", workload_mods)
    names = json.loads((tmp_path / "model" / "manifest.json").read_text())["feature_names"]
    half = len(names) // 2
    assert model.centring["samples"] == 8 and names[half:] == ["c_" + n for n in names[:half]]
    task = _lines(FIXTURE / "input.jsonl")[0]
    mod = workload_mods[task["task"]]
    whole = model.score(mod, task["traces"], task["target"])
    one_by_one = np.concatenate([model.score(mod, [t], task["target"]) for t in task["traces"]])
    # the reference is the task's, not the batch's: the same candidate scores the same alone;
    # 1e-6: XGBoost's batch and single-row predictors may round the tree sum differently
    np.testing.assert_allclose(one_by_one, whole, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="pass the task's reference"):
        from cwm import native

        fb = native.featurize_batch(task["traces"][:2])
        z0 = model.z0(mod)
        model.features(model.rollout(z0, fb), fb, task["target"], z0)


@needs_cli
def test_cli_matches_python_on_a_centring_model(workload_mods, tmp_path):
    from cwm.model.scorer_input import write_scorer_input

    model = _centring_model(tmp_path / "model", workload_mods)
    tasks = [(t["task"], workload_mods[t["task"]], t["traces"], t["target"]) for t in _lines(FIXTURE / "input.jsonl")]
    write_scorer_input(model, tasks, tmp_path / "in.jsonl")
    width = len(json.loads((tmp_path / "model" / "manifest.json").read_text())["feature_names"])
    assert all(len(t["reference"]) * 2 == width for t in _lines(tmp_path / "in.jsonl"))
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([str(CLI), str(tmp_path / "model"), str(tmp_path / "in.jsonl"), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for got, (_, mod, traces, target) in zip(_lines(out), tasks, strict=True):
        # the reference row travels as the float32 values themselves, so the rows are the same
        # bits; 1e-5 as ctest's parity (libxgboost's predictor against the Python one)
        np.testing.assert_allclose(got["scores"], model.score(mod, traces, target), rtol=1e-5, atol=1e-5)
    # a centring model refuses a task without its reference, and a plain one a task with one
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in t.items() if k != "reference"}) + "\n"
                            for t in _lines(tmp_path / "in.jsonl")))
    proc = subprocess.run([str(CLI), str(tmp_path / "model"), str(bare)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "'reference'" in proc.stderr
    proc = subprocess.run([str(CLI), str(FIXTURE / "model"), str(tmp_path / "in.jsonl")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "does not centre" in proc.stderr
