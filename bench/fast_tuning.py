"""Before/after benchmark of cwm's fast MetaSchedule setup on this machine.

Measures, each in a fresh subprocess:

(a) ``import tvm`` and then ``import tvm.s_tir.tensor_intrin``, stock vs with cwm's
    ``inspect.stack`` patch (loaded through ``python/cwm/_sitecustomize``);
(b) wall time of N tuning trials (64 by default) of ``matmul_256`` and ``conv2d_64x56x56_3x3``
    under three configurations:

    * ``stock``: ``ms.tune_tir`` with MetaSchedule's default builder, runner, search strategy
      and cost model, target ``{"kind": "llvm", "num-cores": N}`` (plain ``"llvm"`` is
      rejected: no ``num-cores``; no ``mcpu``), without the patch. Capped at ``--stock-timeout`` seconds (stock
      builds can all time out, see docs); a cut-off run still reports its valid records.
    * ``patched-stock``: the same, with only the patch (sitecustomize in the child's env).
    * ``cwm``: ``cwm.tuning.tune_tir`` defaults (in-process builder/runner, fast search knobs,
      host target with ``mcpu``).

Writes ``bench/results/fast_tuning.json`` (after every stage, so a long run can be read while
it goes) and prints a markdown table. ``--quick``: 16 trials, no ``stock`` (smoke test).

    PYTHONPATH=python .venv/bin/python bench/fast_tuning.py [--quick] [--only cwm,import]

Only the standard library is imported here at top level: the same file is the child process
(``--child``), and the ``stock`` child must not import ``cwm`` (that would install the patch).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "cwm")
SITE_DIR = os.path.join(PACKAGE, "_sitecustomize")
CONFIGS = ("import", "stock", "patched-stock", "cwm")
WORKLOADS = ("matmul_256", "conv2d_64x56x56_3x3")
FAILED_SECS = 1e9  # MetaSchedule stores failed candidates with run_secs = [1e10]

_IMPORT_CHILD = """
import json, time
t0 = time.perf_counter(); import tvm
t1 = time.perf_counter(); import tvm.s_tir.tensor_intrin
t2 = time.perf_counter(); import inspect, sys
print("RESULT " + json.dumps({"import_tvm_s": t1 - t0, "tensor_intrin_s": t2 - t1,
      "patched": inspect.stack.__module__ != "inspect", "modules": len(sys.modules)}))
"""


# ----------------------------------------------------------------------------- child side
def _load_workloads():
    """``cwm/workloads.py`` loaded by path, without importing the ``cwm`` package."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_workloads", os.path.join(PACKAGE, "workloads.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(config: str, workload: str, trials: int, work_dir: str) -> None:
    """Tune one workload under one configuration; print ``RESULT {json}``."""
    start = time.perf_counter()
    if config == "cwm":
        from cwm import tuning, workloads

        mod = workloads.get(workload)
        target = tuning.host_target()
        outcome = tuning.tune_tir(mod, target=target, trials=trials, work_dir=work_dir, verbose=True)
        tune_s = outcome.wall_s
    else:  # stock and patched-stock differ only in the environment the parent gives us
        import tvm
        import tvm.s_tir.meta_schedule as ms

        mod = _load_workloads().get(workload)
        # plain "llvm" is rejected by TuneContext (no "num-cores"), and the string form
        # "llvm -num-cores 2" its error message suggests is rejected too in TVM 0.27
        target = tvm.target.Target({"kind": "llvm", "num-cores": os.cpu_count()})
        tune_start = time.perf_counter()
        ms.tune_tir(mod, target, work_dir, max_trials_global=trials, seed=0)
        tune_s = time.perf_counter() - tune_start
    import inspect

    print("RESULT " + json.dumps({"tune_s": tune_s, "child_total_s": time.perf_counter() - start,
                                  "target": str(target), "patched": inspect.stack.__module__ != "inspect"}),
          flush=True)


# ----------------------------------------------------------------------------- parent side
def _env(patched: bool) -> dict:
    env = dict(os.environ)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE_DIR]
    parts = ([SITE_DIR] if patched else []) + parts
    if os.path.join(ROOT, "python") not in parts:
        parts.append(os.path.join(ROOT, "python"))
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _run(cmd, env, log_path, timeout):
    """Run ``cmd`` in its own process group, output to ``log_path``; kill the group on timeout.

    Returns ``(wall_s, cut_off, returncode, the child's RESULT dict or None)``.
    """
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=ROOT)
        try:
            proc.wait(timeout=timeout)
            cut_off = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the child and its popen workers
            proc.wait()
            cut_off = True
    wall = time.perf_counter() - start
    result = None
    with open(log_path, errors="replace") as log:
        for line in log:
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
    return wall, cut_off, proc.returncode, result


def _records(work_dir: str):
    """``(n_records, n_valid, best_us)`` read straight from the JSON database file."""
    path = os.path.join(work_dir, "database_tuning_record.json")
    latencies, n = [], 0
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                n += 1
                secs = [float(s) for s in (json.loads(line)[1][1] or [])]
                if secs and max(secs) < FAILED_SECS:
                    latencies.append(sum(secs) / len(secs))
    return n, len(latencies), (round(min(latencies) * 1e6, 1) if latencies else None)


