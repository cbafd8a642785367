"""Import every zoo network through ONNX and torch.export, check numerics, extract tasks.

For each network of :data:`cwm.frontends.zoo.NETWORKS` a worker process (so a crash or a
leak in one network cannot take the others down):

* exports it to ONNX (kept in ``<cache>/onnx/``), imports it, compiles it untuned for the
  host llvm target, runs it once and compares with PyTorch (``max|tvm-torch|/max|torch|``);
* does the same through ``torch.export`` + ``from_exported_program``;
* extracts the MetaSchedule tasks of both imports and caches them
  (``<cache>/<name>.json`` for ONNX, ``<cache>/<name>.torch.json`` for torch.export).

A failure on one path is recorded (exception type and message) and the rest goes on. The
main process merges the per-network results (``<cache>/report/<name>.json``), deduplicates
the ONNX tasks across networks and writes ``docs/zoo.md``.

Usage: ``python tools/zoo_report.py [--networks resnet18 gpt2] [--resume] [--no-numerics]``
(about 10-20 minutes for all seven on 2 cores; ``--resume`` skips networks already reported).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PATHS = ("onnx", "torch")


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".strip()


def run_path(name: str, via: str, cache_dir: str, numerics_on: bool, target) -> dict:
    """Import ``name`` via ``via``; numerics and tasks. Every step's failure is recorded."""
    from cwm.frontends import importers, numerics, task_cache, tasks, zoo

    out: dict = {}
    try:
        if via == "onnx":
            path = importers.onnx_path(name, task_cache.onnx_dir(cache_dir))
            start = time.perf_counter()
            if not os.path.exists(path):
                zoo.to_onnx(name, path)
            out["export_s"] = time.perf_counter() - start
            start = time.perf_counter()
            mod = importers.import_onnx(name, task_cache.onnx_dir(cache_dir))
        else:
            start = time.perf_counter()
            mod = importers.import_torch(name)
        out["import_s"] = time.perf_counter() - start
    except Exception as error:  # noqa: BLE001 - recorded in the report
        out["error"] = _error_text(error)
        out["traceback"] = traceback.format_exc()
        return out
    try:
        start = time.perf_counter()
        found = tasks.extract_tasks(mod, target, network=name)
        out["extract_s"] = time.perf_counter() - start
        out["tasks"] = len(found)
        out["weight"] = sum(t.weight for t in found)
        out["keys"] = [t.key for t in found]
        task_cache.save(name, found, target, cache_dir, via)
    except Exception as error:  # noqa: BLE001
        out["tasks_error"] = _error_text(error)
    if numerics_on:
        try:
            module, inputs = zoo.build_torch(name)
            start = time.perf_counter()
            expected = numerics.torch_reference(module, inputs)
            out["torch_eager_s"] = time.perf_counter() - start
            actual, out["compile_s"], out["run_s"] = numerics.run_relax(
                mod, [x.numpy() for x in inputs], target)
            out["max_rel_err"] = numerics.max_rel_err(actual, expected)
        except Exception as error:  # noqa: BLE001
            out["numerics_error"] = _error_text(error)
            out["traceback"] = traceback.format_exc()
    return out


def worker(name: str, cache_dir: str, numerics_on: bool) -> None:
    import cwm  # noqa: F401  (TVMScript speed fix)
    from cwm.frontends import zoo
    from cwm.target_spec import host_target

    target = host_target()
    result = {"network": name, "how": zoo.get(name).how, "target": str(target)}
    for via in PATHS:
        start = time.perf_counter()
        result[via] = run_path(name, via, cache_dir, numerics_on, target)
        result[via]["wall_s"] = time.perf_counter() - start
        shown = {k: v for k, v in result[via].items() if k not in ("keys", "traceback")}
        print(f"[{name}/{via}] {json.dumps(shown)}", flush=True)
        _write_json(_result_path(cache_dir, name), result)  # after each path: partial results


def _result_path(cache_dir: str, name: str) -> str:
    return os.path.join(cache_dir, "report", f"{name}.json")


def _write_json(path: str, doc) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def _fmt_err(part: dict) -> str:
    if "error" in part:
        return "import failed: " + _short(part["error"])
    if "numerics_error" in part:
        return "run failed: " + _short(part["numerics_error"])
    return f"{part['max_rel_err']:.1e}" if "max_rel_err" in part else "-"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _secs(part: dict, key: str) -> str:
    return f"{part[key]:.1f}" if key in part else "-"


def _ms(part: dict, key: str) -> str:
    return f"{part[key] * 1e3:.0f}" if key in part else "-"


def _tasks(part: dict) -> str:
    if "tasks" in part:
        return f"{part['tasks']} (w {part['weight']})"
    return "failed: " + _short(part.get("tasks_error", part.get("error", "-")), 80)


