"""End-to-end benchmark: cwm-compiled networks vs PyTorch, torch.compile, ONNX Runtime and TVM (docs/e2e_benchmark.md).

For each network of the zoo (:mod:`cwm.frontends.zoo`: batch 1, images 1x3x224x224, sequences
1x128) this measures the inference latency of

* ``cwm``: ``cwm.compile(<the network's ONNX file>, cost_model="cwm", trials_per_task=T)``;
* ``tvm_ms_xgb``: the same compile with MetaSchedule's default cost model (``cost_model="xgb"``);
* ``torch_eager``: the eval-mode PyTorch module under ``torch.inference_mode()``;
* ``torch_compile``: ``torch.compile(module)`` (inductor, default mode); when it fails here the
  error string is recorded and its latency is null;
* ``onnxruntime``: ``CPUExecutionProvider``, default session options except
  ``intra_op_num_threads`` = the thread count;

every method with the same number of threads (``--threads``, default: all cores). Every method
runs in its own worker process (:mod:`timing_workers`), and the methods of a network are timed
interleaved: ``--runs`` rounds, each taking one sample of every method, one process active at a
time (rotating which method goes first, with a ``--gap-ms`` pause before each sample so the
previous runtime's thread pool stops spinning); a sample is one untimed call then the mean of
``number`` back-to-back calls (``number`` calibrated once so that a sample lasts >=
``--min-sample-ms``). Latency = median of the samples. Each compiled model's and
torch.compile's / ONNX Runtime's output is checked against PyTorch eager
(``max|y - y_torch| / max|y_torch|``).

Resumable: the compiles tune into ``work_dirs/e2e/<net>/<method>/t<T>/tuning`` (cwm.compile
reuses and tops up its database, so an interrupted compile resumes) and export to
``.../artifact``; the tuning time of every session is kept in ``.../tuning_sessions.json``
(updated after every measured batch), so the tuning time of a resumed compile is the sum over
sessions. Every finished compile and every network's measurement is appended at once to
``<out stem>_runs.jsonl`` (``bench/results/e2e_runs.jsonl``, fsync-ed); a restart skips what is
there. Writes ``--out`` (``bench/results/e2e.json``) when everything is done, or with ``--partial``.

    PYTHONPATH=python nohup .venv/bin/python bench/e2e.py > bench/results/e2e.log 2>&1 &
    PYTHONPATH=python .venv/bin/python bench/e2e.py --smoke      # the tiny CNN, 2 trials/task: minutes

This file is the command line; the parts live next to it: ``e2e_networks`` (networks, methods),
``e2e_checkpoint`` (checkpoint, tuning sessions), ``e2e_compile`` (compile jobs, the CWM model),
``e2e_measure`` (worker set-up and interleaved timing), ``e2e_jobs`` (job order, ETA, the run
loop) and ``e2e_report`` (``e2e.json``). Their names are importable from here too.

Only the standard library is imported at module level (tests import this file); TVM, torch,
onnxruntime and cwm are imported by the default compile / measure functions, which tests replace.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# re-exported: tests and older callers use these names from here
from checkpoint import JsonlCheckpoint, Lock, check_host, write_json  # noqa: E402,F401
from timing_workers import Worker, WorkerError, calibrate, interleaved, rotated, warm_up  # noqa: E402,F401
from common import fmt_s, geomean, log, machine, today  # noqa: E402,F401  (bench/common.py, standard library only)
from e2e_networks import (BASELINES, COMPILED, DEFAULT_METHODS, METHODS, NETWORKS, SMOKE_NETWORK,  # noqa: E402,F401
                          TASKS_PRIOR,
                          network_input, network_module, network_onnx)
from e2e_checkpoint import SESSIONS_FILE, TIMING_PROTOCOL, Checkpoint, SessionLog, compile_id  # noqa: E402,F401
from e2e_compile import (FIXTURE_MODEL, check_model_unchanged, default_compile, resolve_model,  # noqa: E402,F401
                         run_compile, work_dir_of)
from e2e_measure import default_measure, reference_output, run_measure, sample_stats, setup_method  # noqa: E402,F401
from e2e_jobs import (DEFAULT_MEASURE_S, DEFAULT_S_PER_TRIAL, execute, job_done, job_estimate_s,  # noqa: E402,F401
                      plan_jobs, s_per_trial)
from e2e_report import geomean_speedups, markdown, summarize, versions  # noqa: E402,F401

DEFAULT_OUT = os.path.join(HERE, "results", "e2e.json")
SMOKE_OUT = os.path.join(ROOT, "work_dirs", "e2e_smoke", "e2e.json")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default=",".join(NETWORKS),
                   help=f"comma-separated, of {','.join(NETWORKS)},{SMOKE_NETWORK}")
    p.add_argument("--trials", type=int, default=None,
                   help="trials per task for cwm and tvm_ms_xgb (default 16; --smoke: 2)")
    p.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help=f"subset of {','.join(METHODS)} (default {','.join(DEFAULT_METHODS)})")
    p.add_argument("--model-dir", default=None, help="CWM model (default: the shipped one; with --smoke and "
                   "no shipped model, the test fixture tests/data/scorer_fixture/model)")
    p.add_argument("--out", default=None, help=f"result JSON (default {os.path.relpath(DEFAULT_OUT, ROOT)}); "
                   "the checkpoint <stem>_runs.jsonl goes next to it")
    p.add_argument("--work-root", default=None, help="compile folders (default work_dirs/e2e[_smoke])")
    p.add_argument("--onnx-cache", default=os.path.join(ROOT, "work_dirs", "zoo_cache", "onnx"))
    p.add_argument("--runs", type=int, default=20, help="interleaved timed rounds per network (>= 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls per method before timing (at least)")
    p.add_argument("--warmup-s", type=float, default=2.0, help="untimed calls for at least this long per method")
    p.add_argument("--min-sample-ms", type=float, default=50.0,
                   help="a sample averages enough calls to last this long (fast models)")
    p.add_argument("--gap-ms", type=float, default=300.0,
                   help="pause before each sample: the previous method's thread pool stops spinning (TVM's spins > 50 ms)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for every method")
    p.add_argument("--max-jobs", type=int, default=None, help="stop after this many jobs (resume later)")
    p.add_argument("--partial", action="store_true", help="write the JSON from what exists, even if incomplete")
    p.add_argument("--report-only", action="store_true", help="no compiling or timing: report what exists")
    p.add_argument("--allow-model-change", action="store_true",
                   help="resume although the CWM model differs from the one of the checkpointed cwm compiles")
    p.add_argument("--allow-host-change", action="store_true",
                   help="resume although the checkpoint was measured on another machine (its tables then mix hosts)")
    p.add_argument("--smoke", action="store_true", help=f"network {SMOKE_NETWORK}, 2 trials per task, out "
                   "work_dirs/e2e_smoke/ (a few minutes)")
    args = p.parse_args(argv)
    if args.smoke:
        args.networks = SMOKE_NETWORK
    if args.trials is None:
        args.trials = 2 if args.smoke else 16
    args.out = args.out or (SMOKE_OUT if args.smoke else DEFAULT_OUT)
    args.work_root = args.work_root or os.path.join(ROOT, "work_dirs", "e2e_smoke" if args.smoke else "e2e")
    args.net_list = [n.strip() for n in args.networks.split(",") if n.strip()]
    args.method_list = [m for m in METHODS if m in {x.strip() for x in args.methods.split(",")}]
    bad_m = {x.strip() for x in args.methods.split(",") if x.strip()} - set(METHODS)
    bad_n = set(args.net_list) - set(NETWORKS) - {SMOKE_NETWORK}
    if bad_m or bad_n or not args.net_list or not args.method_list:
        p.error(f"unknown method(s) {sorted(bad_m)} (choose from {METHODS}) or network(s) {sorted(bad_n)} "
                f"(choose from {NETWORKS + (SMOKE_NETWORK,)})")
    if args.runs < 1 or args.trials < 0:
        p.error("--runs must be >= 1 and --trials >= 0")
    return args


def main(argv=None, compile_fn=None, measure_fn=None, model=None) -> int:
    """Entry point; ``compile_fn`` / ``measure_fn`` replace the real compile / timing and ``model``
    the CWM model description (tests)."""
    args = parse_args(argv)
    os.environ.setdefault("TVM_NUM_THREADS", str(args.threads))  # before TVM starts its thread pool
    ckpt_path = os.path.splitext(args.out)[0] + "_runs.jsonl"
    with Lock(ckpt_path, "bench/e2e.py"):
        ckpt = Checkpoint(ckpt_path)
        if model is None and "cwm" in args.method_list and not args.report_only:
            model = resolve_model(args)
        check_model_unchanged(ckpt, args, model)
        if not args.report_only:
            check_host(ckpt, machine(), args.allow_host_change)
        log(f"machine: {machine()}; loadavg {os.getloadavg()}; threads {args.threads}")
        log(f"networks {args.net_list}; methods {args.method_list}; {args.trials} trials per task; "
            f"checkpoint {ckpt_path}; work dirs {args.work_root}")
        if model:
            log(f"CWM model {model['model_dir']} (prior sha256 {model['prior_sha256'][:12]})")
        jobs = plan_jobs(args.net_list, args.method_list, args.trials)
        if args.report_only:
            status = {"missing": [j for j in jobs if not job_done(j, ckpt, args.method_list, args.trials, args.runs)]}
        else:
            status = execute(jobs, ckpt, args, compile_fn or default_compile, measure_fn or default_measure, model)
        if status["missing"] and not args.partial:
            log(f"{len(status['missing'])} job(s) missing: rerun to finish them, or pass --partial to report now")
            return 1
        report = summarize(ckpt, args, partial=bool(status["missing"]))
        write_json(args.out, report)
        log("\n" + markdown(report))
        log(f"wrote {args.out}" + (" (PARTIAL)" if report["partial"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
