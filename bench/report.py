"""Regenerate the benchmark tables in README.md from bench/results/*.json.

The README holds them between ``<!-- bench:begin -->`` and ``<!-- bench:end -->``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
README = os.path.join(HERE, "..", "README.md")


def _load(name):
    path = os.path.join(HERE, "results", name)
    return json.load(open(path)) if os.path.exists(path) else None


def trace_features_table(r) -> list[str]:
    t = r["traces_per_s"]
    imp = r.get("import_tensor_intrin_s") or {}
    return [
        f"**Trace featurisation** (`bench/trace_features.py`; {r['machine']}; {r['date']}): traces/s, one thread each",
        "",
        "| batch | native (C++) | reference (Python) | native ÷ reference |",
        "|---|---|---|---|",
        *[f"| {b} | {t['native'][b]:,.0f} | {t['reference'][b]:,.0f} | {t['native'][b] / t['reference'][b]:.1f}× |"
          for b in ("1", "1024")],
        "",
        f"`import tvm.s_tir.tensor_intrin` in a fresh process: {imp.get('before')} s stock → "
        f"{imp.get('after')} s with `cwm.tvm_patch`.",
        "",
    ]


def fast_tuning_table(r) -> list[str]:
    rows = r.get("tuning", [])
    if not rows:
        return []
    m = r.get("machine", {})
    mach = m if isinstance(m, str) else m.get("description") or f"{m.get('cpu')}, {m.get('cores')} cores"
    out = [f"**Tuning on this machine** (`bench/fast_tuning.py`; {mach}; {r.get('date')}): wall time of "
           "MetaSchedule tuning per configuration",
           "", "| workload | config | trials | tuning wall s | valid / records | best µs | cut off |",
           "|---|---|---|---|---|---|---|"]
    for x in rows:
        wall = x.get("tune_s") if x.get("tune_s") is not None else x.get("process_s")
        out.append(f"| {x['workload']} | {x['config']} | {x['trials']} | {wall} | {x['n_valid']} / {x['n_records']} "
                   f"| {x['best_us']} | {'yes, at ' + str(x['timeout_s']) + ' s' if x.get('cut_off') else 'no'} |")
    return out + [""]


def _us(values) -> str:
    xs = [v for v in values or [] if v is not None]
    return f"{sum(xs) / len(xs):,.1f}" if xs else "n/a"


def _head(title: str, script: str, r, details: str, speedup: str, parts) -> list[str]:
    """How the tables of the resumable benchmarks start: ``**title** (`script`; machine; date[; PARTIAL]):
    details``, then the sentence ``speedup: <parts>`` (the geomean speedups)."""
    return [f"**{title}** (`{script}`; {r.get('machine')}; {r.get('date')}"
            f"{'; PARTIAL' if r.get('partial') else ''}): {details}", "", f"{speedup}: " + ", ".join(parts), ""]


def search_table(r) -> list[str]:
    """``bench/search.py``: final best latency of CWM vs the baselines, sample efficiency, wall time."""
    methods = r.get("methods") or ["cwm", "xgb", "xgb_pretrained", "random"]
    rm = r.get("remeasure") or {}
    geo, spread = r.get("geomean_speedup") or {}, r.get("geomean_speedup_spread") or {}
    parts = []
    for name, value in geo.items():
        s = spread.get(name) or {}
        rng = f" (per seed {s['min']:.2f}–{s['max']:.2f})" if s.get("min") is not None else ""
        label = f"vs {name.removeprefix('cwm_vs_')}" if name.startswith("cwm_vs_") else name.replace("_vs_", " vs ")
        parts.append(f"{label} **{value:.2f}×**{rng}" if value else f"{label} n/a")
    out = _head("Search on held-out tasks", "bench/search.py", r,
                f"{len(r.get('tasks', {}))} test tasks × seeds {r.get('seeds')} × {r.get('trials')} trials; CWM model "
                f"`{((r.get('model') or {}).get('prior_sha256') or '?')[:12]}`; each "
                f"run's best candidate re-measured in one process, interleaved, median of {rm.get('repeats', '?')} "
                "rounds; µs = mean over seeds",
                "Geomean speedup of CWM (baseline latency ÷ CWM latency, > 1: CWM faster)", parts)
    from search_stats import gap_to_best_run

    gaps = r.get("gap_to_best_run") or gap_to_best_run(r.get("tasks", {}), methods)
    if any(gaps.values()):
        out += ["Mean latency ÷ the task's fastest run of any method and seed, geomean over tasks (the ratio "
                "against a baseline cannot pass the baseline's figure unless runs beat every run here): "
                + ", ".join(f"{m} {g:.3f}" for m, g in gaps.items() if g), ""]
    out += ["| task | op | " + " | ".join(f"{m} µs" for m in methods) + " |", "|---|---|" + "---|" * len(methods)]
    detail = r.get("task_detail") or {}
    for label, row in r.get("tasks", {}).items():
        name = label.split("/")[0]
        out.append(f"| {name} | {detail.get(label, {}).get('op', '')} | "
                   + " | ".join(_us(row.get(m)) for m in methods) + " |")
    se = r.get("sample_efficiency") or {}
    if se:
        e0 = next(iter(se.values()))
        out += ["", f"Sample efficiency (seed {e0.get('seed')}, tuning measurements): trials CWM needs to reach the "
                    f"best latency of MetaSchedule's XGBModel after {e0.get('xgb_trials')} trials", "",
                f"| task | xgb best @{e0.get('xgb_trials')} µs | CWM trials to reach it "
                f"(of {e0.get('cwm_max_trials')}) | CWM best @{e0.get('cwm_max_trials')} µs |", "|---|---|---|---|"]
        for label, e in se.items():
            reach = e.get("cwm_trials_to_reach")
            out.append(f"| {label.split('/')[0]} | {_us([e.get('xgb_640_best_us')])} | "
                       f"{reach if reach is not None else 'not reached'} | {_us([e.get('cwm_best_us')])} |")
    wall = r.get("wall_per_trial_s") or {}
    if wall:
        out += ["", "| method | wall s / trial | search | cost model | build | run |", "|---|---|---|---|---|---|"]
        for m, w in wall.items():
            cols = ("total", "search", "cost_model", "build", "run")
            out.append(f"| {m} | " + " | ".join(f"{w[c + '_s_per_trial']:.2f}" for c in cols) + " |")
    if r.get("curves_png"):
        out += ["", f"![tuning curves]({r['curves_png']})"]
    return out + [""]


E2E_METHODS = (("cwm", "cwm"), ("torch_eager", "PyTorch eager"), ("torch_compile", "torch.compile"),
               ("onnxruntime", "ONNX Runtime"), ("tvm_ms_xgb", "TVM MetaSchedule (XGB)"),
               ("tvm_relax_pipeline", "TVM static_shape_tuning_pipeline"), ("cwm_unpacked", "cwm, weights not packed"),
               ("cwm_gradient", "cwm, gradient task scheduler"), ("cwm_round_robin", "cwm, round-robin"))
#: the tuning seconds shown per compiled method, and their column titles
E2E_TUNING = (("cwm", "cwm tuning s"), ("tvm_ms_xgb", "XGB tuning s"), ("tvm_relax_pipeline", "TVM pipeline tuning s"),
              ("cwm_unpacked", "unpacked tuning s"), ("cwm_gradient", "gradient tuning s"),
              ("cwm_round_robin", "round-robin tuning s"))


def e2e_table(r) -> list[str]:
    """``bench/e2e.py``: end-to-end latency of the zoo networks, cwm vs PyTorch, ORT and TVM MetaSchedule."""
    geo = r.get("geomean_speedup") or {}
    ran = set(r.get("methods") or [m for m, _ in E2E_METHODS[:5]])
    methods = [(k, label) for k, label in E2E_METHODS if k in ran]
    tuning = [(k, label) for k, label in E2E_TUNING if k in ran]
    parts = []
    for key, label in methods[1:]:
        value = geo.get(f"vs_{key}")
        parts.append(f"vs {label} **{value:.2f}×**" if value else f"vs {label} n/a")
    budget = next((b for row in (r.get("networks") or {}).values() for b in (row.get("budget_total") or {}).values()
                   if b), None)
    out = _head("End-to-end latency", "bench/e2e.py", r,
                f"batch 1, ms, median of {r.get('runs')} interleaved rounds, {r.get('threads')} threads for every "
                f"method; every tuned method at the same budget, {r.get('trials_per_task')} trials × tasks"
                + (" (budget_total per network in the JSON)" if budget else "")
                + "; max rel err = max|y − y_PyTorch| / max|y_PyTorch| of cwm",
                "Geomean speedup of cwm (other ÷ cwm latency, > 1: cwm faster)", parts)
    out += ["| network | tasks | " + " | ".join(f"{label} ms" for _, label in methods)
            + "".join(f" | {label}" for _, label in tuning) + " | max rel err |",
            "|---|---|" + "---|" * (len(methods) + len(tuning) + 1)]

    def ms(row, key):
        value = row.get(f"{key}_ms")
        if value is not None:
            return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:,.1f}"
        return "failed" if (row.get("errors") or {}).get(key) else "n/a"

    def secs(value):
        return f"{value:,.0f}" if value is not None else "n/a"

    for net, row in (r.get("networks") or {}).items():
        err = (row.get("max_rel_err") or {}).get("cwm")
        by_method = dict(row.get("tuning_s_by_method") or {})
        by_method.setdefault("cwm", row.get("tuning_s"))
        by_method.setdefault("tvm_ms_xgb", row.get("tvm_ms_xgb_tuning_s"))
        out.append(f"| {net} | {row.get('tasks') if row.get('tasks') is not None else 'n/a'} | "
                   + " | ".join(ms(row, key) for key, _ in methods)
                   + "".join(f" | {secs(by_method.get(key))}" for key, _ in tuning) + " | "
                   + (f"{err:.1e}" if err is not None else "n/a") + " |")
    days = sorted({row["measured_at"][:10] for row in (r.get("networks") or {}).values() if row.get("measured_at")})
    if len(days) > 1:  # a network added later was measured in a run of its own, on the same host kind
        out += ["", "Measured on " + ", ".join(
            f"{day} ({', '.join(n for n, row in r['networks'].items() if (row.get('measured_at') or '')[:10] == day)})"
            for day in days) + "; each network's methods are timed side by side in one run, so its ratios "
            "hold, while the geomean spans the runs."]
    failed = {net: e for net, row in (r.get("networks") or {}).items()
              for k, e in (row.get("errors") or {}).items() if k == "torch_compile"}
    if failed:
        out += ["", "torch.compile failed on " + "; ".join(f"{net} (`{e.splitlines()[0][:120]}`)"
                                                            for net, e in failed.items())]
    return out + [""]


def breakdown_table(r) -> list[str]:
    """``bench/e2e_breakdown.py``: a compiled network's kernel time by category against ORT's operators."""
    label = f", {r['label']}" if r.get("label") else ""
    out = [f"**Where the time goes, {r['net']}{label}** (`bench/e2e_breakdown.py`; {r['machine']}; {r['date']}): µs per "
           "forward pass; cwm = each tuned kernel's best latency alone × its calls (from the artifact), ONNX Runtime "
           f"= its profiler's kernel times, {r['runs']} runs; artifact `{r['artifact']}`", "",
           "| category | cwm µs | ONNX Runtime µs |", "|---|---|---|"]
    for cat, v in r["by_category_us"].items():
        out.append(f"| {cat} | {v['cwm'] or 0:,.0f} | {v['onnxruntime'] or 0:,.0f} |")
    out.append(f"| **sum** | {r['cwm_kernel_sum_us']:,.0f} | {r['ort_operator_sum_us']:,.0f} |")
    return out + [""]


#: "action features" = the action statistics and, from model v4 on, the trace structure (decision 44)
RANKING_ROWS = (("cwm", "CWM (rollout ẑ_T − z_0 + action features; centred on the task's design space from "
                         "2026-12-04, its µs then include drawing that reference; from 2026-12-05 blended with "
                         "its sequence head, decision 71)"),
                ("cwm_ranker_only", "CWM's ranker alone (the shipped model without its sequence head)"),
                ("ms_xgb", "MetaSchedule XGBModel, trained offline"),
                ("no_transition", "no transition (E(s_0) + action features)"),
                ("static_final", "static final state (E(s_T) − E(s_0) + action features)"),
                ("sequence_only", "sequence only (TLP-style)"), ("random", "random"))


def ranking_table(r) -> list[str]:
    """``cwm eval``: offline ranking quality on the held-out test tasks."""
    m = r["models"]
    per_task = all("top1_task_mean" in x for x in m.values())  # runs before 2026-12-03 lack it
    out = [f"**Ranking on held-out tasks** (`cwm eval`; {r['test_tasks']} test tasks of MobileNetV2 / OPT-125m; "
           f"{r['machine']}; {r['date']}"
           + (f"; every model trained on {r['train_tasks']} training tasks, those of "
              f"{', '.join(['data/dataset', *r['extra_data']])}" if r.get("extra_data") else "")
           + "). Top-k = TenSet's score (1.0 = the model's top-k holds the best; weighted by each task's "
           "latency × count, so the slowest tasks decide it)"
           + ("; per-task top-1 = each task's best ÷ its pick, averaged with equal say" if per_task else ""), ""]
    out += (["| model | top-1 | per-task top-1 | top-5 | pairwise acc. | NDCG@10 | µs / candidate |",
             "|---|---|---|---|---|---|---|"] if per_task else
            ["| model | top-1 | top-5 | pairwise acc. | NDCG@10 | µs / candidate |", "|---|---|---|---|---|---|"])
    shipped = os.path.join(ROOT, "python", "cwm", "default_model", "manifest.json")
    if os.path.isfile(shipped) and os.path.abspath(r.get("model", "")) == os.path.dirname(shipped):
        from cwm.model.fingerprint import model_fingerprint

        # runs before 2026-12-02 recorded the manifest's hash alone; later ones the weights' too
        legacy = hashlib.sha256(open(shipped, "rb").read()).hexdigest()[:12]
        if r.get("model_fingerprint") not in (legacy, model_fingerprint(os.path.dirname(shipped))):
            out[0] += (" — **the shipped model has changed since this run** (its manifest is not the one "
                       "evaluated; docs/status.md says what changed): rerun `cwm eval`")
    if r.get("skipped"):
        out[0] += f"; left out of this run: {', '.join(r['skipped'])} (`cwm eval --skip`)"
    if r.get("timed_under_load"):
        out[0] += f"; **the µs column was timed beside another job** ({r['timed_under_load']}): read it as an upper bound"
    for key, label in RANKING_ROWS:
        if key in m:
            x = m[key]
            task_mean = f" {x['top1_task_mean']:.3f} |" if per_task else ""
            out.append(f"| {label} | {x['top1']:.3f} |{task_mean} {x['top5']:.3f} | {x['pairwise_acc']:.3f} | "
                       f"{x['ndcg10']:.3f} | {x['score_us_per_candidate']:,.1f} |")
    return out + [""]


def scoring_table(r) -> list[str]:
    """``bench/scoring.py``: candidates scored per second, native vs reference vs XGBModel.predict."""
    c, ro = r["candidates_per_s"], r.get("rollout_per_s", {})
    batches = sorted(c["native"], key=int)
    out = [f"**Scoring throughput** (`bench/scoring.py`; {r['machine']}; {r['date']}): candidates/s, one thread"
           + (f"; a centring model also draws its reference once per task ({r['reference_once_s']} s, decision 62)"
              if r.get("reference_once_s") is not None else ""),
           "", "| batch | native | Python reference | MetaSchedule XGBModel.predict | native ÷ XGBModel | "
           "rollout native ÷ reference |", "|---|---|---|---|---|---|"]
    for b in batches:
        roll_ratio = r.get("ratios", {}).get("rollout_native_vs_reference", {}).get(b)
        if roll_ratio is None and b in ro.get("native", {}) and b in ro.get("reference", {}):
            roll_ratio = ro["native"][b] / ro["reference"][b]
        roll = f"{roll_ratio:.1f}×" if roll_ratio is not None else "n/a"
        ratio = r.get("ratios", {}).get("native_vs_ms_xgb", {}).get(b, c["native"][b] / c["ms_xgb"][b])
        out.append(f"| {b} | {c['native'][b]:,.0f} | {c['reference'][b]:,.0f} | {c['ms_xgb'][b]:,.0f} | "
                   f"{ratio:.1f}× | {roll} |")
    if r.get("rounds"):
        out += ["", f"Medians of {r['rounds']} interleaved windows of {r['window_s']} s a method; each ratio is the "
                    "median of the rounds' ratios."]
    stages = r.get("native_stage_us")
    if stages:
        names = list(next(iter(stages.values())))
        out += ["", "The native path by stage, µs a candidate (`tile_footprint` is part of `columns`; `score` is "
                    "the whole call):", "", "| batch | " + " | ".join(f"`{n}`" for n in names) + " |",
                "|---|" + "---|" * len(names)]
        out += [f"| {b} | " + " | ".join(f"{stages[b][n]:,.1f}" for n in names) + " |" for b in sorted(stages, key=int)]
    return out + [""]


PROBE_ROWS = (("z0", "z_0 (one value per task: all ties)"), ("zt_hat", "rollout ẑ_T - z_0"),
              ("zt_hat+stats", "rollout + action stats (CWM's ranker input)"), ("stats", "action stats alone"),
              ("et", "E(s_T) - E(s_0) of the real final program (snapshot)"), ("et+stats", "E(s_T) + stats (snapshot)"),
              ("store", "per-store features of the real s_T (snapshot ceiling)"),
              ("store+stats", "per-store features + stats (snapshot)"),
              ("store_pred", "per-store features decoded from the rollout (ridge)"),
              ("store_pred+stats", "decoded per-store features + stats"), ("z0+stats", "z_0 + stats (no transition)"))


def probe_table(r) -> list[str]:
    """``cwm probe``: task-grouped CV on the training tasks, one ranker per representation."""
    m, dec = r["representations"], r["store_decoder_std_mse"]
    out = [f"**Probe: what each representation carries** (`cwm probe`; {r['folds']}-fold task-grouped CV on "
           f"{r['tasks']} *training* tasks, {r['candidates']} candidates, ≤ {r['max_candidates_per_task']} a task; "
           f"{r.get('machine') or r.get('cpu')}; {r['date']})", "",
           "| representation | top-1 | top-5 | pairwise acc. | NDCG@10 |", "|---|---|---|---|---|"]
    for key, label in PROBE_ROWS:
        if key in m:
            x = m[key]
            out.append(f"| {label} | {x['top1']:.3f} | {x['top5']:.3f} | {x['pairwise_acc']:.3f} | {x['ndcg10']:.3f} |")
    out.append(f"\nRidge decoder of the per-store features from the rollout, standardized MSE (1.0 = the mean): "
               f"{dec['fit']:.3f} on the fitting folds, {dec['heldout']:.3f} on the held-out fold.")
    return out + [""]


#: the probe runs compared in one table: (file, grouping, fitted on)
PROBE_CV_RUNS = ((("probe_breadth_zoo_only.json",), "task-grouped, 5 folds × 3 seeds", "zoo"),
                 (("probe_breadth_with_breadth.json",), "task-grouped, 5 folds × 3 seeds", "zoo + breadth"),
                 (("probe_network.json", "probe_network_store.json"), "leave one network out", "zoo"),
                 (("probe_network_breadth.json", "probe_network_store_breadth.json"), "leave one network out",
                  "zoo + breadth"))
PROBE_CV_ROWS = (("zt_hat+stats", "CWM `[ẑ_T - z_0, S]`"), ("z0+stats", "no transition `[z_0, S]`"),
                 ("stats", "`S` alone (action stats, trace structure, hardware)"),
                 ("store_pred+stats", "per-store features decoded from the rollout (ridge) + `S`"),
                 ("store+stats", "snapshot: per-store features of the real final program + `S` (a replay; baseline)"))


def _merged(names) -> dict | None:
    """The representations of several probe runs of one configuration, as one run."""
    runs = [r for r in map(_load, names) if r]
    if not runs:
        return None
    return {**runs[0], "representations": {k: v for r in runs for k, v in r["representations"].items()}}


def probe_cv_table(_r) -> list[str]:
    """``cwm probe --ranker model``: the two CV groupings, with and without the breadth tasks."""
    runs = [(g, f, _merged(names)) for names, g, f in PROBE_CV_RUNS]
    runs = [(g, f, r) for g, f, r in runs if r]
    first = runs[0][2]
    out = [f"**Ranker inputs under two CV groupings** (`cwm probe --ranker model`, the shipped ranker config, on the "
           f"{first['tasks']} *training* tasks of `data/dataset`; breadth = the measured generated workloads of "
           f"`data/dataset_breadth`, fitted on, never validated; {first.get('cpu')}; "
           f"{', '.join(sorted({r['date'] for _, _, r in runs}))}). top-1 / per-task top-1 / pairwise", "",
           "| ranker input | " + " | ".join(f"{g}, {f}" for g, f, _ in runs) + " |", "|---|" + "---|" * len(runs)]
    for key, label in PROBE_CV_ROWS:
        cells = []
        for _, _, r in runs:
            x = r["representations"].get(key)
            cells.append(f"{x['top1']:.3f} / {x['top1_task_mean']:.3f} / {x['pairwise_acc']:.3f}" if x else "–")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out + [""]


def _cv_row(label: str, m: dict) -> str:
    """One ranker input's row of a network-out CV table: top-1 / per-task top-1 / pairwise."""
    return f"| {label} | {m['top1']:.3f} | {m['top1_task_mean']:.3f} | {m['pairwise_acc']:.3f} |"


