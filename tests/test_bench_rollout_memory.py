"""bench/rollout_memory.py and bench/loop_tiles.py's swap: what the rollout keeps, on a small transition."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def _weights(scale: float, seed: int = 0):
    import torch

    from cwm.model.transition import TransH, TransitionConfig, numpy_weights

    torch.manual_seed(seed)
    cfg = TransitionConfig(dim=16, hidden=32, hash_buckets=64)
    m = TransH(cfg)
    with torch.no_grad():
        m.out.weight.normal_(std=scale)
        m.out.bias.zero_()
    return numpy_weights(m), cfg


def test_long_translations_forget_z0_and_short_ones_keep_it(trace_records):
    from rollout_memory import task_memory, translations

    from cwm.actions import featurize_batch

    fb = featurize_batch([r["trace"] for r in trace_records[:4]])
    z0 = np.random.default_rng(0).normal(size=16).astype(np.float32)
    z0 /= np.linalg.norm(z0)
    out = {}
    for scale in (0.01, 10.0):
        w, cfg = _weights(scale)
        out[scale] = task_memory(z0, fb.ints, fb.numbers, fb.lengths, w, cfg, np.random.default_rng(1))
        norms = translations(fb.ints, fb.numbers, w, cfg)
        assert norms.shape == (int(fb.lengths.sum()),) and (norms >= 0).all()
    # a translation far longer than the unit state resets it at every step: z0 is forgotten
    assert out[10.0]["z0"] < 1e-6 < out[0.01]["z0"]
    assert set(out[0.01]["by_distance"]) and all(v >= 0 for v in out[0.01]["by_distance"].values())


def test_swapped_trades_the_factor_lists_of_two_splits_of_the_largest_arity():
    from loop_tiles import swapped

    trace = [[["SamplePerfectTile", ["l0"], [4, 64], ["a"]], ["SamplePerfectTile", ["l1"], [2, 64], ["b"]],
              ["SamplePerfectTile", ["l2"], [4, 64], ["c"]]],
             [[0, [1, 2, 4, 8]], [1, [4, 16]], [2, [2, 2, 2, 16]]]]
    out = swapped(trace)
    assert out[1] == [[0, [2, 2, 2, 16]], [1, [4, 16]], [2, [1, 2, 4, 8]]]
    assert trace[1][0][1] == [1, 2, 4, 8]  # the input is left as it was
    assert swapped([trace[0], [[0, [1, 2]], [2, [1, 2]]]]) is None  # nothing differs to trade
    json.dumps(out)
