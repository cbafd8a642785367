"""A MetaSchedule builder that compiles candidates in this process, on a thread pool.

Stock ``LocalBuilder`` starts a fresh popen worker pool on *every* ``build()`` call; each
worker pays ``import tvm`` plus ``import tvm.s_tir.tensor_intrin`` (2-4 s + 2-4 s patched,
17-45 s unpatched depending on the CPU, against a 30 s timeout). Here there is no start-up at all, and
``tvm.compile`` releases the GIL, so 2 threads build 16 candidates 1.6x faster than one.
Artifacts are the same ``.tar`` of object files ``LocalBuilder`` writes.

Trade-off: a candidate that crashes the compiler (segfault) takes the tuner down with
it; none did in our runs. Use ``LocalBuilder`` if that matters more than speed.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder


@derived_object
class InProcessBuilder(PyBuilder):
    """Build ``BuilderInput`` s with ``default_build`` + ``default_export`` on threads.

    ``f_export(runtime_module) -> path``: how an artifact is written (default MetaSchedule's
    ``default_export``, a ``.tar``; e.g. :func:`cwm.tuning.rpc.export_so` for a ``.so``).
    """

    def __init__(self, max_workers: int = 2, f_export=None):
        super().__init__()
        self.max_workers = max_workers
        self.f_export = f_export

    def _build_one(self, build_input):
        from tvm.s_tir.meta_schedule.builder.local_builder import default_build, default_export

        try:
            with build_input.target:  # CUDA+nvcc reads the arch from Target.current()
                runtime_mod = default_build(build_input.mod, build_input.target, None)
            return BuilderResult((self.f_export or default_export)(runtime_mod), None)
        except Exception as error:  # a failed candidate is a result, not a crash
            return BuilderResult(None, f"InProcessBuilder: {error}")

    def build(self, build_inputs):
        import tvm.s_tir.tensor_intrin  # noqa: F401  once, before threads race to import it

        with ThreadPoolExecutor(self.max_workers) as pool:
            return list(pool.map(self._build_one, build_inputs))
