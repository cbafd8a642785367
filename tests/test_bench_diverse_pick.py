"""bench/diverse_pick.py: the capped pick, and the replay's variants on synthetic tasks (no dataset here)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_capped_pick_takes_at_most_cap_of_a_tiling_a_round_then_fills_in_order():
    from diverse_pick import capped_pick

    keys = ["a", "a", "a", "b", "b", "c"]
    order = np.arange(6)
    assert capped_pick(keys, 1, "round")(order, [], 3) == [0, 3, 5]
    assert capped_pick(keys, 2, "round")(order, [], 3) == [0, 1, 3]
    # the order used up: the waiting candidates fill the round, best first
    assert capped_pick(keys, 1, "round")(order, [], 5) == [0, 3, 5, 1, 2]
    # a round counts only its own picks; "all" counts the measured ones too
    assert capped_pick(keys, 1, "round")(order, [0], 2) == [1, 3]
    assert capped_pick(keys, 1, "all")(order, [0], 2) == [3, 5]
    # never a measured candidate, and never more than asked
    assert capped_pick(keys, 9, "all")(order[::-1], [5, 4], 2) == [3, 2]


def test_tiling_keys_read_the_split_columns_only():
    from diverse_pick import tiling_keys

    from cwm.model.trace_structure import SPLIT_NAMES

    names = ["dz0"] + list(SPLIT_NAMES) + ["other"]
    x = np.zeros((3, len(names)), np.float32)
    x[:, 0] = [1.0, 2.0, 3.0]  # the rollout differs: the same tiling
    x[2, 1] = 1.0  # another split count: another tiling
    x[:, -1] = [5.0, 6.0, 7.0]
    keys = tiling_keys(x, names)
    assert keys[0] == keys[1] != keys[2] and len(keys[0]) == len(SPLIT_NAMES)


def test_every_variant_replays_every_task_and_the_first_rounds_differ_only_by_the_pick():
    pytest.importorskip("xgboost")
    from adapt_blend import summary
    from diverse_pick import BASELINE, VARIANTS, curves_of

    from cwm.model.trace_structure import SPLIT_NAMES

    names = list(SPLIT_NAMES) + ["f"]
    rng = np.random.default_rng(0)
    tasks = {}
    for i in range(4):
        x = np.zeros((64, len(names)), np.float32)
        x[:, 0] = rng.integers(0, 6, 64)  # six tilings
        x[:, -1] = rng.normal(size=64)
        lat = np.exp(x[:, -1] + 0.3 * x[:, 0])
        tasks[f"t{i}"] = (x, lat, -x[:, -1] + rng.normal(scale=2.0, size=64))
    curves, distinct = curves_of(tasks, names, 8, 3)
    assert set(curves) == set(VARIANTS) and all(np.shape(c) == (4, 3) for c in curves.values())
    assert len(distinct) == 4 and all(1 <= d <= 6 for d in distinct)
    out = summary(curves, 8, BASELINE)
    assert BASELINE not in out["vs_baseline_mean_ci95"] and len(out["vs_baseline_mean_ci95"]) == len(VARIANTS) - 1
    # with a cap of one a round, the first round's first six are the six tilings
    from diverse_pick import capped_pick, tiling_keys

    x, _, prior = tasks["t0"]
    keys = tiling_keys(x, names)
    first = capped_pick(keys, 1, "round")(np.argsort(-prior, kind="stable"), [], 8)
    assert len({keys[i] for i in first[:6]}) == 6
