"""A second ranker for the top of the prior's order: does it pick better? (issue #12; training
tasks only, leave one network out.)

Decision 93 found the prior near chance on candidates within 1.25× of each other, and the top of
its order is where such candidates crowd. A cascade, as learning-to-rank systems build one: the
first stage is the prior (each zoo network's fold ranker, the search benches' cached priors, fitted
without the network); the second is the shipped ranker config, fitted with every pair
(``pair_top_k=None``) on only the ``k`` candidates each *other* zoo network's training task has
at the top of its own network's fold prior, so it learns what separates candidates the first stage
already likes. The second stage never sees a label of the network it is scored on. Variants
(:data:`VARIANTS`):

* ``rerank top k``: the prior's top ``k`` of a task ordered by the second stage, the rest after
  them in the prior's order;
* ``..., + prior column``: the second stage also reads the prior's margin, standardized over the
  task's top ``k``;
* ``sum``: both stages' margins standardized over the task's candidates and added, for every
  candidate (what a cost model could score a population with).

Reported, over the 63 zoo training tasks: the per-task top-1 (best latency ÷ the pick's, the mean
over tasks), the latency-weighted top-1, pairwise accuracy over all candidates, and the best found
among the first 16 / 32 / 48 / 64 of the order (no task model: the order alone); each with the
paired difference from the prior and its 95 % interval (tasks resampled).

    PYTHONPATH=python .venv/bin/python bench/top_rerank.py
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402
from within_task import fold_ranker_arguments  # noqa: E402

PRIOR = "prior (shipped)"
#: name -> (k, second stage reads the prior's margin, how the stages combine)
VARIANTS = {
    "rerank top 16": (16, False, "rerank"),
    "rerank top 32": (32, False, "rerank"),
    "rerank top 64": (64, False, "rerank"),
    "rerank top 32, + prior column": (32, True, "rerank"),
    "sum, second stage of top 32": (32, False, "sum"),
}
FOUND_AFTER = (16, 32, 48, 64)


def standardized(v):
    import numpy as np

    v = np.asarray(v, np.float64)
    sd = v.std()
    return (v - v.mean()) / sd if sd > 0 else v * 0.0


def top(prior, k: int):
    """The indices of the prior's ``k`` highest margins, best first."""
    import numpy as np

    return np.argsort(-np.asarray(prior), kind="stable")[:k]


def second_stage_rows(x, lat, prior, k: int, with_prior: bool):
    """``(rows, latencies)`` of a task's top ``k`` by the prior (valid latencies only)."""
    import numpy as np

    idx = top(prior, k)
    rows = np.asarray(x, np.float32)[idx]
    if with_prior:
        rows = np.hstack([rows, standardized(np.asarray(prior)[idx])[:, None].astype(np.float32)])
    lat = np.asarray(lat, np.float64)[idx]
    keep = np.isfinite(lat) & (lat > 0)
    return rows[keep], lat[keep]


def combined(x, prior, second, k: int, with_prior: bool, how: str):
    """The final margins of one task's candidates."""
    import numpy as np

    prior = np.asarray(prior, np.float64)
    if how == "sum":
        return standardized(prior) + standardized(second.predict(np.asarray(x, np.float32)))
    idx = top(prior, k)
    rows = np.asarray(x, np.float32)[idx]
    if with_prior:
        rows = np.hstack([rows, standardized(prior[idx])[:, None].astype(np.float32)])
    out = prior - prior.max() - 1.0  # every candidate outside the top k below every one inside
    s2 = np.asarray(second.predict(rows), np.float64)
    out[idx] = s2 - s2.min() + 1.0
    return out


def task_metrics(lat, score) -> dict:
    """Per-task top-1, pairwise accuracy, and best found among the first n of the order."""
    import numpy as np

    from cwm.model.metrics import pairwise_accuracy

    lat = np.where(np.isfinite(lat) & (lat > 0), lat, np.inf)
    best, worst = lat.min(), lat[np.isfinite(lat)].max()
    order = np.argsort(-np.asarray(score), kind="stable")
    pick = lat[order[0]] if np.isfinite(lat[order[0]]) else worst
    return {"top1": float(best / pick), "pick": float(pick), "best": float(best),
            "pairwise": pairwise_accuracy(np.where(np.isfinite(lat), lat, np.nan), score),
            "found": [float(best / lat[order[:n]].min()) if np.isfinite(lat[order[:n]]).any() else 0.0
                      for n in FOUND_AFTER]}


def run(tasks: dict, folds: dict, cfg, variants: dict = VARIANTS) -> dict[str, dict[str, dict]]:
    """``variant -> task -> metrics``; ``tasks``: key -> ``(rows, latencies, network, prior
    margins)``; ``folds``: network -> its training tasks (a task of several networks is in each)."""
    import numpy as np

    from fold_rankers import fit_on

    cfg2 = dataclasses.replace(cfg, pair_top_k=None)
    out = {PRIOR: {key: task_metrics(t[1], t[3]) for key, t in tasks.items()}} | {name: {} for name in variants}
    for net in sorted({t[2] for t in tasks.values()}):
        left_out = set(folds.get(net, ())) | {k for k, t in tasks.items() if t[2] == net}
        fitted = sorted(k for k in tasks if k not in left_out)
        for name, (k, with_prior, how) in variants.items():
            rows = {key: second_stage_rows(tasks[key][0], tasks[key][1], tasks[key][3], k, with_prior)
                    for key in fitted}
            second = fit_on(cfg2, rows, [key for key in fitted if np.unique(rows[key][1]).size > 1])
            for key in sorted(k2 for k2, t in tasks.items() if t[2] == net):
                x, lat, _, prior = tasks[key]
                out[name][key] = task_metrics(lat, combined(x, prior, second, k, with_prior, how))
    return out


