"""cwm.compile pipelines: parse/str round trip, registry errors, instruments, options, error paths."""
from __future__ import annotations

import io

import pytest

import cwm
import cwm.compile as cc
from cwm.compile.errors import CompileError, PipelineError
from cwm.compile.pipeline import PIPELINES, Pipeline, parse, resolve
from tests.compile_helpers import tiny_onnx  # noqa: F401  (fixture)

ROUND_TRIP = [
    "cwm-import,cwm-partition,cwm-tune{trials=8,cost-model=xgb},cwm-apply-db,cwm-build",
    "cwm-import,cwm-partition{lift-params=false},cwm-build",
    "cwm-import,cwm-partition,cwm-tune{seed=3},cwm-build",
    "cwm-import,cwm-partition,cwm-tune{cost-model=random,trials=0,seed=1},cwm-apply-db,cwm-build",
    "cwm-import",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_parse_str_round_trip(text):
    pipeline = parse(text)
    assert str(pipeline) == text
    assert parse(str(pipeline)) == pipeline


def test_parse_types_whitespace_and_named_pipelines():
    pipeline = parse(" cwm-import , cwm-partition{ lift-params = FALSE } ,cwm-tune{trials=8, cost-model=xgb},"
                     "cwm-apply-db,cwm-build ")
    assert str(pipeline) == ("cwm-import,cwm-partition{lift-params=false},cwm-tune{trials=8,cost-model=xgb},"
                             "cwm-apply-db,cwm-build")
    tune = pipeline.passes[2]
    assert tune.given == {"trials": 8, "cost-model": "xgb"} and isinstance(tune.given["trials"], int)
    assert pipeline.passes[1].given == {"lift-params": False}
    for name, text in PIPELINES.items():
        assert str(resolve(name)) == text
    assert resolve(None) == resolve("default")
    assert resolve(pipeline) is pipeline
    built = Pipeline.of("cwm-import", "cwm-partition", ("cwm-tune", {"trials": 8, "cost-model": "xgb"}),
                        "cwm-apply-db", "cwm-build")
    assert str(built) == "cwm-import,cwm-partition,cwm-tune{trials=8,cost-model=xgb},cwm-apply-db,cwm-build"


@pytest.mark.parametrize("text, needle", [
    ("cwm-import,cwm-fuse,cwm-build", "unknown pass 'cwm-fuse'; registered passes: cwm-import, cwm-keep-nan, "
                                      "cwm-bool-ops, cwm-int-power, cwm-vector-math, cwm-partition, cwm-layout-free, cwm-tune, cwm-apply-db, "
                                      "cwm-pack-weights, cwm-gpu-dispatch, cwm-gpu-default-schedules, cwm-build, "
                                      "cwm-transform-weights"),
    ("cwm-import,cwm-partition,cwm-tune{trails=8}", "pass 'cwm-tune' has no option 'trails'; its options: "
                                                    "trials, cost-model, seed, budget, scheduler"),
    ("cwm-import,cwm-build{x=1}", "pass 'cwm-build' has no option 'x'; its options: device-code, compiler"),
    ("cwm-import,cwm-partition,cwm-gpu-default-schedules,cwm-apply-db,cwm-build",
     "pass 'cwm-apply-db' must come before 'cwm-gpu-default-schedules'"),
    ("cwm-import,cwm-partition,cwm-gpu-default-schedules,cwm-gpu-dispatch,cwm-build",
     "pass 'cwm-gpu-dispatch' must come before 'cwm-gpu-default-schedules'"),
    ("cwm-import,cwm-partition,cwm-build,cwm-gpu-default-schedules", "must come before 'cwm-build'"),
    ("cwm-import,cwm-gpu-default-schedules,cwm-build", "'cwm-gpu-default-schedules' needs 'cwm-partition' earlier"),
    ("cwm-import,cwm-build{device-code=sass}", "must be one of ['fatbin', 'cubin', 'ptx'], not 'sass'"),
    ("cwm-import,cwm-partition,cwm-tune{trials=eight}", "option 'trials' of pass 'cwm-tune' takes an int, not 'eight'"),
    ("cwm-import,cwm-partition,cwm-tune{trials=1.5}", "takes an int"),
    ("cwm-import,cwm-partition{lift-params=maybe}", "takes a bool"),
    ("cwm-import,cwm-partition,cwm-tune{cost-model=gbdt}", "must be one of ['cwm', 'xgb'"),
    ("cwm-import,cwm-partition,cwm-tune{trials}", "must be written KEY=VALUE"),
    ("cwm-import,cwm-partition,cwm-tune{trials=8,trials=9}", "given twice"),
    ("cwm-import,cwm-partition,cwm-tune{trials=8", "unclosed '{'"),
    ("cwm-import,cwm-partition,cwm-tune}", "unbalanced '}'"),
    ("cwm-import,,cwm-build", "empty pass"),
    ("cwm-tune,cwm-import", "'cwm-tune' needs 'cwm-partition' earlier"),
    ("cwm-import,cwm-partition,cwm-apply-db", None),  # valid: no build is fine for a pipeline
    ("cwm-import,cwm-import", "appears twice"),
    ("fast", "unknown pipeline 'fast'; named pipelines: default, no-tune, from-db"),
])
def test_pipeline_errors_name_what_is_registered(text, needle):
    if needle is None:
        resolve(text)
        return
    with pytest.raises(PipelineError) as info:
        resolve(text)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


def test_named_pipelines_resolve_per_target_kind():
    """resolve(name, target) picks NAME-KIND when it is named: the cuda pipelines spell out the GPU passes."""
    import tvm

    gpu = "cwm-gpu-dispatch,cwm-gpu-default-schedules,cwm-build{device-code=fatbin,compiler=auto}"
    for name in ("default", "no-tune", "from-db"):
        assert str(resolve(name, "llvm")) == str(resolve(name)) == PIPELINES[name]
        cuda = resolve(name, "cuda")
        cpu_only = ("cwm-vector-math", "cwm-layout-free", "cwm-pack-weights", "cwm-transform-weights")  # llvm only
        assert str(cuda) == PIPELINES[f"{name}-cuda"] == ",".join(
            p for p in PIPELINES[name].split(",") if p not in cpu_only).replace("cwm-build", gpu)
        assert resolve(name, tvm.target.Target("nvidia/nvidia-h100")) == cuda == resolve(name, {"kind": "cuda"})
        assert resolve(f"{name}-cuda", "cuda") == cuda
    assert str(resolve("default", "cuda")) == ("cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-int-power,cwm-partition,cwm-tune,"
                                               f"cwm-apply-db,{gpu}")
    text = "cwm-import,cwm-partition,cwm-build"  # a text is taken as written, for any target
    assert str(resolve(text, "cuda")) == str(resolve(text, "llvm")) == text


@pytest.mark.parametrize("text, needle", [
    ("default-cuda", "pass 'cwm-gpu-dispatch' is for cuda targets only, not llvm: remove it from the pipeline"),
    ("cwm-import,cwm-partition,cwm-gpu-default-schedules,cwm-build",
     "pass 'cwm-gpu-default-schedules' is for cuda targets only, not llvm"),
    ("cwm-import,cwm-partition,cwm-build{device-code=ptx}",
     "option 'device-code' of pass 'cwm-build' is for cuda targets only, not llvm"),
    ("cwm-import,cwm-partition,cwm-build{compiler=nvcc}", "option 'compiler' of pass 'cwm-build' is for cuda"),
])
def test_cuda_only_passes_and_options_are_refused_for_llvm(text, needle, tiny_onnx, tmp_path):
    import tvm

    pipeline = resolve(text)  # without a target: not checked
    with pytest.raises(PipelineError) as info:
        resolve(text, "llvm")
    assert needle in str(info.value)
    with pytest.raises(PipelineError, match="for cuda targets only"):
        cwm.compile(tiny_onnx, pipeline=text, work_dir=tmp_path / "wd")
    assert not (tmp_path / "wd").exists()  # refused before anything ran
    state = cc.CompileState(source=tiny_onnx, options=cc.CompileOptions(), target=tvm.target.Target("llvm"),
                            work_dir=str(tmp_path))
    with pytest.raises(PipelineError, match="for cuda targets only"):  # Pipeline.run checks it too
        pipeline.run(state)
    assert state.ran == []


def test_pass_option_values_are_checked_in_of():
    with pytest.raises(PipelineError, match="takes an int"):
        Pipeline.of("cwm-import", "cwm-partition", ("cwm-tune", {"trials": "8"}))
    with pytest.raises(PipelineError, match="has no option 'cost_model'"):
        Pipeline.of("cwm-import", "cwm-partition", ("cwm-tune", {"cost_model": "xgb"}))


def test_compile_options_unknown_keyword_lists_fields():
    with pytest.raises(TypeError) as info:
        cwm.compile("model.onnx", trails=8)
    message = str(info.value)
    assert "'trails'" in message and "trials_per_task" in message and "cost_model" in message
    with pytest.raises(ValueError, match="unknown cost_model"):
        cc.CompileOptions(cost_model="gbdt")
    options = cc.make_options(cc.CompileOptions(trials_per_task=3), seed=5)
    assert (options.trials_per_task, options.seed) == (3, 5)


def test_compile_needs_a_build_pass(tiny_onnx):
    with pytest.raises(CompileError, match="no cwm-build pass"):
        cwm.compile(tiny_onnx, pipeline="cwm-import,cwm-partition")


def test_instruments_timing_dump_print_after(tiny_onnx, tmp_path):
    stream = io.StringIO()
    everything = cc.Timing(all_passes=True)
    state = cc.run_pipeline(tiny_onnx, pipeline="no-tune", dump_ir=tmp_path / "ir", print_after=("cwm-partition",),
                            instruments=(everything, cc.PrintAfter(["cwm-import"], stream=stream)),
                            work_dir=tmp_path / "wd")
    ran = ["cwm-import", "cwm-keep-nan", "cwm-bool-ops", "cwm-int-power", "cwm-vector-math", "cwm-partition", "cwm-build", "cwm-transform-weights"]
    assert state.ran == ran
    assert list(state.pass_seconds) == ran
    assert all(s >= 0 for s in state.pass_seconds.values())
    names = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert names == ["000_cwm-import.py", "001_cwm-keep-nan.py", "002_cwm-bool-ops.py", "003_cwm-int-power.py",
                     "004_cwm-vector-math.py", "005_cwm-partition.py", "006_cwm-build.py", "007_cwm-transform-weights.py"]
    partitioned = (tmp_path / "ir" / "005_cwm-partition.py").read_text()
    assert "fused_conv2d_add_relu" in partitioned and "main_transform_params" in partitioned
    assert "R.nn.conv2d" in (tmp_path / "ir" / "000_cwm-import.py").read_text()
    assert "IR after cwm-import" in stream.getvalue()
    # all_passes also sees TVM's own passes run inside the cwm ones (legalize, fuse, the build's)
    seen = {name for name, _, _ in everything.records}
    assert {"cwm-import", "cwm-partition", "cwm-build", "LegalizeOps", "FuseOps"} <= seen
    nested = [depth for name, _, depth in everything.records if name == "FuseOps"]
    assert nested and min(nested) >= 1
    assert "cwm-partition" in everything.render()
    assert [t.task_name for t in state.tasks] and state.executable is not None


def test_print_after_unknown_pass_is_an_error(tiny_onnx):
    with pytest.raises(PipelineError, match="unknown pass 'cwm-fuse'"):
        cc.run_pipeline(tiny_onnx, pipeline="no-tune", print_after="cwm-fuse")


def test_pass_errors_keep_their_type(tiny_onnx, tmp_path):
    """An exception inside a pass crosses TVM's FFI as a RuntimeError; the pipeline re-raises the original."""
    from cwm.frontends import tiny_cnn

    with pytest.raises(CompileError, match="needs example inputs"):
        cwm.compile(tiny_cnn.build_model(), pipeline="no-tune")
    with pytest.raises(CompileError, match="no tuning database"):
        cwm.compile(tiny_onnx, pipeline="from-db", work_dir=tmp_path / "empty")
    with pytest.raises(TypeError, match="cwm.compile takes an onnx.ModelProto"):
        cwm.compile(42, pipeline="no-tune")


def test_cwm_cost_model_without_a_model_fails_clearly(tiny_onnx, tmp_path):
    with pytest.raises(CompileError) as info:
        cwm.compile(tiny_onnx, cost_model="cwm", model_dir=tmp_path / "no_model", trials_per_task=2,
                    work_dir=tmp_path / "wd")
    assert "cost_model='xgb'" in str(info.value) and "no_model" in str(info.value)
    records = tmp_path / "wd" / "database_tuning_record.json"
    assert not records.exists() or records.read_text() == ""  # nothing was measured


def test_cuda_tuning_without_a_gpu_or_runner_fails_clearly(tiny_onnx, tmp_path):
    import tvm

    if tvm.runtime.device("cuda", 0).exist:
        pytest.skip("a GPU is present: tuning for cuda would run")
    with pytest.raises(CompileError, match="runner="):
        cwm.compile(tiny_onnx, target="cuda", trials_per_task=2, cost_model="xgb", work_dir=tmp_path)


def test_cuda_build_routes_to_targets_cuda(tiny_onnx, tmp_path):
    """target="cuda" runs the no-tune-cuda pipeline: its GPU passes, then cwm-build with device code
    (cwm.targets.cuda.build_device_code, nvcc); the report says which pipeline ran."""
    try:
        model = cwm.compile(tiny_onnx, target="cuda", pipeline="no-tune", work_dir=tmp_path / "wd")
    except NotImplementedError as error:
        assert "cwm.targets.cuda" in str(error)
        pytest.skip(f"no CUDA builder: {error}")
    except Exception as error:  # noqa: BLE001 - no nvcc / no C compiler on this machine
        if type(error).__name__ == "CudaUnavailable":
            pytest.skip(str(error))
        raise
    assert model.report["builder"] == "cwm.targets.cuda.build_device_code"
    assert model.report["pipeline"] == model.pipeline == PIPELINES["no-tune-cuda"]
    assert list(model.report["pass_seconds"]) == ["cwm-import", "cwm-keep-nan", "cwm-bool-ops", "cwm-int-power", "cwm-partition",
                                                  "cwm-gpu-dispatch", "cwm-gpu-default-schedules", "cwm-build"]
    info = model.report["build_info"]
    assert info["binary_format"] == "fatbin" and info["schedule_source"] == "default GPU schedules"
    assert "fused_conv2d_add_relu" in info["default_scheduled_functions"]
    assert model.target.kind.name == "cuda"
    out = model.export(tmp_path / "out")
    from cwm.targets.cuda import has_device_code

    assert has_device_code(f"{out}/model.so")["has_device_code"]


def test_weights_as_plain_inputs_match_lifted(tiny_onnx, tmp_path):
    """cwm-partition{lift-params=false}: main takes the raw weights; same numbers as the lifted default."""
    import numpy as np

    from cwm.frontends import tiny_cnn

    x = tiny_cnn.example_input(0)
    plain = cwm.compile(tiny_onnx, pipeline="cwm-import,cwm-partition{lift-params=false},cwm-build")
    lifted = cwm.compile(tiny_onnx, pipeline="no-tune")
    assert (plain.param_mode, lifted.param_mode) == ("inputs", "transformed")  # no-tune: transformed at compile
    assert "transpose" in [t["name"] for t in plain.report["tasks"]]  # not lifted out of main
    np.testing.assert_allclose(plain(x), lifted(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cwm.load(plain.export(tmp_path / "out"))(x), plain(x), rtol=0, atol=0)
