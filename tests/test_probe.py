"""``cwm probe``: task-grouped CV of one ranker per representation, on the training split only."""
from __future__ import annotations

import numpy as np


def test_task_folds_partition_the_tasks():
    from cwm.model.probe import task_folds

    keys = [f"t{i}" for i in range(11)]
    folds = task_folds(keys, 3, seed=0)
    assert sorted(k for f in folds for k in f) == sorted(keys)
    assert [len(f) for f in folds] == [4, 4, 3]
    assert folds == task_folds(keys, 3, seed=0)  # seeded


def test_network_folds_leave_each_network_out():
    """A task of two networks is validated in both of their folds; a task of no network never."""
    from cwm.model.probe import folds_of, network_folds

    nets = {"a": ["resnet18"], "b": ["resnet18", "resnet50"], "c": ["gpt2"], "d": []}
    assert network_folds(nets) == [("gpt2", ["c"]), ("resnet18", ["a", "b"]), ("resnet50", ["b"])]
    tasks = [{"key": k, "networks": v} for k, v in nets.items()]
    assert [n for n, _ in folds_of(tasks, "network", 5, 0)] == ["gpt2", "resnet18", "resnet50"]
    assert sorted(k for _, f in folds_of(tasks, "task", 2, 0) for k in f) == ["a", "b", "c", "d"]
    import pytest

    with pytest.raises(ValueError, match="at least 2 networks"):
        folds_of([{"key": "a", "networks": ["x"]}, {"key": "b", "networks": []}], "network", 5, 0)


def test_store_decoder_recovers_a_linear_map():
    """A decoder fitted on tasks whose per-store features are a linear function of the rollout
    predicts a new task's features with small error (and 1.0 would mean predicting the mean)."""
    from cwm.model.probe import StoreDecoder

    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 4))

    def task():
        z = rng.normal(size=(30, 3)).astype(np.float32)
        stats = rng.normal(size=(30, 3)).astype(np.float32)
        return {"z0": np.zeros(3, np.float32), "zt_hat": z, "stats": stats, "store": np.c_[z, stats] @ w}

    dec = StoreDecoder().fit([task() for _ in range(5)])
    assert dec.error([task()]) < 0.05  # ridge 1.0 on 150 rows shrinks a little; noise-free map
    new = task()
    assert dec.within_task_error([new]) < 0.05  # the map is linear, so deviations are too


def test_mlp_decoder_fits_what_the_linear_one_cannot():
    """A target that is a product of two inputs: the ridge decoder explains little of it, the
    MLP nearly all (threshold 0.5 = half the variance; measured 0.93 vs 0.0002 here)."""
    from cwm.model.probe import MlpStoreDecoder, StoreDecoder

    rng = np.random.default_rng(1)

    def task():
        z = rng.normal(size=(200, 2)).astype(np.float32)
        return {"z0": np.zeros(2, np.float32), "zt_hat": z, "stats": np.zeros((200, 1), np.float32),
                "store": (z[:, :1] * z[:, 1:]).astype(np.float64)}

    fit, new = [task() for _ in range(4)], [task()]
    assert StoreDecoder().fit(fit).error(new) > 0.5
    assert MlpStoreDecoder(epochs=300).fit(fit).error(new) < 0.5


