"""Targets to tune for: the host CPU with its real ``mcpu``, or a fully described GPU.

Why not plain ``"llvm"``: TVM's default llvm target has no ``mcpu`` and LLVM then emits
generic x86-64 code (no AVX2/AVX-512 tuning); the best tuned 256^3 matmul was 2.4x slower
(958 us vs 402 us on a 2-vCPU EPYC) than with ``mcpu=znver3``.

Why not plain ``"cuda"``: MetaSchedule's GPU rules read ``max_threads_per_block``,
``max_shared_memory_per_block``, ``thread_warp_size`` ...; ``Target("cuda")`` lacks them and
design-space generation fails (``max_threads_per_block.has_value()``). A registered tag
carries them all, so ``"cuda"`` resolves to :data:`DEFAULT_CUDA_TAG`. Pass a dict or a
``Target`` to describe another GPU.
"""
from __future__ import annotations

import os

#: The GPU that ``resolve_target("cuda")`` describes (sm_89, 1024 threads/block, 48 KiB smem).
DEFAULT_CUDA_TAG = "nvidia/geforce-rtx-4090"

KNOWN_KINDS = ("llvm", "cuda")


def host_target(num_cores: int | None = None):
    """An llvm ``Target`` for this machine: ``num-cores`` and ``mcpu`` set (e.g. znver3)."""
    import tvm

    cores = int(num_cores or os.cpu_count() or 1)
    return tvm.target.Target({"kind": "llvm", "num-cores": cores,
                              "mcpu": tvm.target.codegen.llvm_get_system_cpu()})


def resolve_target(spec="llvm"):
    """Turn a target spec into a ``tvm.target.Target``.

    ``"llvm"`` -> :func:`host_target`; ``"cuda"`` -> ``Target(DEFAULT_CUDA_TAG)``; a dict ->
    ``Target(dict)`` (taken as given); a ``Target`` -> itself. Anything else raises
    ``ValueError`` (``TypeError`` for a value that is not a str, dict or Target).
    """
    import tvm

    if isinstance(spec, tvm.target.Target):
        return spec
    if isinstance(spec, dict):
        try:
            return tvm.target.Target(spec)
        except Exception as error:  # TVM raises ValueError or its own errors
            raise ValueError(f"invalid target dict {spec!r}: {error}") from None
    if isinstance(spec, str):
        if spec == "llvm":
            return host_target()
        if spec == "cuda":
            return tvm.target.Target(DEFAULT_CUDA_TAG)
        raise ValueError(f"unknown target {spec!r}: use one of {list(KNOWN_KINDS)}, "
                         "a dict such as {'kind': 'llvm', 'mcpu': ...}, or a tvm Target")
    raise TypeError(f"target must be a str, dict or tvm.target.Target, not {type(spec).__name__}")
