"""Running the tuning of a compile's tasks: the cost model, the shared tuning database, the
network's budget and its task scheduler (round-robin one task at a time, or MetaSchedule's
gradient scheduler in one run), and the progress bar. The work dir's state, reports and
database helpers it relies on are in :mod:`cwm.compile.tuning` (whose docstring says how reuse
and resume work).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from cwm.compile.errors import CompileError
from cwm.compile.tuning import (TaskReport, TuningReport, _load_state, _save_state, best_us, finished_before,
                                open_database, records_per_task, task_key)
from cwm.compile.untuned_candidate import lacking_untuned, measure_untuned_first, untuned_latencies


def make_model(spec, num_cores: int, seed: int, model_dir=None):
    """The cost model ``spec`` (a name the factory :func:`cwm.cost_model.factory.resolve` builds, or
    a ``CostModel``).

    ``"cwm"`` never falls back: when the world model cannot be loaded the error says so and
    names ``cost_model="xgb"`` as the way to compile without it.
    """
    from cwm.cost_model.factory import resolve

    if isinstance(spec, str) and spec == "cwm":
        try:
            return resolve("cwm", num_cores, seed=seed, model_dir=model_dir)
        except Exception as error:  # noqa: BLE001 - missing model, missing files, import errors
            where = f"model_dir={str(model_dir)!r}" if model_dir is not None else "the shipped model"
            raise CompileError(
                f"cost_model='cwm' needs the CWM world model, and {where} could not be loaded "
                f"({type(error).__name__}: {error}). Pass cost_model='xgb' to tune with MetaSchedule's "
                "XGBoost model instead, or model_dir=DIR naming a model trained with `cwm train`.") from error
    return resolve(spec, num_cores, seed=seed)


def _check_runner(target, runner) -> None:
    """Tuning for a GPU with the local runner needs a GPU here."""
    kind = target.kind.name
    if runner is not None or kind == "llvm":
        return
    import tvm

    if not tvm.runtime.device(kind, 0).exist:
        raise CompileError(
            f"tuning for target {kind!r} needs a device to measure on, and this machine has no {kind} device: "
            "pass runner= (e.g. a MetaSchedule RPCRunner reaching a GPU host), or compile without tuning "
            "(pipeline='no-tune', default schedules) or from an existing database (pipeline='from-db', work_dir=...)")


def _counter(bar):
    """A ``MeasureCallback`` counting measured candidates into the progress bar ``bar``."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class CountMeasured(PyMeasureCallback):
        def __init__(self):
            super().__init__()
            self.count = 0

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            self.count += len(measure_candidates)
            bar.update(len(measure_candidates))

    return CountMeasured()


def tune_tasks(tasks, target, work_dir: str, trials: int, options) -> tuple:
    """Tune ``tasks`` (``ExtractedTask`` list) for ``trials`` each; return ``(database, TuningReport)``.

    ``options`` is the :class:`~cwm.compile.options.CompileOptions` (cost model, seed,
    settings, runner, builder, measure callbacks, progress, verbose, model_dir).
    """
    start = time.perf_counter()
    shared = shared_database(options, target)
    imported = shared.import_into(work_dir, tasks) if shared is not None else [0] * len(tasks)
    database = open_database(work_dir)
    saved = _load_state(work_dir)
    existing = records_per_task(database, tasks)
    name = options.cost_model if isinstance(options.cost_model, str) else type(options.cost_model).__name__
    report = TuningReport(work_dir=work_dir, cost_model=name, trials_per_task=trials,
                          shared_database=shared.folder if shared is not None else None)
    try:
        _tune_planned(tasks, target, work_dir, trials, options, database, saved, existing, imported, report)
    finally:  # interrupted or not: what was measured joins the shared database
        if shared is not None:
            report.shared_added = _export(shared, work_dir, tasks)
    for task, item, untuned in zip(tasks, report.tasks, untuned_latencies(database, tasks)):
        item.best_us = best_us(database, task)
        item.untuned_us = untuned
    report.wall_s = time.perf_counter() - start
    return database, report


def shared_database(options, target):
    """The :class:`~cwm.tuning.shared_database.SharedDatabase` of ``options.tuning_cache`` for
    ``target``, or None when it is off."""
    from cwm.tuning.shared_database import SharedDatabase, resolve_root

    root = resolve_root(options.tuning_cache)
    return SharedDatabase(root, target) if root else None


