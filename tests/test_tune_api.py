"""cwm.tune: one TIR task, four cost models, a TuneResult with records and a wall-time split.

Tuning runs are tiny (16 trials of a 64^3 matmul, 2 rounds of 8 so the cost model is updated
once before the second round's search).
"""
from __future__ import annotations

import json
import math

import pytest

import cwm
from cwm import workloads
from cwm.tuning import FastSettings

#: in-process build/run: no worker start-up in tests (the pooled default is covered by "cwm" and the CLI)
IN_PROCESS = FastSettings(num_trials_per_iter=8, builder_kind="in-process", runner_kind="in-process")
POOLED = FastSettings(num_trials_per_iter=8)


def _check_result(result, trials):
    assert isinstance(result, cwm.TuneResult)
    assert math.isfinite(result.best_us) and 0.1 < result.best_us < 50_000
    assert 0 < len(result.records) <= trials and result.n_valid > 0
    for r in result.records:
        assert set(r) == {"trace", "run_secs", "latency_us", "error"}
        json.loads(r["trace"])
        assert (r["latency_us"] is None) == (r["error"] is not None or not r["run_secs"])
    best = min((r for r in result.records if r["latency_us"] is not None), key=lambda r: r["latency_us"])
    assert result.best_trace == best["trace"] and result.best_us == best["latency_us"]
    wall = result.wall
    parts = ("search_s", "cost_model_s", "build_s", "run_s")
    assert all(wall[k] >= 0 for k in parts) and wall["total_s"] > 0
    assert abs(sum(wall[k] for k in parts) - wall["total_s"]) < 1e-6 * max(1.0, wall["total_s"])
    assert wall["build_s"] > 0 and wall["run_s"] > 0 and wall["cost_model_s"] > 0
    assert "best latency" in result.summary()


@pytest.mark.parametrize("cost_model", ["cwm", "xgb", "xgb-pretrained", "random"])
def test_tune_each_cost_model(cost_model, tmp_path, tiny_model_dir, tiny_dataset):
    options = {"cwm": {"model_dir": tiny_model_dir},
               "xgb-pretrained": {"dataset": tiny_dataset, "cache_dir": tmp_path / "cache"}}.get(cost_model, {})
    settings = POOLED if cost_model == "cwm" else IN_PROCESS
    result = cwm.tune(workloads.matmul(64), trials=16, cost_model=cost_model, work_dir=str(tmp_path / "wd"),
                      seed=0, settings=settings, **options)
    _check_result(result, 16)
    assert result.cost_model == cost_model and result.work_dir == str(tmp_path / "wd")
    if cost_model == "cwm":
        stats = result.model.stats
        assert stats["predict_calls"] > 0 and stats["update_calls"] >= 1
        # MetaSchedule hands the cost model every measured candidate except failed builds
        assert 0 < stats["measured"] <= len(result.records)
        assert result.model.task_state(workloads.matmul(64))["measured"] == stats["measured"]
        assert result.wall["cost_model_setup_s"] > 0
    if cost_model == "xgb-pretrained":
        (cached,) = (tmp_path / "cache").glob("xgb_pretrained-*.tar")
        assert json.loads(cached.with_name(cached.name + ".json").read_text())["train_tasks"] == 5
        # the cached model is reused: a second resolution builds nothing
        from cwm.cost_model import pretrained_xgb_path

        assert pretrained_xgb_path(tiny_dataset, cache_dir=tmp_path / "cache") == cached


def test_prim_func_and_user_runner(tmp_path):
    """A PrimFunc is accepted; a user-provided MetaSchedule Runner is used as is."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.runner import PyRunner

    from cwm.tuning import InProcessRunner

    @derived_object
    class CountingRunner(PyRunner):
        def __init__(self):
            super().__init__()
            self.inner, self.batches = InProcessRunner(IN_PROCESS.evaluator_config()), 0

        def run(self, runner_inputs):
            self.batches += 1
            return self.inner.run(runner_inputs)

    runner = CountingRunner()
    result = cwm.tune(workloads.matmul(64)["main"], trials=8, cost_model="random", runner=runner,
                      work_dir=str(tmp_path / "wd"), settings=IN_PROCESS)
    _check_result(result, 8)
    assert runner.batches == 1


def test_bad_workloads_and_cost_models_are_rejected(tmp_path):
    import tvm

    for bad in ("matmul_256", 42, None):
        with pytest.raises(TypeError, match="PrimFunc"):
            cwm.tune(bad)
    two = tvm.IRModule({"a": workloads.matmul(8)["main"], "b": workloads.matmul(16)["main"]})
    with pytest.raises(ValueError, match="exactly one PrimFunc"):
        cwm.tune(two)
    with pytest.raises(ValueError, match="unknown cost model"):
        cwm.tune(workloads.matmul(8), cost_model="mlp-ish")


def test_missing_default_model_is_a_clear_error(monkeypatch, tmp_path):
    import cwm.model

    monkeypatch.setattr(cwm.model, "DEFAULT_MODEL_DIR", tmp_path / "nothing_here")
    with pytest.raises(FileNotFoundError, match="cwm train"):
        cwm.tune(workloads.matmul(64), trials=8, work_dir=str(tmp_path / "wd"))


def test_cli_tune(tmp_path, capsys):
    from cwm.cli import main

    script = tmp_path / "mm.tir"
    script.write_text(workloads.matmul(64).script())
    assert main(["tune", str(script), "--trials", "8", "--cost-model", "random",
                 "--work-dir", str(tmp_path / "wd")]) == 0
    out = capsys.readouterr().out
    assert "mm.tir" in out and "best latency" in out and "us" in out and "build" in out

    assert main(["tune", "no_such_workload"]) == 2
    err = capsys.readouterr().err
    assert "matmul_256" in err and "no_such_workload" in err
