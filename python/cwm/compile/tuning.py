"""Resumable tuning of a model's tasks into a MetaSchedule JSON database in ``work_dir``.

**Records are committed as they are measured.** MetaSchedule's ``JSONDatabase`` appends one
line per measured candidate to ``work_dir/database_tuning_record.json`` (its
``AddToDatabase`` measure callback runs after every batch), so a compile that is killed keeps
everything measured so far.

**A task is tuned only for what it lacks.** Before tuning, every task's records already in the
database are counted (matched structurally, like MetaSchedule's own lookups); a task with at
least ``trials`` records is reused as is, otherwise it is tuned for ``trials - existing``
more candidates. A task whose search ended before its budget was spent (its space exhausted:
a ``reshape`` has one schedule) is noted in ``work_dir/cwm_tuning_state.json`` with the budget
it was tuned for and the records it left, so that a small space is not searched again by every
later compile. The note is checked against the database: a task counts as "finished" only when
its search ran out of candidates (``exhausted``) under a budget at least ``trials`` and the
database still holds the records it left; otherwise it is tuned for what it lacks (an edited
``done_at`` cannot make a task with 8 of 16 records "finished"). Tasks are tuned one after the
other (one ``tune_tasks`` call each), which is what makes the state per task exact; the cost
model object is shared by all of them.

**The work dir is opened safely.** :func:`open_database` checks and repairs its JSON database
first (:mod:`cwm.tuning.json_database`: corrupt lines dropped with a warning naming file and
line, duplicate workloads merged); the caller holds the work dir's lock (:mod:`cwm.dirlock`,
taken by :func:`cwm.compile.api.run_pipeline`). A task whose design space MetaSchedule cannot
generate (:class:`cwm.tuning.design_space.UntunableTaskError`) is not tuned: its status is
"untunable", ``reason`` says why, and the build gives it its default schedule.
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field

from cwm.compile.errors import DatabaseError, WorkDirBusyError

STATE_FILE = "cwm_tuning_state.json"
STATE_FORMAT = "cwm-tuning-state"
#: 2: entries also hold ``records`` (left by the search) and ``exhausted``; version-1 entries are not trusted
STATE_VERSION = 2
#: MetaSchedule stores failed candidates with this latency (seconds)
FAILED_SECS = 1e10


@dataclass
class TaskReport:
    """One task: how many records it had (``reused``), how many were measured now (``new``)."""

    name: str
    key: str
    weight: int
    requested: int
    reused: int = 0
    #: of ``reused``, the records copied from the shared tuning database (an earlier compile's)
    shared: int = 0
    new: int = 0
    wall_s: float = 0.0
    best_us: float | None = None
    #: "tuned", "reused" (enough records), "finished" (its search ended before; see module docstring),
    #: "untuned" (trials=0 and no records: default schedule),
    #: "untunable" (MetaSchedule cannot generate its design space: default schedule; see ``reason``)
    status: str = "tuned"
    #: why an "untunable" task could not be tuned (None otherwise)
    reason: str | None = None
    #: the unscheduled function's mean latency (us), measured once beside the search
    #: (:mod:`cwm.compile.untuned_candidate`); None when not measured or it failed
    untuned_us: float | None = None


@dataclass
class TuningReport:
    """All tasks of one compile's tuning step."""

    tasks: list = field(default_factory=list)
    work_dir: str = ""
    wall_s: float = 0.0
    cost_model: str = ""
    trials_per_task: int = 0
    #: the shared tuning database's folder (None: not used), and the records this compile added to it
    shared_database: str | None = None
    shared_added: int = 0

    @property
    def new_records(self) -> int:
        return sum(t.new for t in self.tasks)

    @property
    def reused_records(self) -> int:
        return sum(t.reused for t in self.tasks)

    @property
    def shared_records(self) -> int:
        return sum(t.shared for t in self.tasks)

    def to_json(self) -> dict:
        return {"work_dir": self.work_dir, "wall_s": round(self.wall_s, 3), "cost_model": self.cost_model,
                "trials_per_task": self.trials_per_task, "new_records": self.new_records,
                "reused_records": self.reused_records, "shared_records": self.shared_records,
                "shared_database": self.shared_database, "shared_added": self.shared_added,
                "tasks": [asdict(t) for t in self.tasks]}


