"""On-disk trajectory dataset: per-task journals while collecting, compressed shards when done.

Layout under the dataset root (documented in ``docs/dataset.md``)::

    manifest.json              format version, TVM version, target, CPU, counts, shard hashes
    tasks/<key>.json           task metadata: name, networks, weights, workload (TVM JSON)
    journal/<key>.jsonl        append-only records of a task still being collected
    shards/<key>.jsonl.gz      the finished task: one JSON record per line

Durability: records are appended to the journal and ``fsync``-ed once per measured batch.
A crash can only tear the last line. A record is acknowledged once its line, newline
included, is in the file: :meth:`DatasetStore.journal_records` ignores a last line without
its newline (even one that happens to parse) and :meth:`append` truncates that same tail
before writing again, so both agree on what was acknowledged and a restart neither loses an
acknowledged record nor duplicates one. Shards, task files and the manifest are written to
a temporary file, ``fsync``-ed and renamed (atomic on POSIX), and the folder is ``fsync``-ed.

Reading writes nothing: folders are created by the first write that needs them, so a
dataset on a read-only mount loads (:class:`~cwm.dataset.loader.DatasetLoader`).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import warnings
import zlib
from pathlib import Path

FORMAT_VERSION = 1


class DatasetError(ValueError):
    """A dataset file is missing or cannot be read; the message names the file."""


class CorruptShardError(DatasetError):
    """A shard, journal or task file cannot be read; the message names the file."""


class CorruptShardWarning(UserWarning):
    """An undecodable shard was skipped (``skip_corrupt=True``); the message names the file."""


#: what reading a damaged gzip shard can raise: truncated (EOFError), bad header or CRC
#: (gzip.BadGzipFile, an OSError), a flipped byte in the deflate data (zlib.error), bad text
SHARD_READ_ERRORS = (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # not every file system lets a folder be fsync-ed
        pass
    finally:
        os.close(fd)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def read_json(path, what: str):
    """``json.loads`` of a dataset file; a missing or unparsable file is a :class:`DatasetError`."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise DatasetError(f"{path}: {what} is missing") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: {what} is not valid JSON (line {e.lineno}, column {e.colno}: "
                           f"{e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: {what} cannot be read ({e})") from None


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class DatasetStore:
    """Reads and writes one dataset folder. Opening it creates nothing; each write creates
    the folders it needs."""

    def __init__(self, root):
        self.root = Path(root)
        self._listed: dict | None = None  # the manifest's shards, read once by records()

    # ------------------------------------------------------------------ tasks
    def task_path(self, key: str) -> Path:
        return self.root / "tasks" / f"{key}.json"

    def put_task(self, key: str, meta: dict) -> None:
        _atomic_write(self.task_path(key), json.dumps(meta, sort_keys=True).encode())

    def get_task(self, key: str) -> dict:
        try:
            return json.loads(self.task_path(key).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorruptShardError(f"{self.task_path(key)}: cannot read task metadata ({e})") from None

    def task_keys(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "tasks").glob("*.json"))

    # ---------------------------------------------------------------- journal
    def journal_path(self, key: str) -> Path:
        return self.root / "journal" / f"{key}.jsonl"

    def journal_records(self, key: str) -> list[dict]:
        """Acknowledged records of a task in collection.

        A record is acknowledged once its whole line, newline included, is in the file. The
        bytes after the last newline are a tail torn by a crash and are ignored, even when they
        parse as JSON (the newline is written with the record, so such a tail was cut just
        before it): :meth:`append` drops exactly these bytes, so a record counted here is never
        removed later. Any other line that does not parse is corruption.
        """
        path = self.journal_path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # b"" when no line is complete
        records = []
        for i, line in enumerate(complete.split(b"\n")[:-1]):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError):
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
            new_file = False
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            new_file = True
        with open(path, "ab") as f:
            for r in records:
                f.write(json.dumps(r, separators=(",", ":")).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        if new_file:  # the new file's name must survive a power cut too
            _fsync_dir(path.parent)

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

    def read_shard(self, key: str) -> list[dict]:
        """The records of a finished task; an unreadable shard is a :class:`CorruptShardError`
        (a missing shard too: callers ask for finished tasks only)."""
        path = self.shard_path(key)
        try:
            with gzip.open(path, "rt") as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            raise CorruptShardError(f"{path}: shard is missing") from None
        except SHARD_READ_ERRORS as e:
            raise CorruptShardError(f"{path}: undecodable shard, corrupt or truncated "
                                    f"({type(e).__name__}: {e})") from None

    def shard_records(self, key: str, skip_corrupt: bool = False) -> list[dict]:
        """:meth:`read_shard`; with ``skip_corrupt`` an unreadable shard gives ``[]`` and a
        :class:`CorruptShardWarning` naming it."""
        try:
            return self.read_shard(key)
        except CorruptShardError as e:
            if skip_corrupt:
                warnings.warn(f"skipped: {e}", CorruptShardWarning, stacklevel=2)
                return []
            raise CorruptShardError(f"{e}; pass skip_corrupt=True (DatasetLoader) or --skip-corrupt "
                                    "(`cwm dataset stats`) to skip it") from None

    def records(self, key: str, skip_corrupt: bool = False) -> list[dict]:
        """All acknowledged records of a task, finished or not. A shard that the manifest lists
        but that is gone is an error too (or skipped with a warning), not an unfinished task."""
        if self.is_finished(key) or key in self._listed_shards():
            return self.shard_records(key, skip_corrupt)
        return self.journal_records(key)

    def _listed_shards(self) -> dict:
        if self._listed is None:
            self._listed = self.manifest().get("shards") or {}
        return self._listed

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
        self._listed = None
        return manifest

    def manifest(self) -> dict:
        """``manifest.json`` (``{}`` while none was written); an unparsable one is a
        :class:`DatasetError` naming it."""
        path = self.root / "manifest.json"
        if not path.exists():
            return {}
        manifest = read_json(path, "manifest")
        if not isinstance(manifest, dict):
            raise DatasetError(f"{path}: manifest is not a JSON object")
        return manifest



def register_task(store: DatasetStore, name: str, mod, networks: dict[str, int] | None = None, **meta) -> str:
    """Add (or update the networks of) a task; ``networks`` maps network -> weight in it."""
    import tvm

    from cwm.workload_key import task_key

    key = task_key(mod)
    old = store.get_task(key) if store.task_path(key).exists() else {}
    merged = dict(old.get("networks", {}))
    merged.update(networks or {})
    store.put_task(key, {**old, **meta, "name": old.get("name", name), "networks": merged,
                         "workload": old.get("workload") or tvm.ir.save_json(mod)})
    return key
