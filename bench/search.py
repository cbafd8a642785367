"""Search benchmark: CWM vs MetaSchedule's cost models on held-out tasks (docs/search_benchmark.md).

For each of ``--tasks`` held-out test tasks of the dataset (chosen deterministically, see
:func:`select_tasks`), each seed and each method (``cwm``, ``xgb``, ``xgb_pretrained``,
``random``), tune ``--trials`` trials with :func:`cwm.tune`. Then, per task, rebuild every
run's best candidate from its trace and re-measure all of them in one process, interleaved
round-robin for ``--repeats`` rounds (median per candidate), so measurement noise between
tuning runs does not pick the winner. Sample efficiency: on the first
``--sample-efficiency-tasks`` tasks, MetaSchedule's ``xgb`` runs ``--xgb-long-trials`` (640)
trials and CWM up to ``--max-cwm-trials`` (128); the result is the first trial at which CWM's
best-so-far reaches XGB's 640-trial best.

Resumable: every finished tuning run (and every task's re-measurement) is appended at once
to the checkpoint ``<out stem>_runs.jsonl`` (``bench/results/search_runs.jsonl``); a restart
skips what is there. The chosen tasks are stored there too, so a dataset that grew in the
meantime does not change them. Writes ``bench/results/search.json`` and
``bench/results/search_curves.png`` when every run exists (or with ``--partial``).

    PYTHONPATH=python nohup .venv/bin/python bench/search.py > bench/results/search.log 2>&1 &
    PYTHONPATH=python .venv/bin/python bench/search.py --smoke --model-dir M   # minutes

Only the standard library is imported at module level (tests import this file); TVM and cwm
are imported by the default tuning / re-measuring functions, which tests replace.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from checkpoint import JsonlCheckpoint, Lock, write_json  # noqa: E402
from common import machine, today  # noqa: E402  (bench/common.py, standard library only)

METHODS = ("cwm", "xgb", "xgb_pretrained", "random")
#: the cost_model= of cwm.tune for each method
COST_MODEL = {"cwm": "cwm", "xgb": "xgb", "xgb_pretrained": "xgb-pretrained", "random": "random"}
BASELINES = ("xgb", "xgb_pretrained", "random")
#: op classes in the order :func:`select_tasks` takes them round-robin
OP_CLASSES = ("conv2d", "depthwise_conv2d", "matmul", "norm", "other")
DEFAULT_OUT = os.path.join(HERE, "results", "search.json")
SMOKE_OUT = os.path.join(ROOT, "work_dirs", "search_smoke", "search.json")


def log(*parts) -> None:
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


# ------------------------------------------------------------------------ pure helpers
def geomean(values) -> float | None:
    """Geometric mean of the positive finite ``values``; None if there are none."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def mean_or_none(values) -> float | None:
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    return sum(xs) / len(xs) if xs else None


def best_so_far(latencies) -> list:
    """Running minimum of per-trial latencies (None = failed trial; None until the first valid one)."""
    out, best = [], None
    for x in latencies:
        if x is not None and math.isfinite(x) and (best is None or x < best):
            best = float(x)
        out.append(best)
    return out


def trials_to_reach(curve, target) -> int | None:
    """The first trial count ``n`` (1-based) with ``curve[n-1] <= target``; None if never."""
    if target is None:
        return None
    for i, x in enumerate(curve):
        if x is not None and x <= target:
            return i + 1
    return None


def median_curve(curves) -> list:
    """Element-wise median over curves of possibly different lengths (Nones ignored)."""
    n = max((len(c) for c in curves), default=0)
    out = []
    for i in range(n):
        xs = [c[i] for c in curves if i < len(c) and c[i] is not None]
        out.append(statistics.median(xs) if xs else None)
    return out