def measure_imports(log_dir: str) -> dict:
    out = {}
    for name, patched in (("stock", False), ("patched", True)):
        wall, _, rc, res = _run([sys.executable, "-c", _IMPORT_CHILD], _env(patched),
                                os.path.join(log_dir, f"import_{name}.log"), timeout=600)
        out[name] = {"process_s": round(wall, 2), "rc": rc,
                     **({k: (round(v, 2) if isinstance(v, float) else v) for k, v in res.items()}
                        if res else {})}
        print(f"[import] {name}: {out[name]}", flush=True)
    return out


def measure_tuning(config, workload, trials, work_root, timeout) -> dict:
    work_dir = os.path.join(work_root, f"{config}_{workload}")
    shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", config, workload, str(trials), work_dir]
    wall, cut_off, rc, res = _run(cmd, _env(config != "stock"), os.path.join(work_dir, "child.log"), timeout)
    n_records, n_valid, best_us = _records(work_dir)
    row = {"workload": workload, "config": config, "trials": trials,
           "tune_s": round(res["tune_s"], 1) if res else None, "process_s": round(wall, 1),
           "cut_off": cut_off, "timeout_s": timeout, "rc": rc, "n_records": n_records,
           "n_valid": n_valid, "best_us": best_us,
           "target": res.get("target") if res else None,
           "patched": res.get("patched") if res else None, "log": os.path.relpath(work_dir, ROOT)}
    print(f"[tune] {row}", flush=True)
    return row


def _machine() -> dict:
    from common import machine  # bench/common.py (standard library only)

    return {"description": machine(), "cores": os.cpu_count(),
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}  # other work skews timings


def markdown(report: dict) -> str:
    lines = []
    imp = report.get("import")
    if imp:
        lines += ["| import (fresh process) | stock | patched |", "|---|---|---|"]
        for key in ("import_tvm_s", "tensor_intrin_s", "process_s"):
            lines.append(f"| {key} | {imp['stock'].get(key)} | {imp['patched'].get(key)} |")
        lines.append("")
    rows = report.get("tuning", [])
    if rows:
        lines += ["| workload | config | trials | tune s | process s | valid/records | best us | cut off |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['workload']} | {r['config']} | {r['trials']} | {r['tune_s']} | "
                         f"{r['process_s']} | {r['n_valid']}/{r['n_records']} | {r['best_us']} | "
                         f"{'yes' if r['cut_off'] else 'no'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 trials, skip the stock config")
    parser.add_argument("--only", default=None, help=f"comma-separated subset of {','.join(CONFIGS)}")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--trials", type=int, default=None, help="default 64 (16 with --quick)")
    parser.add_argument("--stock-timeout", type=float, default=900.0,
                        help="wall-clock cap (s) of each stock / patched-stock tuning run")
    parser.add_argument("--out", default=None, help="default bench/results/fast_tuning[_quick].json")
    parser.add_argument("--work-root", default=os.path.join(ROOT, "work_dirs", "fast_tuning"))
    parser.add_argument("--child", nargs=4, metavar=("CONFIG", "WORKLOAD", "TRIALS", "WORK_DIR"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]), args.child[3])
        return 0

    trials = args.trials or (16 if args.quick else 64)
    configs = [c.strip() for c in args.only.split(",")] if args.only else \
        [c for c in CONFIGS if not (args.quick and c == "stock")]
    unknown = set(configs) - set(CONFIGS)
    if unknown:
        parser.error(f"unknown config(s) {sorted(unknown)}; choose from {CONFIGS}")
    out = args.out or os.path.join(ROOT, "bench", "results",
                                   "fast_tuning_quick.json" if args.quick else "fast_tuning.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.makedirs(args.work_root, exist_ok=True)
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": _machine(),
              "trials": trials, "quick": args.quick, "configs": configs, "tuning": []}

    def save():
        with open(out, "w") as f:
            json.dump(report, f, indent=2)

    if "import" in configs:
        report["import"] = measure_imports(args.work_root)
        report["import_tensor_intrin_s"] = {"before": report["import"]["stock"].get("tensor_intrin_s"),
                                            "after": report["import"]["patched"].get("tensor_intrin_s")}
        save()
    for workload in [w.strip() for w in args.workloads.split(",")]:
        for config in [c for c in CONFIGS if c in configs and c != "import"]:
            timeout = args.stock_timeout if config != "cwm" else max(args.stock_timeout, 1800.0)
            row = measure_tuning(config, workload, trials, args.work_root, timeout)
            report["tuning"].append(row)
            if config == "cwm" and row["target"]:  # LLVM's name for this CPU, e.g. znver5
                report["machine"]["llvm_mcpu"] = json.loads(row["target"]).get("mcpu")
            save()
    print(markdown(report))
    print(f"\nwrote {os.path.relpath(out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
