"""Opening a MetaSchedule JSON database safely: check it, repair what can be repaired, name the rest.

**The format** (TVM's ``JSONDatabase``, two JSON-lines files in a work dir):
``database_workload.json`` holds one workload per line, ``[shash, base64 of the TIR module]``;
a workload's *index* is its 0-based line number. ``database_tuning_record.json`` holds one
measured candidate per line, ``[workload index, [trace, run_secs, target, args_info]]``. On load,
TVM replays every record's trace on the workload its index names (a record that does not fit
fails the whole load: ``Check failed: old_outputs.size() == new_outputs.size()``, or a
``ScheduleError``, naming no file), and keys the workloads by structure: a duplicate line is
loaded but not counted, so the next workload it commits gets an index that is already taken.
Two processes appending to one database (each numbering workloads by its own count) leave both
faults behind: every workload twice, and records pointing at the wrong line.

:func:`open_json_database` checks both files first (fast: JSON shape, indices, duplicates; the
traces are replayed only when TVM's own load fails or the files need repair) and repairs them:

* a line that is not JSON, not of the format, or a workload that does not decode is **dropped
  with a warning** naming the file and line (:class:`DatabaseWarning`);
* duplicate workload lines are merged into the first; every record is re-pointed at the
  workload its trace replays on (with matching argument shapes); with duplicates present the
  indices cannot be trusted, so a record is kept only when exactly one workload fits it;
* a record that fits no workload (or, after concurrent writes, more than one) is dropped.

Before a repaired file replaces the original, the original is kept next to it as
``<name>.damaged-<UTC time>``. Dropped records are only measurements: a later tuning run
measures them again. What cannot be repaired raises :class:`CorruptDatabaseError` naming the
file. The caller must hold the folder's lock (:mod:`cwm.dirlock`): this rewrites the files.
"""
from __future__ import annotations

import json
import os
import re
import time
import warnings
from dataclasses import dataclass, field

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
#: at most this many problems are listed in one warning (all of them are in ``Repair.problems``)
SHOWN_PROBLEMS = 8

_INDEX = re.compile(rb"\A\s*\[\s*(-?\d+)\s*,")


class DatabaseWarning(UserWarning):
    """Lines of a tuning database were dropped or re-pointed while opening it."""


class CorruptDatabaseError(RuntimeError):
    """A tuning database that cannot be read or repaired; the message names the file."""


@dataclass
class Repair:
    """What :func:`check_database` found and did."""

    work_dir: str
    #: ``"FILE:LINE: what is wrong"``, one per problem line (1-based line numbers)
    problems: list = field(default_factory=list)
    dropped_workloads: int = 0
    merged_workloads: int = 0
    fixed_workloads: int = 0
    dropped_records: int = 0
    moved_records: int = 0
    #: the originals kept before the files were rewritten
    backups: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.dropped_workloads or self.merged_workloads or self.fixed_workloads or self.dropped_records
                    or self.moved_records)

    def message(self) -> str:
        parts = []
        if self.merged_workloads:
            parts.append(f"merged {self.merged_workloads} duplicate workload line(s) (two processes wrote to "
                         "this database at once?)")
        if self.dropped_workloads:
            parts.append(f"dropped {self.dropped_workloads} unreadable workload line(s)")
        if self.fixed_workloads:
            parts.append(f"fixed the stored hash of {self.fixed_workloads} workload line(s)")
        if self.moved_records:
            parts.append(f"re-pointed {self.moved_records} record(s) at the workload they belong to")
        if self.dropped_records:
            parts.append(f"dropped {self.dropped_records} record(s) (re-measured by the next tuning run)")
        shown = self.problems[:SHOWN_PROBLEMS]
        more = len(self.problems) - len(shown)
        lines = [f"tuning database in {self.work_dir} repaired: " + "; ".join(parts) + "."]
        lines += [f"  {p}" for p in shown] + ([f"  ... and {more} more"] if more > 0 else [])
        if self.backups:
            lines.append("  originals kept as " + ", ".join(self.backups))
        return "\n".join(lines)


def database_paths(work_dir) -> tuple:
    work_dir = os.fspath(work_dir)
    return os.path.join(work_dir, WORKLOAD_FILE), os.path.join(work_dir, RECORD_FILE)


def drop_partial_line(path: str) -> bool:
    """Cut a last line without its newline off the JSON-lines file ``path``; True if one was.

    ``JSONDatabase`` writes one record per line; a process killed in the middle of a write
    leaves a partial line that would make the whole database unreadable.
    """
    with open(path, "rb+") as f:
        data = f.read()
        if not data or data.endswith(b"\n"):
            return False
        f.truncate(data.rfind(b"\n") + 1)
    return True


