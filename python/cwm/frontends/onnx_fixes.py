"""ONNX graph rewrites that sidestep TVM 0.27 ONNX-importer bugs (the output is unchanged).

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
