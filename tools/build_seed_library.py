"""Write a model directory's seed library (``seeds.jsonl.gz``) from the training split of dataset roots.

The library holds, per training task, its fastest measured traces and its networks
(:mod:`cwm.tuning.seed_library`); a search with ``seed_trials > 0``
measures the ones of the nearest similar workloads first (:mod:`cwm.tuning.seeded_search`).
Held-out tasks of any root are left out, and the tool checks it.

    PYTHONPATH=python .venv/bin/python tools/build_seed_library.py python/cwm/default_model \
        --data data/dataset --data data/dataset_breadth [--per-task 3]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--data", action="append", required=True, help="a dataset root (repeatable)")
    parser.add_argument("--per-task", type=int, default=3, help="fastest traces kept per task (default 3)")
    args = parser.parse_args(argv)

    from cwm.dataset.loader import DatasetLoader
    from cwm.tuning.seed_library import FILE_NAME, SeedLibrary

    start = time.perf_counter()
    library = SeedLibrary.from_datasets(args.data, per_task=args.per_task, log=print)
    held_out = {k for root in args.data for k in DatasetLoader(root).task_keys("test")}
    leaked = held_out & {e.key for e in library.entries}
    if leaked:
        raise SystemExit(f"held-out tasks in the library: {sorted(leaked)}")
    path = args.model_dir / FILE_NAME
    library.save(path)
    print(f"wrote {path}: {len(library)} tasks, {len(library.signatures())} design-space signatures, "
          f"{path.stat().st_size / 1e3:.0f} kB, {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