def _read_lines(path: str) -> list:
    if not os.path.isfile(path):
        return []
    try:
        with open(path, "rb") as f:
            return f.read().split(b"\n")[:-1] if os.path.getsize(path) else []
    except OSError as error:
        raise CorruptDatabaseError(f"cannot read the tuning database file {path}: {error}") from None


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = next((line for line in text if line.strip()), type(error).__name__)
    return f"{type(error).__name__}: {first.strip()[:160]}"


def _plain(value):
    """FFI containers (Array, Map, String, Integer) as plain Python values, for comparisons."""
    if isinstance(value, (str, bytes)):
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    try:
        return [_plain(v) for v in value]
    except TypeError:
        return str(value)


class _Workloads:
    """The workload file parsed: ``entries[i]`` is ``None`` (unreadable) or ``(Workload, args_info)``."""

    def __init__(self, path: str, lines: list, repair: Repair):
        import tvm_ffi
        from tvm.s_tir import meta_schedule as ms

        name = os.path.basename(path)
        self.entries, self.canonical, self.lines = [], [], []
        by_hash: dict = {}
        for number, raw in enumerate(lines):
            entry = None
            try:
                data = json.loads(raw)
                if not (isinstance(data, list) and len(data) == 2 and all(isinstance(x, str) for x in data)):
                    raise ValueError("not a [hash, module] pair")
                workload = ms.database.Workload.from_json(data)
                fresh = ms.database.Workload(workload.mod)  # TVM's own hash of the module
                shash = str(fresh.as_json()[0])
                if shash != data[0]:  # TVM would miss it on lookups and append it again
                    repair.problems.append(f"{name}:{number + 1}: stored hash {data[0]} is not its module's "
                                           f"({shash}); fixed")
                    repair.fixed_workloads += 1
                    workload, data = fresh, [shash, data[1]]
                    lines[number] = json.dumps(data, separators=(",", ":")).encode()
                entry = (workload, _args_info(workload.mod))
            except Exception as error:  # noqa: BLE001 - any failure makes the line unreadable
                repair.problems.append(f"{name}:{number + 1}: unreadable workload ({_short(error)})")
                repair.dropped_workloads += 1
                self.entries.append(None)
                self.canonical.append(None)
                continue
            first = None
            for other in by_hash.get(shash, []):
                if tvm_ffi.structural_equal(self.entries[other][0].mod, workload.mod):
                    first = other
                    break
            if first is not None:
                repair.problems.append(f"{name}:{number + 1}: duplicate of line {first + 1}")
                repair.merged_workloads += 1
                self.entries.append(entry)
                self.canonical.append(first)
                continue
            by_hash.setdefault(shash, []).append(number)
            self.entries.append(entry)
            self.canonical.append(number)
        #: the lines kept, in order, and the new index of every kept (canonical) old index
        self.kept = [i for i, c in enumerate(self.canonical) if c == i]
        self.new_index = {old: new for new, old in enumerate(self.kept)}
        self.lines = lines


def _args_info(mod):
    """The argument shapes of the workload's function, as a record stores them (None if unknown)."""
    from tvm import tirx
    from tvm.s_tir import meta_schedule as ms

    try:
        funcs = [f for _, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)]
        return [_plain(a.as_json()) for a in ms.arg_info.ArgInfo.from_prim_func(funcs[0])] if len(funcs) == 1 else None
    except Exception:  # noqa: BLE001 - the shapes only narrow the search; without them every workload is tried
        return None


def _fits(record_json, workload) -> bool:
    from tvm.s_tir import meta_schedule as ms

    try:
        ms.database.TuningRecord.from_json(record_json, workload)
        return True
    except Exception:  # noqa: BLE001 - a trace that does not replay on this workload
        return False


