"""The ranker: XGBoost with a learning-to-rank objective, one query group per task.

Labels are relevance grades from measured throughput *within* a task:
``grade = floor(grades * best_latency / latency)`` clipped to ``[0, grades - 1]``; a failed
candidate gets 0. The scores rank candidates of one task; they are not latencies.

The ranker trains on 16 grades with linear NDCG gains (``RankerConfig.grades``,
``ndcg_exp_gain``; docs/decisions.md §37) and XGBoost's ``rank:pairwise`` (LambdaRank with the
RankNet loss; §44) with pairs from the 32 best-scored candidates of a task (``pair_top_k``;
§45), all chosen by task-grouped CV on the training tasks. The metrics keep
:data:`GRADES` = 8 with exponential gains, so they do not move with it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

GRADES = 8


def relevance(latencies: np.ndarray, grades: int = GRADES) -> np.ndarray:
    """Grades 0..grades-1 for one task's candidates; NaN / inf latency (failed) -> 0."""
    lat = np.asarray(latencies, np.float64)
    ok = np.isfinite(lat) & (lat > 0)
    out = np.zeros(lat.shape, np.int32)
    if ok.any():
        ratio = lat[ok].min() / lat[ok]
        out[ok] = np.clip(np.floor(grades * ratio), 0, grades - 1).astype(np.int32)
    return out


@dataclass
class RankerConfig:
    #: "rank:pairwise" with the trace structure: top-1 0.338 / pairwise 0.760 against 0.274 / 0.751
    #: for "rank:ndcg" in task-grouped CV on the training tasks (docs/decisions.md §44)
    objective: str = "rank:pairwise"
    n_estimators: int = 300
    max_depth: int = 6
    learning_rate: float = 0.1
    subsample: float = 0.8
    colsample_bytree: float = 0.8
    seed: int = 0
    n_jobs: int = 2
    #: relevance grades of the training labels, and NDCG gains ``grade`` (False) or ``2^grade - 1``
    #: (True). A config saved before these existed loads as 8 / True, what it was trained with.
    grades: int = 16
    ndcg_exp_gain: bool = False
    #: XGBoost's ``topk`` pairs come from the ``pair_top_k`` best-scored candidates of a task
    #: (None: every candidate, so every pair). 32 is XGBoost's own default. Every pair lifts
    #: pairwise accuracy (0.762 -> 0.771) but costs top-1 (0.628 -> 0.394) in task-grouped CV on
    #: the training tasks, and search measures the top of a population, so 32 stays (§45).
    pair_top_k: int | None = 32
    #: trees grown per boosting round on their own row / column subsamples, added (XGBoost's
    #: ``num_parallel_tree``: a boosted random forest). 4 beats 1 on every column of the
    #: leave-one-network-out CV averaged over 6 ranker seeds (decision 61; one fit each, decision
    #: 54 had not seen it). Its 1,200 trees are scored by the native forest at small batches.
    parallel_trees: int = 4
    extra: dict = field(default_factory=dict)


#: batches up to this many rows are scored by the native forest (``cwm._native.Forest``, the same
#: bits as XGBoost), larger ones by XGBoost, whose predictor is faster per row there. Measured
#: here with 1,200 trees: 15-25 µs for one row against 2 ms through XGBoost, 40 µs a row at 64
#: rows against 72, 40 against 24 at 2,048 (docs/decisions.md §61).
FOREST_MAX_ROWS = 256


class Ranker:
    def __init__(self, cfg: RankerConfig = RankerConfig()):
        self.cfg = cfg
        self.booster = None
        self._forest = None

    def fit(self, features: np.ndarray, latencies: np.ndarray, groups: np.ndarray,
            feature_weights: np.ndarray | None = None) -> "Ranker":
        """``groups[i]`` = task id of row ``i``; rows are reordered by group internally.
        ``feature_weights`` (one per column, XGBoost's): how likely each column is drawn by the
        column subsampling (``colsample_*``); None draws them alike."""
        import xgboost as xgb

        order = np.argsort(groups, kind="stable")
        g = np.asarray(groups)[order]
        labels = np.zeros(len(order), np.int32)
        for key in np.unique(g):
            idx = np.nonzero(g == key)[0]
            labels[idx] = relevance(np.asarray(latencies)[order][idx], self.cfg.grades)
        _, sizes = np.unique(g, return_counts=True)
        top_k = int(sizes.max()) if self.cfg.pair_top_k is None else self.cfg.pair_top_k
        dtrain = xgb.DMatrix(np.asarray(features, np.float32)[order], label=labels)
        dtrain.set_group(sizes)  # g is sorted, so groups are contiguous in np.unique order
        if feature_weights is not None:
            dtrain.set_info(feature_weights=np.asarray(feature_weights, np.float32))
        params = {"objective": self.cfg.objective, "max_depth": self.cfg.max_depth, "eta": self.cfg.learning_rate,
                  "subsample": self.cfg.subsample, "colsample_bytree": self.cfg.colsample_bytree,
                  "seed": self.cfg.seed, "nthread": self.cfg.n_jobs, "eval_metric": "ndcg@10",
                  "lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": top_k,
                  "ndcg_exp_gain": self.cfg.ndcg_exp_gain, "num_parallel_tree": self.cfg.parallel_trees,
                  **self.cfg.extra}
        self.booster = xgb.train(params, dtrain, num_boost_round=self.cfg.n_estimators)
        self._forest = None
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Scores (higher = predicted faster), the same bits either way: up to
        :data:`FOREST_MAX_ROWS` rows through the native forest, more through XGBoost."""
        import xgboost as xgb

        if self.booster is None:
            raise RuntimeError("the ranker is not trained: call fit() or load()")
        x = np.ascontiguousarray(features, np.float32)
        if len(x) <= FOREST_MAX_ROWS:
            return self.forest().predict(x)
        return self.booster.predict(xgb.DMatrix(x))

    def forest(self):
        """The trees in the native core (:mod:`cwm.model.forest_reference` is its spec), built once."""
        if self._forest is None:
            from cwm import native

            self._forest = native.load().Forest(bytes(self.booster.save_raw("json")))
        return self._forest

    def save(self, path_json: str) -> None:
        self.booster.save_model(path_json)
        with open(path_json + ".config", "w") as f:
            json.dump(asdict(self.cfg), f)

    @classmethod
    def load(cls, path_json: str) -> "Ranker":
        import xgboost as xgb

        with open(path_json + ".config") as f:
            saved = json.load(f)
        saved.setdefault("grades", GRADES)  # saved before the fields existed: what it was trained with
        saved.setdefault("ndcg_exp_gain", True)
        saved.setdefault("pair_top_k", 32)  # XGBoost's own truncation for "topk" pairs
        saved.setdefault("parallel_trees", 1)  # saved before the field existed: one tree a round
        r = cls(RankerConfig(**saved))
        r.booster = xgb.Booster()
        r.booster.load_model(path_json)
        return r

