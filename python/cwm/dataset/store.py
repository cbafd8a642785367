"""On-disk trajectory dataset: per-task journals while collecting, compressed shards when done.

Layout under the dataset root (documented in ``docs/dataset.md``)::

    manifest.json              format version, TVM version, target, CPU, counts, shard hashes
    tasks/<key>.json           task metadata: name, networks, weights, workload (TVM JSON)
    journal/<key>.jsonl        append-only records of a task still being collected
    shards/<key>.jsonl.gz      the finished task: one JSON record per line

Durability: records are appended to the journal and ``fsync``-ed once per measured batch.
A crash can only tear the last line; :meth:`DatasetStore.journal_records` drops a torn
tail (it was never acknowledged) and :meth:`append` truncates it before writing again, so a
restart neither loses an acknowledged record nor duplicates one. Shards and the manifest
are written to a temporary file and renamed (atomic on POSIX).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

FORMAT_VERSION = 1


class CorruptShardError(ValueError):
    """A shard or journal cannot be read; the message names the file."""


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class DatasetStore:
    def __init__(self, root):
        self.root = Path(root)
        for sub in ("tasks", "journal", "shards"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ tasks
    def task_path(self, key: str) -> Path:
        return self.root / "tasks" / f"{key}.json"

    def put_task(self, key: str, meta: dict) -> None:
        _atomic_write(self.task_path(key), json.dumps(meta, sort_keys=True).encode())

    def get_task(self, key: str) -> dict:
        try:
            return json.loads(self.task_path(key).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise CorruptShardError(f"{self.task_path(key)}: cannot read task metadata ({e})") from None

    def task_keys(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "tasks").glob("*.json"))

    # ---------------------------------------------------------------- journal
    def journal_path(self, key: str) -> Path:
        return self.root / "journal" / f"{key}.jsonl"

    def journal_records(self, key: str) -> list[dict]:
        """Acknowledged records of a task in collection (a torn last line is ignored)."""
        path = self.journal_path(key)
        if not path.exists():
            return []
        records = []
        data = path.read_bytes()
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if i == len(lines) - 1:  # torn tail from a crash: never acknowledged
                    break
                raise CorruptShardError(f"{path}: line {i + 1} is not a JSON record") from None
        return records

    def append(self, key: str, records: list[dict]) -> None:
        """Append records durably (one fsync per call)."""
        path = self.journal_path(key)
        if path.exists():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):  # drop a torn tail before appending
                with open(path, "r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
        with open(path, "ab") as f:
            for r in records:
                f.write(json.dumps(r, separators=(",", ":")).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())

    # ----------------------------------------------------------------- shards
    def shard_path(self, key: str) -> Path:
        return self.root / "shards" / f"{key}.jsonl.gz"

    def is_finished(self, key: str) -> bool:
        return self.shard_path(key).exists()

    def finish(self, key: str) -> int:
        """Compact the task's journal into its shard; returns the record count."""
        records = self.journal_records(key)
        body = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
        _atomic_write(self.shard_path(key), gzip.compress(body, mtime=0))
        self.journal_path(key).unlink(missing_ok=True)
        return len(records)

    def shard_records(self, key: str, skip_corrupt: bool = False) -> list[dict]:
        path = self.shard_path(key)
        try:
            with gzip.open(path, "rt") as f:
                return [json.loads(line) for line in f if line.strip()]
        except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
            if skip_corrupt:
                return []
            raise CorruptShardError(f"{path}: corrupt or truncated shard ({type(e).__name__}: {e}); "
                                    "pass skip_corrupt=True (--skip-corrupt) to skip it") from None

    def records(self, key: str, skip_corrupt: bool = False) -> list[dict]:
        """All acknowledged records of a task, finished or not."""
        if self.is_finished(key):
            return self.shard_records(key, skip_corrupt)
        return self.journal_records(key)

    # --------------------------------------------------------------- manifest
    def write_manifest(self, extra: dict) -> dict:
        shards = {}
        total = 0
        for key in self.task_keys():
            if self.is_finished(key):
                n = len(self.shard_records(key))
                shards[key] = {"records": n, "sha256": sha256_file(self.shard_path(key))}
                total += n
        manifest = {"format_version": FORMAT_VERSION, **extra, "tasks": len(self.task_keys()),
                    "finished_tasks": len(shards), "records": total, "shards": shards}
        _atomic_write(self.root / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
        return manifest

    def manifest(self) -> dict:
        path = self.root / "manifest.json"
        return json.loads(path.read_text()) if path.exists() else {}



def register_task(store: DatasetStore, name: str, mod, networks: dict[str, int] | None = None, **meta) -> str:
    """Add (or update the networks of) a task; ``networks`` maps network -> weight in it."""
    import tvm

    from cwm.frontends.tasks import task_key

    key = task_key(mod)
    old = store.get_task(key) if store.task_path(key).exists() else {}
    merged = dict(old.get("networks", {}))
    merged.update(networks or {})
    store.put_task(key, {**old, **meta, "name": old.get("name", name), "networks": merged,
                         "workload": old.get("workload") or tvm.ir.save_json(mod)})
    return key
