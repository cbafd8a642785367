"""CWM's search knobs, measured in search on training tasks only (issue #12, search; no held-out
task is used).

Each *arm* is CWM's default search (the ``seeded`` profile: 8 transferred schedules as the last
round, the task and its networks kept out of the seed library) with some knobs changed; the first
arm is the baseline (the ratios' denominator, not the running order: a (task, seed)'s arms run
back to back, rotated by one from one pair to the next). An arm is written ``base`` (nothing
changed) or ``key=value`` pairs joined by ``+``, where a key is a
:class:`~cwm.tuning.settings.FastSettings` field (``num_trials_per_iter``, ``genetic_num_iters``,
``population_size``, ...) or a field of the cost model's
:class:`~cwm.cost_model.task_adaptation.AdaptConfig` but ``seed`` (``temperature``, decision 75;
``kind`` and ``half_weight_at``, decision 90) or ``ranker_data`` (a dataset root whose tasks the
fold rankers are fitted on too, as groups of their own: ``bench/dagger_collect.py``'s CWM-guided
searches, decision 83) or ``pessimism`` (the prior is the fold's ensemble of bootstrap rankers
scored as its mean less ``k`` times its spread, decision 85) or ``add_columns`` (trace-column
families, ``/``-joined, that the prior's rows take beside the shipped model's, its fold rankers
fitted on those rows: decision 95) or ``transition`` (a directory of ``bench/transition_corpus.py
--save``: the prior rolls out with that TransH, its fold rankers fitted on its rows: decision 101)::

    --arms base,num_trials_per_iter=8,genetic_num_iters=4
    --arms base,ranker_data=dataset_dagger_xeon
    --arms base,add_columns=loop_tiles
    --arms base,transition=work_dirs/transition_b03

The prior must not have seen the task: for every network of the chosen tasks the shipped model's
ranker is refitted (its own config, :func:`cwm.model.train.fit_ranker`'s rows) on the training
tasks of every other network and of the breadth roots, leaving out every task of that network (the
probe's ``--group-by network`` folds). The refitted prior has no sequence head (its blend belongs
to the shipped ranker); the fold rankers are saved under ``--work-root`` and read back on resume.

Reported per arm: over (task, seed) pairs, the geometric mean of ``best / best of the baseline``
at 32 and 64 trials and at the runs' own count (``--trials``, default 64; one count a
checkpoint), its 90 % interval when whole tasks are resampled, the wins and losses
beyond 2 %, and the mean wall time of a run. Bests are the tuning-time measurements (each run's
own), as in ``bench/seed_transfer.py --mode search``.

    PYTHONPATH=python .venv/bin/python bench/search_knobs.py [--arms base,num_trials_per_iter=8]
        [--seeds 0,1,2] [--tasks 12] [--trials 64]

Resumes from ``bench/results/search_knobs_runs.jsonl`` (``--runs``: one host per checkpoint); writes
``bench/results/search_knobs.json`` (``--out``: another name, e.g. for a table paired with another
first arm).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from checkpoint import JsonlCheckpoint, Lock, check_host, hosts_of  # noqa: E402
from common import RESULTS, geomean, log, machine, today, write_result  # noqa: E402
from fold_rankers import PessimisticRanker, bootstrap_rankers, fold_priors, training_rows  # noqa: E402
from seed_transfer import best_curve, round_robin, seed_config, zoo_training_tasks  # noqa: E402

CHECKPOINT = os.path.join(RESULTS, "search_knobs_runs.jsonl")
DEFAULT_TRIALS = 64  # the search budget a task
ENSEMBLE_DRAWS = 5  # bootstrap rankers a fold for a ``pessimism`` arm (bench/pessimistic_offline.py's default)


class Runs(JsonlCheckpoint):
    """The checkpoint's runs, in order, and the ``(task, arm, seed)`` of each; ``field``: the row
    key that names a run's arm."""

    def __init__(self, path: str, field: str = "arm"):
        self.rows, self.done, self.field = [], set(), field
        super().__init__(path)

    def _index(self, rec: dict) -> None:
        self.rows.append(rec)
        self.done.add((rec["task"], rec[self.field], rec["seed"]))