def speedups(table: dict, seeds, methods=METHODS) -> tuple[dict, dict]:
    """Geomean over tasks of ``baseline / cwm`` latency, and its spread over seeds.

    ``table[task][method]`` is a list of best latencies, one per seed (None = missing). Per task
    each method's latency is the mean over its seeds; a task enters a ratio when both methods
    have a value. The spread is the same geomean computed per seed (tasks where both methods
    have that seed), reported as ``per_seed``, ``min`` and ``max``.
    """
    geo, spread = {}, {}
    for base in [m for m in BASELINES if m in methods]:
        name = f"cwm_vs_{base}"
        ratios = []
        for row in table.values():
            c, b = mean_or_none(row.get("cwm", [])), mean_or_none(row.get(base, []))
            if c is not None and b is not None and c > 0:
                ratios.append(b / c)
        geo[name] = geomean(ratios)
        per_seed = {}
        for i, seed in enumerate(seeds):
            rs = []
            for row in table.values():
                cs, bs = row.get("cwm", []), row.get(base, [])
                c = cs[i] if i < len(cs) else None
                b = bs[i] if i < len(bs) else None
                if c is not None and b is not None and c > 0:
                    rs.append(b / c)
            if rs:
                per_seed[str(seed)] = geomean(rs)
        vals = list(per_seed.values())
        spread[name] = {"n_tasks": len(ratios), "per_seed": per_seed,
                        "min": min(vals) if vals else None, "max": max(vals) if vals else None}
    return geo, spread


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
    chosen = []
    while len(chosen) < n and any(by_class.values()):
        for c in OP_CLASSES:
            if by_class[c] and len(chosen) < n:
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


# ------------------------------------------------------------------------ checkpoint
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

# ------------------------------------------------------------------------ tuning
def run_record(spec: dict, result, wall_s: float) -> dict:
    """The checkpoint line of a finished run, from a :class:`cwm.TuneResult` (or look-alike)."""
    lat = [r.get("latency_us") for r in result.records]
    best = result.best_us if result.best_us is not None and math.isfinite(result.best_us) else None
    wall = dict(result.wall or {})
    n = len(result.records)
    return {"kind": "run", **spec, "best_us": best, "best_trace": result.best_trace, "curve": best_so_far(lat),
            "n_records": n, "n_valid": sum(x is not None for x in lat), "timing": wall,
            "s_per_trial": (wall.get("total_s", wall_s) / n) if n else None, "wall_s": wall_s,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "loadavg": [round(x, 2) for x in os.getloadavg()]}


def training_data_hash(data) -> dict:
    """``{train_shards, sha256}`` of the dataset's training shards, as ``cwm train`` records it in
    a model's manifest (``training_data``), to check both models saw the same records."""
    import hashlib

    from cwm.dataset.loader import DatasetLoader

    loader = DatasetLoader(data)
    train = set(loader.task_keys("train"))
    shards = {k: v["sha256"] for k, v in loader.store.manifest().get("shards", {}).items() if k in train}
    return {"train_shards": len(shards),
            "sha256": hashlib.sha256(json.dumps(shards, sort_keys=True).encode()).hexdigest()}


class DefaultTuner:
    """``tune_fn`` of :func:`execute`: :func:`cwm.tune` on the host target with the method's cost model.

    ``xgb_pretrained`` uses a pre-trained XGBModel per seed, pinned as
    ``<work_root>/xgb_pretrained/seed<S>.tar`` on first use (built from ``data``'s training split,
    through cwm's cache), so that a resumed run uses the same model even if the dataset grew.
    """

    def __init__(self, model_dir, data, work_root, model: dict | None = None):
        self.model_dir, self.data, self.work_root, self.model = model_dir, data, work_root, model

    def pretrained(self, seed) -> str:
        pinned = os.path.join(self.work_root, "xgb_pretrained", f"seed{seed}.tar")
        if not os.path.exists(pinned):
            from cwm.cost_model.xgb_pretrained import pretrained_xgb_path

            start = time.perf_counter()
            log(f"building/looking up the pre-trained XGBModel for seed {seed} on {self.data} ...")
            built = str(pretrained_xgb_path(self.data, seed=seed, log=lambda m: log(m)))
            os.makedirs(os.path.dirname(pinned), exist_ok=True)
            meta = {}
            if os.path.exists(built + ".json"):
                with open(built + ".json") as f:
                    meta = json.load(f)
            meta.update(source=built, training_data=training_data_hash(self.data))
            shutil.copyfile(built, pinned + ".tmp")
            write_json(pinned + ".json", meta)
            os.replace(pinned + ".tmp", pinned)
            log(f"pinned {built} as {pinned} ({time.perf_counter() - start:.0f} s); trained on "
                f"{meta['training_data']}")
            cwm_data = (self.model or {}).get("training_data")
            if cwm_data and cwm_data.get("sha256") != meta["training_data"]["sha256"]:
                log(f"WARNING: the CWM model was trained on other training records ({cwm_data}) than this "
                    f"pre-trained XGBModel ({meta['training_data']}); the dataset changed in between")
        return pinned

    def __call__(self, workload, *, method, seed, trials, work_dir):
        import cwm

        options = {}
        if method == "cwm":
            options["model_dir"] = self.model_dir
        if method == "xgb_pretrained":
            options["pretrained_xgb"] = self.pretrained(seed)
        return cwm.tune(workload, target="llvm", trials=trials, cost_model=COST_MODEL[method], work_dir=work_dir,
                        seed=seed, dataset=self.data, **options)


