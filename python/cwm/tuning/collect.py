"""The collector: measure candidates of each task on this machine and store them durably.

It fills the trajectory dataset (:class:`cwm.dataset.store.DatasetStore`) by running tuning, so
it sits in :mod:`cwm.tuning`, above the dataset package that the model reads
(docs/architecture.md); ``python -m cwm dataset collect`` runs it (:mod:`cwm.dataset_cli`).

Per task, two phases, both through MetaSchedule's own tuning loop (so measurement goes
through its ``Runner`` interface and an ``RPCRunner`` plugs in unchanged):

1. ``random``: ``random_samples`` candidates drawn by ``ReplayTrace`` (random decisions
   in the design space), so slow programs are represented;
2. ``search``: ``trials`` candidates from ``EvolutionarySearch`` guided by MetaSchedule's
   XGBoost cost model, as a real tuning run would measure them.

Every measured batch is appended to the task's journal (fsync) by a measure callback.
Restarting after a crash (even ``kill -9``) resumes each phase where its journal stopped:
the search phase is re-seeded with the records already measured, so they are neither lost
nor measured again. A finished task is compacted into its shard.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass

from cwm.dataset.store import DatasetStore

logger = logging.getLogger("cwm.dataset")


@dataclass(frozen=True)
class CollectConfig:
    trials: int = 200  # search-phase candidates per task
    random_samples: int = 32  # random design-space candidates per task
    repeat: int = 3  # measurements kept per candidate (run_secs has this many entries)
    min_repeat_ms: int = 10
    build_timeout_s: float = 30.0
    seed: int = 0


def _workload(meta: dict):
    import tvm

    return tvm.ir.load_json(meta["workload"])


def _seed_database(work_dir: str, mod, target, records: list[dict]):
    """A JSON database holding the already-measured records, so search does not repeat them."""
    from tvm.s_tir import meta_schedule as ms

    from cwm.replay import apply_trace

    db = ms.database.JSONDatabase(work_dir=work_dir)
    workload = db.commit_workload(mod)
    for r in records:
        secs = r["run_secs"] if r["run_secs"] and not r.get("run_error") else [1e10]
        trace = apply_trace(mod, r["trace"]).trace
        db.commit_tuning_record(ms.database.TuningRecord(trace, workload, secs, target))
    return db


def _tune_phase(mod, target, phase: str, n: int, previous: list[dict], cfg: CollectConfig, sink, builder,
                runner=None, seed: int | None = None):
    from tvm.s_tir import meta_schedule as ms

    from cwm.dataset.recorder import make_recorder
    from cwm.tuning.settings import FastSettings
    from cwm.tuning.tune import console

    settings = FastSettings(repeat=cfg.repeat, min_repeat_ms=cfg.min_repeat_ms)
    strategy = settings.strategy() if phase == "search" else ms.search_strategy.ReplayTrace()
    cost_model = ms.cost_model.XGBModel(num_tuning_cores=2) if phase == "search" else "random"
    callbacks = ms.measure_callback.MeasureCallback.create("default") + [make_recorder(sink, keep_script=False)]
    with tempfile.TemporaryDirectory(prefix="cwm_collect_") as wd, console(False):
        db = _seed_database(wd, mod, target, previous)
        ms.tune_tir(mod, target, wd, max_trials_global=n, num_trials_per_iter=settings.num_trials_per_iter,
                    builder=builder, runner=runner or settings.runner(), database=db, cost_model=cost_model,
                    strategy=strategy, measure_callbacks=callbacks, num_tuning_cores=2,
                    seed=cfg.seed + len(previous) if seed is None else seed)


#: seed stride between the attempts of one phase (an attempt's seed is otherwise a function
#: of the records already measured, so a retry after a fruitless attempt would repeat it)
_RETRY_SEED_STRIDE = 100_003


def collect_task(store: DatasetStore, key: str, target, cfg: CollectConfig, builder, on_records=None,
                 max_attempts: int = 3, runner=None) -> int:
    """Collect (or finish collecting) one task; returns the number of new records.

    MetaSchedule does not skip candidates already in its database (a TODO in
    ``evolutionary_search.cc``), so after a restart it may measure a program again (re-seeded
    with the measured records, the search readily proposes the best of them): such a result
    is dropped (programs are compared by structural hash) and the phase tops up its budget in
    another attempt. The first attempt of a phase uses the seed ``cfg.seed + records measured``
    (so a resumed run repeats what the killed one would have done); each retry uses another
    seed, since the same seed on the same records proposes the same programs again. A phase
    stops short of its budget only after ``max_attempts`` attempts in a row gave nothing new
    (the design space is exhausted, e.g. a tiny task); that is logged as a warning.
    """
    mod = _workload(store.get_task(key))
    new = 0
    for phase, budget in (("random", cfg.random_samples), ("search", cfg.trials)):
        attempt, fruitless = 0, 0
        while True:
            journal = store.journal_records(key)
            have = [r for r in journal if r["source"] == phase]
            if len(have) >= budget:
                break
            seen = {r["final_hash"] for r in journal}
            state = {"seq": len(journal), "left": budget - len(have)}

            def sink(batch, phase=phase, seen=seen, state=state):
                rows = []
                for r in batch:
                    if r["final_hash"] in seen or state["left"] <= 0:
                        continue
                    seen.add(r["final_hash"])
                    rows.append({"id": state["seq"], "task": key, "source": phase, "trace": r["trace"],
                                 "run_secs": r["run_secs"], "build_error": r["build_error"],
                                 "run_error": r["run_error"], "final_hash": r["final_hash"]})
                    state["seq"] += 1
                    state["left"] -= 1
                if rows:
                    store.append(key, rows)
                    if on_records:
                        on_records(len(rows))

            before = state["seq"]
            _tune_phase(mod, target, phase, state["left"], have, cfg, sink, builder, runner,
                        seed=cfg.seed + len(have) + _RETRY_SEED_STRIDE * attempt)
            attempt += 1
            new += state["seq"] - before
            fruitless = 0 if state["seq"] > before else fruitless + 1
            if fruitless >= max_attempts:  # the search space gives nothing new
                logger.warning("task %s: %s phase stopped at %d of %d candidates: %d attempts in a row "
                               "measured only programs already in the journal", key, phase,
                               budget - state["left"], budget, fruitless)
                break
    return new


def check_collection_host(manifest: dict, current: str, allow: bool = False) -> list[str]:
    """The CPU models the dataset's records come from once this machine (``current``) adds its own.

    A dataset whose manifest names another CPU model is not extended here unless ``allow``:
    within one task, latencies of two CPUs would be ranked against each other.
    """
    seen = list(manifest.get("cpu_models") or ([manifest["cpu_model"]] if manifest.get("cpu_model") else []))
    if seen and current not in seen and not allow:
        from cwm.dataset.store import DatasetError

        raise DatasetError(f"this dataset was measured on {seen}; this machine is {current!r}. Collect into a "
                           "new --root here, or pass --allow-host-change to mix CPUs in one dataset")
    return seen + ([current] if current not in seen else [])


def check_collection_mcpu(manifest: dict, target, allow: bool = False) -> None:
    """Refuse to extend a dataset built for another CPU generation (LLVM's ``mcpu``) unless ``allow``.

    The CPU model name does not tell generations apart (Zen 4 and Zen 5 both read "AMD EPYC"),
    and the generation decides both the code LLVM emits and how fast it runs: a task extended on
    another generation would rank programs built and timed on two machines against each other.
    """
    old = (manifest.get("target") or {}).get("mcpu")
    new = dict(target.export()).get("mcpu")
    if old and new and old != new and not allow:
        from cwm.dataset.store import DatasetError

        raise DatasetError(f"this dataset was built and measured for mcpu={old}; this machine is mcpu={new}. "
                           "Collect into a new --root here, or pass --allow-host-change to mix CPU "
                           "generations in one dataset")


def collect(store: DatasetStore, keys: list[str], target=None, cfg: CollectConfig = CollectConfig(),
            progress: bool = True, manifest_extra: dict | None = None, runner=None,
            allow_host_change: bool = False) -> dict:
    """Collect every task in ``keys`` not finished yet; writes shards and the manifest.

    ``runner``: any MetaSchedule ``Runner`` (default: a crash-safe ``PooledRunner``); e.g. an
    ``ms.runner.RPCRunner`` to measure on the devices of a TVM RPC tracker. A dataset measured on
    another CPU model or generation is not extended unless ``allow_host_change``
    (:func:`check_collection_host`, :func:`check_collection_mcpu`).
    """
    from cwm.tuning.pooled_builder import PooledBuilder
    from cwm.target_spec import host_target

    cpu_models = check_collection_host(store.manifest(), _cpu_model(), allow_host_change)
    manifest_extra = {**(manifest_extra or {}), "cpu_models": cpu_models}
    target = target or host_target()
    check_collection_mcpu(store.manifest(), target, allow_host_change)
    todo = [k for k in keys if not store.is_finished(k)]
    per_task = cfg.trials + cfg.random_samples
    done_records = sum(len(store.journal_records(k)) for k in todo)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=per_task * len(todo), initial=done_records, unit="rec", dynamic_ncols=True,
                   desc=f"tasks 0/{len(todo)}")
    builder = PooledBuilder(2, timeout_sec=cfg.build_timeout_s)
    own_runner = runner is None
    if own_runner:
        from cwm.tuning.pooled_runner import PooledRunner
        from cwm.tuning.settings import FastSettings

        runner = PooledRunner(FastSettings(repeat=cfg.repeat, min_repeat_ms=cfg.min_repeat_ms).evaluator_config())
    failures = {}
    try:
        for i, key in enumerate(todo):
            if bar:
                bar.set_description(f"tasks {i}/{len(todo)} {store.get_task(key).get('name', key)[:28]}")
            t0 = time.time()
            try:
                collect_task(store, key, target, cfg, builder, on_records=bar.update if bar else None,
                             runner=runner)
            except Exception as e:  # a task that cannot be tuned is reported, the rest go on
                failures[key] = f"{type(e).__name__}: {e}"
                logger.error("task %s failed: %s", key, failures[key])
                continue
            n = store.finish(key)
            meta = store.get_task(key)
            meta["collect_wall_s"] = round(meta.get("collect_wall_s", 0) + time.time() - t0, 1)
            store.put_task(key, meta)
            logger.info("task %s: %d records", key, n)
            store.write_manifest(_manifest_extra(target, cfg, manifest_extra))
    finally:
        builder.close()
        if own_runner:
            runner.close()
        if bar:
            bar.close()
    return {"failures": failures, "manifest": store.write_manifest(_manifest_extra(target, cfg, manifest_extra))}


def _manifest_extra(target, cfg: CollectConfig, extra: dict | None) -> dict:
    import tvm

    return {"tvm_version": tvm.__version__, "target": json.loads(str(target)), "cpu_model": _cpu_model(),
            "collect_config": cfg.__dict__, **(extra or {})}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return os.uname().machine
