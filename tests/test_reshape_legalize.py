"""cwm.compile's reshape legalization: indices per dimension group, no flat ravel/unravel
(issue #14: BERT's reshape + transpose kernel took 3 ms a call with TVM's)."""
from __future__ import annotations

import numpy as np
import pytest

from cwm.compile.reshape_legalize import dim_groups


@pytest.mark.parametrize("src, dst, expected", [
    ([1, 128, 768], [1, 128, 12, 64], [((0,), (0,)), ((1,), (1,)), ((2,), (2, 3))]),
    ([1, 12, 128, 64], [1, 12, 8192], [((0,), (0,)), ((1,), (1,)), ((2, 3), (2,))]),
    ([4, 6], [2, 3, 4], [((0, 1), (0, 1, 2))]),
    ([6], [2, 3], [((0,), (0, 1))]),
    ([2, 3], [3, 2], [((0, 1), (0, 1))]),
    ([5], [5], [((0,), (0,))]),
    ([1, 512, 1, 1], [1, 512], [((0,), (0,)), ((1,), (1,)), ((2,), ()), ((3,), ())]),  # flatten of a pooled map
    ([512], [1, 512, 1], [((0,), (0, 1)), ((), (2,))]),
    ([2, 0], [0], None),  # zero-size: TVM's own legalization
])
def test_dim_groups(src, dst, expected):
    groups = dim_groups(src, dst)
    got = None if groups is None else [(tuple(a), tuple(b)) for a, b in groups]
    assert got == expected


def _model():
    import torch

    class Reshapes(torch.nn.Module):
        def forward(self, x, y, z):
            heads = x.view(1, 128, 12, 64).permute(0, 2, 1, 3) * 0.125  # attention's split + transpose
            merged = heads.permute(0, 2, 1, 3).reshape(1, 128, 768)
            chain = y.reshape(2, 3, 4).reshape(3, 8).reshape(24).reshape(2, 12) + 1  # across groups
            flat = z.flatten(1).reshape(2, 5, 7, 3).reshape(10, 21)
            mixed = y.reshape(3, 2, 4).transpose(0, 2).reshape(4, 6)
            pooled = z.mean((2, 3), keepdim=True).flatten(1)  # [2, 3, 1, 1] -> [2, 3]: extent-1 dims dropped
            unsqueezed = y.reshape(1, 4, 1, 6, 1) * 2
            return heads, merged, chain, flat, mixed, pooled, unsqueezed

    return Reshapes().eval()


def test_reshapes_match_pytorch_exactly():
    import torch

    import cwm

    x, y, z = torch.randn(1, 128, 768), torch.randn(4, 6), torch.randn(2, 3, 5, 7)
    model = _model()
    compiled = cwm.compile(model, example_inputs=(x, y, z), pipeline="no-tune")
    outputs = compiled(x.numpy(), y.numpy(), z.numpy())
    for i, (got, want) in enumerate(zip(outputs, model(x, y, z))):
        if i == 5:  # a float mean, summed in another order than PyTorch's: float32 rounding only
            np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-6, atol=1e-6)
        else:  # data movement (and exact scalings by powers of two): bit for bit
            np.testing.assert_array_equal(got, want.detach().numpy())


def test_attention_reshape_reads_without_division():
    import torch

    from cwm.compile.api import run_pipeline

    x, y, z = torch.randn(1, 128, 768), torch.randn(4, 6), torch.randn(2, 3, 5, 7)
    state = run_pipeline(_model(), example_inputs=(x, y, z), pipeline="cwm-import,cwm-partition")
    kernels = {gv.name_hint: f for gv, f in state.fused.functions_items() if "transpose" in gv.name_hint}
    split = next(f.script() for name, f in kernels.items() if "multiply" in name)  # x.view(...).permute(...) * s
    load = next(line for line in split.splitlines() if "T_reshape_intermediate[" in line and "= " in line)
    assert "//" not in load and "%" not in load, load
