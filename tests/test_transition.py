"""TransH transition: geometry, padding, and the NumPy reference (spec of the native rollout)."""
from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def batch(trace_records):
    from cwm.actions import featurize_batch

    return featurize_batch([r["trace"] for r in trace_records[:40:3]])


def test_transh_step_is_projection_plus_translation():
    import torch

    from cwm.model.transition import TransH, TransitionConfig

    m = TransH(TransitionConfig(dim=8, hidden=16, normalize_state=False))
    z = torch.randn(5, 8)
    w = torch.nn.functional.normalize(torch.randn(5, 8), dim=-1)
    d = torch.zeros(5, 8)
    p = m.step(z, w, d)
    assert torch.allclose((p * w).sum(-1), torch.zeros(5), atol=1e-5)  # lands on the hyperplane
    assert torch.allclose(m.step(p, w, d), p, atol=1e-5)  # projecting twice changes nothing
    unit = TransH(TransitionConfig(dim=8, hidden=16))
    assert torch.allclose(unit.step(z, w, torch.randn(5, 8)).norm(dim=-1), torch.ones(5), atol=1e-5)


def test_padding_keeps_the_state_and_numpy_reference_matches(batch):
    import torch

    from cwm.model.transition import TransH, TransitionConfig, numpy_weights, rollout_numpy, tensors

    torch.manual_seed(0)
    cfg = TransitionConfig(dim=16, hidden=32, hash_buckets=64)
    m = TransH(cfg).eval()
    z0 = torch.randn(batch.ints.shape[0], cfg.dim)
    with torch.no_grad():
        all_z = m(z0, *tensors(batch, cfg), return_all=True).numpy()
    for i, n in enumerate(batch.lengths):
        assert np.allclose(all_z[i, n:], all_z[i, n], atol=0)  # after the last action: unchanged
    ref = rollout_numpy(z0.numpy(), batch.ints, batch.numbers, numpy_weights(m), cfg, return_all=True)
    assert np.abs(ref - all_z).max() < 1e-4


def test_w_is_unit_norm(batch):
    import torch

    from cwm.model.transition import TransH, TransitionConfig, tensors

    cfg = TransitionConfig(dim=16, hidden=32, hash_buckets=64)
    m = TransH(cfg)
    w, _ = m.params_of_hidden(m.embed(*tensors(batch, cfg)))
    assert torch.allclose(w.norm(dim=-1), torch.ones(w.shape[:-1]), atol=1e-5)


@pytest.mark.parametrize("bound", [0.0, 0.5])
def test_params_numpy_are_the_torch_translations(batch, bound):
    import torch

    from cwm.model.transition import TransH, TransitionConfig, hidden_numpy, numpy_weights, params_numpy, tensors

    torch.manual_seed(1)
    cfg = TransitionConfig(dim=16, hidden=32, hash_buckets=64, translation_bound=bound)
    m = TransH(cfg).eval()
    with torch.no_grad():
        torch.nn.init.normal_(m.out.weight)  # the factory starts d at 0; give it length
        w_t, d_t = m.params_of_hidden(m.embed(*tensors(batch, cfg)))
    kind, x = hidden_numpy(batch.ints, batch.numbers, numpy_weights(m), cfg)
    w, d = params_numpy(x, numpy_weights(m), cfg)
    assert kind.shape == batch.ints.shape[:2]
    # float32 torch against the float64 reference: agreement to float32 rounding of sums of ~20 terms
    assert np.abs(w - w_t.numpy()).max() < 1e-4 and np.abs(d - d_t.numpy()).max() < 1e-3


