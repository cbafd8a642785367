"""Counts of a dataset (``cwm dataset stats``)."""
from __future__ import annotations

import json
from pathlib import Path

from cwm.dataset.store import DatasetStore


def load_split(root) -> dict:
    path = Path(root) / "split.json"
    return json.loads(path.read_text()) if path.exists() else {}


def dataset_stats(root, skip_corrupt: bool = False) -> dict:
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
