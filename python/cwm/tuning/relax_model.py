"""Tune a whole Relax model: fuse, extract MetaSchedule tasks, tune them all, apply the result.

MetaSchedule's own ``tune_relax`` and ``static_shape_tuning_pipeline`` hard-wire the stock
``LocalBuilder``/``LocalRunner`` or need a module that is already legalized and fused (on a
frontend module ``extract_tasks`` finds 0 tasks). Here :func:`cwm.partition.fuse` prepares the
module once, :func:`tune_model` tunes every task with cwm's in-process builder/runner and fast
search knobs, and :func:`apply_database` swaps the tuned schedules into the fused module.
"""
from __future__ import annotations

import os
import tempfile
import time
import contextlib
from dataclasses import dataclass
from typing import Any

from cwm.tuning.settings import FastSettings
from cwm.tuning.tune import close_builder, console


@dataclass
class ModelTuneOutcome:
    """Tasks tuned (names), trials measured, tuning wall time, and the database."""

    task_names: list
    n_records: int
    wall_s: float
    database: Any
    work_dir: str


def tune_model(fused, target, trials_per_task: int = 32, work_dir: str | None = None,
               cost_model="xgb", seed: int = 0, settings: FastSettings = FastSettings(),
               verbose: bool = False) -> ModelTuneOutcome:
    """Tune every task of the fused module ``fused`` for ``trials_per_task`` trials (round-robin)."""
    from tvm.s_tir import meta_schedule as ms

    from cwm.cost_model.factory import resolve as resolve_cost_model
    from cwm.dirlock import lock_dir
    from cwm.tuning.json_database import open_json_database

    work_dir = work_dir or tempfile.mkdtemp(prefix="cwm_tune_model_")
    os.makedirs(work_dir, exist_ok=True)  # tune_tasks does not create it
    cores = int(target.attrs.get("num-cores", 0) or os.cpu_count() or 1)
    start = time.perf_counter()
    builder, runner = settings.builder(target), settings.runner()
    # the same work-dir contract as cwm.tune / cwm.compile (docs/reliability.md): one writer at a
    # time, and a database damaged earlier is repaired (DatabaseWarning) before it is read
    with lock_dir(work_dir, label="work dir"), console(verbose), _closing_builder(builder), \
            _closing_builder(runner):
        database = open_json_database(work_dir)
        tasks = ms.relax_integration.extract_tasks(fused, target)
        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            tasks, work_dir=work_dir, strategy=settings.strategy(), num_threads=cores, seed=seed)
        if not contexts:
            raise ValueError("no tunable tasks: was the module fused (see cwm.partition.fuse)?")
        database = ms.tune_tasks(
            tasks=contexts, task_weights=weights, work_dir=work_dir, database=database,
            max_trials_global=trials_per_task * len(contexts), max_trials_per_task=trials_per_task,
            num_trials_per_iter=min(settings.num_trials_per_iter, trials_per_task),
            builder=builder, runner=runner,
            cost_model=resolve_cost_model(cost_model, cores), task_scheduler="round-robin")
    wall_s = time.perf_counter() - start
    names = [context.task_name for context in contexts]
    return ModelTuneOutcome(names, len(database.get_all_tuning_records()), wall_s, database, work_dir)


@contextlib.contextmanager
def _closing_builder(builder):
    try:
        yield builder
    finally:
        close_builder(builder)


def apply_database(fused, target, database):
    """``fused`` with every function found in ``database`` replaced by its best schedule."""
    import tvm
    from tvm import relax

    with target, database, tvm.transform.PassContext(opt_level=3):
        return relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(fused)


def count_scheduled(mod) -> int:
    """How many TIR functions of ``mod`` carry ``tirx.is_scheduled`` (i.e. came from tuning)."""
    from tvm import tirx

    return sum(1 for _, func in mod.functions.items()
               if isinstance(func, tirx.PrimFunc) and func.attrs is not None
               and bool(func.attrs.get("tirx.is_scheduled", False)))
