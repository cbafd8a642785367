"""``tune_tir``: MetaSchedule's ``tune_tir`` with cwm's fast defaults, and what it found.

Defaults: the host target with ``mcpu`` (:mod:`cwm.target_spec`), the worker-pool
builder/runner with timeouts and the small-population search of
:class:`~cwm.tuning.settings.FastSettings`, MetaSchedule's XGBoost cost model. 64 trials of a
256^3 matmul on 2 vCPUs (znver5, ``bench/fast_tuning.py``, idle machine): 14.0 s, best 142 us;
stock ``ms.tune_tir``: 57.7 s, best 665 us (on a slower znver3 box stock produced no valid
record in 600 s: every build timed out).

:func:`tune` (exported as ``cwm.tune``) is the public one-task API on top of :func:`tune_tir`:
it checks the workload, picks a cost model by name (the factory :mod:`cwm.cost_model.factory`)
and returns a :class:`TuneResult` with every measured record and the wall time split into
search, cost model, build and run (measured by the wrappers of :mod:`cwm.tuning.timing`).
See docs/tuning.md.
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from cwm.cost_model.factory import registered, resolve as resolve_cost_model  # cheap: no TVM, no torch
from cwm.target_spec import resolve_target
from cwm.tuning.settings import FastSettings

#: Failed builds/runs are stored with this latency (seconds) by MetaSchedule.
FAILED_SECS = 1e10


@dataclass
class TuneOutcome:
    """What a tuning run produced. ``best_us`` is ``inf`` when no candidate ran."""

    best_us: float
    n_records: int
    n_valid: int
    wall_s: float
    database: Any
    work_dir: str
    #: one dict per measured candidate, in measurement order (:func:`cwm.dataset.recorder.make_recorder`)
    records: list = field(default_factory=list)
    #: wall seconds: total_s, search_s, cost_model_s (incl. cost_model_setup_s), build_s, run_s
    timing: dict = field(default_factory=dict)
    #: the cost model that was used (unwrapped), e.g. a ``CWMCostModel`` to ``save``
    cost_model: Any = None


def summarize(database) -> tuple[int, int, float]:
    """``(n_records, n_valid, best_us)`` over all records of ``database``."""
    records = database.get_all_tuning_records()
    latencies = []
    for record in records:
        secs = [float(s) for s in (record.run_secs or [])]
        if secs and max(secs) < FAILED_SECS:
            latencies.append(sum(secs) / len(secs))
    best_us = min(latencies) * 1e6 if latencies else math.inf
    return len(records), len(latencies), best_us


class _Discard:
    """A write-only stream that drops everything (MetaSchedule's console log handler)."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass


def console(verbose: bool):
    """Context in which MetaSchedule's per-round console tables are shown or dropped.

    ``ms.tune_tir`` (re)configures a ``StreamHandler`` on ``sys.stdout`` at DEBUG level each
    call; the logs under ``work_dir/logs`` are complete either way. Also drops unnamed
    handlers from MetaSchedule's logger (see :func:`drop_unnamed_ms_handlers`).
    """
    drop_unnamed_ms_handlers()
    return contextlib.nullcontext() if verbose else contextlib.redirect_stdout(_Discard())


def drop_unnamed_ms_handlers() -> None:
    """Remove handlers without a name from the ``tvm.s_tir.meta_schedule`` logger.

    MetaSchedule's logging set-up (``create_loggers``) formats the *names* of the handlers
    already on its logger and crashes on ``None`` (``AttributeError: 'NoneType' object has no
    attribute 'format'``). Unnamed handlers end up there when its ``dictConfig`` runs while
    another tool (pytest's log capture, seen here) has attached its own; the second tuning
    call in such a process then fails.
    """
    import logging

    ms_logger = logging.getLogger("tvm.s_tir.meta_schedule")
    for handler in list(ms_logger.handlers):
        if handler.get_name() is None:
            ms_logger.removeHandler(handler)


def close_builder(builder) -> None:
    """Stop a builder's (or runner's) worker processes, if it has any (``Pooled*``)."""
    close = getattr(builder, "close", None)
    if close is not None:
        close()


def _num_cores(target) -> int:
    return int(target.attrs.get("num-cores", 0) or os.cpu_count() or 1)


def _as_runner(runner):
    from tvm.s_tir import meta_schedule as ms

    return ms.runner.Runner.create(runner) if isinstance(runner, str) else runner


def _as_builder(builder):
    from tvm.s_tir import meta_schedule as ms

    return ms.builder.Builder.create(builder) if isinstance(builder, str) else builder


class NoLocalGPU(RuntimeError):
    """Tuning for a GPU target without a runner, on a machine without such a GPU."""


def local_device_exists(target) -> bool:
    """True when this machine has a device of ``target``'s kind (``tvm.cuda(0).exist`` for cuda);
    always True for CPU targets."""
    import tvm

    kind = target.kind.name
    if kind == "cuda":
        return bool(tvm.cuda(0).exist)
    return True


def check_local_device(target, runner) -> None:
    """:class:`NoLocalGPU` when ``target`` needs a GPU, ``runner`` is None (measure locally) and
    this machine has none."""
    if runner is None and not local_device_exists(target):
        raise NoLocalGPU(f"no local GPU was found for target {target.kind.name} ({target}); candidates cannot be "
                         "measured here. Pass an RPC runner to a machine with the GPU: "
                         "runner=cwm.tuning.rpc.runner_from_spec('HOST:PORT:KEY') in Python, or "
                         "`cwm tune ... --rpc HOST:PORT:KEY` (docs/rpc.md)")


def _prim_funcs(mod) -> list:
    """``[(name, PrimFunc)]`` of a PrimFunc (named "main") or of the PrimFuncs of an IRModule."""
    from tvm import tirx

    if isinstance(mod, tirx.PrimFunc):
        return [("main", mod)]
    return [(gv.name_hint, f) for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)]


