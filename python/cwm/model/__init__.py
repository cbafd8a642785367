"""Learned models of CWM: state encoder, transition model, ranker.

Re-exports only, resolved lazily: ``import cwm.model`` (or ``cwm.model.ranker``) does
not import torch, transformers or tokenizers; touching ``cwm.model.StateEncoder`` does.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "TirTokenizer": "cwm.model.tokenizer",
    "normalize_tir": "cwm.model.tokenizer",
    "StateEncoder": "cwm.model.encoder",
    "EncoderConfig": "cwm.model.encoder",
    "rename_identifiers": "cwm.model.augment",
    "peel_pairs": "cwm.model.augment",
    "ContrastiveConfig": "cwm.model.contrastive",
    "train_encoder": "cwm.model.contrastive",
    "evaluate_encoder": "cwm.model.contrastive",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'cwm.model' has no attribute {name!r}")
