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
    from fold_rankers import PessimisticRanker

    rankers = [Fixed([-1.0, 1.0, 0.0]), Fixed([1.0, 1.0, -2.0])]  # each already centred
    features = np.zeros((3, 4))
    # means 0, 1, -1; population std 1, 0, 1 (exact in binary floating point)
    assert PessimisticRanker(rankers, k=0).predict(features).tolist() == [0.0, 1.0, -1.0]
    assert PessimisticRanker(rankers, k=2).predict(features).tolist() == [-2.0, 1.0, -3.0]


def test_a_constant_offset_of_one_ranker_does_not_change_the_order():
    from fold_rankers import combine

    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 40))
    shifted = scores + np.array([[0.0], [7.0], [0.0], [-3.0], [0.0]])
    for k in (0.5, 2.0):
        # centring removes each ranker's offset (up to rounding, far below the gaps of 40
        # normal draws); uncentred, the offsets would enter the spread unevenly
        np.testing.assert_array_equal(np.argsort(combine(scores, k)), np.argsort(combine(shifted, k)))


def test_identical_rankers_give_the_one_rankers_scores_whatever_k():
    from fold_rankers import PessimisticRanker

    one = Fixed([0.25, -1.5, 4.25])  # mean 1: centred, -0.75, -2.5, 3.25 (exact in binary)
    # the same scores stacked: the spread is exactly 0, and the mean of equal floats is exact
    assert PessimisticRanker([one, one, one], k=3).predict(np.zeros((3, 1))).tolist() == [-0.75, -2.5, 3.25]


def test_an_empty_ensemble_is_a_clear_error():
    from fold_rankers import PessimisticRanker

    with pytest.raises(ValueError, match="at least one ranker"):
        PessimisticRanker([])


def test_bootstrap_draws_are_seeded_and_do_not_depend_on_the_callers_order():
    from fold_rankers import bootstrap_groups

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


def test_anchored_scores_do_not_depend_on_the_batch_after_the_first():
    from fold_rankers import PessimisticRanker

    class Linear:
        """Scores ``w · x + offset``: rankers that disagree, each with an offset of its own."""

        def __init__(self, w, offset):
            self.w, self.offset = np.asarray(w, np.float64), offset

        def predict(self, features):
            return np.asarray(features, np.float64) @ self.w + self.offset

    rankers = [Linear([1.0, 0.0], 5.0), Linear([0.5, 1.0], -2.0), Linear([1.5, -0.5], 0.0)]
    x = np.random.default_rng(1).normal(size=(20, 2))
    anchored = PessimisticRanker(rankers, k=1.0, anchored=True)
    first = anchored.predict(x[:12])
    # a candidate scored in another batch gets the score it got in the first; the same
    # arithmetic on the same row, so equal to the last bit
    np.testing.assert_array_equal(anchored.predict(x[8:])[:4], first[8:12])
    # unanchored, each call centres on its own candidates, so the same rows score differently
    loose = PessimisticRanker(rankers, k=1.0)
    assert not np.allclose(loose.predict(x[8:])[:4], loose.predict(x[:12])[8:12])


def test_a_pessimism_arm_is_parsed_and_checked():
    from search_knobs import knob_search, pessimism_of

    assert pessimism_of("base") is None
    assert pessimism_of("pessimism=0.5") == 0.5
    assert pessimism_of("temperature=1.0+pessimism=1") == 1.0
    knob_search("pessimism=0.5")  # not a search setting: the settings take it without complaint
    for arm, message in [("pessimism=-1", ">= 0"), ("pessimism=much", "a number"),
                         ("pessimism=1+ranker_data=dataset", "drop ranker_data")]:
        with pytest.raises(SystemExit, match=message):
            pessimism_of(arm)


def test_the_report_shows_each_score_on_each_set():
    from report import pessimistic_offline_table

    def metrics(pairwise):
        return {"pairwise_acc": pairwise, "pairwise_clear": 0.8, "top1": 0.5, "top1_task_mean": 0.6}

    sets = {"zoo": metrics(0.78), "dataset_dagger": metrics(0.61)}
    table = pessimistic_offline_table({
        "networks": ["a", "b"], "bootstrap": 5, "k": [0.0, 1.0], "extra_roots": {"dataset_dagger": "data/x"},
        "machine": "a host", "date": "2026-12-06",
        "results": {s: {"pooled": sets, "tasks": {"zoo": 3, "dataset_dagger": 2}} for s in ("single", "k=0", "k=1")}})
    rows = [line for line in table if line.startswith("| ")]
    assert rows[0] == "| score | zoo | dataset_dagger |" and len(rows) == 4  # the header, then three scores
    assert rows[-1] == "| k=1 | 0.780 / 0.800 / 0.500 / 0.600 | 0.610 / 0.800 / 0.500 / 0.600 |"