def parse_arm(arm: str) -> tuple[dict, dict]:
    """``(FastSettings overrides, AdaptConfig overrides)`` of an arm (module docstring); a clear
    error for an unknown key or a value of the wrong type."""
    from cwm.cost_model.task_adaptation import AdaptConfig
    from cwm.tuning.settings import FastSettings

    if arm == "base":
        return {}, {}
    fields = {f.name: f.type for f in dataclasses.fields(FastSettings)}
    adapt_fields = {f.name: f.type for f in dataclasses.fields(AdaptConfig) if f.name != "seed"}
    overrides, adapt = {}, {}
    for pair in arm.split("+"):
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"arm {arm!r}: {pair!r} is not key=value")
        if key in PRIOR_KEYS:
            continue  # the prior (:func:`ranker_data_of`, :func:`pessimism_of`, :func:`columns_of`,
            # :func:`transition_of`)
        if key not in fields and key not in adapt_fields:
            raise SystemExit(f"arm {arm!r}: unknown key {key!r}; a FastSettings or AdaptConfig field "
                             "(but seed), ranker_data, pessimism, add_columns or transition")
        into, declared = (overrides, fields[key]) if key in fields else (adapt, adapt_fields[key])
        kind = {"int": int, "float": float, "str": str}.get(str(declared))
        if kind is None:
            raise SystemExit(f"arm {arm!r}: {key} ({declared}) cannot be set from an arm")
        try:
            into[key] = kind(value)
        except ValueError:
            raise SystemExit(f"arm {arm!r}: {key} must be of type {kind.__name__}, not {value!r}") from None
    return overrides, adapt


PRIOR_KEYS = ("ranker_data", "pessimism", "add_columns", "transition")  # arm keys that change the prior


def arm_pairs(arm: str) -> dict[str, str]:
    """An arm's ``key=value`` pairs (``+``-joined), as written (:func:`parse_arm` checks them)."""
    return dict(pair.partition("=")[::2] for pair in arm.split("+"))


def ranker_data_of(arm: str) -> str | None:
    """The dataset root of an arm's ``ranker_data=<root>`` (a folder, or a name under ``data/``)
    whose tasks the fold rankers are fitted on too, as ranking groups of their own (decision 83);
    None: the shipped roots only. A root that does not exist is a clear error."""
    value = arm_pairs(arm).get("ranker_data")
    if value is None:
        return None
    path = Path(value) if Path(value).is_dir() else ROOT / "data" / value
    if not (path / "manifest.json").exists():
        raise SystemExit(f"arm {arm!r}: no dataset root at {value!r} (nor {path})")
    return str(path)


def columns_of(arm: str, shipped=()) -> tuple[str, ...]:
    """The trace-column families of an arm's prior: the shipped model's (``shipped``) and those its
    ``add_columns=<family>/<family>`` names, in row order; an unknown family, or ``add_columns``
    beside ``ranker_data`` or ``pessimism``, is a clear error."""
    from cwm.model import trace_columns

    pairs = arm_pairs(arm)
    if "add_columns" not in pairs:
        return tuple(shipped)
    if "ranker_data" in pairs or "pessimism" in pairs:
        raise SystemExit(f"arm {arm!r}: add_columns fits its own fold rankers on the shipped roots; "
                         "drop ranker_data and pessimism")
    try:
        return trace_columns.ordered([*shipped, *pairs["add_columns"].split("/")])
    except ValueError as error:
        raise SystemExit(f"arm {arm!r}: {error}") from None


def transition_of(arm: str) -> str | None:
    """The directory of an arm's ``transition=<dir>`` (``bench/transition_corpus.py --save``): the
    prior rolls out with that TransH and its fold rankers are fitted on its rows; None: the shipped
    transition. A directory without a saved transition, or the key beside ``ranker_data`` or
    ``pessimism``, is a clear error."""
    pairs = arm_pairs(arm)
    if "transition" not in pairs:
        return None
    if "ranker_data" in pairs or "pessimism" in pairs:
        raise SystemExit(f"arm {arm!r}: transition fits its own fold rankers on the shipped roots; "
                         "drop ranker_data and pessimism")
    path = Path(pairs["transition"])
    if not (path / "transition.json").exists() or not (path / "transition.safetensors").exists():
        raise SystemExit(f"arm {arm!r}: no saved transition in {path} (bench/transition_corpus.py --save)")
    return str(path)


