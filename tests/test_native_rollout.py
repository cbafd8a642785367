"""Native batched TransH rollout against the NumPy reference (the specification)."""
from __future__ import annotations

import numpy as np
import pytest

from cwm import native
from cwm.actions.featurize import INT_COLUMNS, NUM_NUMBERS
from cwm.actions.vocab import KINDS
from cwm.model.transition import TransitionConfig, rollout_numpy


def _weights(cfg: TransitionConfig, rng):
    h, d = cfg.hidden, cfg.dim
    return {"kind": rng.normal(size=(len(KINDS), h)), "hashed": rng.normal(size=(6, cfg.hash_buckets, h)) * 0.3,
            "small": rng.normal(size=(7, cfg.small_vocab, h)) * 0.3, "numbers_w": rng.normal(size=(h, NUM_NUMBERS)) * 0.3,
            "numbers_b": rng.normal(size=h), "out_w": rng.normal(size=(2 * d, h)) / np.sqrt(h),
            "out_b": rng.normal(size=2 * d) * 0.1,
            **({"state_w": rng.normal(size=(h, d)) * _state_scale(cfg)} if cfg.state_dependent else {})}


def _state_scale(cfg: TransitionConfig) -> float:
    """Random ``S`` for a parity test. Unnormalized states grow to ~100 in 30 steps, and a random
    ``S`` of unit scale then makes the rollout chaotic: the two twins' float64 summation orders
    (1e-16) grow to 3e-5 in 20 steps (measured), which is the model's conditioning, not a bug. A
    small ``S`` keeps that case a test of the code path; normalized states (every shipped model)
    get a unit-scale ``S``."""
    return (1.0 if cfg.normalize_state else 0.01) / np.sqrt(cfg.dim)


def _actions(rng, b, t, lengths):
    ints = np.zeros((b, t, len(INT_COLUMNS)), np.int32)
    nums = np.zeros((b, t, NUM_NUMBERS), np.float32)
    for i, n in enumerate(lengths):
        ints[i, :n, 0] = rng.integers(2, len(KINDS), n)
        ints[i, :n, 1:] = rng.integers(-1, 2 ** 31 - 1, (n, len(INT_COLUMNS) - 1)) % np.array(
            [2, 40, 2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1, 20, 8, 30, 2 ** 31 - 1, 2 ** 31 - 1, 40, 4])
        nums[i, :n] = rng.choice([0, 1, 2, 16, 64, 512, -1, 0.5], (n, NUM_NUMBERS))
    return ints, nums


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("state_dependent", [False, True])
@pytest.mark.parametrize("bound", [0.0, 0.25])
def test_parity_random_shapes_padding_and_empty(seed, normalize, state_dependent, bound):
    rng = np.random.default_rng(seed)
    cfg = TransitionConfig(dim=int(rng.integers(4, 40)), hidden=int(rng.integers(8, 64)),
                           hash_buckets=int(rng.integers(16, 300)), small_vocab=int(rng.integers(8, 40)),
                           normalize_state=normalize, state_dependent=state_dependent, translation_bound=bound)
    w = _weights(cfg, rng)
    b, t = int(rng.integers(1, 12)), int(rng.integers(0, 30))
    lengths = rng.integers(0, t + 1, b) if t else np.zeros(b, int)
    lengths[0] = 0  # an empty sequence
    ints, nums = _actions(rng, b, t, lengths)
    z0 = rng.normal(size=(b, cfg.dim)).astype(np.float32)
    core = native.transition_core(w, cfg)
    for all_states in (False, True):
        ref = rollout_numpy(z0, ints, nums, w, cfg, return_all=all_states)
        for threads in (1, 2):
            got = core.rollout(z0, ints, nums, all_states=all_states, num_threads=threads)
            assert got.shape == ref.shape and got.dtype == np.float32
            assert np.abs(got - ref).max() <= 1e-5
    assert np.array_equal(core.rollout(z0, ints, nums)[0], z0[0])  # empty sequence: z_T = z_0


@pytest.mark.parametrize("state_dependent", [False, True])
def test_parity_with_a_trained_style_model_on_real_traces(trace_records, state_dependent):
    import torch

    from cwm.actions import featurize_batch
    from cwm.model.transition import TransH, numpy_weights, tensors

    torch.manual_seed(0)
    cfg = TransitionConfig(dim=32, hidden=64, hash_buckets=128, state_dependent=state_dependent)
    m = TransH(cfg).eval()
    with torch.no_grad():
        m.out.weight.normal_(0, 0.05)  # non-zero translations
        if state_dependent:
            m.state.weight.normal_(0, 0.5)  # the state moves the action parameters
    fb = featurize_batch([r["trace"] for r in trace_records[::9]])
    z0 = np.random.default_rng(0).normal(size=(fb.ints.shape[0], cfg.dim)).astype(np.float32)
    got = native.transition_core(numpy_weights(m), cfg).rollout(z0, fb.ints, fb.numbers)
    ref = rollout_numpy(z0, fb.ints, fb.numbers, numpy_weights(m), cfg)
    with torch.no_grad():
        tz = m(torch.from_numpy(z0), *tensors(fb, cfg)).numpy()
    assert np.abs(got - ref).max() <= 1e-5
    assert np.abs(got - tz).max() <= 1e-4  # float32 torch vs float64 reference


