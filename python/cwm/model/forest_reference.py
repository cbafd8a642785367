"""The ranker's trees evaluated in NumPy: the spec of the native forest (``cwm._native.Forest``).

An XGBoost ``gbtree`` model, as ``Booster.save_raw("json")`` writes it, is a list of binary
trees whose outputs add to ``base_score``. Evaluation follows XGBoost's CPU predictor:

* at a split node, a missing value (NaN) goes to the ``default_left`` side, otherwise
  ``x[split_index] < split_condition`` (float32) goes left;
* a leaf's value is its ``split_condition``;
* a row's score starts at ``base_score`` and adds each tree's leaf in tree order, rounding to
  float32 after every addition (XGBoost's prediction buffer is ``float``).

So the same rows give the same bits as ``Booster.predict`` (checked by
``tests/test_forest.py``). Only numeric splits on one output are read; a model with
categorical splits or vector leaves is refused.
"""
from __future__ import annotations

import json

import numpy as np


def parse_forest(model_json: bytes | str) -> dict:
    """The arrays of an XGBoost JSON model: ``base_score`` and, per tree, ``left``, ``right``,
    ``feature``, ``threshold`` (the leaf value at a leaf) and ``default_left``."""
    learner = json.loads(model_json)["learner"]
    booster = learner["gradient_booster"]
    if booster.get("name") != "gbtree":
        raise ValueError(f"only gbtree models are read, not {booster.get('name')!r}")
    params = learner["learner_model_param"]
    if int(params.get("num_target", "1")) != 1 or int(params.get("num_class", "0")) > 1:
        raise ValueError("only single-output models are read")
    base = params["base_score"].strip("[]").split(",")
    if len(base) != 1:
        raise ValueError(f"one base_score expected, got {len(base)}")
    trees = []
    for tree in booster["model"]["trees"]:
        if any(tree.get("split_type", [])) or tree.get("categories_nodes"):
            raise ValueError("categorical splits are not read")
        if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
            raise ValueError("vector leaves are not read")
        trees.append({"left": np.asarray(tree["left_children"], np.int32),
                      "right": np.asarray(tree["right_children"], np.int32),
                      "feature": np.asarray(tree["split_indices"], np.int32),
                      "threshold": np.asarray(tree["split_conditions"], np.float32),
                      "default_left": np.asarray(tree["default_left"], bool)})
    return {"base_score": np.float32(float(base[0])), "trees": trees,
            "num_feature": int(params["num_feature"])}


def predict(forest: dict, rows: np.ndarray) -> np.ndarray:
    """Scores of ``rows`` ``[n, num_feature]`` (float32), as XGBoost's ``Booster.predict``."""
    x = np.asarray(rows, np.float32)
    if x.ndim != 2 or x.shape[1] != forest["num_feature"]:
        raise ValueError(f"rows of {forest['num_feature']} features expected, got shape {x.shape}")
    out = np.full(len(x), forest["base_score"], np.float32)
    idx = np.arange(len(x))
    for tree in forest["trees"]:
        node = np.zeros(len(x), np.int32)
        while True:
            inner = tree["left"][node] != -1
            if not inner.any():
                break
            value = x[idx[inner], tree["feature"][node[inner]]]
            go_left = np.where(np.isnan(value), tree["default_left"][node[inner]],
                               value < tree["threshold"][node[inner]])
            node[inner] = np.where(go_left, tree["left"][node[inner]], tree["right"][node[inner]])
        out = (out + tree["threshold"][node]).astype(np.float32)
    return out
