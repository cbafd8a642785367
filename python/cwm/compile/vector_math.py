"""The body of the ``cwm-vector-math`` pass: float32 exp / tanh / erf as vectorizable arithmetic.

Before legalization, every float32 ``relax.exp``, ``relax.tanh``, ``relax.erf``,
``relax.sigmoid``, ``relax.nn.silu``, ``relax.nn.gelu``, ``relax.nn.gelu_tanh`` and
``relax.nn.softmax`` becomes a ``call_te`` whose compute applies the formulas of
:mod:`cwm.compile.vector_math_formulas` in place of libm's per-element calls. The structure is
what TVM's legalization would give (one element-wise stage; softmax's four stages max, exp, sum,
normalize), so fusion is unchanged. Other dtypes, and ops this list does not name, are left to
TVM. CPU (llvm) targets only: CUDA has its own fast intrinsics.
"""
from __future__ import annotations

import math
from collections import Counter

from cwm.compile import vector_math_formulas as formulas

#: op -> the name of the PrimFunc it becomes (the names TVM's legalization gives)
OPS = {"relax.exp": "exp", "relax.tanh": "tir_tanh", "relax.erf": "erf", "relax.sigmoid": "sigmoid",
       "relax.nn.silu": "silu", "relax.nn.gelu": "gelu", "relax.nn.gelu_tanh": "gelu_tanh",
       "relax.nn.softmax": "softmax"}


def _element(op_name):
    """``f(x) -> PrimExpr`` for an element-wise op."""
    o = formulas.TirOps()
    half, one = o.c(0.5), o.c(1.0)
    if op_name == "relax.exp":
        return lambda x: formulas.exp(o, x)
    if op_name == "relax.tanh":
        return lambda x: formulas.tanh(o, x)
    if op_name == "relax.erf":
        return lambda x: formulas.erf(o, x)
    if op_name == "relax.sigmoid":
        return lambda x: formulas.sigmoid(o, x)
    if op_name == "relax.nn.silu":
        return lambda x: x * formulas.sigmoid(o, x)
    if op_name == "relax.nn.gelu":  # TVM: x (0.5 + erf(x / sqrt 2) 0.5)
        return lambda x: x * (half + formulas.erf(o, x * o.c(math.sqrt(0.5))) * half)
    if op_name == "relax.nn.gelu_tanh":  # TVM: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        return lambda x: half * x * (one + formulas.tanh(o, o.c(math.sqrt(2.0 / math.pi)) * (x + o.c(0.044715) * x * x * x)))
    raise KeyError(op_name)


def _softmax_te(data, axis: int):
    """softmax over ``axis`` in TVM's four stages, with :func:`formulas.exp`."""
    from tvm import te

    o = formulas.TirOps()
    shape = list(data.shape)
    axis = axis % len(shape)
    reduced = shape[:axis] + shape[axis + 1:]

    def full(index, k):
        return tuple(index[:axis]) + (k,) + tuple(index[axis:])

    def part(index):
        return tuple(index[:axis]) + tuple(index[axis + 1:])

    k1 = te.reduce_axis((0, shape[axis]), name="k")
    maxelem = te.compute(reduced, lambda *i: te.max(data[full(i, k1)], axis=k1), name="T_softmax_maxelem")
    exps = te.compute(shape, lambda *i: formulas.exp(o, data[i] - maxelem[part(i)]), name="T_softmax_exp")
    k2 = te.reduce_axis((0, shape[axis]), name="k")
    expsum = te.compute(reduced, lambda *i: te.sum(exps[full(i, k2)], axis=k2), name="T_softmax_expsum")
    return te.compute(shape, lambda *i: exps[i] / expsum[part(i)], name="T_softmax_norm")


def _mutator_class():
    from tvm import te
    from tvm.relax import PyExprMutator, expr_functor

    @expr_functor.mutator
    class VectorMath(PyExprMutator):
        def __init__(self, mod):
            super().__init__(mod)
            self.counts = Counter()

        def visit_call_(self, call):
            call = super().visit_call_(call)
            name = getattr(call.op, "name", "")
            if name not in OPS or len(call.args) != 1 or not _is_float32(call.args[0]) or not _is_float32(call):
                return call
            self.counts[name] += 1
            if name == "relax.nn.softmax":
                axis = int(call.attrs.axis)
                return self.builder_.call_te(lambda x: _softmax_te(x, axis), call.args[0], primfunc_name_hint=OPS[name])
            element = _element(name)
            te_func = lambda x: te.compute(x.shape, lambda *i: element(x[i]), name="T_" + OPS[name])  # noqa: E731
            return self.builder_.call_te(te_func, call.args[0], primfunc_name_hint=OPS[name])

    return VectorMath


def _is_float32(expr) -> bool:
    ty = getattr(expr, "ty", None) or getattr(expr, "struct_info", None)
    return str(getattr(ty, "dtype", "")) == "float32" and getattr(ty, "shape", None) is not None


def rewrite_vector_math(mod):
    """``(rewritten module, Counter of rewritten ops)``; see the module docstring."""
    from cwm.compile.relax_rewrite import rewrite_relax_functions

    out, rewriter = rewrite_relax_functions(_mutator_class()(mod), mod)
    return out, rewriter.counts
