"""Search benchmark: CWM vs MetaSchedule's cost models on held-out tasks (docs/search_benchmark.md).

For each of ``--tasks`` held-out test tasks of the dataset (chosen deterministically, see
:func:`select_tasks`), each seed and each method (``cwm``, ``xgb``, ``xgb_pretrained``,
``random``), tune ``--trials`` trials with :func:`cwm.tune`. Then, per task, rebuild every
run's best candidate from its trace and re-measure all of them in one process, interleaved
round-robin for ``--repeats`` rounds (median per candidate), so measurement noise between
tuning runs does not pick the winner. Sample efficiency: on the first
``--sample-efficiency-tasks`` tasks, MetaSchedule's ``xgb`` runs ``--xgb-long-trials`` (640)
trials and CWM up to ``--max-cwm-trials`` (128); the result is the first trial at which CWM's
best-so-far reaches XGB's 640-trial best.

Resumable: every finished tuning run (and every task's re-measurement) is appended at once
to the checkpoint ``<out stem>_runs.jsonl`` (``bench/results/search_runs.jsonl``); a restart
skips what is there. The chosen tasks are stored there too, so a dataset that grew in the
meantime does not change them. Writes ``bench/results/search.json`` and
``bench/results/search_curves.png`` when every run exists (or with ``--partial``).

    PYTHONPATH=python nohup .venv/bin/python bench/search.py > bench/results/search.log 2>&1 &
    PYTHONPATH=python .venv/bin/python bench/search.py --smoke --model-dir M   # minutes

This file is the command line; the parts live next to it: ``search_plan`` (methods, tasks,
runs, checkpoint), ``search_stats`` (curves, speedups), ``search_tuning`` (the tuning runs),
``search_remeasure`` (re-measuring the best candidates) and ``search_report`` (``search.json``,
the curves plot). Their names are importable from here too.

Only the standard library is imported at module level (tests import this file); TVM and cwm
are imported by the default tuning / re-measuring functions, which tests replace.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# re-exported: tests and older callers use these names from here
from checkpoint import JsonlCheckpoint, Lock, check_host, write_json  # noqa: E402,F401
from common import fmt_s, geomean, log, machine, today  # noqa: E402,F401  (bench/common.py, standard library only)
from search_plan import (BASELINES, COST_MODEL, METHODS, OP_CLASSES, Checkpoint, make_plan,  # noqa: E402,F401
                         op_class, pick_round_robin, plan_runs, run_id, select_tasks, split_method,
                         task_label, unknown_methods)
from search_stats import best_so_far, mean_or_none, median_curve, speedups, trials_to_reach  # noqa: E402,F401
from search_tuning import (DefaultTuner, check_model, estimate_s_per_trial, execute, model_info,  # noqa: E402,F401
                           run_record, training_data_hash)
from search_remeasure import build_candidate, remeasure, remeasure_all  # noqa: E402,F401
from search_report import markdown, plot_curves, summarize  # noqa: E402,F401

DEFAULT_OUT = os.path.join(HERE, "results", "search.json")
SMOKE_OUT = os.path.join(ROOT, "work_dirs", "search_smoke", "search.json")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=8, help="number of held-out test tasks (default 8)")
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--seeds", default="0,1,2", help="comma-separated (default 0,1,2)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)}; "
                   "<method>@<profile> searches with a named profile of cwm.tuning.settings.SEARCH_PROFILES, "
                   "e.g. cwm@wide")
    p.add_argument("--sample-efficiency-tasks", type=int, default=3,
                   help="the first K chosen tasks also get the xgb-640 vs cwm run (default 3; 0: none)")
    p.add_argument("--xgb-long-trials", type=int, default=640)
    p.add_argument("--max-cwm-trials", type=int, default=128)
    p.add_argument("--min-records", type=int, default=150, help="test tasks with fewer dataset records are skipped")
    p.add_argument("--model-dir", default=None,
                   help="CWM model (default: the shipped one, cwm.model.default_model_dir())")
    p.add_argument("--data", default=os.path.join(ROOT, "data", "dataset"))
    p.add_argument("--extra-data", action="append", default=[],
                   help="another dataset root the pre-trained XGBModel trains on too (repeatable; pass the roots "
                        "CWM's ranker was fitted on: its manifest's ranker_refit.extra_data)")
    p.add_argument("--out", default=None, help=f"result JSON (default {os.path.relpath(DEFAULT_OUT, ROOT)}); the "
                   "checkpoint <stem>_runs.jsonl and plot <stem>_curves.png go next to it")
    p.add_argument("--work-root", default=None, help="MetaSchedule work dirs (default work_dirs/search[_smoke])")
    p.add_argument("--repeats", type=int, default=20, help="interleaved re-measurement rounds (default 20)")
    p.add_argument("--min-repeat-ms", type=float, default=20.0, help="length of one re-measurement sample")
    p.add_argument("--max-runs", type=int, default=None, help="stop after this many tuning runs (resume later)")
    p.add_argument("--partial", action="store_true", help="report on the runs that exist even if some are missing")
    p.add_argument("--report-only", action="store_true", help="no tuning: re-measure and report what exists")
    p.add_argument("--allow-model-change", action="store_true",
                   help="resume although the CWM model files differ from those of the checkpointed runs")
    p.add_argument("--allow-host-change", action="store_true",
                   help="resume although the checkpoint's runs were measured on another machine")
    p.add_argument("--smoke", action="store_true", help="1 task, 8 trials, seed 0, all methods, sample "
                   "efficiency 16 vs 16 trials, out work_dirs/search_smoke/ (minutes)")
    args = p.parse_args(argv)
    if args.smoke:
        args.tasks, args.trials, args.seeds = 1, 8, "0"
        args.sample_efficiency_tasks, args.xgb_long_trials, args.max_cwm_trials = 1, 16, 16
        args.min_repeat_ms = min(args.min_repeat_ms, 10.0)
    args.out = args.out or (SMOKE_OUT if args.smoke else DEFAULT_OUT)
    args.work_root = args.work_root or os.path.join(ROOT, "work_dirs", "search_smoke" if args.smoke else "search")
    args.seed_list = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.method_list = [m.strip() for m in args.methods.split(",") if m.strip()]
    from cwm.tuning.settings import SEARCH_PROFILES

    bad = unknown_methods(args.method_list, SEARCH_PROFILES)
    if bad or not args.seed_list:
        p.error(f"unknown method(s) {bad}; choose from {METHODS}, each optionally with "
                f"@<search profile> of {sorted(SEARCH_PROFILES)}" if bad else "no seeds")
    return args


def paths(out: str) -> tuple[str, str]:
    stem = os.path.splitext(out)[0]
    return stem + "_runs.jsonl", stem + "_curves.png"


def main(argv=None, tune_fn=None, remeasure_fn=None, select_fn=None, workload_fn=None, model=None) -> int:
    """Entry point; the keyword arguments replace the tuning, re-measuring, task selection and
    workload loading (tests); ``model`` replaces the CWM model description (tests)."""
    args = parse_args(argv)
    ckpt_path, png_path = paths(args.out)
    with Lock(ckpt_path, "bench/search.py"):
        ckpt = Checkpoint(ckpt_path)
        if workload_fn is None:
            from cwm.dataset.loader import DatasetLoader

            workload_fn = DatasetLoader(args.data).workload
        uses_cwm = any(split_method(m)[0] == "cwm" for m in args.method_list)
        if model is None and uses_cwm and not args.report_only:
            model = check_model(args.model_dir)
        if not args.report_only:
            check_host(ckpt, machine(), args.allow_host_change)
        plan = make_plan(ckpt, args, select_fn or select_tasks, model)
        tasks = plan["tasks"][:args.tasks]
        names = {t["key"]: t["name"] for t in tasks}
        log(f"machine: {machine()}; loadavg {os.getloadavg()}")
        log(f"checkpoint {ckpt_path}; work dirs {args.work_root}")
        log(f"tasks ({len(tasks)}; {plan['selection']['rule']}):")
        for i, t in enumerate(tasks):
            log(f"  {i + 1}. {task_label(t)}  op={t['op']} records={t['records']} flop={t.get('flop')}")
        se_tasks = tasks[:args.sample_efficiency_tasks]
        specs = plan_runs(tasks, args.method_list, args.seed_list, args.trials, se_tasks,
                          args.xgb_long_trials, args.max_cwm_trials)
        if not args.report_only:
            tune_fn = tune_fn or DefaultTuner(args.model_dir, args.data, args.work_root, model, args.extra_data)
            extra = {"model_sha256": (model or {}).get("prior_sha256")}
            status = execute(specs, ckpt, tune_fn, workload_fn, names, args.work_root, args.max_runs, extra)
        else:
            status = {"missing": [run_id(s) for s in specs if run_id(s) not in ckpt.runs], "failed": []}
        if status["missing"] and not args.partial:
            log(f"{len(status['missing'])} run(s) missing: rerun to finish them, or pass --partial to report now")
            return 1
        # only this plan's runs are re-measured and reported
        runs = {run_id(s): ckpt.runs[run_id(s)] for s in specs if run_id(s) in ckpt.runs}
        remeasured = remeasure_all(ckpt, runs, [t["key"] for t in tasks], workload_fn, remeasure_fn or remeasure,
                                   args.repeats, args.min_repeat_ms, names)
        report = summarize(plan, runs, remeasured, args.method_list, args.seed_list, args.trials,
                           [t["key"] for t in se_tasks], args.xgb_long_trials, args.max_cwm_trials,
                           partial=bool(status["missing"]))
        report["remeasure"] = {"repeats": args.repeats, "min_repeat_ms": args.min_repeat_ms, "statistic": "median",
                               "interleaved": True, "build": "tvm.driver.build for cwm.tuning.host_target()"}
        report["runs"] = {"planned": len(specs), "done": len(runs), "missing": status["missing"]}
        report["smoke"] = bool(args.smoke)
        report["xgb_pretrained"] = {}
        for seed in args.seed_list:
            side = os.path.join(args.work_root, "xgb_pretrained", f"seed{seed}.tar.json")
            if os.path.exists(side):
                with open(side) as f:
                    report["xgb_pretrained"][str(seed)] = json.load(f)
        png = None
        try:
            png = plot_curves(report, png_path)
        except ImportError as error:
            log(f"no plot: {error}")
        report["curves_png"] = os.path.relpath(png, ROOT) if png else None
        write_json(args.out, report)
        log("\n" + markdown(report))
        log(f"wrote {args.out}" + (f" and {png}" if png else "") + (" (PARTIAL)" if report["partial"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
