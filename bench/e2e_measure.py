"""The timing of the end-to-end benchmark (bench/e2e.py): every method of a network set up in
its own worker process (:mod:`timing_workers`), checked against PyTorch eager, and timed
interleaved; the measure job that records it.

Standard library only at module level; torch, onnxruntime, TVM and cwm are imported in the
worker processes (:func:`setup_method`) and by :func:`default_measure`, which tests replace.
"""
from __future__ import annotations

import os
import statistics
import time

from common import log, loadavg, machine, now
from e2e_checkpoint import TIMING_PROTOCOL, Checkpoint, compile_id
from e2e_networks import COMPILED, network_input, network_module, network_onnx
from timing_workers import Worker, WorkerError, rotated

#: the worker processes' factory (``module:function``, importable there: bench/ is on their sys.path)
FACTORY = "e2e_measure:setup_method"


def sample_stats(samples_s, number: int = 1) -> dict:
    """Median / quartiles / min (ms) of per-call sample times given in seconds."""
    xs = sorted(float(x) * 1e3 for x in samples_s)
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return {"median_ms": statistics.median(xs), "q1_ms": q[0], "q3_ms": q[2], "min_ms": xs[0],
            "runs": len(xs), "number": number, "samples_ms": [round(x, 4) for x in xs]}


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
    worker = Worker("reference", FACTORY,
                    {"method": "torch_eager", "net": net, "artifacts": {}, "threads": threads},
                    warmup=0, warmup_s=0.0, min_sample_s=0.0)
    with worker.start():
        return worker.output


def default_measure(net: str, methods, *, artifacts: dict, runs: int, warmup: int, threads: int,
                    min_sample_ms: float, gap_ms: float, warmup_s: float = 1.0) -> dict:
    """Time ``methods`` on ``net``, each in its own process, interleaved (bench/e2e.py's docstring
    and :mod:`timing_workers`); returns the ``measure`` record body.

    Workers are set up one after another (torch.compile's compile does not compete with anything);
    a method whose set-up, first call or warm-up raises gets a null latency and its error string.
    """
    from cwm.frontends.numerics import max_rel_err

    workers, errors, setup_s = {}, {}, {}
    try:
        for method in methods:
            start = time.perf_counter()
            worker = Worker(method, FACTORY,
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


def run_measure(net, ckpt: Checkpoint, args, measure_fn) -> dict:
    """One measure job: ``measure_fn`` on the network's compiled artifacts (and ONNX file), then
    the ``measure`` line appended to the checkpoint."""
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
           "loadavg_before": loadavg(load),
           "date": now(), "loadavg": loadavg(), "machine": machine()}
    ckpt.append(rec)
    return rec
