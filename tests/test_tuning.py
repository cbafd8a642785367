"""Contracts of cwm.tuning: targets, settings, the in-process builder/runner and tune_tir."""
import dataclasses
import math
import os
import shutil

import numpy as np
import pytest

from cwm import tuning, workloads


def test_host_target_has_mcpu_and_cores():
    import tvm

    target = tuning.host_target()
    assert target.kind.name == "llvm"
    assert str(target.attrs["mcpu"]) == tvm.target.codegen.llvm_get_system_cpu()
    assert int(target.attrs["num-cores"]) == os.cpu_count()
    assert int(tuning.host_target(3).attrs["num-cores"]) == 3


def test_resolve_target_accepts_each_spec():
    import tvm

    assert "mcpu" in tuning.resolve_target("llvm").attrs
    cuda = tuning.resolve_target("cuda")
    assert cuda.kind.name == "cuda" and int(cuda.attrs["max_threads_per_block"]) > 0
    from_dict = tuning.resolve_target({"kind": "llvm", "num-cores": 1})
    assert from_dict.kind.name == "llvm" and int(from_dict.attrs["num-cores"]) == 1
    given = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    assert tuning.resolve_target(given) is given


@pytest.mark.parametrize("bad", ["rocm", "llvm -mcpu=znver3", {"kind": "bogus"}])
def test_resolve_target_rejects_unknown(bad):
    with pytest.raises(ValueError):
        tuning.resolve_target(bad)


def test_resolve_target_rejects_wrong_type():
    with pytest.raises(TypeError):
        tuning.resolve_target(42)


def test_fast_settings():
    settings = tuning.FastSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.population_size = 4
    with pytest.raises(ValueError, match="init_min_unmeasured"):
        tuning.FastSettings(population_size=8, init_min_unmeasured=16)
    assert settings.evaluator_config().min_repeat_ms == 10
    assert tuning.STOCK.population_size == 512 and tuning.STOCK.num_trials_per_iter == 64


@pytest.fixture
def build():
    """Build with InProcessBuilder; remove the artifacts afterwards (nothing else does)."""
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    made = []

    def _build(mod, target, copies=2):
        results = tuning.InProcessBuilder(max_workers=2).build([BuilderInput(mod, target)] * copies)
        made.extend(r.artifact_path for r in results if r.artifact_path)
        return results

    yield _build
    for path in made:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def test_in_process_builder_and_runner_are_sane(build):
    import tvm
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.runner import RunnerInput

    mod, target = workloads.matmul(64), tuning.host_target()
    results = build(mod, target)
    assert all(r.error_msg is None and os.path.exists(r.artifact_path) for r in results)

    # the artifact computes a matmul
    lib = tvm.runtime.load_module(results[0].artifact_path)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    c = tvm.runtime.tensor(np.zeros((64, 64), "float32"))
    lib["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)

    # and the runner times it plausibly: 2*64^3 flop between ~1 TFLOP/s and ~10 MFLOP/s
    args_info = ArgInfo.from_prim_func(mod["main"])
    runner = tuning.FastSettings(repeat=3).runner()
    (future,) = runner.run([RunnerInput(results[1].artifact_path, "cpu", args_info)])
    res = future.result()
    assert res.error_msg is None
    secs = [float(s) for s in res.run_secs]
    assert len(secs) == 3
    assert all(0.5e-6 < s < 50e-3 for s in secs), secs


def test_failures_are_results_not_crashes(build):
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.runner import RunnerInput

    # LLVM has no backend for this triple: the build fails inside default_build
    bad_target = tuning.resolve_target({"kind": "llvm", "mtriple": "nonsense-unknown-arch"})
    (bad,) = build(workloads.matmul(64), bad_target, copies=1)
    assert bad.artifact_path is None and bad.error_msg.startswith("InProcessBuilder")
    from cwm.tuning.tune import close_builder

    for kind, name in (("in-process", "InProcessRunner"), ("pooled", "PooledRunner")):
        runner = tuning.FastSettings(runner_kind=kind).runner()
        (future,) = runner.run([RunnerInput("/nonexistent/x.tar", "cpu", ArgInfo.from_prim_func(
            workloads.matmul(64)["main"]))])
        assert future.result().run_secs is None and name in future.result().error_msg
        close_builder(runner)


def test_tune_tir_small_matmul(tmp_path):
    out = tuning.tune_tir(workloads.matmul(64), trials=16, work_dir=str(tmp_path / "wd"))
    assert out.n_records == 16
    assert out.n_valid >= 1
    assert math.isfinite(out.best_us) and 0.5 < out.best_us < 50_000
    assert out.wall_s > 0 and out.work_dir == str(tmp_path / "wd")
    assert os.path.exists(os.path.join(out.work_dir, "database_tuning_record.json"))
    # the database can answer the best schedule for the workload
    best = out.database.get_top_k(out.database.commit_workload(workloads.matmul(64)), 1)
    assert len(best) == 1 and abs(float(best[0].run_secs[0]) * 1e6 - out.best_us) < 0.5 * out.best_us
