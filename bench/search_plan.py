"""What the search benchmark (bench/search.py) runs: the methods, the held-out tasks (chosen
once and pinned in the checkpoint), and the tuning runs over tasks x methods x seeds; the
checkpoint that records the plan, the finished runs and the re-measurements.

Standard library only at module level; the dataset loader is imported by :func:`select_tasks`,
which tests replace.
"""
from __future__ import annotations

import os

from checkpoint import JsonlCheckpoint
from common import log, now

METHODS = ("cwm", "xgb", "xgb_pretrained", "random")
#: the cost_model= of cwm.tune for each method
COST_MODEL = {"cwm": "cwm", "xgb": "xgb", "xgb_pretrained": "xgb-pretrained", "random": "random"}
BASELINES = ("xgb", "xgb_pretrained", "random")
#: ``<method>@<profile>``: the method searching with a named profile of
#: :data:`cwm.tuning.settings.SEARCH_PROFILES` (e.g. ``cwm@wide``, ``xgb_pretrained@wide``)
PROFILE_SEP = "@"
#: op classes in the order :func:`select_tasks` takes them round-robin
OP_CLASSES = ("conv2d", "depthwise_conv2d", "matmul", "norm", "other")


def split_method(method: str) -> tuple[str, str | None]:
    """``("cwm", "wide")`` for ``cwm@wide``, ``("xgb", None)`` for ``xgb``."""
    base, sep, profile = method.partition(PROFILE_SEP)
    return base, (profile if sep else None)


def unknown_methods(methods, profiles) -> list[str]:
    """The names of ``methods`` that are neither a method nor ``<method>@<one of profiles>``."""
    bad = []
    for m in methods:
        base, profile = split_method(m)
        if base not in METHODS or (profile is not None and profile not in profiles):
            bad.append(m)
    return bad


def op_class(name: str, script: str = "") -> str:
    """``conv2d`` | ``depthwise_conv2d`` | ``matmul`` | ``norm`` | ``other`` from a task's name / TIR text."""
    text = f"{name}\n{script}".lower()
    if "group_conv2d" in text or "depthwise" in text:
        return "depthwise_conv2d"
    if "conv2d" in text:
        return "conv2d"
    if "matmul" in text or "dense" in text or "batch_matmul" in text:
        return "matmul"
    if "layer_norm" in text or "softmax" in text or "rms_norm" in text or "group_norm" in text:
        return "norm"
    return "other"


def pick_round_robin(candidates: list[dict], n: int) -> list[dict]:
    """``n`` tasks taken round-robin over :data:`OP_CLASSES`, within a class by (-records, -flop, key)."""
    by_class = {c: sorted([t for t in candidates if t["op"] == c],
                          key=lambda t: (-t["records"], -(t.get("flop") or 0), t["key"])) for c in OP_CLASSES}
    return take_in_turn(by_class, n)


def take_in_turn(by_class: dict, n: int) -> list:
    """``n`` items taken from the lists of ``by_class`` (op class -> ordered list, consumed) one class
    at a time in :data:`OP_CLASSES` order, until ``n`` or all are taken."""
    chosen = []
    while len(chosen) < n and any(by_class.get(c) for c in OP_CLASSES):
        for c in OP_CLASSES:
            if by_class.get(c) and len(chosen) < n:
                chosen.append(by_class[c].pop(0))
    return chosen


def select_tasks(data: str, n: int, min_records: int = 150) -> list[dict]:
    """The ``n`` held-out test tasks with the largest design spaces, distinct op types first.

    Candidates: finished test-split tasks with at least ``min_records`` records (the collector
    stops early on small design spaces). Taken round-robin over the op classes conv2d,
    depthwise conv2d, matmul/dense, layer_norm/softmax, other (:func:`pick_round_robin`).
    """
    from cwm.dataset.loader import DatasetLoader

    loader = DatasetLoader(data)
    cands = []
    for key in loader.task_keys("test"):
        if not loader.store.is_finished(key):
            continue
        records = len(loader.store.records(key))
        if records < min_records:
            continue
        meta = loader.store.get_task(key)
        cands.append({"key": key, "name": meta.get("name", key), "records": records, "flop": meta.get("flop"),
                      "networks": meta.get("networks"),
                      "op": op_class(meta.get("name", ""), loader.workload(key).script())})
    return pick_round_robin(cands, n)


