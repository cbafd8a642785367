"""A MetaSchedule measure callback that records every measured candidate.

Per candidate it keeps the task, the trace (JSON, post-processing included), all
measured run times, build/run errors, and the scheduled program that was built
(its structural hash and TVMScript text), so that replay can be checked against
exactly what tuning measured.
"""
from __future__ import annotations

import json


def make_recorder(sink, keep_script: bool = True):
    """A ``PyMeasureCallback`` calling ``sink(records: list[dict])`` once per measured batch."""
    import tvm_ffi
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    from cwm.actions.trace_io import trace_to_json

    @derived_object
    class TraceRecorder(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            task = task_scheduler.tasks_[task_id].ctx
            batch = []
            for cand, br, rr in zip(measure_candidates, builder_results, runner_results):
                secs = [float(s) for s in rr.run_secs] if rr.run_secs is not None else None
                mod = cand.sch.mod
                batch.append({
                    "task": str(task.task_name),
                    "target": str(task.target),  # TVM prints a target as JSON
                    "trace": trace_to_json(cand.sch.trace),
                    "run_secs": secs,
                    "build_error": br.error_msg,
                    "run_error": rr.error_msg,
                    "final_hash": int(tvm_ffi.structural_hash(mod)),
                    "final_script": mod.script() if keep_script else None,
                })
            sink(batch)

    return TraceRecorder()