def _check_records(path: str, lines: list, workloads: _Workloads, replay: bool, repair: Repair) -> list:
    """The record lines to keep, re-indexed; ``replay`` replays every trace (slow path)."""
    name = os.path.basename(path)
    duplicated = repair.merged_workloads > 0  # then the indices of the records cannot be trusted
    out = []
    for number, raw in enumerate(lines):
        where = f"{name}:{number + 1}"
        try:
            data = json.loads(raw)
            if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], int)
                    and isinstance(data[1], list) and len(data[1]) == 4):
                raise ValueError("not a [workload index, record] pair")
        except ValueError as error:
            repair.problems.append(f"{where}: unreadable record ({_short(error)})")
            repair.dropped_records += 1
            continue
        index, record = data
        pointed = workloads.canonical[index] if 0 <= index < len(workloads.canonical) else None
        if not replay:
            if pointed is None:
                why = "a workload line that is unreadable" if 0 <= index < len(workloads.canonical) else \
                    f"workload line {index + 1}, which does not exist"
                repair.problems.append(f"{where}: record points at {why}")
                repair.dropped_records += 1
                continue
            target = pointed
        else:
            target = _place(record, pointed, workloads, duplicated)
            if target is None:
                why = "no workload of this database" if not duplicated else \
                    "no single workload of this database (its index is unreliable after duplicate workloads)"
                repair.problems.append(f"{where}: record fits {why}")
                repair.dropped_records += 1
                continue
            if target != pointed:
                repair.moved_records += 1
        new = workloads.new_index[target]
        if new != index:
            match = _INDEX.match(raw)
            raw = b"[" + str(new).encode() + b"," + raw[match.end():] if match else \
                json.dumps([new, record], separators=(",", ":")).encode()
        out.append(raw)
    return out


def _place(record, pointed, workloads: _Workloads, ambiguous_index: bool):
    """The canonical workload index the record's trace replays on, or None.

    With a trustworthy index (no duplicate workloads), the workload it points at wins when the
    trace fits it; otherwise every workload with the record's argument shapes is tried, and the
    record is placed only if exactly one fits.
    """
    if pointed is not None and not ambiguous_index and _fits(record, workloads.entries[pointed][0]):
        return pointed
    args = _plain(record[3]) if record[3] is not None else None
    others = [i for i in workloads.kept if i != pointed or ambiguous_index]
    same_args = [i for i in others if args is None or workloads.entries[i][1] in (None, args)]
    fitting = [i for i in (same_args or others) if _fits(record, workloads.entries[i][0])]
    return fitting[0] if len(fitting) == 1 else None


def _backup(path: str, stamp: str) -> str:
    backup = f"{path}.damaged-{stamp}"
    with open(path, "rb") as src, open(backup, "wb") as dst:
        dst.write(src.read())
    return backup


def _write(path: str, lines: list) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(b"".join(line + b"\n" for line in lines))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def check_database(work_dir, replay: bool = False) -> Repair:
    """Check (and repair, see the module docstring) the JSON database in ``work_dir``.

    ``replay``: also replay every record's trace on its workload (what TVM's load does); without
    it only the JSON shape, the indices and duplicate workloads are checked, and duplicates
    switch replaying on. Warns (:class:`DatabaseWarning`) when it changed anything.
    """
    work_dir = os.fspath(work_dir)
    workload_path, record_path = database_paths(work_dir)
    for path in (workload_path, record_path):
        if os.path.isfile(path):
            drop_partial_line(path)
    repair = Repair(work_dir)
    workloads = _Workloads(workload_path, _read_lines(workload_path), repair)
    record_lines = _read_lines(record_path)
    records = _check_records(record_path, record_lines, workloads, replay or repair.merged_workloads > 0, repair)
    if not repair.changed:
        return repair
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for path, lines in ((workload_path, [workloads.lines[i] for i in workloads.kept]), (record_path, records)):
        if os.path.isfile(path):
            repair.backups.append(_backup(path, stamp))
            _write(path, lines)
    warnings.warn(repair.message(), DatabaseWarning, stacklevel=3)
    return repair


def open_json_database(work_dir):
    """MetaSchedule's ``JSONDatabase`` in ``work_dir`` (created if missing), checked and repaired first.

    Raises :class:`CorruptDatabaseError` (naming the files) when TVM still cannot load it.
    """
    from tvm.s_tir import meta_schedule as ms

    work_dir = os.fspath(work_dir)
    os.makedirs(work_dir, exist_ok=True)
    check_database(work_dir)
    try:
        return ms.database.JSONDatabase(work_dir=work_dir)
    except Exception as first:  # noqa: BLE001 - a record that does not replay: find it, drop it, retry
        failure = first
    repair = check_database(work_dir, replay=True)
    try:
        return ms.database.JSONDatabase(work_dir=work_dir)
    except Exception as error:  # noqa: BLE001
        workload_path, record_path = database_paths(work_dir)
        found = f" (found and dropped: {len(repair.problems)} bad line(s))" if repair.problems else ""
        raise CorruptDatabaseError(
            f"the tuning database {record_path} (with {workload_path}) cannot be loaded{found}: {_short(error)}; "
            f"first failure: {_short(failure)}. Move the two files away to start a fresh database") from None
