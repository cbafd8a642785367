"""Reading the dataset back as trajectories.

A :class:`Trajectory` is one measured candidate seen as the world model sees it: the
initial state (the unscheduled workload), the canonical action sequence, any
intermediate state on demand (prefix replay), the final state and the latencies.
States are computed lazily and cached per trajectory; workloads once per task.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from cwm.dataset.store import DatasetError, DatasetStore
from cwm.dataset.stats import load_split


@dataclass
class Trajectory:
    task: str
    record: dict
    workload: object  # the unscheduled IRModule, shared by the task's trajectories
    _states: list | None = field(default=None, repr=False)

    @property
    def trace(self) -> str:
        return self.record["trace"]

    @property
    def latencies(self) -> list[float] | None:
        """All measured run times (seconds), or ``None`` for a failed candidate."""
        r = self.record
        ok = r.get("run_secs") and not r.get("run_error") and not r.get("build_error")
        return list(r["run_secs"]) if ok else None

    @property
    def latency(self) -> float | None:
        """Median measured run time in seconds (``None`` if the candidate failed)."""
        lat = self.latencies
        return statistics.median(lat) if lat else None

    @cached_property
    def actions(self):
        from cwm.actions import canonicalize

        return canonicalize(self.trace).actions

    def states(self) -> list:
        """All states: ``[0]`` initial, ``[k]`` after k actions, ``[-1]`` final (one replay)."""
        if self._states is None:
            from cwm.replay import action_states

            self._states = action_states(self.workload, self.trace)
        return self._states

    def state(self, k: int):
        return self.states()[k]

    @property
    def initial_text(self) -> str:
        return self.workload.script()

    def state_text(self, k: int) -> str:
        return self.state(k).script()

    @property
    def final_text(self) -> str:
        return self.states()[-1].script()


class DatasetLoader:
    """Trajectories of a dataset, by task; ``split`` = "train" | "test" | None (all)."""

    def __init__(self, root, skip_corrupt: bool = False):
        """Opening reads ``split.json`` and writes nothing (a read-only dataset loads).

        ``skip_corrupt``: an undecodable shard gives no trajectories and a
        :class:`~cwm.dataset.store.CorruptShardWarning` instead of a ``CorruptShardError``.
        Raises :class:`~cwm.dataset.store.DatasetError` (naming the file) for a missing dataset
        folder or an unparsable ``split.json``.
        """
        if not Path(root).is_dir():
            raise DatasetError(f"{root}: no dataset here (not a folder)")
        self.store = DatasetStore(root)
        self.skip_corrupt = skip_corrupt
        self.split = load_split(root)
        self._workloads: dict = {}

    def task_keys(self, split: str | None = None) -> list[str]:
        keys = self.store.task_keys()
        if split is None:
            return keys
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train', 'test' or None, not {split!r}")
        chosen = set(self.split.get(f"{split}_tasks", []))
        return [k for k in keys if k in chosen]

    def workload(self, key: str):
        if key not in self._workloads:
            import tvm

            self._workloads[key] = tvm.ir.load_json(self.store.get_task(key)["workload"])
        return self._workloads[key]

    def trajectories(self, key: str) -> list[Trajectory]:
        records = self.store.records(key, skip_corrupt=self.skip_corrupt)
        return [Trajectory(key, r, self.workload(key)) for r in records] if records else []

    def __iter__(self):
        for key in self.task_keys():
            yield from self.trajectories(key)