def _export(shared, work_dir: str, tasks) -> int:
    """Append the work dir's records to the shared database; a failure is a warning, not lost work
    (the records stay in ``work_dir``, and the next compile with it exports them)."""
    import warnings

    try:
        return shared.export_from(work_dir, tasks)
    except Exception as error:  # noqa: BLE001 - the compile's own database is complete either way
        warnings.warn(f"could not add this compile's records to the shared tuning database {shared.folder}: "
                      f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
        return 0


def task_budgets(n_tasks: int, trials_per_task: int, total: int | None) -> list:
    """Trials per task for round-robin: ``trials_per_task`` each, or ``total`` split evenly (the
    first ``total % n`` tasks get one more)."""
    if total is None:
        return [trials_per_task] * n_tasks
    share, extra = divmod(total, max(n_tasks, 1))
    return [share + (1 if i < extra else 0) for i in range(n_tasks)]


def _tune_planned(tasks, target, work_dir, trials, options, database, saved, existing, imported, report) -> None:
    """Tune every task for what it lacks (see the module docstring), filling ``report.tasks``.

    ``options.task_scheduler`` spreads the network's budget (``options.trials``, or ``trials`` per
    task): ``round-robin`` gives every task its share, tuned one after the other; ``gradient``
    tunes all tasks in one MetaSchedule run whose gradient task scheduler gives the next round to
    the task expected to cut the weighted end-to-end latency most."""
    from cwm.tuning.settings import default_settings

    joint = options.task_scheduler == "gradient"
    budgets = task_budgets(len(tasks), trials, options.trials)
    plan = []
    for index, task in enumerate(tasks):
        key = task_key(task)
        item = TaskReport(task.task_name, key, int(task.weight), budgets[index], reused=existing[index],
                          shared=imported[index])
        if existing[index] >= budgets[index] and not joint:
            item.status = "reused" if existing[index] else "untuned"  # trials=0 and no records
        elif finished_before(saved.get(key), budgets[index], existing[index]):
            item.status = "finished"
        else:
            plan.append((index, task, item, max(budgets[index] - existing[index], 0)))
        report.tasks.append(item)
    remaining_total = sum(budgets) - sum(existing)
    if joint and remaining_total <= 0:
        for _, _, item, _ in plan:
            item.status = "reused" if item.reused else "untuned"
        plan = []
    # records from before the untuned candidate existed: measure it once, beside the budget
    upgrade = [(task, item) for task, item, lacking in zip(tasks, report.tasks, lacking_untuned(database, tasks, target))
               if item.status in ("reused", "finished") and lacking]
    if not plan and not upgrade:
        return
    _check_runner(target, options.runner)
    settings = options.settings or default_settings(options.cost_model)
    seed_library = None
    if settings.seed_trials > 0:
        from cwm.tuning.seed_library import model_seed_library

        seed_library = model_seed_library(options.model_dir)
    cores = int(target.attrs.get("num-cores", 0) or os.cpu_count() or 1)
    model = make_model(options.cost_model, cores, options.seed, options.model_dir)
    own_builder, own_runner = options.builder is None, options.runner is None
    # with the target: for cuda the builder embeds real GPU code in its artifacts (docs/cuda.md)
    builder = settings.builder(target) if own_builder else options.builder
    runner = settings.runner() if own_runner else options.runner
    bar = _progress_bar((remaining_total if joint else sum(p[3] for p in plan)) + len(upgrade), options.progress)
    tools = _Tools(work_dir, options, settings, cores, model, builder, runner, _counter(bar), bar, database, target,
                   seed_library)
    try:
        for task, item in upgrade:
            item.new += int(tools.untuned_first(task))
        if joint and plan:
            _tune_jointly(plan, remaining_total, tools)
        elif plan:
            _tune_one_by_one(plan, tools, saved)
    finally:
        bar.finish()
        if own_builder:
            _close(builder)
        if own_runner:
            _close(runner)


def _close(pool) -> None:
    from cwm.tuning.tune import close_builder

    close_builder(pool)


@dataclass
class _Tools:
    """What tuning a plan needs, made once per compile."""

    work_dir: str
    options: object
    settings: object
    cores: int
    model: object
    builder: object
    runner: object
    counter: object
    bar: object
    database: object
    target: object = None
    #: a :class:`~cwm.tuning.seed_library.SeedLibrary` when the settings measure transferred seeds
    seed_library: object = None

    def contexts(self, task, index):
        """``(contexts, weights, reason)``: MetaSchedule's tune contexts of ``task``, or the reason
        its design space cannot be generated."""
        from tvm.s_tir import meta_schedule as ms

        from cwm.tuning.design_space import design_space_error

        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            [task], work_dir=self.work_dir, strategy=self.settings.strategy(self.seed_library), num_threads=self.cores,
            seed=self.options.seed + index)
        return contexts, weights, (design_space_error(contexts[0]) if contexts else None)

    def untuned_first(self, task) -> bool:
        """Measure ``task``'s untuned candidate as the first trial of its budget
        (:mod:`cwm.compile.untuned_candidate`); True when it was measured now."""
        measured = measure_untuned_first(task, self.target, self.database, self.builder, self.runner)
        if measured:
            self.bar.update(1)
        return measured

    def tune(self, contexts, weights, budget: int, per_task: int, scheduler: str, per_iter: int | None = None) -> None:
        from tvm.s_tir import meta_schedule as ms

        callbacks = [*ms.measure_callback.MeasureCallback.create("default"), self.counter,
                     *self.options.measure_callbacks]
        per_iter = min(self.settings.num_trials_per_iter, per_iter or per_task)
        ms.tune_tasks(tasks=contexts, task_weights=weights, work_dir=self.work_dir, max_trials_global=budget,
                      max_trials_per_task=per_task, num_trials_per_iter=per_iter,
                      builder=self.builder, runner=self.runner, database=self.database, cost_model=self.model,
                      measure_callbacks=callbacks, task_scheduler=scheduler)


