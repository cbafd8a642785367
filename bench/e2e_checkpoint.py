"""The end-to-end benchmark's bookkeeping (bench/e2e.py): the JSONL checkpoint of finished
compiles and measurements, and the tuning sessions of one compile folder."""
from __future__ import annotations

import json
import os

from checkpoint import JsonlCheckpoint, write_json
from common import now

SESSIONS_FILE = "tuning_sessions.json"
#: how a network's methods are timed; a checkpointed measurement made another way is redone
#: (v1: every method in its own process, bench/timing_workers.py; before it all shared one process)
TIMING_PROTOCOL = "process-per-method-v1"


def compile_id(net: str, method: str, trials: int) -> str:
    return f"{net}|{method}|{trials}"


class Checkpoint(JsonlCheckpoint):
    """Append-only JSONL: one ``compile`` line per finished (network, compiled method, trials),
    one ``measure`` line per measured network (the latest one wins).
    (:class:`checkpoint.JsonlCheckpoint`: fsync-ed lines, a torn last line is dropped.)
    """

    def __init__(self, path: str):
        self.compiles: dict[str, dict] = {}
        self.measures: dict[str, dict] = {}
        super().__init__(path)

    def _index(self, rec):
        if rec.get("kind") == "compile":
            self.compiles[compile_id(rec["net"], rec["method"], rec["trials"])] = rec
        elif rec.get("kind") == "measure":
            self.measures[rec["net"]] = rec

    def measure_for(self, net: str, methods, trials: int, runs: int) -> dict | None:
        """The checkpointed measurement of ``net`` if it covers ``methods`` at ``trials`` and >= ``runs``."""
        rec = self.measures.get(net)
        if (rec and rec.get("timing") == TIMING_PROTOCOL and set(methods) <= set(rec["methods"])
                and rec["trials"] == trials and rec["runs"] >= runs):
            return rec
        return None


class SessionLog:
    """The tuning sessions of one compile folder, in ``<work_dir>/tuning_sessions.json``.

    :meth:`start` opens a session; :meth:`beat` (after every committed batch) stores the tuning
    seconds it has reached, so a killed session still counts up to its last committed batch
    (what was measured after it is lost and measured again by the next session); :meth:`finish`
    stores the final tuning seconds. :meth:`total_s` sums all sessions.
    """

    def __init__(self, work_dir: str):
        self.path = os.path.join(work_dir, SESSIONS_FILE)
        self.sessions: list[dict] = []
        if os.path.exists(self.path):
            try:
                with open(self.path) as f:
                    self.sessions = json.load(f).get("sessions", [])
            except (OSError, ValueError):
                self.sessions = []  # a damaged file: only the earlier sessions' times are lost

    def _save(self):
        write_json(self.path, {"sessions": self.sessions})

    def start(self) -> dict:
        self.sessions.append({"session": len(self.sessions) + 1, "started": now(),
                              "tune_s": 0.0, "records": 0, "complete": False})
        self._save()
        return self.sessions[-1]

    def beat(self, tune_s: float, records: int) -> None:
        self.sessions[-1].update(tune_s=round(float(tune_s), 3), records=int(records))
        self._save()

    def finish(self, tune_s: float, records: int) -> None:
        self.sessions[-1].update(tune_s=round(float(tune_s), 3), records=int(records), complete=True)
        self._save()

    def total_s(self) -> float:
        return round(sum(float(s.get("tune_s") or 0.0) for s in self.sessions), 3)