def tune_tir(mod, target="llvm", trials: int = 64, work_dir: str | None = None,
             cost_model="xgb", seed: int = 0, settings: FastSettings = FastSettings(),
             runner=None, builder=None, verbose: bool = False, measure_callbacks=(),
             seed_library=None, seed_config=None, **cost_model_options) -> TuneOutcome:
    """Tune the TIR ``mod`` for ``trials`` measured candidates; see the module docstring.

    ``target`` is anything :func:`~cwm.target_spec.resolve_target` accepts; ``work_dir``
    (a fresh temp dir when None) receives MetaSchedule's JSON database and logs; ``runner``
    and ``builder`` override the pooled ones from ``settings`` (a MetaSchedule ``Runner`` /
    ``Builder``, used as is, or a name such as ``"local"``). For a cuda target the default
    builder embeds real GPU code (``settings.builder(target)``), and ``runner=None`` raises
    :class:`NoLocalGPU` unless this machine has a GPU (``tvm.cuda(0).exist``): pass an
    ``RPCRunner`` (:func:`cwm.tuning.rpc.runner_from_spec`). ``verbose`` shows MetaSchedule's
    console log (otherwise it only goes to ``work_dir/logs``). ``cost_model`` (a name or a
    ``CostModel``) and ``cost_model_options`` go to the factory's
    :func:`~cwm.cost_model.factory.resolve` (with ``seed``); ``seed`` also seeds MetaSchedule's
    search (``ms.tune_tir(seed=...)``). ``measure_callbacks`` are added after
    MetaSchedule's default ones. ``seed_library`` (a :class:`~cwm.tuning.seed_library.SeedLibrary`)
    with ``settings.seed_trials > 0``, or with a ``seed_config``, makes the search a
    :class:`~cwm.tuning.seeded_search.SeededSearch`. Builder, runner and cost model are wrapped in timers
    (:mod:`cwm.tuning.timing`) and every measured candidate is recorded; both end up in the
    returned :class:`TuneOutcome` (``timing``, ``records``). ``work_dir`` is locked while it is
    tuned into (:mod:`cwm.dirlock`) and its database is checked and repaired before it is used
    (:mod:`cwm.tuning.json_database`). A task whose design space MetaSchedule cannot generate
    raises :class:`~cwm.tuning.design_space.UntunableTaskError` with the reason, before anything
    is measured.
    """
    from tvm.s_tir import meta_schedule as ms

    from cwm.dataset.recorder import make_recorder
    from cwm.tuning.timing import Clock, TimedBuilder, TimedCostModel, TimedRunner

    from cwm.dirlock import lock_dir
    from cwm.tuning.design_space import check_tunable, short_reason, UntunableTaskError
    from cwm.tuning.json_database import open_json_database
    from tvm.s_tir.schedule import ScheduleError

    target = resolve_target(target)
    check_local_device(target, runner)
    for task_name, func in _prim_funcs(mod):  # a ScheduleError of design-space generation, in one line
        check_tunable(func, target, task_name, seed=seed)
    work_dir = work_dir or tempfile.mkdtemp(prefix="cwm_tune_")
    os.makedirs(work_dir, exist_ok=True)
    cores = _num_cores(target)
    clock = Clock()
    start = time.perf_counter()
    model = resolve_cost_model(cost_model, cores, seed=seed, **cost_model_options)
    setup_s = time.perf_counter() - start
    own_builder, own_runner = builder is None, runner is None
    builder = _as_builder(builder) if builder is not None else settings.builder(target)
    runner = _as_runner(runner) if runner is not None else settings.runner()
    records: list[dict] = []
    strategy = settings.strategy(seed_library, seed_config)
    callbacks = list(ms.measure_callback.MeasureCallback.create("default"))
    callbacks += [make_recorder(records.extend, keep_script=False), *measure_callbacks]
    try:
        # one process at a time in work_dir, its database checked and repaired (docs/reliability.md)
        with lock_dir(work_dir, label="work dir"), console(verbose):
            database = ms.tune_tir(
                mod, target, work_dir, max_trials_global=trials,
                num_trials_per_iter=settings.num_trials_per_iter,
                builder=TimedBuilder(builder, clock), runner=TimedRunner(runner, clock),
                database=open_json_database(work_dir),
                cost_model=TimedCostModel(model, clock), strategy=strategy,
                measure_callbacks=callbacks, num_tuning_cores=cores, seed=seed)
    except ScheduleError as error:  # raised by MetaSchedule's design-space generation
        raise UntunableTaskError(short_reason(error)) from None
    finally:
        close_start = time.perf_counter()
        if own_builder:
            close_builder(builder)
        clock.add("build", close_start)
        close_start = time.perf_counter()
        if own_runner:
            close_builder(runner)
        clock.add("run", close_start)
    wall_s = time.perf_counter() - start
    n_records, n_valid, best_us = summarize(database)
    secs = clock.seconds
    cost_model_s = secs["cost_model"] + setup_s
    timing = {"total_s": wall_s, "search_s": max(0.0, wall_s - cost_model_s - secs["build"] - secs["run"]),
              "cost_model_s": cost_model_s, "build_s": secs["build"], "run_s": secs["run"],
              "cost_model_setup_s": setup_s, "calls": dict(clock.calls)}
    return TuneOutcome(best_us, n_records, n_valid, wall_s, database, work_dir, records, timing, model)


