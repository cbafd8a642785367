"""``tune_tir``: MetaSchedule's ``tune_tir`` with cwm's fast defaults, and what it found.

Defaults: the host target with ``mcpu`` (:mod:`cwm.tuning.target`), the worker-pool
builder/runner with timeouts and the small-population search of
:class:`~cwm.tuning.settings.FastSettings`, MetaSchedule's XGBoost cost model. 64 trials of a
256^3 matmul on 2 vCPUs (znver5, ``bench/fast_tuning.py``, idle machine): 14.0 s, best 142 us;
stock ``ms.tune_tir``: 57.7 s, best 665 us (on a slower znver3 box stock produced no valid
record in 600 s: every build timed out).
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from cwm.tuning.settings import FastSettings
from cwm.tuning.target import resolve_target

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


def make_cost_model(spec="xgb", num_cores: int = 2):
    """``"xgb"`` -> ``XGBModel(num_tuning_cores=num_cores)`` (MetaSchedule defaults otherwise);
    other strings go to ``CostModel.create``; a ``CostModel`` instance is returned as is."""
    from tvm.s_tir import meta_schedule as ms

    if isinstance(spec, str):
        if spec == "xgb":
            return ms.cost_model.XGBModel(num_tuning_cores=num_cores)
        return ms.cost_model.CostModel.create(spec)
    return spec


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


def tune_tir(mod, target="llvm", trials: int = 64, work_dir: str | None = None,
             cost_model="xgb", seed: int = 0, settings: FastSettings = FastSettings(),
             runner=None, builder=None, verbose: bool = False) -> TuneOutcome:
    """Tune the TIR ``mod`` for ``trials`` measured candidates; see the module docstring.

    ``target`` is anything :func:`~cwm.tuning.target.resolve_target` accepts; ``work_dir``
    (a fresh temp dir when None) receives MetaSchedule's JSON database and logs; ``runner``
    and ``builder`` override the in-process ones from ``settings``; ``verbose`` shows
    MetaSchedule's console log (otherwise it only goes to ``work_dir/logs``).
    """
    from tvm.s_tir import meta_schedule as ms

    target = resolve_target(target)
    work_dir = work_dir or tempfile.mkdtemp(prefix="cwm_tune_")
    os.makedirs(work_dir, exist_ok=True)
    cores = _num_cores(target)
    start = time.perf_counter()
    own_builder, own_runner = builder is None, runner is None
    builder, runner = builder or settings.builder(), runner or settings.runner()
    try:
        with console(verbose):
            database = ms.tune_tir(
                mod, target, work_dir, max_trials_global=trials,
                num_trials_per_iter=settings.num_trials_per_iter,
                builder=builder, runner=runner,
                cost_model=make_cost_model(cost_model, cores), strategy=settings.strategy(),
                num_tuning_cores=cores, seed=seed)
    finally:
        if own_builder:
            close_builder(builder)
        if own_runner:
            close_builder(runner)
    wall_s = time.perf_counter() - start
    n_records, n_valid, best_us = summarize(database)
    return TuneOutcome(best_us, n_records, n_valid, wall_s, database, work_dir)
