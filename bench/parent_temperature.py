"""How sharply CWM's scores pick mutation parents, measured in search on training tasks only
(issue #12, search; no held-out task is used).

``CWMCostModel.predict`` returns ``exp(margin / temperature)``, and MetaSchedule's evolutionary
search samples mutation parents in proportion to the scores. The ranker's margins spread about
0.9 within a task, so at temperature 1 a few candidates are the parents of most mutants. This
benchmark tunes the same training tasks at several temperatures (``--temperatures``) with
everything else as CWM's default search (the ``seeded`` profile: 8 transferred schedules as the
last round, the task and its networks kept out of the seed library).

The prior must not have seen the task: for every network of the chosen tasks the shipped
model's ranker is refitted (its own config, :func:`cwm.model.train.fit_ranker`'s rows) on the
training tasks of every other network and of the breadth roots, leaving out every task of that
network (the probe's ``--group-by network`` folds). The refitted prior has no sequence head (its
blend belongs to the shipped ranker); the fold rankers are saved under ``--work-root`` and read
back on resume.

Reported per temperature: over (task, seed) pairs, the geometric mean of ``best / best at the
first temperature`` at 64 trials and at 32, its 90 % interval when whole tasks are resampled, and
the wins and losses beyond 2 %. Bests are the
tuning-time measurements (each run's own), as in ``bench/seed_transfer.py --mode search``.

    PYTHONPATH=python .venv/bin/python bench/parent_temperature.py [--temperatures 1,2,4]
        [--seeds 0,1] [--tasks 12]

Resumes from ``bench/results/parent_temperature_runs.jsonl``; writes
``bench/results/parent_temperature.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from checkpoint import JsonlCheckpoint  # noqa: E402
from common import RESULTS, geomean, log, machine, today, write_result  # noqa: E402
from seed_transfer import best_curve, round_robin, seed_config, zoo_training_tasks  # noqa: E402

CHECKPOINT = os.path.join(RESULTS, "parent_temperature_runs.jsonl")


class Runs(JsonlCheckpoint):
    """The checkpoint's runs, in order, and the ``(task, temperature, seed)`` of each."""

    def __init__(self, path: str):
        self.rows, self.done = [], set()
        super().__init__(path)

    def _index(self, rec: dict) -> None:
        self.rows.append(rec)
        self.done.add((rec["task"], rec["temperature"], rec["seed"]))


def network_of(tasks: list[dict]) -> dict[str, str]:
    """Each chosen task's fold: the first of its networks (sorted)."""
    return {t["key"]: t["networks"][0] for t in tasks if t["networks"]}


def fold_priors(model, union, networks: set[str], work_root: Path) -> dict:
    """``network -> Ranker`` fitted without any task of that network (module docstring)."""
    import numpy as np

    from cwm.model.probe import network_folds
    from cwm.model.ranker import Ranker
    from cwm.model.train import _training_trajectories, ranker_rows

    paths = {n: work_root / f"ranker_without_{n}.json" for n in networks}
    missing = sorted(n for n in networks if not paths[n].exists())
    if missing:
        by_task = _training_trajectories(union, model.meta.get("config", {}).get("seed", 0))
        log(f"ranker rows of {len(by_task)} training tasks ...")
        rows = {key: (feats, np.array([t.latency for t in trajs])) for key, trajs, _, feats
                in ranker_rows(model, union, by_task)}
        networks_of = {k: sorted(union.store.get_task(k).get("networks") or {}) for k in rows}
        folds = dict(network_folds(networks_of))
        for network in missing:
            left_out = set(folds.get(network, ()))
            keep = sorted(k for k in rows if k not in left_out)
            start = time.perf_counter()
            ranker = Ranker(model.ranker.cfg).fit(
                np.concatenate([rows[k][0] for k in keep]), np.concatenate([rows[k][1] for k in keep]),
                np.concatenate([np.full(len(rows[k][1]), i) for i, k in enumerate(keep)]))
            work_root.mkdir(parents=True, exist_ok=True)
            ranker.save(str(paths[network]))
            log(f"ranker without {network}: {len(keep)} tasks, {time.perf_counter() - start:.0f} s")
    return {n: Ranker.load(str(paths[n])) for n in networks}