# ---------------------------------------------------------------------------- public API
@dataclass
class TuneResult:
    """What :func:`tune` found.

    ``best_us``: the fastest measured candidate (mean of its run times, as MetaSchedule ranks
    them), ``inf`` if none ran; ``best_trace``: its trace as JSON text (the dataset's form,
    :func:`cwm.actions.trace_io.trace_to_json`), or None; ``records``: one dict per measured
    candidate, in order: ``trace``, ``run_secs`` (list or None), ``latency_us`` (mean, None if
    it failed) and ``error`` (the build or run error, or None); ``wall``: seconds
    ``{search_s, cost_model_s, build_s, run_s, total_s}``, where ``search_s`` is the rest of
    ``total_s`` (design-space generation, evolution, measure callbacks) and ``cost_model_s``
    includes building the cost model (loading the world model, ``cost_model_setup_s``).
    """

    best_us: float
    best_trace: str | None
    records: list
    wall: dict
    trials: int
    cost_model: str
    target: str
    work_dir: str
    database: Any = field(default=None, repr=False)
    #: the cost model object that was used (e.g. a ``CWMCostModel``, whose ``save`` keeps what it learned)
    model: Any = field(default=None, repr=False)

    @property
    def n_valid(self) -> int:
        return sum(r["latency_us"] is not None for r in self.records)

    def summary(self) -> str:
        """A small text table: best latency, trials, wall-time split."""
        w = self.wall
        best = f"{self.best_us:.1f} us" if math.isfinite(self.best_us) else "none (no candidate ran)"
        rows = [("cost model", self.cost_model), ("target", self.target),
                ("trials", f"{len(self.records)} measured ({self.n_valid} valid) of {self.trials} requested"),
                ("best latency", best),
                ("wall time", f"{w['total_s']:.1f} s"),
                ("  search", f"{w['search_s']:.1f} s"), ("  cost model", f"{w['cost_model_s']:.1f} s"),
                ("  build", f"{w['build_s']:.1f} s"), ("  run", f"{w['run_s']:.1f} s"),
                ("work dir", self.work_dir)]
        return "\n".join(f"{k:<14}{v}" for k, v in rows)


def _record(raw: dict) -> dict:
    secs = raw.get("run_secs")
    error = raw.get("build_error") or raw.get("run_error") or None
    ok = bool(secs) and error is None and max(secs) < FAILED_SECS
    return {"trace": raw["trace"], "run_secs": secs, "latency_us": sum(secs) / len(secs) * 1e6 if ok else None,
            "error": error}


