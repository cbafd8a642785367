"""``cwm compile MODEL.onnx --target llvm -o OUT/``: compile, tune, export, print a summary.

Shows a progress bar while tuning (``--no-progress`` to hide it) and ends with a summary table:
tasks, trials (new and reused from ``--work-dir``), time, and the latency before tuning (the
untuned, default-schedule build) and after (``--no-baseline`` skips both measurements).
``cwm run OUT --input x.npy`` and ``cwm bench OUT`` use the folder it writes.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

from cwm.cost_model.factory import registered as cost_models  # cheap: no TVM, no torch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the model: an .onnx file")
    parser.add_argument("-o", "--output", required=True, help="folder to write the compiled model to")
    parser.add_argument("--target", default="llvm", help="llvm (this host, with its mcpu) or cuda (default: llvm)")
    parser.add_argument("--trials", type=int, default=64, help="measured candidates per task (default 64)")
    parser.add_argument("--cost-model", default="cwm", choices=cost_models(),
                        help="cost model guiding the search (default: cwm, the shipped world model)")
    parser.add_argument("--model-dir", default=None, help="world model for --cost-model cwm (default: shipped)")
    parser.add_argument("--work-dir", default=None,
                        help="tuning database and logs; reusing a folder reuses (and resumes) its records")
    parser.add_argument("--tuning-cache", default=None, metavar="DIR|off",
                        help="the tuning database shared by this machine's compiles (default: $CWM_TUNING_CACHE or "
                             "~/.cache/cwm/tuning); tasks tuned before start from its records; off: not used")
    parser.add_argument("--lock-timeout", type=float, default=None, metavar="SECONDS",
                        help="while another compile uses --work-dir, wait at most this long for its lock "
                             "(default: wait until it is done)")
    parser.add_argument("--pipeline", default="default",
                        help="a pipeline name (default, no-tune, from-db; for --target cuda they mean "
                             "default-cuda, no-tune-cuda, from-db-cuda) or text such as "
                             "'cwm-import,cwm-partition,cwm-tune{trials=8},cwm-apply-db,cwm-build'; the summary "
                             "prints the pipeline that ran")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                        help="static shape for an ONNX input with symbolic dimensions (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dump-ir", default=None, metavar="DIR", help="write the IR after every pass into DIR")
    parser.add_argument("--print-after", action="append", default=[], metavar="PASS",
                        help="print the IR after PASS (repeatable)")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per latency measurement (default 20)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the before/after latency measurements")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true", help="show MetaSchedule's own log")


def parse_shapes(items) -> dict:
    """``["x=1,3,32,32"]`` -> ``{"x": [1, 3, 32, 32]}``; a ``ValueError`` naming ``--input-shape`` otherwise."""
    shapes = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            parsed = [int(d) for d in dims.split(",")]
        except ValueError:  # -> "cwm compile: error: ..." and exit 2 in main()
            raise ValueError(f"--input-shape takes NAME=D0,D1,... with integer dimensions, not {item!r}") from None
        if name in shapes:
            raise ValueError(f"--input-shape {name}=... is given twice")
        shapes[name] = parsed
    return shapes


def table(rows, header=("", "value")) -> str:
    """A Markdown-style table of ``rows`` (sequences of cells)."""
    rows = [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def _us(value) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.1f} us"


def summary(model, output: str, wall_s: float) -> str:
    """The end-of-compile tables: totals, then one row per task."""
    r = model.report
    tasks = r.get("tasks", [])
    rows = [("model", f"{r.get('frontend')} -> {output}"), ("target", model.target.kind.name + (
        f" (mcpu {model.target.attrs['mcpu']})" if "mcpu" in model.target.attrs else "")),
        ("pipeline", r.get("pipeline")), ("tasks", len(tasks))]
    if r.get("cost_model"):
        shared = f", {r['shared_records']} of them from the shared tuning database" if r.get("shared_records") else ""
        rows += [("trials", f"{r['new_records']} measured now, {r['reused_records']} reused{shared} "
                            f"({r['trials_per_task']} per task, cost model {r['cost_model']})"),
                 ("tuning time", f"{r['tune_s']:.1f} s")]
    rows.append(("compile time", f"{wall_s:.1f} s"))
    before, after = r.get("latency_before_us"), r.get("latency_after_us")
    if after is not None:
        rows.append(("latency before tuning", _us(before)))
        speedup = f" ({before / after:.2f}x faster)" if before and after else ""
        no_records = r.get("cost_model") and not (r.get("new_records") or r.get("reused_records"))
        if no_records or "cwm-apply-db" not in str(r.get("pipeline")):
            speedup = " (not tuned: default schedules)"  # before and after differ only by noise
        rows.append(("latency after tuning", _us(after) + speedup))
    text = table(rows)
    if tasks and "new" in tasks[0]:
        task_rows = [(t["name"], t["weight"], t["reused"], t.get("shared", 0), t["new"], t["status"],
                      _us(t.get("best_us")), f"{t['wall_s']:.1f} s") for t in tasks]
        text += "\n\n" + table(task_rows, ("task", "weight", "reused", "of them shared", "new", "status", "best",
                                            "time"))
    untunable = [t for t in tasks if t.get("status") == "untunable"]
    if untunable:
        text += f"\n\n{len(untunable)} task(s) could not be tuned and use their default schedule:"
        text += "".join(f"\n  {t['name']}: {t.get('reason')}" for t in untunable)
    return text


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m cwm compile", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    import cwm.compile as cc

    start = time.perf_counter()
    try:
        from cwm.compile.artifact import check_export_destination

        check_export_destination(args.output)  # refuse a foreign -o folder now, not after tuning
        model = cc.compile(args.model, target=args.target, trials_per_task=args.trials, cost_model=args.cost_model,
                           model_dir=args.model_dir, work_dir=args.work_dir, pipeline=args.pipeline,
                           input_shapes=parse_shapes(args.input_shape) or None, seed=args.seed,
                           dump_ir=args.dump_ir, print_after=tuple(args.print_after),
                           measure_baseline=not args.no_baseline, bench_runs=args.runs,
                           progress=not args.no_progress, verbose=args.verbose, lock_timeout=args.lock_timeout,
                           tuning_cache=True if args.tuning_cache is None else args.tuning_cache)
    except (cc.CompileError, ValueError, TypeError, FileNotFoundError, NotImplementedError) as error:
        # errors about input_shapes= carry their --input-shape wording in .cli
        print(f"cwm compile: error: {getattr(error, 'cli', None) or error}", file=sys.stderr)
        return 2
    try:
        model.export(args.output)
    except (cc.ArtifactError, OSError) as error:
        print(f"cwm compile: error: {error}", file=sys.stderr)
        return 2
    print(summary(model, args.output, time.perf_counter() - start))
    print(f"\nartifact sha256 (of {args.output}/manifest.json; pin it, see docs/trust.md):\n"
          f"  cwm.load({args.output!r}, expect_sha256={model.artifact_sha256!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
