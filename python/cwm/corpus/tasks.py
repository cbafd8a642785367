"""Register generated corpus workloads as *measured* tasks of a dataset (issue #12: ranker breadth).

The ranker is trained on measured records, and so far those come from the 63 training tasks of
the zoo. The corpus (:mod:`cwm.corpus.build`) lists a thousand generated workloads that no
held-out network contains. :func:`register_corpus_tasks` puts a seeded, family-stratified
sample of them into a dataset root of their own, so that ``cwm dataset collect --root ROOT``
measures their candidates like any other task, and the zoo's dataset and its held-out split stay
as they are.

Each task is registered under the "network" ``corpus/<family>`` with weight 1, so the split
(:func:`cwm.dataset.zoo_tasks.write_split`) puts every one of them in training. A workload whose
structural hash is a held-out task's (the corpus excludes them when it is built; this checks
again against ``heldout_dataset``) is skipped.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np


def corpus_sample(listing: list[dict], count: int, seed: int) -> list[dict]:
    """``count`` entries of ``listing``, round-robin over the families in sorted order, each
    family's entries in a seeded random order (the same ``seed`` gives the same sample)."""
    rng = np.random.default_rng(seed)
    by_family = defaultdict(list)
    for entry in listing:
        by_family[entry["family"]].append(entry)
    queues = {f: [entries[i] for i in rng.permutation(len(entries))] for f, entries in sorted(by_family.items())}
    chosen = []
    while len(chosen) < count and any(queues.values()):
        for family in sorted(queues):
            if queues[family] and len(chosen) < count:
                chosen.append(queues[family].pop(0))
    return chosen


def register_corpus_tasks(root, corpus_root, count: int, seed: int = 0, heldout_dataset=None) -> str:
    """Register ``count`` workloads of ``corpus_root``'s listing in the dataset at ``root``;
    returns a table of tasks per family. Registering again adds nothing twice."""
    from cwm.corpus.generator import heldout_keys
    from cwm.dataset.store import DatasetError, DatasetStore, read_json, register_task
    from cwm.dataset.zoo_tasks import write_split
    from cwm.workload_key import task_key

    manifest = read_json(Path(corpus_root) / "manifest.json", "corpus manifest")
    listing = manifest.get("listing") or []
    if not listing:
        raise DatasetError(f"{corpus_root}: the corpus manifest lists no workloads")
    exclude = heldout_keys(heldout_dataset) if heldout_dataset is not None else set()
    store = DatasetStore(root)
    per_family, skipped = Counter(), 0
    for entry in corpus_sample(listing, count, seed):
        mod = _build(entry)
        key = task_key(mod) if mod is not None else None
        if key != entry["key"]:
            raise DatasetError(f"{corpus_root}: workload {entry['name']} builds to key {key}, the listing says "
                               f"{entry['key']}: the corpus was built by other generator code")
        if key in exclude:
            skipped += 1
            continue
        register_task(store, entry["name"], mod, {f"corpus/{entry['family']}": 1}, family=entry["family"],
                      params=entry["params"], source=str(corpus_root))
        per_family[entry["family"]] += 1
    split = write_split(root)
    lines = ["| family | tasks |", "|---|---|"] + [f"| {f} | {n} |" for f, n in sorted(per_family.items())]
    lines.append(f"| **registered** | {sum(per_family.values())} (skipped as held-out: {skipped}; "
                 f"train tasks in {root}: {len(split['train_tasks'])}, test: {len(split['test_tasks'])}) |")
    return "\n".join(lines)


def _build(entry: dict):
    """The module of one listing entry: an operator family's, or the task of a block
    (``block_<kind>``: the block is imported again and its task with the listed key is taken)."""
    from cwm.corpus.blocks import block_tasks
    from cwm.corpus.generator import build

    family, params = entry["family"], dict(entry["params"])
    if not family.startswith("block_"):
        return build(family, params)
    params.pop("task", None)
    for task in block_tasks(family[len("block_"):], params):
        if task.key == entry["key"]:
            return task.mod
    return None