def task_key(task) -> str:
    """A stable key of a task: the structural hash of its TIR workload, as 16 hex digits
    (:func:`cwm.workload_key.task_key` of ``task.dispatched[0]``)."""
    from cwm.workload_key import task_key as workload_key

    return workload_key(task.dispatched[0])


def open_database(work_dir: str):
    """MetaSchedule's ``JSONDatabase`` in ``work_dir`` (created if missing), checked and repaired
    first by :func:`cwm.tuning.json_database.open_json_database` (a line cut short by a killed
    process is dropped, corrupt lines are dropped with a :class:`~cwm.tuning.json_database.DatabaseWarning`
    naming file and line); :class:`~cwm.compile.errors.DatabaseError` naming the file when it
    cannot be repaired. Call it with the work dir locked (:func:`work_dir_lock`)."""
    from cwm.tuning.json_database import CorruptDatabaseError, open_json_database

    try:
        return open_json_database(work_dir)
    except CorruptDatabaseError as error:
        raise DatabaseError(str(error)) from None


@contextlib.contextmanager
def work_dir_lock(work_dir: str, timeout: float | None = None):
    """Hold the exclusive lock of ``work_dir`` (:func:`cwm.dirlock.lock_dir`) while a compile uses
    its database. None: wait as long as it takes (saying on stderr which pid holds it); a number:
    :class:`~cwm.compile.errors.WorkDirBusyError` after that many seconds."""
    from cwm.dirlock import LockTimeout, lock_dir

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(lock_dir(work_dir, timeout=timeout, label="work dir"))
        except LockTimeout as error:
            raise WorkDirBusyError(f"{error}; wait for it to finish, use another work dir, or wait longer "
                                   "(lock_timeout=, --lock-timeout)") from None
        yield


def drop_partial_line(path: str) -> bool:
    """Cut a last line without its newline off the JSON-lines file ``path``; True if one was
    (:func:`cwm.tuning.json_database.drop_partial_line`)."""
    from cwm.tuning.json_database import drop_partial_line as drop

    return drop(path)


def database_files(work_dir: str) -> list:
    """The paths of the JSON database files of ``work_dir`` that exist."""
    names = ("database_workload.json", "database_tuning_record.json")
    return [os.path.join(work_dir, n) for n in names if os.path.isfile(os.path.join(work_dir, n))]


def _workloads(database, tasks) -> list:
    return [database.commit_workload(t.dispatched[0]) if database.has_workload(t.dispatched[0]) else None
            for t in tasks]


def records_per_task(database, tasks) -> list:
    """How many records (valid or failed) ``database`` holds for each task."""
    workloads = _workloads(database, tasks)
    counts = [0] * len(tasks)
    for record in database.get_all_tuning_records():
        for index, workload in enumerate(workloads):
            if workload is not None and record.workload.same_as(workload):
                counts[index] += 1
                break
    return counts


def best_us(database, task) -> float | None:
    """The mean latency (us) of the best valid record of ``task``, or None."""
    if not database.has_workload(task.dispatched[0]):
        return None
    top = database.get_top_k(database.commit_workload(task.dispatched[0]), 1)
    if not top:
        return None
    secs = [float(s) for s in (top[0].run_secs or [])]
    return sum(secs) / len(secs) * 1e6 if secs and max(secs) < FAILED_SECS else None


def _load_state(work_dir: str) -> dict:
    path = os.path.join(work_dir, STATE_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        data = json.loads(open(path).read())
    except (OSError, ValueError):
        return {}  # a damaged state file only costs re-searching finished tasks
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT or not isinstance(data.get("tasks"), dict):
        return {}
    return data["tasks"]


def _save_state(work_dir: str, tasks: dict) -> None:
    path = os.path.join(work_dir, STATE_FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"format": STATE_FORMAT, "version": STATE_VERSION, "tasks": tasks}, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def finished_before(entry, trials: int, records: int) -> bool:
    """Whether the state ``entry`` of a task shows that its search ended for lack of candidates
    under a budget of at least ``trials``, with the database still holding the ``records`` it left.

    An entry written by a search that simply spent its budget (``exhausted`` false), an entry of
    the old format (no ``records``), or one claiming more records than the database holds for the
    task (records lost, or the file edited) is not believed: the task is tuned for what it lacks.
    """
    if not isinstance(entry, dict) or entry.get("exhausted") is not True:
        return False
    try:
        done_at, left = int(entry.get("done_at", 0)), int(entry["records"])
    except (KeyError, TypeError, ValueError):
        return False
    return done_at >= trials and left < done_at and records >= left