def pessimism_of(arm: str) -> float | None:
    """The ``k`` of an arm's ``pessimism=<k>``: the prior is then the fold's ensemble of
    :data:`ENSEMBLE_DRAWS` bootstrap rankers scored ``mean - k * spread`` (decision 85,
    :class:`fold_rankers.PessimisticRanker`, anchored on the task's first batch); None: the
    single fold ranker. A negative or non-numeric ``k``, or one with ``ranker_data``, is a clear
    error."""
    pairs = arm_pairs(arm)
    if "pessimism" not in pairs:
        return None
    try:
        k = float(pairs["pessimism"])
    except ValueError:
        raise SystemExit(f"arm {arm!r}: pessimism must be a number, not {pairs['pessimism']!r}") from None
    if k < 0:
        raise SystemExit(f"arm {arm!r}: pessimism must be >= 0 (0: the ensemble's mean)")
    if "ranker_data" in pairs:
        raise SystemExit(f"arm {arm!r}: pessimism's ensembles are fitted on the shipped roots only; "
                         "drop ranker_data")
    return k


def network_of(tasks: list[dict]) -> dict[str, str]:
    """Each chosen task's fold: the first of its networks (sorted)."""
    return {t["key"]: t["networks"][0] for t in tasks if t["networks"]}


def run_arms(loader, union, library, arms, search_of, seeds, n_tasks: int, work_root: Path, checkpoint: str,
             field: str = "arm", trials: int = DEFAULT_TRIALS) -> list[dict]:
    """Tunes each chosen task once per arm and seed (resumable; one process per checkpoint);
    ``search_of(arm)`` gives the arm's ``(FastSettings, AdaptConfig)``, and a row names its arm
    under ``field``."""
    with Lock(checkpoint, "search-knobs benchmark"):
        return _run_arms(loader, union, library, arms, search_of, seeds, n_tasks, work_root, checkpoint, field,
                         trials)


