"""CWMCostModel: MetaSchedule's cost-model interface on top of a (tiny) world model.

The candidates are the recorded tuning traces of the held-out softmax task, replayed into
``MeasureCandidate`` objects exactly as the evolutionary search hands them over.
"""
from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

pytest.importorskip("xgboost")

HELD_OUT = "softmax_128x768"


@pytest.fixture(scope="module")
def task(trace_records, workload_mods):
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from cwm.replay import apply_trace

    workload = workload_mods[HELD_OUT]
    cands = []
    for r in trace_records:
        if r["workload"] == HELD_OUT and r["source"] == "tuning":
            sch = apply_trace(workload, r["trace"])
            cands.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)))
    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    context = ms.TuneContext(mod=workload, target=target, task_name="main")
    return {"workload": workload, "cands": cands, "context": context, "target": target}


@pytest.fixture(scope="module")
def world_model(tiny_model_dir):
    from cwm.model.world_model import WorldModel

    return WorldModel.load(tiny_model_dir)


def _model(tiny_model_dir, world_model, **kw):
    from cwm.cost_model import CWMCostModel

    return CWMCostModel(model_dir=tiny_model_dir, world_model=world_model, **kw)


def _results(latencies):
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    return [RunnerResult(run_secs=[float(x)], error_msg=None) for x in latencies]


def _contradicting_latencies(prior_margins):
    """Latencies that invert the prior: its best-scored candidate is measured slowest."""
    order = np.argsort(-prior_margins, kind="stable")  # best first by the prior
    lat = np.empty(len(prior_margins))
    lat[order] = np.geomspace(1e-3, 8e-3, len(prior_margins))[::-1]
    return lat


def _spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def test_predict_one_finite_score_per_candidate_consistent_with_world_model(tiny_model_dir, world_model, task):
    from cwm.actions.trace_io import trace_to_json

    model = _model(tiny_model_dir, world_model)
    scores = model.predict(task["context"], task["cands"])
    assert scores.dtype == np.float64 and scores.shape == (len(task["cands"]),)
    assert np.isfinite(scores).all() and (scores > 0).all() and np.unique(scores).size > 1
    # the prior alone: log-score == WorldModel.score on the same trace JSON, hence the same ranking
    traces = [trace_to_json(c.sch.trace) for c in task["cands"]]
    ref = world_model.score(task["workload"], traces, task["target"])
    np.testing.assert_allclose(np.log(scores), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.argsort(-scores, kind="stable"), np.argsort(-ref, kind="stable"))
    # (MetaSchedule's own predict() wrapper cannot pass an empty batch through ctypes; the model can)
    assert model.score_traces(task["workload"], [], task["target"]).shape == (0,)
    assert model.stats["predict_calls"] == 1 and model.stats["predicted"] == len(task["cands"])


@pytest.mark.parametrize("kind", ["residual", "blend"])
def test_update_adapts_to_measurements_that_contradict_the_prior(tiny_model_dir, world_model, task, kind):
    from cwm.cost_model import AdaptConfig

    model = _model(tiny_model_dir, world_model, config=AdaptConfig(kind=kind))
    ctx, cands = task["context"], task["cands"]
    prior = np.log(model.predict(ctx, cands))
    lat = _contradicting_latencies(prior)
    assert _spearman(prior, 1 / lat) < -0.9  # the prior ranks them almost exactly backwards

    # fewer valid measurements than min_measured: no adaptation yet
    model.update(ctx, cands[:4], _results(lat[:4]))
    assert model.task_state(task["workload"]) == {"measured": 4, "valid": 4, "adapted": False, "weight": 0.0}
    np.testing.assert_array_equal(np.log(model.predict(ctx, cands)), prior)

    model.update(ctx, cands[4:], _results(lat[4:]))
    state = model.task_state(task["workload"])
    assert state["adapted"] and state["valid"] == len(cands) and 0 < state["weight"] < 1
    adapted = np.log(model.predict(ctx, cands))
    assert np.isfinite(adapted).all()
    assert _spearman(adapted, 1 / lat) > 0.5  # the measurements now dominate the ranking
    assert np.argmax(adapted) != np.argmax(prior)


