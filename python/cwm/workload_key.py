"""Workload identity: the key of a TIR workload is the structural hash of its module.

One definition for the whole package: the dataset names its tasks by it
(:func:`cwm.dataset.store.register_task`), task extraction deduplicates kernels by it
(:mod:`cwm.frontends.tasks`), the world model caches ``E(s_0)`` and the CWM cost model keeps
its per-task state under it, and ``cwm.compile``'s resumable tuning records it per task. The
same kernel found in two networks, whatever name each network's fusion gave it, has the same
key. Imports only ``tvm_ffi`` (inside the function), so every layer may use it.
"""
from __future__ import annotations


def task_key(mod) -> str:
    """Hex structural hash (16 digits) of a TIR ``IRModule``; equal modules get equal keys."""
    import tvm_ffi

    return f"{tvm_ffi.structural_hash(mod) & 0xFFFFFFFFFFFFFFFF:016x}"
