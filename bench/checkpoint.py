"""What the long benchmarks share: an append-only JSONL checkpoint and a one-process lock."""
from __future__ import annotations

import json
import os


def write_json(path: str, payload: dict) -> None:
    """Write a result file atomically (``path.tmp`` then rename)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(payload, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


class JsonlCheckpoint:
    """Append-only JSONL; subclasses index each record in :meth:`_index`.

    Each line is flushed and fsync-ed when written; a torn last line (a kill mid-write) is
    ignored on reading and cut off before the next append.
    """

    def __init__(self, path: str):
        self.path = path
        #: the ``machine`` of every record that names one (:func:`check_host`)
        self.hosts: set[str] = set()
        self._load()

    def _index(self, rec: dict) -> None:
        raise NotImplementedError

    def _load(self):
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb") as f:
            lines = f.read().split(b"\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if i == len(lines) - 1:
                    break  # torn tail
                raise ValueError(f"{self.path}: line {i + 1} is not JSON") from None
            self._note(rec)

    def append(self, rec: dict) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        if os.path.exists(self.path):
            with open(self.path, "rb") as f:
                data = f.read()
            if data and not data.endswith(b"\n"):
                with open(self.path, "r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
        with open(self.path, "ab") as f:
            f.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        self._note(rec)

    def _note(self, rec: dict) -> None:
        if rec.get("machine"):
            self.hosts.add(rec["machine"])
        self._index(rec)


def check_host(ckpt: JsonlCheckpoint, current: str, allow: bool = False,
               hint: str = "pass a new --out (and --work-root) for this host, or --allow-host-change") -> None:
    """Refuse to add results of this machine (``current``) to a checkpoint measured on another.

    Latencies of two hosts do not belong in one table (their ratios would mix CPUs), and a
    tuning database is only valid on the CPU it was measured on. Records without a ``machine``
    (older checkpoints) are not checked. ``allow``: go on, and say so. ``hint``: what the refusal
    tells the user to do (the caller's own options).
    """
    other = sorted(ckpt.hosts - {current})
    if not other:
        return
    message = (f"{ckpt.path} holds results measured on {other}; this machine is {current!r}. Results of two "
               "hosts do not go in one table")
    if not allow:
        raise SystemExit(f"{message}: {hint}")
    print(f"WARNING: {message}; --allow-host-change: the report names every host", flush=True)


def hosts_of(records) -> str | None:
    """The ``machine`` of ``records`` for a report: the one host, or every host joined by " + "."""
    hosts = sorted({r["machine"] for r in records if r.get("machine")})
    return " + ".join(hosts) if hosts else None


class Lock:
    """An exclusive ``flock`` on ``<checkpoint>.lock``: one benchmark process per checkpoint."""

    def __init__(self, path, owner: str = "a benchmark"):
        self.path = path + ".lock"
        self.owner = owner
        self.f = None

    def __enter__(self):
        import fcntl

        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self.f = open(self.path, "w")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(f"another {self.owner} is using {self.path[:-5]} (lock held)") from None
        return self

    def __exit__(self, *exc):
        self.f.close()