def rank_transition_table(r) -> list[str]:
    """``cwm probe --representations zt_rank+stats,...``: the TransH fine-tuned with the ranking loss
    in each fold (decision 56), beside the shipped rollout and the no-transition input; the
    cross-fitted variant's run (``probe_network_rank_crossfit.json``) joins as a row."""
    def cfg_text(run) -> str:
        c = run.get("rank_transition") or {}
        fit = f", {c['cross_fit']}-way cross-fit" if c.get("cross_fit", 0) > 1 else ""
        return f"{c.get('epochs')} epochs, lr {c.get('lr')}, anchor {c.get('anchor_weight')}{fit}"

    rows = [("zt_hat+stats", "shipped rollout `[ẑ_T - z_0, S]`", r), ("z0+stats", "no transition `[z_0, S]`", r),
            ("zt_rank+stats", f"rank-trained rollout ({cfg_text(r)})", r)]
    extra = os.path.join(HERE, "results", "probe_network_rank_crossfit.json")
    if os.path.isfile(extra):
        x = json.load(open(extra))
        rows.append(("zt_rank+stats", f"rank-trained rollout ({cfg_text(x)})", x))
    out = [f"**TransH fine-tuned with the ranking loss, trained inside each fold** (`cwm probe --ranker model "
           f"--group-by network --fit-only-data data/dataset_breadth`, decision 56; {r['tasks']} training tasks "
           f"validated, {r['fit_only_tasks']} breadth tasks fitted on; {r.get('cpu')}; {r['date']})", "",
           "| ranker input | top-1 | per-task top-1 | pairwise |", "|---|---|---|---|"]
    for key, label, run in rows:
        m = run["representations"].get(key)
        if m:
            out.append(_cv_row(label, m))
    return out + [""]


