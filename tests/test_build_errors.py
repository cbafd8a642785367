"""Build failures name their origin (issue 16, item 4): a function that TVM cannot legalize or
build is a :class:`~cwm.compile.errors.BuildError` (a ``CompileError``) naming the pass, the TIR
function, the Relax bindings and ops it came from, the frontend node ("unknown": TVM's importers
keep none) and one line of TVM's message (:mod:`cwm.compile.failure_origin`).

The failures are real TVM 0.27 ones: ``==`` on bool tensors makes LLVM codegen emit
``fcmp oeq i1`` (verification fails), ``max`` over a bool tensor cannot be legalized. The named
pipelines now run ``cwm-bool-ops``, which rewrites such comparisons, so the tests spell out a
pipeline without it.
"""
from __future__ import annotations

import pytest

from cwm.cli import main
from cwm.compile.errors import BuildError, CompileError
from tests.compile_helpers import relax_module

PIPELINE = "cwm-import,cwm-partition,cwm-build"  # no cwm-bool-ops: bool == still fails to build
MAX_LINES = 5  # the longest message is 4 lines: what failed + called by + relax op(s) + frontend node


def _bool_module(op):
    return relax_module(op, a=((4,), "bool"), b=((4,), "bool"))


def _equal(a, b):
    from tvm import relax

    return relax.op.equal(a, b)


def _compile_error(model, **kwargs) -> BuildError:
    import cwm.compile as cc

    with pytest.raises(CompileError) as raised:
        cc.compile(model, pipeline=PIPELINE, **kwargs)
    assert isinstance(raised.value, BuildError), repr(raised.value)
    return raised.value


def _assert_short(message: str) -> None:
    lines = message.splitlines()
    assert 1 <= len(lines) <= MAX_LINES, message
    assert "Traceback" not in message and ".cc" not in message and "File " not in message, message


def test_codegen_failure_names_pass_function_op_and_one_tvm_line():
    import tvm

    error = _compile_error(_bool_module(_equal))
    message = str(error)
    first = message.splitlines()[0]
    assert first.startswith("cwm-build: TIR function 'equal' does not build for llvm: "), message
    assert "Invalid operand types for FCmp instruction" in first, message  # TVM's line, joined to its heading
    assert "main: gv = R.call_tir(equal, (a, b))" in message, message
    assert "relax.equal" in message and "R.equal(a, b)" in message, message
    assert "frontend node: unknown" in message, message
    _assert_short(message)
    assert (error.pass_name, error.function, error.ops) == ("cwm-build", "equal", ("relax.equal",))
    assert isinstance(error.tvm_error, tvm.error.InternalError)


def test_fused_function_from_torch_names_every_op():
    torch = pytest.importorskip("torch")

    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.logical_not(x == y)

    inputs = (torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False]))
    error = _compile_error(M(), example_inputs=inputs)
    assert error.function.startswith("fused_") and "equal" in error.function, str(error)
    assert error.ops == ("relax.equal", "relax.logical_not"), str(error)
    assert error.node is None and "frontend node: unknown" in str(error)  # from_exported_program keeps no names
    _assert_short(str(error))


def test_build_keeps_tvms_error_as_cause():
    import tvm

    from cwm.compile.passes import build

    with pytest.raises(BuildError) as raised:
        build(_bool_module(_equal), tvm.target.Target("llvm"))
    assert isinstance(raised.value.__cause__, tvm.error.InternalError)
    assert raised.value.__cause__ is raised.value.tvm_error


def test_cause_survives_the_pipeline():
    import tvm

    assert isinstance(_compile_error(_bool_module(_equal)).__cause__, tvm.error.InternalError)


def test_without_the_unlegalized_module_the_op_is_a_guess():
    import tvm

    from cwm.compile.passes import build
    from cwm.partition import fuse

    target = tvm.target.Target("llvm")
    with pytest.raises(BuildError) as raised:
        build(fuse(_bool_module(_equal), target), target)  # as cwm.compile's baseline build does
    assert raised.value.ops == ("relax.equal",)
    assert "relax.equal (guessed from the function's name)" in str(raised.value)


def test_legalization_failure_in_partition_names_the_op_and_binding():
    from tvm import relax

    error = _compile_error(_bool_module(lambda a, b: relax.op.max(a)))
    message = str(error)
    assert message.startswith("cwm-partition: cannot legalize relax.max for llvm: "
                              "Cannot decide min_value for type"), message
    assert "main: gv = R.max(a, axis=None, keepdims=False)" in message, message
    _assert_short(message)
    assert error.ops == ("relax.max",) and error.function is None


def test_tvm_line_prefers_the_check_failed_line():
    from cwm.compile.failure_origin import tvm_line

    text = ("Traceback (most recent call last):\n  File \"x.cc\", line 3\n"
            "InternalError: Check failed: (a == b) is false: shapes differ\n  more")
    assert tvm_line(RuntimeError(text)) == "Check failed: (a == b) is false: shapes differ"
    assert tvm_line(RuntimeError("heading:\n\n  detail\nmore")) == "heading: detail"
    assert len(tvm_line(RuntimeError("x" * 1000))) == 240


def test_a_good_build_never_looks_for_an_origin(monkeypatch):
    import numpy as np
    from tvm import relax

    import cwm.compile as cc
    from cwm.compile import failure_origin

    def fail(*args, **kwargs):
        raise AssertionError("failure_origin called on a build that works")

    monkeypatch.setattr(failure_origin, "build_failure", fail)
    monkeypatch.setattr(failure_origin, "legalize_failure", fail)
    model = cc.compile(relax_module(lambda x: relax.op.add(x, x), x=((4,), "float32")), pipeline=PIPELINE)
    np.testing.assert_allclose(model(np.ones(4, "float32")), np.full(4, 2, "float32"))


def test_cli_prints_one_error_line_and_exits_2(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper

    x, y, z = (helper.make_tensor_value_info(n, TensorProto.BOOL, [4]) for n in "xyz")
    graph = helper.make_graph([helper.make_node("Equal", ["x", "y"], ["z"], name="eq")], "g", [x, y], [z])
    path = tmp_path / "equal.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    rc = main(["compile", str(path), "-o", str(tmp_path / "out"), "--pipeline", PIPELINE, "--no-baseline",
               "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("cwm compile: error: cwm-build: TIR function 'equal' does not build for llvm: "), err
    assert "relax.equal" in err and "frontend node: unknown" in err, err
    assert not (tmp_path / "out").exists()
