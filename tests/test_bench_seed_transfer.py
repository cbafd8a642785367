"""bench/seed_transfer.py: the task choice and the two summaries (no tuning here)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_quality_summary_takes_the_best_of_the_first_k_seeds():
    from seed_transfer import quality_summary

    rows = [{"own_us": 100.0, "seeds_us": [200.0, 50.0, None]},    # k=1: 2.0, k>=2: 0.5
            {"own_us": 10.0, "seeds_us": [None, 10.5]},            # k=1: no seed ran (inf), k>=2: 1.05
            {"own_us": None, "seeds_us": []}]                      # no seeds: counted, not measured
    out = quality_summary(rows)
    assert out["tasks"] == 3 and out["tasks_with_seeds"] == 2
    k1, k2 = out["by_k"]["1"], out["by_k"]["2"]
    assert k1["geomean_best_seed_over_own"] == pytest.approx(2.0)  # the inf is left out of the geomean
    assert (k1["faster_than_own"], k1["within_10pct"]) == (0, 0)
    assert k2["geomean_best_seed_over_own"] == pytest.approx(math.sqrt(0.5 * 1.05))
    assert (k2["faster_than_own"], k2["within_10pct"]) == (1, 2)


def test_search_summary_pairs_each_arm_with_none_of_the_same_task_and_seed():
    from seed_transfer import search_summary

    rows = [{"task": "a", "seed": 0, "arm": "none", "best_us": 100.0},
            {"task": "a", "seed": 0, "arm": "first8", "best_us": 50.0},
            {"task": "a", "seed": 1, "arm": "first8", "best_us": 10.0},   # no "none" of seed 1: not paired
            {"task": "b", "seed": 0, "arm": "none", "best_us": 10.0},
            {"task": "b", "seed": 0, "arm": "first8", "best_us": 10.1},   # within 2 %: neither
            {"task": "b", "seed": 0, "arm": "last8", "best_us": 20.0}]
    out = search_summary(rows)["arms"]
    assert out["first8"] == {"pairs": 2, "geomean_best_over_none": pytest.approx(math.sqrt(0.5 * 1.01)),
                             "faster": 1, "slower": 0}
    assert out["last8"]["pairs"] == 1 and out["last8"]["slower"] == 1


def test_round_robin_takes_op_classes_in_turn_heaviest_first_one_per_name():
    from seed_transfer import round_robin

    tasks = [{"key": "c1", "name": "fused_conv2d_add", "flop": 5}, {"key": "c2", "name": "fused_conv2d1", "flop": 9},
             {"key": "c3", "name": "fused_conv2d1", "flop": 1}, {"key": "m1", "name": "matmul", "flop": 3},
             {"key": "s1", "name": "softmax", "flop": 2}]
    assert [t["key"] for t in round_robin(tasks, 4)] == ["c2", "m1", "s1", "c1"]
    assert [t["key"] for t in round_robin(tasks, 10)] == ["c2", "m1", "s1", "c1"]  # c3: the name was taken


def test_choice_summary_takes_the_best_of_the_k_each_ordering_puts_first():
    """Two tasks, pools of 3: library order, the prior's order and the adapted model's order
    each take their own first K; the oracle is the pool's best whatever K; random lies between."""
    from seed_transfer import choice_summary

    rows = [{"own_us": 10.0, "seeds_us": [40.0, 20.0, 10.0], "n_seeds": 3,
             "prior": [0.0, 1.0, 2.0], "adapted": [2.0, 1.0, 0.0]},
            {"own_us": 10.0, "seeds_us": [10.0, 20.0, 30.0], "n_seeds": 3,
             "prior": [0.0, 2.0, 1.0], "adapted": [1.0, 0.0, 2.0]},
            {"own_us": None, "seeds_us": [], "n_seeds": 0, "prior": [], "adapted": []}]  # not measured
    out = choice_summary(rows, ks=(1, 2), random_draws=50)
    assert out["tasks"] == 2
    by = out["by_order"]
    assert by["library"]["1"] == pytest.approx(math.sqrt(4.0 * 1.0))
    assert by["prior"]["1"] == pytest.approx(math.sqrt(1.0 * 2.0))
    assert by["prior"]["2"] == pytest.approx(math.sqrt(1.0 * 2.0))
    assert by["adapted"]["1"] == pytest.approx(math.sqrt(4.0 * 3.0))
    assert by["oracle"]["1"] == by["oracle"]["2"] == pytest.approx(1.0)
    assert by["oracle"]["2"] <= by["random"]["2"] <= max(by["library"]["1"], by["adapted"]["1"])
    assert "prior_network_out" not in by  # those rows were not scored network-out


def test_replay_summary_puts_the_chosen_seeds_in_place_of_the_last_trials():
    """One unseeded search (best 100 after 60 trials, 80 after 64); seeds of 90 and 70: K = 4
    replaces the last 4 trials with the first 4 seeds the ordering takes."""
    from seed_transfer import replay_summary

    curve = [100.0] * 60 + [80.0] * 4
    search = [{"task": "a", "arm": "none", "seed": 0, "curve": curve},
              {"task": "a", "arm": "last8", "seed": 0, "curve": curve}]  # seeded arms are not replayed
    rows = [{"task": "a", "own_us": 50.0, "seeds_us": [90.0, 95.0, 96.0, 97.0, 70.0], "prior_no": [0, 0, 0, 0, 1]}]
    out = replay_summary(search, rows, ks=(4,))
    assert out["searches"] == 1
    assert out["by_order"]["library"]["4"] == pytest.approx(90.0 / 80.0)  # worse than the search's own end
    assert out["by_order"]["prior_network_out"]["4"] == pytest.approx(70.0 / 80.0)


def test_best_curve_skips_failed_records_and_keeps_the_running_best():
    from seed_transfer import best_curve

    records = [{"build_error": "x", "run_secs": [1e-7]},      # not valid: no best yet
               {"run_secs": [2e-6, 4e-6]},                     # mean 3 µs
               {"run_secs": [1e10]},                           # MetaSchedule's failure marker
               {"run_secs": [1e-6]}]
    assert best_curve(records) == [None, pytest.approx(3.0), pytest.approx(3.0), pytest.approx(1.0)]