def ranker_seeds_table(r) -> list[str]:
    """``cwm probe --ranker-seeds``: the shipped ranker config with one tree a round and with four
    (decision 61), each fitted once per ranker seed on the same folds; the mean and the per-seed
    latency-weighted top-1."""
    out = [f"**Bagging the ranker, over {len(r['ranker_seeds'])} ranker seeds** (`cwm probe --ranker model "
           f"--representations zt_hat+stats --group-by network --fit-only-data data/dataset_breadth --ranker-seeds "
           f"{','.join(map(str, r['ranker_seeds']))} --ranker-set parallel_trees=N`, decision 61; {r['tasks']} "
           f"training tasks validated, {r['fit_only_tasks']} breadth tasks fitted on; {r.get('cpu')}; {r['date']})",
           "", "| trees a round | top-1 | per-task top-1 | pairwise | top-1 by seed |", "|---|---|---|---|---|"]
    for pt in (1, 4):
        path = os.path.join(HERE, "results", f"probe_network_ranker_seeds_pt{pt}.json")
        if not os.path.isfile(path):
            continue
        run = json.load(open(path))
        m = run["representations"]["zt_hat+stats"]
        seeds = ", ".join(f"{x['zt_hat+stats']['top1']:.2f}" for x in run.get("per_fold_seed", []))
        out.append(_cv_row(f"{pt}" + (" (shipped)" if pt == 4 else ""), m) + f" {seeds} |")
    return out + [""]


def centring_table(r) -> list[str]:
    """``cwm probe --centring``: the ranker's input as is, less a per-task reference, or both side by
    side (decision 62), over the same 3 ranker seeds; the uncentred row is the first 3 seeds of
    ``probe_network_ranker_seeds_pt4.json``."""
    seeds = r["ranker_seeds"]
    out = [f"**Centring the ranker's input** (`cwm probe --ranker model --representations zt_hat+stats --group-by "
           f"network --fit-only-data data/dataset_breadth --ranker-seeds {','.join(map(str, seeds))} --centring C "
           f"[--reference-samples 32]`, decision 62; {r['tasks']} training tasks validated; {r.get('cpu')}; "
           f"{r['date']})", "", "| ranker input | top-1 | per-task top-1 | pairwise | pairwise by seed |",
           "|---|---|---|---|---|"]
    base = _load("probe_network_ranker_seeds_pt4.json")
    if base and base.get("ranker_seeds", [])[:len(seeds)] == seeds:
        runs = [x["zt_hat+stats"] for x in base["per_fold_seed"][:len(seeds)]]
        mean = {m: sum(x[m] for x in runs) / len(runs) for m in ("top1", "top1_task_mean", "pairwise_acc")}
        out.append(_cv_row("x (the rows alone)", mean) + " " + ", ".join(f"{x['pairwise_acc']:.3f}" for x in runs) + " |")
    for name, label in (("probe_centring_centred.json", "x − mean of the task's scored candidates"),
                        ("probe_centring_both.json", "[x, x − mean of the task's scored candidates]"),
                        ("probe_centring_design_space.json", "[x, x − mean of 32 design-space samples] (shipped)")):
        run = _load(name)
        if run:
            per = ", ".join(f"{x['zt_hat+stats']['pairwise_acc']:.3f}" for x in run.get("per_fold_seed", []))
            out.append(_cv_row(label, run["representations"]["zt_hat+stats"]) + f" {per} |")
    return out + [""]


def state_transition_table(r) -> list[str]:
    """``cwm probe --model-dir`` on model copies whose TransH is the state-dependent form trained on
    the corpus (decision 57), beside the shipped rollout on the same fitting data
    (``probe_network_breadth300.json``); each run's no-transition row is the same encoder's."""
    runs = [("probe_network_breadth300.json", "zt_hat+stats", "shipped rollout `[ẑ_T - z_0, S]`")]
    runs += [(f"probe_network_state_h{h}.json", "zt_hat+stats",
              f"state-dependent TransH, hidden {h}, trained on the corpus") for h in (64, 256)]
    runs += [("probe_network_state_h256_rank.json", "zt_rank+stats",
              "the hidden-256 one, then fine-tuned with the ranking loss in each fold (anchor 5, 3-way cross-fit)")]
    runs += [("probe_network_state_h256.json", "z0+stats", "no transition `[z_0, S]`")]
    out = [f"**The state-dependent TransH trained on the unmeasured corpus, as CWM's ranker input** (`cwm probe "
           f"--ranker model --group-by network --fit-only-data data/dataset_breadth --model-dir DIR`, decision 57; "
           f"{r['tasks']} training tasks validated, {r['fit_only_tasks']} breadth tasks fitted on; {r.get('cpu')}; "
           f"{r['date']})", "", "| ranker input | top-1 | per-task top-1 | pairwise |", "|---|---|---|---|"]
    for name, key, label in runs:
        path = os.path.join(HERE, "results", name)
        m = json.load(open(path))["representations"].get(key) if os.path.isfile(path) else None
        if m:
            out.append(_cv_row(label, m))
    return out + [""]


def adapt_sim_table(r) -> list[str]:
    """``bench/adapt_sim.py``: search's measure-and-refit loop replayed on the training tasks' pools;
    the run with another schedule (``adapt_sim_r2.json``) joins as columns."""
    runs = [r]
    other = os.path.join(HERE, "results", "adapt_sim_r2.json")
    if os.path.isfile(other):
        runs.append(json.load(open(other)))
    heads = [f"{x['per_round']} a round: best found after {', '.join(map(str, x['measured_after_round']))} measured"
             for x in runs]
    out = [f"**Online adaptation replayed on the training tasks** (`bench/adapt_sim.py`, decision 58; the probe's "
           f"≤ 64 measured candidates of {r['task_rows']['default']} zoo training-task rows, the prior fitted without "
           f"the task's network; mean of pool best / best found; {r.get('machine', 'machine not recorded')}; "
           f"{r['date']})", "",
           "| variant | " + " | ".join(heads) + " |", "|---" * (len(runs) + 1) + "|"]
    for name in r["mean_best_ratio"]:
        cells = [" / ".join(f"{v:.3f}" for v in x["mean_best_ratio"].get(name, [])) for x in runs]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out + [""]


