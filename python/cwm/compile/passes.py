"""The named cwm passes, their typed options, and how each becomes a TVM module pass.

=================  ===================================  =====================================
pass               options (type, default)              does
=================  ===================================  =====================================
``cwm-import``     --                                   model -> Relax module (weights detached)
``cwm-keep-nan``   ``enabled`` (bool)                   relu / clip / max / min keep NaN
                                                        (:mod:`cwm.compile.keep_nan`)
``cwm-bool-ops``   --                                   comparisons / arithmetic on bool tensors
                                                        as uint8 / int32 ops that TVM can build
                                                        (:mod:`cwm.compile.bool_ops`)
``cwm-partition``  ``lift-params`` (bool, true)         lift weight-only work into
                                                        ``main_transform_params``, legalize,
                                                        fuse, extract ``main``'s tasks
``cwm-tune``       ``trials`` (int), ``cost-model``     tune every task into ``work_dir``'s
                   (str), ``seed`` (int)                JSON database (resumable)
``cwm-apply-db``   --                                   swap in the best schedules found
``cwm-build``      --                                   ``tvm.compile`` (llvm) or
                                                        ``cwm.targets.cuda.build_cuda`` (cuda)
=================  ===================================  =====================================

An option left out takes its value from the :class:`~cwm.compile.options.CompileOptions`
field it stands for (``trials`` <- ``trials_per_task``, ``cost-model`` <- ``cost_model``,
``seed`` <- ``seed``, ``enabled`` of ``cwm-keep-nan`` <- ``keep_nan``). :func:`register_pass`
adds a pass; ``PASSES`` is the registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cwm.compile.errors import CompileError, PipelineError
from cwm.cost_model.factory import registered as cost_models  # cheap: no TVM, no torch


@dataclass(frozen=True)
class Option:
    """One typed option of a pass. ``type`` is ``int``, ``float``, ``bool`` or ``str``."""

    name: str
    type: type
    default: Any = None
    help: str = ""
    #: the allowed values, or a function returning them (asked each time, e.g. the registered cost models)
    choices: tuple | Callable[[], tuple] | None = None
    #: the ``CompileOptions`` field used when the option is not given (``default`` is then ignored)
    field: str | None = None

    @property
    def kind(self) -> str:
        """``"an int"``, ``"a float"``, ``"a bool"``, ``"a str"``."""
        name = self.type.__name__
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"

    def parse(self, text: str, pass_name: str):
        """The value of ``text`` (as written in a pipeline) converted to :attr:`type`."""
        value = text.strip()
        try:
            if self.type is bool:
                lowered = value.lower()
                if lowered not in ("true", "false", "1", "0"):
                    raise ValueError
                result = lowered in ("true", "1")
            elif self.type is int:
                result = int(value, 10)
            elif self.type is float:
                result = float(value)
            else:
                if not value:
                    raise ValueError
                result = value
        except ValueError:
            raise PipelineError(f"option {self.name!r} of pass {pass_name!r} takes {self.kind}, "
                                f"not {value!r}") from None
        return self.check(result, pass_name)

    def check(self, value, pass_name: str):
        """``value`` if it has the right type (and is one of ``choices``); ``PipelineError`` otherwise."""
        ok = isinstance(value, self.type) and not (self.type is int and isinstance(value, bool))
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise PipelineError(f"option {self.name!r} of pass {pass_name!r} takes {self.kind}, "
                                f"not {type(value).__name__} {value!r}")
        choices = self.choices() if callable(self.choices) else self.choices
        if choices is not None and value not in choices:
            raise PipelineError(f"option {self.name!r} of pass {pass_name!r} must be one of "
                                f"{list(choices)}, not {value!r}")
        return value

    def format(self, value) -> str:
        """``value`` as written in a pipeline text."""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


@dataclass(frozen=True)
class PassSpec:
    """A registered pass: its name, options, the passes it needs before it, and its body.

    ``run(state, mod, options) -> IRModule`` gets the :class:`~cwm.compile.state.CompileState`,
    the incoming Relax module and the resolved options (python names, e.g. ``cost_model``).
    """

    name: str
    run: Callable
    options: tuple = ()
    requires: tuple = ()
    doc: str = ""
    #: passes that must not come before this one (it rewrites what they consume)
    before: tuple = ()

    def option(self, name: str) -> Option:
        for option in self.options:
            if option.name == name:
                return option
        known = ", ".join(o.name for o in self.options) or "none"
        raise PipelineError(f"pass {self.name!r} has no option {name!r}; its options: {known}")

    def resolve(self, given: dict, compile_options) -> dict:
        """All options of this pass as python keyword names: given ones, else the field/default."""
        resolved = {}
        for option in self.options:
            if option.name in given:
                value = given[option.name]
            elif option.field is not None and compile_options is not None:
                value = getattr(compile_options, option.field)
            else:
                value = option.default
            resolved[option.name.replace("-", "_")] = value
        return resolved

    def tvm_pass(self, state, given: dict):
        """This pass as a ``tvm.transform.ModulePass`` named :attr:`name`, bound to ``state``.

        An exception raised inside is kept on ``state.error``: TVM's FFI re-raises it as a plain
        ``RuntimeError``, and :meth:`cwm.compile.pipeline.Pipeline.run` re-raises the original.
        """
        import tvm

        options = self.resolve(given, state.options)
        spec = self

        def transform(mod, _ctx):
            try:
                out = spec.run(state, mod, options)
            except BaseException as error:  # noqa: BLE001 - re-raised by Pipeline.run
                state.error = error
                raise
            state.ran.append(spec.name)
            state.mod = out
            return out

        return tvm.transform.module_pass(transform, opt_level=0, name=self.name)


#: The registry: pass name -> :class:`PassSpec`.
PASSES: dict = {}


def register_pass(name: str, options=(), requires=(), doc: str = "", before=()):
    """Decorator registering ``run(state, mod, options) -> IRModule`` as the pass ``name``.

    ``requires``: passes that must come earlier; ``before``: passes that must not.
    """
    def wrap(run):
        if name in PASSES:
            raise ValueError(f"a pass named {name!r} is already registered")
        PASSES[name] = PassSpec(name, run, tuple(options), tuple(requires), doc or (run.__doc__ or "").strip(),
                                tuple(before))
        return run

    return wrap


def get_pass(name: str) -> PassSpec:
    """The registered pass ``name``; ``PipelineError`` naming the registered ones otherwise."""
    try:
        return PASSES[name]
    except KeyError:
        raise PipelineError(f"unknown pass {name!r}; registered passes: {', '.join(PASSES)}") from None


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


@register_pass("cwm-partition", options=(Option("lift-params", bool, True,
                                                "move weight-only computations into main_transform_params"),),
               requires=("cwm-import",))
def _partition(state, mod, options):
    """Legalize and fuse the module into TIR tasks (:func:`cwm.partition.fuse`), then
    extract ``main``'s MetaSchedule tasks."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from cwm.partition import fuse

    if state.params and options["lift_params"]:
        mod = relax.transform.LiftTransformParams()(mod)
        state.param_mode = "lifted"
    state.legalize_input = mod  # what fuse() legalizes: cwm-build names the ops a failing function came from
    try:
        fused = fuse(mod, state.target)
    except CompileError:
        raise
    except Exception as error:  # noqa: BLE001 - TVM's error, named by its op (cwm.compile.failure_origin)
        from cwm.compile.failure_origin import legalize_failure

        raise legalize_failure(error, mod, state.target, "cwm-partition") from error
    main_only = tvm.IRModule({gv: f for gv, f in fused.functions_items()
                              if gv.name_hint != "main_transform_params"})
    main_only = relax.transform.DeadCodeElimination(["main"])(main_only)
    state.tasks = list(ms.relax_integration.extract_tasks(main_only, state.target))
    state.fused = fused
    return fused


