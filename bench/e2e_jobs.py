"""The job driver of the end-to-end benchmark (bench/e2e.py): the jobs in order (per network its
compiles, then its measurement), which of them the checkpoint already holds, the ETA, and the
loop that runs the rest."""
from __future__ import annotations

import os
import statistics
import time
import traceback

from common import fmt_s, log
from e2e_checkpoint import Checkpoint, compile_id
from e2e_compile import run_compile
from e2e_measure import run_measure
from e2e_networks import COMPILED, TASKS_PRIOR

DEFAULT_S_PER_TRIAL = 1.5
DEFAULT_MEASURE_S = 120.0


def plan_jobs(nets, methods, trials) -> list[tuple]:
    """``[(kind, net, method)]`` in execution order: per network its compiles, then its measurement."""
    jobs = []
    for net in nets:
        jobs += [("compile", net, m) for m in COMPILED if m in methods]
        jobs.append(("measure", net, None))
    return jobs


def s_per_trial(ckpt: Checkpoint, method: str) -> float:
    xs = [r["tuning_s"] / (r["tasks"] * r["trials"]) for r in ckpt.compiles.values()
          if r["method"] == method and r.get("tasks") and r.get("trials") and r.get("tuning_s")]
    return statistics.median(xs) if xs else DEFAULT_S_PER_TRIAL


def job_estimate_s(job, ckpt: Checkpoint, trials: int) -> float:
    kind, net, method = job
    if kind == "compile":
        tasks = next((r["tasks"] for r in ckpt.compiles.values() if r["net"] == net), TASKS_PRIOR.get(net, 20))
        return tasks * trials * s_per_trial(ckpt, method)
    xs = [r["wall_s"] for r in ckpt.measures.values() if r.get("wall_s")]
    return statistics.median(xs) if xs else DEFAULT_MEASURE_S


def job_done(job, ckpt: Checkpoint, methods, trials, runs) -> bool:
    kind, net, method = job
    measured = ckpt.measure_for(net, methods, trials, runs) is not None
    if kind == "compile":
        rec = ckpt.compiles.get(compile_id(net, method, trials))
        # a compile whose artifact is gone (work_dirs/ does not outlive a session) is redone
        # unless the network's timing no longer needs it; its database, if kept, is reused
        return rec is not None and (measured or os.path.isdir(rec.get("artifact") or ""))
    return measured


def execute(jobs, ckpt: Checkpoint, args, compile_fn, measure_fn, model: dict | None) -> dict:
    """Run every job not done yet; append each result at once. A job that raises is logged and
    not recorded (a restart retries it); a network's measurement waits for its compiles."""
    todo = [j for j in jobs if not job_done(j, ckpt, args.method_list, args.trials, args.runs)]
    log(f"{len(jobs)} jobs planned, {len(jobs) - len(todo)} already in {ckpt.path}, {len(todo)} to do")
    failed, ran = [], 0
    for i, job in enumerate(todo):
        kind, net, method = job
        if args.max_jobs is not None and ran >= args.max_jobs:
            log(f"--max-jobs {args.max_jobs} reached; stopping (rerun to continue)")
            break
        eta = sum(job_estimate_s(j, ckpt, args.trials) for j in todo[i:])
        log(f"[job {len(jobs) - len(todo) + i + 1}/{len(jobs)}] {kind} {net}" + (f" {method}" if method else "")
            + f"; ETA {fmt_s(eta)} for the rest (loadavg {os.getloadavg()[0]:.1f})")
        start = time.perf_counter()
        try:
            if kind == "compile":
                rec = run_compile(net, method, ckpt, args, compile_fn, model)
            else:
                missing = [m for m in COMPILED if m in args.method_list
                           and not job_done(("compile", net, m), ckpt, args.method_list, args.trials, args.runs)]
                if missing:
                    log(f"  skipped: compile(s) {missing} of {net} not done")
                    failed.append(job)
                    ran += 1
                    continue
                rec = run_measure(net, ckpt, args, measure_fn)
        except Exception:  # noqa: BLE001  (logged; retried on restart)
            log(f"  FAILED after {time.perf_counter() - start:.0f} s:\n{traceback.format_exc()}")
            failed.append(job)
            ran += 1
            continue
        ran += 1
        if kind == "compile":
            log(f"  {net}/{method}: {rec['tasks']} tasks, tuning {rec['tuning_s']:.0f} s over "
                f"{len(rec['sessions'])} session(s), compile {rec['compile_s']:.0f} s")
        else:
            log("  " + ", ".join(f"{m} {r['median_ms']:.3f} ms" if r else f"{m} n/a"
                                 for m, r in rec["results"].items()))
    missing = [j for j in jobs if not job_done(j, ckpt, args.method_list, args.trials, args.runs)]
    return {"ran": ran, "failed": failed, "missing": missing}