def _run_arms(loader, union, library, arms, search_of, seeds, n_tasks, work_root, checkpoint, field, trials):
    import copy

    from cwm.cost_model.cwm_model import CWMCostModel
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from cwm.tuning.tune import tune_tir

    runs, host = Runs(checkpoint, field), machine()
    check_host(runs, host, hint="pass a new --runs (and --out) for this host")
    check_trials(runs.rows, trials, checkpoint)
    tasks = [t for t in round_robin(zoo_training_tasks(loader, library), n_tasks) if t["networks"]]
    fold = network_of(tasks)
    log(f"{len(tasks)} tasks: {[(t['name'][:32], fold[t['key']]) for t in tasks]}")
    todo = [(seed, task, arm) for seed, task, arm in run_order(seeds, tasks, arms)
            if (task["key"], arm, seed) not in runs.done]
    if not todo:
        return runs.rows
    model = WorldModel.load(default_model_dir())

    def prior_of(arm):  # the prior's model: its trace columns and its transition
        return columns_of(arm, model.columns), transition_of(arm)

    # a prior with other trace columns or another transition is its own model (its rows, references
    # and fold rankers)
    models = {key: model if key == (model.columns, None) else _prior_model(key)
              for key in {prior_of(a) for _, _, a in todo}}
    rankers = {(data, key): fold_priors(models[key], union,
                                        {fold[t["key"]] for _, t, a in todo
                                         if (ranker_data_of(a), prior_of(a)) == (data, key)},
                                        work_root, data, tag=_prior_tag(key, model.columns))
               for data, key in {(ranker_data_of(a), prior_of(a)) for _, _, a in todo if pessimism_of(a) is None}}
    pessimistic = {fold[t["key"]] for _, t, a in todo if pessimism_of(a) is not None}
    ensembles = bootstrap_rankers(model, lambda: training_rows(model, union), pessimistic, ENSEMBLE_DRAWS,
                                  work_root) if pessimistic else {}
    for i, (seed, task, arm) in enumerate(todo):
        settings, adapt = search_of(arm)
        key, k = prior_of(arm), pessimism_of(arm)
        prior = copy.copy(models[key])
        prior.ranker = (rankers[(ranker_data_of(arm), key)][fold[task["key"]]] if k is None
                        else PessimisticRanker(ensembles[fold[task["key"]]], k, anchored=True))
        prior.sequence_head = None
        stats = {}
        start = time.perf_counter()
        out = tune_tir(loader.workload(task["key"]), "llvm", trials=trials,
                       cost_model=CWMCostModel(world_model=prior, config=adapt), seed=seed, settings=settings,
                       seed_library=library,
                       seed_config=seed_config(task, seed_trials=settings.seed_trials,
                                               placement=settings.seed_placement, choice=settings.seed_choice,
                                               stats=stats))
        curve = best_curve(out.records)
        best = curve[-1] if curve else None
        runs.append({"task": task["key"], "name": task["name"], "network_out": fold[task["key"]], field: arm,
                     "seed": seed, "trials": trials, "best_us": best, "curve": curve,
                     "wall_s": time.perf_counter() - start, "seeds": stats, "machine": host,
                     "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
        log(f"[{i + 1}/{len(todo)}] seed {seed} {task['name'][:40]:40s} {field} {arm} best {best} us")
    return runs.rows


def run_order(seeds, tasks: list[dict], arms: list[str]) -> list[tuple]:
    """``(seed, task, arm)`` in the order they run: each (task, seed) runs all its arms back to
    back, the arms rotated by one from one (task, seed) to the next, so every arm runs first (and
    last) about equally often and an effect of running first (a warm cache, the host's drift
    within a pair) does not fall on the baseline alone (decision 116)."""
    from itertools import product

    return [(seed, task, arm) for slot, (seed, task) in enumerate(product(seeds, tasks))
            for arm in arms[slot % len(arms):] + arms[:slot % len(arms)]]


def check_trials(rows: list[dict], trials: int, checkpoint: str) -> None:
    """A checkpoint holds runs of one trial count (a row without one ran the default 64): runs of
    another count under the same (task, arm, seed) would read as done."""
    held = {r.get("trials", DEFAULT_TRIALS) for r in rows}
    if held and held != {trials}:
        raise SystemExit(f"{checkpoint} holds runs of {sorted(held)} trials, not {trials}: "
                         "pass a new --runs (and --out) for another trial count")


def _prior_model(key):
    """The shipped model with the trace columns and transition of a prior's ``(columns, transition)``."""
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel

    columns, transition = key
    model = WorldModel.load(default_model_dir())
    model.columns = columns
    if transition:
        model.use_transition(transition)
    return model


def _prior_tag(key, shipped) -> str:
    """The fold rankers' file tag of a prior with ``columns`` beyond the ``shipped`` ones and/or
    another transition (named by its directory)."""
    columns, transition = key
    extra = [c for c in columns if c not in shipped] + ([f"transition_{Path(transition).name}"] if transition else [])
    return "+" + "+".join(extra) if extra else ""


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


def paired(rows: list[dict], arms, field: str = "arm") -> dict:
    """``arm -> entry``: each arm's runs against the first arm's run of the same task and seed
    (module docstring)."""

    def best_at(row, k):
        values = [v for v in row["curve"][:k] if v is not None]
        return min(values) if values else None

    base = {(r["task"], r["seed"]): r for r in rows if r[field] == arms[0]}
    out = {}
    for arm in arms:
        entry = {}
        for k in sorted({32, 64} | {r.get("trials", DEFAULT_TRIALS) for r in rows}):
            ratios, by_task = [], {}
            for r in rows:
                b = base.get((r["task"], r["seed"]))
                if r[field] != arm or b is None:
                    continue
                x, y = best_at(r, k), best_at(b, k)
                if x and y:
                    ratios.append(x / y)
                    by_task.setdefault(r["task"], []).append(x / y)
            entry[f"at_{k}"] = {"pairs": len(ratios), "geomean_best_over_baseline": geomean(ratios),
                                "faster": sum(x < 0.98 for x in ratios), "slower": sum(x > 1.02 for x in ratios),
                                "task_bootstrap_90": task_bootstrap(list(by_task.values()))}
        entry["wall_s_mean"] = sum(r["wall_s"] for r in rows if r[field] == arm) / max(
            1, sum(r[field] == arm for r in rows))
        out[arm] = entry
    return out


def summary(rows: list[dict], arms: list[str]) -> dict:
    return {"runs": len(rows), "baseline_arm": arms[0], "arms": paired(rows, arms)}


def knob_search(arm: str):
    """An arm's ``(FastSettings, AdaptConfig)``: the ``seeded`` profile with its overrides."""
    from cwm.cost_model.task_adaptation import AdaptConfig
    from cwm.tuning.settings import search_settings

    overrides, adapt = parse_arm(arm)
    return dataclasses.replace(search_settings("seeded"), **overrides), AdaptConfig(**adapt)


def open_roots(data):
    """``(roots, seed library, zoo loader, union)`` of ``--data`` (default: the shipped roots)."""
    from cwm import tvm_patch  # noqa: F401  (MetaSchedule's fast import)
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import open_datasets
    from cwm.tuning.seed_library import SeedLibrary

    roots = [r for r in (data or [str(ROOT / "data" / d) for d in
                                  ("dataset", "dataset_breadth_zen4", "dataset_breadth")]) if os.path.isdir(r)]
    return roots, SeedLibrary.from_datasets(roots), DatasetLoader(roots[0]), open_datasets(roots)


def arm_arguments(parser, flag: str, arms: str, seeds: str, work_root: str, runs: str) -> None:
    """The options both search benches take: the arms' ``flag`` (default ``arms``, the first
    the baseline), ``--seeds``, ``--tasks``, ``--data``, ``--work-root`` (``work_dirs/<work_root>``)
    and ``--runs`` (the checkpoint under ``bench/results``, default ``runs``: one host each, so
    another host kind names its own)."""
    parser.add_argument(flag, default=arms, help="the first is the baseline")
    parser.add_argument("--seeds", default=seeds)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--data", action="append", default=None,
                        help="dataset roots (default: data/dataset, data/dataset_breadth_zen4, data/dataset_breadth)")
    parser.add_argument("--work-root", default=str(ROOT / "work_dirs" / work_root))
    parser.add_argument("--runs", default=runs,
                        help="the runs' checkpoint under bench/results (one host each: a new name on another host)")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        help="measured trials a run (one count a checkpoint); read at 32, 64 and this")