def run(loader, union, library, temperatures, seeds, n_tasks: int, work_root: Path, trials: int = 64) -> list[dict]:
    import copy

    from cwm.cost_model.cwm_model import AdaptConfig, CWMCostModel
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from cwm.tuning.settings import search_settings
    from cwm.tuning.tune import tune_tir

    runs = Runs(CHECKPOINT)
    tasks = [t for t in round_robin(zoo_training_tasks(loader, library), n_tasks) if t["networks"]]
    fold = network_of(tasks)
    log(f"{len(tasks)} tasks: {[(t['name'][:32], fold[t['key']]) for t in tasks]}")
    todo = [(seed, task, temp) for seed in seeds for task in tasks for temp in temperatures
            if (task["key"], temp, seed) not in runs.done]
    if not todo:
        return runs.rows
    model = WorldModel.load(default_model_dir())
    rankers = fold_priors(model, union, {fold[t["key"]] for _, t, _ in todo}, work_root)
    settings = search_settings("seeded")
    for i, (seed, task, temp) in enumerate(todo):
        prior = copy.copy(model)
        prior.ranker, prior.sequence_head = rankers[fold[task["key"]]], None
        cost_model = CWMCostModel(world_model=prior, config=AdaptConfig(temperature=temp))
        stats = {}
        start = time.perf_counter()
        out = tune_tir(loader.workload(task["key"]), "llvm", trials=trials, cost_model=cost_model, seed=seed,
                       settings=settings, seed_library=library,
                       seed_config=seed_config(task, seed_trials=settings.seed_trials,
                                               placement=settings.seed_placement, choice=settings.seed_choice,
                                               stats=stats))
        curve = best_curve(out.records)
        best = curve[-1] if curve else None
        row = {"task": task["key"], "name": task["name"], "network_out": fold[task["key"]], "temperature": temp,
               "seed": seed, "best_us": best, "curve": curve, "wall_s": time.perf_counter() - start,
               "seeds": stats}
        runs.append(row)
        log(f"[{i + 1}/{len(todo)}] seed {seed} {task['name'][:40]:40s} T={temp:g} best {best} us")
    return runs.rows


def task_bootstrap(per_task: list[list[float]], draws: int = 2000, seed: int = 0) -> list[float] | None:
    """5th and 95th percentiles of the geometric mean of ratios when whole tasks (all their seeds)
    are resampled with replacement: the seeds of one task are not independent samples."""
    import random

    if len(per_task) < 2:
        return None
    rng, means = random.Random(seed), []
    for _ in range(draws):
        means.append(geomean([x for task in rng.choices(per_task, k=len(per_task)) for x in task]))
    means.sort()
    return [means[int(0.05 * draws)], means[int(0.95 * draws) - 1]]


def summary(rows: list[dict], temperatures) -> dict:
    base_t = temperatures[0]

    def best_at(row, k):
        values = [v for v in row["curve"][:k] if v is not None]
        return min(values) if values else None

    out = {"runs": len(rows), "baseline_temperature": base_t, "temperatures": {}}
    base = {(r["task"], r["seed"]): r for r in rows if r["temperature"] == base_t}
    for temp in temperatures:
        entry = {}
        for k in (32, 64):
            ratios, by_task = [], {}
            for r in rows:
                b = base.get((r["task"], r["seed"]))
                if r["temperature"] != temp or b is None:
                    continue
                x, y = best_at(r, k), best_at(b, k)
                if x and y:
                    ratios.append(x / y)
                    by_task.setdefault(r["task"], []).append(x / y)
            entry[f"at_{k}"] = {"pairs": len(ratios), "geomean_best_over_baseline": geomean(ratios),
                                "faster": sum(x < 0.98 for x in ratios), "slower": sum(x > 1.02 for x in ratios),
                                "task_bootstrap_90": task_bootstrap(list(by_task.values()))}
        entry["wall_s_mean"] = sum(r["wall_s"] for r in rows if r["temperature"] == temp) / max(
            1, sum(r["temperature"] == temp for r in rows))
        out["temperatures"][f"{temp:g}"] = entry
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--temperatures", default="1,2,4", help="the first is the baseline")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--data", action="append", default=None,
                        help="dataset roots (default: data/dataset, data/dataset_breadth_zen4, data/dataset_breadth)")
    parser.add_argument("--work-root", default=str(ROOT / "work_dirs" / "parent_temperature"))
    args = parser.parse_args(argv)

    from cwm import tvm_patch  # noqa: F401  (MetaSchedule's fast import)
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import open_datasets
    from cwm.tuning.seed_library import SeedLibrary

    roots = [r for r in (args.data or [str(ROOT / "data" / d) for d in
                                       ("dataset", "dataset_breadth_zen4", "dataset_breadth")]) if os.path.isdir(r)]
    library = SeedLibrary.from_datasets(roots)
    loader, union = DatasetLoader(roots[0]), open_datasets(roots)
    temperatures = [float(t) for t in args.temperatures.split(",")]
    rows = run(loader, union, library, temperatures, [int(s) for s in args.seeds.split(",")], args.tasks,
               Path(args.work_root))
    payload = {**summary(rows, temperatures), "machine": machine(), "date": today(),
               "roots": [os.path.relpath(r, ROOT) for r in roots], "library_tasks": len(library)}
    log(json.dumps(payload, indent=1))
    write_result("parent_temperature.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
