"""A tuning database shared by the compiles of one machine (issue #14).

A task already tuned by an earlier compile (the same BERT layer in GPT-2, ViT or a second BERT)
starts from its records and does not spend the budget on them again. The shared database is a
MetaSchedule JSON database (:mod:`cwm.tuning.json_database`: the same two JSON-lines files) per
target, in ``<root>/<target key>/`` (default root ``~/.cache/cwm/tuning``; ``CWM_TUNING_CACHE``
or ``CompileOptions.tuning_cache`` name another, ``off`` turns it off). A workload is found by
MetaSchedule's structural hash and then structural equality, for the exact target
(``target.json`` in the folder says which one, ``mcpu`` included).

* :meth:`SharedDatabase.import_into` copies a compile's tasks' records into its work dir before
  tuning (records the work dir already has are not copied twice);
* :meth:`SharedDatabase.export_from` appends the work dir's records of those tasks afterwards,
  also when tuning was interrupted.

**Append-only, no duplicates, two compiles at once.** Both hold the folder's lock
(:func:`cwm.dirlock.lock_dir`, an ``flock``: freed by the kernel when its holder dies). Both
append whole lines with one write and ``fsync``; a line a killed process cut short is dropped
when the folder is next opened (:func:`cwm.tuning.json_database.check_database`), and a record
already present (the same trace, latencies, target and arguments) is never appended again, so
an export repeated after ``kill -9`` adds only what is missing. Records are copied as text: no
trace is replayed here (the work dir's database replays them when it opens).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

ENV = "CWM_TUNING_CACHE"
OFF = ("off", "0", "false", "no", "none")
TARGET_FILE = "target.json"


def default_root() -> str:
    return str(Path.home() / ".cache" / "cwm" / "tuning")


def resolve_root(spec=True) -> str | None:
    """The shared database's root folder for ``CompileOptions.tuning_cache``: ``True`` (the
    default: ``$CWM_TUNING_CACHE``, else ``~/.cache/cwm/tuning``), a path, or ``False`` / ``"off"``
    (no shared database: None). ``CWM_TUNING_CACHE=off`` turns the default off."""
    if spec is False or spec is None:
        return None
    if spec is True:
        env = os.environ.get(ENV, "").strip()
        if env.lower() in OFF:
            return None
        return env or default_root()
    text = os.fspath(spec)
    return None if text.strip().lower() in OFF else text


def target_key(target) -> tuple[str, dict]:
    """``(16 hex digits, the target as a dict)``: records are shared for the exact same target."""
    config = json.loads(str(target))
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16], config


def _canonical(record) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


class _Files:
    """The two files of a JSON database folder, parsed as text (no trace replayed)."""

    def __init__(self, folder: str):
        from cwm.tuning.json_database import RECORD_FILE, WORKLOAD_FILE, check_database

        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        check_database(folder)  # a line cut short by a killed writer is dropped; bad lines named
        self.workload_path, self.record_path = os.path.join(folder, WORKLOAD_FILE), os.path.join(folder, RECORD_FILE)
        self.workloads = [json.loads(line) for line in _lines(self.workload_path)]
        self.records: dict[int, set] = {}
        for line in _lines(self.record_path):
            index, record = json.loads(line)
            self.records.setdefault(int(index), set()).add(_canonical(record))
        self._decoded: dict[int, object] = {}

    def find(self, shash: str, mod) -> int | None:
        """The line of the workload structurally equal to ``mod`` (hash ``shash``), or None."""
        import tvm_ffi
        from tvm.s_tir import meta_schedule as ms

        for index, (stored_hash, _) in enumerate(self.workloads):
            if stored_hash != shash:
                continue
            if index not in self._decoded:
                self._decoded[index] = ms.database.Workload.from_json(self.workloads[index]).mod
            if tvm_ffi.structural_equal(self._decoded[index], mod):
                return index
        return None

    def add_workload(self, entry: list) -> int:
        _append(self.workload_path, [json.dumps(entry, separators=(",", ":"))])
        self.workloads.append(entry)
        return len(self.workloads) - 1

    def add_records(self, index: int, records: list) -> int:
        """Append the ``records`` (parsed JSON) of workload ``index`` that are not there yet."""
        have = self.records.setdefault(index, set())
        new = []
        for record in records:
            key = _canonical(record)
            if key not in have:
                have.add(key)
                new.append(json.dumps([index, record], separators=(",", ":")))
        _append(self.record_path, new)
        return len(new)

    def records_of(self, index: int) -> list:
        return [json.loads(text) for text in sorted(self.records.get(index, ()))]


def _lines(path: str) -> list:
    if not os.path.isfile(path):
        return []
    with open(path, "rb") as f:
        return [line for line in f.read().split(b"\n") if line.strip()]


def _append(path: str, lines: list) -> None:
    """Whole lines, one write, fsync-ed (a kill leaves at most one partial last line)."""
    if not lines:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, ("\n".join(lines) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _workload_entry(task) -> tuple[str, list, object]:
    """``(structural hash, [hash, module base64] as a database stores it, the module)`` of a task."""
    from tvm.s_tir import meta_schedule as ms

    mod = task.dispatched[0]
    entry = [str(x) for x in ms.database.Workload(mod).as_json()]
    return entry[0], entry, mod


def _copy(source: _Files, dest: _Files, tasks) -> list[int]:
    """Append ``source``'s records of each task that ``dest`` lacks (adding the workload line when
    ``dest`` has none); the number appended per task."""
    counts = []
    for task in tasks:
        shash, entry, mod = _workload_entry(task)
        found = source.find(shash, mod)
        if found is None or not source.records.get(found):
            counts.append(0)
            continue
        index = dest.find(shash, mod)
        if index is None:
            index = dest.add_workload(entry)
        counts.append(dest.add_records(index, source.records_of(found)))
    return counts


class SharedDatabase:
    """The shared records of one target under ``root``."""

    def __init__(self, root: str, target):
        self.key, self.target = target_key(target)
        self.root = os.fspath(root)
        self.folder = os.path.join(self.root, self.key)

    def _locked(self):
        from cwm.dirlock import lock_dir

        os.makedirs(self.folder, exist_ok=True)
        target_file = os.path.join(self.folder, TARGET_FILE)
        if not os.path.isfile(target_file):
            tmp = f"{target_file}.{os.getpid()}.tmp"
            Path(tmp).write_text(json.dumps(self.target, indent=1, sort_keys=True) + "\n")
            os.replace(tmp, target_file)
        return lock_dir(self.folder, label="shared tuning database")

    def import_into(self, work_dir: str, tasks) -> list[int]:
        """Copy the shared records of ``tasks`` into ``work_dir``'s database (the caller holds its
        lock); returns the number of records copied per task."""
        with self._locked():
            return _copy(_Files(self.folder), _Files(work_dir), tasks)

    def export_from(self, work_dir: str, tasks) -> int:
        """Append ``work_dir``'s records of ``tasks`` that the shared database lacks; returns how many."""
        with self._locked():
            return sum(_copy(_Files(work_dir), _Files(self.folder), tasks))

    def count(self) -> int:
        """Records stored (all workloads)."""
        with self._locked():
            return sum(len(v) for v in _Files(self.folder).records.values())