def _fmt_s(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def estimate_s_per_trial(runs: dict, method: str, default: float = 1.5) -> float:
    xs = [r["s_per_trial"] for r in runs.values() if r.get("method") == method and r.get("s_per_trial")]
    if not xs:
        xs = [r["s_per_trial"] for r in runs.values() if r.get("s_per_trial")]
    return statistics.median(xs) if xs else default


def execute(specs, ckpt: Checkpoint, tune_fn, workload_fn, names: dict, work_root: str, max_runs=None,
            extra=None) -> dict:
    """Run every spec not in the checkpoint; append each finished run at once. Returns counts.

    A run that raises is logged and not recorded (a restart retries it); the others go on.
    """
    todo = [s for s in specs if run_id(s) not in ckpt.runs]
    done_before = len(specs) - len(todo)
    log(f"{len(specs)} runs planned, {done_before} already in {ckpt.path}, {len(todo)} to do")
    failed, ran = [], 0
    task_order = list(dict.fromkeys(s["task"] for s in specs))
    for i, spec in enumerate(todo):
        if max_runs is not None and ran >= max_runs:
            log(f"--max-runs {max_runs} reached; stopping (rerun to continue)")
            break
        remaining = sum(s["trials"] * estimate_s_per_trial(ckpt.runs, s["method"]) for s in todo[i:])
        key = spec["task"]
        log(f"[run {done_before + i + 1}/{len(specs)}] task {task_order.index(key) + 1}/{len(task_order)} "
            f"{names.get(key, key)} method={spec['method']} seed={spec['seed']} trials={spec['trials']} "
            f"({spec['purpose']}); ETA {_fmt_s(remaining)}")
        work_dir = os.path.join(work_root, key, f"{spec['method']}_s{spec['seed']}_t{spec['trials']}")
        shutil.rmtree(work_dir, ignore_errors=True)  # a cut run's database must not seed this one
        start = time.perf_counter()
        try:
            result = tune_fn(workload_fn(key), method=spec["method"], seed=spec["seed"], trials=spec["trials"],
                             work_dir=work_dir)
        except Exception:  # noqa: BLE001  (logged; retried on restart)
            log(f"  FAILED after {time.perf_counter() - start:.0f} s:\n{traceback.format_exc()}")
            failed.append(run_id(spec))
            ran += 1
            continue
        rec = run_record(spec, result, time.perf_counter() - start)
        rec.update(extra or {})
        ckpt.append(rec)
        ran += 1
        best = f"{rec['best_us']:.1f} us" if rec["best_us"] is not None else "none valid"
        log(f"  best {best}, {rec['n_valid']}/{rec['n_records']} valid, {rec['wall_s']:.0f} s "
            f"({rec['s_per_trial'] or 0:.2f} s/trial)")
    missing = [run_id(s) for s in specs if run_id(s) not in ckpt.runs]
    return {"ran": ran, "failed": failed, "missing": missing}


# ------------------------------------------------------------------------ re-measurement
def build_candidate(workload, trace, target):
    """Compile a best candidate from its trace the way MetaSchedule's builder does; (module, args_info)."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    from cwm.replay import apply_trace

    sch = apply_trace(workload, trace)
    args_info = [a.as_json() for a in ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)]
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(sch.mod)
    return tvm_build(mod, target=target), args_info


def remeasure(workload, candidates: dict, repeats: int = 20, min_repeat_ms: float = 20.0) -> dict:
    """Re-measure ``{cid: trace}`` in this process, interleaved; ``{cid: {median_us, ...}}``.

    Each candidate is built (``tvm.driver.build``, as MetaSchedule's builder, for
    :func:`cwm.tuning.target.host_target`) and gets its own arguments (random floats, zero
    integers). Its ``number`` (runs per sample) is calibrated once so that one sample lasts
    ``min_repeat_ms``. Then ``repeats`` rounds: each round takes one sample of every candidate,
    starting at a different candidate each round (no position always first). The result per
    candidate is the median of its samples (``time_evaluator`` does one untimed warm-up call
    before each sample).
    """
    import tvm

    from cwm.tuning.pooled_runner import alloc_arguments
    from cwm.tuning.target import host_target

    target, dev = host_target(), tvm.cpu(0)
    built, out = {}, {}
    for cid, trace in candidates.items():
        try:
            rt, args_info = build_candidate(workload, trace, target)
            args = alloc_arguments(dev, args_info, 1)[0]
            probe = rt.time_evaluator(rt.entry_name, dev, number=1, repeat=3)(*args).results
            per_run = max(statistics.median(probe), 1e-9)
            number = max(1, math.ceil(min_repeat_ms / 1e3 / per_run))
            built[cid] = (rt.time_evaluator(rt.entry_name, dev, number=number, repeat=1), args, number)
        except Exception as error:  # noqa: BLE001
            out[cid] = {"median_us": None, "error": f"{type(error).__name__}: {error}"}
    samples = {cid: [] for cid in built}
    order = list(built)
    for r in range(repeats):
        k = r % len(order) if order else 0
        for cid in order[k:] + order[:k]:
            evaluator, args, _ = built[cid]
            samples[cid].append(float(evaluator(*args).results[0]) * 1e6)
    for cid, (_, _, number) in built.items():
        xs = sorted(samples[cid])
        q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
        out[cid] = {"median_us": statistics.median(xs), "q1_us": q[0], "q3_us": q[2], "min_us": xs[0],
                    "number": number, "samples_us": [round(x, 3) for x in samples[cid]]}
    return out


def remeasure_all(ckpt: Checkpoint, runs: dict, task_keys, workload_fn, remeasure_fn, repeats, min_repeat_ms,
                  names) -> dict:
    """Re-measure each task's best candidates (those of all its ``runs``); reuse a checkpointed
    re-measurement of exactly the same candidates. Returns ``{run id: result}``."""
    results = {}
    for i, key in enumerate(task_keys):
        cands = {rid: r["best_trace"] for rid, r in sorted(runs.items())
                 if r["task"] == key and r.get("best_trace")}
        if not cands:
            continue
        prev = ckpt.remeasures.get(key)
        if prev and sorted(prev["candidates"]) == sorted(cands) and prev.get("repeats") == repeats:
            results.update(prev["results"])
            continue
        log(f"[re-measure {i + 1}/{len(task_keys)}] {names.get(key, key)}: {len(cands)} candidates x {repeats} "
            "interleaved rounds")
        start = time.perf_counter()
        res = remeasure_fn(workload_fn(key), cands, repeats=repeats, min_repeat_ms=min_repeat_ms)
        ckpt.append({"kind": "remeasure", "task": key, "candidates": sorted(cands), "repeats": repeats,
                     "min_repeat_ms": min_repeat_ms, "results": res, "wall_s": time.perf_counter() - start,
                     "loadavg": [round(x, 2) for x in os.getloadavg()], "date": time.strftime("%Y-%m-%dT%H:%M:%S")})
        results.update(res)
    return results


# ------------------------------------------------------------------------ report
def summarize(plan: dict, runs: dict, remeasured: dict, methods, seeds, trials, se_keys, xgb_long_trials,
              max_cwm_trials, partial: bool) -> dict:
    """The ``search.json`` payload (see docs/search_benchmark.md for every key)."""
    tasks = {t["key"]: t for t in plan["tasks"]}

    def remeasured_us(spec):
        res = remeasured.get(run_id(spec)) or {}
        return res.get("median_us")

    table, detail = {}, {}
    for key, t in tasks.items():
        label = task_label(t)
        row, tuned, curves = {}, {}, {}
        for m in methods:
            specs = [{"task": key, "method": m, "seed": s, "trials": trials} for s in seeds]
            row[m] = [remeasured_us(s) if run_id(s) in runs else None for s in specs]
            tuned[m] = [runs[run_id(s)]["best_us"] if run_id(s) in runs else None for s in specs]
            curves[m] = median_curve([runs[run_id(s)]["curve"] for s in specs if run_id(s) in runs])
        table[label] = row
        detail[label] = {"key": key, "name": t["name"], "op": t["op"], "dataset_records": t["records"],
                         "flop": t.get("flop"), "tuning_best_us": tuned, "median_curve_us": curves}
    geo, spread = speedups(table, seeds, methods)

    sample_eff = {}
    for key in se_keys:
        t = tasks[key]
        xs = {"task": key, "method": "xgb", "seed": seeds[0], "trials": xgb_long_trials}
        cs = {"task": key, "method": "cwm", "seed": seeds[0], "trials": max_cwm_trials}
        x, c = runs.get(run_id(xs)), runs.get(run_id(cs))
        entry = {"xgb_640_best_us": x["best_us"] if x else None,
                 "cwm_trials_to_reach": trials_to_reach(c["curve"], x["best_us"]) if (x and c) else None,
                 "xgb_trials": xgb_long_trials, "cwm_max_trials": max_cwm_trials, "seed": seeds[0],
                 "cwm_best_us": c["best_us"] if c else None,
                 "xgb_640_best_remeasured_us": remeasured_us(xs) if x else None,
                 "cwm_best_remeasured_us": remeasured_us(cs) if c else None,
                 "xgb_curve_us": x["curve"] if x else None, "cwm_curve_us": c["curve"] if c else None}
        if x and c:
            entry["xgb_trials_to_own_best"] = trials_to_reach(x["curve"], x["best_us"])
        sample_eff[task_label(t)] = entry

    wall = {}
    for m in methods:
        rs = [r for r in runs.values() if r["method"] == m and r.get("n_records")]
        n = sum(r["n_records"] for r in rs)
        if n:
            wall[m] = {"runs": len(rs), "trials": n,
                       **{f"{k}_per_trial": sum(r["timing"].get(k, 0.0) for r in rs) / n
                          for k in ("total_s", "search_s", "cost_model_s", "build_s", "run_s")}}
    return {"trials": trials, "seeds": list(seeds), "methods": list(methods), "tasks": table,
            "geomean_speedup": geo, "geomean_speedup_spread": spread, "sample_efficiency": sample_eff,
            "wall_per_trial_s": wall, "task_detail": detail, "partial": partial,
            "selection": plan.get("selection"), "model": plan.get("model"),
            "machine": machine(), "date": today()}


def plot_curves(report: dict, path: str) -> str | None:
    """``search_curves.png``: best-so-far latency vs trial (median over seeds), one subplot per
    task; plus, if there are sample-efficiency runs, one subplot per such task (xgb 640 vs cwm)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {m: f"C{i}" for i, m in enumerate(METHODS)}
    panels = [(d["median_curve_us"], None, f"{label.split('/')[0]}") for label, d in report["task_detail"].items()]
    panels += [({"xgb": e["xgb_curve_us"] or [], "cwm": e["cwm_curve_us"] or []}, e["xgb_640_best_us"],
                f"sample eff. (seed {e['seed']}): {label.split('/')[0]}")
               for label, e in report["sample_efficiency"].items()]
    if not panels:
        return None
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (curves, target, title) in zip(axes.flat, panels):
        for m, curve in curves.items():
            pts = [(i + 1, y) for i, y in enumerate(curve) if y is not None]
            if pts:
                label = m if target is None else f"{m} ({len(curve)} trials)"
                ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=label, color=colors.get(m))
        if target is not None:
            ax.axhline(target, color=colors["xgb"], linestyle=":", linewidth=1)
        ax.set_title(title if len(title) < 48 else title[:45] + "...", fontsize=8)
        ax.set_xlabel("trial", fontsize=8)
        ax.set_ylabel("best so far (us)", fontsize=8)
        ax.set_yscale("log")
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"best-so-far latency, median over seeds {report['seeds']} (tuning measurements)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def markdown(report: dict) -> str:
    """A short text summary for the log (bench/report.py renders the README table)."""
    lines = [f"geomean speedup (baseline / cwm latency, >1 = cwm faster): "
             + ", ".join(f"{k} {v:.3f}" if v else f"{k} n/a" for k, v in report["geomean_speedup"].items())]
    for k, s in report["geomean_speedup_spread"].items():
        lines.append(f"  {k}: per seed {s['per_seed']} over {s['n_tasks']} tasks")
    for label, row in report["tasks"].items():
        lines.append(f"  {label}: " + ", ".join(
            f"{m} {mean_or_none(v):.1f}" if mean_or_none(v) is not None else f"{m} n/a" for m, v in row.items()))
    for label, e in report["sample_efficiency"].items():
        lines.append(f"  sample efficiency {label}: xgb@{e['xgb_trials']} {e['xgb_640_best_us']} us; cwm reaches it "
                     f"at trial {e['cwm_trials_to_reach']} (cwm best {e['cwm_best_us']} us in {e['cwm_max_trials']})")
    for m, w in report["wall_per_trial_s"].items():
        lines.append(f"  wall per trial {m}: {w['total_s_per_trial']:.2f} s")
    return "\n".join(lines)