def check_workload(workload):
    """The one-task IRModule or PrimFunc ``workload``, checked; ``TypeError``/``ValueError`` otherwise."""
    import tvm
    from tvm import tirx

    if isinstance(workload, tirx.PrimFunc):
        return workload
    if isinstance(workload, tvm.IRModule):
        funcs = list(workload.functions_items())
        prim = [gv.name_hint for gv, f in funcs if isinstance(f, tirx.PrimFunc)]
        if len(prim) != 1 or len(funcs) != 1:
            raise ValueError(f"cwm.tune tunes one TIR task: the IRModule must hold exactly one PrimFunc, it holds "
                             f"{len(prim)} PrimFunc(s) among {len(funcs)} function(s); for a Relax model use "
                             "cwm.tuning.tune_model")
        return workload
    raise TypeError("cwm.tune takes a TIR PrimFunc (tvm.tirx.PrimFunc) or a tvm.IRModule holding one PrimFunc, "
                    f"not {type(workload).__module__}.{type(workload).__name__}")


def tune(workload, target="llvm", trials: int = 64, cost_model="cwm", work_dir: str | None = None, runner=None,
         seed: int = 0, model_dir=None, pretrained_xgb=None, dataset="data/dataset", cache_dir=None,
         builder=None, settings: FastSettings | None = None, verbose: bool = False) -> TuneResult:
    """Tune one TIR task with MetaSchedule's evolutionary search and the chosen cost model.

    ``workload``: a ``tvm.tirx.PrimFunc`` or an ``IRModule`` holding one PrimFunc (anything
    else: ``TypeError``). ``cost_model``: ``"cwm"`` (the world model, adapted to the task as it
    is measured; ``model_dir`` or the shipped model), ``"xgb"`` (MetaSchedule's ``XGBModel`` at
    its defaults), ``"xgb-pretrained"`` (``XGBModel`` pre-trained on the dataset's training
    records: the file ``pretrained_xgb``, or built from ``dataset`` once and cached in
    ``cache_dir``), ``"random"`` (MetaSchedule's ``RandomModel``), or a ``CostModel`` instance.
    ``runner``: None -> the pooled local runner of ``settings`` (for ``target="cuda"`` only
    where this machine has a GPU; otherwise :class:`NoLocalGPU`); a MetaSchedule ``Runner``
    (e.g. ``RPCRunner``, :func:`cwm.tuning.rpc.runner_from_spec`) is used as is, not closed.
    ``seed`` seeds MetaSchedule's search and the cost model. ``settings``: the search and
    measurement knobs; None: :func:`~cwm.tuning.settings.default_settings` of ``cost_model``.
    Settings with ``seed_trials > 0`` measure that many schedules transferred from similar
    training workloads (:mod:`cwm.tuning.seeded_search`), from the seed library of ``model_dir``
    (or of the shipped model).
    A task MetaSchedule cannot generate a design space for (e.g. two reductions feeding one
    epilogue) raises :class:`~cwm.tuning.design_space.UntunableTaskError` (``cwm.UntunableTaskError``)
    whose ``reason`` is one line, before anything is measured.
    See :func:`tune_tir` for the rest and :class:`TuneResult` for what comes back.
    """
    check_workload(workload)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an int >= 1 (candidates to measure), not {trials!r}")
    if isinstance(cost_model, str) and cost_model not in registered():
        raise ValueError(f"unknown cost model {cost_model!r}; use one of {list(registered())} or a CostModel")
    from cwm.tuning.settings import default_settings

    settings = settings or default_settings(cost_model)
    seed_library = None
    if settings.seed_trials > 0:
        from cwm.tuning.seed_library import model_seed_library

        seed_library = model_seed_library(model_dir)
    out = tune_tir(workload, target=target, trials=trials, work_dir=work_dir, cost_model=cost_model, seed=seed,
                   settings=settings, seed_library=seed_library, runner=runner, builder=builder, verbose=verbose, model_dir=model_dir,
                   pretrained_xgb=pretrained_xgb, dataset=dataset, cache_dir=cache_dir)
    records = [_record(r) for r in out.records]
    valid = [r for r in records if r["latency_us"] is not None]
    best = min(valid, key=lambda r: r["latency_us"]) if valid else None
    wall = {k: out.timing[k] for k in ("search_s", "cost_model_s", "build_s", "run_s", "total_s",
                                       "cost_model_setup_s")}
    name = cost_model if isinstance(cost_model, str) else type(cost_model).__name__
    return TuneResult(best_us=best["latency_us"] if best else math.inf, best_trace=best["trace"] if best else None,
                      records=records, wall=wall, trials=trials, cost_model=name,
                      target=str(resolve_target(target)), work_dir=out.work_dir, database=out.database,
                      model=out.cost_model)
