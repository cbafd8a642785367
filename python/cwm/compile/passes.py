"""The named cwm passes, their typed options, and how each becomes a TVM module pass.

=============================  ==================================  ================================
pass                           options (type, default)             does
=============================  ==================================  ================================
``cwm-import``                 --                                  model -> Relax module (weights
                                                                   detached)
``cwm-keep-nan``               ``enabled`` (bool)                  relu / clip / max / min keep NaN
                                                                   (:mod:`cwm.compile.keep_nan`)
``cwm-bool-ops``               --                                  comparisons / arithmetic on bool
                                                                   tensors as uint8 / int32 ops
                                                                   that TVM can build
                                                                   (:mod:`cwm.compile.bool_ops`)
``cwm-int-power``              ``enabled`` (bool)                  ``power(x, 1..4)`` as products,
                                                                   not ``powf`` per element
                                                                   (:mod:`cwm.compile.int_power`)
``cwm-vector-math``            ``enabled`` (bool)                  llvm only: float32 exp / tanh /
                                                                   erf / sigmoid / silu / gelu /
                                                                   softmax as vectorizable
                                                                   polynomials, not libm per
                                                                   element
                                                                   (:mod:`cwm.compile.vector_math`)
``cwm-partition``              ``lift-params`` (bool, true)        lift weight-only work into
                                                                   ``main_transform_params``,
                                                                   legalize, fuse, extract
                                                                   ``main``'s tasks
``cwm-layout-free``            ``enabled`` (bool)                  llvm only: mark weights
                                                                   layout-free, so tuning may pick
                                                                   their layout
``cwm-tune``                   ``trials`` (int), ``cost-model``    tune every task into
                               (str), ``seed`` (int),              ``work_dir``'s JSON database
                               ``budget`` (int), ``scheduler``     (resumable); ``budget`` trials
                               (str)                               for the network, spread by
                                                                   ``scheduler``
``cwm-apply-db``               --                                  swap in the best schedules found
``cwm-pack-weights``           ``enabled`` (bool)                  llvm only: move the chosen weight
                                                                   layout rewrites into
                                                                   ``main_transform_params``
``cwm-gpu-dispatch``           --                                  cuda only: sort / scan / top-k /
                                                                   sampling ops -> TVM's GPU kernels
                                                                   (``gpu_library_dispatch``)
``cwm-gpu-default-schedules``  --                                  cuda only: DLight for every
                                                                   function without a schedule
                                                                   (``apply_default_gpu_schedules``)
``cwm-build``                  ``device-code`` (str, fatbin),      llvm: ``tvm.compile``; cuda:
                               ``compiler`` (str, auto); both      ``build_device_code`` (nvcc /
                               cuda only                           NVRTC device code)
=============================  ==================================  ================================

The functions named for the cuda passes are in :mod:`cwm.targets.cuda`. A pass or option for
one target kind (``targets=``) used with another is a ``PipelineError`` when the pipeline is
resolved for that target or run (docs/compile.md, "Passes for one target kind"); the cuda
pipelines (``default-cuda`` ..., :mod:`cwm.compile.pipeline`) run them.

An option left out takes its value from the :class:`~cwm.compile.options.CompileOptions`
field it stands for (``trials`` <- ``trials_per_task``, ``budget`` <- ``trials``, ``scheduler`` <-
``task_scheduler``, ``cost-model`` <- ``cost_model``,
``seed`` <- ``seed``, ``enabled`` of ``cwm-keep-nan`` <- ``keep_nan``, ``enabled`` of
``cwm-layout-free`` and ``cwm-pack-weights`` <- ``pack_weights``). :func:`register_pass`
adds a pass; ``PASSES`` is the registry.
"""
from __future__ import annotations

from cwm.compile.errors import CompileError, PipelineError
from cwm.cost_model.factory import registered as cost_models  # cheap: no TVM, no torch
from cwm.cuda_toolchain import FORMATS  # cheap: no TVM


from cwm.compile.pass_registry import PASSES, Option, PassSpec, get_pass, register_pass  # noqa: F401 (re-exported)


# --------------------------------------------------------------------------------- passes
@register_pass("cwm-import")
def _import(state, mod, options):
    """Import the source model into Relax: signature, detached weights (``cwm.compile.importing``)."""
    from cwm.compile.importing import import_model

    imported = import_model(state.source, state.options)
    state.inputs, state.outputs, state.params = imported.inputs, imported.outputs, imported.params
    state.frontend = imported.frontend
    state.param_mode = "inputs" if imported.params else "none"
    return imported.mod