@register_pass("cwm-tune", options=(
    Option("trials", int, help="measured candidates per task", field="trials_per_task"),
    Option("cost-model", str, help="cwm, xgb, xgb-pretrained or random", field="cost_model",
           choices=cost_models),  # the registered names, asked when a value is checked
    Option("seed", int, help="search and cost-model seed", field="seed"),
), requires=("cwm-partition",))
def _tune(state, mod, options):
    """Tune every task of ``main`` into ``work_dir``'s JSON database (resumable, see
    :mod:`cwm.compile.tuning`). The module passes through unchanged."""
    import dataclasses

    from cwm.compile.tuning import tune_tasks

    trials = options["trials"]
    if trials < 0:
        raise PipelineError(f"option 'trials' of pass 'cwm-tune' must be >= 0, not {trials}")
    compile_options = dataclasses.replace(state.options, cost_model=options["cost_model"], seed=options["seed"])
    state.database, state.tuning = tune_tasks(state.tasks, state.target, state.work_dir, trials, compile_options)
    return mod


@register_pass("cwm-apply-db", requires=("cwm-partition",))
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
    tuned = apply_database(mod, state.target, state.database)
    state.scheduled_functions = count_scheduled(tuned)
    return tuned


@register_pass("cwm-build", requires=("cwm-import",))
def _build(state, mod, options):
    """Build the module for the target: ``tvm.compile`` for llvm, ``cwm.targets.cuda.build_cuda``
    for cuda. The executable goes to ``state.executable``; the module passes through."""
    state.executable, state.builder_name, state.build_info = build(mod, state.target,
                                                                   state.legalize_input)
    return mod


def build(mod, target, source=None):
    """``(executable, builder name, build info dict)`` of the Relax module ``mod`` for ``target``.

    llvm: ``tvm.compile`` (functions without a tuned schedule are lowered unscheduled, which is
    valid on a CPU). cuda: :func:`cwm.targets.cuda.build_cuda`, which embeds real device code
    (nvcc) and gives every function without a schedule TVM's default GPU schedule (DLight).
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
        try:
            from cwm.targets.cuda import build_cuda
        except ImportError as error:
            raise NotImplementedError(
                "building for cuda needs cwm.targets.cuda.build_cuda(mod, target) (compiles the device code "
                f"with nvcc); it is not available in this installation ({error})") from error
        import dataclasses

        built = build_cuda(mod, target)
        executable = getattr(built, "executable", built)
        info = getattr(built, "info", None)
        info = dataclasses.asdict(info) if dataclasses.is_dataclass(info) else {}
        return executable, "cwm.targets.cuda.build_cuda", info
    raise CompileError(f"cwm.compile builds for llvm and cuda targets, not {kind!r}")
