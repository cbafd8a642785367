"""How well can any model rank measured latencies? The label-noise ceiling (issue #12).

A ranker is judged against one measurement of each candidate. Two measurements of the same
candidates do not order them the same way, so no model reaches pairwise 1.0 or top-1 1.0: the
ceiling is how well one measurement ranks another. This bench measures it on this host, with the
protocol the dataset's labels were measured with (MetaSchedule's evaluator through
:class:`~cwm.tuning.pooled_runner.PooledRunner`: ``repeat`` 3, ``min_repeat_ms`` 10, built by
:class:`~cwm.tuning.pooled_builder.PooledBuilder` for this host's CPU):

* a seeded subset of ``--candidates`` valid candidates of each task of ``--split`` (default: the
  held-out test tasks, whose table the issue's targets are on; this reports, it chooses nothing);
* pass A measures every task's subset, then pass B measures them all again, in the same task
  order (so each task's two passes are the same time apart, the length of one pass);
* the table (every metric of :func:`cwm.model.metrics.summarize`, on the subset):

  - ``ceiling``: pass A's latencies as the scores (lower is better), judged on pass B, and B's
    judged on A, averaged: what a model that knew this host's latencies up to one measurement
    would read;
  - ``dataset_label``: the dataset's own latency (measured on the collection host) judged on
    A and on B: how far the labels carry to this host;
  - ``cwm``: the shipped model's scores judged on the dataset's labels (the held-out table's
    footing, on the subset), and on A and B.

Checkpointed per task and pass (``--runs``, a JSONL; one host per checkpoint); resumable.

    PYTHONPATH=python .venv/bin/python bench/label_noise.py [--split test] [--candidates 48]
        [--runs label_noise_runs_<host>.jsonl] [--out label_noise_<host>.json]

Keep the machine quiet while it runs: it measures latencies.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from checkpoint import JsonlCheckpoint, Lock, check_host  # noqa: E402
from common import RESULTS, log, machine, now, today, write_result  # noqa: E402

PASSES = ("A", "B")


class NoiseCheckpoint(JsonlCheckpoint):
    """``{(task, pass): record}``; a record lists its candidates' indices and run seconds."""

    def __init__(self, path: str):
        self.done: dict[tuple[str, str], dict] = {}
        super().__init__(path)

    def _index(self, rec: dict) -> None:
        self.done[(rec["task"], rec["pass"])] = rec


def subset(valid_indices: list[int], k: int, key: str, seed: int) -> list[int]:
    """A seeded choice of ``k`` of the valid candidates' indices (all of them if fewer), sorted."""
    import numpy as np

    idx = list(valid_indices)
    if len(idx) <= k:
        return sorted(idx)
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    return sorted(int(i) for i in rng.choice(idx, k, replace=False))


def label_seconds(run_secs) -> float:
    """The label a measurement gives, as the dataset's (``Trajectory.latency``): the median of
    its run seconds; inf when it failed."""
    import math
    import statistics

    if not run_secs:
        return math.inf
    xs = [float(x) for x in run_secs]
    return statistics.median(xs) if all(math.isfinite(x) and x > 0 for x in xs) else math.inf


def open_measurer(repeat: int = 3, min_repeat_ms: int = 10):
    """``(builder, runner)`` as the collector's: two build workers, one timing worker."""
    from cwm.tuning.pooled_builder import PooledBuilder
    from cwm.tuning.pooled_runner import PooledRunner
    from cwm.tuning.settings import FastSettings

    return PooledBuilder(2), PooledRunner(FastSettings(repeat=repeat, min_repeat_ms=min_repeat_ms).evaluator_config())


