"""Ranker labels, training contract and the evaluation metrics."""
from __future__ import annotations

import numpy as np
import pytest

from cwm.model.metrics import ndcg_at_k, pairwise_accuracy, summarize, topk_score
from cwm.model.ranker import GRADES, Ranker, RankerConfig, relevance


def test_relevance_grades():
    g = relevance(np.array([1.0, 2.0, 8.0, np.inf, np.nan]))
    assert g.tolist() == [GRADES - 1, GRADES // 2, 1, 0, 0]


def test_metrics_perfect_random_and_reversed():
    lat = np.array([1.0, 2.0, 3.0, 4.0])
    perfect, reverse = -lat, lat
    assert pairwise_accuracy(lat, perfect) == 1.0 and pairwise_accuracy(lat, reverse) == 0.0
    assert ndcg_at_k(lat, perfect) == pytest.approx(1.0) and ndcg_at_k(lat, reverse) < 1.0
    assert topk_score([(lat, perfect, 1.0)], 1) == 1.0
    assert topk_score([(lat, reverse, 1.0)], 1) == pytest.approx(0.25)
    # weighted over tasks: (1*1 + 3*1) / (1*1 + 3*4)
    assert topk_score([(lat, perfect, 1.0), (lat, reverse, 3.0)], 1) == pytest.approx(4 / 13)
    s = summarize([(lat, perfect, 1.0)])
    assert s == {"top1": 1.0, "top5": 1.0, "top1_task_mean": 1.0, "pairwise_acc": 1.0, "ndcg10": pytest.approx(1.0)}


def test_ranker_learns_a_ranking_and_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 5)).astype(np.float32)
    groups = np.repeat(np.arange(8), 50)
    lat = np.exp(-x[:, 0] + 0.1 * rng.normal(size=400)) + groups  # faster when x0 large
    r = Ranker(RankerConfig(n_estimators=50, seed=1)).fit(x, lat, groups)
    s = r.predict(x)
    accs = [pairwise_accuracy(lat[groups == g], s[groups == g]) for g in range(8)]
    assert np.mean(accs) > 0.85
    r.save(str(tmp_path / "ranker.json"))
    again = Ranker.load(str(tmp_path / "ranker.json"))
    assert np.array_equal(again.predict(x), s)
    assert np.array_equal(r.predict(x[:5]), s[:5])  # small batches take the in-place path: same scores
    same = Ranker(RankerConfig(n_estimators=50, seed=1)).fit(x, lat, groups)
    assert np.array_equal(same.predict(x), s)  # same seed, same model


def test_ranker_pair_truncation(tmp_path):
    """``pair_top_k=None`` builds pairs from every candidate of a task (XGBoost's ``topk`` at the
    group's size); the default 32 is XGBoost's own; a config saved before the field existed
    reloads with 32, what it was trained with."""
    import json

    import xgboost as xgb

    from cwm.model.ranker import Ranker, RankerConfig, relevance

    rng = np.random.default_rng(0)
    x = rng.random((240, 4)).astype(np.float32)
    lat = np.exp(x @ np.array([1.0, -0.5, 0.2, 0.0]) + 0.1 * rng.random(240))
    groups = np.repeat(np.arange(3), 80)
    cfg = dict(n_estimators=10, n_jobs=1)
    every = Ranker(RankerConfig(pair_top_k=None, **cfg)).fit(x, lat, groups).predict(x)
    assert np.array_equal(every, Ranker(RankerConfig(pair_top_k=80, **cfg)).fit(x, lat, groups).predict(x))
    default = Ranker(RankerConfig(**cfg)).fit(x, lat, groups)
    assert not np.array_equal(every, default.predict(x))

    d = xgb.DMatrix(x, label=np.concatenate([relevance(lat[g == groups], 16) for g in range(3)]))
    d.set_group([80, 80, 80])
    c = RankerConfig(**cfg)
    plain = xgb.train({"objective": c.objective, "max_depth": c.max_depth, "eta": c.learning_rate,
                       "subsample": c.subsample, "colsample_bytree": c.colsample_bytree, "seed": c.seed,
                       "nthread": 1, "eval_metric": "ndcg@10", "lambdarank_pair_method": "topk",
                       "ndcg_exp_gain": c.ndcg_exp_gain, "num_parallel_tree": c.parallel_trees}, d,
                      num_boost_round=c.n_estimators)
    assert np.array_equal(plain.predict(xgb.DMatrix(x)), default.predict(x))  # 32 is XGBoost's default

    default.save(str(tmp_path / "ranker.json"))
    saved = json.loads((tmp_path / "ranker.json.config").read_text())
    del saved["pair_top_k"]
    (tmp_path / "ranker.json.config").write_text(json.dumps(saved))
    assert Ranker.load(str(tmp_path / "ranker.json")).cfg.pair_top_k == 32


