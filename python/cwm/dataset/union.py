"""Several dataset roots read as one (``cwm train --extra-data``, ``cwm probe --fit-only-data``).

The zoo dataset (``data/dataset``) holds the networks' tasks and the held-out split; breadth
roots (``cwm dataset tasks --from-corpus``) hold generated workloads that are all training
tasks. :class:`UnionLoader` gives the interface of :class:`~cwm.dataset.loader.DatasetLoader`
over them: ``task_keys(split)``, ``workload``, ``trajectories`` and a ``store`` with
``manifest()`` / ``get_task`` / ``records``. A task key is a workload's structural hash, so a key
in two roots is one task: the first root that has it finished wins, and the others' copy is not
read (their records are of the same workload, measured by another collection, maybe on another
CPU: a task's candidates are ranked only against candidates of the same collection). A task no
root has finished yet is read from the first root that lists it (its journal, as
:class:`~cwm.dataset.loader.DatasetLoader` reads it). So ``data/dataset_breadth_zen4`` listed
before ``data/dataset_breadth`` replaces each task it has re-collected, and only those.

Roots must be measured on the same kind of target: a manifest whose target differs in
anything but ``mcpu`` raises :class:`~cwm.dataset.store.DatasetError`. ``mcpu`` may differ (LLVM
names each CPU generation: ``data/dataset`` says znver5, a later AMD EPYC host znver4); a task's
candidates all come from one root, so each ranking query is measured on one machine, and the
ranker's hardware features (:func:`cwm.model.action_stats.hardware_features`) do not read it.
``store.manifest()["targets"]`` lists every root's target.
"""
from __future__ import annotations

from cwm.dataset.store import DatasetError


def open_datasets(roots, skip_corrupt: bool = False):
    """One root: its :class:`DatasetLoader`; several: a :class:`UnionLoader` of them, in order."""
    from cwm.dataset.loader import DatasetLoader

    roots = [roots] if isinstance(roots, (str, bytes)) or hasattr(roots, "__fspath__") else list(roots)
    if not roots:
        raise DatasetError("no dataset root given")
    loaders = [DatasetLoader(r, skip_corrupt=skip_corrupt) for r in roots]
    return loaders[0] if len(loaders) == 1 else UnionLoader(loaders)


def _kind(target) -> dict:
    """A target (manifest dict) without its CPU generation."""
    return {k: v for k, v in dict(target).items() if k != "mcpu"}


class _UnionStore:
    def __init__(self, union: "UnionLoader"):
        self._union = union

    def manifest(self) -> dict:
        """The first root's manifest, with every root's shards of the tasks the union reads."""
        first = dict(self._union.loaders[0].store.manifest())
        shards = {}
        for key, loader in self._union.owner.items():
            shard = loader.store.manifest().get("shards", {}).get(key)
            if shard is not None:
                shards[key] = shard
        first["shards"] = shards
        first["roots"] = [str(l.store.root) for l in self._union.loaders]
        first["targets"] = [l.store.manifest().get("target") for l in self._union.loaders]
        return first

    def get_task(self, key: str) -> dict:
        return self._union.owner[key].store.get_task(key)

    def records(self, key: str, skip_corrupt: bool = False) -> list[dict]:
        return self._union.owner[key].store.records(key, skip_corrupt=skip_corrupt)

    def task_keys(self) -> list[str]:
        return sorted(self._union.owner)


class UnionLoader:
    """Trajectories of several dataset roots, by task (see the module docstring)."""

    def __init__(self, loaders: list):
        self.loaders = list(loaders)
        self.owner: dict = {}
        target = None
        for loader in self.loaders:
            t = loader.store.manifest().get("target")
            if t is not None and target is not None and _kind(t) != _kind(target):
                raise DatasetError(f"{loader.store.root}: measured on target {t}, not the kind of "
                                   f"{target} ({self.loaders[0].store.root})")
            target = target or t
        for finished_only in (True, False):
            for loader in self.loaders:
                for key in loader.task_keys():
                    if not finished_only or loader.store.is_finished(key):
                        self.owner.setdefault(key, loader)
        self.store = _UnionStore(self)

    def task_keys(self, split: str | None = None) -> list[str]:
        """The tasks of ``split``: a task any root holds out is a test task, whichever root's copy
        is read, and never a training task."""
        if split is None:
            return sorted(self.owner)
        held_out = {k for loader in self.loaders for k in loader.task_keys("test")}
        if split == "test":
            return sorted(held_out)
        return sorted({k for loader in self.loaders for k in loader.task_keys(split)} - held_out)

    def workload(self, key: str):
        return self.owner[key].workload(key)

    def trajectories(self, key: str):
        return self.owner[key].trajectories(key)

    def __iter__(self):
        for key in self.task_keys():
            yield from self.trajectories(key)
