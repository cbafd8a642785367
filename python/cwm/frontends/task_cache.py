"""The zoo networks' tasks, extracted once and cached: ``<cache_dir>/<name>[_small][.torch].json``.

:func:`zoo_tasks` extracts (:func:`cwm.frontends.tasks.extract_tasks`) or loads the tasks of zoo
networks and merges them into a :class:`~cwm.frontends.tasks.TaskTable`; :func:`save` and
:func:`load` read and write one network's file.

The file holds metadata (format version, network, importer, build fingerprint of the zoo
network, target, TVM version) and one entry per task: ``key``, ``name``, ``weight``, ``flop``
and ``mod`` (``tvm.ir.save_json`` of the task's TIR module). A file written for another
target, importer, format or TVM version, or for an older definition of the network, is
ignored (and rewritten by the caller); so is one whose stored keys no longer match the
structural hash of the reloaded modules.
"""
from __future__ import annotations

import json
import os
from typing import Iterable

from cwm.frontends.tasks import Task, TaskTable, extract_tasks
from cwm.workload_key import task_key

FORMAT_VERSION = 1
DEFAULT_DIR = os.path.join("work_dirs", "zoo_cache")


def path(name: str, cache_dir: str | None = None, via: str = "onnx", small: bool = False) -> str:
    stem = name + ("_small" if small else "") + ("" if via == "onnx" else f".{via}")
    return os.path.join(cache_dir or DEFAULT_DIR, f"{stem}.json")


def onnx_dir(cache_dir: str | None = None) -> str:
    """Where the exported ONNX files of the cached networks live: ``<cache_dir>/onnx``."""
    return os.path.join(cache_dir or DEFAULT_DIR, "onnx")


def _meta(name: str, target, via: str, small: bool) -> dict:
    import tvm

    from cwm.frontends.zoo import NETWORKS, fingerprint

    build = fingerprint(name, small) if name in NETWORKS else None
    return {"format": FORMAT_VERSION, "network": name, "via": via, "small": bool(small),
            "build": build, "target": str(target), "tvm": tvm.__version__}


def save(name: str, tasks: list, target, cache_dir: str | None = None, via: str = "onnx",
         small: bool = False) -> str:
    """Write ``tasks`` (one network's :class:`~cwm.frontends.tasks.Task` list) atomically."""
    import tvm

    out = path(name, cache_dir, via, small)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    doc = dict(_meta(name, target, via, small),
               tasks=[{"key": t.key, "name": t.name, "weight": t.weight, "flop": t.flop,
                       "mod": tvm.ir.save_json(t.mod)} for t in tasks])
    tmp = f"{out}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, out)
    return out


def load(name: str, target, cache_dir: str | None = None, via: str = "onnx",
         small: bool = False):
    """The cached task list of ``name``, or ``None`` if absent, stale or unreadable."""
    import tvm

    src = path(name, cache_dir, via, small)
    try:
        with open(src) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if any(doc.get(k) != v for k, v in _meta(name, target, via, small).items()):
        return None
    tasks = []
    for entry in doc.get("tasks", []):
        mod = tvm.ir.load_json(entry["mod"])
        if task_key(mod) != entry["key"]:
            return None
        tasks.append(Task(entry["key"], entry["name"], mod, entry["flop"],
                          {name: int(entry["weight"])}))
    return tasks


def zoo_tasks(names: Iterable[str], target=None, cache_dir: str | None = None,
              via: str = "onnx", small: bool = False, refresh: bool = False) -> TaskTable:
    """Extract (or load from the cache) the tasks of zoo networks ``names`` and merge them.

    A name given twice is merged once. ``via`` picks the importer ("onnx" or "torch");
    ``refresh=True`` re-extracts and overwrites the cache. Exported ONNX files are kept
    in ``<cache_dir>/onnx/``.
    """
    from cwm.target_spec import host_target

    target = target or host_target()
    table = TaskTable()
    for name in dict.fromkeys(names):
        tasks = None if refresh else load(name, target, cache_dir, via, small)
        if tasks is None:
            tasks = network_tasks(name, target, via, small, onnx_dir=onnx_dir(cache_dir))
            save(name, tasks, target, cache_dir, via, small)
        table.add(name, tasks)
    return table


def network_tasks(name: str, target=None, via: str = "onnx", small: bool = False,
                  onnx_dir: str | None = None) -> list:
    """Import zoo network ``name`` (ONNX files kept in ``onnx_dir``) and extract its tasks."""
    from cwm.frontends import importers

    mod = importers.import_network(name, via, cache_dir=onnx_dir, small=small)
    return extract_tasks(mod, target, network=name)
