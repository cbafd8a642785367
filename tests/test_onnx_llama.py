"""The ONNX route for LLaMA-family decoders: tiny LLaMA / Qwen2 / Mistral (transformers, random weights)
-> torch.onnx.export(dynamo=True) via cwm.frontends.onnx_export -> cwm.compile(pipeline="no-tune")
-> logits vs ONNX Runtime on the same file. Each case takes a few seconds (export ~3 s, build ~3 s)."""
from __future__ import annotations

import numpy as np
import pytest

import cwm
from cwm.frontends.architectures import DECODERS, get
from cwm.frontends.onnx_export import DYNAMO_OPSET, export_onnx

pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript (requirements.txt)")

# The tiny decoders of cwm.frontends.architectures: 2 layers, 4 query heads over 2 key/value heads
# (grouped-query attention, the Expand that needed fix_constant_initializers), 16 tokens.
# max|y - y_ort| / max|y_ort|: both sides compute in float32 but TVM and ONNX Runtime order the
# reductions (matmul, RMSNorm mean, softmax sum) differently, so only rounding-level differences
# (~1e-7 relative here) are expected; a real conversion bug is far above 1e-5.
MAX_REL_ERR = 1e-5


@pytest.mark.parametrize("family", DECODERS)
def test_dynamo_onnx_compiles_and_matches_onnxruntime(family, tmp_path):
    import onnx
    import onnxruntime as ort
    module, (ids,) = get(family).build()
    path = export_onnx(module, (ids,), tmp_path / f"{family}.onnx",
                       input_names=["input_ids"], output_names=["logits"])
    proto = onnx.load(path)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", DYNAMO_OPSET)]
    assert not list(tmp_path.glob("*.tmp*"))

    compiled = cwm.compile(path, pipeline="no-tune")
    assert [(s.name, tuple(s.shape), s.dtype) for s in compiled.inputs] == [("input_ids", tuple(ids.shape), "int64")]

    x = ids.numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input_ids": x})[0]
    got = compiled(x)
    assert got.shape == expected.shape == (*ids.shape, get(family).config["vocab_size"])
    rel_err = float(np.abs(got - expected).max() / np.abs(expected).max())
    assert rel_err <= MAX_REL_ERR, f"{family}: max rel err {rel_err:.3g} > {MAX_REL_ERR}"


def test_fix_constant_initializers_keeps_weights(tmp_path):
    """Integer and 0-d initializers become Constant nodes; float weights (and graph inputs) stay."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from cwm.frontends.onnx_fixes import constant_initializers, fix_constant_initializers

    inits = [numpy_helper.from_array(np.ones((2, 3), "float32"), "w"),
             numpy_helper.from_array(np.array([1, 2, 3], "int64"), "shape"),
             numpy_helper.from_array(np.array(2.0, "float32"), "exponent"),
             numpy_helper.from_array(np.array([7], "int64"), "overridable")]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("overridable", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert constant_initializers(model) == ["shape", "exponent"]
    fixed = fix_constant_initializers(model)
    assert [i.name for i in fixed.graph.initializer] == ["w", "overridable"]
    assert [(n.op_type, n.output[0]) for n in fixed.graph.node] == [("Constant", "shape"), ("Constant", "exponent"),
                                                                      ("Identity", "y")]
    onnx.checker.check_model(fixed)
    assert fix_constant_initializers(fixed) is fixed


def test_export_errors(monkeypatch, tmp_path):
    import importlib.util

    import torch

    with pytest.raises(ValueError, match="opset 17"):
        export_onnx(torch.nn.Identity(), (torch.zeros(1),), tmp_path / "m.onnx", opset=17)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxscript" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match="'onnxscript' package"):
        export_onnx(torch.nn.Identity(), (torch.zeros(1),), tmp_path / "m.onnx")
    assert not list(tmp_path.iterdir())
