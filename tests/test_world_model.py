"""The world model end to end on a tiny dataset: train -> save -> load -> identical scores; same seed, same model.

The tiny dataset fixture lives in conftest.py (shared with the cost-model tests)."""
from __future__ import annotations

import numpy as np
import pytest


def _cfg(seed=0):
    from tests.conftest import tiny_train_config

    return tiny_train_config(seed)


def test_train_save_load_identical_scores_and_determinism(tiny_dataset, tmp_path):
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.train import train_world_model
    from cwm.model.world_model import WorldModel

    train_world_model(tiny_dataset, tmp_path / "a", _cfg(), log=lambda *_: None)
    train_world_model(tiny_dataset, tmp_path / "b", _cfg(), log=lambda *_: None)
    loader = DatasetLoader(tiny_dataset)
    (test_key,) = loader.task_keys("test")
    traces = [t.trace for t in loader.trajectories(test_key)]
    target = {"kind": "llvm", "num-cores": 2}
    a, b = WorldModel.load(tmp_path / "a"), WorldModel.load(tmp_path / "b")
    sa = a.score(loader.workload(test_key), traces, target)
    assert sa.shape == (len(traces),) and np.isfinite(sa).all() and np.unique(sa).size > 1
    assert np.array_equal(sa, b.score(loader.workload(test_key), traces, target))  # same seed, same model
    again = WorldModel.load(tmp_path / "a")
    assert np.array_equal(sa, again.score(loader.workload(test_key), traces, target))  # save -> load
    manifest = (tmp_path / "a" / "manifest.json").read_text()
    assert "training_data" in manifest and "metrics" in manifest


def test_load_rejects_non_model_dirs(tmp_path):
    from cwm.model.world_model import WorldModel

    with pytest.raises(FileNotFoundError, match="not a CWM model directory"):
        WorldModel.load(tmp_path)