def test_bad_shapes_and_dtypes_raise_value_error():
    rng = np.random.default_rng(0)
    cfg = TransitionConfig(dim=8, hidden=16, hash_buckets=32, small_vocab=8)
    core = native.transition_core(_weights(cfg, rng), cfg)
    ints, nums = _actions(rng, 3, 5, [5, 2, 0])
    z0 = np.zeros((3, 8), np.float32)
    with pytest.raises(ValueError, match=r"z0 must have shape \(3, 8\)"):
        core.rollout(np.zeros((3, 7), np.float32), ints, nums)
    with pytest.raises(ValueError, match=r"numbers must have shape \(3, 5, 10\)"):
        core.rollout(z0, ints, nums[:, :4])
    with pytest.raises(ValueError, match=r"ints must have shape \(batch, steps, 14\)"):
        core.rollout(z0, ints[..., :3], nums)
    with pytest.raises(ValueError, match="int32"):
        core.rollout(z0, ints.astype(np.int64), nums)
    with pytest.raises(ValueError, match="float32"):
        core.rollout(z0.astype(np.float64), ints, nums)
    bad = _weights(cfg, rng)
    bad["out_b"] = bad["out_b"][:3]
    with pytest.raises(ValueError, match="out_b must have shape"):
        native.transition_core(bad, cfg)
    reads_state = TransitionConfig(dim=8, hidden=16, hash_buckets=32, small_vocab=8, state_dependent=True)
    with pytest.raises(ValueError, match="lack 'state_w'"):
        native.transition_core(_weights(cfg, rng), reads_state)
    with pytest.raises(ValueError, match=r"state_w must have shape \(16, 8\)"):
        native.transition_core(dict(_weights(cfg, rng), state_w=np.zeros((8, 16))), reads_state)
    with pytest.raises(ValueError, match="does not read the state"):
        native.transition_core(_weights(reads_state, rng), cfg)
    with pytest.raises(ValueError, match="translation_bound must be finite and >= 0"):
        native.transition_core(_weights(cfg, rng), TransitionConfig(**{**cfg.to_dict(), "translation_bound": -1.0}))


def test_state_read_starts_as_the_plain_rollout(trace_records):
    """``with_state_read`` adds ``S = 0``: the same states as the plain transition, in torch and
    natively, and the cached embeddings give the same answer on a second call."""
    import torch

    from cwm.actions import featurize_batch
    from cwm.model.transition import TransH, numpy_weights, tensors, with_state_read

    torch.manual_seed(1)
    cfg = TransitionConfig(dim=16, hidden=32, hash_buckets=64)
    plain = TransH(cfg).eval()
    with torch.no_grad():
        plain.out.weight.normal_(0, 0.05)
    reads = with_state_read(plain).eval()
    assert reads.cfg.state_dependent and not reads.state.weight.any()
    fb = featurize_batch([r["trace"] for r in trace_records[::11]])
    z0 = np.random.default_rng(1).normal(size=(fb.ints.shape[0], cfg.dim)).astype(np.float32)
    with torch.no_grad():
        a = plain(torch.from_numpy(z0), *tensors(fb, cfg)).numpy()
        b = reads(torch.from_numpy(z0), *tensors(fb, reads.cfg)).numpy()
    assert np.abs(a - b).max() <= 1e-6  # float32: the same sums in another order
    core = native.transition_core(numpy_weights(reads), reads.cfg)
    first = core.rollout(z0, fb.ints, fb.numbers)
    assert core.cache_size > 0
    assert np.array_equal(core.rollout(z0, fb.ints, fb.numbers), first)  # from the cache: bit for bit
    plain_native = native.transition_core(numpy_weights(plain), cfg).rollout(z0, fb.ints, fb.numbers)
    assert np.array_equal(first, plain_native)  # S = 0 adds exact zeros in float64
    with torch.no_grad():
        reads.state.weight.normal_(0.0, 1.0)  # once S is trained, the state changes the rollout
        moved = reads(torch.from_numpy(z0), *tensors(fb, reads.cfg)).numpy()
    assert np.abs(moved - a).max() > 1e-3
