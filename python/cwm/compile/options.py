"""``CompileOptions``: every knob of :func:`cwm.compile`, in one dataclass.

The keyword arguments of ``cwm.compile(model, **kwargs)`` are exactly the fields below;
an unknown keyword is a ``TypeError`` that lists them (:func:`make_options`). Pass options
written in the pipeline text (``cwm-tune{trials=8}``) override the field they stand for for
that pass only (see :mod:`cwm.compile.passes`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


TASK_SCHEDULERS = ("round-robin", "gradient")


@dataclass
class CompileOptions:
    """How :func:`cwm.compile` imports, tunes and builds a model (docs/compile.md)."""

    #: ``"llvm"`` (this host, with ``mcpu``), ``"cuda"``, a dict or a ``tvm.target.Target``
    #: (:func:`cwm.target_spec.resolve_target`)
    target: Any = "llvm"
    #: measured candidates per task (a task already in ``work_dir``'s database counts what it has)
    trials_per_task: int = 64
    #: measured candidates for the whole network, spread over its tasks by ``task_scheduler``
    #: (None: ``trials_per_task`` times the number of tasks)
    trials: int | None = None
    #: how the network's budget is spread: ``"round-robin"`` (an equal share per task, tuned one
    #: after the other) or ``"gradient"`` (MetaSchedule's gradient task scheduler: trials go to the
    #: tasks expected to cut the weighted latency most)
    task_scheduler: str = "round-robin"
    #: ``"cwm"`` (the world model; fails clearly when none is installed), ``"xgb"``,
    #: ``"xgb-pretrained"``, ``"random"`` or a MetaSchedule ``CostModel`` instance
    cost_model: Any = "cwm"
    #: a MetaSchedule ``Runner`` (e.g. an ``RPCRunner``); None: the local pooled runner of ``settings``
    runner: Any = None
    #: a MetaSchedule ``Builder``; None: the local pooled builder of ``settings``
    builder: Any = None
    #: tuning database + logs; reused (and resumed) by a later compile with the same folder.
    #: None: a fresh temporary folder
    work_dir: Any = None
    #: seconds to wait for another process's lock on ``work_dir`` (:mod:`cwm.dirlock`) before
    #: ``WorkDirBusyError``; None waits as long as it takes (saying on stderr whom it waits for)
    lock_timeout: float | None = None
    #: a pipeline name (:data:`cwm.compile.pipeline.PIPELINES`), a pipeline text or a ``Pipeline``
    pipeline: Any = "default"
    #: example inputs of a ``torch.nn.Module`` (a tensor or a tuple of tensors); required for one
    example_inputs: Any = None
    #: ``{input name: shape}`` for ONNX inputs with symbolic dimensions
    input_shapes: dict | None = None
    #: ``{input name: dtype}`` overriding the dtypes an ONNX model declares
    input_dtypes: dict | None = None
    #: seeds MetaSchedule's search and the cost model
    seed: int = 0
    #: the world-model directory for ``cost_model="cwm"`` (None: the shipped one)
    model_dir: Any = None
    #: search/measurement knobs (:class:`cwm.tuning.settings.FastSettings`); None: the defaults
    settings: Any = None
    #: extra MetaSchedule ``MeasureCallback`` objects, called after the default ones
    measure_callbacks: tuple = ()
    #: extra ``tvm.instrument.PassInstrument`` objects for the pipeline's ``PassContext``
    instruments: tuple = ()
    #: write the IR after every cwm pass into this folder (:class:`~cwm.compile.instruments.DumpIR`)
    dump_ir: Any = None
    #: print the IR after these passes (names, e.g. ``("cwm-partition",)``)
    print_after: tuple = ()
    #: also build the untuned module and measure latency before/after tuning (into ``report``)
    measure_baseline: bool = False
    #: timed runs per latency measurement (``measure_baseline``)
    bench_runs: int = 20
    #: show progress bars (tqdm, on stderr) while tuning
    progress: bool = False
    #: show MetaSchedule's own console log
    verbose: bool = False
    #: relu / clip / maximum / minimum keep NaN as in PyTorch and ONNX Runtime (the ``cwm-keep-nan``
    #: pass; False: TVM's own lowering, where ``relu(nan)`` is 0). Max-pooling is not changed.
    keep_nan: bool = True
    #: CPU targets: mark weights layout-free before tuning and store them in the layout the tuned
    #: kernels read (the ``cwm-layout-free`` and ``cwm-pack-weights`` passes; False: keep their layout)
    pack_weights: bool = True
    #: the tuning database shared by this machine's compiles (:mod:`cwm.tuning.shared_database`):
    #: True = ``$CWM_TUNING_CACHE`` or ``~/.cache/cwm/tuning``, a folder, or False / ``"off"``
    tuning_cache: Any = True

    def __post_init__(self):
        from cwm.cost_model.factory import registered  # cheap: no TVM, no torch

        if isinstance(self.trials_per_task, bool) or not isinstance(self.trials_per_task, int) \
                or self.trials_per_task < 0:
            raise ValueError(f"trials_per_task must be an int >= 0, not {self.trials_per_task!r}")
        if self.trials is not None and (isinstance(self.trials, bool) or not isinstance(self.trials, int)
                                        or self.trials < 0):
            raise ValueError(f"trials (the network's budget) must be None or an int >= 0, not {self.trials!r}")
        if self.task_scheduler not in TASK_SCHEDULERS:
            raise ValueError(f"task_scheduler must be one of {list(TASK_SCHEDULERS)}, not {self.task_scheduler!r}")
        if isinstance(self.cost_model, str) and self.cost_model not in registered():
            raise ValueError(f"unknown cost_model {self.cost_model!r}; use one of {list(registered())} "
                             "or a MetaSchedule CostModel instance")
        if isinstance(self.print_after, str):
            self.print_after = (self.print_after,)
        self.print_after = tuple(self.print_after)
        self.instruments = tuple(self.instruments)
        self.measure_callbacks = tuple(self.measure_callbacks)
        if self.bench_runs < 1:
            raise ValueError(f"bench_runs must be >= 1, not {self.bench_runs}")
        if self.lock_timeout is not None and (isinstance(self.lock_timeout, bool) or
                                              not isinstance(self.lock_timeout, (int, float)) or self.lock_timeout < 0):
            raise ValueError(f"lock_timeout must be None (wait) or a number of seconds >= 0, not {self.lock_timeout!r}")

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]


def make_options(options: CompileOptions | None = None, caller: str = "cwm.compile()",
                 **kwargs) -> CompileOptions:
    """``options`` (or the defaults) with ``kwargs`` replaced; an unknown name is a ``TypeError``."""
    names = CompileOptions.field_names()
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise TypeError(f"{caller} got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                        f"the options (CompileOptions fields) are: {', '.join(names)}")
    if options is None:
        return CompileOptions(**kwargs)
    if not isinstance(options, CompileOptions):
        raise TypeError(f"options must be a CompileOptions, not {type(options).__name__}")
    return dataclasses.replace(options, **kwargs)


__all__ = ["CompileOptions", "make_options"]
