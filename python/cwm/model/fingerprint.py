"""A world model directory's fingerprint: the key of every cache of its encodings and rollouts."""
from __future__ import annotations

import hashlib
from pathlib import Path

#: files that do not change what the cache holds (the ranker only scores it; the seed library,
#: cwm.tuning.seed_library, is read by the search, not by the model)
_NOT_FINGERPRINTED = ("ranker.json", "ranker.json.config", "seeds.jsonl.gz")


def _tree_digest(root: Path, skip=()) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in skip):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]


def model_fingerprint(model_dir) -> str:
    """Hash of the manifest and every weight and tokenizer file: a transition swapped in by
    ``tools/refit_ranker.py --transition`` changes the rollouts, so it must change the key."""
    return _tree_digest(Path(model_dir), _NOT_FINGERPRINTED)


def encoder_fingerprint(model_dir) -> str:
    """Hash of the encoder's folder alone (weights, config, tokenizer): what ``E(s)`` depends on.
    A refitted ranker or another transition keeps it, so cached encoder states stay valid."""
    encoder = Path(model_dir) / "encoder"
    if not encoder.is_dir():
        raise FileNotFoundError(f"{model_dir} has no encoder/ folder: not a world model directory")
    return _tree_digest(encoder)
