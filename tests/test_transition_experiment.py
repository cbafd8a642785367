"""bench/transition_corpus.py's state-dependent TransH starts as the model it wraps."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_state_dependent_wrapper_starts_as_the_base_transition(trace_records):
    import torch

    from cwm import native
    from cwm.model.transition import TransH, TransitionConfig, tensors
    from transition_corpus import state_dependent

    cfg = TransitionConfig(dim=16, hidden=8, hash_buckets=64, small_vocab=16)
    torch.manual_seed(0)
    base = TransH(cfg).eval()
    with torch.no_grad():
        base.out.weight[cfg.dim:].normal_(0.0, 0.3)  # non-zero translations, so the rollout moves
    fb = native.featurize_batch([r["trace"] for r in trace_records[:6]])
    z0 = torch.nn.functional.normalize(torch.randn(6, cfg.dim), dim=-1)
    wrapped = state_dependent(base)
    with torch.no_grad():
        want = base(z0, *tensors(fb, cfg), return_all=True)
        got = wrapped(z0, *tensors(fb, cfg), return_all=True)
        assert not torch.allclose(want[:, -1], z0)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-6)  # unit vectors; per-step vs batched matmul: last bits
        wrapped.state.weight.normal_(0.0, 1.0)  # once S is trained, the state changes the rollout
        moved = wrapped(z0, *tensors(fb, cfg))
    assert not torch.allclose(moved, want[:, -1], atol=1e-3)