def test_translation_bound_caps_each_translation_and_keeps_the_start(batch):
    """With ``translation_bound`` every ``|d|`` is at most the bound (those shorter are untouched),
    and the rolled-out state still depends on ``z_0``, which long translations erase (decision 96)."""
    import torch

    from cwm.model.transition import TransH, TransitionConfig, hidden_numpy, numpy_weights, params_numpy, rollout_numpy

    torch.manual_seed(2)
    free = TransitionConfig(dim=16, hidden=32, hash_buckets=64)
    m = TransH(free).eval()
    with torch.no_grad():
        torch.nn.init.normal_(m.out.weight, std=3.0)  # long translations, as the shipped model has
    weights = numpy_weights(m)
    _, x = hidden_numpy(batch.ints, batch.numbers, weights, free)
    _, d_free = params_numpy(x, weights, free)
    bounded = TransitionConfig(**{**free.to_dict(), "translation_bound": 0.3})
    _, d = params_numpy(x, weights, bounded)
    n_free, n = np.linalg.norm(d_free, axis=-1), np.linalg.norm(d, axis=-1)
    assert (n_free > 1).mean() > 0.5  # the case the bound is for
    assert n.max() <= 0.3 * (1 + 1e-12)  # capped (float64 rounding of one division)
    short = n_free <= 0.3
    np.testing.assert_array_equal(d[short], d_free[short])  # shorter ones untouched, to the bit
    rng = np.random.default_rng(0)
    z0 = rng.normal(size=(len(batch.lengths), 16))
    z0 /= np.linalg.norm(z0, axis=-1, keepdims=True)
    other = np.roll(z0, 1, axis=0)
    moved = {name: np.abs(rollout_numpy(z0, batch.ints, batch.numbers, weights, cfg)
                          - rollout_numpy(other, batch.ints, batch.numbers, weights, cfg)).max(-1)
             for name, cfg in (("free", free), ("bounded", bounded))}
    # a long rollout under unit-scale translations forgets z_0 to rounding; capped ones keep it
    # (a step keeps at least 1 / (1 + 0.3) of the state; the projections remove one direction each)
    assert np.median(moved["free"]) < 1e-6 and np.median(moved["bounded"]) > 1e-3


def test_use_transition_swaps_the_weights_and_rollout_form(batch, tmp_path):
    """``WorldModel.use_transition`` (``tools/refit_ranker.py --transition``, ``bench/capped_rollout.py
    --transition``) rolls out with the saved TransH and its config, not with the old native core."""
    from dataclasses import replace
    from pathlib import Path

    import torch
    from safetensors.numpy import save_file

    from cwm.model.transition import TransH, numpy_weights, rollout_numpy
    from cwm.model.world_model import WorldModel

    model = WorldModel.load(Path(__file__).resolve().parent / "data" / "scorer_fixture" / "model")
    z0 = np.random.default_rng(1).normal(size=model.tcfg.dim).astype(np.float32)
    z0 /= np.linalg.norm(z0)
    before = model.rollout(z0, batch)  # builds the native evaluator that the swap must drop
    torch.manual_seed(3)
    trained = TransH(replace(model.tcfg, translation_bound=0.05))
    save_file({k: v.detach().numpy() for k, v in trained.state_dict().items()}, str(tmp_path / "transition.safetensors"))
    (tmp_path / "transition.json").write_text(json.dumps({"transition": trained.cfg.to_dict(), "seed": 3}))
    model.use_transition(tmp_path)
    assert model.tcfg.translation_bound == 0.05 and model.meta["transition_source"] == {"seed": 3}
    after = model.rollout(z0, batch)
    expected = rollout_numpy(np.repeat(z0[None], batch.ints.shape[0], 0), batch.ints, batch.numbers,
                             numpy_weights(trained), trained.cfg)
    # float32 native core against the float64 reference over up to ~100 steps: 1e-4 as in the parity tests
    assert np.abs(after - expected).max() < 1e-4 and np.abs(after - before).max() > 1e-3
    (tmp_path / "transition.json").write_text(json.dumps({"transition": {**trained.cfg.to_dict(), "dim": 8}}))
    with pytest.raises(ValueError, match="state size 8"):
        model.use_transition(tmp_path)