def _replay_table(r, title: str, baseline: str, row_label: str) -> list[str]:
    """A replay of search's measure-and-refit loop on the training tasks (``bench/adapt_blend.py``'s
    setting): mean pool best / best found per round, and each variant's paired difference from
    ``baseline`` over rounds 2-4 with its 95 % interval."""
    base = r["mean_best_ratio"][baseline]
    out = [f"**{title}** ({r['tasks']} zoo training tasks, the pool every valid dataset candidate, the prior the "
           f"search benches' fold ranker, {r['per_round']} measured a round; mean of pool best / best found, and "
           f"the paired difference from the {baseline} with its 95 % interval; {r['machine']}; {r['date']})", "",
           f"| {row_label} | " + " | ".join(f"after {n}" for n in r["measured_after_round"])
           + " | − shipped, rounds 2-4 |",
           "|---" * (len(base) + 2) + "|"]
    for name, curve in r["mean_best_ratio"].items():
        diff = r["vs_baseline_mean_ci95"].get(name)
        gap = ("—" if diff is None else
               ", ".join(f"{m:+.3f} ({lo:+.3f}, {hi:+.3f})" for m, lo, hi in diff[1:]))
        out.append(f"| {name} | " + " | ".join(f"{v:.3f}" for v in curve) + f" | {gap} |")
    return out + [""]


def adapt_blend_table(r) -> list[str]:
    """``bench/adapt_blend.py``: the task models of decision 90 replayed on the training tasks."""
    return _replay_table(r, "The task model fitted on a task's own measurements, replayed on the training tasks "
                            "(`bench/adapt_blend.py`, decision 90)", "residual (shipped)", "task model")


def diverse_pick_table(r) -> list[str]:
    """``bench/diverse_pick.py``: decision 92's capped picks replayed on the training tasks."""
    return _replay_table(r, "A round that measures fewer candidates of one tiling, replayed on the training tasks "
                            "(`bench/diverse_pick.py`, decision 92; the shipped residual task model)",
                         "top by margin (shipped)", "pick")


def pair_errors_table(r) -> list[str]:
    """``bench/pair_errors.py``: the fold prior's wrong pairs on the training tasks (decision 93)."""
    groups = r["by_classes"]
    out = [f"**Where the prior's wrong pairs lie** (`bench/pair_errors.py`, decision 93; every pair of valid "
           f"candidates of {r['tasks']} zoo training tasks at least {r['min_ratio']:g}× apart, ordered by the "
           f"task's network fold prior, each task weighted equally; {r['machine']}; {r['date']})", "",
           "| which pairs | weight (tasks) | pairs | median latency ratio | ordered wrongly |", "|---|---|---|---|---|"]
    rows = (["all"] + sorted((g for g in groups if g.startswith("ratio ")), key=lambda g: float(g.split()[1].split("-")[0]))
            + sorted(g for g in groups if g.startswith("only ")))
    for g in rows:
        m = groups[g]
        out.append(f"| {g} | {m['weight']:.2f} | {m['pairs']:,} | {m['median_ratio']:.2f} | {m['wrong']:.3f} |")
    return out + [""]


def top_rerank_table(r) -> list[str]:
    """``bench/top_rerank.py``: decision 94's cascade against the fold prior on the training tasks."""
    out = [f"**A second ranker for the top of the prior's order** (`bench/top_rerank.py`, decision 94; "
           f"{r['tasks']} zoo training tasks, leave one network out; the difference from the prior with its 95 % "
           f"interval; {r['machine']}; {r['date']})", "",
           "| order | per-task top-1 | weighted top-1 | pairwise | best found in the first "
           + " / ".join(str(n) for n in r["found_after"]) + " | − prior, per-task top-1 |", "|---|---|---|---|---|---|"]
    for name, m in r["by_variant"].items():
        d = m.get("vs_prior_ci95", {}).get("top1_task_mean")
        out.append(f"| {name} | {m['top1_task_mean']:.3f} | {m['top1_weighted']:.3f} | {m['pairwise']:.3f} | "
                   + " / ".join(f"{m[f'found_{n}']:.3f}" for n in r["found_after"])
                   + (" | — |" if d is None else f" | {d[0]:+.3f} ({d[1]:+.3f}, {d[2]:+.3f}) |"))
    return out + [""]


def fold_ranker_comparison(r, title: str, source: str, fits: str) -> list[str]:
    """Fold rankers fitted in one run on two row sets (``r["by_ranker"]``, the variant with its
    paired difference): ``title`` in bold, then the bench (``source``) and what was fitted (``fits``)."""
    found = r["found_after"]
    out = [f"**{title}** ({source}; {r['tasks']} zoo training tasks, {fits}; the difference with its 95 % "
           f"interval; {r['machine']}; {r['date']})", "",
           "| fold ranker | pairwise | per-task top-1 | weighted top-1 | best found in the first "
           + " / ".join(map(str, found)) + " |", "|---|---|---|---|---|"]
    for name, m in r["by_ranker"].items():
        out.append(f"| {name} | {m['pairwise']:.4f} | {m['top1_task_mean']:.3f} | {m['top1_weighted']:.3f} | "
                   + " / ".join(f"{m[f'found_{n}']:.3f}" for n in found) + " |")
        d = m.get("vs_baseline_ci95")
        if d:
            def ci(k):
                return f"{d[k][0]:+.4f} ({d[k][1]:+.4f}, {d[k][2]:+.4f})"

            out.append(f"| difference | {ci('pairwise')} | {ci('top1_task_mean')} | | "
                       + " / ".join(f"{d[f'found_{n}'][0]:+.3f}" for n in found) + " |")
    return out


def loop_tiles_table(r) -> list[str]:
    """``bench/loop_tiles.py``: the fold rankers with and without decision 95's loop-tile columns."""
    out = fold_ranker_comparison(r, "Which loop is tiled how, as ranker columns", "`bench/loop_tiles.py`, decision 95",
                                 "each network's fold ranker with and without the columns, both fitted in the run")
    swap = r.get("swap_check")
    if swap:
        out += ["", f"Two spatial splits trading factor lists change the rolled-out state by at most "
                    f"{swap['max_rollout_change']:.1e}; {swap['traces_with_identical_rows']} of {swap['traces']} "
                    "traces keep an identical ranker row."]
    return out + [""]


def capped_rollout_table(r) -> list[str]:
    """``bench/capped_rollout.py``: fold rankers on the shipped rollout and on the same weights with
    their translations capped (decision 100)."""
    source = r.get("transition")
    if isinstance(source, dict):  # --transition: a TransH trained with the cap (decision 101)
        return fold_ranker_comparison(
            r, f"A rollout that remembers, trained: a TransH trained on `{source['corpus']}` with translations "
               f"capped at {r['bound']:g}", "`bench/capped_rollout.py --transition`, decision 101",
            "each network's fold ranker on the shipped rows and on the trained transition's, both fitted in the "
            "run") + [""]
    return fold_ranker_comparison(
        r, f"A rollout that remembers: the shipped weights with translations capped at {r['bound']:g}, nothing "
           "retrained", "`bench/capped_rollout.py`, decision 100",
        "each network's fold ranker on the shipped rows and on the capped ones, both fitted in the run") + [""]


def decoded_columns_table(r) -> list[str]:
    """``bench/decoded_columns.py``: the shipped rows with a trained rollout's decoded per-store
    features beside them (decision 102)."""
    return fold_ranker_comparison(
        r, f"The rollout's decoded facts as ranker columns: {r['decoded_columns']} per-store features predicted by "
           f"a TransH trained on `{r['transition']['corpus']}` and its decoder", "`bench/decoded_columns.py`, "
           "decision 102", "each network's fold ranker on the shipped rows and on the same rows with the decoded "
           "columns, both fitted in the run") + [""]


def tile_footprint_table(r) -> list[str]:
    """``bench/tile_footprint.py``: the shipped rows with the tiled block's parallel grain and cache
    footprints beside them (decision 104)."""
    c = r["counts"]
    return fold_ranker_comparison(
        r, f"The tiled block's parallel grain and cache footprints as ranker columns ({len(r['columns'])} columns; "
           f"{c['tiled']:,} of {c['candidates']:,} candidates tiled, {c['serial_tiled_block']:,} of them with the "
           "tiled block left serial)", "`bench/tile_footprint.py`, decision 104",
        "each network's fold ranker on the shipped rows and on the same rows with the columns, both fitted in "
        "the run") + [""]


def rollout_memory_table(r) -> list[str]:
    """``bench/rollout_memory.py``: what the shipped transition's ``ẑ_T`` keeps (decision 96)."""
    bound = (r.get("transition") or {}).get("translation_bound") or 0
    source = r.get("transition_source")
    which = (f"a transition trained on `{source['corpus']}` with translations capped at {bound:g} (decision 101)"
             if source else f"the shipped weights with translations capped at {bound:g} (decision 100)" if bound else
             "the shipped transition")
    out = [f"**What the rolled-out state keeps** (`bench/rollout_memory.py`, decision 96; {r['traces_per_task']} "
           f"candidates of each of {r['tasks']} zoo training tasks, {which}; largest coordinate "
           f"change of ẑ_T, median over tasks and largest; {r['machine']}; {r['date']})", "",
           "| change | median | largest |", "|---|---|---|",
           f"| two candidates of one task (for scale) | {r['spread_median']:.3g} | |",
           f"| z_0 replaced by a random unit vector | {r['z0']['median']:.2g} | {r['z0']['max']:.2g} |"]
    for d, m in r["by_distance_from_end"].items():
        out.append(f"| one action's numbers doubled, {d} from the end | {m['median']:.2g} | {m['max']:.2g} |")
    t = r["translation_norm"]
    out += ["", f"Translation lengths |d| (the state has unit norm): 10th percentile {t['p10']:.3g}, median "
                f"{t['median']:.3g}, 90th percentile {t['p90']:.3g}."]
    return out + [""]


