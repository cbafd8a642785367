"""Demo: compile a tiny ONNX CNN with the CWM cost model, export it, reload it, check it, time it.

This is the product's main job on the shipped world model:

1. export :mod:`cwm.frontends.tiny_cnn` to ONNX (``OUT/tiny_cnn.onnx``);
2. ``cwm.compile(onnx_path, target="llvm", trials_per_task=--trials, cost_model=--cost-model,
   model_dir=--model-dir, work_dir=OUT/work)``: MetaSchedule tuning guided by the CWM world model
   (default: the shipped ``python/cwm/default_model``), plus the untuned build as a baseline;
3. ``CompiledModel.export(OUT/model)``;
4. ``cwm.load(OUT/model)`` in a **fresh process**: run it on the input and time it;
5. compare its output with onnxruntime (rtol = atol = 1e-4) and print a latency table: untuned
   TVM build, tuned, onnxruntime, PyTorch eager (medians over ``--runs`` >= 20 runs).

Writes ``OUT/demo_summary.json``. Exit status: 0 ok, 1 the reloaded model's output does not match
onnxruntime, 2 a usage error (e.g. no world model: train one, pass ``--model-dir``, or use
``--cost-model xgb``). ``OUT/work`` is cleared first so every run tunes with the cost model asked
for (``--resume`` keeps its records).

Run: ``python -m cwm demo [--trials N] [--out DIR] [--cost-model cwm|xgb|...] [--model-dir DIR]``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from cwm.cost_model.factory import registered as cost_models  # cheap: no TVM, no torch

RTOL, ATOL = 1e-4, 1e-4
MIN_RUNS = 20

#: run in a fresh interpreter: load the exported folder, run it on the input, time it
_RELOAD_SNIPPET = """
import json, sys
import numpy as np
import cwm
model_dir, x_path, y_path, runs = sys.argv[1:5]
model = cwm.load(model_dir)
x = np.load(x_path, allow_pickle=False)
np.save(y_path, model(x))
stats = model.benchmark(x, runs=int(runs))
print(json.dumps({"median_us": stats["median_us"], "library": model.library_path}))
"""


class DemoError(Exception):
    """A usage problem the demo reports in one line (exit status 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's command-line options (shared by ``python -m cwm demo``)."""
    parser.add_argument("--trials", type=int, default=32, help="trials per task (default 32)")
    parser.add_argument("--out", default="demo_out", help="output directory (default demo_out/)")
    parser.add_argument("--cost-model", default="cwm", choices=cost_models(),
                        help="cost model guiding the search (default: cwm, the CWM world model)")
    parser.add_argument("--model-dir", default=None,
                        help="world model for --cost-model cwm (default: the shipped python/cwm/default_model)")
    parser.add_argument("--runs", type=int, default=25, help=f"timed runs per latency (>= {MIN_RUNS})")
    parser.add_argument("--seed", type=int, default=0, help="model weights, input and search seed")
    parser.add_argument("--resume", action="store_true",
                        help="keep OUT/work's tuning records from an earlier run (default: start afresh)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar while tuning")
    parser.add_argument("--verbose", action="store_true", help="show MetaSchedule's log")


def check_model_dir(cost_model: str, model_dir) -> str | None:
    """The world-model folder ``cost_model`` needs (None for the others); :class:`DemoError`
    saying how to get one when it is missing."""
    if cost_model != "cwm":
        return None
    from cwm.model import default_model_dir

    path = os.path.abspath(model_dir) if model_dir else str(default_model_dir(must_exist=False))
    if os.path.isfile(os.path.join(path, "manifest.json")):
        return path
    what = (f"no CWM world model at --model-dir {path} (no manifest.json)" if model_dir else
            f"the shipped CWM world model is missing ({path} has no manifest.json)")
    raise DemoError(
        f"{what}. Get one by training it: `python -m cwm train --data data/dataset --out {path}` "
        "(or train into any folder and pass --model-dir DIR); or run the demo without it: "
        "`python -m cwm demo --cost-model xgb`.")


def _median_us(fn, runs: int, warmup: int = 3) -> float:
    """Median wall time (us) of ``runs`` single calls of ``fn`` after ``warmup`` calls."""
    import numpy as np

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def _thread_counts(cores: int) -> list:
    """Thread counts a reference runtime is timed with: all cores, and one (on a busy box a
    multi-threaded runtime can wait for a preempted thread on every call; the faster is kept)."""
    return sorted({max(1, cores), 1}, reverse=True)


def _onnxruntime(onnx_path: str, x, runs: int, cores: int) -> tuple:
    """onnxruntime's output, median latency (us) and thread count of the faster setting."""
    import onnxruntime as ort

    best = None
    for threads in _thread_counts(cores):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: x}
        out, us = session.run(None, feed)[0], _median_us(lambda: session.run(None, feed), runs)
        if best is None or us < best[1]:
            best = (out, us, threads)
    return best


