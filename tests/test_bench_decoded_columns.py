"""bench/decoded_columns.py: the decoder that bench/transition_corpus.py saves, read back."""
from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_load_decoder_gives_what_the_trained_decoder_gives(tmp_path):
    import torch
    from decoded_columns import load_decoder
    from transition_corpus import Decoder, save_weights

    from cwm.model.transition import TransH, TransitionConfig

    torch.manual_seed(0)
    cfg = TransitionConfig(dim=16, hidden=8)
    dec = Decoder(cfg.dim, 5, np.zeros(5), np.ones(5))
    save_weights(tmp_path, TransH(cfg), dec, cfg, Namespace(corpus="c", seed=0))
    z = np.random.default_rng(0).normal(size=(7, cfg.dim)).astype(np.float32)
    with torch.no_grad():
        expected = dec.net(torch.tensor(z)).numpy()
    got = load_decoder(tmp_path)(z)
    assert got.shape == (7, 5) and np.array_equal(got, expected.astype(np.float64))  # same torch ops, same bits


def test_a_directory_without_a_decoder_is_refused(tmp_path):
    from decoded_columns import main

    with pytest.raises(SystemExit, match="no decoder.safetensors"):
        main(["--transition", str(tmp_path)])