def test_top1_task_mean_gives_every_task_the_same_say():
    """A slow task whose pick is 2x off and a fast task picked right: the latency-weighted top-1
    follows the slow task (1000 : 1 in latency), the per-task mean is the plain mean of 0.5 and 1."""
    from cwm.model.metrics import top1_task_mean

    slow = (np.array([1.0, 2.0]), np.array([0.0, 1.0]), 1.0)  # picks the 2.0 s candidate
    fast = (np.array([1e-3, 2e-3]), np.array([1.0, 0.0]), 1.0)  # picks the best
    assert top1_task_mean([slow, fast]) == pytest.approx(0.75)
    assert topk_score([slow, fast], 1) == pytest.approx(1.001 / 2.001)
    failed = (np.array([1.0, np.inf, 4.0]), np.array([0.0, 1.0, 0.5]), 1.0)  # a failed pick: the slowest valid
    assert top1_task_mean([failed]) == pytest.approx(0.25)


def test_ranker_parallel_trees(tmp_path):
    """``parallel_trees`` grows that many trees a round (XGBoost's ``num_parallel_tree``), kept in
    the saved model, so XGBoost's own library (the C++ scorer's path) predicts the same scores;
    a config saved before the field existed reloads with 1, what it was trained with."""
    import json

    import xgboost as xgb

    rng = np.random.default_rng(0)
    x = rng.random((240, 4)).astype(np.float32)
    lat = np.exp(x @ np.array([1.0, -0.5, 0.2, 0.0]) + 0.1 * rng.random(240))
    groups = np.repeat(np.arange(3), 80)
    cfg = dict(n_estimators=10, n_jobs=1)
    single = Ranker(RankerConfig(parallel_trees=1, **cfg)).fit(x, lat, groups)
    bagged = Ranker(RankerConfig(**cfg)).fit(x, lat, groups)  # the default since decision 61
    assert len(bagged.booster.get_dump()) == 4 * len(single.booster.get_dump()) == 40
    bagged.save(str(tmp_path / "ranker.json"))
    booster = xgb.Booster()
    booster.load_model(str(tmp_path / "ranker.json"))  # the model file alone, as the C++ scorer loads it
    assert np.array_equal(booster.predict(xgb.DMatrix(x)), bagged.predict(x))
    again = Ranker.load(str(tmp_path / "ranker.json"))
    assert again.cfg.parallel_trees == 4 and np.array_equal(again.predict(x), bagged.predict(x))

    single.save(str(tmp_path / "old.json"))
    saved = json.loads((tmp_path / "old.json.config").read_text())
    del saved["parallel_trees"]
    (tmp_path / "old.json.config").write_text(json.dumps(saved))
    assert Ranker.load(str(tmp_path / "old.json")).cfg.parallel_trees == 1


def test_ranker_feature_weights_steer_the_column_sampling():
    """``feature_weights`` reach XGBoost's column sampling: a column of weight 0 is never split
    on, even when it alone orders the candidates; without weights the trees split on it."""
    rng = np.random.default_rng(0)
    x = rng.random((240, 4)).astype(np.float32)
    lat = np.exp(-3.0 * x[:, 0] + 0.1 * rng.random(240))  # column 0 orders the candidates
    groups = np.repeat(np.arange(3), 80)
    cfg = RankerConfig(n_estimators=10, n_jobs=1, parallel_trees=1, extra={"colsample_bynode": 0.5})

    def split_columns(ranker):
        return set(ranker.booster.get_score(importance_type="weight"))

    assert "f0" in split_columns(Ranker(cfg).fit(x, lat, groups))
    assert "f0" not in split_columns(Ranker(cfg).fit(x, lat, groups, np.array([0.0, 1.0, 1.0, 1.0])))
