"""bench/pair_errors.py: pairs classed by what differs, and the weighted share ordered wrongly."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_pairs_are_classed_by_the_columns_that_differ_and_close_pairs_are_left_out():
    from pair_errors import task_pairs

    columns = {"tiling": [0], "unroll": [1]}
    x = np.array([[0, 0], [0, 1], [1, 1], [1, 1]], np.float32)
    lat = np.array([1.0, 2.0, 4.0, 4.2])  # 2 and 3 within 1.1x: not a clear pair
    score = np.array([3.0, 1.0, 2.0, 0.0])  # orders (0,1) and (0,2) right, (1,2) wrong
    pairs = {(c, right) for c, right, _ in task_pairs(x, lat, score, columns, 1.1)}
    assert len(task_pairs(x, lat, score, columns, 1.1)) == 5
    assert ("unroll", True) in pairs and ("tiling+unroll", True) in pairs and ("tiling", False) in pairs
    # a tie in score is never right
    assert not any(r for _, r, _ in task_pairs(x[:2], lat[:2], np.zeros(2), columns, 1.1))


def test_summary_weighs_each_task_equally_and_buckets_by_ratio():
    from pair_errors import summary

    by_task = {"a": [("tiling", True, 1.2)] * 9 + [("tiling", False, 5.0)],  # 10 pairs, 1 wrong
               "b": [("unroll", False, 1.2)]}  # 1 pair, wrong
    out = summary(by_task)
    assert abs(out["all"]["wrong"] - (0.1 + 1.0) / 2) < 1e-9  # the mean over tasks, not over pairs
    assert out["all"]["pairs"] == 11 and abs(out["all"]["weight"] - 2.0) < 1e-9
    assert out["only tiling"]["wrong"] == 0.1 and out["only unroll"]["wrong"] == 1.0
    assert out["ratio 1.1-1.25"]["pairs"] == 10 and out["ratio 4-inf"]["wrong"] == 1.0
