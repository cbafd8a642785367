"""How CWM's cost model adapts to the task being tuned: what is fitted on a task's own
measurements and how it joins the prior (the shipped ranker's margin).

Two kinds, named by :attr:`AdaptConfig.kind` (string factory :func:`fit_task_model`):

* ``"residual"`` (decision 58): a small ``rank:pairwise`` booster fitted **from the prior's
  margins** (``base_margin``) on the task's relevance grades; the trees learn only where the
  measurements disagree with the prior. ``m = m_prior + w(n) * delta(x)``.
* ``"blend"`` (decision 90): what MetaSchedule's ``XGBModel`` does with a task's measurements, an
  XGBoost regression of ``-log latency`` on the measured rows alone (a failed candidate counts as
  twice the slowest valid one), blended with the prior as their number grows. The regression is
  brought to the prior's scale on the measured rows (its predictions there standardised and
  mapped to the prior margins' mean and spread there), so ``m = (1 - w(n)) * m_prior + w(n) *
  calibrated(x)``; the score's scale, which MetaSchedule's parent sampling reads, stays the prior's.

Both use ``w(n) = n / (n + half_weight_at)`` after ``min_measured`` valid measurements, and 0
before. Both depend only on the measured rows, never on the batch being scored, and are
deterministic (fixed seed, one thread, no subsampling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("residual", "blend")


@dataclass(frozen=True)
class AdaptConfig:
    """How :class:`~cwm.cost_model.cwm_model.CWMCostModel` adapts to the task being tuned."""

    min_measured: int = 8  # valid measurements of a task before its task model is fitted
    half_weight_at: int = 16  # w(n) = n / (n + half_weight_at)
    rounds: int = 30  # boosting rounds of the residual
    max_depth: int = 3
    learning_rate: float = 0.3
    temperature: float = 1.0  # score = exp(margin / temperature)
    seed: int = 0
    #: "residual" or "blend" (module docstring)
    kind: str = "residual"
    #: boosting rounds of the blend's regression (XGBoost's other defaults: depth 6, eta 0.3)
    blend_rounds: int = 100

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"AdaptConfig.kind must be one of {KINDS}, not {self.kind!r}")

    def weight(self, n_valid: int) -> float:
        """``w(n)``, the task model's share after ``n_valid`` valid measurements."""
        return n_valid / (n_valid + self.half_weight_at) if n_valid >= self.min_measured else 0.0


def fit_residual(features: np.ndarray, prior: np.ndarray, latencies, cfg: AdaptConfig):
    """The task's residual booster (module docstring), or ``None`` before ``cfg.min_measured``
    valid measurements or while they span one relevance grade. Deterministic."""
    from cwm.model.ranker import relevance

    labels = relevance(np.asarray(latencies, np.float64))
    n_valid = int(np.isfinite(np.asarray(latencies, np.float64)).sum())
    if n_valid < cfg.min_measured or np.unique(labels).size < 2:
        return None
    import xgboost as xgb

    n = len(labels)
    dtrain = xgb.DMatrix(features, label=labels, base_margin=prior)
    dtrain.set_group([n])
    params = {"objective": "rank:pairwise", "lambdarank_pair_method": "topk",
              "lambdarank_num_pair_per_sample": n, "eta": cfg.learning_rate, "max_depth": cfg.max_depth,
              "min_child_weight": 0.0, "subsample": 1.0, "colsample_bytree": 1.0, "base_score": 0.0,
              "seed": cfg.seed, "nthread": 1, "tree_method": "exact"}
    return xgb.train(params, dtrain, num_boost_round=cfg.rounds)


def regression_targets(latencies) -> np.ndarray:
    """``-log latency`` of each measured row; a failed one (``inf``/NaN) as twice the slowest
    valid one. ``latencies`` must hold a valid one."""
    lat = np.asarray(latencies, np.float64)
    ok = np.isfinite(lat) & (lat > 0)
    return -np.log(np.where(ok, lat, 2.0 * lat[ok].max()))


class TaskModel:
    """A task model fitted on one task's measured rows: ``margin(features, prior)`` is the
    adapted margin of any rows of that task (module docstring); ``booster`` is what was fitted."""

    def __init__(self, kind: str, booster, weight: float, calibration: tuple[float, float, float, float] | None):
        self.kind, self.booster, self.weight, self.calibration = kind, booster, float(weight), calibration

    def margin(self, features: np.ndarray, prior: np.ndarray) -> np.ndarray:
        out = np.asarray(self.booster.inplace_predict(features, predict_type="margin"), np.float64)
        if self.kind == "residual":
            return prior + self.weight * out
        prior_mean, prior_std, target_mean, target_std = self.calibration
        calibrated = prior_mean + prior_std * (out - target_mean) / target_std
        return (1.0 - self.weight) * prior + self.weight * calibrated


def fit_task_model(features: np.ndarray, prior: np.ndarray, latencies, cfg: AdaptConfig) -> TaskModel | None:
    """The task model of ``cfg.kind`` on the measured rows (``features``, their prior margins,
    their latencies in s, ``inf`` = failed), or ``None`` while the prior stands alone: before
    ``cfg.min_measured`` valid measurements, or while they cannot be told apart (one relevance
    grade for the residual; one latency, or prior margins all equal, for the blend)."""
    lat = np.asarray(latencies, np.float64)
    n_valid = int((np.isfinite(lat) & (lat > 0)).sum())
    weight = cfg.weight(n_valid)
    if cfg.kind == "residual":
        booster = fit_residual(features, prior, lat, cfg)
        return None if booster is None else TaskModel("residual", booster, weight, None)
    if n_valid < max(cfg.min_measured, 2):  # a regression needs two valid latencies to tell apart
        return None
    y = regression_targets(lat)
    prior = np.asarray(prior, np.float64)
    if np.ptp(y) == 0 or np.ptp(prior) == 0:
        return None
    import xgboost as xgb

    booster = xgb.train({"seed": cfg.seed, "nthread": 1, "tree_method": "exact"},
                        xgb.DMatrix(features, label=y), num_boost_round=cfg.blend_rounds)
    fitted = np.asarray(booster.inplace_predict(features, predict_type="margin"), np.float64)
    if np.ptp(fitted) == 0:  # the trees found no split: nothing to blend
        return None
    calibration = (float(prior.mean()), float(prior.std()), float(fitted.mean()), float(fitted.std()))
    return TaskModel("blend", booster, weight, calibration)
