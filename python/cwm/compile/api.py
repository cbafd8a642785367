"""``cwm.compile(model, ...) -> CompiledModel`` and ``cwm.load(dir) -> CompiledModel``.

:func:`compile` = :func:`run_pipeline` (import, partition, tune, apply the database, build:
``CompileOptions.pipeline``, a name resolved for the target, e.g. ``default`` -> ``default-cuda``)
+ a :class:`~cwm.compile.compiled_model.CompiledModel` around the result, with a report of what
was done. docs/compile.md has the whole story.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

from cwm.compile.errors import CompileError
from cwm.compile.options import CompileOptions, make_options


def make_instruments(options: CompileOptions) -> list:
    """The instruments of a compile: timing (always first), IR dump, print-after, the user's."""
    from cwm.compile.instruments import DumpIR, PrintAfter, Timing
    from cwm.compile.passes import get_pass

    instruments = [Timing()]
    if options.dump_ir:
        instruments.append(DumpIR(options.dump_ir))
    if options.print_after:
        for name in options.print_after:
            get_pass(name)  # an unknown name is an error, not a silent no-op
        instruments.append(PrintAfter(options.print_after))
    return instruments + list(options.instruments)


def run_pipeline(model, options: CompileOptions | None = None, **kwargs):
    """Run the options' pipeline on ``model``; return the :class:`~cwm.compile.state.CompileState`.

    Use it for partial pipelines (e.g. ``pipeline="cwm-import,cwm-partition"`` to look at the
    tasks); :func:`compile` wraps a pipeline that ends with a build. Without ``work_dir`` it works
    in a new ``cwm_compile_*`` temporary folder: removed when the pipeline fails, else left in
    ``state.work_dir`` for the caller (:func:`compile` removes it).
    """
    from cwm.compile.pipeline import resolve
    from cwm.compile.state import CompileState
    from cwm.compile.tuning import work_dir_lock
    from cwm.target_spec import resolve_target

    options = make_options(options, caller="cwm.compile.run_pipeline()", **kwargs)
    target = resolve_target(options.target)
    pipeline = resolve(options.pipeline, target)  # a name picks the target's variant: default -> default-cuda
    work_dir = os.fspath(options.work_dir) if options.work_dir else tempfile.mkdtemp(prefix="cwm_compile_")
    os.makedirs(work_dir, exist_ok=True)
    state = CompileState(source=model, options=options, target=target, work_dir=work_dir)
    instruments = make_instruments(options)
    start = time.perf_counter()
    try:
        # one process at a time in work_dir: two compiles appending to one database corrupt it
        with work_dir_lock(work_dir, options.lock_timeout):
            pipeline.run(state, instruments)
    except BaseException:
        if not options.work_dir:
            shutil.rmtree(work_dir, ignore_errors=True)
        raise
    state.wall_s = time.perf_counter() - start
    state.pipeline = str(pipeline)
    state.pass_seconds = instruments[0].seconds()
    return state


def compile(model, options: CompileOptions | None = None, **kwargs):  # noqa: A001 - the public name
    """Compile ``model`` for a target and return a callable :class:`CompiledModel`.

    ``model``: an ``onnx.ModelProto``, a path to an ``.onnx`` file, a ``torch.nn.Module``
    (with ``example_inputs=``), a ``torch.export.ExportedProgram`` or a Relax ``IRModule``.
    Keyword arguments are the fields of :class:`CompileOptions` (``target``,
    ``trials_per_task``, ``cost_model``, ``runner``, ``work_dir``, ``pipeline``, ...); an
    unknown one is a ``TypeError`` that lists them. ``options`` gives them all at once.
    """
    from cwm.compile.compiled_model import CompiledModel
    from cwm.compile.pipeline import resolve
    from cwm.compile.tuning import database_files

    options = make_options(options, **kwargs)
    pipeline = resolve(options.pipeline, options.target)
    if "cwm-build" not in pipeline.names:
        raise CompileError(f"pipeline {str(pipeline)!r} has no cwm-build pass, so there is "
                           "nothing to run; use cwm.compile.run_pipeline for partial pipelines")
    state = run_pipeline(model, options)
    temporary = not options.work_dir  # run_pipeline's own temporary folder: removed here, success or not
    try:
        files = database_files(state.work_dir) if state.database is not None else []
        data = {}
        if temporary:  # the artifact's tuning/ files, kept in memory
            data = {os.path.basename(f): open(f, "rb").read() for f in files}
            files = []
        compiled = CompiledModel(state.executable, state.target, state.inputs, state.outputs, state.params,
                                 state.param_mode, report=_report(state), pipeline=state.pipeline,
                                 database_files=files, frontend=state.frontend, database_data=data)
        if temporary:
            compiled.report["work_dir"] = None
        if options.measure_baseline and compiled.device.exist:
            _measure(compiled, state, options)
        return compiled
    finally:
        if temporary:
            shutil.rmtree(state.work_dir, ignore_errors=True)


