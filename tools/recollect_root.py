"""Start a re-collection root: the usable tasks of a finished dataset root, to be measured again here.

A re-collection root (``data/dataset_breadth_zen4``, decision 69) holds the same workloads as its
source with candidates of its own, measured on this machine; listed before the source,
:func:`cwm.dataset.union.open_datasets` reads each task it has finished from it and the rest from
the source. This writes the source's task files (without their collection time) and split for
every task with at least 2 valid latencies, and prints their keys cheapest first (by the source's
collection time), the order to give ``cwm dataset collect --tasks`` so that a collection stopped
early has re-collected as many tasks as it could::

    PYTHONPATH=python .venv/bin/python tools/recollect_root.py data/dataset_breadth data/dataset_breadth_zen4 > keys.txt
    PYTHONPATH=python .venv/bin/python -m cwm dataset collect --root data/dataset_breadth_zen4 \\
        --random 16 --trials 48 --seed 1 --tasks $(cat keys.txt)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def usable(record: dict) -> bool:
    return bool(record.get("run_secs")) and not record.get("run_error") and not record.get("build_error")


def start_recollection(source, dest) -> list[str]:
    """Write ``dest``'s task files and split from ``source``; returns the keys, cheapest first."""
    from cwm.dataset.stats import load_split
    from cwm.dataset.store import DatasetError, DatasetStore

    src, dst = DatasetStore(source), DatasetStore(dest)
    if dst.manifest():
        raise DatasetError(f"{dest}: already holds a collection; a re-collection root starts empty")
    timed = []
    for key in src.task_keys():
        if sum(usable(r) for r in src.records(key)) < 2:
            continue
        meta = src.get_task(key)
        timed.append((meta.pop("collect_wall_s", 0.0), key))
        dst.put_task(key, meta)
    split, keys = dict(load_split(source)), {k for _, k in timed}
    for part in ("train_tasks", "test_tasks"):  # the source's split, of the tasks taken
        split[part] = sorted(keys & set(split.get(part, [])))
    Path(dest, "split.json").write_text(json.dumps(split, indent=1))
    return [key for _, key in sorted(timed)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("dest")
    args = ap.parse_args(argv)
    print(",".join(start_recollection(args.source, args.dest)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
