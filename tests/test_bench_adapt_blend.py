"""bench/adapt_blend.py: the replay's variants on synthetic tasks (no dataset here)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
pytest.importorskip("xgboost")


def test_every_variant_replays_every_task_and_is_paired_with_the_residual():
    from adapt_blend import BASELINE, VARIANTS, curves_of, summary

    rng = np.random.default_rng(0)
    tasks = {}
    for i in range(4):
        x = rng.normal(size=(64, 3)).astype(np.float32)
        lat = np.exp(x[:, 0])
        tasks[f"t{i}"] = (x, lat, -x[:, 0] + rng.normal(scale=2.0, size=64))  # a noisy prior
    curves = curves_of(tasks, 8, 3)
    assert set(curves) == set(VARIANTS) and all(np.shape(c) == (4, 3) for c in curves.values())
    # the first round is the prior's, whatever is fitted after it
    assert len({tuple(np.asarray(c)[:, 0]) for c in curves.values()}) == 1
    out = summary(curves, 8)
    assert out["measured_after_round"] == [8, 16, 24]
    assert BASELINE not in out["vs_baseline_mean_ci95"] and len(out["vs_baseline_mean_ci95"]) == len(VARIANTS) - 1
    # the regression learns that feature 0 decides the latency: after two rounds it finds more than the noisy prior
    assert out["mean_best_ratio"]["regression alone"][2] >= out["mean_best_ratio"]["prior only"][2]
