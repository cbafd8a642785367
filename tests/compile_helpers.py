"""Shared fixtures and helpers of the tests/test_compile_*.py files (import the fixtures you use)."""
from __future__ import annotations

import numpy as np
import pytest

RTOL = ATOL = 1e-4


def fast_settings():
    """In-process builder and runner: no worker start-up, right for 4-trial test tunes."""
    from cwm.tuning.settings import FastSettings

    return FastSettings(builder_kind="in-process", runner_kind="in-process")


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory):
    """The tiny CNN (conv 3->16, relu, linear -> 10) as an ONNX file; its path as a str."""
    from cwm.frontends import tiny_cnn

    return tiny_cnn.export_onnx(str(tmp_path_factory.mktemp("tiny_onnx") / "tiny_cnn.onnx"))


def onnxruntime_output(path, x):
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def assert_close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def relax_module(build, **params):
    """A Relax module ``main(*params) = build(*params)``: ``params`` maps a name to ``(shape, dtype)``."""
    from tvm import relax

    bb = relax.BlockBuilder()
    args = [relax.Var(name, relax.TensorType(shape, dtype)) for name, (shape, dtype) in params.items()]
    with bb.function("main", args):
        with bb.dataflow():
            out = bb.emit_output(build(*args))
        bb.emit_func_output(out)
    return bb.get()
