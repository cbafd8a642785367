"""How much of a candidate's actions, and of its workload, does the rolled-out state ``ẑ_T`` keep?
(issue #12; training tasks only; a report on the shipped transition.)

A TransH step projects the state on the action's hyperplane, adds the action's translation and
(``normalize_state``) rescales to unit norm. Where the translations are long against the unit
state, each step all but resets the state to the latest translation's direction, and ``ẑ_T``
forgets what came before. This measures that on the shipped model, with the NumPy reference
rollout (:func:`cwm.model.transition.rollout_numpy`, the native core's spec), on ``--traces``
candidates of each training task of the zoo root:

* ``z0``: the largest change of ``ẑ_T`` when ``z_0`` (the workload's encoding) is replaced by a
  random unit vector;
* ``by_distance_from_end``: the largest change of ``ẑ_T`` when one action's numbers (tile
  factors, annotation values, ...) are doubled, by how many actions from the end that action is;
* ``translation_norm``: the lengths of the translations ``d`` of every action;
* ``spread``: for scale, the median over tasks of the largest difference between two of the
  task's candidates' ``ẑ_T``.

    PYTHONPATH=python .venv/bin/python bench/rollout_memory.py [--traces 4]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402

DISTANCES = (1, 2, 3, 5, 10, 20, 30)  # reported distances from the end (an action at d: d actions follow it)


def translations(ints, numbers, weights: dict, cfg):
    """``|d|`` of every live action of a padded batch (the plain TransH's translation lengths)."""
    import numpy as np

    from cwm.model.transition import hidden_numpy, params_numpy

    kind, x = hidden_numpy(ints, numbers, weights, cfg)
    return np.linalg.norm(params_numpy(x, weights, cfg)[1], axis=-1)[kind != 0]


def task_memory(z0, ints, numbers, lengths, weights: dict, cfg, rng) -> dict:
    """The measurements of the module docstring on one task's padded batch."""
    import numpy as np

    from cwm.model.transition import rollout_numpy

    z = rollout_numpy(np.repeat(z0[None], len(ints), 0), ints, numbers, weights, cfg)
    other = rng.normal(size=z0.shape)
    other = (other / np.linalg.norm(other)).astype(np.float32)
    z_other = rollout_numpy(np.repeat(other[None], len(ints), 0), ints, numbers, weights, cfg)
    by_distance: dict[int, float] = {}
    for i in range(len(ints)):
        n = int(lengths[i])
        for t in range(n):
            if not numbers[i, t].any():
                continue
            doubled = numbers[i:i + 1].copy()
            doubled[0, t] *= 2.0
            change = float(np.abs(rollout_numpy(z0[None], ints[i:i + 1], doubled, weights, cfg)[0] - z[i]).max())
            d = n - 1 - t
            by_distance[d] = max(by_distance.get(d, 0.0), change)
    spread = float(max(np.abs(z[i] - z[j]).max() for i in range(len(z)) for j in range(i + 1, len(z)))) \
        if len(z) > 1 else 0.0
    return {"z0": float(np.abs(z - z_other).max()), "by_distance": by_distance, "spread": spread}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="data/dataset", help="a dataset root (its training tasks are read)")
    p.add_argument("--traces", type=int, default=4, help="candidates per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default=None,
                   help="a model directory (default: the shipped model), e.g. a copy given a bounded transition "
                        "by tools/refit_ranker.py --transition")
    p.add_argument("--out", default="rollout_memory.json")
    a = p.parse_args(argv)

    import numpy as np

    from cwm import native
    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.transition import numpy_weights
    from cwm.model.world_model import WorldModel

    start = time.perf_counter()
    model = WorldModel.load(a.model or default_model_dir())
    weights, cfg = numpy_weights(model.transition), model.tcfg
    loader = DatasetLoader(a.data)
    rng = np.random.default_rng(a.seed)
    per_task, norms = [], []
    for key in loader.task_keys("train"):
        trajs = [t for t in loader.trajectories(key) if t.latency is not None][:a.traces]
        if len(trajs) < 2:
            continue
        fb = native.featurize_batch([t.trace for t in trajs])
        per_task.append(task_memory(model.z0(loader.workload(key)), fb.ints, fb.numbers, fb.lengths, weights, cfg,
                                    rng))
        norms.append(translations(fb.ints, fb.numbers, weights, cfg))
    norms = np.concatenate(norms)
    z0 = np.array([t["z0"] for t in per_task])
    spread = float(np.median([t["spread"] for t in per_task]))

    def at(d):
        v = [t["by_distance"][d] for t in per_task if d in t["by_distance"]]
        return {"tasks": len(v), "median": float(np.median(v)) if v else None, "max": float(np.max(v)) if v else None}

    out = {"tasks": len(per_task), "traces_per_task": a.traces, "spread_median": spread,
           "z0": {"median": float(np.median(z0)), "max": float(z0.max())},
           "by_distance_from_end": {str(d): at(d) for d in DISTANCES},
           "translation_norm": {q: float(np.percentile(norms, p)) for q, p in
                                (("p10", 10), ("median", 50), ("p90", 90))}}
    log(f"{len(per_task)} tasks: ẑ_T spread between candidates {spread:.3g} (median); z0 replaced: "
        f"{out['z0']['median']:.2g} median, {out['z0']['max']:.2g} max; |d| median {out['translation_norm']['median']:.1f}")
    for d, m in out["by_distance_from_end"].items():
        print(f"an action {d:>2} from the end, numbers doubled: largest change of ẑ_T, median over tasks "
              f"{m['median']:.2g}, max {m['max']:.2g} ({m['tasks']} tasks)")
    write_result(a.out, {"benchmark": "rollout_memory", "date": today(), "machine": machine(), "data": a.data,
                         "model": a.model or "shipped", "transition": cfg.to_dict(),
                         "transition_source": model.meta.get("transition_source"), **out,
                         "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
