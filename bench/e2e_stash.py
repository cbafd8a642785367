"""Carry the end-to-end benchmark's tuning over to a later session (bench/e2e.py).

A 256 x tasks run of ResNet-50 tunes for longer than a session lasts, and ``work_dirs/`` does
not outlive a session. ``save`` packs what a resumed run needs into one gzipped tar that can be
committed: the tuning databases of every compile folder (``<net>/<method>/t<T>/tuning/database_*.json``),
their tuning sessions (``tuning_sessions.json``: the tuning time so far) and the shared databases
(``shared_tuning/``). Artifacts and logs stay out (a finished compile's artifact is rebuilt from its
database in minutes). ``restore`` unpacks it into the work root, only on the machine it was
measured on (records and latencies belong to one CPU), never over a file that exists.

    PYTHONPATH=python .venv/bin/python bench/e2e_stash.py save --work-root work_dirs/e2e_t256 \\
        --stash bench/results/e2e_t256_tuning.tar.gz
    PYTHONPATH=python .venv/bin/python bench/e2e_stash.py restore --work-root work_dirs/e2e_t256 \\
        --stash bench/results/e2e_t256_tuning.tar.gz

Standard library only.
"""
from __future__ import annotations

import argparse
import fnmatch
import io
import json
import os
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from common import log, machine, now  # noqa: E402

META = "stash.json"
#: what a resumed compile needs, relative to the work root
PATTERNS = ("*/*/t*/tuning/database_*.json", "*/*/t*/tuning_sessions.json", "shared_tuning/*/*.json",
            "shared_tuning/*/*/*.json")


def stashed_files(work_root: str) -> list[str]:
    """The files of ``work_root`` (relative paths, sorted) that :func:`save` packs."""
    out = []
    for folder, _, files in os.walk(work_root):
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), work_root)
            if any(fnmatch.fnmatch(rel, p) and rel.count(os.sep) == p.count("/") for p in PATTERNS):
                out.append(rel)
    return sorted(out)


def save(work_root: str, stash: str) -> dict:
    """Pack :func:`stashed_files` and a ``stash.json`` (machine, date, files) into ``stash``."""
    files = stashed_files(work_root)
    meta = {"machine": machine(), "date": now(), "work_root": work_root, "files": files}
    os.makedirs(os.path.dirname(os.path.abspath(stash)), exist_ok=True)
    with tarfile.open(stash + ".tmp", "w:gz") as tar:
        body = json.dumps(meta, indent=1).encode()
        info = tarfile.TarInfo(META)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
        for rel in files:
            tar.add(os.path.join(work_root, rel), arcname=rel, recursive=False)
    os.replace(stash + ".tmp", stash)
    return meta


def restore(work_root: str, stash: str, allow_host_change: bool = False) -> list[str]:
    """Unpack ``stash`` into ``work_root``; returns the files written (existing ones are kept)."""
    with tarfile.open(stash, "r:gz") as tar:
        meta = json.load(tar.extractfile(META))
        if meta["machine"] != machine() and not allow_host_change:
            raise SystemExit(f"{stash} was tuned on {meta['machine']!r}; this machine is {machine()!r}. Its "
                             "records and latencies belong to that CPU: restore it there")
        written = []
        for member in tar.getmembers():
            if member.name == META:
                continue
            if not member.isfile() or member.name not in meta["files"] or os.path.isabs(member.name) \
                    or ".." in member.name.split("/"):
                raise SystemExit(f"{stash}: unexpected member {member.name!r}; not restoring it")
            dest = os.path.join(work_root, member.name)
            if os.path.exists(dest):
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest + ".tmp", "wb") as f:
                f.write(tar.extractfile(member).read())
            os.replace(dest + ".tmp", dest)
            written.append(member.name)
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("save", "restore"))
    p.add_argument("--work-root", required=True, help="the benchmark's --work-root")
    p.add_argument("--stash", required=True, help="the .tar.gz to write or read")
    p.add_argument("--allow-host-change", action="store_true", help="restore on another machine anyway")
    args = p.parse_args(argv)
    if args.action == "save":
        meta = save(args.work_root, args.stash)
        log(f"saved {len(meta['files'])} files of {args.work_root} to {args.stash} "
            f"({os.path.getsize(args.stash) / 1e6:.1f} MB)")
    else:
        written = restore(args.work_root, args.stash, args.allow_host_change)
        log(f"restored {len(written)} files into {args.work_root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
