"""Measured records of CWM's own searches on the training tasks (issue #12, the ranker's data;
decision 83): the DAgger pattern.

The ranker is fitted on random samples and on the proposals of a search guided by MetaSchedule's
``XGBModel`` (:mod:`cwm.tuning.collect`), not on the candidates a search at CWM's own scores
proposes, and those are the ones it overrates (decision 82). This collects them: each zoo
training task is tuned once with CWM's default search (the ``seeded`` profile, 8 transferred
schedules, the task and its networks kept out of the seed library), guided by the shipped model
whose ranker was refitted without any task of the task's network
(:func:`fold_rankers.fold_priors`, the same fold rankers as the search-knobs bench), and every
measured candidate goes into a dataset root of its own (``--root``, one task per workload, source
``cwm_search``), measured on this machine. That root is not a root of the union
(:mod:`cwm.dataset.union`: a task key in two roots is one task); the search-knobs arm
``ranker_data=<root>`` adds its tasks to the fold rankers as ranking groups of their own.

    PYTHONPATH=python .venv/bin/python bench/dagger_collect.py [--root data/dataset_dagger_xeon]
        [--trials 48] [--seed 7] [--guide cwm|xgb]

``--guide xgb`` is the control (decision 84): the same tasks and trials, measured on this machine
too, from the search the zoo's records come from (:func:`cwm.tuning.collect.collect_task`'s search
phase, guided by a fresh ``XGBModel``, no random phase), so the offline table can tell what the
host changes from what CWM's proposals change.

Resumable: a finished task has its shard; an unfinished one's journal is dropped and the task
tuned again (one search, under a minute). One process at a time (a lock on the root).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from checkpoint import Lock  # noqa: E402
from common import log, machine, today  # noqa: E402
from fold_rankers import fold_priors  # noqa: E402
from search_knobs import network_of, open_roots  # noqa: E402
from seed_transfer import seed_config  # noqa: E402


def interleaved(tasks: list[dict]) -> list[dict]:
    """Tasks taken in turn over their folds (first network), heaviest first in each, so a
    collection stopped early has every fold's tasks."""
    by_fold: dict[str, list[dict]] = {}
    for t in sorted(tasks, key=lambda t: (-(t["flop"] or 0), t["key"])):
        by_fold.setdefault(t["networks"][0], []).append(t)
    out, queues = [], [by_fold[k] for k in sorted(by_fold)]
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def training_tasks(loader) -> list[dict]:
    tasks = []
    for key in loader.task_keys("train"):
        info = loader.store.get_task(key)
        if info.get("networks"):
            tasks.append({"key": key, "name": info["name"], "networks": sorted(info["networks"]),
                          "flop": info.get("flop")})
    return interleaved(tasks)


def collect(args) -> int:
    import copy

    from cwm.cost_model.cwm_model import AdaptConfig, CWMCostModel
    from cwm.dataset.recorder import make_recorder
    from cwm.dataset.store import DatasetStore
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from cwm.target_spec import host_target
    from cwm.tuning.collect import _cpu_model, check_collection_host, check_collection_mcpu
    from cwm.tuning.design_space import UntunableTaskError
    from cwm.tuning.settings import search_settings
    from cwm.tuning.tune import tune_tir

    _, library, loader, union = open_roots(args.data)
    store = DatasetStore(args.root)
    # the collector's own checks: a root measured on another CPU model or generation is not extended
    check_collection_host(store.manifest(), _cpu_model())
    check_collection_mcpu(store.manifest(), host_target())
    tasks = training_tasks(loader)[: args.tasks or None]
    todo = [t for t in tasks if not store.is_finished(t["key"])]
    log(f"{len(tasks)} training tasks, {len(todo)} to collect into {args.root}")
    fold = network_of(tasks)
    if args.guide == "xgb":
        return collect_xgb_guided(args, store, loader, tasks, todo, fold)
    model = WorldModel.load(default_model_dir())
    rankers = fold_priors(model, union, {fold[t["key"]] for t in todo}, Path(args.work_root))
    settings = search_settings("seeded")
    skipped = {}
    for i, task in enumerate(todo):
        key = task["key"]
        store.journal_path(key).unlink(missing_ok=True)  # an interrupted search is run again whole
        store.put_task(key, {**loader.store.get_task(key), "dagger_network_out": fold[key]})
        prior = copy.copy(model)
        prior.ranker, prior.sequence_head = rankers[fold[key]], None
        state = {"seq": 0}

        def sink(batch, key=key, state=state):
            rows = []
            for r in batch:
                rows.append({"id": state["seq"], "task": key, "source": "cwm_search", "trace": r["trace"],
                             "run_secs": r["run_secs"], "build_error": r["build_error"],
                             "run_error": r["run_error"], "final_hash": r["final_hash"]})
                state["seq"] += 1
            if rows:
                store.append(key, rows)

        start = time.perf_counter()
        try:
            tune_tir(loader.workload(key), "llvm", trials=args.trials,
                     cost_model=CWMCostModel(world_model=prior, config=AdaptConfig()), seed=args.seed,
                     settings=settings, seed_library=library, measure_callbacks=[make_recorder(sink, False)],
                     seed_config=seed_config(task, seed_trials=settings.seed_trials,
                                             placement=settings.seed_placement, choice=settings.seed_choice))
        except UntunableTaskError as e:
            skipped[key] = str(e)
            log(f"[{i + 1}/{len(todo)}] {task['name'][:40]} skipped: {e}")
            continue
        n = store.finish(key)
        log(f"[{i + 1}/{len(todo)}] {task['name'][:40]:40s} ({fold[key]} out) {n} records, "
            f"{time.perf_counter() - start:.0f} s")
        write_root_files(store, tasks, args)
    write_root_files(store, tasks, args, skipped)
    return 0


