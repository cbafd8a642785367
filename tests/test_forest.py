"""The ranker's trees in the native core (``cwm._native.Forest``) against their NumPy spec
(:mod:`cwm.model.forest_reference`) and against XGBoost itself.

Every comparison is exact (``np.array_equal``): both twins add the leaves in tree order in
float32, as XGBoost's predictor does, so there is no rounding difference to tolerate, and a
host whose vector units differ (AVX2, AVX-512) gets the same bits.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from cwm import native
from cwm.model import forest_reference
from cwm.model.ranker import FOREST_MAX_ROWS, Ranker, RankerConfig


def _trained(parallel_trees: int = 1, depth: int = 6) -> tuple[Ranker, np.ndarray]:
    rng = np.random.default_rng(parallel_trees)
    x = rng.normal(size=(600, 12)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan  # missing values take each split's default side
    groups = np.repeat(np.arange(12), 50)
    lat = np.exp(-np.nan_to_num(x[:, 0]) + 0.3 * np.nan_to_num(x[:, 1]) ** 2 + 0.1 * rng.normal(size=600))
    cfg = RankerConfig(n_estimators=40, max_depth=depth, parallel_trees=parallel_trees, n_jobs=1, seed=3)
    return Ranker(cfg).fit(x, lat, groups), x


def _rows(width: int, n: int = 700, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, width)) * 2).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    return x


@pytest.mark.parametrize("parallel_trees,depth", [(1, 6), (4, 6), (2, 2)])
def test_native_forest_equals_reference_and_xgboost(parallel_trees, depth):
    ranker, _ = _trained(parallel_trees, depth)
    model_json = bytes(ranker.booster.save_raw("json"))
    forest = native.load().Forest(model_json)
    spec = forest_reference.parse_forest(model_json)
    assert forest.num_trees == len(spec["trees"]) == 40 * parallel_trees
    x = _rows(forest.num_features)
    expected = ranker.booster.inplace_predict(x)
    assert np.array_equal(forest_reference.predict(spec, x), expected)
    for threads in (1, 2, 3):
        assert np.array_equal(forest.predict(x, threads), expected)
    assert np.array_equal(forest.predict(x[:1]), expected[:1])
    assert forest.predict(x[:0]).shape == (0,)


def test_ranker_scores_are_the_same_bits_below_and_above_the_switch():
    ranker, _ = _trained(4)
    x = _rows(12, n=FOREST_MAX_ROWS + 50, seed=1)
    big = ranker.predict(x)  # through XGBoost
    small = np.concatenate([ranker.predict(x[i:i + 7]) for i in range(0, len(x), 7)])  # through the forest
    assert np.array_equal(big, small)


def test_shipped_ranker_through_the_forest_equals_xgboost():
    from cwm.model import default_model_dir

    ranker = Ranker.load(str(default_model_dir() / "ranker.json"))
    x = _rows(ranker.booster.num_features(), n=300, seed=2)
    assert np.array_equal(ranker.forest().predict(x), ranker.booster.inplace_predict(x))


def test_refit_drops_the_old_forest():
    ranker, x = _trained(1)
    before = ranker.predict(x[:5])
    rng = np.random.default_rng(9)
    ranker.fit(x, rng.random(len(x)) + 0.1, np.repeat(np.arange(12), 50))
    assert np.array_equal(ranker.predict(x[:5]), ranker.booster.inplace_predict(x[:5]))
    assert not np.array_equal(ranker.predict(x[:5]), before)


def test_wrong_width_and_dtype_are_clear_errors():
    ranker, _ = _trained(1)
    forest = ranker.forest()
    with pytest.raises(ValueError, match=r"shape \(n, 12\)"):
        forest.predict(np.zeros((3, 11), np.float32))
    with pytest.raises(ValueError, match="float32"):
        forest.predict(np.zeros((3, 12), np.float64))
    with pytest.raises(ValueError, match="12 features expected"):
        forest_reference.predict(forest_reference.parse_forest(bytes(ranker.booster.save_raw("json"))),
                                 np.zeros((3, 11), np.float32))


def _model_doc(ranker) -> dict:
    return json.loads(bytes(ranker.booster.save_raw("json")))


@pytest.mark.parametrize("corrupt,message", [
    (lambda d: d["learner"]["gradient_booster"].update(name="gblinear"), "gbtree"),
    (lambda d: d["learner"]["learner_model_param"].update(num_target="2"), "single-output"),
    (lambda d: d["learner"]["gradient_booster"]["model"]["trees"][0]["split_type"].__setitem__(0, 1), "categorical"),
    (lambda d: d["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"].__setitem__(0, 10 ** 6),
     "out of range"),
    (lambda d: d["learner"]["gradient_booster"]["model"]["trees"][0]["right_children"].pop(), "right_children"),
])
def test_a_model_it_cannot_read_is_refused(corrupt, message):
    doc = _model_doc(_trained(1)[0])
    corrupt(doc)
    with pytest.raises(ValueError, match=message):
        native.load().Forest(json.dumps(doc).encode())


def test_truncated_json_is_refused():
    text = bytes(_trained(1)[0].booster.save_raw("json"))
    with pytest.raises(ValueError, match="XGBoost model"):
        native.load().Forest(text[: len(text) // 2])
