"""Turn what the user passed to :func:`cwm.compile` into a Relax module, its signature and weights.

Accepted: an ``onnx.ModelProto``; a path to an ``.onnx`` file; a ``torch.nn.Module`` (with
``example_inputs``); a ``torch.export.ExportedProgram``; a Relax ``tvm.IRModule`` with a
``main`` function. Weights are kept out of the module (ONNX ``keep_params_in_input``, torch
``keep_params_as_input``) and detached: they go to ``params.safetensors`` in the artifact and
``main`` takes them after the model inputs (``num_input`` attribute).
"""
from __future__ import annotations

import operator
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from cwm.compile.errors import CompileError, InputShapeError, InvalidModelError
from cwm.compile.specs import TensorSpec, spec_of_type


@dataclass
class Imported:
    """A Relax module plus its signature and detached weights (in ``main``'s order)."""

    mod: object
    inputs: list
    outputs: list
    params: dict = field(default_factory=dict)
    frontend: str = ""


def kind_of(model) -> str:
    """``"onnx"``, ``"onnx-file"``, ``"torch"``, ``"exported-program"`` or ``"relax"``; ``TypeError`` otherwise."""
    module = type(model).__module__
    if isinstance(model, (str, os.PathLike)):
        if str(model).endswith(".onnx"):
            if not os.path.isfile(model):
                raise FileNotFoundError(f"no ONNX file at {model}")
            return "onnx-file"
        raise TypeError(f"cwm.compile takes a path to an .onnx file; {str(model)!r} is not one")
    if module.startswith("onnx") and type(model).__name__ == "ModelProto":
        return "onnx"
    torch = sys.modules.get("torch")  # a torch object means torch is imported already
    if torch is not None:
        exported = getattr(getattr(torch, "export", None), "ExportedProgram", None)
        if exported is not None and isinstance(model, exported):
            return "exported-program"
        if isinstance(model, torch.nn.Module):
            return "torch"
    try:
        import tvm

        if isinstance(model, tvm.IRModule):
            return "relax"
    except ImportError:  # pragma: no cover - TVM is a dependency
        pass
    raise TypeError("cwm.compile takes an onnx.ModelProto, a path to an .onnx file, a torch.nn.Module "
                    "(with example_inputs=), a torch.export.ExportedProgram or a Relax tvm.IRModule, not "
                    f"{module}.{type(model).__name__}")


def import_model(model, options) -> Imported:
    """Import ``model`` (see the module docstring) under ``options`` (``CompileOptions``)."""
    kind = kind_of(model)
    if kind in ("onnx", "onnx-file"):
        return _import_onnx(model, options)
    if kind == "torch":
        return _import_torch_module(model, options)
    if kind == "exported-program":
        from cwm.frontends.importers import from_exported_program

        return _finish(from_exported_program(model, keep_params_as_input=True), "exported-program",
                       _torch_output_names(model))
    return _import_relax(model)


