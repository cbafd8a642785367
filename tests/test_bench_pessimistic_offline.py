"""bench/pessimistic_offline.py: the pessimistic score and the bootstrap draws (no fitting here)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


class Fixed:
    """A ranker whose scores are a fixed vector."""

    def __init__(self, scores):
        self.scores = np.asarray(scores, np.float64)

    def predict(self, features):
        assert len(features) == len(self.scores)
        return self.scores


def test_the_score_is_the_mean_less_k_times_the_spread():
    from pessimistic_offline import PessimisticRanker

    rankers = [Fixed([-1.0, 1.0, 0.0]), Fixed([1.0, 1.0, -2.0])]  # each already centred
    features = np.zeros((3, 4))
    # means 0, 1, -1; population std 1, 0, 1 (exact in binary floating point)
    assert PessimisticRanker(rankers, k=0).predict(features).tolist() == [0.0, 1.0, -1.0]
    assert PessimisticRanker(rankers, k=2).predict(features).tolist() == [-2.0, 1.0, -3.0]


def test_a_constant_offset_of_one_ranker_does_not_change_the_order():
    from pessimistic_offline import combine

    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 40))
    shifted = scores + np.array([[0.0], [7.0], [0.0], [-3.0], [0.0]])
    for k in (0.5, 2.0):
        # centring removes each ranker's offset (up to rounding, far below the gaps of 40
        # normal draws); uncentred, the offsets would enter the spread unevenly
        np.testing.assert_array_equal(np.argsort(combine(scores, k)), np.argsort(combine(shifted, k)))


def test_identical_rankers_give_the_one_rankers_scores_whatever_k():
    from pessimistic_offline import PessimisticRanker

    one = Fixed([0.25, -1.5, 4.25])  # mean 1: centred, -0.75, -2.5, 3.25 (exact in binary)
    # the same scores stacked: the spread is exactly 0, and the mean of equal floats is exact
    assert PessimisticRanker([one, one, one], k=3).predict(np.zeros((3, 1))).tolist() == [-0.75, -2.5, 3.25]


def test_an_empty_ensemble_is_a_clear_error():
    from pessimistic_offline import PessimisticRanker

    with pytest.raises(ValueError, match="at least one ranker"):
        PessimisticRanker([])


def test_bootstrap_draws_are_seeded_and_do_not_depend_on_the_callers_order():
    from pessimistic_offline import bootstrap_groups

    keys = [f"task{i}" for i in range(30)]
    first = bootstrap_groups(keys, 3)
    assert first == bootstrap_groups(list(reversed(keys)), 3)
    assert len(first) == 30 and set(first) <= set(keys)
    assert len(set(first)) < 30  # with replacement: 30 draws of 30 repeat one (1 - 30!/30^30 ≈ 1)
    assert first != bootstrap_groups(keys, 4)


def test_fewer_than_two_rankers_a_fold_is_refused_before_any_work():
    from pessimistic_offline import main

    with pytest.raises(SystemExit, match="at least 2"):
        main(["--bootstrap", "1"])
