"""Time every call of a compiled model inside the network: a Relax VM instrument around each call.

What it answers: do the kernels run as fast in the network as they did alone during tuning (the
artifact's report)? ``bench/e2e_breakdown.py`` compares those isolated times with ONNX Runtime's
operators; this tool gives each call's time in the running network. The instrument is a Python
callback, so the whole network runs slower under it; compare the calls with each other and with
the isolated times, not with the benchmark's end-to-end latency.

    PYTHONPATH=python .venv/bin/python tools/vm_call_profile.py work_dirs/e2e_v5/mobilenet_v2/cwm/t64/artifact
"""
from __future__ import annotations

import argparse
import os
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifact", help="a compiled-model folder (cwm.load)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="TVM_NUM_THREADS, as bench/e2e.py sets it (TVM's default here is one per physical core)")
    args = ap.parse_args(argv)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)  # before TVM's thread pool starts

    import tvm

    import cwm

    model = cwm.load(args.artifact)
    vm, weights = model._ready()
    inputs = [tvm.runtime.tensor(a, model.device) for a in model.example_inputs()]
    for _ in range(5):
        vm["main"](*inputs, *weights)
    start = time.perf_counter()
    for _ in range(args.runs):
        vm["main"](*inputs, *weights)
    plain_ms = (time.perf_counter() - start) / args.runs * 1e3

    seconds, started, calls = {}, {}, [0]

    def instrument(func, name, before, ret, *call_args):
        now = time.perf_counter()
        if before:
            started[name] = now
        else:
            seconds[name] = seconds.get(name, 0.0) + now - started.pop(name, now)
            calls[0] += 1
        return 0

    vm.set_instrument(instrument)
    start = time.perf_counter()
    for _ in range(args.runs):
        vm["main"](*inputs, *weights)
    instrumented_ms = (time.perf_counter() - start) / args.runs * 1e3
    isolated = {t["name"]: t for t in model.report.get("tasks", [])}
    total_ms = sum(seconds.values()) / args.runs * 1e3
    print(f"network {plain_ms:.2f} ms; instrumented {instrumented_ms:.2f} ms, of which {total_ms:.2f} ms in "
          f"{calls[0] // args.runs} calls a run")
    print(f"{'call':<52} {'in network ms':>13} {'alone ms':>9}")
    for name, secs in sorted(seconds.items(), key=lambda kv: -kv[1])[:args.top]:
        task = isolated.get(name.removesuffix("_prepacked"))
        alone = f"{task['best_us'] * task['weight'] / 1e3:9.3f}" if task and task.get("best_us") else f"{'-':>9}"
        print(f"{name[:52]:<52} {secs / args.runs * 1e3:13.3f} {alone}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
