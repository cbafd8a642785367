"""Where the time goes: a cwm-compiled network's kernels against ONNX Runtime's operators (issue #14).

cwm's side comes from the artifact's own report (no run): every tuned task's best measured
latency (MetaSchedule's runner, the kernel alone) times how often the network calls it. ONNX
Runtime's side is its profiler (``SessionOptions.enable_profiling``) over ``--runs`` calls, per
operator type (after its graph fusions: ``FusedConv`` is a convolution with its activation).
Both are grouped into the same categories (convolution, matmul, pooling, normalization,
softmax, element-wise / data movement). The sums differ from the end-to-end latency by what runs
between kernels (the Relax VM, ORT's executor) and, for cwm, by the kernels timed alone.

    PYTHONPATH=python .venv/bin/python bench/e2e_breakdown.py --artifact work_dirs/e2e_v2/resnet18/cwm/t64/artifact \\
        --onnx work_dirs/zoo_cache/onnx/resnet18-....onnx --net resnet18 --out bench/results/e2e_breakdown_resnet18.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CATEGORIES = (("convolution", ("conv",)), ("matmul", ("matmul", "dense", "gemm", "batch_matmul")),
              ("pooling", ("pool",)), ("normalization", ("norm", "mean", "variance", "batchnormalization")),
              ("softmax", ("softmax",)))
OTHER = "element-wise / data movement"


def category(name: str) -> str:
    lowered = name.lower()
    for label, needles in CATEGORIES:
        if any(n in lowered for n in needles):
            return label
    return OTHER


def cwm_kernels(artifact: str) -> list[dict]:
    """``[{name, weight, best_us, total_us, category}]`` from the artifact's compile report."""
    manifest = json.load(open(os.path.join(artifact, "manifest.json")))
    rows = []
    for task in manifest.get("report", {}).get("tasks", []):
        best = task.get("best_us")
        if best is None:
            continue
        rows.append({"name": task["name"], "weight": task["weight"], "best_us": best,
                     "total_us": best * task["weight"], "category": category(task["name"])})
    return sorted(rows, key=lambda r: -r["total_us"])


def ort_operators(onnx_path: str, x, input_name: str, runs: int, threads: int) -> list[dict]:
    """``[{op, calls_per_run, total_us, category}]`` per ORT operator type, per run."""
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
        for _ in range(5):  # warm-up, counted out below by run index
            session.run(None, {input_name: x})
        for _ in range(runs):
            session.run(None, {input_name: x})
        events = json.load(open(session.end_profiling()))
    per_op: dict = {}
    node_runs = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    skip = len(node_runs) * 5 // (runs + 5)  # the warm-up calls' events come first
    for event in node_runs[skip:]:
        op = event.get("args", {}).get("op_name", "?")
        entry = per_op.setdefault(op, {"op": op, "calls": 0, "total_us": 0.0})
        entry["calls"] += 1
        entry["total_us"] += float(event.get("dur", 0))
    rows = [{"op": e["op"], "calls_per_run": e["calls"] / runs, "total_us": e["total_us"] / runs,
             "category": category(e["op"])} for e in per_op.values()]
    return sorted(rows, key=lambda r: -r["total_us"])


def by_category(rows) -> dict:
    out: dict = {}
    for r in rows:
        out[r["category"]] = out.get(r["category"], 0.0) + r["total_us"]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--artifact", required=True, help="a cwm-compiled artifact of the network")
    p.add_argument("--onnx", required=True, help="the network's ONNX file (what ORT runs)")
    p.add_argument("--net", required=True, help="the zoo network (its example input)")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", required=True)
    p.add_argument("--label", default="", help="what this artifact is (shown in the README table)")
    args = p.parse_args(argv)
    from checkpoint import write_json
    from common import machine, today
    from e2e_networks import network_input

    x, input_name = network_input(args.net)
    kernels = cwm_kernels(args.artifact)
    ops = ort_operators(args.onnx, x, input_name, args.runs, args.threads)
    cwm_cat, ort_cat = by_category(kernels), by_category(ops)
    report = {"benchmark": "e2e_breakdown", "net": args.net, "label": args.label, "artifact": args.artifact,
              "threads": args.threads,
              "runs": args.runs, "cwm_kernel_sum_us": sum(r["total_us"] for r in kernels),
              "ort_operator_sum_us": sum(r["total_us"] for r in ops),
              "by_category_us": {c: {"cwm": cwm_cat.get(c), "onnxruntime": ort_cat.get(c)}
                                 for c in dict.fromkeys(list(cwm_cat) + list(ort_cat))},
              "cwm_kernels": kernels, "ort_operators": ops,
              "note": "cwm: best tuned latency of each kernel alone x its calls (the artifact's report); "
                      "ORT: its profiler's kernel times per run",
              "machine": machine(), "date": today(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_json(args.out, report)
    print(f"{'category':<32} {'cwm us':>10} {'ORT us':>10}")
    for c, v in report["by_category_us"].items():
        print(f"{c:<32} {v['cwm'] or 0:10.0f} {v['onnxruntime'] or 0:10.0f}")
    print(f"{'sum':<32} {report['cwm_kernel_sum_us']:10.0f} {report['ort_operator_sum_us']:10.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
