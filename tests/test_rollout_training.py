"""Multi-step rollout training of TransH against a (stand-in) frozen encoder."""
from __future__ import annotations

import numpy as np


def bag_of_chars_encoder(dim=16, seed=0):
    """A deterministic stand-in for E: character counts through a fixed random projection."""
    proj = np.random.default_rng(seed).normal(size=(128, dim)) / 30.0

    def encode(texts):
        counts = np.stack([np.bincount(np.frombuffer(t.encode("ascii", "ignore"), np.uint8) % 128, minlength=128)
                           for t in texts]).astype(np.float64)
        z = np.log1p(counts) @ proj
        return z / np.linalg.norm(z, axis=1, keepdims=True)  # unit vectors, like the real encoder

    return encode


def test_rollout_training_beats_no_transition(trace_records, workload_mods):
    from cwm.dataset.loader import Trajectory
    from cwm.model.rollout_training import RolloutConfig, build_rollout_data, rollout_error, train_transition
    from cwm.model.transition import TransitionConfig

    recs = [r for r in trace_records if r["source"] == "tuning"][::4]
    trajs = [Trajectory(r["workload"], r, workload_mods[r["workload"]]) for r in recs]
    cfg = RolloutConfig(steps_per_trajectory=3, epochs=60, batch_size=16, lr=3e-3)
    data = build_rollout_data(trajs, bag_of_chars_encoder(64), cfg)
    assert data.targets.shape == (len(trajs), 3, 64) and (data.steps[:, -1] == data.lengths).all()
    tcfg = TransitionConfig(dim=64, hidden=64, hash_buckets=256)
    model, history = train_transition(data, tcfg, cfg, log=lambda *_: None)
    assert history[-1] < history[0]
    err = rollout_error(model, data, tcfg)
    assert err["state_distance"] < 0.5 * err["identity_distance"]  # the rollout beats "no transition"
    assert err["closer_than_negative"] > 0.9
    again, history2 = train_transition(data, tcfg, cfg, log=lambda *_: None)
    assert history2 == history  # same seed, same training
