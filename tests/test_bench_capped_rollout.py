"""bench/capped_rollout.py: the shipped weights rolled out with their translations capped."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
FIXTURE_MODEL = Path(__file__).resolve().parent / "data" / "scorer_fixture" / "model"


def test_capped_changes_the_rollout_and_keeps_the_weights(trace_records):
    from capped_rollout import capped

    from cwm.actions import featurize_batch
    from cwm.model.world_model import WorldModel

    free, cap = WorldModel.load(FIXTURE_MODEL), WorldModel.load(FIXTURE_MODEL)
    fb = featurize_batch([r["trace"] for r in trace_records[:6]])
    z0 = np.random.default_rng(0).normal(size=free.tcfg.dim).astype(np.float32)
    z0 /= np.linalg.norm(z0)
    cap.rollout(z0, fb)  # builds the native evaluator, which capped() must drop
    assert capped(cap, 0.05) is cap and cap.tcfg.translation_bound == 0.05 and cap._core is None
    a, b = free.rollout(z0, fb), cap.rollout(z0, fb)
    assert a.shape == b.shape and np.abs(a - b).max() > 1e-3  # the fixture's translations are longer than 0.05
    assert cap.tcfg.dim == free.tcfg.dim and cap.transition is not None


def test_bound_must_be_positive():
    from capped_rollout import main

    with pytest.raises(SystemExit, match="must be positive"):
        main(["--bound", "0"])
