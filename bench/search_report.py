"""The report of the search benchmark (bench/search.py): the ``search.json`` payload (per-task
latencies, speedups, sample efficiency, wall time per trial), the best-so-far curves plot, and
a text summary for the log.

Standard library only at module level; matplotlib is imported by :func:`plot_curves`.
"""
from __future__ import annotations

import math

from checkpoint import hosts_of
from common import machine, today
from search_plan import METHODS, run_id, split_method, task_label
from search_stats import gap_to_best_run, mean_or_none, median_curve, speedups, trials_to_reach


def summarize(plan: dict, runs: dict, remeasured: dict, methods, seeds, trials, se_keys, xgb_long_trials,
              max_cwm_trials, partial: bool) -> dict:
    """The ``search.json`` payload (see docs/search_benchmark.md for every key)."""
    tasks = {t["key"]: t for t in plan["tasks"]}

    def remeasured_us(spec):
        res = remeasured.get(run_id(spec)) or {}
        return res.get("median_us")

    table, detail = {}, {}
    for key, t in tasks.items():
        label = task_label(t)
        row, tuned, curves = {}, {}, {}
        for m in methods:
            specs = [{"task": key, "method": m, "seed": s, "trials": trials} for s in seeds]
            row[m] = [remeasured_us(s) if run_id(s) in runs else None for s in specs]
            tuned[m] = [runs[run_id(s)]["best_us"] if run_id(s) in runs else None for s in specs]
            curves[m] = median_curve([runs[run_id(s)]["curve"] for s in specs if run_id(s) in runs])
        table[label] = row
        detail[label] = {"key": key, "name": t["name"], "op": t["op"], "dataset_records": t["records"],
                         "flop": t.get("flop"), "tuning_best_us": tuned, "median_curve_us": curves}
    geo, spread = speedups(table, seeds, methods)

    sample_eff = {}
    for key in se_keys:
        t = tasks[key]
        xs = {"task": key, "method": "xgb", "seed": seeds[0], "trials": xgb_long_trials}
        cs = {"task": key, "method": "cwm", "seed": seeds[0], "trials": max_cwm_trials}
        x, c = runs.get(run_id(xs)), runs.get(run_id(cs))
        entry = {"xgb_640_best_us": x["best_us"] if x else None,
                 "cwm_trials_to_reach": trials_to_reach(c["curve"], x["best_us"]) if (x and c) else None,
                 "xgb_trials": xgb_long_trials, "cwm_max_trials": max_cwm_trials, "seed": seeds[0],
                 "cwm_best_us": c["best_us"] if c else None,
                 "xgb_640_best_remeasured_us": remeasured_us(xs) if x else None,
                 "cwm_best_remeasured_us": remeasured_us(cs) if c else None,
                 "xgb_curve_us": x["curve"] if x else None, "cwm_curve_us": c["curve"] if c else None}
        if x and c:
            entry["xgb_trials_to_own_best"] = trials_to_reach(x["curve"], x["best_us"])
        sample_eff[task_label(t)] = entry

    wall = {}
    for m in methods:
        rs = [r for r in runs.values() if r["method"] == m and r.get("n_records")]
        n = sum(r["n_records"] for r in rs)
        if n:
            wall[m] = {"runs": len(rs), "trials": n,
                       **{f"{k}_per_trial": sum(r["timing"].get(k, 0.0) for r in rs) / n
                          for k in ("total_s", "search_s", "cost_model_s", "build_s", "run_s")}}
    return {"trials": trials, "seeds": list(seeds), "methods": list(methods), "tasks": table,
            "geomean_speedup": geo, "geomean_speedup_spread": spread,
            "gap_to_best_run": gap_to_best_run(table, methods), "sample_efficiency": sample_eff,
            "wall_per_trial_s": wall, "task_detail": detail, "partial": partial,
            "selection": plan.get("selection"), "model": plan.get("model"),
            "machine": hosts_of(runs.values()) or machine(), "date": today()}


def plot_curves(report: dict, path: str) -> str | None:
    """``search_curves.png``: best-so-far latency vs trial (median over seeds), one subplot per
    task; plus, if there are sample-efficiency runs, one subplot per such task (xgb 640 vs cwm)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {m: f"C{i}" for i, m in enumerate(METHODS)}
    colors.update({m: colors.get(split_method(m)[0]) for m in report["methods"]})
    panels = [(d["median_curve_us"], None, f"{label.split('/')[0]}") for label, d in report["task_detail"].items()]
    panels += [({"xgb": e["xgb_curve_us"] or [], "cwm": e["cwm_curve_us"] or []}, e["xgb_640_best_us"],
                f"sample eff. (seed {e['seed']}): {label.split('/')[0]}")
               for label, e in report["sample_efficiency"].items()]
    if not panels:
        return None
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (curves, target, title) in zip(axes.flat, panels):
        for m, curve in curves.items():
            pts = [(i + 1, y) for i, y in enumerate(curve) if y is not None]
            if pts:
                label = m if target is None else f"{m} ({len(curve)} trials)"
                ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=label, color=colors.get(m),
                        linestyle="--" if split_method(m)[1] else "-")
        if target is not None:
            ax.axhline(target, color=colors["xgb"], linestyle=":", linewidth=1)
        ax.set_title(title if len(title) < 48 else title[:45] + "...", fontsize=8)
        ax.set_xlabel("trial", fontsize=8)
        ax.set_ylabel("best so far (us)", fontsize=8)
        ax.set_yscale("log")
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"best-so-far latency, median over seeds {report['seeds']} (tuning measurements)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def markdown(report: dict) -> str:
    """A short text summary for the log (bench/report.py renders the README table)."""
    lines = [f"geomean speedup (baseline / cwm latency, >1 = cwm faster): "
             + ", ".join(f"{k} {v:.3f}" if v else f"{k} n/a" for k, v in report["geomean_speedup"].items())]
    for k, s in report["geomean_speedup_spread"].items():
        lines.append(f"  {k}: per seed {s['per_seed']} over {s['n_tasks']} tasks")
    lines.append("mean latency / the task's fastest run of any method (geomean): " + ", ".join(
        f"{m} {g:.3f}" for m, g in report["gap_to_best_run"].items() if g))
    for label, row in report["tasks"].items():
        lines.append(f"  {label}: " + ", ".join(
            f"{m} {mean_or_none(v):.1f}" if mean_or_none(v) is not None else f"{m} n/a" for m, v in row.items()))
    for label, e in report["sample_efficiency"].items():
        lines.append(f"  sample efficiency {label}: xgb@{e['xgb_trials']} {e['xgb_640_best_us']} us; cwm reaches it "
                     f"at trial {e['cwm_trials_to_reach']} (cwm best {e['cwm_best_us']} us in {e['cwm_max_trials']})")
    for m, w in report["wall_per_trial_s"].items():
        lines.append(f"  wall per trial {m}: {w['total_s_per_trial']:.2f} s")
    return "\n".join(lines)
