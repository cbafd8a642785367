"""``PooledBuilder``: MetaSchedule builds in a persistent pool of worker processes, with a timeout.

Why not the stock ``LocalBuilder``: it starts a fresh worker pool on *every* ``build()``
call, and each worker pays TVM's import plus ``import tvm.s_tir.tensor_intrin`` (~8 s here
even with :mod:`cwm.tvm_patch`; ~45 s without, beyond its 30 s timeout).
Why not only the in-process builder: a build cannot be interrupted in a thread, and some
candidates take minutes in LLVM (seen here: a softmax candidate with
``pragma_auto_unroll_max_step=512`` still compiling after 4 min), which stalls tuning.

This builder keeps ``max_workers`` processes alive across calls (start-up paid once), kills a
worker whose build exceeds ``timeout_sec`` (the candidate is reported as a build error, the
worker restarts lazily), and runs builds in true parallel. Workers inherit the TVMScript
patch through ``PYTHONPATH`` (set by ``import cwm``).

The functions a worker runs (``build_fn``) are here too: :func:`build_in_worker` (a ``.tar``, the
default), :func:`build_cuda_in_worker` (cuda: real GPU code, :mod:`cwm.cuda_toolchain`) and
:func:`build_so_in_worker` (a linked ``.so``, :func:`export_so`, for RPC servers without a
compiler; also importable from :mod:`cwm.tuning.rpc`).
"""
from __future__ import annotations


def build_in_worker(mod, target) -> str:
    """Runs in a worker process: lower + codegen ``mod`` and export it as a ``.tar`` of objects."""
    from tvm.s_tir.meta_schedule.builder.local_builder import default_build, default_export

    with target:  # CUDA in nvcc mode reads the arch from Target.current()
        rt_mod = default_build(mod, target, None)
    return default_export(rt_mod)


def build_cuda_in_worker(mod, target) -> str:
    """``build_fn`` for cuda targets: enable the CUDA codegen in the worker
    (:func:`cwm.cuda_toolchain.enable_cuda_codegen`), then build + export like
    :func:`build_in_worker` (a ``.tar`` MetaSchedule artifact holding real GPU code)."""
    if target.kind.name == "cuda":
        from cwm.cuda_toolchain import enable_cuda_codegen

        enable_cuda_codegen(target)
    return build_in_worker(mod, target)


def export_so(rt_mod) -> str:
    """Export a built module as a linked ``.so`` (for RPC servers without a C compiler,
    :mod:`cwm.tuning.rpc`; ``f_export`` of ``InProcessBuilder`` / ``LocalBuilder``)."""
    import os
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="tvm_tmp_mod."), "tvm_tmp_mod.so")
    rt_mod.export_library(path)
    return path


def build_so_in_worker(mod, target) -> str:
    """``build_fn`` producing ``.so`` artifacts (:func:`export_so`; CUDA code generation is
    enabled for cuda targets, see :mod:`cwm.cuda_toolchain`)."""
    from tvm.s_tir.meta_schedule.builder.local_builder import default_build

    if target.kind.name == "cuda":
        from cwm.cuda_toolchain import enable_cuda_codegen

        enable_cuda_codegen(target)
    with target:
        rt_mod = default_build(mod, target, None)
    return export_so(rt_mod)


def _job(build_fn):
    """The callable shipped to a worker: only ``build_fn`` travels (never the builder and its pool)."""
    return lambda job: build_fn(*job)


def _make_class():
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
    from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

    @derived_object
    class PooledBuilder(PyBuilder):
        def __init__(self, max_workers: int = 2, timeout_sec: float = 30.0, build_fn=None):
            super().__init__()
            self.max_workers, self.timeout_sec = max_workers, timeout_sec
            self.build_fn = build_fn or build_in_worker  # (mod, target) -> artifact path, in a worker
            self._pool = None
            self.build_seconds: list[float] = []  # wall time of each build() call

        def build(self, build_inputs):
            import time

            start = time.perf_counter()
            if self._pool is None:
                self._pool = PopenPoolExecutor(max_workers=self.max_workers, timeout=self.timeout_sec)
            results = []
            jobs = [(bi.mod, bi.target) for bi in build_inputs]
            for r in self._pool.map_with_error_catching(_job(self.build_fn), jobs):
                if r.status == StatusKind.COMPLETE:
                    results.append(BuilderResult(r.value, None))
                elif r.status == StatusKind.TIMEOUT:
                    results.append(BuilderResult(None, f"PooledBuilder: timeout, killed after {self.timeout_sec} s"))
                else:
                    results.append(BuilderResult(None, f"PooledBuilder: {r.value}"))
            self.build_seconds.append(time.perf_counter() - start)
            return results

        def close(self):
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    return PooledBuilder


_CLASS = None


def PooledBuilder(max_workers: int = 2, timeout_sec: float = 30.0, build_fn=None):  # noqa: N802 (a factory)
    """A MetaSchedule ``Builder`` backed by a persistent, timeout-guarded process pool.

    ``build_fn(mod, target) -> artifact path`` runs in the workers (default
    :func:`build_in_worker`); it must be picklable (a module-level function).
    """
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_class()
    return _CLASS(max_workers=max_workers, timeout_sec=timeout_sec, build_fn=build_fn)
