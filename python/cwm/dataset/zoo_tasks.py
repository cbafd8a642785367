"""Register the zoo's tuning tasks in a dataset and fix the train/test split.

Held-out networks (decided in issue #3): MobileNetV2 and OPT-125m. The test set is
every task that appears *only* in held-out networks; a task shared with a training
network is a training task (it is seen in training anyway).
"""
from __future__ import annotations

import json
from pathlib import Path

HELDOUT_NETWORKS = ("mobilenet_v2", "opt_125m")


def register_zoo_tasks(root, networks=None, cache_dir: str | None = None) -> str:
    """Extract (cached) and register the tasks of ``networks`` (default: the dataset's networks,
    :data:`cwm.frontends.zoo.DATASET_NETWORKS`)."""
    from cwm.dataset.store import DatasetStore, register_task
    from cwm.frontends.task_cache import zoo_tasks
    from cwm.frontends.zoo import DATASET_NETWORKS

    names = list(networks or DATASET_NETWORKS)
    table = zoo_tasks(names, cache_dir=cache_dir)
    store = DatasetStore(root)
    for t in table:
        register_task(store, t.name, t.mod, dict(t.weights), flop=t.flop)
    write_split(root)
    summary = table.summary()
    lines = ["| network | tasks | shared with another network | total weight |", "|---|---|---|---|"]
    for net, row in summary["networks"].items():
        lines.append(f"| {net} | {row['tasks']} | {row['shared']} | {row['weight']} |")
    lines.append(f"| **unique overall** | {summary['unique_tasks']} | {summary['shared_tasks']} | "
                 f"{summary['total_weight']} |")
    return "\n".join(lines)


def write_split(root, heldout=HELDOUT_NETWORKS) -> dict:
    from cwm.dataset.store import DatasetStore, _atomic_write

    store = DatasetStore(root)
    test, train = [], []
    for key in store.task_keys():
        nets = set(store.get_task(key).get("networks", {}))
        (test if nets and nets <= set(heldout) else train).append(key)
    split = {"heldout_networks": list(heldout), "test_tasks": test, "train_tasks": train,
             "rule": "test = tasks that occur only in held-out networks"}
    _atomic_write(Path(root) / "split.json", (json.dumps(split, indent=1) + "\n").encode())
    return split
