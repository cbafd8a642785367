"""bench/top_rerank.py: the cascade's orders and its leave-one-network-out run on synthetic tasks."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


class _Second:
    """A second stage that scores a row by its first column."""

    def predict(self, rows):
        return np.asarray(rows)[:, 0]


def test_rerank_orders_the_prior_top_k_by_the_second_stage_and_keeps_the_rest_below_in_prior_order():
    from top_rerank import combined

    x = np.array([[0.0], [5.0], [1.0], [9.0], [3.0]], np.float32)
    prior = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    order = list(np.argsort(-combined(x, prior, _Second(), 3, False, "rerank"), kind="stable"))
    assert order == [1, 2, 0, 3, 4]  # the top 3 by x, then 3 (x = 9, but outside the top 3) and 4
    summed = combined(x, prior, _Second(), 3, False, "sum")
    assert summed.shape == (5,) and abs(summed.mean()) < 1e-9  # two standardized margins added


def test_second_stage_rows_keep_the_valid_top_k_and_the_prior_column():
    from top_rerank import second_stage_rows

    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    lat = np.array([1.0, np.nan, 3.0, 4.0, 5.0])
    prior = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    rows, kept = second_stage_rows(x, lat, prior, 3, True)
    assert rows.shape == (2, 3) and list(kept) == [1.0, 3.0]  # the failed one dropped
    assert rows[0, 2] > rows[1, 2]  # the prior's margin, standardized over the top 3


def test_every_variant_scores_every_task_with_a_second_stage_fitted_without_its_network():
    pytest.importorskip("xgboost")
    from top_rerank import PRIOR, VARIANTS, run, summary

    from cwm.model.ranker import RankerConfig

    rng = np.random.default_rng(0)
    tasks, folds = {}, {}
    for i in range(6):
        net = f"net{i % 3}"
        x = rng.normal(size=(80, 3)).astype(np.float32)
        lat = np.exp(x[:, 0] + 0.2 * x[:, 1])
        tasks[f"t{i}"] = (x, lat, net, -x[:, 0] + rng.normal(scale=0.5, size=80))
        folds.setdefault(net, []).append(f"t{i}")
    results = run(tasks, folds, RankerConfig(n_estimators=20, parallel_trees=1, n_jobs=1))
    assert set(results) == {PRIOR} | set(VARIANTS) and all(set(r) == set(tasks) for r in results.values())
    out = summary(results)
    assert "vs_prior_ci95" not in out[PRIOR] and all("vs_prior_ci95" in out[n] for n in VARIANTS)
    assert all(0 < out[n]["top1_task_mean"] <= 1 and out[n]["found_64"] >= out[n]["found_16"] for n in out)
