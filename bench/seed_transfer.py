"""Schedules transferred from similar training workloads, measured on the training tasks (issue #12,
search; no held-out task is used): how good they are, and what measuring them does to a search.

For every zoo training task (that has a library trace of its design space's signature) the seed library (:mod:`cwm.tuning.seed_library`) is built from the
training split of ``--data`` roots *without the task's own networks* (and without the task), so a
task never receives a schedule tuned on its own network.

``--mode quality``: the task's transferred candidates (up to 8, nearest library task first) are
measured beside the task's own fastest dataset record (best of ~200 measured), interleaved in one
process (``bench/search_remeasure.py``). Reported: over tasks, the geometric mean of ``best of the
first K seeds / own best`` and how often it is faster.

``--mode choice``: which seeds to measure. The task's whole pool of transferred candidates is
measured beside its own best, and each candidate is also scored by CWM's cost model (the shipped
prior alone, and the prior after ``observe`` of ``--observe`` of the task's dataset records,
sampled at random: the state the model is in at search's last round). Reported: best of the K
first in library order, by the prior, by the adapted model, and at random.

``--mode search``: CWM's search (64 trials, ``cwm.tuning.tune_tir``) on a round-robin choice of the
tasks that have seeds, per arm and seed: ``none`` (MetaSchedule's evolutionary search),
``first<K>`` (K seeds measured as the first round), ``last<K>`` (as the last); a trailing ``m``
(``last8m``) has the cost model choose the K of the pool (``SeedConfig.choice="model"``). Reported: per arm,
the geometric mean over (task, seed) of ``best / best of none`` and the wins.

    PYTHONPATH=python .venv/bin/python bench/seed_transfer.py --mode quality
    PYTHONPATH=python .venv/bin/python bench/seed_transfer.py --mode choice [--observe 56] [--network-out]
    PYTHONPATH=python .venv/bin/python bench/seed_transfer.py --mode search [--arms none,first8,last8]
        [--seeds 0,1] [--tasks 12]

Both modes resume from their checkpoint (``bench/results/seed_transfer_<mode>_runs.jsonl``) and
write ``bench/results/seed_transfer.json`` (the section of the mode).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import RESULTS, geomean, log, machine, today, write_result  # noqa: E402


def _valid(record) -> bool:
    return bool(record.get("run_secs")) and not record.get("build_error") and not record.get("run_error")


def seed_config(task: dict, **fields):
    """The :class:`~cwm.tuning.seeded_search.SeedConfig` that keeps the task and its networks out."""
    from cwm.tuning.seeded_search import SeedConfig

    return SeedConfig(exclude_keys=(task["key"],), exclude_networks=tuple(task["networks"]), **fields)


def design_spaces(mod):
    """``(sketches, postprocs)`` of MetaSchedule's default space generator for ``mod`` on this host."""
    from tvm.s_tir import meta_schedule as ms

    from cwm.target_spec import host_target

    context = ms.TuneContext(mod=mod, target=host_target(), space_generator="post-order-apply", task_name="t",
                             num_threads=1)
    return list(context.generate_design_space()), list(context.space_generator.postprocs)


def zoo_training_tasks(loader, library) -> list[dict]:
    """The zoo training tasks with at least one library trace of a sketch's signature (their own
    networks excluded)."""
    tasks = []
    for key in loader.task_keys("train"):
        info = loader.store.get_task(key)
        task = {"key": key, "name": info["name"], "networks": sorted(info.get("networks") or {}),
                "flop": info.get("flop")}
        cfg = seed_config(task)
        sketches, _ = design_spaces(loader.workload(key))
        if any(library.candidates(s, cfg.max_tasks, cfg.per_task, cfg.exclude_keys, cfg.exclude_networks)
               for s in sketches):
            tasks.append(task)
    return tasks


def round_robin(tasks: list[dict], n: int) -> list[dict]:
    """``n`` tasks of distinct names taken round-robin over op classes, heaviest first."""
    from search_plan import OP_CLASSES, op_class, take_in_turn

    by_class, names = {c: [] for c in OP_CLASSES}, set()
    for t in sorted(tasks, key=lambda t: (-(t["flop"] or 0), t["key"])):
        if t["name"] not in names:
            names.add(t["name"])
            by_class[op_class(t["name"])].append(t)
    return take_in_turn(by_class, n)


