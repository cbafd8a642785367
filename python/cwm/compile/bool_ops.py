"""Comparisons and arithmetic on ``bool`` tensors, rewritten so TVM's LLVM codegen can build them.

The body of the ``cwm-bool-ops`` pass. TVM 0.27's LLVM code generator has no integer path for
``bool`` (``i1``) operands: ``==`` on two bool tensors becomes ``fcmp oeq i1`` (invalid IR), and
``<``, ``+``, ``*``, ``max``, ``min`` and ``cumsum`` stop at ``Check failed:
(t.MatchesCode(DLDataTypeCode::kDLFloat))`` in ``CodeGenLLVM::CreateAdd`` & co. The causal-mask
code that LLaMA, Qwen2, Mistral and most decoders of ``transformers`` share compares bool
tensors (``eq`` of two ``index``-ed masks), so without this pass those models do not build, in
plain TVM either (``tests/test_bool_ops.py::test_upstream_bool_codegen_still_fails`` keeps that
checked, so the pass can be dropped once TVM fixes it).

:func:`rewrite_bool_ops` rewrites, before legalization, every Relax call whose tensor operands
are all ``bool``:

===========================================  =================================================
call                                         becomes
===========================================  =================================================
``equal``, ``not_equal``, ``less``,          the same comparison of the operands cast to
``less_equal``, ``greater``,                 ``uint8`` (``False`` = 0 < ``True`` = 1)
``greater_equal``
``add``, ``subtract``, ``multiply``,         the op on ``int32`` operands, cast back to
``maximum``, ``minimum``                     ``bool`` (non-zero is ``True``): ``+`` and ``max``
                                             are *or*, ``*`` and ``min`` are *and*, as in
                                             PyTorch and numpy
``max``, ``min`` (reductions)                the reduction over ``uint8``, cast back to ``bool``
``cumsum`` without a dtype                   ``cumsum`` over ``int64`` with ``dtype=int64``:
                                             PyTorch promotes a bool cumsum to int64 (the count
                                             of ``True``), TVM's torch importer drops that
===========================================  =================================================

``bitwise_*``, ``logical_*``, ``where`` and casts already build and are left alone; so are
division and ``power`` on bool, which PyTorch promotes to float before TVM sees them. A
``cumsum`` whose int64 result a later op cannot take (it wanted the bool) is cast back to
``bool`` instead, with a warning.
"""
from __future__ import annotations

from collections import Counter

COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
ARITHMETIC = ("add", "subtract", "multiply", "maximum", "minimum")
REDUCTIONS = ("max", "min")
#: every relax op the pass rewrites (``relax.<name>``)
REWRITTEN = COMPARISONS + ARITHMETIC + REDUCTIONS + ("cumsum",)


def _dtype(expr):
    """The dtype of a Relax tensor expression, or None (a tuple, a shape, a prim value)."""
    ty = getattr(expr, "ty", None)
    dtype = getattr(ty, "dtype", None)
    return None if dtype is None else str(dtype)


def _mutator_class():
    from tvm import relax
    from tvm.relax import PyExprMutator, expr_functor

    @expr_functor.mutator
    class BoolOps(PyExprMutator):
        def __init__(self, mod, promote_cumsum: bool):
            super().__init__(mod)
            self.promote_cumsum = promote_cumsum
            self.counts = Counter()

        def visit_call_(self, call):
            call = super().visit_call_(call)
            op = getattr(call.op, "name", "")
            if not op.startswith("relax.") or op[len("relax."):] not in REWRITTEN:
                return call
            tensors = [arg for arg in call.args if _dtype(arg) is not None]
            if not tensors or any(_dtype(arg) != "bool" for arg in tensors):
                return call
            name = op[len("relax."):]
            rewritten = self._rewrite(name, call)
            if rewritten is not None:
                self.counts[op] += 1
                return rewritten
            return call

        def _cast(self, expr, dtype):
            return self.builder_.emit(relax.op.astype(expr, dtype))

        def _rewrite(self, name, call):
            ops = relax.op
            if name in COMPARISONS:
                a, b = (self._cast(arg, "uint8") for arg in call.args)
                return getattr(ops, name)(a, b)
            if name in ARITHMETIC:
                a, b = (self._cast(arg, "int32") for arg in call.args)
                return ops.astype(self.builder_.emit(getattr(ops, name)(a, b)), "bool")
            if name in REDUCTIONS:
                x = self._cast(call.args[0], "uint8")
                reduced = getattr(ops, name)(x, axis=call.attrs.axis, keepdims=bool(call.attrs.keepdims))
                return ops.astype(self.builder_.emit(reduced), "bool")
            # cumsum: only the bool-result form (an explicit dtype already builds)
            if _dtype(call) != "bool":
                return None
            x = self._cast(call.args[0], "int64")
            axis = None if call.attrs.axis is None else int(call.attrs.axis)
            summed = ops.cumsum(x, axis=axis, dtype="int64", exclusive=bool(call.attrs.exclusive))
            if self.promote_cumsum:
                return summed
            return ops.astype(self.builder_.emit(summed), "bool")

    return BoolOps


def rewrite_bool_ops(mod):
    """``(rewritten module, Counter of rewritten ops by relax op name)``; see the module docstring."""
    import warnings

    try:
        return _rewrite(mod, promote_cumsum=True)
    except Exception as error:  # noqa: BLE001 - an int64 cumsum fed an op that needs the bool
        out, counts = _rewrite(mod, promote_cumsum=False)
        if counts.get("relax.cumsum"):
            warnings.warn("cwm-bool-ops: a bool cumsum feeds an op that needs a bool, so its count is cast back "
                          f"to bool (PyTorch keeps the int64 count): {type(error).__name__}: "
                          f"{str(error).splitlines()[0][:200]}", RuntimeWarning, stacklevel=2)
        return out, counts


def _rewrite(mod, promote_cumsum: bool):
    from cwm.compile.relax_rewrite import rewrite_relax_functions

    out, mutator = rewrite_relax_functions(_mutator_class()(mod, promote_cumsum), mod)
    return out, mutator.counts
