"""End-to-end demo: ONNX model -> Relax -> MetaSchedule-tuned -> shared library -> checked.

Steps: export :mod:`cwm.frontends.tiny_cnn` to ONNX; import it with
``tvm.relax.frontend.onnx.from_onnx``; fuse (:func:`cwm.tuning.relax_model.fuse`); tune every
extracted task with MetaSchedule's XGBoost cost model and cwm's default (worker-pool) builder/runner;
compile; ``export_library``; reload the ``.so`` in a fresh ``relax.VirtualMachine``; compare
with onnxruntime; print a table. Exits 1 when the tuned library's output does not match.

Run: ``python -m cwm demo [--trials N] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

RTOL, ATOL = 1e-4, 1e-4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's command-line options (shared by ``python -m cwm demo``)."""
    parser.add_argument("--trials", type=int, default=32, help="trials per task (default 32)")
    parser.add_argument("--out", default="demo_out", help="output directory (default demo_out/)")
    parser.add_argument("--runs", type=int, default=25, help="timed runs per latency (>= 20)")
    parser.add_argument("--seed", type=int, default=0, help="model weights, input and search seed")
    parser.add_argument("--verbose", action="store_true", help="show MetaSchedule's log")


def _vm_latency_us(vm, device, data, runs: int) -> float:
    """Median over ``runs`` repeats of ``vm.time_evaluator`` (each repeat averages 10 calls)."""
    import numpy as np

    timer = vm.time_evaluator("main", device, number=10, repeat=max(20, runs))
    return float(np.median(timer(data).results)) * 1e6


def _ort_run(onnx_path: str, x, runs: int, threads: int):
    """onnxruntime output and median latency (us) over ``runs`` single calls."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    out = session.run(None, feed)[0]
    times = []
    for _ in range(max(20, runs) + 3):
        start = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - start)
    return out, float(np.median(times[3:])) * 1e6


def _print_table(rows) -> None:
    width = max(len(k) for k, _ in rows)
    print(f"| {'':{width}} | value |\n|{'-' * (width + 2)}|-------|")
    for key, value in rows:
        print(f"| {key:{width}} | {value} |")


def run(trials: int = 32, out: str = "demo_out", runs: int = 25, seed: int = 0,
        verbose: bool = False) -> dict:
    """Do the whole flow; return the summary dict (also written to ``out/demo_summary.json``)."""
    import numpy as np
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    from cwm.frontends import tiny_cnn
    from cwm.tuning import relax_model
    from cwm.tuning.target import host_target

    os.makedirs(out, exist_ok=True)
    onnx_path = tiny_cnn.export_onnx(os.path.join(out, "tiny_cnn.onnx"), seed)
    x = tiny_cnn.example_input(seed)
    target = host_target()
    device = tvm.cpu()
    mod = from_onnx(onnx.load(onnx_path), shape_dict={tiny_cnn.INPUT_NAME: list(tiny_cnn.INPUT_SHAPE)})

    fused = relax_model.fuse(mod, target)
    tuned_run = relax_model.tune_model(fused, target, trials, os.path.join(out, "tuning"),
                                       seed=seed, verbose=verbose)
    tuned = relax_model.apply_database(fused, target, tuned_run.database)
    library = os.path.abspath(os.path.join(out, "tiny_cnn_tuned.so"))
    tvm.compile(tuned, target=target).export_library(library)

    vm = relax.VirtualMachine(tvm.runtime.load_module(library), device)  # fresh, from disk
    data = tvm.runtime.tensor(x, device)
    got = vm["main"](data).numpy()
    expected, ort_us = _ort_run(onnx_path, x, runs, int(target.attrs["num-cores"]))
    untuned_vm = relax.VirtualMachine(tvm.compile(mod, target=target), device)
    untuned_err = float(np.max(np.abs(untuned_vm["main"](data).numpy() - expected)))

    summary = {
        "tasks": tuned_run.task_names, "trials_per_task": trials,
        "records": tuned_run.n_records, "scheduled_functions": relax_model.count_scheduled(tuned),
        "tune_s": round(tuned_run.wall_s, 2), "library": library,
        "max_abs_err_vs_onnxruntime": float(np.max(np.abs(got - expected))),
        "untuned_max_abs_err": untuned_err,
        "ok": bool(np.allclose(got, expected, rtol=RTOL, atol=ATOL)),
        "untuned_us": round(_vm_latency_us(untuned_vm, device, data, runs), 2),
        "tuned_us": round(_vm_latency_us(vm, device, data, runs), 2),
        "onnxruntime_us": round(ort_us, 2), "target": str(target),
    }
    with open(os.path.join(out, "demo_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    return summary


def main(argv=None) -> int:
    """Entry point of ``python -m cwm demo``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="cwm demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    s = run(args.trials, args.out, args.runs, args.seed, args.verbose)
    _print_table([
        ("tasks", f"{len(s['tasks'])} ({', '.join(s['tasks'])})"),
        ("trials per task / records", f"{s['trials_per_task']} / {s['records']}"),
        ("functions scheduled from tuning", s["scheduled_functions"]),
        ("tune time", f"{s['tune_s']:.1f} s"),
        ("latency untuned (median)", f"{s['untuned_us']:.1f} us"),
        ("latency tuned (median)", f"{s['tuned_us']:.1f} us"),
        ("latency onnxruntime (median)", f"{s['onnxruntime_us']:.1f} us"),
        ("max abs err vs onnxruntime", f"{s['max_abs_err_vs_onnxruntime']:.2e}"),
        ("library", s["library"]),
        ("total time", f"{time.perf_counter() - start:.1f} s"),
    ])
    if not s["ok"]:
        print(f"FAIL: tuned output differs from onnxruntime (rtol={RTOL}, atol={ATOL})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
