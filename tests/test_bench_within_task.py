"""bench/within_task.py: the halves, the metrics of a ranked half, one task's rows and the summary
(a tiny ranker config; no dataset)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_the_halves_split_every_index_once_seeded_by_task():
    from within_task import halves

    a, b = halves(11, "task", 0)
    assert sorted(a + b) == list(range(11)) and len(a) == 6 and len(b) == 5
    assert (a, b) == halves(11, "task", 0)
    assert (a, b) != halves(11, "other", 0)


def test_a_ranked_half_reads_pairwise_and_the_top_pick():
    from within_task import ranked_half

    lat = [1.0, 2.0, 4.0]
    assert ranked_half(lat, [3.0, 2.0, 1.0]) == {"pairwise": 1.0, "top1": 1.0}
    assert ranked_half(lat, [1.0, 2.0, 3.0]) == {"pairwise": 0.0, "top1": 0.25}  # picks the 4.0


class Prior:
    def predict(self, feats):
        return -feats[:, 0]  # the first column is the latency: a perfect prior


def test_one_task_is_ranked_by_each_ranker_on_both_halves():
    from within_task import CURVE, task_rows

    from cwm.model.ranker import RankerConfig

    rng = np.random.default_rng(0)
    lat = rng.uniform(1, 2, 40)
    lat[3] = np.inf  # a failed candidate is in neither half
    feats = np.column_stack([lat, rng.normal(size=40)]).astype(np.float32)
    feats[3, 0] = 0.0
    rows = task_rows({"rows": feats}, lat, Prior(), RankerConfig(n_estimators=5, parallel_trees=1), "t", 0)
    assert len(rows) == 2 and [r["fitted"] + r["ranked"] for r in rows] == [39, 39]
    for r in rows:
        assert r["out_of_network"] == {"pairwise": 1.0, "top1": 1.0}
        assert {"within_task", "within_task_regression"} <= set(r)
        assert [f"within_task_{n}" in r for n in CURVE] == [r["fitted"] > n for n in CURVE]
        # a regression on the latency column itself orders the half it did not see (the
        # latencies are distinct draws; trees split the column between them)
        assert r["within_task_regression"]["pairwise"] > 0.8


def test_a_candidate_missing_from_a_representation_is_in_neither_half():
    from within_task import task_rows

    from cwm.model.ranker import RankerConfig

    rng = np.random.default_rng(1)
    lat = rng.uniform(1, 2, 20)
    feats = lat[:, None].astype(np.float32)
    store = rng.normal(size=(20, 3)).astype(np.float32)
    store[5] = np.nan  # a record that no longer replays
    rows = task_rows({"rows": feats, "store": store}, lat, Prior(), RankerConfig(n_estimators=5, parallel_trees=1), "t", 0)
    assert [r["fitted"] + r["ranked"] for r in rows] == [19, 19]
    assert {"within_task_store", "within_task_regression_store"} <= set(rows[0])


def test_the_summary_averages_over_halves_pooled_and_by_network():
    from within_task import summary

    rows = [{"task": "a", "x": {"pairwise": 1.0, "top1": 1.0}},
            {"task": "b", "x": {"pairwise": 0.5, "top1": 0.5}, "y": {"pairwise": 0.0, "top1": 0.0}}]
    out = summary(rows, {"net1": ["a"], "net2": ["a", "b"]})
    assert out["pooled"]["x"] == {"pairwise": 0.75, "top1": 0.75, "halves": 2}
    assert out["pooled"]["y"] == {"pairwise": 0.0, "top1": 0.0, "halves": 1}
    assert out["by_network"]["net1"]["x"]["pairwise"] == 1.0
    assert np.isnan(out["by_network"]["net1"]["y"]["pairwise"]) and out["by_network"]["net1"]["y"]["halves"] == 0
    assert out["by_network"]["net2"]["x"]["pairwise"] == pytest.approx(0.75, abs=1e-12)  # (1 + 0.5) / 2


def test_the_readme_table_puts_the_prior_first_and_names_each_input():
    import report
    from within_task import summary

    rows = [{"task": "a", "out_of_network": {"pairwise": 0.5, "top1": 0.5},
             "within_task_regression_store": {"pairwise": 1.0, "top1": 1.0},
             "within_task_16": {"pairwise": 0.25, "top1": 0.25}}]
    payload = {"tasks": 1, "machine": "m", "date": "d", **summary(rows, {"n": ["a"]})}
    lines = report.within_task_table(payload)
    body = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert body == ["| the prior (shipped config) | `rows` | every training task but the network's | 0.500 | 0.500 |",
                    "| ranker (shipped config) | `rows` | 16 of the other half | 0.250 | 0.250 |",
                    "| regression | `store` | the other half | 1.000 | 1.000 |"]