def _tune_one_by_one(plan, tools: _Tools, saved: dict) -> None:
    from cwm.tuning.tune import console

    for index, task, item, remaining in plan:
        tools.bar.set_description(task.task_name)
        task_start, before = time.perf_counter(), tools.counter.count
        with console(tools.options.verbose):
            contexts, weights, reason = tools.contexts(task, index)
            if reason is not None:  # built with its default schedule (cwm-build)
                item.status, item.reason = "untunable", reason
                item.wall_s = time.perf_counter() - task_start
                continue
            untuned = int(tools.untuned_first(task))
            if contexts and remaining > untuned:
                tools.tune(contexts, weights, remaining - untuned, remaining - untuned, "round-robin")
        item.new = tools.counter.count - before + untuned
        item.wall_s = time.perf_counter() - task_start
        saved[item.key] = {"name": task.task_name, "done_at": item.requested,
                           "records": records_per_task(tools.database, [task])[0],
                           "exhausted": item.new < remaining}
        _save_state(tools.work_dir, saved)


def _tune_jointly(plan, budget: int, tools: _Tools) -> None:
    """All planned tasks in one MetaSchedule run under its gradient task scheduler, ``budget``
    trials in all (any task may take up to all of them)."""
    from cwm.tuning.tune import console

    start = time.perf_counter()
    contexts, weights, tuned = [], [], []
    with console(tools.options.verbose):
        for index, task, item, _ in plan:
            ctx, w, reason = tools.contexts(task, index)
            if reason is not None:
                item.status, item.reason = "untunable", reason
                continue
            if ctx:
                contexts += ctx
                weights += w
                tuned.append((task, item))
        if not contexts:
            return
        tools.bar.set_description(f"{len(contexts)} tasks")
        before = records_per_task(tools.database, [t for t, _ in tuned])
        budget -= sum(tools.untuned_first(task) for task, _ in tuned)
        # the scheduler first gives every task one round: rounds small enough for that to fit the budget
        if budget > 0:
            tools.tune(contexts, weights, budget, budget, "gradient", per_iter=max(1, budget // len(contexts)))
    after = records_per_task(tools.database, [t for t, _ in tuned])
    wall = (time.perf_counter() - start) / max(len(tuned), 1)
    for (task, item), b, a in zip(tuned, before, after):
        item.new, item.wall_s = a - b, wall


class _NoBar:
    def update(self, n=1):
        pass

    def set_description(self, text):
        pass

    def finish(self):
        pass


class _Bar(_NoBar):
    """A tqdm bar over the planned trials; a task whose space is smaller than its budget ends
    early, so :meth:`finish` sets the total to what was measured."""

    def __init__(self, total: int):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="trial", leave=True, dynamic_ncols=True)

    def update(self, n=1):
        self.bar.update(n)

    def set_description(self, text):
        self.bar.set_description(text)

    def finish(self):
        self.bar.total = self.bar.n
        self.bar.set_description("tuned")
        self.bar.refresh()
        self.bar.close()


def _progress_bar(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    try:
        return _Bar(total)
    except ImportError:  # tqdm is optional
        return _NoBar()

