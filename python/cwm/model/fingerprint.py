"""A world model directory's fingerprint: the key of every cache of its encodings and rollouts."""
from __future__ import annotations

import hashlib
from pathlib import Path

#: files that do not change what the cache holds (the ranker only scores it)
_NOT_FINGERPRINTED = ("ranker.json", "ranker.json.config")


def model_fingerprint(model_dir) -> str:
    """Hash of the manifest and every weight and tokenizer file: a transition swapped in by
    ``tools/refit_ranker.py --transition`` changes the rollouts, so it must change the key."""
    root, digest = Path(model_dir), hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in _NOT_FINGERPRINTED):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]
