"""``PooledRunner``: measure candidates in a persistent worker process, crash- and hang-safe.

Why not measure in this process (``InProcessRunner``): a candidate can crash the process.
Seen here while collecting the zoo's tasks: a ``take`` (embedding lookup) kernel fed with
MetaSchedule's random argument data read out of bounds and segfaulted inside
``TVMBackendParallelLaunch``, killing the whole collector. Here a crash or a run longer than
``timeout_sec`` becomes an error result for that candidate; the worker restarts lazily
(about 4 s), and later candidates are measured normally.

Measurements are taken one at a time (one worker) so that candidates do not compete for the
cores. Arguments are allocated like MetaSchedule's ``default_alloc_argument`` (random floats)
except that **integer tensors are filled with zeros**: they are almost always indices
(token ids, ``take``/``gather`` positions), and random integers index out of bounds.
"""
from __future__ import annotations


def alloc_arguments(device, args_info, alloc_repeat: int):
    """Arguments for ``alloc_repeat`` runs: random floats, zero integers (in-bounds indices)."""
    import numpy as np
    import tvm

    random_fill = tvm.get_global_func("tvm.contrib.random.random_fill")
    repeated = []
    for _ in range(alloc_repeat):
        args = []
        for kind, dtype, shape in args_info:
            if kind != "TENSOR":
                raise ValueError(f"unsupported argument kind {kind!r}")
            arr = tvm.runtime.empty(shape=shape, dtype=dtype, device=device)
            if dtype.startswith(("int", "uint", "bool")):
                arr.copyfrom(np.zeros(shape, dtype=dtype))
            else:
                random_fill(arr)
            args.append(arr)
        repeated.append(args)
    return repeated


def run_in_worker(artifact_path: str, device_type: str, args_info, config: tuple, alloc_repeat: int):
    """Runs in the worker: link the artifact, allocate arguments, time it; seconds per repeat."""
    import tvm
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig
    from tvm.s_tir.meta_schedule.runner.utils import run_evaluator_common

    number, repeat, min_repeat_ms, flush = config
    rt_mod = tvm.runtime.load_module(artifact_path)
    device = tvm.runtime.device(device_type, 0)
    args = alloc_arguments(device, args_info, alloc_repeat)
    evaluator = EvaluatorConfig(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                                enable_cpu_cache_flush=flush)
    return [float(x) for x in run_evaluator_common(rt_mod, device, evaluator, args)]


def _job(job):
    return run_in_worker(*job)


def _make_class():
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner
    from tvm.s_tir.meta_schedule.runner.local_runner import LocalRunnerFuture
    from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

    @derived_object
    class PooledRunner(PyRunner):
        def __init__(self, evaluator_config=None, timeout_sec: float = 60.0, alloc_repeat: int = 1):
            super().__init__()
            cfg = EvaluatorConfig._normalized(evaluator_config)
            self.config = (cfg.number, cfg.repeat, cfg.min_repeat_ms, bool(cfg.enable_cpu_cache_flush))
            self.timeout_sec, self.alloc_repeat = timeout_sec, alloc_repeat
            self._pool = None

        def run(self, runner_inputs):
            if self._pool is None:
                self._pool = PopenPoolExecutor(max_workers=1, timeout=self.timeout_sec)
            jobs = [(str(ri.artifact_path), str(ri.device_type), tuple(a.as_json() for a in ri.args_info),
                     self.config, self.alloc_repeat) for ri in runner_inputs]
            futures = []
            for r in self._pool.map_with_error_catching(_job, jobs):
                if r.status == StatusKind.COMPLETE:
                    futures.append(LocalRunnerFuture(res=r.value, error_message=None))
                elif r.status == StatusKind.TIMEOUT:
                    futures.append(LocalRunnerFuture(res=None, error_message=f"PooledRunner: timeout after "
                                                                             f"{self.timeout_sec} s"))
                else:
                    futures.append(LocalRunnerFuture(res=None, error_message=f"PooledRunner: {r.value!r}"))
            return futures

        def close(self):
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    return PooledRunner


_CLASS = None


def PooledRunner(evaluator_config=None, timeout_sec: float = 60.0, alloc_repeat: int = 1):  # noqa: N802
    """A MetaSchedule ``Runner`` measuring in one persistent, restartable worker process."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_class()
    return _CLASS(evaluator_config=evaluator_config, timeout_sec=timeout_sec, alloc_repeat=alloc_repeat)
