"""Which task model should CWM's cost model fit on a task's own measurements: the residual it
ships, or an ``XGBModel``-style regression blended with the prior? Replayed on the zoo's training
tasks (issue #12, search; no held-out task is used).

``bench/within_task.py`` found that a task's own measurements pick its fastest candidates better
than the out-of-network prior (per-task top-1 0.72 with 32 of them, against 0.665), while the
shipped residual (trees started from the prior's margins) showed no gain in
``bench/adapt_sim.py``'s replay. This replays search's measure-and-refit loop
(:func:`adapt_sim.replay`) with the search benches' setting: for every zoo training task, the
prior is the shipped ranker refitted without the task's network (``bench/fold_rankers.py``, the
cached fold rankers of ``bench/search_knobs.py``), the pool is all of the task's valid dataset
candidates (~196), ``--per-round`` of the highest margin are "measured" a round (16: the search's
rounds), and the task model of each variant (:data:`VARIANTS`, an
:class:`~cwm.cost_model.task_adaptation.AdaptConfig`) is refitted after each round.

Reported per variant: the mean over tasks of ``pool best / best found`` after each round, and its
paired difference against the shipped residual with a 95 % interval (tasks resampled).

    PYTHONPATH=python .venv/bin/python bench/adapt_blend.py [--per-round 16] [--rounds 4]
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

BASELINE = "residual (shipped)"
#: name -> AdaptConfig fields; None: the prior alone
VARIANTS = {
    "prior only": None,
    BASELINE: {},
    "blend, half at 8": {"kind": "blend", "half_weight_at": 8},
    "blend, half at 16": {"kind": "blend", "half_weight_at": 16},
    "blend, half at 32": {"kind": "blend", "half_weight_at": 32},
    "blend, half at 64": {"kind": "blend", "half_weight_at": 64},
    "regression alone": {"kind": "blend", "half_weight_at": 0},
}


def curves_of(tasks: dict, per_round: int, rounds: int, variants: dict = VARIANTS) -> dict[str, list[list[float]]]:
    """``variant -> [task][round]`` best ratios; ``tasks``: key -> ``(rows, latencies, prior margins)``."""
    import numpy as np

    from adapt_sim import replay
    from cwm.cost_model.task_adaptation import AdaptConfig

    configs = {name: None if fields is None else AdaptConfig(**fields) for name, fields in variants.items()}
    out = {name: [] for name in variants}
    for key in sorted(tasks):
        x, lat, prior = (np.asarray(v, t) for v, t in zip(tasks[key], (np.float32, np.float64, np.float64)))
        for name, cfg in configs.items():
            out[name].append(replay(lat, x, prior, cfg, per_round, rounds))
    return out


def summary(curves: dict, per_round: int, baseline: str = BASELINE) -> dict:
    """Mean ratio per round and the paired difference against ``baseline`` per round."""
    import numpy as np

    from adapt_sim import paired_difference

    base = np.asarray(curves[baseline])
    return {"measured_after_round": [per_round * (i + 1) for i in range(base.shape[1])],
            "mean_best_ratio": {n: [float(v) for v in np.mean(c, 0)] for n, c in curves.items()},
            "vs_baseline_mean_ci95": {n: paired_difference(np.asarray(c), base) for n, c in curves.items()
                                      if n != baseline}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-round", type=int, default=16)
    p.add_argument("--rounds", type=int, default=4)
    fold_ranker_arguments(p, "adapt_blend.json")
    a = p.parse_args(argv)

    import numpy as np

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from within_task import zoo_tasks_with_margins

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    roots, tasks, _, _ = zoo_tasks_with_margins(model, a.work_root)
    log(f"{len(tasks)} tasks, pools of {int(np.median([len(t[1]) for t in tasks.values()]))} candidates (median)")
    curves = curves_of(tasks, a.per_round, a.rounds)
    out = summary(curves, a.per_round)
    for name, c in out["mean_best_ratio"].items():
        diff = out["vs_baseline_mean_ci95"].get(name)
        print(f"{name:<22} " + " ".join(f"{v:.3f}" for v in c) + (
            "   vs residual: " + " ".join(f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in diff) if diff else ""))
    write_result(a.out, {
        "benchmark": "adapt_blend", "date": today(), "machine": machine(), "roots": roots,
        "tasks": len(tasks), "per_round": a.per_round, "rounds": a.rounds, "variants": VARIANTS, **out,
        "note": "pool = every valid dataset candidate of a zoo training task; prior = the shipped ranker refitted "
                "without the task's network (the search benches' fold rankers)",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