def _torch_eager(x, seed: int, runs: int, cores: int) -> tuple:
    """PyTorch eager's output, median latency (us) and thread count of the faster setting."""
    import torch

    from cwm.frontends import tiny_cnn

    module = tiny_cnn.build_model(seed)
    data = torch.from_numpy(x)
    previous, best = torch.get_num_threads(), None
    try:
        for threads in _thread_counts(cores):
            torch.set_num_threads(threads)
            with torch.inference_mode():
                out, us = module(data).numpy(), _median_us(lambda: module(data), runs)
            if best is None or us < best[1]:
                best = (out, us, threads)
    finally:
        torch.set_num_threads(previous)
    return best


def _run_fresh_process(model_dir: str, x_path: str, y_path: str, runs: int) -> dict:
    """``cwm.load(model_dir)`` in a new interpreter: run it on ``x_path`` into ``y_path``, time it."""
    import cwm

    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(cwm.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (python_dir, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", _RELOAD_SNIPPET, model_dir, x_path, y_path, str(runs)],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"reloading {model_dir} in a fresh process failed (exit {proc.returncode}):\n"
                           f"{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(trials: int = 32, out: str = "demo_out", runs: int = 25, seed: int = 0, cost_model: str = "cwm",
        model_dir=None, resume: bool = False, progress: bool = False, verbose: bool = False) -> dict:
    """Do the whole flow; return the summary dict (also written to ``out/demo_summary.json``).

    Raises :class:`DemoError` when the world model for ``cost_model="cwm"`` is missing.
    """
    model_path = check_model_dir(cost_model, model_dir)  # before any work
    import numpy as np

    import cwm
    from cwm.compile.tuning_run import make_model
    from cwm.frontends import tiny_cnn
    from cwm.target_spec import resolve_target

    runs = max(MIN_RUNS, runs)
    start = time.perf_counter()
    out = os.path.abspath(out)
    work_dir, artifact_dir = os.path.join(out, "work"), os.path.join(out, "model")
    if not resume and os.path.isdir(work_dir):
        shutil.rmtree(work_dir)
    os.makedirs(out, exist_ok=True)
    onnx_path = tiny_cnn.export_onnx(os.path.join(out, "tiny_cnn.onnx"), seed)
    x = tiny_cnn.example_input(seed)
    x_path, y_path = os.path.join(out, "input.npy"), os.path.join(out, "output_reloaded.npy")
    np.save(x_path, x)

    # the cost model object is made by cwm.compile's own factory (same seed, same errors) and passed
    # in, so that its timing statistics (CWMCostModel.stats) can be reported afterwards
    target = resolve_target("llvm")
    cores = int(target.attrs.get("num-cores", 0) or os.cpu_count() or 1)
    model_start = time.perf_counter()
    cost = make_model(cost_model, cores, seed, model_path)
    cost_model_load_s = time.perf_counter() - model_start
    compile_start = time.perf_counter()
    compiled = cwm.compile(onnx_path, target=target, trials_per_task=trials, cost_model=cost, work_dir=work_dir,
                           seed=seed, measure_baseline=True, bench_runs=runs, progress=progress, verbose=verbose)
    compile_s = time.perf_counter() - compile_start
    compiled.export(artifact_dir)

    reloaded = _run_fresh_process(artifact_dir, x_path, y_path, runs)
    got = np.load(y_path, allow_pickle=False)
    expected, ort_us, ort_threads = _onnxruntime(onnx_path, x, runs, cores)
    torch_out, torch_us, torch_threads = _torch_eager(x, seed, runs, cores)

    report = compiled.report
    stats = dict(getattr(cost, "stats", {}) or {})
    passes = report.get("pass_seconds", {})
    summary = {
        "cost_model": cost_model, "model_dir": model_path, "target": report["target"],
        "target_short": f"{target.kind.name} (mcpu {target.attrs.get('mcpu', '-')}, {cores} cores)",
        "tasks": [t["name"] for t in report["tasks"]], "trials_per_task": trials,
        "records": report["new_records"], "reused_records": report["reused_records"],
        "task_details": report["tasks"], "scheduled_functions": report["scheduled_functions"],
        "tune_s": round(report["tune_s"], 2), "compile_s": round(compile_s, 2),
        "pass_seconds": passes, "cost_model_load_s": round(cost_model_load_s, 2),
        "cost_model_s": round(stats.get("predict_s", 0.0) + stats.get("update_s", 0.0), 2) if stats else None,
        "cost_model_stats": stats or None,
        "artifact": artifact_dir, "library": reloaded.get("library") or os.path.join(artifact_dir, "model.so"),
        "onnx": onnx_path, "work_dir": work_dir,
        "max_abs_err_vs_onnxruntime": float(np.max(np.abs(got - expected))),
        "torch_max_abs_err_vs_onnxruntime": float(np.max(np.abs(torch_out - expected))),
        "ok": bool(got.shape == expected.shape and np.allclose(got, expected, rtol=RTOL, atol=ATOL)),
        "runs": runs,
        "untuned_us": round(report["latency_before_us"], 2) if report.get("latency_before_us") else None,
        "tuned_us": round(reloaded["median_us"], 2),
        "tuned_in_process_us": round(report["latency_after_us"], 2),
        "onnxruntime_us": round(ort_us, 2), "onnxruntime_threads": ort_threads,
        "torch_us": round(torch_us, 2), "torch_threads": torch_threads, "tvm_threads": cores,
        "total_s": round(time.perf_counter() - start, 2),
    }
    with open(os.path.join(out, "demo_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    return summary


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def _latency_rows(s: dict) -> list:
    base, tvm = s["untuned_us"], f"time_evaluator, 10 calls/run, {_threads(s['tvm_threads'])}"
    entries = [("TVM, untuned build", base, tvm),
               (f"TVM, tuned ({s['cost_model']}), reloaded", s["tuned_us"], f"{tvm}, fresh process"),
               ("onnxruntime", s["onnxruntime_us"], f"1 call/run, {_threads(s['onnxruntime_threads'])}"),
               ("PyTorch eager", s["torch_us"], f"1 call/run, {_threads(s['torch_threads'])}")]
    return [(name, f"{value:.1f} us" if value else "-", f"{base / value:.2f}x" if base and value else "-", how)
            for name, value, how in entries]


def format_summary(s: dict) -> str:
    """The demo's printed tables: what was done, then latencies."""
    from cwm.compile.cli import table

    passes = s["pass_seconds"]
    other = sum(v for k, v in passes.items() if k != "cwm-tune")
    split = f"{s['tune_s']:.1f} s tuning"
    if s["cost_model_s"] is not None:
        split += f" (cost model {s['cost_model_s']:.1f} s of it, + {s['cost_model_load_s']:.1f} s loading it)"
    split += f", {other:.1f} s import/partition/build; {s['compile_s']:.1f} s in cwm.compile with the baseline"
    model = f"{s['cost_model']}" + (f" ({s['model_dir']})" if s["model_dir"] else "")
    task_names = ", ".join(s["tasks"])
    rows = [
        ("model", f"tiny CNN, ONNX ({s['onnx']})"),
        ("target", s["target_short"]),
        ("cost model", model),
        ("tasks", f"{len(s['tasks'])} ({task_names})"),
        ("trials", f"{s['trials_per_task']} per task: {s['records']} measured, {s['reused_records']} reused"),
        ("functions scheduled from tuning", s["scheduled_functions"]),
        ("time", split),
        ("max abs err vs onnxruntime", f"{s['max_abs_err_vs_onnxruntime']:.2e} "
                                       f"({'ok' if s['ok'] else 'MISMATCH'}, rtol=atol={RTOL:g})"),
        ("artifact", f"{s['artifact']} (reloaded with cwm.load in a fresh process)"),
        ("total time", f"{s['total_s']:.1f} s"),
    ]
    latency = table(_latency_rows(s), (f"latency (median of {s['runs']} runs)", "median", "speedup vs untuned",
                                       "measured (onnxruntime, PyTorch: faster of 1 thread / all cores)"))
    tasks = table([(t["name"], t["new"], t["reused"], t["status"],
                    f"{t['best_us']:.1f} us" if t.get("best_us") else "-", f"{t['wall_s']:.1f} s")
                   for t in s["task_details"]], ("task", "measured", "reused", "status", "best", "time"))
    return table(rows) + "\n\n" + tasks + "\n\n" + latency


def main(argv=None) -> int:
    """Entry point of ``python -m cwm demo``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m cwm demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    from cwm.compile.errors import CompileError

    if args.trials < 1:
        parser.error("--trials must be >= 1")
    try:
        s = run(args.trials, args.out, args.runs, args.seed, args.cost_model, args.model_dir, args.resume,
                progress=not args.no_progress, verbose=args.verbose)
    except (DemoError, CompileError) as error:
        print(f"cwm demo: error: {error}", file=sys.stderr)
        return 2
    print(format_summary(s))
    if not s["ok"]:
        print(f"FAIL: the reloaded model's output differs from onnxruntime (rtol={RTOL}, atol={ATOL})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
