"""Encoder states of a task's programs, computed once per model and cached on disk.

``cwm eval``'s ``static_final`` baseline encodes the real final program of every training and
test candidate: ~20,000 programs, most of an hour on 2 cores. One ``.npy`` per task holds them,
keyed by the task, the encoder's fingerprint (:func:`cwm.model.fingerprint.encoder_fingerprint`)
and a hash of the encoded texts, so a retrained encoder or a task with new records never reads
stale states, a refitted ranker reuses them, and an interrupted evaluation resumes where it
stopped. Files are written whole or not at all.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

DEFAULT_DIR = Path.home() / ".cache" / "cwm" / "states"


def _texts(trajs, which: str) -> list[str]:
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
    texts = _texts(trajs, which)
    if cache_dir is None or key is None or fingerprint is None:
        return encode_texts(model, texts)
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:12]
    path = Path(cache_dir) / f"{key}-{fingerprint}-{which}-{digest}.npy"
    if path.is_file():
        states = np.load(path, allow_pickle=False)
        if states.shape[0] == len(texts):
            return states
    states = encode_texts(model, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, states)
    tmp.replace(path)
    return states