def summary(results: dict, draws: int = 2000, seed: int = 0, baseline: str = PRIOR,
            diff_key: str = "vs_prior_ci95") -> dict:
    """Per variant of ``results`` (variant -> task -> :func:`task_metrics`): the means of the
    metrics, and under ``diff_key`` each one's paired difference from ``baseline`` with its 95 %
    interval (tasks resampled)."""
    import numpy as np

    keys = sorted(results[baseline])
    idx = np.random.default_rng(seed).integers(0, len(keys), (draws, len(keys)))

    def table(name):
        r = results[name]
        cols = {"top1_task_mean": np.array([r[k]["top1"] for k in keys]),
                "pairwise": np.array([r[k]["pairwise"] for k in keys])}
        cols |= {f"found_{n}": np.array([r[k]["found"][i] for k in keys]) for i, n in enumerate(FOUND_AFTER)}
        return cols

    base = table(baseline)
    out = {}
    for name in results:
        cols = table(name)
        r = results[name]
        m = {c: float(np.nanmean(v)) for c, v in cols.items()}
        m["top1_weighted"] = float(sum(r[k]["best"] for k in keys) / sum(r[k]["pick"] for k in keys))
        if name != baseline:
            m[diff_key] = {}
            for c, v in cols.items():
                d = v - base[c]
                boot = np.nanmean(d[idx], 1)
                m[diff_key][c] = [float(np.nanmean(d)), *map(float, np.percentile(boot, [2.5, 97.5]))]
        out[name] = m
    return out


def compare_fold_rankers(cfg, rows: dict, variant_rows: dict, folds: dict, zoo: dict, baseline: str, variant: str,
                         start: float) -> tuple[dict, int]:
    """``(summary, tasks)``: each zoo network's fold ranker of config ``cfg`` fitted on ``rows`` and on
    ``variant_rows`` (the same keys, other columns), both scored on that network's zoo training
    tasks (:func:`task_metrics`), summarised with paired intervals against ``baseline`` and printed."""
    import numpy as np

    from fold_rankers import fit_on, fitted_keys

    results = {baseline: {}, variant: {}}
    for net in sorted(folds):
        keys = fitted_keys(rows, folds, net, None)
        base, ranker = fit_on(cfg, rows, keys), fit_on(cfg, variant_rows, keys)
        for key in sorted(k for k, n in zoo.items() if n == net):
            x, lat = rows[key]
            if np.isfinite(lat).sum() < 2:
                continue
            results[baseline][key] = task_metrics(lat, base.predict(x))
            results[variant][key] = task_metrics(lat, ranker.predict(variant_rows[key][0]))
        log(f"{net}: fitted ({time.perf_counter() - start:.0f} s)")
    out = summary(results, baseline=baseline, diff_key="vs_baseline_ci95")
    width = max(map(len, out)) + 2
    for name, m in out.items():
        print(f"{name:<{width}} pairwise {m['pairwise']:.4f}  top-1 {m['top1_task_mean']:.3f} (weighted "
              f"{m['top1_weighted']:.3f})  found " + " ".join(f"{m[f'found_{n}']:.3f}" for n in FOUND_AFTER))
    d = out[variant]["vs_baseline_ci95"]
    print("difference: " + "  ".join(f"{k} {v[0]:+.4f} [{v[1]:+.4f}, {v[2]:+.4f}]" for k, v in d.items()))
    return out, len(results[baseline])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fold_ranker_arguments(p, "top_rerank.json")
    a = p.parse_args(argv)

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from within_task import zoo_tasks_with_margins

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    roots, with_margins, folds, zoo = zoo_tasks_with_margins(model, a.work_root)
    tasks = {key: (x, lat, zoo[key], prior) for key, (x, lat, prior) in with_margins.items()}
    log(f"{len(tasks)} tasks in {len(folds)} network folds")
    out = summary(run(tasks, folds, model.ranker.cfg))
    for name, m in out.items():
        diff = m.get("vs_prior_ci95", {})
        print(f"{name:<30} top-1 {m['top1_task_mean']:.3f} (weighted {m['top1_weighted']:.3f})  pairwise "
              f"{m['pairwise']:.3f}  found " + " ".join(f"{m[f'found_{n}']:.3f}" for n in FOUND_AFTER)
              + ("   vs prior: top-1 {:+.3f} [{:+.3f}, {:+.3f}]".format(*diff["top1_task_mean"]) if diff else ""))
    write_result(a.out, {
        "benchmark": "top_rerank", "date": today(), "machine": machine(), "roots": roots, "tasks": len(tasks),
        "variants": {n: {"k": k, "prior_column": w, "combine": h} for n, (k, w, h) in VARIANTS.items()},
        "found_after": list(FOUND_AFTER), "by_variant": out,
        "note": "prior = the shipped ranker refitted without the task's network (the search benches' fold rankers); "
                "second stage = the shipped ranker config with every pair, fitted on the other networks' zoo "
                "training tasks' top k by their own fold prior",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