def seed_transfer_table(r) -> list[str]:
    """``bench/seed_transfer.py``: schedules transferred from similar training workloads, on the
    training tasks (each task's own networks left out of the library)."""
    out = []
    q = r.get("quality")
    if q:
        out += [f"**Transferred schedules on the training tasks** (`bench/seed_transfer.py --mode quality`, "
                f"decision 59; {q['tasks_with_seeds']} zoo training tasks with a library trace of their design "
                f"space, the library without the task's networks; best of the first K seeds ÷ the task's own best "
                f"of ~200 dataset records, re-measured side by side; {q['machine']}; {q['date']})", "",
                "| K seeds | geomean best seed ÷ own best | faster than own best | within 10 % |", "|---|---|---|---|"]
        for k, m in q["by_k"].items():
            out.append(f"| {k} | {m['geomean_best_seed_over_own']:.3f} | {m['faster_than_own']} | {m['within_10pct']} |")
        out.append("")
    c = r.get("choice")
    if c:
        ks = list(next(iter(c["by_order"].values())))
        out += [f"**Which seeds to measure, on the training tasks** (`bench/seed_transfer.py --mode choice "
                f"--network-out`, decision 60; {c['tasks']} zoo training tasks, each task's whole pool of transferred "
                f"candidates re-measured beside its own best; best of the K an ordering puts first ÷ the task's own "
                f"best; *network-out*: the ranker refitted without the task's network; {c['machine']}; "
                f"{c['date']})", "", "| ordering | " + " | ".join(f"K = {k}" for k in ks) + " |",
                "|---|" + "---|" * len(ks)]
        for name, by_k in c["by_order"].items():
            out.append(f"| {name} | " + " | ".join(f"{by_k[k]:.3f}" for k in ks) + " |")
        out.append("")
    sr = r.get("search")
    if sr:
        out += [f"**Seeded search on the training tasks** (`bench/seed_transfer.py --mode search`, decision 59; "
                f"CWM, 64 trials; best ÷ best of the unseeded search of the same task and seed; {sr['machine']}; "
                f"{sr['date']})", "", "| arm | pairs | geomean best ÷ unseeded | faster (> 2 %) | slower (> 2 %) |",
                "|---|---|---|---|---|"]
        for arm, m in sr["arms"].items():
            g = m["geomean_best_over_none"]
            out.append(f"| {arm} | {m['pairs']} | {g:.3f} | {m['faster']} | {m['slower']} |" if g else
                       f"| {arm} | {m['pairs']} | n/a | | |")
        out.append("")
    return out


def _paired_arm_rows(entries: dict, baseline, longer: tuple[int, ...] = ()) -> list[str]:
    """Rows ``| arm | pairs | best ÷ baseline | interval | faster / slower | at 32 | wall |`` of
    :func:`search_knobs.paired` entries, the baseline left out; with ``longer`` (trial counts past
    64), the same three columns (ratio, interval, faster / slower) at each before the wall time."""
    def cells(m) -> str:
        ci = m.get("task_bootstrap_90")
        return (f"{m['geomean_best_over_baseline']:.3f} | " + (f"{ci[0]:.3f}-{ci[1]:.3f}" if ci else "n/a")
                + f" | {m['faster']} / {m['slower']}")

    out = []
    for arm, e in entries.items():
        if arm == baseline:
            continue
        m, h = e["at_64"], e["at_32"]
        out.append(f"| {arm} | {m['pairs']} | {cells(m)} | {h['geomean_best_over_baseline']:.3f} | "
                   + "".join(f"{cells(e[f'at_{k}'])} | " for k in longer) + f"{e['wall_s_mean']:.0f} s |")
    return out


def _longer_counts(entries: dict) -> tuple[int, ...]:
    """The trial counts past 64 that :func:`search_knobs.paired` read its arms at."""
    return tuple(sorted({int(k[3:]) for e in entries.values() for k in e if k.startswith("at_") and int(k[3:]) > 64}))


def parent_temperature_table(r) -> list[str]:
    """``bench/parent_temperature.py``: how sharply CWM's scores pick mutation parents, in search on
    training tasks with network-out priors."""
    base = r["baseline_temperature"]
    out = [f"**Parent-sampling temperature on the training tasks** (`bench/parent_temperature.py`, decision 75; "
           f"CWM's default search, 64 trials, score `exp(margin / T)`, each task's prior refitted without its "
           f"network; best ÷ best at T = {base:g} of the same task and seed; 90 % interval: whole tasks "
           f"resampled; {r['machine']}; {r['date']})", "",
           "| T | pairs | best ÷ baseline, 64 trials | 90 % interval | faster / slower (> 2 %) | at 32 trials | wall a run |",
           "|---|---|---|---|---|---|---|"]
    entries = r["temperatures"]
    return out + _paired_arm_rows(entries, next(t for t in entries if float(t) == base)) + [""]


def search_knobs_table(r) -> list[str]:
    """``bench/search_knobs.py``: CWM's search knobs, in search on training tasks with network-out priors."""
    base = r["baseline_arm"]
    longer = _longer_counts(r["arms"])
    out = [f"**CWM's search knobs on the training tasks** (`bench/search_knobs.py`; CWM's default search "
           f"(`{base}`) with one knob changed, {max((64,) + longer)} trials, each task's prior refitted without its "
           f"network; best ÷ best of `{base}` of the same task and seed (`{base}`: "
           f"{r['arms'][base]['wall_s_mean']:.0f} s a run); 90 % interval: whole tasks resampled; "
           f"{r['machine']}; {r['date']})", "",
           "| arm | pairs | best ÷ baseline, 64 trials | 90 % interval | faster / slower (> 2 %) | at 32 trials | "
           + "".join(f"at {k} trials | 90 % interval | faster / slower | " for k in longer) + "wall a run |",
           "|---|---|---|---|---|---|" + "---|" * (3 * len(longer)) + "---|"]
    return out + _paired_arm_rows(r["arms"], base, longer) + [""]


def dagger_offline_table(r) -> list[str]:
    """``bench/dagger_offline.py``: the fold rankers with and without extra roots' records (CWM's
    own searches, the control), each ranking every set."""
    def described(name, m) -> str:
        cfg = m.get("collect_config") or {}
        guide = "CWM" if cfg.get("source") == "cwm_search" else "`XGBModel`"
        return (f"`{name}`: {m.get('finished_tasks')} tasks, {m.get('records')} records of {cfg.get('trials')}-trial "
                f"{guide}-guided searches measured on {m.get('cpu_model')}")

    extras = "; ".join(described(n, m) for n, m in r["extra_roots"].items())
    out = [f"**The ranker fitted also on CWM's own searches, and the control** (`bench/dagger_offline.py`, decisions "
           f"83-84; leave one network out over the zoo training tasks of {', '.join(r['networks'])}; {extras}; `zoo`: "
           f"the left-out tasks' records of the shipped roots (AMD EPYC); clear pairs: at least "
           f"{round((r['clear_ratio'] - 1) * 100)} % apart; spread: the median task's median latency ÷ its best; "
           f"{r['machine']}; {r['date']})", "",
           "| ranker fitted on | ranks | task-folds (a task of two networks: two) | top-1 | per-task top-1 | top-5 | "
           "pairwise | pairwise, clear pairs | spread |",
           "|---|---|---|---|---|---|---|---|---|"]
    for name, entry in r["results"].items():
        for ranks, m in entry["pooled"].items():
            out.append(f"| {name.replace('_', ' ')} | {ranks} | {entry['tasks'][ranks]} | {m['top1']:.3f} | "
                       f"{m['top1_task_mean']:.3f} | {m['top5']:.3f} | {m['pairwise_acc']:.4f} | "
                       f"{m['pairwise_clear']:.4f} | {m['spread']:.2f} |")
    return out + [""]


