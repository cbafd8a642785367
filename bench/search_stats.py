"""The statistics of the search benchmark (bench/search.py): best-so-far curves, the trial at
which a curve reaches a target, median curves, and the geomean speedups of CWM over the
baselines (and of each search profile over its plain method) with their spread over seeds."""
from __future__ import annotations

import math
import statistics

from common import geomean
from search_plan import BASELINES, METHODS, split_method


def mean_or_none(values) -> float | None:
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    return sum(xs) / len(xs) if xs else None


def best_so_far(latencies) -> list:
    """Running minimum of per-trial latencies (None = failed trial; None until the first valid one)."""
    out, best = [], None
    for x in latencies:
        if x is not None and math.isfinite(x) and (best is None or x < best):
            best = float(x)
        out.append(best)
    return out


def trials_to_reach(curve, target) -> int | None:
    """The first trial count ``n`` (1-based) with ``curve[n-1] <= target``; None if never."""
    if target is None:
        return None
    for i, x in enumerate(curve):
        if x is not None and x <= target:
            return i + 1
    return None


def median_curve(curves) -> list:
    """Element-wise median over curves of possibly different lengths (Nones ignored)."""
    n = max((len(c) for c in curves), default=0)
    out = []
    for i in range(n):
        xs = [c[i] for c in curves if i < len(c) and c[i] is not None]
        out.append(statistics.median(xs) if xs else None)
    return out


def comparisons(methods) -> list[tuple[str, str]]:
    """The ``(subject, baseline)`` pairs :func:`speedups` reports: every CWM method (``cwm``,
    ``cwm@<profile>``) against every baseline method (``xgb``, ``xgb_pretrained@wide``, ...), and
    every ``<method>@<profile>`` against its plain ``<method>`` (what the profile alone buys)."""
    def base(m):
        return split_method(m)[0]

    pairs = [(c, b) for c in methods if base(c) == "cwm" for b in methods if base(b) in BASELINES]
    pairs += [(m, base(m)) for m in methods if split_method(m)[1] is not None and base(m) in methods]
    return pairs


def speedups(table: dict, seeds, methods=METHODS) -> tuple[dict, dict]:
    """Geomean over tasks of ``baseline / subject`` latency, and its spread over seeds, for each
    pair of :func:`comparisons`, named ``<subject>_vs_<baseline>`` (``cwm_vs_xgb``, ...).

    ``table[task][method]`` is a list of best latencies, one per seed (None = missing). Per task
    each method's latency is the mean over its seeds; a task enters a ratio when both methods
    have a value. The spread is the same geomean computed per seed (tasks where both methods
    have that seed), reported as ``per_seed``, ``min`` and ``max``.
    """
    geo, spread = {}, {}
    for subject, base in comparisons(methods):
        name = f"{subject}_vs_{base}"
        ratios = []
        for row in table.values():
            c, b = mean_or_none(row.get(subject, [])), mean_or_none(row.get(base, []))
            if c is not None and b is not None and c > 0:
                ratios.append(b / c)
        geo[name] = geomean(ratios)
        per_seed = {}
        for i, seed in enumerate(seeds):
            rs = []
            for row in table.values():
                cs, bs = row.get(subject, []), row.get(base, [])
                c = cs[i] if i < len(cs) else None
                b = bs[i] if i < len(bs) else None
                if c is not None and b is not None and c > 0:
                    rs.append(b / c)
            if rs:
                per_seed[str(seed)] = geomean(rs)
        vals = list(per_seed.values())
        spread[name] = {"n_tasks": len(ratios), "per_seed": per_seed,
                        "min": min(vals) if vals else None, "max": max(vals) if vals else None}
    return geo, spread


def gap_to_best_run(table: dict, methods=METHODS) -> dict:
    """Per method, the geomean over tasks of its mean latency over seeds ÷ the fastest run of the
    task by any method and seed (1.0: every run of it found what the best run of all found).

    The speedup of :func:`speedups` against a baseline ``b`` equals ``gap[b] / gap[subject]`` on
    the tasks both have, so ``gap[b]`` is the most any method could show against ``b`` by
    matching, in every run, the best latency that any run of this benchmark reached: the ceiling
    of the ratio at this budget unless a method finds programs faster than all of those.
    """
    gaps = {}
    for m in methods:
        ratios = []
        for row in table.values():
            runs = [x for xs in row.values() for x in xs if x is not None and math.isfinite(x) and x > 0]
            mean = mean_or_none(row.get(m, []))
            if runs and mean is not None:
                ratios.append(mean / min(runs))
        gaps[m] = geomean(ratios)
    return gaps
