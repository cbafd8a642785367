"""Zoo network -> TVM Relax ``IRModule``, through ONNX or through ``torch.export``.

Weights become Relax **constants** (``keep_params_in_input=False`` /
``keep_params_as_input=False``): the module is self-contained, ``main`` takes only the
network input, ``FoldConstant`` in :func:`cwm.partition.fuse` can pre-compute
weight-only expressions, and the numerics check needs no parameter binding.

A frontend error about an operator it cannot translate becomes
:class:`cwm.frontends.UnsupportedOpError` naming the op and the first node that uses it:
ONNX raises ``tvm.error.OpNotImplemented`` ("The following operators are not supported
for frontend ONNX: Foo, Bar") before converting, or ``NotImplementedError("opset version
N of Foo not implemented")`` while converting; the torch importer asserts
``Unsupported function types ['foo.default']``.
"""
from __future__ import annotations

import os
import re

from cwm.frontends import zoo
from cwm.frontends.errors import UnsupportedOpError

DEFAULT_CACHE_DIR = os.path.join("work_dirs", "zoo_cache", "onnx")  # relative to the cwd

_ONNX_LIST = re.compile(r"not supported for frontend ONNX:\s*(.+)$", re.S)
_ONNX_OPSET = re.compile(r"opset version \d+ of (\w+) not implemented")
_TORCH_LIST = re.compile(r"Unsupported function types \[(.*)\]", re.S)


def onnx_path(name: str, cache_dir: str | None = None, small: bool = False) -> str:
    """Where :func:`import_onnx` keeps the exported ONNX file of ``name``:
    ``<cache_dir>/<name>[_small]-<fingerprint>.onnx`` (:func:`cwm.frontends.zoo.fingerprint`)."""
    suffix = "_small" if small else ""
    stem = f"{name}{suffix}-{zoo.fingerprint(name, small)}"
    return os.path.join(cache_dir or DEFAULT_CACHE_DIR, f"{stem}.onnx")


def import_onnx(name: str, cache_dir: str | None = None, small: bool = False):
    """Export ``name`` to ONNX (reused from ``cache_dir`` if present) and import it into Relax."""
    import onnx

    spec = zoo.get(name)
    path = onnx_path(name, cache_dir, small)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        zoo.to_onnx(name, tmp, small)
        os.replace(tmp, path)  # atomic: a killed export never leaves a half file behind
    return from_onnx_model(onnx.load(path), {spec.input_name: list(spec.input_shape)},
                           {spec.input_name: spec.input_dtype})


def from_onnx_model(model, shape_dict: dict, dtype_dict: dict | str = "float32",
                    keep_params_in_input: bool = False):
    """``tvm.relax.frontend.onnx.from_onnx`` with unsupported-op errors translated (and the
    graph rewrites of :mod:`cwm.frontends.onnx_fixes` applied first). ``keep_params_in_input``:
    weights become trailing parameters of ``main`` (``num_input`` attr) instead of constants."""
    import warnings

    import tvm
    from tvm.relax.frontend.onnx import from_onnx

    from cwm.frontends.onnx_fixes import fix_constant_initializers, fix_scalar_constant_of_shape

    model = fix_scalar_constant_of_shape(fix_constant_initializers(model))
    try:
        with warnings.catch_warnings():  # the onnx checker's complaints are only warnings
            warnings.simplefilter("ignore")
            return from_onnx(model, shape_dict=shape_dict, dtype_dict=dtype_dict,
                             keep_params_in_input=keep_params_in_input)
    except tvm.error.OpNotImplemented as error:
        found = _ONNX_LIST.search(str(error))
        if not found:
            raise
        ops = [op.strip() for op in found.group(1).split(",") if op.strip()]
        ops.sort(key=lambda op: _onnx_first_index(model, op))
        raise UnsupportedOpError(ops[0], _onnx_first_node(model, ops[0]), "onnx",
                                 tuple(ops[1:])) from error
    except NotImplementedError as error:
        found = _ONNX_OPSET.search(str(error))
        if not found or isinstance(error, UnsupportedOpError):
            raise
        op = found.group(1)
        raise UnsupportedOpError(op, _onnx_first_node(model, op), "onnx",
                                 detail=str(error)) from error


def _onnx_first_index(model, op: str) -> int:
    types = [node.op_type for node in model.graph.node]
    return types.index(op) if op in types else len(types)


def _onnx_first_node(model, op: str) -> str:
    for index, node in enumerate(model.graph.node):
        if node.op_type == op:
            return node.name or f"#{index} ({op})"
    return "<unknown>"


def import_torch(name: str, small: bool = False):
    """``torch.export.export`` the wrapped module of ``name`` and import it into Relax."""
    import torch

    module, inputs = zoo.build_torch(name, small)
    with torch.no_grad():
        program = torch.export.export(module, inputs)
    return from_exported_program(program)


def from_exported_program(program, keep_params_as_input: bool = False):
    """Core-ATen-decompose ``program`` and import it, translating unsupported-op errors.
    ``keep_params_as_input``: weights become trailing parameters of ``main`` (``num_input``
    attr) instead of constants."""
    from tvm.relax.frontend.torch import from_exported_program as translate

    program = program.run_decompositions()  # done here so node names match the graph
    try:
        return translate(program, keep_params_as_input=keep_params_as_input, unwrap_unit_return_tuple=True,
                         run_ep_decomposition=False)
    except AssertionError as error:
        found = _TORCH_LIST.search(str(error))
        if not found:
            raise
        ops = [op.strip().strip("'\"") for op in found.group(1).split(",") if op.strip()]
        nodes = [n for n in program.graph.nodes if n.op == "call_function"]
        order = [getattr(n.target, "__name__", str(n.target)) for n in nodes]
        ops.sort(key=lambda op: order.index(op) if op in order else len(order))
        node = next((n.name for n, t in zip(nodes, order) if t == ops[0]), "<unknown>")
        raise UnsupportedOpError(ops[0], node, "torch", tuple(ops[1:])) from error


def import_network(name: str, via: str = "onnx", cache_dir: str | None = None,
                   small: bool = False):
    """:func:`import_onnx` (``via="onnx"``) or :func:`import_torch` (``via="torch"``)."""
    if via == "onnx":
        return import_onnx(name, cache_dir, small)
    if via == "torch":
        return import_torch(name, small)
    raise ValueError(f"via must be 'onnx' or 'torch', not {via!r}")