# ------------------------------------------------------------------------ driver
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=8, help="number of held-out test tasks (default 8)")
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--seeds", default="0,1,2", help="comma-separated (default 0,1,2)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)}")
    p.add_argument("--sample-efficiency-tasks", type=int, default=3,
                   help="the first K chosen tasks also get the xgb-640 vs cwm run (default 3; 0: none)")
    p.add_argument("--xgb-long-trials", type=int, default=640)
    p.add_argument("--max-cwm-trials", type=int, default=128)
    p.add_argument("--min-records", type=int, default=150, help="test tasks with fewer dataset records are skipped")
    p.add_argument("--model-dir", default=None,
                   help="CWM model (default: the shipped one, cwm.model.default_model_dir())")
    p.add_argument("--data", default=os.path.join(ROOT, "data", "dataset"))
    p.add_argument("--out", default=None, help=f"result JSON (default {os.path.relpath(DEFAULT_OUT, ROOT)}); the "
                   "checkpoint <stem>_runs.jsonl and plot <stem>_curves.png go next to it")
    p.add_argument("--work-root", default=None, help="MetaSchedule work dirs (default work_dirs/search[_smoke])")
    p.add_argument("--repeats", type=int, default=20, help="interleaved re-measurement rounds (default 20)")
    p.add_argument("--min-repeat-ms", type=float, default=20.0, help="length of one re-measurement sample")
    p.add_argument("--max-runs", type=int, default=None, help="stop after this many tuning runs (resume later)")
    p.add_argument("--partial", action="store_true", help="report on the runs that exist even if some are missing")
    p.add_argument("--report-only", action="store_true", help="no tuning: re-measure and report what exists")
    p.add_argument("--allow-model-change", action="store_true",
                   help="resume although the CWM model files differ from those of the checkpointed runs")
    p.add_argument("--smoke", action="store_true", help="1 task, 8 trials, seed 0, all methods, sample "
                   "efficiency 16 vs 16 trials, out work_dirs/search_smoke/ (minutes)")
    args = p.parse_args(argv)
    if args.smoke:
        args.tasks, args.trials, args.seeds = 1, 8, "0"
        args.sample_efficiency_tasks, args.xgb_long_trials, args.max_cwm_trials = 1, 16, 16
        args.min_repeat_ms = min(args.min_repeat_ms, 10.0)
    args.out = args.out or (SMOKE_OUT if args.smoke else DEFAULT_OUT)
    args.work_root = args.work_root or os.path.join(ROOT, "work_dirs", "search_smoke" if args.smoke else "search")
    args.seed_list = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.method_list = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = set(args.method_list) - set(METHODS)
    if bad or not args.seed_list:
        p.error(f"unknown method(s) {sorted(bad)}; choose from {METHODS}" if bad else "no seeds")
    return args