# ----------------------------------------------------------------------------------- ONNX
def _onnx_inputs(model, options) -> tuple[dict, dict]:
    """``(shape_dict, dtype_dict)`` of the graph inputs that are not initializers."""
    import numpy as np
    import onnx

    given = options.input_shapes or {}
    if not isinstance(given, Mapping):
        raise InputShapeError(f"input_shapes must be a dict {{input name: [D0, D1, ...]}}, not {type(given).__name__}")
    shapes_given = dict(given)
    dtypes_given = dict(options.input_dtypes or {})
    initializers = {init.name for init in model.graph.initializer}
    names = [value.name for value in model.graph.input if value.name not in initializers]
    unknown = sorted(set(shapes_given) - set(names))
    if unknown:  # first: a misspelt name also explains a "symbolic dimension" error below
        raise InputShapeError(f"input_shapes names unknown input(s) {unknown}; the ONNX model's inputs are {names}",
                              cli=f"--input-shape names unknown input(s) {unknown}; the ONNX model's inputs are "
                                  f"{names}")
    unknown = sorted(set(dtypes_given) - set(names))
    if unknown:
        raise CompileError(f"input_dtypes names unknown input(s) {unknown}; the ONNX model's inputs are {names}")
    shapes, dtypes = {}, {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        declared = list(tensor.shape.dim) if tensor.HasField("shape") else None
        if value.name in shapes_given:
            shapes[value.name] = _given_shape(value.name, shapes_given.pop(value.name), declared)
        else:
            dims = []
            for index, dim in enumerate(tensor.shape.dim):
                if not dim.HasField("dim_value") or dim.dim_value <= 0:
                    name = dim.dim_param or f"dim {index}"
                    pattern = [str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0
                               else f"<{d.dim_param or f'D{i}'}>" for i, d in enumerate(tensor.shape.dim)]
                    raise InputShapeError(
                        f"ONNX input {value.name!r} has a symbolic dimension {name!r}; "
                        f"pass input_shapes={{{value.name!r}: [...]}} (static shapes only)",
                        cli=f"ONNX input {value.name!r} has a symbolic dimension {name!r}; pass "
                            f"--input-shape {value.name}={','.join(pattern)} with every <...> a number "
                            "(static shapes only)")
                dims.append(int(dim.dim_value))
            shapes[value.name] = dims
        if value.name in dtypes_given:
            dtypes[value.name] = str(np.dtype(dtypes_given.pop(value.name)))
        else:
            dtypes[value.name] = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name
    return shapes, dtypes


def _given_shape(name: str, dims, declared) -> list:
    """``input_shapes[name]`` as a list of ints >= 1 of the declared rank; :class:`InputShapeError` otherwise."""
    shown = list(dims) if isinstance(dims, (list, tuple)) else dims
    cli_dims = ",".join(map(str, dims)) if isinstance(dims, (list, tuple)) else str(dims)
    try:
        if not isinstance(dims, (list, tuple)):
            raise TypeError
        values = []
        for d in dims:
            if isinstance(d, bool):
                raise TypeError
            values.append(operator.index(d))  # ints and NumPy ints; not '8', 8.0 or None
    except TypeError:
        raise InputShapeError(f"input_shapes[{name!r}] must be a list of ints, not {shown!r}",
                              cli=f"--input-shape {name}={cli_dims}: every dimension must be an integer") from None
    bad = [d for d in values if d < 1]
    if bad:
        raise InputShapeError(
            f"input_shapes[{name!r}] = {values}: every dimension must be >= 1 (static shapes only; "
            f"{bad[0]} is not a size)",
            cli=f"--input-shape {name}={cli_dims}: every dimension must be an integer >= 1 (static shapes only; "
                f"{bad[0]} is not a size)")
    if declared is not None and len(values) != len(declared):
        shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in declared]
        where = f"the ONNX model declares input {name!r} with rank {len(declared)} ({shape})"
        raise InputShapeError(f"input_shapes[{name!r}] = {values} has rank {len(values)}, but {where}",
                              cli=f"--input-shape {name}={cli_dims} has rank {len(values)}, but {where}")
    return values


def load_onnx_file(path):
    """The ``onnx.ModelProto`` in the file ``path``, with its external data; :class:`InvalidModelError`
    (one line, naming the file) when it is empty, not ONNX, or its external data is missing."""
    import onnx
    from onnx import external_data_helper

    path = os.fspath(path)
    if os.path.getsize(path) == 0:
        raise InvalidModelError(f"not a valid ONNX model: {path} is empty (0 bytes)")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as error:  # noqa: BLE001 - protobuf DecodeError, RuntimeWarning-as-error, ...
        raise InvalidModelError(f"not a valid ONNX model: {path}: {_first_line(error)}") from None
    base = os.path.dirname(os.path.abspath(path))
    for tensor in external_data_helper._get_all_tensors(model):
        if not external_data_helper.uses_external_data(tensor):
            continue
        location = external_data_helper.ExternalDataInfo(tensor).location
        file = os.path.join(base, location)
        if not os.path.isfile(file):
            raise InvalidModelError(f"{path}: tensor {tensor.name!r} is stored in the external-data file {file!r}, "
                                    "which does not exist (it must be next to the .onnx file)")
    try:
        external_data_helper.load_external_data_for_model(model, base)
    except Exception as error:  # noqa: BLE001 - onnx ValidationError (path outside the folder), OSError
        raise InvalidModelError(f"{path}: cannot read its external data: {_first_line(error)}") from None
    return model


def check_onnx_model(model, where: str = "the onnx.ModelProto") -> None:
    """:class:`InvalidModelError` for a model without a graph, without inputs or without outputs."""
    if not model.HasField("graph"):
        raise InvalidModelError(f"not a valid ONNX model: {where} has no graph")
    initializers = {init.name for init in model.graph.initializer}
    if not [v for v in model.graph.input if v.name not in initializers]:
        raise InvalidModelError(f"{where}: the ONNX graph has no inputs; cwm.compile needs a model with at "
                                "least one input")
    if not model.graph.output:
        raise InvalidModelError(f"{where}: the ONNX graph has no outputs")