@register_pass("cwm-keep-nan", options=(
    Option("enabled", bool, True, "false: leave TVM's lowering, which turns NaN into 0 in relu", field="keep_nan"),
), requires=("cwm-import",), before=("cwm-partition",))
def _keep_nan(state, mod, options):
    """Rewrite float relu, relu6, clip, maximum, minimum (and the ONNX importer's emitted
    max/min PrimFuncs) so that NaN propagates as in PyTorch / ONNX Runtime
    (:mod:`cwm.compile.keep_nan`). Runs before legalization; reductions (max-pool) are untouched."""
    if not options["enabled"]:
        return mod
    from cwm.compile.keep_nan import keep_nan

    out, _counts = keep_nan(mod)
    return out


@register_pass("cwm-bool-ops", requires=("cwm-import",), before=("cwm-partition",))
def _bool_ops(state, mod, options):
    """Rewrite comparisons and arithmetic on bool tensors (the causal masks of LLaMA-family
    decoders) into uint8/int32 ops that TVM's LLVM codegen can build
    (:mod:`cwm.compile.bool_ops`; a workaround for TVM 0.27, checked by tests/test_bool_ops.py)."""
    from cwm.compile.bool_ops import rewrite_bool_ops

    out, _counts = rewrite_bool_ops(mod)
    return out


@register_pass("cwm-int-power", options=(
    Option("enabled", bool, True, "false: leave small integer powers to libm's powf"),
), requires=("cwm-import",), before=("cwm-partition",))
def _int_power(state, mod, options):
    """Rewrite float ``power(x, c)`` with a constant ``c`` in 1..4 into multiplications
    (:mod:`cwm.compile.int_power`): TVM calls ``powf`` per element, which GPT-2's GELU pays
    for on every layer."""
    if not options["enabled"]:
        return mod
    from cwm.compile.int_power import rewrite_int_powers

    out, _counts = rewrite_int_powers(mod)
    return out


@register_pass("cwm-vector-math", options=(
    Option("enabled", bool, True, "false: leave exp / tanh / erf to libm, one call per element"),
), requires=("cwm-import",), before=("cwm-partition",), targets=("llvm",))
def _vector_math(state, mod, options):
    """Rewrite float32 exp, tanh, erf and the ops made of them (sigmoid, silu, gelu, softmax)
    into polynomial arithmetic that LLVM vectorizes (:mod:`cwm.compile.vector_math`): TVM calls
    libm per element, which cost BERT's softmax and GPT-2's GELU more than their matmuls."""
    if not options["enabled"]:
        return mod
    from cwm.compile.vector_math import rewrite_vector_math

    out, _counts = rewrite_vector_math(mod)
    return out


@register_pass("cwm-partition", options=(Option("lift-params", bool, True,
                                                "move weight-only computations into main_transform_params"),),
               requires=("cwm-import",))
def _partition(state, mod, options):
    """Legalize and fuse the module into TIR tasks (:func:`cwm.partition.fuse`), then
    extract ``main``'s MetaSchedule tasks."""
    from tvm import relax

    from cwm.compile.reshape_legalize import custom_legalizations
    from cwm.compile.weight_layout import main_tasks
    from cwm.partition import fuse

    if state.params and options["lift_params"]:
        mod = relax.transform.LiftTransformParams()(mod)
        state.param_mode = "lifted"
    state.legalize_input = mod  # what fuse() legalizes: cwm-build names the ops a failing function came from
    try:
        fused = fuse(mod, state.target, custom_legalizations())
    except CompileError:
        raise
    except Exception as error:  # noqa: BLE001 - TVM's error, named by its op (cwm.compile.failure_origin)
        from cwm.compile.failure_origin import legalize_failure

        raise legalize_failure(error, mod, state.target, "cwm-partition") from error
    state.tasks = main_tasks(fused, state.target)
    state.fused = fused
    return fused


@register_pass("cwm-layout-free", options=(
    Option("enabled", bool, True, "false: weights keep their layout (no packing)", field="pack_weights"),
), requires=("cwm-partition",), before=("cwm-tune", "cwm-apply-db"), targets=("llvm",))
def _layout_free(state, mod, options):
    """Mark the weights of every fused function layout-free (``AttachAttrLayoutFreeBuffers``), so
    the tuner may choose their layout; the tasks are extracted again (their hash changes). CPU
    only (:mod:`cwm.compile.weight_layout`)."""
    if not options["enabled"]:
        return mod
    from cwm.compile.weight_layout import layout_free_functions, main_tasks, mark_layout_free

    marked = mark_layout_free(mod, state.target)
    state.layout_free_functions = layout_free_functions(marked)
    state.tasks = main_tasks(marked, state.target)
    state.fused = marked
    return marked


