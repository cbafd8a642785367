"""Small integer powers as multiplications: the body of the ``cwm-int-power`` pass.

TVM lowers ``relax.power(x, 3.0)`` to a call of libm's ``powf`` per element (LLVM cannot
vectorize it, and TVM warns "Detected pow(x, y) where y >= 3"). GPT-2's GELU is
``0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))``, so its element-wise kernel spent 4.7 ms a layer
on 128 × 3072 elements here, 27% of the network (bench/results/e2e_v3_t64.json, the artifact's
report): more than any matmul.

:func:`rewrite_int_powers` rewrites, before legalization, every float ``relax.power(x, c)``
whose exponent ``c`` is a scalar constant equal to 1, 2, 3 or 4 into ``x``, ``x·x``,
``(x·x)·x`` or ``(x·x)·(x·x)``. It stays element-wise, so fusion and task names stay the same
except for the op names. Values: ``x·x`` is ``pow(x, 2)`` bit for bit (one correctly rounded
product); the cube and the fourth power round twice, so they differ from ``powf`` by at most
one unit in the last place or so (``tests/test_int_power.py`` measures it). NaN and infinities
come out as ``powf`` gives them (a product of NaN is NaN, of ±inf is ±inf with the sign of the
power). Other exponents, tensor exponents and integer dtypes are left alone.
"""
from __future__ import annotations

from collections import Counter

#: exponents rewritten, as exact floats
EXPONENTS = (1.0, 2.0, 3.0, 4.0)


def _scalar_constant(expr):
    """The float value of a one-element float constant (``R.const`` or an importer's), else None."""
    import tvm

    if not isinstance(expr, tvm.ir.expr.Constant):
        return None
    data = getattr(expr, "data", None)
    data = getattr(expr, "value", None) if data is None else data
    if not hasattr(data, "numpy"):
        return None
    value = data.numpy()
    if value.size != 1 or value.dtype.kind != "f":
        return None
    return float(value.reshape(()))


def _type(expr):
    return getattr(expr, "ty", None) or getattr(expr, "struct_info", None)


def _float_dtype(expr):
    dtype = str(getattr(_type(expr), "dtype", ""))
    return dtype if dtype.startswith(("float", "bfloat")) else None


def _mutator_class():
    import tvm_ffi
    from tvm import relax
    from tvm.relax import PyExprMutator, expr_functor

    @expr_functor.mutator
    class IntPowers(PyExprMutator):
        def __init__(self, mod):
            super().__init__(mod)
            self.counts = Counter()

        def visit_call_(self, call):
            call = super().visit_call_(call)
            if getattr(call.op, "name", "") != "relax.power" or len(call.args) != 2:
                return call
            x, exponent = call.args
            c = _scalar_constant(exponent)
            if c not in EXPONENTS or _float_dtype(x) is None or _float_dtype(call) != _float_dtype(x):
                return call
            out_shape, x_shape = getattr(_type(call), "shape", None), getattr(_type(x), "shape", None)
            if out_shape is None or x_shape is None or not tvm_ffi.structural_equal(out_shape, x_shape):
                return call  # the constant broadcasts x to another shape: leave it to power
            self.counts[int(c)] += 1
            if c == 1.0:
                return x
            mul = relax.op.multiply
            if c == 2.0:
                return mul(x, x)
            square = self.builder_.emit(mul(x, x))
            if c == 3.0:
                return mul(square, x)
            return mul(square, square)

    return IntPowers


def rewrite_int_powers(mod):
    """``(rewritten module, Counter of rewritten powers by exponent)``; see the module docstring."""
    from cwm.compile.relax_rewrite import rewrite_relax_functions

    out, rewriter = rewrite_relax_functions(_mutator_class()(mod), mod)
    return out, rewriter.counts
