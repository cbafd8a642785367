"""Subgraph extraction: the MetaSchedule tasks (fused TIR kernels) of networks, deduplicated.

:func:`extract_tasks` fuses a Relax module (:func:`cwm.partition.fuse`: legalize, annotate,
fold constants, fuse ops, fuse TIR) and asks MetaSchedule for its tasks; a task's ``key`` is
the structural hash of its TIR module (:func:`cwm.workload_key.task_key`), so the same kernel
found in two networks (whatever name each network's fusion gave it) has the same key.
:class:`TaskTable` merges the tasks of several networks by key, keeping each network's weight
(how many times the kernel is called in one forward pass).
:func:`cwm.frontends.task_cache.zoo_tasks` does this for zoo networks and caches each
network's tasks in ``<cache_dir>/<name>.json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from cwm.workload_key import task_key

DEFAULT_NETWORK = "model"


@dataclass
class Task:
    """One tunable kernel.

    ``weights`` maps each network it appears in to its weight there (calls per forward
    pass); ``weight`` is their sum and ``networks`` their names, in insertion order.
    ``flop`` is ``tvm.s_tir.analysis.estimate_tir_flops`` (``None`` if it failed).
    """

    key: str
    name: str
    mod: Any
    flop: float | None
    weights: dict = field(default_factory=dict)

    @property
    def weight(self) -> int:
        return sum(self.weights.values())

    @property
    def networks(self) -> tuple:
        return tuple(self.weights)


def estimate_flop(mod) -> float | None:
    """``estimate_tir_flops(mod)``, or ``None`` where the estimator cannot handle the module."""
    from tvm.s_tir.analysis import estimate_tir_flops

    try:
        return float(estimate_tir_flops(mod))
    except Exception:  # noqa: BLE001 - the estimator rejects some loop forms; flop is optional
        return None


def extract_tasks(mod, target=None, network: str = DEFAULT_NETWORK, fused: bool = False) -> list:
    """The MetaSchedule tasks of Relax ``mod`` for ``target`` (default: host llvm).

    ``mod`` is fused first unless ``fused=True`` (on an unfused frontend module MetaSchedule
    finds no tasks). Each :class:`Task` carries ``weights={network: weight}``.
    """
    from tvm.s_tir import meta_schedule as ms

    from cwm.partition import fuse
    from cwm.target_spec import host_target

    target = target or host_target()
    fused_mod = mod if fused else fuse(mod, target)
    out = []
    for task in ms.relax_integration.extract_tasks(fused_mod, target):
        out.append(Task(task_key(task.mod), str(task.task_name), task.mod,
                        estimate_flop(task.mod), {network: int(task.weight)}))
    return out


class TaskTable:
    """Tasks of several networks merged by ``key`` (first-seen name and order kept)."""

    def __init__(self):
        self.tasks: dict[str, Task] = {}
        self.per_network: dict[str, list[str]] = {}  # network -> its task keys, in order

    @classmethod
    def from_networks(cls, tasks_by_network: dict) -> "TaskTable":
        table = cls()
        for network, tasks in tasks_by_network.items():
            table.add(network, tasks)
        return table

    def add(self, network: str, tasks: Iterable[Task]) -> None:
        """Merge ``tasks`` (their total weight is credited to ``network``)."""
        keys = self.per_network.setdefault(network, [])
        for task in tasks:
            weight = task.weight
            known = self.tasks.get(task.key)
            if known is None:
                known = self.tasks[task.key] = Task(task.key, task.name, task.mod, task.flop, {})
            known.weights[network] = known.weights.get(network, 0) + weight
            if task.key not in keys:
                keys.append(task.key)

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self):
        return iter(self.tasks.values())

    def __getitem__(self, key: str) -> Task:
        return self.tasks[key]

    @property
    def networks(self) -> list:
        return list(self.per_network)

    def summary(self) -> dict:
        """Per network: distinct tasks, total weight, tasks shared with another network;
        overall: unique tasks, tasks in more than one network, total weight."""
        per = {}
        for network, keys in self.per_network.items():
            shared = sum(1 for key in keys if len(self.tasks[key].weights) > 1)
            per[network] = {"tasks": len(keys), "shared": shared,
                            "weight": sum(self.tasks[k].weights[network] for k in keys)}
        return {"networks": per, "unique_tasks": len(self.tasks),
                "shared_tasks": sum(1 for t in self if len(t.weights) > 1),
                "total_weight": sum(t.weight for t in self)}

    def to_rows(self) -> list:
        """One dict per unique task (key, name, flop, weight, networks), heaviest FLOPs first."""
        rows = [{"key": t.key, "name": t.name, "flop": t.flop, "weight": t.weight,
                 "networks": ",".join(f"{n}x{w}" for n, w in t.weights.items())} for t in self]
        return sorted(rows, key=lambda r: (-(r["flop"] or 0.0) * r["weight"], r["key"]))
