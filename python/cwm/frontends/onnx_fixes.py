"""ONNX graph rewrites that sidestep TVM 0.27 ONNX-importer bugs (the output is unchanged).

:func:`fix_scalar_constant_of_shape` and :func:`fix_constant_initializers` (the dynamo
exporter's shape/axes/scalar initializers; its comment block has the errors it avoids).

``ConstantOfShape`` with an empty shape (a scalar output, e.g. GPT-2's mask code exports one
for ``True``): TVM's converter builds ``broadcast_to(<1-element 1-D const>, ())`` and fails
with "broadcast_to expects the input shape to have the number of ndim at least as the input
tensor's. However, the given tensor has ndim 1 while the target shape has ndim 0". Such a
node is replaced by a ``Constant`` holding the scalar.
"""
from __future__ import annotations


def _constants(graph) -> dict:
    from onnx import numpy_helper

    out = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    out[node.output[0]] = numpy_helper.to_array(attr.t)
    return out


def scalar_constant_of_shape_nodes(model) -> list:
    """Indices of ``ConstantOfShape`` nodes whose (constant) shape input is empty."""
    graph = model.graph
    found = [i for i, n in enumerate(graph.node) if n.op_type == "ConstantOfShape"]
    if not found:
        return []
    constants = _constants(graph)
    return [i for i in found if graph.node[i].input[0] in constants
            and constants[graph.node[i].input[0]].size == 0]


def fix_scalar_constant_of_shape(model):
    """``model`` itself if nothing needs rewriting, else a rewritten copy (see module doc)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    indices = scalar_constant_of_shape_nodes(model)
    if not indices:
        return model
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for index in indices:
        node = fixed.graph.node[index]
        value = np.zeros(1, "float32")  # ONNX default: a float32 zero
        for attr in node.attribute:
            if attr.name == "value":
                value = numpy_helper.to_array(attr.t)
        scalar = numpy_helper.from_array(np.asarray(value).reshape(()), name=node.output[0])
        node.CopyFrom(helper.make_node("Constant", [], list(node.output), name=node.name,
                                       value=scalar))
    return fixed


# Integer/bool and scalar initializers -> ``Constant`` nodes. The dynamo exporter
# (torch.onnx.export with ``dynamo=True``) stores every constant as an initializer, including
# the int64 shape, axes and index operands and the scalar operands (``Pow`` exponent, RMSNorm
# epsilon) that the TorchScript exporter emits as ``Constant`` nodes. With
# ``keep_params_in_input=True`` (how cwm.compile imports) TVM makes each initializer a parameter
# of ``main``:
# - an ``Expand`` shape becomes a runtime tensor, the converter emits ``tensor_to_shape`` +
#   ``match_cast`` to fresh symbolic dims and the build fails in VMShapeLower with "PrimExpr
#   T.int64(4) * (x_0 * x_1 * x_2 * x_3 * x_4) ... has not been computed" (tiny LLaMA's
#   grouped-query ``repeat_kv``);
# - a 0-d weight reaches the VM as a 1-element 1-D tensor ("Mismatched val_100.ndim on argument
#   #1 when calling: power(...)", expected 0), because CompiledModel passes its weights through
#   ``np.ascontiguousarray``, which returns ndim >= 1.
# Floating-point initializers of rank >= 1 (the weights) stay initializers, and so do those that
# are also graph inputs (overridable, ONNX IR >= 4); integer weights (quantized models) would
# become constants of the module, with the same output.
_INDEX_TYPES = ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL")


def constant_initializers(model) -> list:
    """Names of the main graph's integer/bool or 0-d initializers that are not graph inputs."""
    from onnx import TensorProto

    codes = {getattr(TensorProto, name) for name in _INDEX_TYPES}
    inputs = {value.name for value in model.graph.input}
    return [init.name for init in model.graph.initializer
            if (init.data_type in codes or len(init.dims) == 0) and init.name not in inputs]


def fix_constant_initializers(model):
    """``model`` itself if :func:`constant_initializers` finds none, else a copy in which each
    one is a ``Constant`` node at the front of the graph (see the comment above)."""
    import onnx
    from onnx import helper

    names = set(constant_initializers(model))
    if not names:
        return model
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    graph = fixed.graph
    moved = [init for init in graph.initializer if init.name in names]
    kept = [init for init in graph.initializer if init.name not in names]
    nodes = [helper.make_node("Constant", [], [init.name], name=f"cwm_const_{init.name}", value=init)
             for init in moved] + list(graph.node)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    del graph.node[:]
    graph.node.extend(nodes)
    return fixed
