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

Only the standard library is imported at module level (tests import this file); TVM, torch,
onnxruntime and cwm are imported by the default compile / measure functions, which tests replace.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from checkpoint import JsonlCheckpoint, Lock, write_json  # noqa: E402
from timing_workers import Worker, WorkerError, calibrate, interleaved, rotated, warm_up  # noqa: E402,F401
from common import machine, today  # noqa: E402  (bench/common.py, standard library only)

NETWORKS = ("resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "opt_125m", "vit_b16")
SMOKE_NETWORK = "tiny_cnn"
METHODS = ("cwm", "torch_eager", "torch_compile", "onnxruntime", "tvm_ms_xgb")
#: the methods that are compiled (tuned) by cwm.compile, and their cost_model=
COMPILED = {"cwm": "cwm", "tvm_ms_xgb": "xgb"}
BASELINES = ("torch_eager", "torch_compile", "onnxruntime", "tvm_ms_xgb")
#: distinct tuning tasks per network as cwm.compile partitions the ONNX file (counted 2026-11-30): for the ETA before a
#: network's first compile; the real count is recorded from the compile
TASKS_PRIOR = {"resnet18": 19, "resnet50": 28, "mobilenet_v2": 33, "bert_base": 15, "gpt2": 21,
               "opt_125m": 19, "vit_b16": 14, "tiny_cnn": 3}
DEFAULT_S_PER_TRIAL = 1.5
DEFAULT_MEASURE_S = 120.0
DEFAULT_OUT = os.path.join(HERE, "results", "e2e.json")
SMOKE_OUT = os.path.join(ROOT, "work_dirs", "e2e_smoke", "e2e.json")
FIXTURE_MODEL = os.path.join(ROOT, "tests", "data", "scorer_fixture", "model")
SESSIONS_FILE = "tuning_sessions.json"
#: how a network's methods are timed; a checkpointed measurement made another way is redone
#: (v1: every method in its own process, bench/timing_workers.py; before it all shared one process)
TIMING_PROTOCOL = "process-per-method-v1"


def log(*parts) -> None:
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


# ------------------------------------------------------------------------ pure helpers
def geomean(values) -> float | None:
    """Geometric mean of the positive finite ``values``; None if there are none."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def geomean_speedups(networks: dict, baselines=BASELINES) -> tuple[dict, dict]:
    """``({"vs_<b>": geomean over networks of <b>_ms / cwm_ms}, {"vs_<b>": networks used})``.

    A network enters a ratio when both latencies exist (> 1: cwm is faster).
    """
    geo, count = {}, {}
    for base in baselines:
        ratios = [row[f"{base}_ms"] / row["cwm_ms"] for row in networks.values()
                  if row.get("cwm_ms") and row.get(f"{base}_ms")]
        geo[f"vs_{base}"] = geomean(ratios)
        count[f"vs_{base}"] = len(ratios)
    return geo, count


def sample_stats(samples_s, number: int = 1) -> dict:
    """Median / quartiles / min (ms) of per-call sample times given in seconds."""
    xs = sorted(float(x) * 1e3 for x in samples_s)
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return {"median_ms": statistics.median(xs), "q1_ms": q[0], "q3_ms": q[2], "min_ms": xs[0],
            "runs": len(xs), "number": number, "samples_ms": [round(x, 4) for x in xs]}


def fmt_s(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


# ------------------------------------------------------------------------ checkpoint
def compile_id(net: str, method: str, trials: int) -> str:
    return f"{net}|{method}|{trials}"


class Checkpoint(JsonlCheckpoint):
    """Append-only JSONL: one ``compile`` line per finished (network, compiled method, trials),
    one ``measure`` line per measured network (the latest one wins).
    (:class:`checkpoint.JsonlCheckpoint`: fsync-ed lines, a torn last line is dropped.)
    """

    def __init__(self, path: str):
        self.compiles: dict[str, dict] = {}
        self.measures: dict[str, dict] = {}
        super().__init__(path)

    def _index(self, rec):
        if rec.get("kind") == "compile":
            self.compiles[compile_id(rec["net"], rec["method"], rec["trials"])] = rec
        elif rec.get("kind") == "measure":
            self.measures[rec["net"]] = rec

    def measure_for(self, net: str, methods, trials: int, runs: int) -> dict | None:
        """The checkpointed measurement of ``net`` if it covers ``methods`` at ``trials`` and >= ``runs``."""
        rec = self.measures.get(net)
        if (rec and rec.get("timing") == TIMING_PROTOCOL and set(methods) <= set(rec["methods"])
                and rec["trials"] == trials and rec["runs"] >= runs):
            return rec
        return None


class SessionLog:
    """The tuning sessions of one compile folder, in ``<work_dir>/tuning_sessions.json``.

    :meth:`start` opens a session; :meth:`beat` (after every committed batch) stores the tuning
    seconds it has reached, so a killed session still counts up to its last committed batch
    (what was measured after it is lost and measured again by the next session); :meth:`finish`
    stores the final tuning seconds. :meth:`total_s` sums all sessions.
    """

    def __init__(self, work_dir: str):
        self.path = os.path.join(work_dir, SESSIONS_FILE)
        self.sessions: list[dict] = []
        if os.path.exists(self.path):
            try:
                with open(self.path) as f:
                    self.sessions = json.load(f).get("sessions", [])
            except (OSError, ValueError):
                self.sessions = []  # a damaged file: only the earlier sessions' times are lost

    def _save(self):
        write_json(self.path, {"sessions": self.sessions})

    def start(self) -> dict:
        self.sessions.append({"session": len(self.sessions) + 1, "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                              "tune_s": 0.0, "records": 0, "complete": False})
        self._save()
        return self.sessions[-1]

    def beat(self, tune_s: float, records: int) -> None:
        self.sessions[-1].update(tune_s=round(float(tune_s), 3), records=int(records))
        self._save()

    def finish(self, tune_s: float, records: int) -> None:
        self.sessions[-1].update(tune_s=round(float(tune_s), 3), records=int(records), complete=True)
        self._save()

    def total_s(self) -> float:
        return round(sum(float(s.get("tune_s") or 0.0) for s in self.sessions), 3)


# ------------------------------------------------------------------------ networks
def network_input(net: str):
    """The network's numpy example input and its ONNX input name."""
    if net == SMOKE_NETWORK:
        from cwm.frontends import tiny_cnn

        return tiny_cnn.example_input(0), tiny_cnn.INPUT_NAME
    from cwm.frontends import zoo

    spec = zoo.get(net)
    return spec.make_input(), spec.input_name


def network_module(net: str):
    """The eval-mode ``torch.nn.Module`` of ``net`` (random weights fixed by the zoo's seed)."""
    if net == SMOKE_NETWORK:
        from cwm.frontends import tiny_cnn

        return tiny_cnn.build_model(0)
    from cwm.frontends import zoo

    return zoo.get(net).build()


def network_onnx(net: str, cache_dir: str) -> str:
    """The network's ONNX file (exported once into ``cache_dir``, atomically; the zoo's
    fingerprint in the name means a changed definition is exported again)."""
    if net == SMOKE_NETWORK:
        from cwm.frontends import tiny_cnn

        path = os.path.join(cache_dir, "tiny_cnn-seed0.onnx")
        export = lambda p: tiny_cnn.export_onnx(p, 0)  # noqa: E731
    else:
        from cwm.frontends import importers, zoo

        path = importers.onnx_path(net, cache_dir)
        export = lambda p: zoo.to_onnx(net, p)  # noqa: E731
    if not os.path.exists(path):
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.onnx"
        export(tmp)
        os.replace(tmp, path)
    return path


# ------------------------------------------------------------------------ compiling
def default_compile(net: str, method: str, *, trials: int, work_dir: str, session: SessionLog,
                    model_dir, onnx_cache: str) -> dict:
    """``cwm.compile`` the network's ONNX file with the method's cost model into ``work_dir/tuning``,
    export it to ``work_dir/artifact``; returns what the checkpoint records."""
    import cwm
    from tvm.ir.instrument import pass_instrument
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    clock = {"t0": None, "records": 0}

    @pass_instrument
    class TuneClock:
        def run_before_pass(self, mod, info):
            if info.name == "cwm-tune":
                clock["t0"] = time.perf_counter()

    @derived_object
    class Heartbeat(PyMeasureCallback):
        """After every measured batch (already committed to the database): store the session's
        tuning seconds so far, and log progress."""

        def __init__(self):
            super().__init__()

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            clock["records"] += len(measure_candidates)
            if clock["t0"] is not None:
                elapsed = time.perf_counter() - clock["t0"]
                session.beat(elapsed, clock["records"])
                if clock["records"] % 64 < len(measure_candidates):
                    log(f"    {net}/{method}: {clock['records']} candidates measured this session, "
                        f"{elapsed:.0f} s ({elapsed / clock['records']:.2f} s/trial)")

    onnx_path = network_onnx(net, onnx_cache)
    start = time.perf_counter()
    compiled = cwm.compile(onnx_path, target="llvm", trials_per_task=trials, cost_model=COMPILED[method],
                           work_dir=os.path.join(work_dir, "tuning"), seed=0,
                           model_dir=model_dir if method == "cwm" else None,
                           measure_callbacks=(Heartbeat(),), instruments=(TuneClock(),))
    compile_s = time.perf_counter() - start
    report = compiled.report
    session.finish(report["tune_s"], report["new_records"])
    artifact = os.path.join(work_dir, "artifact")
    compiled.export(artifact)
    return {"tasks": len(report["tasks"]), "task_names": [t["name"] for t in report["tasks"]],
            "new_records": report["new_records"], "reused_records": report["reused_records"],
            "session_tune_s": report["tune_s"], "compile_s": round(compile_s, 3), "artifact": artifact,
            "onnx": os.path.relpath(onnx_path, ROOT), "cost_model": COMPILED[method],
            "task_best_us": {t["name"]: t.get("best_us") for t in report["tasks"]}}


# ------------------------------------------------------------------------ measuring
def _first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def setup_method(method: str, net: str, artifacts: dict, threads: int):
    """``(run, output)`` of one method on ``net``, built in the timing worker's own process
    (:mod:`timing_workers`): ``run()`` is timed, ``output()`` is checked against PyTorch eager."""
    import numpy as np

    x_np, input_name = network_input(net)
    if method in ("torch_eager", "torch_compile"):
        import torch

        torch.set_num_threads(threads)
        x = torch.from_numpy(x_np)
        module = network_module(net)
        if method == "torch_compile":
            module = torch.compile(module)  # inductor, mode=None ("default")

        def run():
            with torch.inference_mode():
                return module(x)
        return run, lambda: np.asarray(_first(run()).numpy())
    if method == "onnxruntime":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(artifacts["onnx"], options, providers=["CPUExecutionProvider"])
        feed = {input_name: x_np}
        return (lambda: session.run(None, feed)), (lambda: session.run(None, feed)[0])
    if method in COMPILED:
        import cwm
        import tvm

        model = cwm.load(artifacts[method])
        vm, weights = model._ready()
        main = vm["main"]
        args = [tvm.runtime.tensor(x_np, model.device)] + list(weights)
        return (lambda: main(*args)), (lambda: np.asarray(_first(model(x_np))))
    raise ValueError(f"unknown method {method!r}")


def reference_output(net: str, threads: int):
    """PyTorch eager's output on the example input, in a short-lived process of its own (so the
    driver holds no thread pool while the workers are timed); used when torch_eager is not timed."""
    worker = Worker("reference", "e2e:setup_method",
                    {"method": "torch_eager", "net": net, "artifacts": {}, "threads": threads},
                    warmup=0, warmup_s=0.0, min_sample_s=0.0)
    with worker.start():
        return worker.output


def default_measure(net: str, methods, *, artifacts: dict, runs: int, warmup: int, threads: int,
                    min_sample_ms: float, gap_ms: float, warmup_s: float = 1.0) -> dict:
    """Time ``methods`` on ``net``, each in its own process, interleaved (module docstring and
    :mod:`timing_workers`); returns the ``measure`` record body.

    Workers are set up one after another (torch.compile's compile does not compete with anything);
    a method whose set-up, first call or warm-up raises gets a null latency and its error string.
    """
    from cwm.frontends.numerics import max_rel_err

    workers, errors, setup_s = {}, {}, {}
    try:
        for method in methods:
            start = time.perf_counter()
            worker = Worker(method, "e2e:setup_method",
                            {"method": method, "net": net, "artifacts": artifacts, "threads": threads},
                            warmup=warmup, warmup_s=warmup_s, min_sample_s=min_sample_ms / 1e3)
            try:
                workers[method] = worker.start()
            except WorkerError as error:  # recorded; the other methods go on
                errors[method] = str(error)
                log(f"    {method} failed on {net}: {errors[method].splitlines()[0][:300]}")
            setup_s[method] = round(time.perf_counter() - start, 3)
        # the torch_eager worker's first output is the reference; a separate process only without it
        expected = (workers["torch_eager"].output if "torch_eager" in workers
                    else reference_output(net, threads))
        outputs = {m: max_rel_err(w.output, expected) for m, w in workers.items()}
        samples = rotated({m: w.sample for m, w in workers.items()}, runs, gap_ms / 1e3)
    finally:
        for worker in workers.values():
            worker.close()
    results = {m: (sample_stats(samples[m], workers[m].number) if m in workers else None) for m in methods}
    for m in workers:
        results[m]["samples_in_order_ms"] = [round(x * 1e3, 4) for x in samples[m]]
    return {"results": results, "max_rel_err": {m: outputs.get(m) for m in methods if m != "torch_eager"},
            "errors": errors, "setup_s": setup_s, "threads": threads}


# ------------------------------------------------------------------------ driver
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


def work_dir_of(work_root: str, net: str, method: str, trials: int) -> str:
    return os.path.join(work_root, net, method, f"t{trials}")


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


def run_compile(net, method, ckpt, args, compile_fn, model) -> dict:
    work_dir = work_dir_of(args.work_root, net, method, args.trials)
    os.makedirs(work_dir, exist_ok=True)
    session = SessionLog(work_dir)
    earlier = ckpt.compiles.get(compile_id(net, method, args.trials))
    if earlier and not session.sessions and earlier.get("sessions"):
        # the folder was lost (a new machine or session): keep the checkpointed sessions' time
        session.sessions = [dict(s) for s in earlier["sessions"]]
    if session.sessions:
        log(f"  resuming: {len(session.sessions)} earlier session(s), {session.total_s():.0f} s of tuning so far")
    session.start()
    model_dir = (model or {}).get("model_dir") if method == "cwm" else None
    out = compile_fn(net, method, trials=args.trials, work_dir=work_dir, session=session, model_dir=model_dir,
                     onnx_cache=args.onnx_cache)
    rec = {"kind": "compile", "net": net, "method": method, "trials": args.trials, **out,
           "tuning_s": session.total_s(), "sessions": session.sessions,
           "model": model if method == "cwm" else None,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    ckpt.append(rec)
    return rec


def run_measure(net, ckpt, args, measure_fn) -> dict:
    artifacts = {m: ckpt.compiles[compile_id(net, m, args.trials)]["artifact"]
                 for m in COMPILED if m in args.method_list}
    if "onnxruntime" in args.method_list:
        artifacts["onnx"] = network_onnx(net, args.onnx_cache)
    start = time.perf_counter()
    load = os.getloadavg()
    if load[0] > 0.5 * args.threads:
        log(f"  WARNING: load average {load[0]:.1f} on {os.cpu_count()} cores before timing: other processes "
            "compete for the cores (multi-threaded runtimes that spin-wait, OpenMP in PyTorch, suffer most)")
    body = measure_fn(net, args.method_list, artifacts=artifacts, runs=args.runs, warmup=args.warmup,
                      threads=args.threads, min_sample_ms=args.min_sample_ms, gap_ms=args.gap_ms,
                      warmup_s=args.warmup_s)
    rec = {"kind": "measure", "net": net, "timing": TIMING_PROTOCOL, "methods": list(args.method_list),
           "trials": args.trials,
           "runs": args.runs, "warmup": args.warmup, "min_sample_ms": args.min_sample_ms, "gap_ms": args.gap_ms,
           "warmup_s": args.warmup_s, **body, "wall_s": round(time.perf_counter() - start, 3),
           "loadavg_before": [round(x, 2) for x in load],
           "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    ckpt.append(rec)
    return rec


def summarize(ckpt: Checkpoint, args, partial: bool) -> dict:
    """The ``e2e.json`` payload (docs/e2e_benchmark.md lists every key)."""
    nets = {}
    for net in args.net_list:
        meas = ckpt.measure_for(net, args.method_list, args.trials, args.runs)
        comp = {m: ckpt.compiles.get(compile_id(net, m, args.trials)) for m in COMPILED}
        if meas is None and not any(comp.values()):
            continue
        res = (meas or {}).get("results", {})
        row = {f"{m}_ms": (res.get(m) or {}).get("median_ms") for m in METHODS}
        row["tuning_s"] = (comp["cwm"] or {}).get("tuning_s")
        row["tvm_ms_xgb_tuning_s"] = (comp["tvm_ms_xgb"] or {}).get("tuning_s")
        row["tasks"] = next((c["tasks"] for c in comp.values() if c), None)
        row["max_rel_err"] = {m: e for m, e in ((meas or {}).get("max_rel_err") or {}).items()
                              if m in args.method_list}
        row["errors"] = {m: e for m, e in ((meas or {}).get("errors") or {}).items() if m in args.method_list}
        row["latency"] = {m: {k: v for k, v in r.items() if k != "samples_ms"}
                          for m, r in res.items() if r and m in args.method_list}
        row["compile_s"] = {m: c.get("compile_s") for m, c in comp.items() if c}
        row["tuning_sessions"] = {m: len(c.get("sessions") or []) for m, c in comp.items() if c}
        row["torch_compile_setup_s"] = ((meas or {}).get("setup_s") or {}).get("torch_compile")
        row["measured"] = meas is not None
        nets[net] = row
    geo, count = geomean_speedups(nets)
    model = next((c.get("model") for c in ckpt.compiles.values() if c["method"] == "cwm" and c.get("model")), None)
    return {"networks": nets, "geomean_speedup": geo, "geomean_networks": count, "trials_per_task": args.trials,
            "methods": list(args.method_list), "threads": args.threads, "runs": args.runs, "warmup": args.warmup,
            "warmup_s": args.warmup_s,
            "min_sample_ms": args.min_sample_ms, "gap_ms": args.gap_ms,
            "statistic": "median of interleaved samples; a sample = mean of `number` back-to-back calls",
            "timing": TIMING_PROTOCOL + ": every method in its own process, one active at a time",
            "setup": {"batch": 1, "image": "1x3x224x224 float32", "sequence": "1x128 int64",
                      "compiled_from": "the network's ONNX file (opset 17)", "target": "llvm (host, mcpu)",
                      "torch_compile": "torch.compile(module), backend inductor, mode default",
                      "onnxruntime": "CPUExecutionProvider, default SessionOptions, intra_op_num_threads=threads",
                      "torch": "torch.inference_mode(), torch.set_num_threads(threads)",
                      "tvm": "Relax VM main() on preallocated input, TVM_NUM_THREADS=threads",
                      "max_rel_err": "max|y - y_torch_eager| / max|y_torch_eager|"},
            "model": model, "versions": versions(), "partial": partial, "smoke": bool(args.smoke),
            "missing": [net for net in args.net_list if net not in nets or not nets[net]["measured"]],
            "machine": machine(), "date": today()}


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "onnxruntime", "apache-tvm", "tvm", "transformers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def markdown(report: dict) -> str:
    """A short text summary for the log (bench/report.py renders the README table)."""
    lines = ["geomean speedup of cwm (other / cwm latency, >1 = cwm faster): " + ", ".join(
        f"{k} {v:.3f}" if v else f"{k} n/a" for k, v in report["geomean_speedup"].items())]
    for net, row in report["networks"].items():
        lines.append(f"  {net}: " + ", ".join(
            f"{m} {row[m + '_ms']:.3f} ms" if row.get(m + "_ms") is not None else f"{m} n/a" for m in METHODS)
            + f"; tuning cwm {row['tuning_s']} s, xgb {row['tvm_ms_xgb_tuning_s']} s; max rel err "
            + ", ".join(f"{m} {e:.1e}" for m, e in row["max_rel_err"].items() if e is not None))
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default=",".join(NETWORKS),
                   help=f"comma-separated, of {','.join(NETWORKS)},{SMOKE_NETWORK}")
    p.add_argument("--trials", type=int, default=None,
                   help="trials per task for cwm and tvm_ms_xgb (default 16; --smoke: 2)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)}")
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


def resolve_model(args) -> dict:
    """The CWM model to use, checked to load: ``{model_dir, prior_sha256, fixture}``."""
    from cwm.cost_model.cwm_model import prior_fingerprint
    from cwm.model import default_model_dir

    fixture = False
    path = args.model_dir
    if path is None:
        shipped = default_model_dir(must_exist=False)
        if (shipped / "manifest.json").is_file():
            path = str(shipped)
        elif args.smoke:
            path, fixture = FIXTURE_MODEL, True
            log(f"no shipped CWM model at {shipped}; the smoke run uses the test fixture model {path} "
                "(its latencies say nothing about CWM's quality)")
        else:
            raise SystemExit(f"no shipped CWM model at {shipped}: pass --model-dir MODEL_DIR "
                             "(a model trained with `cwm train`), or leave cwm out of --methods")
    try:
        from cwm.model.world_model import WorldModel

        WorldModel.load(os.path.abspath(path))
    except (FileNotFoundError, ValueError, OSError) as error:
        raise SystemExit(f"cannot use the CWM model {path}: {error}") from None
    return {"model_dir": os.path.abspath(path), "prior_sha256": prior_fingerprint(path), "fixture": fixture}


def check_model_unchanged(ckpt: Checkpoint, args, model: dict | None) -> None:
    if not model:
        return
    used = {(c.get("model") or {}).get("prior_sha256") for c in ckpt.compiles.values()
            if c["method"] == "cwm" and c["trials"] == args.trials and c["net"] in args.net_list}
    used.discard(None)
    if used and used != {model["prior_sha256"]}:
        if not args.allow_model_change:
            raise SystemExit(f"the CWM model {model['model_dir']} differs from the one of the checkpointed cwm "
                             "compiles; pass --allow-model-change, or a new --out and --work-root")
        log("WARNING: the CWM model changed since earlier cwm compiles; those are kept")


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
