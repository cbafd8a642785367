"""Does the ranker gain from twice the candidates per breadth workload? Measured on the training
tasks only (issue #12, deliverable 5; docs/decisions.md §69).

``data/dataset_breadth`` holds 32 candidates for each generated workload, measured on a Zen 5
EPYC (``mcpu=znver5``). ``data/dataset_breadth_zen4`` re-collects the same workloads on a Zen 4
EPYC with 64 candidates each (16 random + 48 from the search, seed 1), the cheapest first; a task
is ranked only against candidates of its own collection, so the two CPUs never meet in one query.
The rows (the breadth tasks fitted on in every fold):

* ``zen5_32``: the shipped data, every breadth task from ``data/dataset_breadth``;
* ``zen4_64``: each re-collected task with all of its Zen 4 candidates, the others as shipped;
* ``zen4_32``: each re-collected task's Zen 4 candidates cut to a seeded 32 (the CPU changes, the
  count does not), the other tasks as shipped.

Each row gets the protocol of ``bench/vector_alignment.py``: leave one network out over the zoo's
training tasks (measured on Zen 5), the shipped ranker recipe, ranker seeds 0, 1, 2, and the
search replay (the pool best over the best found after each round of 4 measured).

    PYTHONPATH=python .venv/bin/python bench/breadth_candidates.py [--zen4-data data/dataset_breadth_zen4]
        [--rows zen5_32,zen4_64]

``--rows`` measures only the rows named (``zen5_32``, the base of the replay's paired intervals,
always among them).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def recollected_tasks(root: str, breadth: list[dict], setup: dict, log, with_fb: bool = False) -> list[dict]:
    """The probe rows of every finished task of ``root`` that is a breadth task of ``setup``, with
    that task's design-space reference and origin (the same workload, so the same reference);
    ``with_fb``: also each task's action rows (``fb``, the same seeded subset as the rows)."""
    from cwm import native
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.probe_features import probe_subset, task_representations

    loader, by_key = DatasetLoader(root), {t["key"]: t for t in breadth}
    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    cache = Path.home() / ".cache" / "cwm" / "probe"
    keys = [k for k in loader.task_keys("train") if k in by_key and loader.store.is_finished(k)]
    out = []
    for i, key in enumerate(keys):
        arrays = task_representations(loader, setup["model"], key, target, cache, setup["fingerprint"], 64, 0,
                                      with_et=False, with_store=False)
        if arrays is not None:
            old = by_key[key]
            if with_fb:
                arrays["fb"] = native.featurize_batch([t.trace for t in probe_subset(loader.trajectories(key), 64, 0)])
            out.append({**arrays, **{f: old[f] for f in ("key", "weight", "networks", "origin", "ref")}})
        if (i + 1) % 50 == 0:
            log(f"{root}: {i + 1}/{len(keys)} tasks")
    return out


#: the rows of the bench, in order; ``zen5_32`` is the base of the replay's paired intervals
ROWS = ("zen5_32", "zen4_64", "zen4_32")


def variants(breadth: list[dict], zen4: list[dict]) -> dict:
    from ranker_data_scaling import subset

    again = {t["key"] for t in zen4}
    rest = [t for t in breadth if t["key"] not in again]
    return dict(zip(ROWS, (breadth, zen4 + rest, subset(zen4, "records32") + rest)))


def main(argv=None) -> int:
    from vector_alignment import network_and_replay, save_progress, stopwatch_log, training_arguments, training_setup

    args = training_arguments(argv, __doc__, "probe_breadth_candidates.json", lists=("rows",),
                              paths={"zen4-data": ROOT / "data" / "dataset_breadth_zen4"})
    rows = args.rows or list(ROWS)
    if "zen5_32" not in rows or not set(rows) <= set(ROWS):
        raise SystemExit(f"--rows {','.join(rows)}: name rows of {', '.join(ROWS)}, zen5_32 among them")
    zen4_root = args.zen4_data
    from common import machine

    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data)
    tasks, breadth, cfg = setup["tasks"], setup["fit_only"], setup["model"].ranker.cfg
    zen4 = recollected_tasks(zen4_root, breadth, setup, log)
    log(f"{len(zen4)} breadth tasks re-collected on Zen 4, {int(np.mean([len(t['lat']) for t in zen4]))} "
        "candidates each on average")
    out = {"benchmark": "probe_breadth_candidates", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "split": "train", "protocol": "leave one network out, the breadth tasks fitted on; search replay",
           "model_fingerprint": setup["fingerprint"], "tasks": len(tasks), "fit_only_tasks": len(breadth),
           "recollected_tasks": len(zen4), "network": {}, "replay": {}}
    curves = {}
    for name, fit_only in variants(breadth, zen4).items():
        if name not in rows:
            continue
        network_and_replay(out, curves, name, "zen5_32", tasks, fit_only, cfg, log)
        save_progress(args.out, out, start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
