"""Encoder states of a task's programs, computed once per model and cached on disk.

``cwm eval``'s ``static_final`` baseline encodes the real final program of every training and
test candidate: 35,665 programs with both breadth roots, 94 min on 2 cores (decision 78). One
``.npy`` per task holds them, keyed by the task, the encoder's fingerprint
(:func:`cwm.model.fingerprint.encoder_fingerprint`) and a hash of the encoded texts, so a
retrained encoder or a task with new records never reads stale states, a refitted ranker reuses
them, and an interrupted evaluation resumes where it stopped. Files are written whole or not at
all.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

DEFAULT_DIR = Path.home() / ".cache" / "cwm" / "states"


def texts_of(trajs, which: str) -> list[str]:
    if which not in ("initial", "final"):
        raise ValueError(f"which must be 'initial' or 'final', not {which!r}")
    return [t.initial_text if which == "initial" else t.final_text for t in trajs]


def encode_texts(model, texts: list[str]) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model.encoder.encode(texts).numpy()


def encoded_states(model, trajs, which: str, key: str | None = None, fingerprint: str | None = None,
                   cache_dir=None) -> np.ndarray:
    """``E(s)`` of each trajectory's initial or final program, ``[N, D]``; from the cache when
    ``cache_dir``, ``key`` and ``fingerprint`` are all given and it holds them."""
    texts = texts_of(trajs, which)
    if cache_dir is None or key is None or fingerprint is None:
        return encode_texts(model, texts)
    path = cache_path(cache_dir, key, fingerprint, which, texts)
    states = read_cached(path, len(texts))
    if states is None:
        states = encode_texts(model, texts)
        write_cached(path, states)
    return states


def cache_path(cache_dir, key: str, fingerprint: str, which: str, texts: list[str]) -> Path:
    """The file that holds ``E(text)`` of ``texts``: the task, the encoder and the texts name it."""
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:12]
    return Path(cache_dir) / f"{key}-{fingerprint}-{which}-{digest}.npy"


def read_cached(path: Path, rows: int) -> np.ndarray | None:
    """The cached states at ``path``, or None when the file is absent or holds another count."""
    if not path.is_file():
        return None
    states = np.load(path, allow_pickle=False)
    return states if states.shape[0] == rows else None


def write_cached(path: Path, states: np.ndarray) -> None:
    """Write ``states`` to ``path`` whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # processes may share the cache
    with open(tmp, "wb") as f:
        np.save(f, states)
    tmp.replace(path)
