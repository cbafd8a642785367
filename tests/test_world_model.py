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


def test_interrupted_training_resumes_from_its_stages(tiny_dataset, tiny_model_dir, tmp_path, monkeypatch):
    """Killed after the encoder and rollout-data phases, ``cwm train`` resumes them: same model."""
    import cwm.model.rollout_training as rt
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.train import train_world_model
    from cwm.model.world_model import WorldModel

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    out, logs = tmp_path / "m", []
    with monkeypatch.context() as m:
        m.setattr(rt, "train_transition", killed)
        with pytest.raises(KeyboardInterrupt):
            train_world_model(tiny_dataset, out, _cfg(), log=lambda *_: None)
    assert (out / ".stages" / "encoder_metrics.json").exists() and (out / ".stages" / "rollout_data.npz").exists()
    train_world_model(tiny_dataset, out, _cfg(), log=logs.append)
    assert any("encoder: resumed" in line for line in logs) and any("rollout data: resumed" in line for line in logs)
    assert not (out / ".stages").exists()
    loader = DatasetLoader(tiny_dataset)
    (key,) = loader.task_keys("test")
    traces = [t.trace for t in loader.trajectories(key)]
    target = {"kind": "llvm", "num-cores": 2}
    resumed, fresh = WorldModel.load(out), WorldModel.load(tiny_model_dir)
    assert np.array_equal(resumed.score(loader.workload(key), traces, target),
                          fresh.score(loader.workload(key), traces, target))


def test_a_given_encoder_replaces_phase_one(tiny_dataset, tiny_model_dir, tmp_path):
    """``cwm train --encoder DIR`` keeps that encoder bit for bit and trains the rest on its states."""
    import dataclasses

    from cwm.model.encoder import StateEncoder
    from cwm.model.train import train_world_model

    out = tmp_path / "m"
    train_world_model(tiny_dataset, out, dataclasses.replace(_cfg(), encoder_dir=str(tiny_model_dir / "encoder")),
                      log=lambda *_: None)
    given, kept = StateEncoder.load(tiny_model_dir / "encoder"), StateEncoder.load(out / "encoder")
    for (name, a), (_, b) in zip(given.state_dict().items(), kept.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), name
    assert (out / "transition.safetensors").is_file() and (out / "ranker.json").is_file()
    small = dataclasses.replace(_cfg(), encoder_dir=str(tiny_model_dir / "encoder"),
                                transition=dataclasses.replace(_cfg().transition, dim=64))
    with pytest.raises(ValueError, match="encoder of size 128"):
        train_world_model(tiny_dataset, tmp_path / "n", small, log=lambda *_: None)