@register_pass("cwm-tune", options=(
    Option("trials", int, help="measured candidates per task", field="trials_per_task"),
    Option("cost-model", str, help="cwm, xgb, xgb-pretrained or random", field="cost_model",
           choices=cost_models),  # the registered names, asked when a value is checked
    Option("seed", int, help="search and cost-model seed", field="seed"),
    Option("budget", int, help="measured candidates for the whole network (default: trials per task x tasks)",
           field="trials"),
    Option("scheduler", str, help="how the budget is spread over the tasks", field="task_scheduler",
           choices=("round-robin", "gradient")),
), requires=("cwm-partition",))
def _tune(state, mod, options):
    """Tune every task of ``main`` into ``work_dir``'s JSON database (resumable, see
    :mod:`cwm.compile.tuning`). The module passes through unchanged."""
    import dataclasses

    from cwm.compile.tuning_run import tune_tasks

    trials = options["trials"]
    if trials < 0:
        raise PipelineError(f"option 'trials' of pass 'cwm-tune' must be >= 0, not {trials}")
    budget = options["budget"]
    if budget is not None and budget < 0:
        raise PipelineError(f"option 'budget' of pass 'cwm-tune' must be >= 0, not {budget}")
    compile_options = dataclasses.replace(state.options, cost_model=options["cost_model"], seed=options["seed"],
                                          trials=budget, task_scheduler=options["scheduler"])
    state.database, state.tuning = tune_tasks(state.tasks, state.target, state.work_dir, trials, compile_options)
    return mod


@register_pass("cwm-apply-db", requires=("cwm-partition",),
               before=("cwm-gpu-default-schedules",))  # a schedule given first would hide the tuned one
def _apply_db(state, mod, options):
    """Replace every function that has records in the database by its best schedule
    (``relax.transform.MetaScheduleApplyDatabase``); the database is cwm-tune's, or the one in
    ``work_dir`` when the pipeline does not tune."""
    from cwm.compile.tuning import database_files, open_database
    from cwm.tuning.relax_model import apply_database, count_scheduled

    if state.database is None:
        if not database_files(state.work_dir):
            raise CompileError(f"cwm-apply-db: no tuning database in work_dir {state.work_dir!r}; run cwm-tune "
                               "first or pass the work_dir of an earlier compile")
        state.database = open_database(state.work_dir)
    before = _scheduled_names(mod)
    tuned = apply_database(mod, state.target, state.database)
    state.scheduled_functions = count_scheduled(tuned)
    state.tuned_functions = sorted(_scheduled_names(tuned) - before)
    return tuned


def _scheduled_names(mod) -> set:
    from tvm import tirx

    return {gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)
            and f.attrs is not None and bool(f.attrs.get("tirx.is_scheduled", False))}


@register_pass("cwm-pack-weights", options=(
    Option("enabled", bool, True, "false: leave the weight layout rewrites inside the kernels",
           field="pack_weights"),
), requires=("cwm-apply-db",), before=("cwm-build",), targets=("llvm",))
def _pack_weights(state, mod, options):
    """Move the weight layout rewrites the tuned schedules chose out of ``main`` into
    ``main_transform_params`` (``SplitLayoutRewritePreproc -> LiftTransformParams ->
    FoldConstant``). CPU only (:mod:`cwm.compile.weight_layout`)."""
    if not options["enabled"]:
        return mod
    from cwm.compile.weight_layout import prepack_functions, split_and_lift

    out = split_and_lift(mod, state.target)
    state.packed_functions = prepack_functions(out)
    if state.param_mode == "inputs" and any(gv.name_hint == "main_transform_params" for gv, _ in out.functions_items()):
        state.param_mode = "lifted"
    return out


@register_pass("cwm-gpu-dispatch", requires=("cwm-partition",), before=("cwm-gpu-default-schedules", "cwm-build"),
               targets=("cuda",))
def _gpu_dispatch(state, mod, options):
    """TVM's cuda library dispatch (``DispatchSampling``, ``DispatchSortScan``): the sort, argsort,
    top-k, cumsum/cumprod and sampling ops that LegalizeOps leaves for GPU targets become TVM's
    GPU kernels, which arrive scheduled (:func:`cwm.targets.cuda.gpu_library_dispatch`). A model
    without such ops passes through unchanged."""
    from cwm.targets.cuda import gpu_library_dispatch

    return gpu_library_dispatch(mod, state.target)