def measure(workload, traces: list, builder, runner) -> list:
    """Build ``traces`` of ``workload`` for this host and time them as the collector does;
    ``[run seconds or None, ...]`` in order (None: the build or the run failed)."""
    from tvm.s_tir import meta_schedule as ms

    from cwm.replay import apply_trace
    from cwm.target_spec import host_target

    target = host_target()
    mods, infos = [], []
    for trace in traces:
        sch = apply_trace(workload, trace)
        mods.append(sch.mod)
        infos.append(ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
    built = builder.build([ms.builder.BuilderInput(m, target) for m in mods])
    inputs, where = [], []
    for i, b in enumerate(built):
        if b.error_msg is None:
            inputs.append(ms.runner.RunnerInput(b.artifact_path, "cpu", infos[i]))
            where.append(i)
    out: list = [None] * len(traces)
    for i, fut in zip(where, runner.run(inputs)):
        res = fut.result()
        if res.error_msg is None:
            out[i] = [float(x) for x in res.run_secs]
    for b in built:
        if b.artifact_path:
            _remove(b.artifact_path)
    return out


def _remove(path: str) -> None:
    import shutil

    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def noise_table(tasks: list[dict]) -> dict:
    """The bench's table from per-task ``{"weight", "label", "a", "b", "cwm"}`` (latency arrays in
    seconds, inf = failed; ``cwm``: scores, higher = faster). Candidates failed in A or B are
    left out of every row, so all rows rank the same candidates."""
    import numpy as np

    from cwm.model.metrics import summarize

    kept = []
    for t in tasks:
        a, b, label = (np.asarray(t[k], np.float64) for k in ("a", "b", "label"))
        ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(label)
        if ok.sum() >= 2:
            kept.append({k: np.asarray(t[k], np.float64)[ok] for k in ("a", "b", "label", "cwm")} | {"weight": t["weight"]})

    def row(lat_key, score_fn):
        return summarize([(t[lat_key], score_fn(t), t["weight"]) for t in kept])

    def mean_of(x, y):
        return {k: (x[k] + y[k]) / 2 for k in x}

    table = {
        "ceiling": mean_of(row("b", lambda t: -t["a"]), row("a", lambda t: -t["b"])),
        "ceiling_a_on_b": row("b", lambda t: -t["a"]),
        "ceiling_b_on_a": row("a", lambda t: -t["b"]),
        "dataset_label_on_a": row("a", lambda t: -t["label"]),
        "dataset_label_on_b": row("b", lambda t: -t["label"]),
        "cwm_on_dataset_label": row("label", lambda t: t["cwm"]),
        "cwm_on_a": row("a", lambda t: t["cwm"]),
        "cwm_on_b": row("b", lambda t: t["cwm"]),
    }
    ratios = np.concatenate([np.log(t["b"] / t["a"]) for t in kept]) if kept else np.zeros(0)
    spread = {"candidates": int(ratios.size), "tasks": len(kept),
              "median_abs_log_b_over_a": float(np.median(np.abs(ratios))) if ratios.size else None,
              "p90_abs_log_b_over_a": float(np.percentile(np.abs(ratios), 90)) if ratios.size else None,
              "median_log_b_over_a": float(np.median(ratios)) if ratios.size else None}
    return {"rows": table, "spread": spread}


def _measure_passes(plan: dict, ckpt: NoiseCheckpoint, loader, builder, runner, host: str, start: float) -> None:
    """Pass A over every task of ``plan``, then pass B, skipping what ``ckpt`` holds."""
    for pas in PASSES:
        for n, (key, (trajs, idx)) in enumerate(plan.items()):
            if (key, pas) in ckpt.done:
                if ckpt.done[(key, pas)]["indices"] != idx:
                    raise SystemExit(f"{ckpt.path} measured other candidates of {key} (another --candidates or "
                                     "--seed): pass a new --runs")
                continue
            secs = measure(loader.workload(key), [trajs[i].trace for i in idx], builder, runner)
            ckpt.append({"task": key, "pass": pas, "indices": idx, "run_secs": secs, "machine": host, "time": now()})
            log(f"pass {pas} {n + 1}/{len(plan)} {key}: {sum(x is not None for x in secs)}/{len(idx)} measured "
                f"({time.perf_counter() - start:.0f} s)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="data/dataset")
    p.add_argument("--split", choices=("test", "train"), default="test")
    p.add_argument("--candidates", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tasks", type=int, default=0, help="only the first N tasks (0: all)")
    p.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    p.add_argument("--runs", default=None, help="checkpoint name under bench/results (default: label_noise_runs.jsonl)")
    p.add_argument("--out", default="label_noise.json")
    p.add_argument("--allow-host-change", action="store_true")
    a = p.parse_args(argv)

    import numpy as np

    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel

    host = machine()
    ckpt_path = os.path.join(RESULTS, a.runs or "label_noise_runs.jsonl")
    with Lock(ckpt_path, "label-noise bench"):
        ckpt = NoiseCheckpoint(ckpt_path)
        check_host(ckpt, host, a.allow_host_change, hint="pass a new --runs (and --out) for this host")
        loader = DatasetLoader(a.data)
        keys = loader.task_keys(a.split)[: a.max_tasks or None]
        plan = {}
        for key in keys:
            trajs = loader.trajectories(key)
            valid = [i for i, t in enumerate(trajs) if t.latency is not None and np.isfinite(t.latency)]
            if len(valid) >= 2:
                plan[key] = (trajs, subset(valid, a.candidates, key, a.seed))
        start = time.perf_counter()
        builder, runner = open_measurer()
        try:
            _measure_passes(plan, ckpt, loader, builder, runner, host, start)
        finally:
            runner.close()
            builder.close()
        model = WorldModel.load(a.model or default_model_dir())
        target = loader.store.manifest().get("target") or {"kind": "llvm"}
        tasks = []
        for key, (trajs, idx) in plan.items():
            meta = loader.store.get_task(key)
            picked = [trajs[i] for i in idx]
            tasks.append({"key": key, "weight": float(sum(meta.get("networks", {}).values()) or 1.0),
                          "label": [t.latency for t in picked],
                          "a": [label_seconds(s) for s in ckpt.done[(key, "A")]["run_secs"]],
                          "b": [label_seconds(s) for s in ckpt.done[(key, "B")]["run_secs"]],
                          "cwm": model.score(loader.workload(key), [t.trace for t in picked], target)})
        table = noise_table(tasks)
    payload = {"benchmark": "label_noise", "date": today(), "machine": host, "data": a.data, "split": a.split,
               "candidates_per_task": a.candidates, "seed": a.seed, "protocol": {"repeat": 3, "min_repeat_ms": 10},
               "labels_measured_on": loader.store.manifest().get("cpu_model"), **table}
    print(write_result(a.out, payload))
    for name, m in table["rows"].items():
        print(f"{name:<22} top1 {m['top1']:.3f}  per-task {m['top1_task_mean']:.3f}  top5 {m['top5']:.3f}  "
              f"pairwise {m['pairwise_acc']:.3f}")
    print(table["spread"])


if __name__ == "__main__":
    main()
