"""cwm.compile end to end on the tiny ONNX CNN: tune (4 trials/task, xgb) -> numerics vs onnxruntime ->
export -> load in a fresh process; input checks; corrupted/mismatched artifacts; reuse of work_dir."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import cwm
from cwm.compile.errors import ArtifactError, InputError
from tests.compile_helpers import assert_close, fast_settings, onnxruntime_output, tiny_onnx  # noqa: F401

TRIALS = 4


@pytest.fixture(scope="module")
def compiled(tiny_onnx, tmp_path_factory):
    """``(model, work_dir, seconds)``: the tiny CNN tuned for 4 trials per task with xgb."""
    work_dir = tmp_path_factory.mktemp("compile_wd")
    start = time.perf_counter()
    model = cwm.compile(tiny_onnx, target="llvm", trials_per_task=TRIALS, cost_model="xgb", work_dir=work_dir,
                        settings=fast_settings())
    return model, work_dir, time.perf_counter() - start


@pytest.fixture(scope="module")
def exported(compiled, tmp_path_factory):
    return compiled[0].export(tmp_path_factory.mktemp("artifact") / "out")


@pytest.fixture()
def x():
    from cwm.frontends import tiny_cnn

    return tiny_cnn.example_input(0)


def test_tuned_model_matches_onnxruntime(compiled, tiny_onnx, x):
    model, work_dir, _ = compiled
    assert_close(model(x), onnxruntime_output(tiny_onnx, x))
    report = model.report
    assert [t["name"] for t in report["tasks"]] == ["fused_matmul_add1", "reshape", "fused_conv2d_add_relu"]
    assert report["new_records"] >= 2 * TRIALS and report["reused_records"] == 0
    assert report["scheduled_functions"] >= 2 and report["param_mode"] == "transformed"  # cwm-transform-weights
    assert set(report["pass_seconds"]) == {"cwm-import", "cwm-keep-nan", "cwm-bool-ops", "cwm-int-power", "cwm-vector-math", "cwm-partition",
                                           "cwm-layout-free", "cwm-tune", "cwm-apply-db", "cwm-pack-weights",
                                           "cwm-build", "cwm-transform-weights"}
    assert os.path.getsize(os.path.join(work_dir, "database_tuning_record.json")) > 0


def test_input_checks(compiled, x):
    model = compiled[0]
    with pytest.raises(InputError, match=r"input 'x' has shape \(1, 3, 16, 16\), the model expects \(1, 3, 32, 32\)"):
        model(np.zeros((1, 3, 16, 16), "float32"))
    with pytest.raises(InputError, match="input 'x' has dtype float64, the model expects float32"):
        model(x.astype("float64"))
    with pytest.raises(InputError, match="takes 1 input"):
        model(x, x)
    with pytest.raises(InputError, match="missing input"):
        model()
    with pytest.raises(InputError, match="unknown input 'y'"):
        model(y=x)
    with pytest.raises(InputError, match="numpy array or a torch tensor"):
        model(object())
    assert_close(model(x=x), model(x))
    import torch

    out = model(torch.from_numpy(x))
    assert isinstance(out, torch.Tensor)
    assert_close(out.numpy(), model(x))


def test_export_and_load_in_a_fresh_process(compiled, exported, x, tmp_path):
    model = compiled[0]
    names = sorted(os.listdir(exported))
    assert names == ["manifest.json", "model.so", "params.safetensors", "tuning"]
    assert sorted(os.listdir(os.path.join(exported, "tuning"))) == ["database_tuning_record.json",
                                                                     "database_workload.json"]
    manifest = json.load(open(os.path.join(exported, "manifest.json")))
    assert manifest["versions"]["cwm"] == cwm.__version__
    assert manifest["target"]["kind"] == "llvm" and manifest["target"]["config"]["mcpu"]
    assert manifest["inputs"] == [{"name": "x", "shape": [1, 3, 32, 32], "dtype": "float32"}]
    assert manifest["outputs"] == [{"name": "y", "shape": [1, 10], "dtype": "float32"}]
    # the weights as main reads them, transformed (packed) at compile time (cwm-transform-weights)
    assert manifest["params"]["mode"] == "transformed"
    assert [t["name"].split(".")[:2] for t in manifest["params"]["tensors"]] == [["transformed", str(i)]
                                                                                for i in range(len(model.params))]
    assert set(manifest["files"]) == {"model.so", "params.safetensors", "tuning/database_workload.json",
                                      "tuning/database_tuning_record.json"}
    assert all(len(f["sha256"]) == 64 for f in manifest["files"].values())
    assert not any(n.endswith((".pkl", ".pickle", ".pt")) for n in names)
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import numpy as np, cwm
        model = cwm.load({str(exported)!r})
        np.save({str(tmp_path / 'y.npy')!r}, model(np.load({str(tmp_path / 'x.npy')!r})))
        print(repr(model))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CompiledModel(target='llvm'" in done.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), model(x))


def _copy(exported, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(exported, target)
    return target


def _edit_manifest(folder, edit):
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def test_corrupted_artifacts_are_refused(exported, tmp_path):
    folder = _copy(exported, tmp_path)
    data = bytearray((folder / "model.so").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / "model.so").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="model.so is corrupted: sha256"):
        cwm.load(folder)
    shutil.copyfile(os.path.join(exported, "model.so"), folder / "model.so")
    with open(folder / "params.safetensors", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ArtifactError, match="params.safetensors is corrupted"):
        cwm.load(folder)
    os.remove(folder / "params.safetensors")
    with pytest.raises(ArtifactError, match="params.safetensors is missing"):
        cwm.load(folder)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="manifest.json is corrupted"):
        cwm.load(folder)
    os.remove(folder / "manifest.json")
    with pytest.raises(ArtifactError, match="no manifest.json"):
        cwm.load(folder)


def test_version_and_target_mismatches_are_refused(exported, tmp_path):
    folder = _copy(exported, tmp_path)
    _edit_manifest(folder, lambda m: m["versions"].update(tvm="0.26.0"))
    with pytest.raises(ArtifactError, match="built with TVM 0.26.0"):
        cwm.load(folder)
    assert cwm.load(folder, check_versions=False) is not None
    _edit_manifest(folder, lambda m: m["versions"].update(tvm=json.load(open(exported + "/manifest.json"))
                                                          ["versions"]["tvm"], cwm="9.9.0"))
    with pytest.raises(ArtifactError, match="written by cwm 9.9.0"):
        cwm.load(folder)
    _edit_manifest(folder, lambda m: m["versions"].update(cwm=cwm.__version__))
    _edit_manifest(folder, lambda m: m.update(format_version=99))
    with pytest.raises(ArtifactError, match="format version 99"):
        cwm.load(folder)
    _edit_manifest(folder, lambda m: m.update(format_version=1))
    import tvm

    if not tvm.runtime.device("cuda", 0).exist:
        _edit_manifest(folder, lambda m: m["target"].update(kind="cuda"))
        with pytest.raises(ArtifactError, match="compiled for cuda and this machine has no usable CUDA device"):
            cwm.load(folder)
        _edit_manifest(folder, lambda m: m["target"].update(kind="llvm"))
    _edit_manifest(folder, lambda m: m["host"].update(machine="aarch64"))
    with pytest.raises(ArtifactError, match="holds aarch64 code"):
        cwm.load(folder)
    _edit_manifest(folder, lambda m: m["host"].update(machine="x86_64") or m["target"]["config"].update(mcpu="z80"))
    with pytest.warns(RuntimeWarning, match="compiled for CPU 'z80'"):
        cwm.load(folder)


def test_second_compile_reuses_the_work_dir(compiled, tiny_onnx, x):
    model, work_dir, first_s = compiled
    lines_before = open(os.path.join(work_dir, "database_tuning_record.json")).read().count("\n")
    start = time.perf_counter()
    again = cwm.compile(tiny_onnx, trials_per_task=TRIALS, cost_model="xgb", work_dir=work_dir,
                        settings=fast_settings())
    second_s = time.perf_counter() - start
    assert again.report["new_records"] == 0
    assert again.report["reused_records"] == model.report["new_records"]
    assert {t["status"] for t in again.report["tasks"]} <= {"reused", "finished"}
    assert open(os.path.join(work_dir, "database_tuning_record.json")).read().count("\n") == lines_before
    assert second_s < first_s / 2, (first_s, second_s)
    np.testing.assert_array_equal(again(x), model(x))  # the same best schedules were applied


def test_cwm_cost_model_guides_the_tuning(tiny_onnx, tmp_path, x):
    """cost_model="cwm" tunes through cwm.cost_model.CWMCostModel (here: the small committed scorer fixture model)."""
    from pathlib import Path

    model_dir = Path(__file__).parent / "data" / "scorer_fixture" / "model"
    model = cwm.compile(tiny_onnx, trials_per_task=2, cost_model="cwm", model_dir=model_dir, work_dir=tmp_path,
                        settings=fast_settings())
    assert model.report["cost_model"] == "cwm" and model.report["new_records"] >= 4
    assert_close(model(x), onnxruntime_output(tiny_onnx, x))
