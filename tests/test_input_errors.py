"""Errors a user can act on (issue 13): malformed ONNX files (finding 8), bad input shapes
(finding 9), and the smaller points of finding 11 (`--trials 0`, `cwm tune --trials -1`,
`cwm run --output` into a missing folder, torch bfloat16 inputs). All fail before tuning.
"""
from __future__ import annotations

import numpy as np
import pytest

from cwm.cli import main


def _onnx_model(dims=(1, 8), with_input=True, with_output=True, external=None):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    w = numpy_helper.from_array(np.ones((1, 8), "float32"), "w")
    if with_input:
        nodes, inputs = [helper.make_node("Add", ["x", "w"], ["y"])], [x]
    else:
        nodes, inputs = [helper.make_node("Identity", ["w"], ["y"])], []
    graph = helper.make_graph(nodes, "g", inputs, [y] if with_output else [], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _save(model, path, external=False) -> str:
    import onnx

    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location="weights.data", size_threshold=0)
    else:
        onnx.save(model, str(path))
    return str(path)


def _compile_cli(path, tmp_path, *extra):
    return main(["compile", str(path), "-o", str(tmp_path / "out"), "--pipeline", "no-tune", "--no-baseline",
                 "--no-progress", *extra])


# --------------------------------------------------------------------------- finding 8
@pytest.mark.parametrize("case", ["truncated", "garbage"])
def test_truncated_or_garbage_onnx_is_one_line_exit_2(tmp_path, capsys, case):
    good = _save(_onnx_model(), tmp_path / "good.onnx")
    data = open(good, "rb").read()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(data[:40] if case == "truncated" else b"\xff\xfe not onnx \x00\x01" * 10)
    assert _compile_cli(bad, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cwm compile: error: not a valid ONNX model: {bad}"), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_empty_onnx_file_says_empty(tmp_path, capsys):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert _compile_cli(empty, tmp_path) == 2
    err = capsys.readouterr().err
    assert "is empty (0 bytes)" in err and "IR version" not in err, err


def test_missing_external_data_names_the_file(tmp_path, capsys):
    path = _save(_onnx_model(), tmp_path / "ext.onnx", external=True)
    (tmp_path / "weights.data").unlink()
    assert _compile_cli(path, tmp_path) == 2
    err = capsys.readouterr().err
    assert "external-data file" in err and str(tmp_path / "weights.data") in err and "does not exist" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_external_data_next_to_the_file_still_loads(tmp_path):
    import cwm.compile as cc

    path = _save(_onnx_model(), tmp_path / "ext.onnx", external=True)
    model = cc.compile(path, pipeline="no-tune")
    np.testing.assert_allclose(model(np.zeros((1, 8), "float32")), np.ones((1, 8), "float32"))


def test_model_proto_without_graph_is_refused(tmp_path, capsys):
    import onnx

    import cwm.compile as cc

    raw = bytes([0x08, 0x07, 0x12, 0x04]) + b"junk"  # ir_version=7, producer_name="junk", no graph
    path = tmp_path / "nograph.onnx"
    path.write_bytes(raw)
    assert _compile_cli(path, tmp_path) == 2
    err = capsys.readouterr().err
    assert "not a valid ONNX model" in err and "has no graph" in err, err
    assert not (tmp_path / "out").exists()
    with pytest.raises(cc.InvalidModelError, match="has no graph"):
        cc.compile(onnx.load_from_string(raw), pipeline="no-tune")


@pytest.mark.parametrize("missing", ["inputs", "outputs"])
def test_model_without_inputs_or_outputs_is_refused(tmp_path, missing):
    import cwm.compile as cc

    model = _onnx_model(with_input=missing != "inputs", with_output=missing != "outputs")
    with pytest.raises(cc.InvalidModelError, match=f"has no {missing}"):
        cc.compile(model, pipeline="no-tune")
    with pytest.raises(cc.InvalidModelError, match=f"has no {missing}"):
        cc.compile(_save(model, tmp_path / "m.onnx"), pipeline="no-tune")


# --------------------------------------------------------------------------- finding 9
@pytest.mark.parametrize("shape, needle", [([-1, 8], ">= 1"), ([0, 8], ">= 1"), ([1, 8, 1], "has rank 3"),
                                           ([8], "has rank 1"), (["a", 8], "list of ints"),
                                           ([1.0, 8], "list of ints"), (8, "list of ints")])
def test_bad_input_shapes_are_refused_at_compile_time(shape, needle):
    import cwm.compile as cc

    model = _onnx_model(dims=("N", 8))
    with pytest.raises(cc.InputShapeError, match=needle) as info:
        cc.compile(model, pipeline="no-tune", input_shapes={"x": shape})
    assert "input_shapes" in str(info.value)


def test_good_input_shape_still_compiles():
    import cwm.compile as cc

    model = cc.compile(_onnx_model(dims=("N", 8)), pipeline="no-tune", input_shapes={"x": [1, 8]})
    assert [tuple(s.shape) for s in model.inputs] == [(1, 8)]


@pytest.mark.parametrize("flags, needle", [
    ([], "pass --input-shape x=<N>,8"),
    (["--input-shape", "x=-1,8"], "--input-shape x=-1,8: every dimension must be an integer >= 1"),
    (["--input-shape", "x=0,8"], "--input-shape x=0,8: every dimension must be an integer >= 1"),
    (["--input-shape", "x=1,8,1"], "--input-shape x=1,8,1 has rank 3"),
    (["--input-shape", "x=a,8"], "--input-shape takes NAME=D0,D1,... with integer dimensions, not 'x=a,8'"),
    (["--input-shape", "y=1,8"], "--input-shape names unknown input(s) ['y']"),
])
def test_cli_shape_errors_name_the_flag(tmp_path, capsys, flags, needle):
    path = _save(_onnx_model(dims=("N", 8)), tmp_path / "sym.onnx")
    assert _compile_cli(path, tmp_path, *flags) == 2
    err = capsys.readouterr().err
    assert needle in err and "input_shapes" not in err, err


# --------------------------------------------------------------------------- finding 11
def test_trials_0_is_untuned_and_claims_no_speedup(tmp_path, capsys):
    path = _save(_onnx_model(), tmp_path / "m.onnx")
    assert main(["compile", path, "-o", str(tmp_path / "out"), "--trials", "0", "--cost-model", "xgb",
                 "--runs", "1", "--no-progress", "--work-dir", str(tmp_path / "wd")]) == 0
    out = capsys.readouterr().out
    assert "x faster" not in out and "not tuned" in out, out
    assert "| untuned " in out and "| reused " not in out.split("| task")[1], out


def test_tune_negative_trials_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["tune", "matmul_256", "--trials", "-1"])
    assert info.value.code == 2
    assert "--trials must be >= 1" in capsys.readouterr().err
    import cwm

    with pytest.raises(ValueError, match="trials must be an int >= 1"):
        cwm.tune(__import__("cwm.workloads", fromlist=["get"]).get("matmul_256"), trials=0)


