"""Packed weights on CPU: weights in the layout the tuned kernels read (issue #14).

TVM's own recipe (``relax.pipeline.static_shape_tuning_pipeline(cpu_weight_prepack=True)``):

1. before tuning, ``AttachAttrLayoutFreeBuffers`` marks the weight arguments of every fused
   TIR function as layout-free, so MetaSchedule's ``RewriteLayout`` postprocessor may choose
   their layout (a candidate then starts with a ``TransformLayout`` of the weight);
2. after the database is applied, ``SplitLayoutRewritePreproc`` splits each such function into a
   ``*_weight_prepack`` function and the kernel, ``LiftTransformParams`` moves the prepacking
   into ``main_transform_params`` (joining the weight-only work already lifted there) and
   ``FoldConstant`` folds the prepacking of constants.

TVM leaves ``main_transform_params`` to the caller. cwm runs it once, at compile time
(:func:`transform_weights`): the compiled model and its artifact hold the transformed weights,
so neither a load nor a call transforms anything, and ``model(x)`` stays as it is.
"""
from __future__ import annotations

import numpy as np

#: how the weights reach ``main`` once they are transformed at compile time
TRANSFORMED = "transformed"
#: every mode a compiled model or an artifact may have (:class:`cwm.compile.state.CompileState`)
PARAM_MODES = ("none", "inputs", "lifted", TRANSFORMED)
PREPACK_SUFFIX = "_weight_prepack"


def main_tasks(fused, target) -> list:
    """MetaSchedule's ``ExtractedTask`` list of ``main`` (``main_transform_params`` runs once: not tuned)."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    main_only = tvm.IRModule({gv: f for gv, f in fused.functions_items() if gv.name_hint != "main_transform_params"})
    main_only = relax.transform.DeadCodeElimination(["main"])(main_only)
    return list(ms.relax_integration.extract_tasks(main_only, target))


def layout_free_functions(mod) -> list:
    """Names of the TIR functions with layout-free buffers, sorted."""
    from tvm import tirx

    return sorted(gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)
                  and f.attrs is not None and len(f.attrs.get("layout_free_buffers", [])) > 0)


def layout_free_arguments(mod) -> dict:
    """``{TIR function name: argument positions}`` that are weights (``main``'s parameters after its
    ``num_input`` inputs) or constants at *every* ``call_tir`` of the function in ``main``."""
    import tvm
    from tvm import relax

    main = mod["main"]
    weights = set(_weight_params(main))
    call_tir = tvm.ir.Op.get("relax.call_tir")
    found: dict = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not (isinstance(value, relax.Call) and value.op.same_as(call_tir)):
                continue
            args = value.args[1].fields if isinstance(value.args[1], relax.Tuple) else [value.args[1]]
            free = {i for i, a in enumerate(args) if isinstance(a, tvm.ir.expr.Constant) or a in weights}
            name = value.args[0].name_hint
            found[name] = found[name] & free if name in found else free
    return {name: sorted(free) for name, free in found.items() if free}


def mark_layout_free(mod, target):
    """``mod`` with the weights (and constants) of its fused functions marked layout-free
    (the ``layout_free_buffers`` attribute that ``AttachAttrLayoutFreeBuffers`` sets). Unlike that
    pass, functions keep their names: an argument is marked when it is a weight at every call
    (so no function needs a copy), and the task names of a compile do not change with packing."""
    import tvm
    from tvm import tirx

    marks = layout_free_arguments(mod)
    out = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    for gv, func in mod.functions_items():
        if isinstance(func, tirx.PrimFunc) and marks.get(gv.name_hint):
            out.update_func(gv, func.with_attr("layout_free_buffers", marks[gv.name_hint]))
    return out


def split_and_lift(mod, target):
    """``SplitLayoutRewritePreproc -> LiftTransformParams -> FoldConstant``: the weight layout
    rewrites the tuned schedules chose move out of ``main`` into ``main_transform_params``."""
    import tvm
    from tvm import relax

    with target:
        return tvm.transform.Sequential([relax.transform.SplitLayoutRewritePreproc(),
                                         relax.transform.LiftTransformParams(),
                                         relax.transform.FoldConstant()])(mod)


def prepack_functions(mod) -> list:
    """Names of the ``*_weight_prepack`` functions (one per packed kernel), sorted."""
    return sorted(gv.name_hint for gv, _ in mod.functions_items() if gv.name_hint.endswith(PREPACK_SUFFIX))


def main_weight_names(mod) -> list:
    """Names for ``main``'s weight parameters (after its ``num_input`` inputs):
    ``transformed.<position>.<Relax name>``, unique, and saying these are not the source weights."""
    return [f"transformed.{i}.{var.name}" for i, var in enumerate(_weight_params(mod["main"]))]


def _weight_params(main) -> list:
    """``main``'s parameters after its ``num_input`` inputs (none without the attribute)."""
    if main.attrs is None or "num_input" not in main.attrs:
        return []
    return list(main.params[int(main.attrs["num_input"]):])


def transform_weights(executable, mod, params: dict) -> dict:
    """``{name: array}`` of ``main_transform_params(params)``, run once on the CPU, named after
    ``main``'s weight parameters (in ``main``'s order)."""
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(executable, tvm.cpu())
    weights = [tvm.runtime.tensor(np.asarray(v, order="C"), tvm.cpu()) for v in params.values()]
    out = list(vm["main_transform_params"](weights))
    names = main_weight_names(mod)
    if len(names) != len(out):
        raise RuntimeError(f"main_transform_params gave {len(out)} weights, main takes {len(names)}")
    return {name: w.numpy() for name, w in zip(names, out)}