def test_probe_on_the_tiny_dataset(tiny_dataset, tiny_model_dir, tmp_path):
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.probe import REPRESENTATIONS, run_probe

    train_keys = DatasetLoader(tiny_dataset).task_keys("train")
    cache = tmp_path / "cache"
    res = run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None)
    assert res["split"] == "train" and res["tasks"] == len(train_keys) and res["candidates"] <= 8 * len(train_keys)
    assert set(res["representations"]) == set(REPRESENTATIONS)
    for name, m in res["representations"].items():
        assert 0.0 <= m["pairwise_acc"] <= 1.0, name
    assert res["representations"]["z0"]["pairwise_acc"] == 0.0  # constant within a task: all ties
    assert res["rank_transition"]["readout"] == "axis"  # zt_rank: a transition trained in each fold
    assert np.isfinite(res["store_decoder_std_mse"]["fit"])
    assert len(list(cache.glob("*.npz"))) == len(train_keys)  # only training tasks are probed
    again = run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None)
    assert again["representations"] == res["representations"]  # read back from the cache, same result
    import pytest

    with pytest.raises(ValueError, match="at least 2 networks"):  # every training task is of one network
        run_probe(tiny_dataset, tiny_model_dir, cache_dir=cache, max_candidates=8, log=lambda *_: None,
                  names=("stats",), group_by="network")
    # --ranker-set: a field of the ranker config overridden, recorded; an unknown field refused
    bagged = run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None,
                       names=("stats",), ranker="model", ranker_set={"parallel_trees": 2})
    assert bagged["ranker"]["parallel_trees"] == 2 and bagged["ranker"]["set"] == {"parallel_trees": 2}
    with pytest.raises(ValueError, match="unknown ranker config field"):
        run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None,
                  names=("stats",), ranker_set={"trees_in_parallel": 2})
    # --ranker-seeds: one fit per ranker seed on the same folds and candidates, metrics averaged
    single = [run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8,
                        log=lambda *_: None, names=("stats",), ranker="model", ranker_seeds=[s])
              for s in (0, 1)]
    both = run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None,
                     names=("stats",), ranker="model", ranker_seeds=[0, 1])
    assert both["ranker_seeds"] == [0, 1] and len(both["per_fold_seed"]) == 2
    for m in ("pairwise_acc", "top1_task_mean"):
        mean = np.mean([r["representations"]["stats"][m] for r in single])
        assert both["representations"]["stats"][m] == pytest.approx(mean, abs=1e-12)  # a float mean of the same runs


def test_probe_centres_on_design_space_samples(tiny_dataset, tiny_model_dir, tmp_path):
    """--centring both --reference-samples: every training task gets a cached reference row of
    the rollout representation's width, and the run says which reference it used."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.probe import run_probe

    cache = tmp_path / "cache"
    res = run_probe(tiny_dataset, tiny_model_dir, folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None,
                    names=("zt_hat+stats", "stats"), centring="both", reference_samples=4)
    assert res["centring"] == "both" and res["centring_reference"] == "4 design-space samples"
    refs = sorted(cache.glob("ref-*-k4-s0.npz"))
    assert len(refs) == len(DatasetLoader(tiny_dataset).task_keys("train"))
    with np.load(next(cache.glob("[!r]*.npz"))) as f:
        width = f["zt_hat"].shape[1] + f["stats"].shape[1]
    with np.load(refs[0]) as f:
        assert int(f["n"]) >= 1 and f["ref"].shape == (width,)
    for m in res["representations"].values():
        assert 0.0 <= m["pairwise_acc"] <= 1.0


def test_network_grouped_cv_reports_every_fold():
    """Leave-one-network-out on synthetic tasks whose latency is a function of one stat: every
    network's fold is scored, and a ranker that can read the stat ranks well in each."""
    from cwm.model.probe import cross_validate
    from cwm.model.ranker import RankerConfig

    rng = np.random.default_rng(0)
    tasks = []
    for i in range(9):
        stats = rng.normal(size=(20, 3)).astype(np.float32)
        tasks.append({"key": f"t{i}", "networks": [("n0", "n1", "n2")[i % 3]], "weight": 1.0,
                      "z0": np.zeros(2, np.float32), "zt_hat": np.zeros((20, 2), np.float32), "stats": stats,
                      "store": stats.astype(np.float64), "lat": np.exp(stats[:, 0]).astype(np.float64)})
    res = cross_validate(tasks, 5, 0, RankerConfig(n_estimators=20, max_depth=3, seed=0), log=lambda *_: None,
                         names=("stats",), group_by="network")
    assert res["fold_names"] == ["n0", "n1", "n2"]
    assert [(r["fold"], r["tasks"]) for r in res["per_fold"]] == [("n0", 3), ("n1", 3), ("n2", 3)]
    assert all(r["pairwise_acc"] > 0.8 for r in res["per_fold"])  # latency is monotone in stat 0: near 1.0


def test_centring_subtracts_the_task_mean_over_candidates():
    """``centred`` is the input less its column means over the task's candidates (so each column
    sums to zero); ``both`` keeps the raw columns first; ``none`` is the input itself."""
    from cwm.model.probe import centre, representation

    x = np.arange(12, dtype=np.float64).reshape(4, 3) ** 2
    assert centre(x, "none") is x
    rel = centre(x, "centred")
    assert np.allclose(rel.sum(0), 0.0, atol=1e-12)  # exact up to rounding of a 4-row float sum
    assert np.array_equal(rel, x - x.mean(0))
    assert np.array_equal(centre(x, "both"), np.concatenate([x, rel], 1))
    task = {"lat": np.ones(4), "z0": np.ones(2), "zt_hat": x[:, :2], "stats": x[:, 2:]}
    assert representation("zt_hat+stats", task, None, "both").shape == (4, 6)


