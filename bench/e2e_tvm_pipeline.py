"""The ``tvm_relax_pipeline`` method of the end-to-end benchmark (bench/e2e.py): TVM's own
``relax.pipeline.static_shape_tuning_pipeline(cpu_weight_prepack=True)`` with its defaults
(MetaSchedule's XGB cost model, gradient task scheduler, local builder and runner), at the same
total budget as cwm: ``trials`` x the number of tasks, at most ``trials`` per task.

The network enters through cwm's import front (``cwm-import,cwm-keep-nan,cwm-bool-ops``: the
same Relax module cwm starts from, so both compile the same program; ``cwm-bool-ops`` is what
lets TVM build LLaMA at all). TVM leaves ``main_transform_params`` to the caller; this runs it
once and stores its outputs, so the artifact is timed exactly like cwm's (``main`` alone).

TVM's tuning pass does not resume: a compile killed midway starts over (its database in
``work_dir/tuning`` stays, and the search starts from those records). Standard library only at
module level.
"""
from __future__ import annotations

import os
import time

FRONT = "cwm-import,cwm-keep-nan,cwm-bool-ops"


def tvm_pipeline_compile(net: str, method: str, *, trials: int, work_dir: str, session, model_dir,
                         onnx_cache: str, onnx_path: str) -> dict:
    import tvm
    from tvm import relax
    from tvm.relax.pipeline import zero_pipeline
    from tvm.s_tir import meta_schedule as ms

    from cwm.compile.api import run_pipeline
    from cwm.compile.compiled_model import CompiledModel
    from cwm.compile.weight_layout import TRANSFORMED, prepack_functions, transform_weights

    start = time.perf_counter()
    state = run_pipeline(onnx_path, pipeline=FRONT, tuning_cache="off")
    target, mod = state.target, state.mod
    with target:  # the tasks TVM's pipeline will tune: its own zero pipeline, then extraction
        fused = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                          relax.transform.CanonicalizeBindings(), zero_pipeline()])(mod)
    n_tasks = len(ms.relax_integration.extract_tasks(fused, target))
    tuning_dir = os.path.join(work_dir, "tuning")
    tune_start = time.perf_counter()
    pipeline = relax.pipeline.static_shape_tuning_pipeline(total_trials=trials * n_tasks, target=target,
                                                           work_dir=tuning_dir, cpu_weight_prepack=True,
                                                           max_trials_per_task=trials)
    tuned = pipeline(mod)
    tune_s = time.perf_counter() - tune_start
    records = len(ms.database.JSONDatabase(work_dir=tuning_dir).get_all_tuning_records())
    session.finish(tune_s, records)
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
    return {"tasks": n_tasks, "task_names": [], "new_records": records, "reused_records": 0, "shared_records": 0,
            "session_tune_s": round(tune_s, 3), "compile_s": round(time.perf_counter() - start, 3),
            "artifact": artifact, "cost_model": "xgb (TVM default)", "weights_packed": prepacked,
            "pack_weights": True, "task_scheduler": "gradient (TVM default)", "budget_total": trials * n_tasks,
            "records_total": records, "task_best_us": {}}