@register_pass("cwm-gpu-default-schedules", requires=("cwm-partition",), before=("cwm-build",), targets=("cuda",))
def _gpu_default_schedules(state, mod, options):
    """Give every TIR function without a schedule TVM's default GPU schedule (DLight: Matmul, GEMV,
    Reduction, GeneralReduction, Fallback); functions that arrive scheduled (cwm-apply-db's tuned
    ones, cwm-gpu-dispatch's kernels) are kept (:func:`cwm.targets.cuda.apply_default_gpu_schedules`).
    Unscheduled TIR cannot run on a GPU: without this pass every function needs a tuned schedule."""
    from cwm.targets.cuda import apply_default_gpu_schedules

    out, default, scheduled = apply_default_gpu_schedules(mod, state.target)
    state.default_scheduled_functions = default
    state.pre_scheduled_functions = [n for n in scheduled if n not in state.tuned_functions]
    return out


@register_pass("cwm-build", options=(
    Option("device-code", str, "fatbin", "cuda: the GPU code embedded (nvcc makes any; NVRTC cubin or ptx)",
           choices=FORMATS, targets=("cuda",)),
    Option("compiler", str, "auto", "cuda: nvcc, nvrtc or auto (nvcc when found)",
           choices=("auto", "nvcc", "nvrtc"), targets=("cuda",)),
), requires=("cwm-import",))
def _build(state, mod, options):
    """Build the module for the target: ``tvm.compile`` for llvm; for cuda
    :func:`cwm.targets.cuda.build_device_code` (nvcc / NVRTC device code, options ``device-code``
    and ``compiler``) on the module as the passes before left it, which must be scheduled.
    The executable goes to ``state.executable``; the module passes through."""
    if state.target.kind.name == "cuda" and "cwm-gpu-default-schedules" not in state.ran:
        from cwm.targets.cuda import unscheduled_functions

        missing = unscheduled_functions(mod)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise PipelineError(f"cwm-build: {len(missing)} TIR function(s) have no GPU schedule ({shown}) and "
                                "a GPU cannot run unscheduled TIR; put cwm-gpu-default-schedules before cwm-build "
                                "(after cwm-apply-db), as the cuda pipelines do (default-cuda, no-tune-cuda, "
                                "from-db-cuda)")
    schedules = {"tuned": state.tuned_functions, "default": state.default_scheduled_functions,
                 "pre": state.pre_scheduled_functions}
    state.executable, state.builder_name, state.build_info = build(
        mod, state.target, state.legalize_input, compiler=options["compiler"], device_code=options["device_code"],
        schedules=schedules)
    return mod


def build(mod, target, source=None, *, compiler: str = "auto", device_code: str = "fatbin", schedules=None):
    """``(executable, builder name, build info dict)`` of the Relax module ``mod`` for ``target``.

    llvm: ``tvm.compile`` (functions without a tuned schedule are lowered unscheduled, which is
    valid on a CPU). cuda: :func:`cwm.targets.cuda.build_device_code`, which embeds real device
    code (``device_code``: fatbin, cubin or ptx; ``compiler``: auto, nvcc or nvrtc); every TIR
    function must be scheduled already (cwm-apply-db, cwm-gpu-dispatch, cwm-gpu-default-schedules).
    ``schedules`` (``{"tuned", "default", "pre"}``: function names) goes into the cuda build info.
    An llvm build that fails raises :class:`~cwm.compile.errors.BuildError` naming the TIR
    function, its Relax callers and ops (``source``: the module before legalization, for the op
    names; :mod:`cwm.compile.failure_origin`).
    """
    kind = target.kind.name
    if kind == "llvm":
        import tvm

        try:
            return tvm.compile(mod, target=target), "tvm.compile", {}
        except CompileError:
            raise
        except Exception as error:  # noqa: BLE001 - TVM's error, named by its function (failure_origin)
            from cwm.compile.failure_origin import build_failure

            raise build_failure(error, mod, target, "cwm-build", source) from error
    if kind == "cuda":
        from cwm.targets.cuda import build_device_code

        schedules = schedules or {}
        built = build_device_code(mod, target, compiler=compiler, fmt=device_code,
                                  tuned=schedules.get("tuned", ()), default=schedules.get("default", ()),
                                  pre=schedules.get("pre", ()))
        return built.executable, "cwm.targets.cuda.build_device_code", built.info.as_dict()
    raise CompileError(f"cwm.compile builds for llvm and cuda targets, not {kind!r}")


@register_pass("cwm-transform-weights", requires=("cwm-build",), targets=("llvm",))
def _transform_weights(state, mod, options):
    """Run ``main_transform_params`` once, now: the compiled model (and its artifact) holds the
    transformed, packed weights, so no load and no call transforms them (param mode
    ``transformed``). CPU only; a model without lifted weights passes through."""
    if state.param_mode != "lifted" or not state.params:
        return mod
    from cwm.compile.weight_layout import TRANSFORMED, transform_weights

    state.source_params, state.source_param_mode = state.params, state.param_mode
    state.params = transform_weights(state.executable, mod, state.params)
    state.param_mode = TRANSFORMED
    return mod
