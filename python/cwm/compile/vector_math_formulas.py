"""exp, tanh and erf in float32 as vectorizable arithmetic: the formulas of ``cwm-vector-math``.

TVM lowers ``exp``, ``tanh`` and ``erf`` on CPU to libm calls per element (``tanh`` as two
``exp`` calls and a division), which LLVM cannot vectorize: BERT-base's softmax took 0.34 ms a
layer against ONNX Runtime's 0.05 ms, and GPT-2's tanh GELU 2.6 ms a layer, as long as its
768 x 3072 matmul (the artifacts' reports, ``bench/results/e2e_*``). ONNX Runtime computes them
with vectorized polynomials (MLAS). These are such polynomials, written once against a small
set of operations (``ops``), so that the same code is

* the NumPy reference (:data:`NUMPY`, float32 arrays): the spec the tests measure against
  float64 math, and against which the compiled kernels are checked;
* the TIR expression that ``cwm-vector-math`` puts in the kernels (:class:`TirOps`).

Only compares, selects, ``floor``, ``+ - * /`` and one integer shift are used, so TVM
vectorizes them. Accuracy (``tests/test_vector_math.py`` measures it over float32 grids):

* ``exp``: Cody-Waite range reduction with ln 2 split in two, Cephes' degree-5 polynomial, and
  the scale ``2^n`` applied as two factors so that results that underflow to denormals or to 0,
  and those that overflow to inf, come out as IEEE multiplication rounds them. Within a few ulp
  of the true value on the normal range.
* ``tanh`` and ``erf``: Eigen's rational approximations (also TVM's ``fast_tanh`` /
  ``fast_erf``), ``x·P(x²)/Q(x²)`` on ``[-9, 9]`` and ``[-4, 4]``, ±1 outside. Odd, so small
  arguments keep their relative accuracy.

NaN stays NaN and ±inf gives what libm gives. The clamps are written with ordered compares and
selects that pass a NaN operand through (the forms of :mod:`cwm.compile.keep_nan`: TVM's
simplifier folds ``x != x``, and ``isnan`` scalarizes the loop), so NaN flows through the
arithmetic; only ``exp``'s integer part comes from a clamp that maps NaN to a bound, because a
float-to-int conversion of NaN is undefined. There are no ``Let`` bindings: MetaSchedule's FLOP
estimate rejects them, and a value used twice is the same expression object twice, which TVM
keeps shared and LLVM computes once.
"""
from __future__ import annotations

import numpy as np

LOG2E = 1.44269504088896341
LN2_HI = 0.693359375  # 355/512: n * LN2_HI is exact for the n used here
LN2_LO = -2.12194440e-4
#: Cephes expf: exp(r) = 1 + r + r² (c0 + r (c1 + ...)) on |r| <= ln2 / 2, highest degree first
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
            5.0000001201e-1)
#: exp's argument is clamped to [EXP_LOW, EXP_HIGH] before the reduction: below, exp underflows
#: to 0; above, it overflows to inf
EXP_LOW, EXP_HIGH = -104.0, 89.0

#: Eigen's float tanh: x P(x²) / Q(x²), coefficients of x^13 ... x^1 and of x^6 ... x^0
TANH_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
          1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
TANH_CLAMP = 9.0
#: Eigen's float erf, x^13 ... x^1 and x^8 ... x^0
ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
         -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
         -1.42647390514189e-02)
ERF_CLAMP = 4.0


class NumpyOps:
    """The operations on float32 NumPy arrays (the reference)."""

    def c(self, value):
        return np.float32(value)

    def select(self, cond, a, b):
        return np.where(cond, a, b).astype(np.float32)

    def floor(self, x):
        return np.floor(x)

    def pow2(self, k):
        """2**k for integral float32 ``k`` in [-126, 127], built from its exponent bits."""
        return ((k.astype(np.int32) + 127) << 23).astype(np.int32).view(np.float32)


class TirOps:
    """The same operations as TIR expressions (float32 scalars), for a ``te.compute`` body."""

    def c(self, value):
        from tvm import tirx

        return tirx.const(value, "float32")

    def select(self, cond, a, b):
        from tvm import tirx

        return tirx.Select(cond, a, b)

    def floor(self, x):
        from tvm import tirx

        return tirx.floor(x)

    def pow2(self, k):
        from tvm import tirx

        bits = tirx.shift_left(tirx.Cast("int32", k) + tirx.const(127, "int32"), tirx.const(23, "int32"))
        return tirx.reinterpret("float32", bits)


NUMPY = NumpyOps()


def _horner(o, coefficients, x):
    acc = o.c(coefficients[0])
    for c in coefficients[1:]:
        acc = acc * x + o.c(c)
    return acc


def _clamp_keep_nan(o, x, low, high):
    """``x`` in [low, high]; NaN stays NaN (both compares are false for it)."""
    return o.select(x >= o.c(high), o.c(high), o.select(x <= o.c(low), o.c(low), x))


def _clamp_no_nan(o, x, low, high):
    """``x`` in [low, high]; NaN becomes ``high``."""
    return o.select(x <= o.c(high), o.select(x >= o.c(low), x, o.c(low)), o.c(high))


def exp(o, x):
    """float32 ``exp(x)``."""
    n = o.floor(_clamp_no_nan(o, x, EXP_LOW, EXP_HIGH) * o.c(LOG2E) + o.c(0.5))
    r = _clamp_keep_nan(o, x, EXP_LOW, EXP_HIGH) - n * o.c(LN2_HI) - n * o.c(LN2_LO)
    y = _horner(o, EXP_POLY, r) * (r * r) + r + o.c(1.0)
    half = o.floor(n * o.c(0.5))
    # 2^n as two factors, each a normal float: y 2^n underflows and overflows as IEEE rounds it
    return y * o.pow2(half) * o.pow2(n - half)


def _odd_rational(o, x, p, q, bound):
    xc = _clamp_keep_nan(o, x, -bound, bound)
    x2 = xc * xc
    return xc * _horner(o, p, x2) / _horner(o, q, x2)


def tanh(o, x):
    """float32 ``tanh(x)``."""
    return _odd_rational(o, x, TANH_P, TANH_Q, TANH_CLAMP)


def erf(o, x):
    """float32 ``erf(x)``."""
    return _odd_rational(o, x, ERF_P, ERF_Q, ERF_CLAMP)


def sigmoid(o, x):
    """float32 ``1 / (1 + exp(-x))``, as TVM's legalization writes it."""
    return o.c(1.0) / (o.c(1.0) + exp(o, o.c(0.0) - x))