def pessimistic_offline_table(r) -> list[str]:
    """``bench/pessimistic_offline.py``: the single fold ranker and the bootstrap ensembles'
    ``mean - k * spread`` scores, each ranking every set."""
    out = [f"**A pessimistic score, offline** (`bench/pessimistic_offline.py`, decision 85; leave one network out "
           f"over the zoo training tasks of {', '.join(r['networks'])}; per fold {r['bootstrap']} rankers fitted on "
           f"bootstrap samples of the other networks' tasks, scored as their mean less k × their spread, each "
           f"ranker's margins centred over the task's candidates; `single`: the one fold ranker the search bench "
           f"uses; sets: `zoo` (the shipped roots' records, AMD EPYC) and "
           f"{', '.join(f'`{n}`' for n in r['extra_roots'])}; cells: pairwise / pairs ≥ 10 % apart / top-1 / "
           f"per-task top-1; {r['machine']}; {r['date']})", ""]
    sets = list(next(iter(r["results"].values()))["pooled"])
    out += ["| score | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    for name, entry in r["results"].items():
        cells = [f"{m['pairwise_acc']:.3f} / {m['pairwise_clear']:.3f} / {m['top1']:.3f} / {m['top1_task_mean']:.3f}"
                 for m in (entry["pooled"][s] for s in sets)]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out + [""]


def label_noise_table(r) -> list[str]:
    """``bench/label_noise.py``: one measurement of the candidates ranking another, the dataset's
    labels ranking this host's, and the shipped model on all three."""
    sp = r["spread"]
    out = [f"**How well one measurement ranks another** (`bench/label_noise.py`; {sp['tasks']} {r['split']} tasks of "
           f"`{r['data']}`, a seeded {r['candidates_per_task']} of each task's candidates, {sp['candidates']} in all, "
           f"each measured twice on this host as the labels were (repeat {r['protocol']['repeat']}, "
           f"min_repeat_ms {r['protocol']['min_repeat_ms']}), pass B after all of pass A; `ceiling`: A's latencies "
           f"as scores judged on B and B's on A, averaged; the labels were measured on {r['labels_measured_on']}; "
           f"median |log B/A| {sp['median_abs_log_b_over_a']:.4f}, 90th percentile {sp['p90_abs_log_b_over_a']:.4f}, "
           f"median log B/A {sp['median_log_b_over_a']:+.4f} (the host drifts between passes)"
           + ("; the shipped model was fitted on these tasks, so its rows are in sample" if r["split"] == "train" else "")
           + f"; {r['machine']}; {r['date']})", "",
           "| scores | judged on | top-1 | per-task top-1 | top-5 | pairwise |", "|---|---|---|---|---|---|"]
    names = {"ceiling": ("pass A / pass B", "the other pass"), "ceiling_a_on_b": ("pass A", "pass B"),
             "ceiling_b_on_a": ("pass B", "pass A"), "dataset_label_on_a": ("the dataset's labels", "pass A"),
             "dataset_label_on_b": ("the dataset's labels", "pass B"),
             "cwm_on_dataset_label": ("CWM (shipped)", "the dataset's labels"), "cwm_on_a": ("CWM (shipped)", "pass A"),
             "cwm_on_b": ("CWM (shipped)", "pass B")}
    for key, m in r["rows"].items():
        who, on = names.get(key, (key, ""))
        out.append(f"| {who} | {on} | {m['top1']:.3f} | {m['top1_task_mean']:.3f} | {m['top5']:.3f} | "
                   f"{m['pairwise_acc']:.3f} |")
    return out + [""]


def within_task_table(r) -> list[str]:
    """``bench/within_task.py``: the out-of-network prior against rankers fitted inside each task."""
    out = [f"**A ranker fitted inside each task, against the prior that never saw its network** "
           f"(`bench/within_task.py`; {r['tasks']} zoo training tasks, each task's valid candidates split in two "
           f"seeded halves, each half ranked by what was fitted on the other; `rows`: the shipped ranker's input "
           f"`[ẑ_T − z_0, S]`; `store`: the pooled per-store features of the real final program (a replay, the "
           f"probe's snapshot); ranker: the shipped ranker's config on one task; regression: XGBoost on "
           f"−log latency, 100 rounds, defaults; `n` fitted: a seeded n of the other half; means over "
           f"{next(iter(r['pooled'].values()))['halves']} halves; {r['machine']}; {r['date']})", "",
           "| ranked by | input | fitted on | pairwise | per-task top-1 |", "|---|---|---|---|---|"]
    order = ["out_of_network", "within_task_8", "within_task_16", "within_task_32", "within_task",
             "within_task_regression", "within_task_store", "within_task_regression_store", "within_task_rows_store",
             "within_task_regression_rows_store"]
    inputs = {"store": "`store`", "rows_store": "`rows` + `store`"}
    for name in [n for n in order if n in r["pooled"]] + sorted(set(r["pooled"]) - set(order)):
        m = r["pooled"][name]
        if name == "out_of_network":
            who, fitted, inp = "the prior (shipped config)", "every training task but the network's", "`rows`"
        else:
            rest = name.removeprefix("within_task").removeprefix("_")
            who = "regression" if rest.startswith("regression") else "ranker (shipped config)"
            rest = rest.removeprefix("regression").removeprefix("_")
            fitted = f"{rest} of the other half" if rest.isdigit() else "the other half"
            inp = inputs.get(rest, "`rows`")
        out.append(f"| {who} | {inp} | {fitted} | {m['pairwise']:.3f} | {m['top1']:.3f} |")
    return out + [""]


def ranker_bagging_table(r) -> list[str]:
    """``bench/ranker_bagging.py``: trees bagged a round, leave one network out over the training
    tasks (mean over the ranker seeds, and pairwise by seed), then the search replay."""
    out = [f"**Trees bagged a ranker round, on the training tasks** (`bench/ranker_bagging.py`; leave one network "
           f"out over {r['tasks']} zoo training tasks, {r['fit_only_tasks']} breadth tasks fitted on in every fold, "
           f"ranker seeds 0-2; replay: pool best ÷ best found after 8 / 16 / 24 measured, the prior out of network; "
           f"{r['machine']}; {r['date']})", "",
           "| trees a round | top-1 | per-task top-1 | pairwise | pairwise by seed | replay 8 / 16 / 24 |",
           "|---|---|---|---|---|---|"]
    for name, row in r["network"].items():
        seeds = [m for k, m in row.items() if k.startswith("ranker_seed_")]
        mean = {k: sum(m[k] for m in seeds) / len(seeds) for k in ("top1", "top1_task_mean", "pairwise_acc")}
        replay = r.get("replay", {}).get(name, {}).get("mean_best_ratio", [])
        curve = " / ".join(f"{replay[i]:.3f}" for i in (1, 3, 5) if i < len(replay)) or "n/a"
        out.append(f"| {name.removeprefix('pt')} | {mean['top1']:.3f} | {mean['top1_task_mean']:.3f} | "
                   f"{mean['pairwise_acc']:.4f} | " + ", ".join(f"{m['pairwise_acc']:.4f}" for m in seeds)
                   + f" | {curve} |")
    return out + [""]


def corpus_breadth_table(r) -> list[str]:
    """``bench/corpus_breadth.py``: decoder error on unseen generated workloads vs training breadth."""
    out = [f"**Breadth** (`bench/corpus_breadth.py`; ridge decoder from the rollout to the final state's per-store "
           f"features; {r['workloads']} generated workloads, {r['heldout_workloads']} held out, {r['trajectories']} "
           f"unmeasured trajectories; {r['host']}; {r['date']}). Standardized MSE, 1.0 = predicting the mean", "",
           "| training workloads | error on them | error on unseen workloads |", "|---|---|---|"]
    for row in r["rows"]:
        out.append(f"| {row['train_workloads']} | {row['fit_error']:.3f} | {row['heldout_error']:.3f} |")
    z = r.get("zoo_transfer") or {}
    if z:
        out += ["", "The decoder fitted on all pooled generated workloads of a kind, on the measured *training* tasks "
                "of the zoo (fused network subgraphs); ranking on the decoded features, task-grouped CV:", "",
                "| fitted on | workloads | error on zoo tasks | pairwise (decoded) | pairwise (decoded + stats) |",
                "|---|---|---|---|---|"]
        for name, x in z.items():
            out.append(f"| {name} | {x['fit_workloads']} | {x['decoder_error']:.3f} | "
                       f"{x['ranking_decoded']['pairwise_acc']:.3f} | {x['ranking_decoded_plus_stats']['pairwise_acc']:.3f} |")
    return out + [""]


def _variant(r) -> str:
    t = r.get("transition") or {"hidden": 64, "init": "shipped"}
    bound = t.get("translation_bound") or 0
    return (f"{'state-dependent' if r.get('state_dependent') else 'shipped form'}, hidden {t['hidden']}, "
            f"{t['init']} init" + (f", translations capped at {bound:g}" if bound else ""))


def transition_corpus_table(r) -> list[str]:
    """``bench/transition_corpus.py``: TransH trained on the corpus; one row per variant run."""
    import glob

    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(HERE, "results", "transition_corpus*.json")))]
    out = [f"**TransH trained on the corpus** (`bench/transition_corpus.py`; a decoder head to the per-store features "
           f"of 3 prefix states; a quarter of the corpus workloads held out; {r['host']}; "
           f"{', '.join(sorted({x['date'] for x in runs}))}). Decoder error of the final state's features in standard units (within task: "
           "1.0 = no difference between a task's candidates); pairwise = task-grouped CV on the zoo's training tasks",
           "", "| transition | run | corpus: workloads fitted / held out, trajectories | epochs | error, fitted / held-out "
           "workloads | within task, fitted / held out | zoo pairwise: rollout | rollout + stats | decoded |",
           "|---|---|---|---|---|---|---|---|---|"]
    for x in sorted(runs, key=lambda x: x["date"]):
        a, z = x["decoder_error_after"], x["zoo"]["ranking"]
        out.append(f"| {_variant(x)} | {x['date']} | {x['workloads']['fit']} / {x['workloads']['heldout']}, "
                   f"{x['trajectories']:,} | "
                   f"{x['epochs']} | {a['fit']['error']:.3f} / {a['heldout']['error']:.3f} | "
                   f"{a['fit']['within_task']:.3f} / {a['heldout']['within_task']:.3f} | "
                   f"{z['zt_hat']['pairwise_acc']:.3f} | {z['zt_hat+stats']['pairwise_acc']:.3f} | "
                   f"{z['store']['pairwise_acc']:.3f} |")
    b = r["decoder_error_before"]
    out.append(f"\nBefore training (the shipped transition, a fresh decoder): within task {b['fit']['within_task']:.3f}. "
               "For reference, in the runs of 2026-12-01 the shipped rollout ranks at 0.511 and the action stats "
               "alone at 0.634 (probe above); the stats of the runs of 2026-12-03 hold the trace structure "
               "(decision 44), so their `rollout + stats` column is not comparable with the earlier rows'. "
               "Network-out CV of the 2026-12-03 transitions: the state-dependent table above (decision 57).")
    return out + [""]