def paths(out: str) -> tuple[str, str]:
    stem = os.path.splitext(out)[0]
    return stem + "_runs.jsonl", stem + "_curves.png"


def model_info(model_dir) -> dict:
    from cwm.cost_model.cwm_model import prior_fingerprint
    from cwm.model import default_model_dir

    path = os.path.abspath(model_dir) if model_dir else str(default_model_dir())
    info = {"model_dir": path, "prior_sha256": prior_fingerprint(path)}
    try:
        with open(os.path.join(path, "manifest.json")) as f:
            man = json.load(f)
        info["training_data"] = man.get("training_data")
    except (OSError, ValueError):
        pass
    return info


def check_model(model_dir) -> dict:
    """:func:`model_info` of a CWM model that loads (fail at the start, not at the first cwm run)."""
    try:
        from cwm.model.world_model import WorldModel

        info = model_info(model_dir)
        WorldModel.load(info["model_dir"])
    except (FileNotFoundError, ValueError, OSError) as error:
        raise SystemExit(f"cannot use the CWM model: {error}") from None
    return info


def make_plan(ckpt: Checkpoint, args, select_fn, model: dict | None) -> dict:
    """The checkpoint's plan (tasks pinned at the first start), extended if more tasks are asked for."""
    plan = ckpt.plan
    if plan and model and plan.get("model") and plan["model"].get("prior_sha256") != model.get("prior_sha256"):
        if not args.allow_model_change:
            raise SystemExit(f"the CWM model at {model['model_dir']} differs from the one the checkpointed runs "
                             f"used ({plan['model']}); pass --allow-model-change, or a new --out")
        log(f"WARNING: the CWM model changed ({plan['model']} -> {model}); runs already done are kept")
        plan = {**plan, "model": model, "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
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
           "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    ckpt.append(new)
    return new


def main(argv=None, tune_fn=None, remeasure_fn=None, select_fn=None, workload_fn=None, model=None) -> int:
    """Entry point; the keyword arguments replace the tuning, re-measuring, task selection and
    workload loading (tests); ``model`` replaces the CWM model description (tests)."""
    args = parse_args(argv)
    ckpt_path, png_path = paths(args.out)
    with Lock(ckpt_path, "bench/search.py"):
        ckpt = Checkpoint(ckpt_path)
        if workload_fn is None:
            from cwm.dataset.loader import DatasetLoader

            workload_fn = DatasetLoader(args.data).workload
        if model is None and "cwm" in args.method_list and not args.report_only:
            model = check_model(args.model_dir)
        plan = make_plan(ckpt, args, select_fn or select_tasks, model)
        tasks = plan["tasks"][:args.tasks]
        names = {t["key"]: t["name"] for t in tasks}
        log(f"machine: {machine()}; loadavg {os.getloadavg()}")
        log(f"checkpoint {ckpt_path}; work dirs {args.work_root}")
        log(f"tasks ({len(tasks)}; {plan['selection']['rule']}):")
        for i, t in enumerate(tasks):
            log(f"  {i + 1}. {task_label(t)}  op={t['op']} records={t['records']} flop={t.get('flop')}")
        se_tasks = tasks[:args.sample_efficiency_tasks]
        specs = plan_runs(tasks, args.method_list, args.seed_list, args.trials, se_tasks,
                          args.xgb_long_trials, args.max_cwm_trials)
        if not args.report_only:
            tune_fn = tune_fn or DefaultTuner(args.model_dir, args.data, args.work_root, model)
            extra = {"model_sha256": (model or {}).get("prior_sha256")}
            status = execute(specs, ckpt, tune_fn, workload_fn, names, args.work_root, args.max_runs, extra)
        else:
            status = {"missing": [run_id(s) for s in specs if run_id(s) not in ckpt.runs], "failed": []}
        if status["missing"] and not args.partial:
            log(f"{len(status['missing'])} run(s) missing: rerun to finish them, or pass --partial to report now")
            return 1
        # only this plan's runs are re-measured and reported
        runs = {run_id(s): ckpt.runs[run_id(s)] for s in specs if run_id(s) in ckpt.runs}
        remeasured = remeasure_all(ckpt, runs, [t["key"] for t in tasks], workload_fn, remeasure_fn or remeasure,
                                   args.repeats, args.min_repeat_ms, names)
        report = summarize(plan, runs, remeasured, args.method_list, args.seed_list, args.trials,
                           [t["key"] for t in se_tasks], args.xgb_long_trials, args.max_cwm_trials,
                           partial=bool(status["missing"]))
        report["remeasure"] = {"repeats": args.repeats, "min_repeat_ms": args.min_repeat_ms, "statistic": "median",
                               "interleaved": True, "build": "tvm.driver.build for cwm.tuning.host_target()"}
        report["runs"] = {"planned": len(specs), "done": len(runs), "missing": status["missing"]}
        report["smoke"] = bool(args.smoke)
        report["xgb_pretrained"] = {}
        for seed in args.seed_list:
            side = os.path.join(args.work_root, "xgb_pretrained", f"seed{seed}.tar.json")
            if os.path.exists(side):
                with open(side) as f:
                    report["xgb_pretrained"][str(seed)] = json.load(f)
        png = None
        try:
            png = plot_curves(report, png_path)
        except ImportError as error:
            log(f"no plot: {error}")
        report["curves_png"] = os.path.relpath(png, ROOT) if png else None
        write_json(args.out, report)
        log("\n" + markdown(report))
        log(f"wrote {args.out}" + (f" and {png}" if png else "") + (" (PARTIAL)" if report["partial"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
