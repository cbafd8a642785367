"""Learned models of CWM: state encoder, transition model, ranker.

Re-exports only, resolved lazily: ``import cwm.model`` (or ``cwm.model.ranker``) does
not import torch, transformers or tokenizers; touching ``cwm.model.StateEncoder`` does.
"""
from __future__ import annotations

import importlib
from pathlib import Path

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

__all__ = sorted(_EXPORTS) + ["DEFAULT_MODEL_DIR", "default_model_dir"]

#: Where the shipped world model lives inside the installed package (package data).
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "default_model"


def default_model_dir(must_exist: bool = True) -> Path:
    """The shipped model directory, ``Path(cwm.__file__).parent / "default_model"``.

    With ``must_exist`` (the default) a missing or incomplete directory raises
    ``FileNotFoundError`` that says how to get a model: ``cwm train --out DIR`` and pass that
    directory as ``model_dir``.
    """
    path = DEFAULT_MODEL_DIR
    if must_exist and not (path / "manifest.json").is_file():
        raise FileNotFoundError(
            f"no shipped CWM model at {path} (this cwm was installed without one). Train one with "
            "`cwm train --data data/dataset --out MODEL_DIR` and pass model_dir=MODEL_DIR "
            "(CLI: --model-dir MODEL_DIR), or copy a trained model directory to that path.")
    return path


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'cwm.model' has no attribute {name!r}")