def load(path, check_versions: bool = True, check_target: bool = True, expect_sha256=None):
    """The compiled model in the folder ``path`` (written by ``CompiledModel.export``), after
    checking file hashes, versions and that its target runs here (:mod:`cwm.compile.artifact`).

    Loading runs the artifact's native code (``model.so``): load only folders you trust
    (docs/trust.md). ``expect_sha256`` pins the sha256 of its ``manifest.json`` (which lists the
    sha256 of every other file; ``CompiledModel.artifact_sha256``, printed by ``cwm compile``):
    any other artifact is refused with ``ArtifactError`` before its code is loaded."""
    from cwm.compile.compiled_model import load as load_artifact

    return load_artifact(path, check_versions=check_versions, check_target=check_target,
                         expect_sha256=expect_sha256)


def _report(state) -> dict:
    tuning = state.tuning.to_json() if state.tuning is not None else None
    tasks = tuning["tasks"] if tuning else [{"name": t.task_name, "weight": int(t.weight)} for t in state.tasks]
    return {
        "pipeline": state.pipeline, "target": str(state.target), "frontend": state.frontend,
        "work_dir": state.work_dir, "tasks": tasks,
        "trials_per_task": tuning["trials_per_task"] if tuning else 0,
        "new_records": tuning["new_records"] if tuning else 0,
        "reused_records": tuning["reused_records"] if tuning else 0,
        "shared_records": tuning["shared_records"] if tuning else 0,
        "shared_database": tuning["shared_database"] if tuning else None,
        "cost_model": tuning["cost_model"] if tuning else None,
        "tune_s": tuning["wall_s"] if tuning else 0.0,
        "scheduled_functions": state.scheduled_functions, "builder": state.builder_name,
        "build_info": state.build_info,
        "param_mode": state.param_mode,
        # kernels whose weights are stored packed (one *_weight_prepack function each), of the
        # functions whose weights were layout-free while tuning
        "weights_packed": len(state.packed_functions), "layout_free_functions": len(state.layout_free_functions),
        "pass_seconds": {k: round(v, 3) for k, v in state.pass_seconds.items()},
        "wall_s": round(state.wall_s, 3),
    }


#: the passes after cwm-apply-db that build: the untuned baseline runs them on the fused module
_BUILD_PASSES = ("cwm-gpu-dispatch", "cwm-gpu-default-schedules", "cwm-build")


def _measure(compiled, state, options) -> None:
    """Latency after (this model) and before tuning: the fused module (cwm-partition's, no
    database) through the pipeline's own build passes, with their options (cuda: dispatch,
    default GPU schedules, device code)."""
    import dataclasses

    from cwm.compile.compiled_model import CompiledModel
    from cwm.compile.passes import get_pass
    from cwm.compile.pipeline import parse

    inputs = compiled.example_inputs(options.seed)
    compiled.report["latency_after_us"] = compiled.benchmark(*inputs, runs=options.bench_runs)["median_us"]
    if state.fused is None:
        return
    baseline = dataclasses.replace(state, mod=state.fused, ran=[n for n in state.ran if n not in _BUILD_PASSES],
                                   tuned_functions=[], default_scheduled_functions=[], pre_scheduled_functions=[],
                                   executable=None)
    mod = state.fused
    for invocation in parse(state.pipeline):
        if invocation.name in _BUILD_PASSES:
            spec = get_pass(invocation.name)
            mod = spec.run(baseline, mod, spec.resolve(invocation.given, baseline.options))
            baseline.ran.append(invocation.name)
    params = state.source_params if state.source_params is not None else state.params  # before cwm-transform-weights
    mode = state.source_param_mode or state.param_mode
    untuned = CompiledModel(baseline.executable, state.target, state.inputs, state.outputs, params, mode)
    compiled.report["latency_before_us"] = untuned.benchmark(*inputs, runs=options.bench_runs)["median_us"]
