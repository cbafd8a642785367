"""The ``tvm_relax_pipeline`` method of the end-to-end benchmark (bench/e2e.py): TVM's own
``relax.pipeline.static_shape_tuning_pipeline(cpu_weight_prepack=True)`` with its defaults
(MetaSchedule's XGB cost model, gradient task scheduler, local builder and runner), at the same
total budget as cwm: ``trials`` x the number of tasks, at most ``trials`` per task.

The network enters through cwm's import front (``cwm-import,cwm-keep-nan,cwm-bool-ops``: the
same Relax module cwm starts from, so both compile the same program; ``cwm-bool-ops`` is what
lets TVM build LLaMA at all). TVM leaves ``main_transform_params`` to the caller; this runs it
once and stores its outputs, so the artifact is timed exactly like cwm's (``main`` alone).

**Resuming.** TVM's tuning pass has no resume of its own. A compile killed midway keeps its
database in ``work_dir/tuning`` (committed after every measured batch); the next run repairs a
torn last line (:func:`cwm.tuning.json_database.check_database`), and tunes only the *rest* of
the total budget (``total_trials`` minus the records already there), with TVM's evolutionary
search starting from those records. The per-task cap restarts in each run (TVM counts trials per
run), so after a resume a task may get more than ``trials`` in all; the total stays exact.
While it tunes, a thread stores the session's tuning seconds and record count every
:data:`BEAT_S` s, so a killed run's time still counts. Standard library only at module level.
"""
from __future__ import annotations

import os
import threading
import time

FRONT = "cwm-import,cwm-keep-nan,cwm-bool-ops"
#: seconds between two stores of the running session's tuning time
BEAT_S = 30.0


def count_records(tuning_dir: str) -> int:
    """Measured candidates in the JSON database of ``tuning_dir`` (complete lines only)."""
    from cwm.tuning.json_database import database_paths

    path = database_paths(tuning_dir)[1]
    if not os.path.isfile(path):
        return 0
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def remaining_budget(budget_total: int, done: int) -> int:
    """Trials still to tune of ``budget_total`` when ``done`` records are already measured."""
    return max(0, int(budget_total) - int(done))


class TuningBeat:
    """A daemon thread that stores the session's tuning seconds and records every ``every_s``."""

    def __init__(self, session, tuning_dir: str, done_before: int, every_s: float = BEAT_S):
        self.session, self.tuning_dir, self.done_before, self.every_s = session, tuning_dir, done_before, every_s
        self.start = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.every_s):
            self.session.beat(time.perf_counter() - self.start,
                              count_records(self.tuning_dir) - self.done_before)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


def tvm_pipeline_compile(net: str, method: str, *, trials: int, work_dir: str, session, model_dir,
                         onnx_cache: str, onnx_path: str) -> dict:
    import tvm
    from tvm import relax
    from tvm.relax.pipeline import zero_pipeline
    from tvm.s_tir import meta_schedule as ms

    from cwm.compile.api import run_pipeline
    from cwm.compile.compiled_model import CompiledModel
    from cwm.compile.weight_layout import TRANSFORMED, prepack_functions, transform_weights
    from cwm.tuning.json_database import check_database

    start = time.perf_counter()
    state = run_pipeline(onnx_path, pipeline=FRONT, tuning_cache="off")
    target, mod = state.target, state.mod
    with target:  # the tasks TVM's pipeline will tune: its own zero pipeline, then extraction
        fused = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                          relax.transform.CanonicalizeBindings(), zero_pipeline()])(mod)
    n_tasks = len(ms.relax_integration.extract_tasks(fused, target))
    tuning_dir = os.path.join(work_dir, "tuning")
    done_before = 0
    if os.path.isdir(tuning_dir):
        check_database(tuning_dir)  # a run killed mid-write leaves a torn last line
        done_before = count_records(tuning_dir)
    budget_total = trials * n_tasks
    remaining = remaining_budget(budget_total, done_before)
    if done_before:
        from common import log

        log(f"  resuming TVM's pipeline: {done_before} records already measured, {remaining} of "
            f"{budget_total} trials to go")
    tune_start = time.perf_counter()
    pipeline = relax.pipeline.static_shape_tuning_pipeline(total_trials=remaining, target=target,
                                                           work_dir=tuning_dir, cpu_weight_prepack=True,
                                                           max_trials_per_task=trials)
    with TuningBeat(session, tuning_dir, done_before):
        tuned = pipeline(mod)
    tune_s = time.perf_counter() - tune_start
    records = count_records(tuning_dir)  # as done_before was counted: no second load of the database
    session.finish(tune_s, records - done_before)
    executable = tvm.compile(tuned, target=target)
    params = transform_weights(executable, tuned, state.params) if state.params else {}
    prepacked = len(prepack_functions(tuned))
    report = {"pipeline": f"{FRONT} + relax.pipeline.static_shape_tuning_pipeline(cpu_weight_prepack=True)",
              "tasks": [], "tune_s": tune_s, "weights_packed": prepacked, "param_mode": TRANSFORMED}
    compiled = CompiledModel(executable, target, state.inputs, state.outputs, params,
                             TRANSFORMED if params else "none", report=report, pipeline=report["pipeline"],
                             frontend=state.frontend)
    artifact = os.path.join(work_dir, "artifact")
    compiled.export(artifact)
    return {"tasks": n_tasks, "task_names": [], "new_records": records - done_before, "reused_records": 0, "shared_records": 0,
            "session_tune_s": round(tune_s, 3), "compile_s": round(time.perf_counter() - start, 3),
            "artifact": artifact, "cost_model": "xgb (TVM default)", "weights_packed": prepacked,
            "pack_weights": True, "task_scheduler": "gradient (TVM default)", "budget_total": budget_total,
            "resumed_records": done_before,
            "records_total": records, "task_best_us": {}}
