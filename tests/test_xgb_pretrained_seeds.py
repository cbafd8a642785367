"""A pre-trained XGBModel for another seed is retrained from a cached seed's feature groups
(cwm.cost_model.xgb_pretrained.retrain_with_seed): the replay of every training candidate, most
of a build, happens once per dataset state, and the model is the one a full build gives."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


def _booster_and_data(path):
    import numpy as np

    from cwm.cost_model.xgb_pretrained import read_xgb_model

    booster, groups = read_xgb_model(path)
    return (bytes(booster.save_raw("ubj")), [(h, np.concatenate(f), c.tobytes()) for h, f, c in groups])


def test_another_seed_is_retrained_from_the_cached_data_to_the_bits_of_a_full_build(tiny_dataset, tmp_path,
                                                                                    monkeypatch):
    import numpy as np

    from cwm.cost_model import xgb_pretrained

    built = xgb_pretrained.pretrained_xgb_path(tiny_dataset, seed=1, cache_dir=tmp_path / "full")
    seed0 = xgb_pretrained.pretrained_xgb_path(tiny_dataset, seed=0, cache_dir=tmp_path / "cache")
    calls = []
    monkeypatch.setattr(xgb_pretrained, "build_pretrained_xgb", lambda *a, **k: calls.append(a))  # no replay
    retrained = xgb_pretrained.pretrained_xgb_path(tiny_dataset, seed=1, cache_dir=tmp_path / "cache")
    assert calls == [] and retrained != seed0 and retrained.name == built.name  # same key, seed in the name
    booster_a, data_a = _booster_and_data(built)
    booster_b, data_b = _booster_and_data(retrained)
    assert [(h, c) for h, _, c in data_a] == [(h, c) for h, _, c in data_b]
    assert all(np.array_equal(a, b) for (_, a, _), (_, b, _) in zip(data_a, data_b))
    assert booster_a == booster_b  # the same trees, bit for bit, as the build from the dataset
    # MetaSchedule's XGBConfig samples neither rows nor columns, so its seed leaves the trees as they
    # are: the seeds of the search benchmark differ in the search, not in the pre-trained model
    assert _booster_and_data(seed0)[0] == booster_b
    stats = json.loads(Path(str(retrained) + ".json").read_text())
    assert stats["seed"] == 1 and stats["retrained_from"] == str(seed0) and "train_tasks" in stats


def test_a_sibling_that_is_not_ours_is_not_retrained_from(tiny_dataset, tmp_path):
    from cwm.cost_model import xgb_pretrained
    from cwm.dataset.loader import DatasetLoader

    loader = DatasetLoader(tiny_dataset)
    key = xgb_pretrained._data_key(loader, xgb_pretrained.dataset_target(loader))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"xgb_pretrained-{key}-seed7.tar").write_bytes(b"not a tar")  # planted: never read as data
    path = xgb_pretrained.pretrained_xgb_path(tiny_dataset, seed=1, cache_dir=cache)
    stats = json.loads(Path(str(path) + ".json").read_text())
    assert "retrained_from" not in stats and stats["seed"] == 1  # built from the dataset instead
    with pytest.raises(xgb_pretrained.XGBModelFileError):
        xgb_pretrained.retrain_with_seed(cache / f"xgb_pretrained-{key}-seed7.tar", tmp_path / "x.tar", 2)