#: decision 109's sample-efficiency runs, one a seed (seed 0's table above shows the whole run)
SAMPLE_EFFICIENCY_SEEDS = ("search_v9_zen4_sample_efficiency.json",) + tuple(
    f"search_v9_zen4_sample_efficiency_s{seed}.json" for seed in range(1, 5))


def sample_efficiency_seeds_table(_r, load=_load) -> list[str]:
    """Decision 109's seeds pooled: per task and seed, CWM's best in its trials ÷ the default's best
    at 640 (tuning measurements; < 1: reached, at the trial shown), the seeds that reached it, and the
    geomean over seeds. ``load``: result name -> the run or ``None``."""
    from common import geomean

    runs = [r for r in map(load, SAMPLE_EFFICIENCY_SEEDS) if r and r.get("sample_efficiency")]
    if not runs:
        return []
    seeds = [next(iter(r["sample_efficiency"].values()))["seed"] for r in runs]
    e0 = next(iter(runs[0]["sample_efficiency"].values()))
    out = [f"**Sample efficiency over seeds {', '.join(map(str, seeds))}** (`bench/search.py "
           f"--sample-efficiency-tasks 3`, decision 109; {runs[0].get('machine')}; "
           f"{', '.join(sorted({r.get('date') for r in runs}))}): CWM's best in {e0.get('cwm_max_trials')} trials "
           f"÷ MetaSchedule's default's best in {e0.get('xgb_trials')} (tuning measurements; below 1: reached, at "
           "the trial shown)", "",
           "| task | " + " | ".join(f"seed {s}" for s in seeds) + " | reached | geomean |",
           "|---|" + "---|" * (len(seeds) + 2)]
    reached_per_seed = [0] * len(runs)
    for label in runs[0]["sample_efficiency"]:
        cells, ratios, reached = [], [], 0
        for i, r in enumerate(runs):
            e = r["sample_efficiency"].get(label)
            if not e:
                cells.append("–")
                continue
            ratio = e["cwm_best_us"] / e["xgb_640_best_us"]
            ratios.append(ratio)
            reach = e.get("cwm_trials_to_reach")
            reached += reach is not None
            reached_per_seed[i] += reach is not None
            cells.append(f"**{ratio:.2f}** (trial {reach})" if reach is not None else f"{ratio:.2f}")
        out.append(f"| {label.split('/')[0]} | " + " | ".join(cells)
                   + f" | {reached} of {len(ratios)} | {geomean(ratios):.3f} |")
    out.append("| **tasks reached** | " + " | ".join(f"{n} of {len(runs[0]['sample_efficiency'])}"
                                                   for n in reached_per_seed) + " | | |")
    curves = [f"[seed {s}]({r['curves_png']})" for s, r in zip(seeds, runs) if r.get("curves_png")]
    if curves:
        out += ["", "Tuning curves: " + ", ".join(curves)]
    return out + [""]


def captioned(render, caption: str):
    """``render`` with ``caption`` (what the run is) set in bold before its table."""
    def out(r) -> list[str]:
        return [f"**{caption}.**", ""] + render(r)
    return out


