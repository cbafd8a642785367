"""Fingerprint of the C++ core's sources, compiled into ``cwm._native``.

``setup.py`` computes it at build time; ``cwm.native`` recomputes it from a source
checkout and refuses a module built from other sources (a stale build). No imports
beyond the standard library: ``setup.py`` loads this file by path.
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def sources_hash(src_dir) -> str:
    h = hashlib.sha256()
    for path in sorted(Path(src_dir).glob("*")):
        if path.suffix in (".cc", ".h", ".txt"):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]