def _first_line(error) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _import_onnx(model, options) -> Imported:
    import onnx

    from cwm.frontends.importers import from_onnx_model

    where = "the onnx.ModelProto"
    if not isinstance(model, onnx.ModelProto):
        where = os.fspath(model)
        model = load_onnx_file(model)
    check_onnx_model(model, where)
    shapes, dtypes = _onnx_inputs(model, options)
    mod = from_onnx_model(model, shapes, dtypes, keep_params_in_input=True)
    return _finish(mod, "onnx", [out.name for out in model.graph.output])


# ---------------------------------------------------------------------------------- torch
def _import_torch_module(module, options) -> Imported:
    import torch

    from cwm.frontends.importers import from_exported_program

    example = options.example_inputs
    if example is None:
        raise CompileError("compiling a torch.nn.Module needs example inputs: pass example_inputs=(tensor, ...) "
                           "(their shapes and dtypes become the compiled model's signature)")
    if isinstance(example, torch.Tensor):
        example = (example,)
    example = tuple(torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x for x in example)
    with torch.no_grad():
        program = torch.export.export(module.eval(), example)
    return _finish(from_exported_program(program, keep_params_as_input=True), "torch",
                   _torch_output_names(program))


def _torch_output_names(program) -> list:
    try:
        return [str(name) for name in program.graph_signature.user_outputs]
    except Exception:  # noqa: BLE001 - names are cosmetic
        return []


# ---------------------------------------------------------------------------------- relax
def _import_relax(mod) -> Imported:
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        raise CompileError("a Relax IRModule given to cwm.compile must have a 'main' function")
    return _finish(mod, "relax", [])


# --------------------------------------------------------------------------------- common
def _finish(mod, frontend: str, output_names: list) -> Imported:
    """Detach the weights of ``mod`` and read ``main``'s signature."""
    from tvm import relax

    main = mod["main"]
    num_input = main.attrs.get("num_input") if main.attrs is not None else None
    num_input = len(main.params) if num_input is None else int(num_input)
    params: dict = {}
    if num_input < len(main.params):
        mod, detached = relax.frontend.detach_params(mod)
        values = list(detached.get("main", []))
        weight_vars = list(main.params[num_input:])
        if len(values) != len(weight_vars):
            raise CompileError(f"'main' takes {len(weight_vars)} weight parameter(s) after its {num_input} "
                               f"input(s) but the module carries {len(values)} value(s) for them (func attr 'params')")
        for var, value in zip(weight_vars, values):
            name = _unique(str(var.name), params)
            params[name] = value.numpy()
        main = mod["main"]
    inputs = [spec_of_type(str(p.name), p.ty) for p in main.params[:num_input]]
    outputs = _output_specs(main.ret_ty, output_names)
    return Imported(_identifier_params(mod), inputs, outputs, params, frontend)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _identifier_params(mod):
    """``mod`` with every parameter of ``main`` named as a C identifier (``0_weight`` -> ``p_0_weight``).

    The names reach TIR buffer names and from there generated CUDA C, where a name starting
    with a digit does not compile (ONNX initializers of ``nn.Sequential`` are ``0.weight`` ...).
    The signature keeps the original names; only the IR variables are renamed.
    """
    from tvm import relax

    main = mod["main"]
    taken = {str(p.name) for p in main.params}
    renames = {}
    for param in main.params:
        name = str(param.name)
        if _IDENTIFIER.match(name):
            continue
        new = _unique("p_" + re.sub(r"\W", "_", name), taken)
        taken.add(new)
        renames[param] = relax.Var(new, param.ty)
    if not renames:
        return mod
    bound = main.bind_params(dict(renames))
    params = [renames.get(p, p) for p in main.params]
    func = relax.Function(params, bound.body, bound.ret_ty, main.is_pure, main.attrs, main.span)
    import tvm

    functions = {gv: (func if gv.name_hint == "main" else f) for gv, f in mod.functions_items()}
    return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


def _unique(name: str, taken) -> str:
    if name not in taken:
        return name
    index = 1
    while f"{name}_{index}" in taken:
        index += 1
    return f"{name}_{index}"


def _output_specs(ret_ty, names: list) -> list:
    fields = getattr(ret_ty, "fields", None)
    types = list(fields) if fields is not None else [ret_ty]
    if len(names) != len(types):
        names = [f"output{i}" for i in range(len(types))] if len(types) > 1 else ["output"]
    specs = []
    for name, ty in zip(names, types):
        if getattr(ty, "fields", None) is not None:
            raise CompileError(f"output {name!r} is a nested tuple; cwm.compile supports tensors and tuples of tensors")
        specs.append(spec_of_type(name, ty))
    return specs


__all__ = ["Imported", "import_model", "kind_of", "TensorSpec"]