def _checkpoint(mode: str):
    path = os.path.join(RESULTS, f"seed_transfer_{mode}_runs.jsonl")
    rows = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
    return path, rows


def _append(path: str, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def run_quality(loader, library, k: int = 8) -> list[dict]:
    from search_remeasure import remeasure

    from cwm.actions.trace_io import trace_to_json
    from cwm.tuning.seeded_search import transferred_candidates

    path, rows = _checkpoint("quality")
    done = {r["task"] for r in rows}
    for task in zoo_training_tasks(loader, library):
        if task["key"] in done:
            continue
        mod = loader.workload(task["key"])
        sketches, postprocs = design_spaces(mod)
        seeds = transferred_candidates(mod, library, seed_config(task), postprocs, sketches)
        records = _records(loader, task["key"])
        row = {"task": task["key"], "name": task["name"], "flop": task["flop"], "n_seeds": len(seeds),
               "n_records": len(records), "own_us": None, "seeds_us": []}
        if seeds and records:
            candidates = {"own": records[0]["trace"]}
            candidates.update({f"seed{i}": trace_to_json(c.sch.trace) for i, c in enumerate(seeds[:k])})
            result = remeasure(mod, candidates, repeats=10, min_repeat_ms=10)
            row["own_us"] = result["own"]["median_us"]
            row["seeds_us"] = [result[f"seed{i}"]["median_us"] for i in range(min(k, len(seeds)))]
        _append(path, row)
        rows.append(row)
        log(f"{task['name'][:48]:48s} own {row['own_us']} seeds {[round(x) for x in row['seeds_us'] if x]}")
    return rows


def _records(loader, key: str) -> list:
    """The task's valid dataset records, fastest (median) first."""
    return sorted((r for r in loader.store.records(key) if _valid(r)), key=lambda r: statistics.median(r["run_secs"]))


def _pool(mod, library, task: dict) -> list[str]:
    """The task's transferred candidates (trace JSON texts), in library order."""
    from cwm.actions.trace_io import trace_to_json
    from cwm.tuning.seeded_search import transferred_candidates

    sketches, postprocs = design_spaces(mod)
    return [trace_to_json(c.sch.trace) for c in transferred_candidates(mod, library, seed_config(task), postprocs,
                                                                       sketches)]


def _prior_and_adapted(cost_model, mod, pool: list[str], records: list, observe: int, target) -> tuple[list, list]:
    """``cost_model``'s margins of ``pool`` before and after it observes ``observe`` of the
    task's ``records`` (a seeded random sample)."""
    import numpy as np

    prior = cost_model.margins(mod, pool, target).tolist()
    sample = np.random.default_rng(0).permutation(len(records))[:observe]
    cost_model.observe(mod, [records[i]["trace"] for i in sample],
                       [sum(records[i]["run_secs"]) / len(records[i]["run_secs"]) for i in sample], target)
    return prior, cost_model.margins(mod, pool, target).tolist()


def run_choice(loader, library, observe: int = 56) -> list[dict]:
    from search_remeasure import remeasure

    from cwm.cost_model.cwm_model import CWMCostModel
    from cwm.target_spec import host_target

    path, rows = _checkpoint("choice")
    done = {r["task"] for r in rows}
    target = host_target()
    for task in zoo_training_tasks(loader, library):
        if task["key"] in done:
            continue
        mod = loader.workload(task["key"])
        pool, records = _pool(mod, library, task), _records(loader, task["key"])
        row = {"task": task["key"], "name": task["name"], "flop": task["flop"], "n_seeds": len(pool),
               "own_us": None, "seeds_us": [], "prior": [], "adapted": []}
        if pool and records:
            row["prior"], row["adapted"] = _prior_and_adapted(CWMCostModel(), mod, pool, records, observe, target)
            result = remeasure(mod, {"own": records[0]["trace"], **{f"seed{i}": t for i, t in enumerate(pool)}},
                               repeats=10, min_repeat_ms=10)
            row["own_us"] = result["own"]["median_us"]
            row["seeds_us"] = [result[f"seed{i}"]["median_us"] for i in range(len(pool))]
        _append(path, row)
        rows.append(row)
        log(f"{task['name'][:48]:48s} own {row['own_us']} pool {len(pool)}")
    return rows


def run_choice_network_out(loader, library, rows: list[dict], fit_only_roots, observe: int = 56) -> list[dict]:
    """The choice rows again, scored by a prior that has not seen the task's network: the
    model's ranker refitted (its own config) on the probe's cached rollouts of the training tasks
    of the other networks and of ``fit_only_roots``, leave one network out (the probe's
    ``--group-by network`` folds). Adds ``prior_no`` and ``adapted_no`` (after ``observe`` as in
    :func:`run_choice`) to each row; checkpointed in ``seed_transfer_choice_no_runs.jsonl``."""
    import copy
    from pathlib import Path as _Path

    import numpy as np

    from cwm.cost_model.cwm_model import CWMCostModel
    from cwm.model import default_model_dir
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.probe import network_folds, representation, training_tasks
    from cwm.model.ranker import Ranker
    from cwm.model.world_model import WorldModel
    from cwm.target_spec import host_target

    path, done = _checkpoint("choice_no")
    by_task = {r["task"]: r for r in done}
    todo = {r["task"]: r for r in rows if r["own_us"] and r["task"] not in by_task}
    if todo:
        model_dir, target = default_model_dir(), host_target()
        model = WorldModel.load(model_dir)
        tasks, fit_only = training_tasks(loader, model, fit_only_roots, _Path.home() / ".cache" / "cwm" / "probe",
                                         model_fingerprint(model_dir), 64, 0, False, log)
        fold_of = {}
        for network, keys in network_folds({t["key"]: t["networks"] for t in tasks}):
            for key in keys:
                fold_of.setdefault(key, (network, keys))
        for network in sorted({fold_of[k][0] for k in todo if k in fold_of}):
            keys = set(next(v for n, v in fold_of.values() if n == network))
            fit = [t for t in tasks if t["key"] not in keys] + fit_only
            ranker = Ranker(model.ranker.cfg).fit(
                np.concatenate([representation("zt_hat+stats", t, None) for t in fit]),
                np.concatenate([t["lat"] for t in fit]),
                np.concatenate([np.full(len(t["lat"]), i) for i, t in enumerate(fit)]))
            fold_model = copy.copy(model)
            fold_model.ranker = ranker
            for key in sorted(k for k in todo if fold_of.get(k, (None,))[0] == network):
                row = todo[key]
                mod = loader.workload(key)
                pool = _pool(mod, library, {"key": key,
                                            "networks": sorted(loader.store.get_task(key).get("networks") or {})})
                shipped = CWMCostModel(world_model=model).margins(mod, pool, target)
                if len(pool) != row["n_seeds"] or not np.allclose(shipped, row["prior"], rtol=1e-5, atol=1e-5):
                    raise RuntimeError(f"{key}: the pool differs from the choice run's")
                out = {"task": key, "network": network}
                out["prior_no"], out["adapted_no"] = _prior_and_adapted(
                    CWMCostModel(world_model=fold_model), mod, pool, _records(loader, key), observe, target)
                _append(path, out)
                by_task[key] = out
                log(f"network-out {network}: {row['name'][:48]}")
    return [{**r, **{k: v for k, v in by_task.get(r["task"], {}).items() if k.endswith("_no")}} for r in rows]


#: ordering name -> the row field of its scores (higher first); "library" is the pool's own order
_SCORE_FIELD = {"prior": "prior", "adapted": "adapted", "prior_network_out": "prior_no",
                "adapted_network_out": "adapted_no"}


def _orders(rows: list[dict], names) -> dict:
    """``{name: row -> candidate indices in that order}`` for the ``names`` every row has scores for."""
    import numpy as np

    def by(field):
        return lambda r: np.argsort(-np.asarray(r[field]), kind="stable")

    out = {}
    for name in names:
        if name == "library":
            out[name] = lambda r: range(len(r["seeds_us"]))
        elif all(_SCORE_FIELD[name] in r for r in rows):
            out[name] = by(_SCORE_FIELD[name])
    return out


def _best_of(us: list, order, k: int) -> float:
    taken = [us[i] for i in list(order)[:k] if us[i]]
    return min(taken) if taken else math.inf


def choice_summary(rows: list[dict], ks=(4, 8, 12, 16, 24), random_draws: int = 200) -> dict:
    """Per ordering and K: geomean over tasks of ``best of the K chosen / own best`` (as in
    :func:`quality_summary`, a task whose K chosen all failed to run is left out of the geomean;
    the choice run had no such seed)."""
    import numpy as np

    measured = [r for r in rows if r["own_us"] and any(r["seeds_us"])]
    rng = np.random.default_rng(0)
    out = {"tasks": len(measured), "pool_sizes": [r["n_seeds"] for r in measured], "by_order": {}}
    for name, order in _orders(measured, ("library", "prior", "adapted", "prior_network_out",
                                          "adapted_network_out")).items():
        out["by_order"][name] = {str(k): geomean([_best_of(r["seeds_us"], order(r), k) / r["own_us"]
                                                  for r in measured]) for k in ks}
    out["by_order"]["random"] = {str(k): float(np.mean([geomean([
        _best_of(r["seeds_us"], rng.permutation(len(r["seeds_us"])), k) / r["own_us"] for r in measured])
        for _ in range(random_draws)])) for k in ks}
    out["by_order"]["oracle"] = {str(k): geomean([min(x for x in r["seeds_us"] if x) / r["own_us"]
                                                 for r in measured]) for k in ks}
    return out


def replay_summary(search_rows: list[dict], rows: list[dict], ks=(4, 8, 12, 16)) -> dict:
    """A seed round replayed on the unseeded searches of ``--mode search``: per ordering and K,
    geomean over (task, seed) of ``min(the unseeded search's best after 64 - K trials, the best of
    the K seeds the ordering takes) / its best after 64``. The seeds' latencies are the choice
    run's (interleaved re-measurement), the search's its runner's: the same machine, other
    timers, so it is a rough guide to the K and the ordering, not a search result."""
    choice = {r["task"]: r for r in rows if r["own_us"] and any(r["seeds_us"])}
    orders = _orders(list(choice.values()), ("library", "prior_network_out"))
    out = {"searches": 0, "by_order": {}}
    searches = [r for r in search_rows if r["arm"] == "none" and r["task"] in choice and len(r["curve"]) >= max(ks)
                and r["curve"][-1]]
    out["searches"] = len(searches)
    for name, order in orders.items():
        out["by_order"][name] = {}
        for k in ks:
            ratios = []
            for r in searches:
                c = choice[r["task"]]
                taken = [c["seeds_us"][i] for i in list(order(c))[:k] if c["seeds_us"][i]]
                evolved = r["curve"][len(r["curve"]) - 1 - k] or math.inf
                ratios.append(min([evolved] + taken) / r["curve"][-1])
            out["by_order"][name][str(k)] = geomean(ratios)
    return out


def quality_summary(rows: list[dict]) -> dict:
    measured = [r for r in rows if r["own_us"] and any(r["seeds_us"])]
    out = {"tasks": len(rows), "tasks_with_seeds": len(measured), "by_k": {}}
    for k in (1, 2, 4, 8):
        ratios = [_best_of(r["seeds_us"], range(len(r["seeds_us"])), k) / r["own_us"] for r in measured]
        out["by_k"][str(k)] = {"geomean_best_seed_over_own": geomean(ratios),
                               "faster_than_own": sum(x < 1 for x in ratios),
                               "within_10pct": sum(x < 1.1 for x in ratios)}
    return out


def best_curve(records) -> list:
    """The best mean run time (µs) after each of a search's records, ``None`` before the first
    valid one (failed builds and runs, and MetaSchedule's failure marker, are not valid)."""
    curve, best = [], None
    for r in records:
        if _valid(r) and max(r["run_secs"]) < 1e9:
            us = sum(r["run_secs"]) / len(r["run_secs"]) * 1e6
            best = us if best is None else min(best, us)
        curve.append(best)
    return curve


def run_search(loader, library, arms, seeds, n_tasks: int, trials: int = 64) -> list[dict]:
    from cwm.tuning.tune import tune_tir

    path, rows = _checkpoint("search")
    done = {(r["task"], r["arm"], r["seed"]) for r in rows}
    tasks = round_robin(zoo_training_tasks(loader, library), n_tasks)
    log(f"{len(tasks)} tasks: {[t['name'][:32] for t in tasks]}")
    for seed in seeds:
        for task in tasks:
            for arm in arms:
                if (task["key"], arm, seed) in done:
                    continue
                stats, options = {}, {}
                if arm != "none":
                    placement = "first" if arm.startswith("first") else "last"
                    choice = "model" if arm.endswith("m") else "library"
                    options = {"seed_library": library, "seed_config": seed_config(
                        task, seed_trials=int(arm[len(placement):].rstrip("m")), placement=placement,
                        choice=choice, stats=stats)}
                start = time.perf_counter()
                out = tune_tir(loader.workload(task["key"]), "llvm", trials=trials, cost_model="cwm", seed=seed,
                               **options)
                curve = best_curve(out.records)
                best = curve[-1] if curve else None
                row = {"task": task["key"], "name": task["name"], "arm": arm, "seed": seed, "best_us": best,
                       "curve": curve, "wall_s": time.perf_counter() - start, "stats": stats}
                _append(path, row)
                rows.append(row)
                log(f"seed {seed} {task['name'][:40]:40s} {arm:8s} best {best:.1f} us {stats}")
    return rows


def search_summary(rows: list[dict]) -> dict:
    base = {(r["task"], r["seed"]): r["best_us"] for r in rows if r["arm"] == "none" and r["best_us"]}
    out = {"runs": len(rows), "arms": {}}
    for arm in sorted({r["arm"] for r in rows} - {"none"}):
        ratios = [r["best_us"] / base[(r["task"], r["seed"])] for r in rows
                  if r["arm"] == arm and r["best_us"] and (r["task"], r["seed"]) in base]
        out["arms"][arm] = {"pairs": len(ratios), "geomean_best_over_none": geomean(ratios),
                            "faster": sum(x < 0.98 for x in ratios), "slower": sum(x > 1.02 for x in ratios)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("quality", "choice", "search"), required=True)
    parser.add_argument("--data", action="append", default=None,
                        help="dataset roots of the library (default: data/dataset and data/dataset_breadth)")
    parser.add_argument("--arms", default="none,first8,last8")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--observe", type=int, default=56, help="choice: task records the adapted model sees")
    parser.add_argument("--network-out", action="store_true",
                        help="choice: also score by priors refitted without the task's network (slow)")
    args = parser.parse_args(argv)

    from cwm import tvm_patch  # noqa: F401  (MetaSchedule's fast import)
    from cwm.dataset.loader import DatasetLoader
    from cwm.tuning.seed_library import SeedLibrary

    roots = args.data or [str(ROOT / "data" / "dataset"), str(ROOT / "data" / "dataset_breadth")]
    library = SeedLibrary.from_datasets([r for r in roots if os.path.isdir(r)])
    loader = DatasetLoader(roots[0])
    if args.mode == "quality":
        section = quality_summary(run_quality(loader, library))
    elif args.mode == "choice":
        rows = run_choice(loader, library, args.observe)
        if args.network_out:
            rows = run_choice_network_out(loader, library, rows, [r for r in roots[1:] if os.path.isdir(r)],
                                          args.observe)
        section = choice_summary(rows)
        _, search_rows = _checkpoint("search")
        if search_rows:
            section["replay"] = replay_summary(search_rows, rows)
    else:
        rows = run_search(loader, library, args.arms.split(","), [int(s) for s in args.seeds.split(",")], args.tasks)
        section = search_summary(rows)
    result_path = os.path.join(RESULTS, "seed_transfer.json")
    payload = json.load(open(result_path)) if os.path.exists(result_path) else {}
    payload[args.mode] = {**section, "machine": machine(), "date": today(),
                          "library_roots": [os.path.relpath(r, ROOT) for r in roots],
                          "library_tasks": len(library)}
    log(json.dumps(payload[args.mode], indent=1))
    write_result("seed_transfer.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