def render(results: list, cache_dir: str) -> str:
    """docs/zoo.md from the per-network results and the cached ONNX tasks."""
    from cwm.frontends import task_cache
    from cwm.frontends.tasks import TaskTable
    from cwm.target_spec import host_target

    target = host_target()
    table = TaskTable()
    for r in results:
        cached = task_cache.load(r["network"], target, cache_dir, "onnx")
        if cached is not None:
            table.add(r["network"], cached)
    summary = table.summary()
    both = TaskTable()  # ONNX and torch.export tasks together
    for r in results:
        for via in PATHS:
            cached = task_cache.load(r["network"], target, cache_dir, via)
            if cached is not None:
                both.add(f"{r['network']}/{via}", cached)
    lines = [
        "# Model zoo: import, numerics, tasks",
        "",
        "Generated by `tools/zoo_report.py` (" + time.strftime("%Y-%m-%d") + f"), target `{target}`,",
        "batch 1, images 1x3x224x224, sequences 1x128 int64, random weights (`torch.manual_seed(0)`).",
        "Numerics: untuned `tvm.compile` (default Relax pipeline), one run on the Relax VM, against",
        "PyTorch eager on the same random input; error = `max|tvm - torch| / max|torch|`.",
        "Tasks: fused with `cwm.partition.fuse` then `ms.relax_integration.extract_tasks`;",
        "`n (w W)` = n distinct tasks, W = total weight (kernel calls per forward pass).",
        "Times in seconds (one run each, 2 shared cores, so +-30 %); import = frontend only (ONNX",
        "export listed separately); run = one untuned TVM forward pass; PyTorch eager = its first",
        "forward pass. Same tasks onnx/torch = task keys (structural hashes) found by both importers.",
        "",
        "| network | how built | tasks via onnx | tasks via torch | same tasks onnx/torch | "
        "max rel err via onnx | max rel err via torch | onnx export s | import s onnx / torch | "
        "compile s onnx / torch | TVM run s onnx / torch | PyTorch eager ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        o, t = r.get("onnx", {}), r.get("torch", {})
        same = (f"{len(set(o['keys']) & set(t['keys']))}" if "keys" in o and "keys" in t else "-")
        lines.append(
            f"| {r['network']} | `{r['how']}` | {_tasks(o)} | {_tasks(t)} | {same} | "
            f"{_fmt_err(o)} | {_fmt_err(t)} | {_secs(o, 'export_s')} | "
            f"{_secs(o, 'import_s')} / {_secs(t, 'import_s')} | "
            f"{_secs(o, 'compile_s')} / {_secs(t, 'compile_s')} | "
            f"{_secs(o, 'run_s')} / {_secs(t, 'run_s')} | {_ms(o, 'torch_eager_s')} |")
    lines += ["", "## Unique tasks across networks (ONNX path)", "",
              f"**{summary['unique_tasks']} unique tasks** over {len(table.networks)} networks "
              f"({summary['shared_tasks']} appear in more than one network; "
              f"sum of per-network distinct tasks: "
              f"{sum(v['tasks'] for v in summary['networks'].values())}). "
              f"ONNX and torch.export tasks together: **{len(both)} unique** "
              "(the two importers mostly produce different kernels: the ONNX exporter folds "
              "BatchNorm into the conv weights, torch.export keeps it as subtract/divide/"
              "multiply/add fused after each conv; GELU, masks and attention reshapes are "
              "also lowered differently).", "",
              "| network | distinct tasks | shared with another network | total weight |",
              "|---|---|---|---|"]
    for network, row in summary["networks"].items():
        lines.append(f"| {network} | {row['tasks']} | {row['shared']} | {row['weight']} |")
    shared = [row for row in table.to_rows() if "," in row["networks"]]
    if shared:
        lines += ["", "Tasks shared between networks (`network x weight`):", "",
                  "| key | name (first seen) | GFLOP | networks |", "|---|---|---|---|"]
        for row in shared:
            gflop = f"{row['flop'] / 1e9:.3f}" if row["flop"] is not None else "-"
            lines.append(f"| `{row['key']}` | {row['name']} | {gflop} | {row['networks']} |")
    failures = [(r["network"], via, r[via]) for r in results for via in PATHS
                if any(k in r.get(via, {}) for k in ("error", "numerics_error", "tasks_error"))]
    if failures:
        lines += ["", "## Failures (full text)", ""]
        for network, via, part in failures:
            for key in ("error", "tasks_error", "numerics_error"):
                if key in part:
                    lines += [f"* **{network} via {via}** ({key}):", "", "  ```",
                              "  " + part[key].strip().replace("\n", "\n  ")[:3000], "  ```", ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--networks", nargs="*", default=None)
    parser.add_argument("--cache-dir", default=os.path.join(ROOT, "work_dirs", "zoo_cache"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "zoo.md"))
    parser.add_argument("--resume", action="store_true", help="skip networks already reported")
    parser.add_argument("--no-numerics", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per network, seconds")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.cache_dir, not args.no_numerics)
        return 0

    from cwm.frontends import zoo

    names = args.networks or list(zoo.NETWORKS)
    results = []
    for name in names:
        zoo.get(name)
        path = _result_path(args.cache_dir, name)
        if not (args.resume and os.path.exists(path)):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", name,
                   "--cache-dir", args.cache_dir] + (["--no-numerics"] if args.no_numerics else [])
            start = time.perf_counter()
            try:
                proc = subprocess.run(cmd, timeout=args.timeout)
                failure = None if proc.returncode == 0 else f"worker exited with code {proc.returncode}"
            except subprocess.TimeoutExpired:
                failure = f"worker timed out after {args.timeout:.0f} s"
            print(f"[{name}] done in {time.perf_counter() - start:.0f} s", flush=True)
            if failure:  # keep what the worker finished before it died
                partial = {"network": name, "how": zoo.get(name).how}
                if os.path.exists(path) and os.path.getmtime(path) >= time.time() - (
                        time.perf_counter() - start):
                    with open(path) as f:
                        partial = json.load(f)
                for via in PATHS:
                    partial.setdefault(via, {"error": failure})
                _write_json(path, partial)
        with open(path) as f:
            results.append(json.load(f))
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:  # rewritten after each network: partial results visible
            f.write(render(results, args.cache_dir))
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
