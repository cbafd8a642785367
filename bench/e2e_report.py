"""The report of the end-to-end benchmark (bench/e2e.py): the ``e2e.json`` payload from the
checkpoint, the geomean speedups, the package versions, and a text summary for the log."""
from __future__ import annotations

from checkpoint import hosts_of
from common import geomean, machine, today
from e2e_checkpoint import TIMING_PROTOCOL, Checkpoint, compile_id
from e2e_networks import BASELINES, COMPILED, METHODS


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


def summarize(ckpt: Checkpoint, args, partial: bool) -> dict:
    """The ``e2e.json`` payload (docs/e2e_benchmark.md lists every key)."""
    nets, used = {}, []
    for net in args.net_list:
        meas = ckpt.measure_for(net, args.method_list, args.trials, args.runs)
        comp = {m: ckpt.compiles.get(compile_id(net, m, args.trials)) for m in COMPILED}
        if meas is None and not any(comp.values()):
            continue
        res = (meas or {}).get("results", {})
        row = {f"{m}_ms": (res.get(m) or {}).get("median_ms") for m in METHODS}
        row["tuning_s"] = (comp["cwm"] or {}).get("tuning_s")
        row["tvm_ms_xgb_tuning_s"] = (comp["tvm_ms_xgb"] or {}).get("tuning_s")
        row["tuning_s_by_method"] = {m: c.get("tuning_s") for m, c in comp.items() if c}
        row["weights_packed"] = {m: c.get("weights_packed") for m, c in comp.items() if c}
        row["budget_total"] = {m: c.get("budget_total") for m, c in comp.items() if c}
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
        row["measured_at"] = (meas or {}).get("date")  # the timing of one network is one side-by-side run
        row["machine"] = (meas or {}).get("machine")
        used.append(meas or {})
        used += [c for c in comp.values() if c]
        nets[net] = row
    extra = tuple(m for m in METHODS if m not in BASELINES and m != "cwm" and m in args.method_list)
    geo, count = geomean_speedups(nets, BASELINES + extra)  # + the packing ablation when it ran
    model = next((c.get("model") for c in ckpt.compiles.values() if c["method"] == "cwm" and c.get("model")), None)
    return {"networks": nets, "geomean_speedup": geo, "geomean_networks": count, "trials_per_task": args.trials,
            "methods": list(args.method_list), "threads": args.threads, "runs": args.runs, "warmup": args.warmup,
            "warmup_s": args.warmup_s,
            "min_sample_ms": args.min_sample_ms, "gap_ms": args.gap_ms,
            "statistic": "median of interleaved samples; a sample = mean of `number` back-to-back calls",
            "timing": TIMING_PROTOCOL + ": every method in its own process, one active at a time",
            "setup": {"batch": 1, "image": "1x3x224x224 float32", "sequence": "1x128 int64",
                      "compiled_from": "the network's ONNX file (opset 17; llama_100m: opset 18, "
                                       "torch.onnx.export(dynamo=True))", "target": "llvm (host, mcpu)",
                      "torch_compile": "torch.compile(module), backend inductor, mode default",
                      "onnxruntime": "CPUExecutionProvider, default SessionOptions, intra_op_num_threads=threads",
                      "torch": "torch.inference_mode(), torch.set_num_threads(threads)",
                      "tvm": "Relax VM main() on preallocated input, TVM_NUM_THREADS=threads",
                      "max_rel_err": "max|y - y_torch_eager| / max|y_torch_eager|"},
            "model": model, "versions": versions(), "partial": partial, "smoke": bool(args.smoke),
            "missing": [net for net in args.net_list if net not in nets or not nets[net]["measured"]],
            # the host and day the results were measured on (a report may be written later, elsewhere)
            "machine": hosts_of(used) or machine(),
            "date": max((r["date"][:10] for r in used if r.get("kind") == "measure" and r.get("date")),
                        default=today())}


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
