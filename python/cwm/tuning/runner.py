"""A MetaSchedule runner that loads and times built candidates in this process.

Stock ``LocalRunner`` runs each candidate in a popen worker (one worker, synchronous), which
pays interpreter start-up and hides its profiler scopes. Here each artifact is linked with
``load_module`` (~40 ms g++ link of the ``.tar``) and timed with ``time_evaluator`` exactly as
``LocalRunner`` does (``run_evaluator_common``), returning already-finished futures.
"""
from __future__ import annotations

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner
from tvm.s_tir.meta_schedule.runner.local_runner import LocalRunnerFuture


@derived_object
class InProcessRunner(PyRunner):
    """Measure ``RunnerInput`` s sequentially in this process."""

    def __init__(self, evaluator_config: EvaluatorConfig | None = None, alloc_repeat: int = 1):
        super().__init__()
        self.evaluator_config = EvaluatorConfig._normalized(evaluator_config)
        self.alloc_repeat = alloc_repeat

    def _run_one(self, runner_input):
        import tvm
        from tvm.s_tir.meta_schedule.runner.local_runner import default_alloc_argument
        from tvm.s_tir.meta_schedule.runner.utils import run_evaluator_common

        runtime_mod = tvm.runtime.load_module(str(runner_input.artifact_path))
        device = tvm.runtime.device(str(runner_input.device_type), 0)
        args_info = tuple(arg.as_json() for arg in runner_input.args_info)
        args = default_alloc_argument(device, args_info, self.alloc_repeat)
        return run_evaluator_common(runtime_mod, device, self.evaluator_config, args)

    def run(self, runner_inputs):
        futures = []
        for runner_input in runner_inputs:
            try:
                futures.append(LocalRunnerFuture(res=self._run_one(runner_input), error_message=None))
            except Exception as error:  # a failed candidate is a result, not a crash
                futures.append(LocalRunnerFuture(res=None, error_message=f"InProcessRunner: {error}"))
        return futures