def run_and_write(args, arms, search_of, field: str, summarize, name: str) -> int:
    """Runs the arms (:func:`run_arms`, checkpointed in ``bench/results/<args.runs>``), then writes ``bench/results/<name>`` with
    ``summarize(rows, arms)``, the machine the rows were measured on (named by the rows, not by
    the host that writes the table), the date and the roots."""
    roots, library, loader, union = open_roots(args.data)
    rows = run_arms(loader, union, library, arms, search_of, [int(s) for s in args.seeds.split(",")],
                    args.tasks, Path(args.work_root), os.path.join(RESULTS, args.runs), field=field,
                    trials=args.trials)
    payload = {**summarize(rows, arms), "machine": hosts_of(rows) or machine(), "date": today(),
               "roots": [os.path.relpath(r, ROOT) for r in roots], "library_tasks": len(library)}
    log(json.dumps(payload, indent=1))
    write_result(name, payload)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arm_arguments(parser, "--arms", "base,num_trials_per_iter=8", "0,1,2", "search_knobs",
                  os.path.basename(CHECKPOINT))
    parser.add_argument("--out", default="search_knobs.json",
                        help="the result's name under bench/results (the runs stay in one checkpoint)")
    args = parser.parse_args(argv)
    arms = args.arms.split(",")
    for arm in arms:
        knob_search(arm)  # a typo or an invalid setting fails before any fold is fitted
        ranker_data_of(arm)
        pessimism_of(arm)
        columns_of(arm)
    return run_and_write(args, arms, knob_search, "arm", summary, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
