"""Tuning for target cuda: the default builders embed real GPU code, and without a GPU here
``cwm.tune`` asks for an RPC runner instead of measuring nothing.

No GPU needed. The builder tests need nvcc and a C compiler (the build-only driver stub,
docs/cuda.md). ~30 s on a loaded 2-vCPU box (the pooled builder's workers import TVM).
"""
from __future__ import annotations

import os
import shutil

import pytest

from cwm import workloads
from cwm.targets.cuda import find_nvcc

needs_nvcc = pytest.mark.skipif(
    find_nvcc() is None or not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
    reason="needs the CUDA toolkit's nvcc and a C compiler (no GPU needed)")


def _no_local_gpu() -> bool:
    import tvm

    return not tvm.cuda(0).exist


def _sampled_modules(mod, target, n: int = 3):
    """``n`` MetaSchedule-sampled (not measured) candidate modules of ``mod`` for ``target``."""
    import logging

    from tvm.s_tir import meta_schedule as ms

    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    ctx = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply", num_threads=2, rand_state=0,
                         search_strategy=ms.search_strategy.EvolutionarySearch(
                             population_size=16, init_min_unmeasured=n, genetic_num_iters=1))
    ctx.generate_design_space()
    ctx.pre_tuning(max_trials=n, num_trials_per_iter=n, database=ms.database.MemoryDatabase(),
                   cost_model=ms.cost_model.RandomModel())
    candidates = list(ctx.generate_measure_candidates())
    ctx.post_tuning()
    assert candidates
    return [c.sch.mod for c in candidates[:n]]


@needs_nvcc
@pytest.mark.parametrize("builder_kind", ["pooled", "in-process"])
def test_cuda_builder_artifacts_hold_device_code(builder_kind):
    """``FastSettings.builder(cuda target)`` -- what ``cwm.tune`` uses -- writes artifacts with a
    fatbin (sm_89 machine code + PTX), not CUDA source; no runner involved."""
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from cwm.target_spec import resolve_target
    from cwm.targets.cuda import has_device_code
    from cwm.tuning.pooled_builder import build_cuda_in_worker
    from cwm.tuning.settings import FastSettings
    from cwm.tuning.tune import close_builder

    target = resolve_target("cuda")
    builder = FastSettings(builder_kind=builder_kind, builder_workers=2).builder(target)
    if builder_kind == "pooled":
        assert builder.build_fn is build_cuda_in_worker
    mods = _sampled_modules(workloads.matmul(64), target)
    try:
        results = builder.build([BuilderInput(m, target) for m in mods])
    finally:
        close_builder(builder)
    assert len(results) == len(mods)
    try:
        for result in results:
            assert result.error_msg is None, result.error_msg
            report = has_device_code(result.artifact_path)
            assert report["has_device_code"], report
            assert report["formats"] == ["fatbin"] and report["archs"] == ["sm_89"], report
            assert not report["cuda_source"] and not report["source_only"], report
    finally:
        for result in results:
            if result.artifact_path:
                shutil.rmtree(os.path.dirname(result.artifact_path), ignore_errors=True)


def test_builder_choice_for_llvm_and_so_export():
    from cwm.tuning.pooled_builder import build_in_worker
    from cwm.tuning.rpc import build_so_in_worker, export_so
    from cwm.tuning.settings import FastSettings

    assert FastSettings().builder("llvm").build_fn is build_in_worker  # unchanged for CPUs
    assert FastSettings().builder().build_fn is build_in_worker
    # `cwm tune --rpc-export so`: linked .so artifacts (build_so_in_worker also enables CUDA codegen)
    assert FastSettings(export="so").builder("llvm").build_fn is build_so_in_worker
    assert FastSettings(export="so", builder_kind="in-process").builder("llvm").f_export is export_so
    with pytest.raises(ValueError, match="export"):
        FastSettings(export="zip")


@pytest.mark.skipif(not _no_local_gpu(), reason="this machine has a GPU: cuda tuning measures locally")
def test_cuda_tune_without_gpu_or_runner_is_a_clear_error(tmp_path, capsys):
    import cwm
    from cwm.target_spec import resolve_target
    from cwm.tuning.cli import main
    from cwm.tuning.tune import NoLocalGPU, check_local_device

    with pytest.raises(NoLocalGPU, match=r"no local GPU was found.*--rpc HOST:PORT:KEY"):
        cwm.tune(workloads.matmul(64), target="cuda", trials=8, cost_model="random", work_dir=str(tmp_path / "wd"))
    assert not (tmp_path / "wd").exists()  # raised before anything was set up
    # with a runner (e.g. an RPCRunner) the check passes; llvm never needs one
    check_local_device(resolve_target("cuda"), runner=object())
    check_local_device(resolve_target("llvm"), runner=None)
    # the CLI says the same, without a traceback
    assert main(["matmul_256", "--target", "cuda", "--trials", "8", "--cost-model", "random"]) == 2
    err = capsys.readouterr().err
    assert "no local GPU was found" in err and "--rpc" in err
