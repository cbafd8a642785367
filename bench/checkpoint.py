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
            self._index(rec)

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
        self._index(rec)


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
