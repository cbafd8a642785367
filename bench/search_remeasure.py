"""The re-measurement of the search benchmark (bench/search.py): every run's best candidate of a
task rebuilt from its trace and timed again in one process, interleaved, so that measurement
noise between tuning runs does not pick the winner; checkpointed per task.

Standard library only at module level; TVM and cwm are imported by :func:`remeasure`, which
tests replace.
"""
from __future__ import annotations

import hashlib
import json
import math
import statistics
import time

from common import loadavg, log, now
from search_plan import Checkpoint


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
    :func:`cwm.target_spec.host_target`) and gets its own arguments (random floats, zero
    integers). Its ``number`` (runs per sample) is calibrated once so that one sample lasts
    ``min_repeat_ms``. Then ``repeats`` rounds: each round takes one sample of every candidate,
    starting at a different candidate each round (no position always first). The result per
    candidate is the median of its samples (``time_evaluator`` does one untimed warm-up call
    before each sample).
    """
    import tvm

    from cwm.tuning.pooled_runner import alloc_arguments
    from cwm.target_spec import host_target

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


def trace_digests(cands: dict) -> dict:
    """``{run id: sha256 of its best trace}`` (a trace is JSON text or a parsed list)."""
    return {rid: hashlib.sha256((t if isinstance(t, str) else json.dumps(t, sort_keys=True)).encode()).hexdigest()
            for rid, t in cands.items()}


def remeasure_all(ckpt: Checkpoint, runs: dict, task_keys, workload_fn, remeasure_fn, repeats, min_repeat_ms,
                  names) -> dict:
    """Re-measure each task's best candidates (those of all its ``runs``); reuse a checkpointed
    re-measurement of exactly the same candidates: the same run ids *and* the same programs (a
    checkpoint copied from another search keeps its run ids for runs tuned again). Returns
    ``{run id: result}``."""
    results = {}
    for i, key in enumerate(task_keys):
        cands = {rid: r["best_trace"] for rid, r in sorted(runs.items())
                 if r["task"] == key and r.get("best_trace")}
        if not cands:
            continue
        prev, digests = ckpt.remeasures.get(key), trace_digests(cands)  # keyed by run id: both must match
        if prev and prev.get("traces") == digests and prev.get("repeats") == repeats:
            results.update(prev["results"])
            continue
        log(f"[re-measure {i + 1}/{len(task_keys)}] {names.get(key, key)}: {len(cands)} candidates x {repeats} "
            "interleaved rounds")
        start = time.perf_counter()
        res = remeasure_fn(workload_fn(key), cands, repeats=repeats, min_repeat_ms=min_repeat_ms)
        ckpt.append({"kind": "remeasure", "task": key, "candidates": sorted(cands), "traces": digests,
                     "repeats": repeats, "min_repeat_ms": min_repeat_ms, "results": res, "wall_s": time.perf_counter() - start,
                     "loadavg": loadavg(), "date": now()})
        results.update(res)
    return results
