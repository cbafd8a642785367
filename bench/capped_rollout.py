"""Does a rollout that remembers rank better? The shipped transition with its translations capped
(``TransitionConfig.translation_bound``), nothing retrained, against the shipped rollout; leave
one network out on the training tasks (issue #12; docs/decisions.md §100).

The shipped transition forgets (decision 96): a tenth of its translations are long enough to
reset the state. Capped at ``--bound``, the same weights keep ``z_0`` and the early actions'
numbers (``bench/rollout_memory.py --model``). This fits the search benches' fold rankers (the
shipped ranker config and seed, every training task of the shipped roots but the network's, the
breadth workloads included) on the shipped model's ranker rows and on the capped model's (whose
``ẑ_T - z_0`` and centred copy change; every other column is the same), both in the run, and
compares them on each zoo training task: pairwise accuracy, per-task top-1 (best ÷ pick) and
the best found among the first 16 / 32 / 48 / 64 of the order, with paired 95 % intervals
(tasks resampled; :func:`top_rerank.summary`).

With ``--transition DIR`` (``bench/transition_corpus.py --save DIR``) the variant is the shipped
model rolling out with that trained TransH instead, its own rollout form (bound, normalisation)
included: decision 99's comparison of a transition trained with the cap.

    PYTHONPATH=python .venv/bin/python bench/capped_rollout.py [--bound 0.3 | --transition DIR] [--out NAME]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402

BASELINE = "fold ranker (shipped rollout)"


def capped(model, bound: float):
    """``model`` rolling out with its translations capped at ``bound`` (the same weights)."""
    from dataclasses import replace

    model.tcfg = replace(model.tcfg, translation_bound=bound)
    model._core = None  # the native evaluator holds the old config
    return model


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bound", type=float, default=0.3)
    p.add_argument("--transition", default=None, metavar="DIR",
                   help="the variant rolls out with this trained TransH (bench/transition_corpus.py --save) "
                        "instead of the shipped weights capped at --bound")
    p.add_argument("--out", default=None, help="default capped_rollout.json, or capped_rollout_trained.json")
    a = p.parse_args(argv)
    if not a.bound > 0:
        raise SystemExit(f"--bound {a.bound}: must be positive")

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from fold_rankers import training_rows
    from top_rerank import FOUND_AFTER, compare_fold_rankers
    from within_task import zoo_tasks

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    other = WorldModel.load(default_model_dir())
    if a.transition:
        other.use_transition(a.transition)
        bound = other.tcfg.translation_bound
        variant = f"fold ranker, trained transition ({Path(a.transition).name}, bound {bound:g})"
    else:
        bound = a.bound
        variant = f"fold ranker, translations capped at {bound:g}"
        capped(other, bound)
    roots, union, rows, _, folds, zoo = zoo_tasks(model)
    capped_rows, _ = training_rows(other, union)
    log(f"capped rows of {len(capped_rows)} training tasks ({time.perf_counter() - start:.0f} s)")
    out, tasks = compare_fold_rankers(model.ranker.cfg, rows, capped_rows, folds, zoo, BASELINE, variant, start)
    out_name = a.out or ("capped_rollout_trained.json" if a.transition else "capped_rollout.json")
    write_result(out_name, {
        "benchmark": "capped_rollout", "date": today(), "machine": machine(), "roots": roots, "bound": bound,
        "transition": other.meta.get("transition_source", "shipped weights, capped"),
        "tasks": tasks, "found_after": list(FOUND_AFTER), "by_ranker": out,
        "note": "fold rankers: the shipped ranker config and seed fitted on every training task of the shipped roots "
                "but the network's, on the shipped model's rows and on the rows of the same model with "
                + ("the trained transition in place of the shipped one" if a.transition else
                   "its translations capped (nothing retrained)") + ", both fitted in the run",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
