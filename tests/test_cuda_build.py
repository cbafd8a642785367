"""CUDA builds embed real GPU code (fatbin/cubin/PTX), not CUDA source (cwm.targets.cuda).

Needs nvcc and a C compiler (no GPU, no driver: a build-only driver stub is loaded). Without a
plain ``tvm.compile`` would export CUDA *source* only; the first test shows that in a fresh
process, so the checks below are known to tell the two apart. ~25 s on a 2-vCPU box.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cwm.targets.cuda import find_nvcc
from tests.compile_helpers import tiny_onnx  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(
    find_nvcc() is None or not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
    reason="needs the CUDA toolkit's nvcc and a C compiler (no GPU needed)")

_PLAIN_BUILD = textwrap.dedent("""
    import json, sys
    import cwm, tvm
    from tvm.s_tir import dlight as dl
    from cwm import workloads
    from cwm.targets.cuda import has_device_code
    from cwm.target_spec import resolve_target
    target = resolve_target("cuda")
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.Fallback())(workloads.matmul(64))
    tvm.compile(mod, target=target).export_library(sys.argv[1])
    report = has_device_code(sys.argv[1])
    report["runtime_cuda"] = tvm.runtime.enabled("cuda")
    print("REPORT" + json.dumps(report))
""")


def tiny_relax_model():
    """conv2d(3->8, 3x3) + relu + reshape + matmul(->10) + softmax on a 1x3x16x16 input."""
    from tvm import relax

    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 3, 16, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(rng.standard_normal((8, 3, 3, 3)).astype("float32")),
                                           padding=1))
            y = bb.emit(relax.op.nn.relu(y))
            y = bb.emit(relax.op.reshape(y, (1, 8 * 16 * 16)))
            y = bb.emit(relax.op.matmul(y, relax.const(rng.standard_normal((8 * 16 * 16, 10)).astype("float32"))))
            out = bb.emit_output(bb.emit(relax.op.nn.softmax(y, axis=-1)))
        bb.emit_func_output(out)
    return bb.get()


def _sampled_candidates(mod, target):
    """A few MetaSchedule-sampled (not measured) candidates of ``mod`` for ``target``."""
    from tvm.s_tir import meta_schedule as ms

    ctx = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply", num_threads=2, rand_state=0,
                         search_strategy=ms.search_strategy.EvolutionarySearch(
                             population_size=16, init_min_unmeasured=4, genetic_num_iters=1))
    ctx.generate_design_space()
    ctx.pre_tuning(max_trials=4, num_trials_per_iter=4, database=ms.database.MemoryDatabase(),
                   cost_model=ms.cost_model.RandomModel())
    candidates = list(ctx.generate_measure_candidates())
    ctx.post_tuning()
    return candidates


def _sampled_record(mod, target, database):
    """Commit one sampled schedule of ``mod`` to ``database`` as if it had been measured."""
    from tvm.s_tir import meta_schedule as ms

    candidates = _sampled_candidates(mod, target)
    workload = database.commit_workload(mod)
    database.commit_tuning_record(ms.database.TuningRecord(
        candidates[0].sch.trace, workload, [1e-4], target, ms.arg_info.ArgInfo.from_prim_func(mod["main"])))


def _import_kinds(module) -> list:
    stack, kinds = list(module.imports), []
    while stack:
        m = stack.pop()
        kinds.append(m.kind)
        stack.extend(m.imports)
    return kinds


def _quiet_ms_logs():
    import logging

    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)


def test_plain_build_without_the_hook_is_source_only(tmp_path):
    """The problem being fixed: stock tvm.compile exports CUDA C source and no GPU code."""
    path = str(tmp_path / "plain.so")
    proc = subprocess.run([sys.executable, "-c", _PLAIN_BUILD, path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.split("REPORT", 1)[1])
    assert report["runtime_cuda"] is False  # no driver here: TVM's CUDA runtime did not load
    assert report["cuda_source"] and report["source_only"]
    assert not report["has_device_code"] and report["formats"] == []


def test_tir_matmul_builds_loadable_fatbin(tmp_path):
    import tvm

    from cwm import workloads
    from cwm.targets.cuda import DEFAULT_SCHEDULES, build_cuda

    build = build_cuda(workloads.matmul(128))
    info = build.info
    assert info.kind == "tir" and info.arch == "sm_89" and info.compiler == "nvcc"
    assert info.binary_format == "fatbin" and info.device_compiles == 1
    assert info.schedule_source == DEFAULT_SCHEDULES and info.default_scheduled_functions == ["main"]
    path = str(tmp_path / "mm.so")
    report = build.export_library(path)
    assert report["has_device_code"] and not report["cuda_source"] and not report["source_only"]
    assert report["archs"] == ["sm_89"] and report["formats"] == ["fatbin"]
    kinds = {(e["kind"], e["sm"]) for e in report["fatbin_entries"]}
    assert kinds == {("elf", 89), ("ptx", 89)}  # machine code + PTX for newer GPUs
    loaded = tvm.runtime.load_module(path)  # loadable: the CUDA loader is registered
    assert [m.kind for m in loaded.imports] == ["cuda"]


@pytest.mark.parametrize("fmt", ["cubin", "ptx"])
def test_other_binary_formats(tmp_path, fmt):
    from cwm import workloads
    from cwm.targets.cuda import build_cuda

    build = build_cuda(workloads.matmul(64), fmt=fmt)
    report = build.export_library(str(tmp_path / f"mm_{fmt}.so"))
    assert report["formats"] == [fmt] and report["archs"] == ["sm_89"] and not report["cuda_source"]


def test_relax_model_builds_with_default_gpu_schedules(tmp_path):
    import tvm

    from cwm.targets.cuda import DEFAULT_SCHEDULES, build_cuda

    build = build_cuda(tiny_relax_model())
    assert build.info.kind == "relax" and build.info.schedule_source == DEFAULT_SCHEDULES
    assert build.info.tuned_functions == [] and len(build.info.default_scheduled_functions) >= 3
    path = str(tmp_path / "tiny.so")
    report = build.export_library(path)
    assert report["has_device_code"] and report["archs"] == ["sm_89"] and not report["cuda_source"]
    assert "cuda" in _import_kinds(tvm.runtime.load_module(path))


def test_tuned_schedules_are_used_and_reported(tmp_path):
    from tvm import tirx
    from tvm.s_tir import meta_schedule as ms

    from cwm import workloads
    from cwm.partition import fuse
    from cwm.targets.cuda import TUNED, build_cuda, cuda_target, has_device_code
    from cwm.tuning.relax_model import apply_database

    _quiet_ms_logs()
    target = cuda_target("cuda")
    # TIR: the database's schedule replaces the default one
    mod = workloads.matmul(128)
    database = ms.database.MemoryDatabase()
    _sampled_record(mod, target, database)
    build = build_cuda(mod, database=database)
    assert build.info.schedule_source == TUNED and build.info.tuned_functions == ["main"]
    assert has_device_code(build.executable)["has_device_code"]
    # Relax: one tuned task (the matmul), default GPU schedules for the rest
    model = tiny_relax_model()
    tasks = ms.relax_integration.extract_tasks(fuse(model, target), target)
    matmul = next(t for t in tasks if t.task_name == "matmul")
    database = ms.database.MemoryDatabase()
    _sampled_record(matmul.dispatched[0], target, database)
    build = build_cuda(model, database=database)
    assert build.info.tuned_functions == ["matmul"], build.info
    assert build.info.schedule_source.startswith(f"{TUNED}: 1 of ") and "default GPU schedules: " in \
        build.info.schedule_source
    # a module the caller already fused and tuned keeps its schedules and is not re-fused
    fused = apply_database(fuse(model, target), target, database)
    build = build_cuda(fused, scheduled_by=TUNED)
    assert build.info.tuned_functions == ["matmul"] and build.info.pre_scheduled_functions == []
    assert build.info.schedule_source.startswith(f"{TUNED}: 1 of ")
    assert build.export_library(str(tmp_path / "tiny_tuned.so"))["has_device_code"]
    assert not any(isinstance(f, tirx.PrimFunc) for _, f in model.functions_items())  # input left as it was
    assert "tirx.is_scheduled" not in dict(mod["main"].attrs or {})


def _sort_model():
    """sort -> cumsum -> top-k -> add: ops that LegalizeOps leaves for GPU targets (cwm-gpu-dispatch's)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 64), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.cumsum(bb.emit(relax.op.sort(x, axis=-1)), axis=-1))
            top = bb.emit(relax.op.topk(y, 4, axis=-1))
            out = bb.emit_output(bb.emit(relax.op.add(top[0], relax.const(1.0))))
        bb.emit_func_output(out)
    return bb.get()


def test_compile_route_builds_the_pipelines_module(tiny_onnx, tmp_path, monkeypatch):
    """cwm.compile for cuda: cwm-partition fuses once, cwm-apply-db applies the database once, the GPU
    passes schedule the rest, cwm-build builds that module (no build_cuda, no second fuse/apply)."""
    import cwm
    import cwm.partition
    import cwm.targets.cuda
    import cwm.tuning.relax_model
    from cwm.compile.api import run_pipeline
    from cwm.compile.pipeline import PIPELINES
    from cwm.targets.cuda import TUNED, cuda_target, has_device_code

    from tvm.s_tir import meta_schedule as ms

    _quiet_ms_logs()
    target = cuda_target("cuda")
    work_dir = tmp_path / "wd"
    tasks = run_pipeline(tiny_onnx, pipeline="cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-partition", target="cuda",
                         work_dir=work_dir).tasks
    matmul = next(t for t in tasks if t.task_name == "fused_matmul_add1")
    _sampled_record(matmul.dispatched[0], target, ms.database.JSONDatabase(
        str(work_dir / "database_workload.json"), str(work_dir / "database_tuning_record.json")))
    calls = {"fuse": 0, "apply": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(cwm.partition, "fuse", counted("fuse", cwm.partition.fuse))
    monkeypatch.setattr(cwm.tuning.relax_model, "apply_database",
                        counted("apply", cwm.tuning.relax_model.apply_database))
    monkeypatch.setattr(cwm.targets.cuda, "build_cuda",
                        lambda *a, **k: pytest.fail("the compile route called build_cuda"))
    model = cwm.compile(tiny_onnx, target="cuda", pipeline="from-db", work_dir=work_dir)
    assert calls == {"fuse": 1, "apply": 1}
    assert model.report["pipeline"] == PIPELINES["from-db-cuda"]
    info = model.report["build_info"]
    assert info["tuned_functions"] == ["fused_matmul_add1"] and info["pre_scheduled_functions"] == []
    assert info["default_scheduled_functions"] == ["fused_conv2d_add_relu", "reshape", "reshape1", "transpose"]
    assert info["schedule_source"] == f"{TUNED}: 1 of 5 functions, default GPU schedules: 4 of 5 functions"
    assert has_device_code(os.path.join(model.export(tmp_path / "out"), "model.so"))["formats"] == ["fatbin"]


def test_gpu_dispatch_pass_gives_sort_and_scan_gpu_kernels(tmp_path):
    """LegalizeOps keeps sort/cumsum/top-k for GPU targets; cwm-gpu-dispatch makes them TVM's GPU kernels."""
    import cwm
    from cwm.compile.api import run_pipeline

    partitioned = run_pipeline(_sort_model(), pipeline="cwm-import,cwm-partition", target="cuda").mod
    assert "R.sort(" in partitioned["main"].script()
    model = cwm.compile(_sort_model(), target="cuda", pipeline="no-tune", work_dir=tmp_path / "wd")
    info = model.report["build_info"]
    assert info["pre_scheduled_functions"] == ["gpu_2d_continuous_cumsum", "sort", "topk"], info
    assert info["default_scheduled_functions"] == ["fused_add"], info
    assert os.path.exists(os.path.join(model.export(tmp_path / "out"), "model.so"))


def test_cuda_pipeline_without_gpu_schedules_is_a_clear_error(tiny_onnx, tmp_path):
    import cwm
    from cwm.compile.errors import PipelineError

    with pytest.raises(PipelineError) as info:
        cwm.compile(tiny_onnx, target="cuda", pipeline="cwm-import,cwm-partition,cwm-build", work_dir=tmp_path)
    message = str(info.value)
    assert message.startswith("cwm-build: 5 TIR function(s) have no GPU schedule (fused_conv2d_add_relu, "), message
    assert "put cwm-gpu-default-schedules before cwm-build" in message, message


def test_has_device_code_on_files_and_bytes(tmp_path):
    from cwm.targets.cuda import has_device_code

    nvcc = find_nvcc()
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n')
    cubin, ptx = tmp_path / "k.cubin", tmp_path / "k.ptx"
    subprocess.run([nvcc, "--cubin", "-arch=sm_80", "-o", str(cubin), str(src)], check=True, timeout=120)
    subprocess.run([nvcc, "--ptx", "-arch=sm_80", "-o", str(ptx), str(src)], check=True, timeout=120)
    assert has_device_code(str(cubin))["archs"] == ["sm_80"]
    assert has_device_code(ptx.read_bytes())["formats"] == ["ptx"]
    report = has_device_code(str(src))
    assert report["source_only"] and not report["has_device_code"]
    assert not has_device_code(b"\x7fELF" + bytes(100))["has_device_code"]
    with pytest.raises(TypeError):
        has_device_code(42)
    assert os.path.getsize(cubin) > 0


def test_metaschedule_builder_artifacts_hold_device_code():
    """With the hook on, MetaSchedule candidates build to .tar artifacts with GPU code (for RPCRunner)."""
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from cwm import workloads
    from cwm.targets.cuda import cuda_target, enable_cuda_codegen, has_device_code
    from cwm.tuning.builder import InProcessBuilder

    _quiet_ms_logs()
    target = cuda_target("cuda")
    enable_cuda_codegen(target)
    candidate = _sampled_candidates(workloads.matmul(128), target)[0]
    result, = InProcessBuilder(max_workers=1).build([BuilderInput(candidate.sch.mod, target)])
    assert result.error_msg is None, result.error_msg
    try:
        report = has_device_code(result.artifact_path)
        assert report["formats"] == ["fatbin"] and report["archs"] == ["sm_89"] and not report["cuda_source"]
    finally:
        shutil.rmtree(os.path.dirname(result.artifact_path), ignore_errors=True)