def test_fingerprint_covers_the_weights_not_the_ranker(tmp_path):
    """A transition swapped in without a manifest change (``refit_ranker --transition``) must
    change the cache key, or the probe reads the old rollouts; a refitted ranker must not."""
    import shutil

    from cwm.model import default_model_dir
    from cwm.model.fingerprint import model_fingerprint

    d = tmp_path / "model"
    shutil.copytree(default_model_dir(), d)
    before = model_fingerprint(d)
    (d / "ranker.json").write_bytes(b"{}")
    assert model_fingerprint(d) == before
    weights = (d / "transition.safetensors").read_bytes()
    (d / "transition.safetensors").write_bytes(weights[:-1] + bytes([weights[-1] ^ 1]))
    assert model_fingerprint(d) != before


def test_encoder_fingerprint_ignores_all_but_the_encoder(tmp_path):
    """Cached encoder states survive a ranker refit (a new manifest) but not a new encoder."""
    import shutil

    import pytest

    from cwm.model import default_model_dir
    from cwm.model.fingerprint import encoder_fingerprint

    d = tmp_path / "model"
    shutil.copytree(default_model_dir(), d)
    before = encoder_fingerprint(d)
    (d / "manifest.json").write_text((d / "manifest.json").read_text() + " ")
    assert encoder_fingerprint(d) == before
    (d / "encoder" / "encoder.json").write_text((d / "encoder" / "encoder.json").read_text() + " ")
    assert encoder_fingerprint(d) != before
    with pytest.raises(FileNotFoundError, match="encoder"):
        encoder_fingerprint(tmp_path)


def test_per_store_features_are_shared_between_models_of_the_same_candidates(tmp_path):
    """The per-store features replay the candidate and do not depend on the model: a probe of a
    new model takes them from another model's cache file of the same task, when the measured
    latencies (the same subset, in the same order) agree, and never from a half-written file."""
    from cwm.model.probe_features import _cached_store

    lat = np.array([1e-3, np.inf, 2e-3])
    store, ok = np.arange(6, dtype=np.float32).reshape(3, 2), np.array([True, False, True])
    np.savez(tmp_path / "k1-oldmodel-n8-s0.npz", lat=lat, store=store, store_ok=ok)
    np.savez(tmp_path / "k1-other-n8-s0.tmp.npz", lat=lat, store=store + 1, store_ok=ok)
    got = _cached_store(tmp_path, "k1", 8, 0, lat.copy())
    assert got is not None and np.array_equal(got[0], store) and np.array_equal(got[1], ok)
    assert _cached_store(tmp_path, "k1", 8, 0, lat[::-1]) is None  # another subset or order
    assert _cached_store(tmp_path, "k1", 8, 1, lat) is None  # another seed
    assert _cached_store(tmp_path, "k2", 8, 0, lat) is None  # another task


def test_a_task_measured_in_two_roots_gets_two_probe_files(tmp_path):
    """The same task key measured twice (``data/dataset_breadth`` and ``data/dataset_breadth_zen4``)
    must not share one cached probe file: the name carries a digest of the measured latencies. A
    file named before the digest is taken over only when its latencies are these."""
    from cwm.model.probe_features import _cache_path

    zen5, zen4 = np.array([1e-3, np.inf, 2e-3]), np.array([1.1e-3, 2.1e-3, np.inf, 3e-3])
    a, b = (_cache_path(tmp_path, "k1", "model", 64, 0, lat) for lat in (zen5, zen4))
    assert a != b and a.name.startswith("k1-model-n64-s0-") and b.name.startswith("k1-model-n64-s0-")
    assert _cache_path(tmp_path, "k1", "model", 64, 0, zen5.copy()) == a  # the same candidates, the same file

    np.savez(tmp_path / "k1-model-n64-s0.npz", lat=zen5)  # an old cache file of the Zen 5 candidates
    assert _cache_path(tmp_path, "k1", "model", 64, 0, zen4) == b and not b.is_file()  # not taken over
    assert _cache_path(tmp_path, "k1", "model", 64, 0, zen5) == a and a.is_file()  # renamed
    assert not (tmp_path / "k1-model-n64-s0.npz").exists()
