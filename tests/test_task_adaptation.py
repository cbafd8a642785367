"""cwm.cost_model.task_adaptation: the task models CWM's cost model fits on a task's own
measurements (the residual of decision 58, the blend of decision 90)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("xgboost")


def _task(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    lat = np.exp(0.5 * x[:, 0])  # feature 0 decides the latency
    prior = rng.normal(size=n)  # a prior that knows nothing
    return x, lat, prior


def test_no_task_model_before_min_measured_or_without_spread():
    from cwm.cost_model.task_adaptation import AdaptConfig, fit_task_model

    x, lat, prior = _task()
    for kind in ("residual", "blend"):
        cfg = AdaptConfig(kind=kind, min_measured=8)
        assert fit_task_model(x[:7], prior[:7], lat[:7], cfg) is None
        assert fit_task_model(x[:8], prior[:8], np.full(8, 1e-3), cfg) is None  # nothing tells them apart
        assert fit_task_model(x[:8], prior[:8], lat[:8], cfg) is not None
    # min_measured 0 or 1: still no regression on fewer than two valid latencies
    assert fit_task_model(x[:3], prior[:3], [lat[0], np.inf, np.inf], AdaptConfig(kind="blend", min_measured=0)) is None
    with pytest.raises(ValueError, match="kind must be one of"):
        AdaptConfig(kind="ensemble")


def test_failed_candidates_are_twice_the_slowest():
    from cwm.cost_model.task_adaptation import regression_targets

    np.testing.assert_allclose(regression_targets([1.0, np.inf, 4.0, np.nan]), -np.log([1.0, 8.0, 4.0, 8.0]))


def test_the_blend_keeps_the_prior_scale_and_weighs_the_measurements_as_they_grow():
    from cwm.cost_model.task_adaptation import AdaptConfig, fit_task_model

    x, lat, prior = _task(64)
    cfg = AdaptConfig(kind="blend", half_weight_at=16)
    model = fit_task_model(x[:16], prior[:16], lat[:16], cfg)
    assert model.weight == 0.5  # 16 / (16 + 16)
    # on the measured rows the calibrated regression has the prior margins' mean and spread
    mean, std, target_mean, target_std = model.calibration
    assert (mean, std) == pytest.approx((prior[:16].mean(), prior[:16].std()), rel=1e-12)
    alone = fit_task_model(x[:16], prior[:16], lat[:16], AdaptConfig(kind="blend", half_weight_at=0))
    assert alone.weight == 1.0
    calibrated = alone.margin(x, prior)
    assert calibrated[:16].mean() == pytest.approx(mean, abs=1e-9)  # float64 sums of 16 values
    assert calibrated[:16].std() == pytest.approx(std, rel=1e-9)
    np.testing.assert_allclose(model.margin(x, prior), 0.5 * prior + 0.5 * calibrated, rtol=1e-12)
    # the regression learnt the task: on the 48 unmeasured rows it orders the latencies well
    rho = np.corrcoef(np.argsort(np.argsort(calibrated[16:])), np.argsort(np.argsort(-lat[16:])))[0, 1]
    assert rho > 0.7


def test_scores_do_not_depend_on_the_batch_and_refits_are_deterministic():
    from cwm.cost_model.task_adaptation import AdaptConfig, fit_task_model

    x, lat, prior = _task(48)
    for kind in ("residual", "blend"):
        cfg = AdaptConfig(kind=kind)
        a = fit_task_model(x[:24], prior[:24], lat[:24], cfg)
        b = fit_task_model(x[:24], prior[:24], lat[:24], cfg)
        whole = a.margin(x, prior)
        np.testing.assert_array_equal(whole, b.margin(x, prior))
        np.testing.assert_array_equal(whole[30:], a.margin(x[30:], prior[30:]))


def test_the_residual_is_the_prior_plus_its_weighted_trees():
    from cwm.cost_model.task_adaptation import AdaptConfig, fit_residual, fit_task_model

    x, lat, prior = _task()
    cfg = AdaptConfig()
    model = fit_task_model(x[:20], prior[:20], lat[:20], cfg)
    delta = np.asarray(fit_residual(x[:20], prior[:20], lat[:20], cfg).inplace_predict(x, predict_type="margin"),
                       np.float64)
    np.testing.assert_allclose(model.margin(x, prior), prior + cfg.weight(20) * delta, rtol=1e-12)
