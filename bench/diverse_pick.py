"""Should a search round measure fewer candidates of one tiling? Replayed on the zoo's training
tasks (issue #12, search; no held-out task is used).

MetaSchedule's evolutionary search measures, each round, the unmeasured candidates its cost model
scores highest. Mutation changes one decision at a time, so the top of a population is often
siblings: one multi-level tiling under several unroll, vectorize or compute-at choices. Where the
model overrates a tiling, a round spends most of its measurements on it. This replays search's
measure-and-refit loop (:func:`adapt_sim.replay`, the shipped residual task model) with the
search benches' setting (``bench/adapt_blend.py``'s: every valid dataset candidate of a zoo
training task, the shipped ranker refitted without the task's network as the prior, 16 measured a
round) and changes only the pick: going down the margin order, a candidate whose tiling already has
``cap`` candidates in the round (``scope="round"``) or among everything measured so far
(``scope="all"``) waits until the rest of the order is used up.

A candidate's tiling is what the ranker's trace-structure columns say of its sample-phase splits
(:data:`cwm.model.trace_structure.SPLIT_NAMES`: per arity, how many, and per tile level the sum and
the max of ``log2`` factor), read from its actions alone. Two tilings with the same per-level sums
and maxima count as one.

Reported per variant: the mean over tasks of ``pool best / best found`` after each round, its
paired difference against the shipped pick with a 95 % interval (tasks resampled), and how many
distinct tilings the shipped pick's first round holds.

    PYTHONPATH=python .venv/bin/python bench/diverse_pick.py [--per-round 16] [--rounds 4]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402
from within_task import fold_ranker_arguments  # noqa: E402

BASELINE = "top by margin (shipped)"
#: name -> (cap, scope); None: the shipped pick
VARIANTS = {
    BASELINE: None,
    "1 per tiling a round": (1, "round"),
    "2 per tiling a round": (2, "round"),
    "4 per tiling a round": (4, "round"),
    "2 per tiling in all": (2, "all"),
    "4 per tiling in all": (4, "all"),
}


def tiling_keys(x, names: list[str]) -> list[tuple]:
    """Each row's tiling: its trace-structure split columns (uncentred), rounded to 1e-4."""
    import numpy as np

    from cwm.model.trace_structure import SPLIT_NAMES

    cols = [names.index(n) for n in SPLIT_NAMES]
    return [tuple(r) for r in np.round(np.asarray(x, np.float64)[:, cols], 4).tolist()]


def capped_pick(keys: list, cap: int, scope: str):
    """A ``pick`` for :func:`adapt_sim.replay`: the margin order, taking at most ``cap`` candidates of
    one tiling in the round (``scope="round"``) or in all measured so far (``"all"``); when the
    order runs out, the rest of it fills the round."""

    def pick(order, measured: list[int], per_round: int) -> list[int]:
        taken = set(measured)
        counts: dict = {}
        if scope == "all":
            for i in measured:
                counts[keys[i]] = counts.get(keys[i], 0) + 1
        chosen, waiting = [], []
        for i in (int(i) for i in order if i not in taken):
            if len(chosen) == per_round:
                break
            if counts.get(keys[i], 0) < cap:
                counts[keys[i]] = counts.get(keys[i], 0) + 1
                chosen.append(i)
            else:
                waiting.append(i)
        return chosen + waiting[:per_round - len(chosen)]

    return pick


def curves_of(tasks: dict, names: list[str], per_round: int, rounds: int,
              variants: dict = VARIANTS) -> tuple[dict, list[int]]:
    """``(variant -> [task][round] best ratios, distinct tilings in the shipped first round per
    task)``; ``tasks``: key -> ``(rows, latencies, prior margins)``."""
    import numpy as np

    from adapt_sim import replay, top_unmeasured
    from cwm.cost_model.task_adaptation import AdaptConfig

    cfg = AdaptConfig()
    out, distinct = {name: [] for name in variants}, []
    for key in sorted(tasks):
        x, lat, prior = (np.asarray(v, t) for v, t in zip(tasks[key], (np.float32, np.float64, np.float64)))
        keys = tiling_keys(x, names)
        first = top_unmeasured(np.argsort(-prior, kind="stable"), [], per_round)
        distinct.append(len({keys[i] for i in first}))
        for name, v in variants.items():
            pick = top_unmeasured if v is None else capped_pick(keys, *v)
            out[name].append(replay(lat, x, prior, cfg, per_round, rounds, pick))
    return out, distinct


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-round", type=int, default=16)
    p.add_argument("--rounds", type=int, default=4)
    fold_ranker_arguments(p, "diverse_pick.json")
    a = p.parse_args(argv)

    import numpy as np

    from adapt_blend import summary
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel, feature_names
    from within_task import zoo_tasks_with_margins

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    names = feature_names(model.tcfg.dim, model.structure, bool(model.centring), model.columns)
    roots, tasks, _, _ = zoo_tasks_with_margins(model, a.work_root)
    pools = [len(t[1]) for t in tasks.values()]
    tilings = [len(set(tiling_keys(t[0], names))) for t in tasks.values()]
    log(f"{len(tasks)} tasks, pools of {int(np.median(pools))} candidates and {int(np.median(tilings))} "
        "tilings (medians)")
    curves, distinct = curves_of(tasks, names, a.per_round, a.rounds)
    out = summary(curves, a.per_round, BASELINE)
    for name, c in out["mean_best_ratio"].items():
        diff = out["vs_baseline_mean_ci95"].get(name)
        print(f"{name:<26} " + " ".join(f"{v:.3f}" for v in c) + (
            "   vs shipped: " + " ".join(f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in diff) if diff else ""))
    print(f"distinct tilings in the shipped first round: median {np.median(distinct):.0f}, "
          f"mean {np.mean(distinct):.1f} of {a.per_round}")
    write_result(a.out, {
        "benchmark": "diverse_pick", "date": today(), "machine": machine(), "roots": roots,
        "tasks": len(tasks), "per_round": a.per_round, "rounds": a.rounds,
        "variants": {n: None if v is None else {"cap": v[0], "scope": v[1]} for n, v in VARIANTS.items()},
        **out, "pool_candidates_median": float(np.median(pools)), "pool_tilings_median": float(np.median(tilings)),
        "first_round_distinct_tilings": {"median": float(np.median(distinct)), "mean": float(np.mean(distinct))},
        "note": "pool = every valid dataset candidate of a zoo training task; prior = the shipped ranker refitted "
                "without the task's network (the search benches' fold rankers); task model = the shipped residual",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