def collect_xgb_guided(args, store, loader, tasks, todo, fold) -> int:
    """The control: each task's ``--trials`` candidates from the collector's ``XGBModel``-guided
    search (:func:`cwm.tuning.collect.collect`, the zoo's protocol without its random phase);
    resumable per record."""
    from cwm.tuning.collect import CollectConfig
    from cwm.tuning.collect import collect as collect_tasks

    for task in todo:
        store.put_task(task["key"], {**loader.store.get_task(task["key"]), "dagger_network_out": fold[task["key"]]})
    out = collect_tasks(store, [t["key"] for t in todo], cfg=CollectConfig(trials=args.trials, random_samples=0,
                                                                           seed=args.seed))
    for key, error in out["failures"].items():
        log(f"{key} skipped: {error}")
    write_root_files(store, tasks, args, out["failures"])
    return 0


def collect_config(args) -> dict:
    """The manifest's account of how the root's records were proposed."""
    if args.guide == "xgb":
        return {"source": "search", "guide": "XGBModel (fresh), the collector's search phase",
                "trials": args.trials, "random": 0, "seed": args.seed}
    return {"source": "cwm_search", "profile": "seeded", "trials": args.trials, "seed": args.seed,
            "prior": "shipped model, ranker refitted without the task's network"}


def write_root_files(store, tasks, args, skipped=None) -> None:
    """The root's manifest (this machine, the collection's settings) and its split: every task
    is a training task."""
    from cwm.dataset.store import _atomic_write
    from cwm.target_spec import host_target
    from cwm.tuning.collect import _cpu_model

    finished = [t["key"] for t in tasks if store.is_finished(t["key"])]
    _atomic_write(store.root / "split.json", json.dumps(
        {"heldout_networks": [], "test_tasks": [], "train_tasks": finished,
         "rule": f"every task is a zoo training task; its records are {args.guide}-guided searches "
                 "(bench/dagger_collect.py)"},
        indent=1, sort_keys=True).encode())
    extra = {"target": json.loads(str(host_target())), "cpu_model": _cpu_model(), "cpu_models": [_cpu_model()],
             "machine": machine(), "date": today(),
             "collect_config": collect_config(args)}
    if skipped:
        extra["skipped"] = skipped
    store.write_manifest(extra)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(ROOT / "data" / "dataset_dagger_xeon"))
    parser.add_argument("--trials", type=int, default=48)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--guide", choices=("cwm", "xgb"), default="cwm",
                        help="whose search proposes the candidates (xgb: the control)")
    parser.add_argument("--tasks", type=int, default=0, help="the first N tasks in turn over folds (0: all)")
    parser.add_argument("--data", action="append", default=None, help="dataset roots (default: the shipped ones)")
    parser.add_argument("--work-root", default=str(ROOT / "work_dirs" / "search_knobs"),
                        help="the fold rankers' cache (shared with bench/search_knobs.py)")
    args = parser.parse_args(argv)
    Path(args.root).mkdir(parents=True, exist_ok=True)
    with Lock(str(Path(args.root) / "collect"), "DAgger collection"):
        return collect(args)


if __name__ == "__main__":
    raise SystemExit(main())