#: result file -> renderer, in README order
TABLES = (("ranking.json", ranking_table),
          ("ranking_v6_d98.json", captioned(ranking_table, "The previous shipped model (decision 98: the loop "
                                             "tiles, without decision 105's parallel grain and cache footprints), "
                                             "the same command on the Intel Xeon model 167")),
          ("probe_centring_design_space.json", centring_table),
          ("probe_network_ranker_seeds_pt4.json", ranker_seeds_table),
          ("probe_network.json", probe_cv_table),
          ("probe_network_rank.json", rank_transition_table), ("probe_network_state_h256.json", state_transition_table),
          ("probe.json", probe_table), ("corpus_breadth.json", corpus_breadth_table),
          ("transition_corpus.json", transition_corpus_table),
          ("search_v7.json", captioned(search_table, "CWM v6 with its ranker and sequence head refitted on the "
                                        "complete Zen 4 re-collection (decision 74: 257 breadth workloads), against "
                                        "an `XGBModel` pre-trained on the same records, over 5 seeds, and sample "
                                        "efficiency on 3 tasks (issue #12). The `xgb` runs (MetaSchedule's default, "
                                        "which reads no records) are those of `search_v6.json`, re-measured together "
                                        "with the new `cwm` and `xgb_pretrained` runs")),
          ("search_v9_zen4.json", captioned(search_table, "The shipped model (decision 106: the loop-tile and "
                                             "tile-footprint columns), decision 91's command and tasks on the AMD "
                                             "EPYC Zen 4 host kind (decision 107): every method tuned and "
                                             "re-measured there")),
          ("search_v9_zen4_sample_efficiency.json", captioned(search_table, "Sample efficiency of the shipped "
                                                             "model (decision 109): CWM at up to 128 trials against "
                                                             "MetaSchedule's default at 640, seed 0, on the Zen 4 "
                                                             "host kind. Its 64-trial rows are seed 0 of "
                                                             "`search_v9_zen4.json`'s runs re-measured with fewer "
                                                             "candidates beside them; the search result is that "
                                                             "file's")),
          ("search_v9_zen4_sample_efficiency_s1.json", sample_efficiency_seeds_table),
          ("search_v8_zen4.json", captioned(search_table, "The model before (decision 98: the loop-tile columns "
                                             "only), decision 91's command and tasks on the AMD EPYC Zen 4 "
                                             "host kind (decision 103): every method tuned and re-measured there")),
          ("search_v8_xeon_m167.json", captioned(search_table, "The shipped model with the loop-tile columns "
                                                  "(decision 98: ranker and sequence head refitted), decision 91's "
                                                  "command and tasks on the Intel Xeon model 167 host kind: every "
                                                  "method tuned and re-measured there")),
          ("search_v7_xeon_m167.json", captioned(search_table, "The same model, command and tasks as "
                                                  "`search_v7_xeon.json` on the Intel Xeon model 167 host kind "
                                                  "(decision 91): every method tuned and re-measured there; the "
                                                  "`xgb` runs were tuned after the other two, and all of them "
                                                  "re-measured together")),
          ("search_v7_xeon.json", captioned(search_table, "The same model, command and tasks as `search_v7.json` "
                                             "on the Intel Xeon host kind (decision 77): every method tuned and "
                                             "re-measured on this host; both learned models read records measured "
                                             "on the Zen 4 host; no sample-efficiency runs")),
          ("search_v6.json", captioned(search_table, "CWM v6, its ranker's margin blended with a GRU sequence "
                                        "head over the same actions (decision 71, chosen on the training tasks), "
                                        "against an `XGBModel` pre-trained on the same records, over 5 seeds, and "
                                        "sample efficiency on 3 tasks (issue #12). The `xgb` and `xgb_pretrained` "
                                        "runs are those of `search_breadth64.json`, re-measured together with the "
                                        "new `cwm` runs")),
          ("search_breadth64.json", captioned(search_table, "CWM whose ranker is refitted with the Zen 4 "
                                               "re-collection of the breadth workloads (decision 70, chosen on "
                                               "the training tasks; 220 workloads with ~60 candidates each, 37 as "
                                               "before), against an `XGBModel` pre-trained on the same records, over "
                                               "5 seeds, and sample efficiency on 3 tasks (issue #12). The `xgb` "
                                               "runs (MetaSchedule's default, which reads no records) are those of "
                                               "`search_locations.json`, re-measured together with the new `cwm` "
                                               "and `xgb_pretrained` runs")),
          ("search_locations.json", captioned(search_table, "CWM whose ranker also reads each compute-at "
                                               "location in trace order (decision 67, chosen on the training "
                                               "tasks) at its default search over 5 seeds, and sample efficiency "
                                               "on 3 tasks (issue #12). The `xgb` and `xgb_pretrained` runs are "
                                               "those of `search_centred.json` (this host kind), re-measured "
                                               "together with the new `cwm` runs")),
          ("search_centred.json", captioned(search_table, "CWM with the centred ranker (decision 62: each row "
                                             "beside the row less the mean of 32 design-space samples of its task) "
                                             "at its default search over 5 seeds, and sample efficiency on 3 tasks (issue #12). "
                                             "Every method tuned and re-measured on this host; the table's first "
                                             "run re-measured baselines tuned on a Zen 5 host with CWM's tuned on "
                                             "this Zen 4 and is withdrawn (decision 63)")),
          ("search_forest.json", captioned(search_table, "CWM with the bagged ranker (decision 61: four trees a "
                                            "round, refit on the finished breadth root, the same records as the "
                                            "pre-trained XGBModel) at its default search over 5 seeds (issue #12). "
                                            "The `xgb` and `xgb_pretrained` runs are those of `search_s5.json`, "
                                            "re-measured with the new `cwm` runs")),
          ("search_s5.json", captioned(search_table, "CWM at its default (8 transferred schedules in library order, "
                                        "the last of 64 trials; decisions 59, 60) against MetaSchedule's default "
                                        "and the pre-trained XGBModel over 5 seeds (issue #12). Seeds 0-2 are the "
                                        "runs of `search_choice.json`, re-measured with seeds 3 and 4")),
          ("search_choice.json", captioned(search_table, "Which transferred schedules CWM measures (decision 60): "
                                            "`cwm` takes the first 8 of the pool in library order (its default), "
                                            "`cwm@seeded_by_model` the 8 its world model scores highest, `cwm@fast` "
                                            "none; `xgb_pretrained@seeded` / `@seeded_by_model` is the pre-trained "
                                            "XGBModel with the same rounds (issue #12). Every method's runs but "
                                            "`cwm@seeded_by_model` and `xgb_pretrained@seeded_by_model` are those of "
                                            "`search_seeded_runs.jsonl` (the 640-trial `xgb` runs those of "
                                            "`search_se_runs.jsonl`), re-measured with the new ones")),
          ("search_seeded.json", captioned(search_table, "CWM searching with the seed round (its default since "
                                            "decision 59: 8 schedules transferred from similar training workloads, "
                                            "measured as the last of 64 trials) against the baselines at theirs; "
                                            "`cwm@fast` is CWM without the seed round, `xgb_pretrained@seeded` the "
                                            "pre-trained XGBModel with it (issue #12)")),
          ("search_wide.json", captioned(search_table, "Search profiles at the same 64 measured trials: "
                                          "`@wide` is `cwm.tuning.settings.SEARCH_PROFILES['wide']`, "
                                          "MetaSchedule's own search breadth (issue #12, deliverable 6)")),
          ("search_se.json", captioned(search_table, "Sample efficiency with the shipped model: CWM at up to 128 "
                                        "trials against MetaSchedule's default at 640 (issue #12), and the same "
                                        "3 tasks at 64 trials")),
          ("adapt_blend.json", adapt_blend_table),
          ("diverse_pick.json", diverse_pick_table),
          ("pair_errors.json", pair_errors_table),
          ("top_rerank.json", top_rerank_table),
          ("loop_tiles.json", loop_tiles_table),
          ("rollout_memory.json", rollout_memory_table),
          ("rollout_memory_capped_b03.json", rollout_memory_table),
          ("capped_rollout.json", capped_rollout_table),
          ("rollout_memory_trained_b03.json", rollout_memory_table),
          ("capped_rollout_trained.json", capped_rollout_table),
          ("decoded_columns.json", decoded_columns_table),
          ("tile_footprint.json", tile_footprint_table),
          ("adapt_sim.json", adapt_sim_table),
          ("seed_transfer.json", seed_transfer_table),
          ("search_knobs_imr128_zen4.json", captioned(search_knobs_table, "Fewer measured parents in each "
                                                       "round's population at 128 trials (decision 114: "
                                                       "`init_measured_ratio=0.05`; the shipped search takes 0.2), "
                                                       "beside a `base` of its own")),
          ("search_knobs_gen128_zen4.json", captioned(search_knobs_table, "One genetic iteration a round at 128 "
                                                       "trials (decision 113: `genetic_num_iters=1`; the shipped "
                                                       "search makes 2), beside a `base` of its own")),
          ("search_knobs_eps128_zen4.json", captioned(search_knobs_table, "What the search proposes past its "
                                                       "first rounds, at 128 trials (decision 112): 4 of each "
                                                       "round's 16 trials at random (`eps_greedy=0.25`; the shipped "
                                                       "0.05 picks none), and the prior alone, no task model "
                                                       "(`min_measured=1000`, a diagnosis), each beside `base`")),
          ("search_knobs_adapt128_zen4.json", captioned(search_knobs_table, "The blend task model at half weight "
                                                         "from 16 measurements, at 128 trials (decision 110), "
                                                         "and the same waiting for 64 measurements (decision "
                                                         "111: run 1-2 h after `base`, not beside it)")),
          ("search_knobs_tile_footprint_zen4.json", captioned(search_knobs_table, "The parallel grain and cache "
                                                                  "footprints in search (decision 105: "
                                                                  "`add_columns=tile_footprint`), beside "
                                                                  "`temperature=1.0000000`, a replica of the shipped "
                                                                  "search run interleaved with it")),
          ("search_knobs_loop_tiles_xeon_m167.json", captioned(search_knobs_table, "The loop tiles in search "
                                                                "(decision 97: `add_columns=loop_tiles`, the fold "
                                                                "rankers fitted with decision 95's columns), beside "
                                                                "`temperature=1.0000000`, a replica of the shipped "
                                                                "search run interleaved with it")),
          ("search_knobs_blend_xeon_m167.json", captioned(search_knobs_table, "The blend task model in search "
                                                           "(decision 90: `kind=blend+half_weight_at=64`, a "
                                                           "regression of -log latency on the task's measurements "
                                                           "weighed n / (n + 64) against the prior), beside "
                                                           "`temperature=1.000000`, a replica of the shipped search "
                                                           "run interleaved with it")),
          ("search_knobs_temperature_xeon_m167.json", captioned(search_knobs_table, "Decision 75's parent "
                                                                 "temperature 2 again (decision 89), beside "
                                                                 "`temperature=1.00000`, a replica of the shipped "
                                                                 "search run interleaved with it")),
          ("search_knobs_pessimism_xeon_m167.json", captioned(search_knobs_table, "The pessimistic score in "
                                                               "search (decision 87, a declared check: "
                                                               "`pessimism=1`, five bootstrap rankers a fold "
                                                               "scored mean less their spread), beside "
                                                               "`temperature=1.0000`, a replica of the shipped "
                                                               "search run interleaved with it")),
          ("search_knobs_eps_xeon_m167.json", captioned(search_knobs_table, "MetaSchedule's ε-greedy share of "
                                                         "a round on three seeds (decision 86: `eps_greedy=0.125`, "
                                                         "2 of 16 trials at random), beside `temperature=1.000`, a "
                                                         "replica of the shipped search run interleaved with it, "
                                                         "on the Xeon kind seen first in the thirty-eighth session")),
          ("search_knobs_eps_check.json", captioned(search_knobs_table, "MetaSchedule's ε-greedy share of a "
                                                     "round (decision 84: `eps_greedy=0.125`, 2 of 16 trials at "
                                                     "random; the shipped 0.05 picks none), beside "
                                                     "`temperature=1.000`, a replica of the shipped search; seed "
                                                     "0, a check")),
          ("search_knobs_control.json", captioned(search_knobs_table, "The ranker fitted also on the control "
                                                   "collection (decision 84, `ranker_data=dataset_control_xeon`: "
                                                   "the same tasks and trials as decision 83's, from `XGBModel`'s "
                                                   "search, on this host), paired with `temperature=1.00`, the "
                                                   "shipped search run interleaved with it")),
          ("search_knobs_dagger.json", captioned(search_knobs_table, "The ranker fitted also on CWM's own "
                                                  "searches of the training tasks (decision 83, `ranker_data=`), "
                                                  "paired with `temperature=1` (the shipped search, run again in "
                                                  "the same hours); `base` is the same search run four hours "
                                                  "earlier: the machine's drift")),
          ("search_knobs_g1_check.json", captioned(search_knobs_table, "Decision 82's `genetic_num_iters=1` "
                                                    "run again beside a replica of the shipped search "
                                                    "(`temperature=1.0`), seed 0 (decision 83's check)")),
          ("search_knobs.json", captioned(search_knobs_table, "Decision 82's arms. The two `genetic_num_iters` "
                                           "arms ran 0-1.5 h after `base`, and the same search run 3-4 h later came "
                                           "out 1.209× slower (decision 83): their losses are within the machine's "
                                           "drift")),
          ("parent_temperature.json", parent_temperature_table),
          ("dagger_offline.json", dagger_offline_table),
          ("pessimistic_offline.json", pessimistic_offline_table),
          ("label_noise_xeon_m167.json", label_noise_table),
          ("label_noise_train_xeon_m167.json", label_noise_table),
          ("within_task_store.json", within_task_table),
          ("probe_ranker_bagging.json", ranker_bagging_table),
          ("search_v4.json", search_table),  # model v4's cwm runs; the baselines' runs are those of search.json
          ("search.json", search_table),
          ("e2e_v3_t64.json", captioned(e2e_table, "The 8-network run with model v4 against TVM's own pipeline "
                                        "(issue #14). The transformers are compiled with `cwm-int-power`, "
                                        "`cwm-vector-math` and the untuned candidate (decisions 46-48); the CNNs' "
                                        "compiles predate the last two (they have no exp / tanh / erf)")),
          ("e2e_t256.json", captioned(e2e_table, "The larger budget, 256 trials × tasks (issue #14; "
                                      "BERT-base, ResNet-18, ResNet-50)")),
          ("e2e.json", e2e_table),
          ("e2e_t64.json", e2e_table),  # the same benchmark at 64 trials per task (--trials 64)
          ("e2e_ablation_t64.json", e2e_table),  # packing and task-scheduler ablations of cwm (issue #14)
          ("e2e_reshape_t64.json", e2e_table),  # BERT-base after the reshape legalization (decision 43)
          ("e2e_breakdown_mobilenet_v2.json", breakdown_table),  # the slowest network against ORT (issue #14)
          ("e2e_breakdown_resnet18.json", breakdown_table), ("e2e_breakdown_bert_base_tvm_reshape.json", breakdown_table),
          ("e2e_breakdown_bert_base.json", breakdown_table),
          ("scoring.json", scoring_table),
          ("scoring_before_d108.json", captioned(scoring_table, "The same benchmark (interleaved windows, stages) "
                                                 "run just before decision 108, with the shipped model's trace "
                                                 "texts parsed a second time for the `tile_footprint` columns")),
          ("scoring_xeon.json", scoring_table),  # the same model and benchmark on the Intel Xeon host kind
          ("scoring_xeon_m167.json", scoring_table),  # and on the Xeon kind seen first in the 38th session
          ("fast_tuning.json", fast_tuning_table),
          ("trace_features.json", trace_features_table))


def main():
    lines: list[str] = []
    for name, fn in TABLES:
        r = _load(name)
        if r:
            lines += fn(r)
    text = open(README).read()
    block = "<!-- bench:begin -->\n" + "\n".join(lines) + "\n<!-- bench:end -->"
    text = re.sub(r"<!-- bench:begin -->.*<!-- bench:end -->", lambda _: block, text, flags=re.S)
    open(README, "w").write(text)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