def test_run_output_into_missing_folder_fails_before_running(tmp_path, capsys, monkeypatch):
    import cwm.compile as cc

    model = cc.compile(_onnx_model(), pipeline="no-tune")
    model.export(tmp_path / "art")
    np.save(tmp_path / "x.npy", np.zeros((1, 8), "float32"))
    ran = []
    from cwm.compile.compiled_model import CompiledModel

    original = CompiledModel.__call__
    monkeypatch.setattr(CompiledModel, "__call__", lambda self, *a, **k: ran.append(1) or original(self, *a, **k))
    target = tmp_path / "missing_dir" / "y.npy"
    assert main(["run", str(tmp_path / "art"), "--input", str(tmp_path / "x.npy"), "--output", str(target)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and str(tmp_path / "missing_dir") in err, err
    assert not ran


def test_torch_bfloat16_input():
    torch = pytest.importorskip("torch")
    import cwm.compile as cc

    class Affine(torch.nn.Module):
        def forward(self, x):
            return x * 2 + 1

    x = torch.randn(1, 8)
    model = cc.compile(Affine(), example_inputs=(x,), pipeline="no-tune")
    with pytest.raises(cc.InputError, match=r"torch.bfloat16 tensor, the model expects float32 .*x.float\(\)"):
        model(x.bfloat16())
    # a model that takes bfloat16 gets the same bits (no conversion), and gives torch.bfloat16 back
    bf16 = cc.compile(Affine(), example_inputs=(x.bfloat16(),), pipeline="no-tune")
    y = bf16(x.bfloat16())
    assert y.dtype == torch.bfloat16 and torch.equal(y, x.bfloat16() * 2 + 1)
