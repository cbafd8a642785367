"""The ``cwm-bool-ops`` pass: bool comparisons and arithmetic build, with PyTorch's values.

TVM 0.27's LLVM codegen cannot build ``==``, ``<``, ``+``, ``max`` or ``cumsum`` on bool tensors
(:mod:`cwm.compile.bool_ops`). Every check here is exact: the values are booleans or integer
counts, so there is no rounding to allow for.
"""
from __future__ import annotations

import numpy as np
import pytest

from cwm.compile.bool_ops import ARITHMETIC, COMPARISONS, rewrite_bool_ops
from tests.compile_helpers import relax_module

X = np.array([True, False, True, False])
Y = np.array([True, True, False, False])


def _module(build):
    """A Relax module ``main(a, b) = build(a, b)`` over two bool vectors of 4."""
    return relax_module(build, a=((4,), "bool"), b=((4,), "bool"))


def _run(mod):
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    return vm["main"](tvm.runtime.tensor(X), tvm.runtime.tensor(Y)).numpy()


def test_upstream_bool_codegen_still_fails():
    """TVM itself still cannot build ``bool == bool``. When this test fails, TVM has fixed its
    LLVM codegen: drop ``cwm-bool-ops`` from the pipelines (docs/decisions.md, "bool ops")."""
    import tvm
    from tvm import relax

    mod = _module(relax.op.equal)
    with pytest.raises(tvm.error.InternalError) as info:
        tvm.compile(mod, target="llvm")
    assert "fcmp oeq i1" in str(info.value) or "kDLFloat" in str(info.value)


@pytest.mark.parametrize("name", COMPARISONS + ARITHMETIC)
def test_binary_op_builds_with_numpy_values(name):
    import torch
    from tvm import relax

    mod, counts = rewrite_bool_ops(_module(getattr(relax.op, name)))
    assert counts == {f"relax.{name}": 1}
    got = _run(mod)
    assert got.dtype == np.bool_
    if name == "subtract":  # torch refuses bool subtraction; numpy's ``a != b`` is what int math gives
        expected = X != Y
    else:
        torch_name = {"equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
                      "greater_equal": "ge", "add": "add", "multiply": "mul", "maximum": "maximum",
                      "minimum": "minimum"}[name]
        expected = getattr(torch, torch_name)(torch.from_numpy(X), torch.from_numpy(Y)).numpy()
    np.testing.assert_array_equal(got, expected)


def test_reductions_and_cumsum_take_torch_semantics():
    import torch
    from tvm import relax

    mod, _ = rewrite_bool_ops(_module(lambda a, b: relax.op.max(a)))
    assert bool(_run(mod)) is True
    mod, _ = rewrite_bool_ops(_module(lambda a, b: relax.op.min(a, axis=[0], keepdims=True)))
    np.testing.assert_array_equal(_run(mod), [False])
    # torch.cumsum of bool counts the True values in int64; TVM's torch importer left it bool
    mod, counts = rewrite_bool_ops(_module(lambda a, b: relax.op.cumsum(a, axis=0)))
    assert counts == {"relax.cumsum": 1}
    got = _run(mod)
    expected = torch.cumsum(torch.from_numpy(X), 0).numpy()
    assert got.dtype == expected.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_ops_that_already_build_are_left_alone():
    from tvm import relax

    for build in (relax.op.bitwise_and, relax.op.logical_or, lambda a, b: relax.op.where(a, a, b)):
        mod = _module(build)
        out, counts = rewrite_bool_ops(mod)
        assert not counts
        assert out["main"].script() == mod["main"].script()


def test_float_comparisons_are_left_alone():
    from tvm import relax

    _, counts = rewrite_bool_ops(relax_module(lambda a: relax.op.equal(a, a), a=((4,), "float32")))
    assert not counts


def test_every_named_pipeline_runs_it_before_partition():
    from cwm.compile.pipeline import PIPELINES, resolve

    for name in PIPELINES:
        names = resolve(name).names
        assert "cwm-bool-ops" in names, name
        assert names.index("cwm-import") < names.index("cwm-bool-ops") < names.index("cwm-partition"), name


def test_llama_builds_only_with_the_pass():
    """The tiny LLaMA's causal mask is what fails upstream; with the pass it builds and matches."""
    import torch

    import cwm
    from cwm.frontends.architectures import get

    module, inputs = get("llama").build()
    with pytest.raises(Exception) as info:  # noqa: PT011 - TVM's InternalError or cwm's wrapping of it
        cwm.compile(module, example_inputs=inputs, pipeline="cwm-import,cwm-keep-nan,cwm-partition,cwm-build")
    assert "kDLFloat" in str(info.value) or "fcmp" in str(info.value) or "bool" in str(info.value)
    compiled = cwm.compile(module, example_inputs=inputs, pipeline="no-tune")
    with torch.no_grad():
        expected = module(*inputs).numpy()
    got = np.asarray(compiled(inputs[0].numpy()))
    # float32 matmuls and softmax summed in another order than PyTorch's: 1e-5 relative to the
    # largest logit (measured 2.3e-7)
    assert np.abs(got - expected).max() / np.abs(expected).max() <= 1e-5
