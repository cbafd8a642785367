"""Does the imported Relax module compute what PyTorch computes?

The module is compiled **untuned** (``tvm.compile`` with the default Relax pipeline) for
the host llvm target (:func:`cwm.tuning.host_target`), run once on the Relax VM, and
compared with the eval-mode PyTorch module on the same random input
(:meth:`NetworkSpec.make_input`). The error reported is

    max |tvm - torch| / max |torch|

i.e. the largest absolute deviation relative to the output's scale (an elementwise ratio
would blow up on outputs near zero).
"""
from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class NumericsResult:
    """The error and what each step cost (seconds)."""

    max_rel_err: float
    import_s: float
    compile_s: float
    run_s: float


def max_rel_err(actual, expected) -> float:
    """``max|actual - expected| / max|expected|`` (float64; 0/0 counts as 0)."""
    import numpy as np

    actual, expected = np.asarray(actual, "float64"), np.asarray(expected, "float64")
    if actual.shape != expected.shape:
        raise ValueError(f"shape mismatch: tvm {actual.shape} vs torch {expected.shape}")
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    diff = float(np.max(np.abs(actual - expected))) if expected.size else 0.0
    return diff / scale if scale > 0 else diff


def run_relax(mod, inputs, target=None):
    """Compile ``mod`` untuned for ``target`` (default: host llvm), run ``main`` once.

    Returns ``(first output as numpy, compile seconds, run seconds)``.
    """
    import tvm
    from tvm import relax

    from cwm.target_spec import host_target

    target = target or host_target()
    start = time.perf_counter()
    executable = tvm.compile(mod, target=target)
    compile_s = time.perf_counter() - start
    vm = relax.VirtualMachine(executable, tvm.cpu())
    start = time.perf_counter()
    out = vm["main"](*[tvm.runtime.tensor(x) for x in inputs])
    run_s = time.perf_counter() - start
    while not hasattr(out, "numpy"):  # a tuple (Array) of outputs: the first one
        out = out[0]
    return out.numpy(), compile_s, run_s


def torch_reference(module, inputs):
    """The first output of ``module`` on ``inputs`` (torch tensors) as numpy."""
    import torch

    with torch.no_grad():
        out = module(*inputs)
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out.numpy()


def check(name: str, via: str = "onnx", small: bool = False, cache_dir: str | None = None,
          target=None) -> NumericsResult:
    """Import ``name`` through ``via``, run it untuned, compare with PyTorch (full result)."""
    from cwm.frontends import importers, zoo

    start = time.perf_counter()
    mod = importers.import_network(name, via, cache_dir=cache_dir, small=small)
    import_s = time.perf_counter() - start
    module, inputs = zoo.build_torch(name, small)
    expected = torch_reference(module, inputs)
    actual, compile_s, run_s = run_relax(mod, [x.numpy() for x in inputs], target)
    return NumericsResult(max_rel_err(actual, expected), import_s, compile_s, run_s)


def check_numerics(name: str, via: str = "onnx", small: bool = False,
                   cache_dir: str | None = None) -> float:
    """Max relative error of the Relax module of ``name`` (imported via ``"onnx"`` or ``"torch"``)
    against PyTorch, see the module docstring."""
    return check(name, via, small=small, cache_dir=cache_dir).max_rel_err
