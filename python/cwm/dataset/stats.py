"""Counts of a dataset (``cwm dataset stats``)."""
from __future__ import annotations

from pathlib import Path

from cwm.dataset.store import DatasetError, DatasetStore, read_json


def load_split(root) -> dict:
    """``split.json`` (``{}`` while none was written); an unparsable one is a
    :class:`~cwm.dataset.store.DatasetError` naming it."""
    path = Path(root) / "split.json"
    if not path.exists():
        return {}
    split = read_json(path, "split")
    if not isinstance(split, dict) or not all(isinstance(split.get(k, []), list)
                                              for k in ("test_tasks", "train_tasks")):
        raise DatasetError(f"{path}: split is not a JSON object with test_tasks/train_tasks lists")
    return split


def dataset_stats(root, skip_corrupt: bool = False) -> dict:
    if not Path(root).is_dir():
        raise DatasetError(f"{root}: no dataset here (not a folder)")
    store = DatasetStore(root)
    keys = store.task_keys()
    networks, records, finished = set(), 0, 0
    for key in keys:
        meta = store.get_task(key)
        networks.update(meta.get("networks", {}))
        records += len(store.records(key, skip_corrupt=skip_corrupt))
        finished += store.is_finished(key)
    split = load_split(root)
    return {"tasks": len(keys), "finished_tasks": finished, "records": records, "networks": sorted(networks),
            "heldout_tasks": len(split.get("test_tasks", []))}