def task_label(task: dict) -> str:
    return f"{task['name']}/{task['key']}"


def run_id(spec: dict) -> str:
    return f"{spec['task']}|{spec['method']}|{spec['seed']}|{spec['trials']}"


def plan_runs(tasks, methods, seeds, trials, se_tasks=(), xgb_long_trials=640, max_cwm_trials=128) -> list[dict]:
    """Every tuning run, in execution order: main runs seed by seed, then sample efficiency.

    Seed-major order makes a ``--partial`` report after the first seed cover every task.
    A run is identified by (task, method, seed, trials), so a sample-efficiency run that
    coincides with a main run (e.g. ``--max-cwm-trials`` == ``--trials``) is run once.
    """
    specs, seen = [], set()

    def add(spec):
        if run_id(spec) not in seen:
            seen.add(run_id(spec))
            specs.append(spec)

    for seed in seeds:
        for t in tasks:
            for m in methods:
                add({"task": t["key"], "method": m, "seed": seed, "trials": trials, "purpose": "main"})
    for t in se_tasks:
        add({"task": t["key"], "method": "xgb", "seed": seeds[0], "trials": xgb_long_trials,
             "purpose": "sample_efficiency"})
        add({"task": t["key"], "method": "cwm", "seed": seeds[0], "trials": max_cwm_trials,
             "purpose": "sample_efficiency"})
    return specs


class Checkpoint(JsonlCheckpoint):
    """Append-only JSONL: ``plan`` lines, one ``run`` line per finished tuning run, ``remeasure`` lines.
    (:class:`checkpoint.JsonlCheckpoint`: fsync-ed lines, a torn last line is dropped.)
    """

    def __init__(self, path: str):
        self.plan: dict | None = None
        self.runs: dict[str, dict] = {}
        self.remeasures: dict[str, dict] = {}
        super().__init__(path)

    def _index(self, rec):
        kind = rec.get("kind")
        if kind == "plan":
            self.plan = rec
        elif kind == "run":
            self.runs[run_id(rec)] = rec
        elif kind == "remeasure":
            self.remeasures[rec["task"]] = rec


def make_plan(ckpt: Checkpoint, args, select_fn, model: dict | None) -> dict:
    """The checkpoint's plan (tasks pinned at the first start), extended if more tasks are asked for."""
    plan = ckpt.plan
    if plan and model and plan.get("model") and plan["model"].get("prior_sha256") != model.get("prior_sha256"):
        if not args.allow_model_change:
            raise SystemExit(f"the CWM model at {model['model_dir']} differs from the one the checkpointed runs "
                             f"used ({plan['model']}); pass --allow-model-change, or a new --out")
        log(f"WARNING: the CWM model changed ({plan['model']} -> {model}); runs already done are kept")
        plan = {**plan, "model": model, "date": now()}
        ckpt.append(plan)
    if plan and len(plan["tasks"]) >= args.tasks:
        return plan
    chosen = select_fn(args.data, args.tasks, args.min_records)
    if plan:  # keep the pinned tasks first, add new picks
        pinned = {t["key"] for t in plan["tasks"]}
        chosen = plan["tasks"] + [t for t in chosen if t["key"] not in pinned][:args.tasks - len(plan["tasks"])]
    if not chosen:
        raise SystemExit(f"no test task of {args.data} has >= {args.min_records} records")
    new = {"kind": "plan", "tasks": chosen, "model": model if model else (plan or {}).get("model"),
           "selection": {"data": os.path.abspath(args.data), "min_records": args.min_records, "split": "test",
                         "rule": "finished test tasks with >= min_records records, round-robin over op classes "
                                 f"{list(OP_CLASSES)}, within a class by (-records, -flop, key)"},
           "date": now()}
    ckpt.append(new)
    return new