@pytest.mark.parametrize("kind", ["residual", "blend"])
def test_failed_runs_count_as_worst(tiny_model_dir, world_model, task, kind):
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from cwm.cost_model import AdaptConfig
    from cwm.cost_model.cwm_model import latency_of

    assert latency_of(RunnerResult(run_secs=None, error_msg="RuntimeError: boom")) == math.inf
    assert latency_of(RunnerResult(run_secs=[1e10], error_msg=None)) == math.inf
    assert latency_of(RunnerResult(run_secs=[2e-3, 1e-3, 4e-3], error_msg=None)) == 2e-3

    model = _model(tiny_model_dir, world_model, config=AdaptConfig(kind=kind))
    ctx, cands = task["context"], task["cands"][:16]
    prior = np.log(model.predict(ctx, cands))
    best = int(np.argmax(prior))
    lat = np.full(len(cands), 2e-3)
    lat[::3] = 1e-3  # two relevance grades among the valid ones
    results = _results(lat)
    results[best] = RunnerResult(run_secs=None, error_msg="PooledRunner: timeout")  # the prior's favourite fails
    model.update(ctx, cands, results)
    assert model.task_state(task["workload"])["valid"] == len(cands) - 1
    adapted = np.log(model.predict(ctx, cands))
    assert adapted[best] - np.median(adapted) < prior[best] - np.median(prior)  # pushed down


@pytest.mark.parametrize("kind", ["residual", "blend"])
def test_save_load_round_trip_predicts_identically(tiny_model_dir, world_model, task, tmp_path, kind):
    from cwm.cost_model import AdaptConfig, CWMCostModel

    model = _model(tiny_model_dir, world_model, config=AdaptConfig(kind=kind))
    ctx, cands = task["context"], task["cands"]
    model.update(ctx, cands[:24], _results(_contradicting_latencies(np.log(model.predict(ctx, cands[:24])))))
    assert model.task_state(task["workload"])["adapted"]
    expected = model.predict(ctx, cands)
    path = tmp_path / "cwm_cost_model.json"
    model.save(str(path))

    again = CWMCostModel.from_file(path)  # loads the prior named in the file
    np.testing.assert_array_equal(again.predict(ctx, cands), expected)
    fresh = _model(tiny_model_dir, world_model)  # same prior, state loaded through MetaSchedule's load()
    fresh.load(str(path))
    np.testing.assert_array_equal(fresh.predict(ctx, cands), expected)
    assert fresh.task_state(task["workload"]) == model.task_state(task["workload"]) and fresh.config.kind == kind

    if kind == "residual":  # a file of format v1 (residuals only, no calibration) still loads
        data = json.loads(path.read_text())
        data["version"] = 1
        data["config"].pop("kind"), data["config"].pop("blend_rounds")
        for t in data["tasks"].values():
            t.pop("calibration")
        v1 = tmp_path / "v1.json"
        v1.write_text(json.dumps(data))
        np.testing.assert_array_equal(CWMCostModel.from_file(v1).predict(ctx, cands), expected)

    other_dir = tmp_path / "other_model"
    shutil.copytree(tiny_model_dir, other_dir)
    with open(other_dir / "manifest.json", "a") as f:
        f.write("\n")  # another model directory: another fingerprint
    other = _model(other_dir, world_model)
    with pytest.raises(Exception, match="another prior model"):
        other.load(str(path))


def test_default_model_dir(monkeypatch, tmp_path, tiny_model_dir):
    import cwm
    import cwm.model
    from cwm.cost_model import CWMCostModel

    assert cwm.model.default_model_dir(must_exist=False) == cwm.model.DEFAULT_MODEL_DIR
    assert cwm.model.DEFAULT_MODEL_DIR.parent.resolve() == __import__("pathlib").Path(cwm.__file__).parent.resolve()
    monkeypatch.setattr(cwm.model, "DEFAULT_MODEL_DIR", tmp_path / "default_model")
    with pytest.raises(FileNotFoundError, match="cwm train"):
        cwm.model.default_model_dir()
    with pytest.raises(FileNotFoundError, match="model_dir"):
        CWMCostModel()
    monkeypatch.setattr(cwm.model, "DEFAULT_MODEL_DIR", tiny_model_dir)
    assert CWMCostModel().model_dir == tiny_model_dir.resolve()
