"""bench/adapt_sim.py: the replay of search's measure-and-refit loop on a fixed pool."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_replay_reveals_the_top_of_the_margin_a_round_at_a_time():
    from adapt_sim import replay

    lat = np.array([8.0, 1.0, 4.0, np.inf, 2.0, 16.0])
    perfect = -np.where(np.isfinite(lat), lat, 1e9)  # higher margin = faster
    assert replay(lat, np.zeros((6, 1), np.float32), perfect, None, 2, 3) == [1.0, 1.0, 1.0]
    worst = -perfect  # the failed candidate first, the fastest last
    assert replay(lat, np.zeros((6, 1), np.float32), worst, None, 2, 3) == [1 / 16, 1 / 4, 1.0]  # the failed one and 16, then 8 and 4, then 2 and 1


def test_the_residual_learns_what_the_prior_does_not_know():
    """A prior that knows nothing (all ties: the pool's order): after the first round the residual
    (``fit_residual``, the cost model's own) learns that feature 0 decides the latency and puts
    the fast candidates first. (A prior that ranks *backwards* is not undone this way: the
    measured candidates are then the slowest, and trees do not extrapolate past them.)"""
    from adapt_sim import replay

    from cwm.cost_model.cwm_model import AdaptConfig

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    lat = np.exp(x[:, 0])  # feature 0 decides the latency
    prior = np.zeros(64)
    cfg = AdaptConfig(min_measured=8, half_weight_at=1)
    fixed = replay(lat, x, prior, None, 8, 4)
    adapted = replay(lat, x, prior, cfg, 8, 4)
    assert fixed[0] == adapted[0]  # the first round is the prior's
    assert adapted[1] > fixed[1] and adapted[-1] > fixed[-1]
    assert adapted[1] > 0.9  # 16 of 64 measured: within 10% of the pool's best


def test_paired_difference_is_the_mean_with_an_interval_around_it():
    from adapt_sim import paired_difference

    a = np.array([[1.0, 1.0], [0.9, 1.0], [0.8, 1.0], [0.7, 1.0]])
    b = np.full((4, 2), 0.8)
    (m0, lo0, hi0), (m1, lo1, hi1) = paired_difference(a, b)
    assert abs(m0 - 0.05) < 1e-12 and lo0 <= m0 <= hi0 and lo0 < hi0
    assert abs(m1 - 0.2) < 1e-12 and lo1 == hi1 == m1  # no spread, no interval
