"""Several dataset roots read as one (``cwm.dataset.union``), and the probe's fit-only roots."""
from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest


def _copy_all_train(src, dst):
    """A copy of a dataset whose every task is a training task (a breadth root's split)."""
    shutil.copytree(src, dst)
    split = json.loads((dst / "split.json").read_text())
    split["train_tasks"] = sorted(split["train_tasks"] + split["test_tasks"])
    split["test_tasks"] = []
    (dst / "split.json").write_text(json.dumps(split))
    return dst


def _extra_root(tmp_path, target):
    """A root with one task of its own (fake records: the union only reads them) and a copy of
    one task that is also in the tiny dataset."""
    from cwm import workloads
    from cwm.dataset.store import DatasetStore, register_task
    from cwm.dataset.zoo_tasks import write_split

    root = tmp_path / "extra"
    store = DatasetStore(root)
    own = register_task(store, "matmul_48", workloads.matmul(48), {"gen": 1})
    store.append(own, [{"id": i, "task": own, "source": "random", "trace": "[[],[]]", "run_secs": [lat],
                        "build_error": None, "run_error": None, "final_hash": 0}
                       for i, lat in enumerate((1e-3, 2e-3))])  # empty traces: the unscheduled program
    store.finish(own)
    store.write_manifest({"target": target})
    write_split(root, heldout=())
    return root, own


def test_union_reads_every_root_once(tiny_dataset, tmp_path):
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import UnionLoader, open_datasets

    tiny = DatasetLoader(tiny_dataset)
    extra, own = _extra_root(tmp_path, {"kind": "llvm", "num-cores": 2, "mcpu": "znver4"})
    dup = _copy_all_train(tiny_dataset, tmp_path / "dup")
    union = open_datasets([tiny_dataset, extra, dup])
    assert isinstance(union, UnionLoader)
    assert isinstance(open_datasets(tiny_dataset), DatasetLoader)  # one root: the plain loader
    assert union.task_keys() == sorted(set(tiny.task_keys()) | {own})
    # the tiny dataset's test task stays a test task: the first root that has a key owns it
    assert union.task_keys("test") == tiny.task_keys("test")
    assert union.task_keys("train") == sorted(tiny.task_keys("train") + [own])
    assert len(union.trajectories(own)) == 2 and union.store.get_task(own)["name"] == "matmul_48"
    key = tiny.task_keys("train")[0]
    assert [t.record for t in union.trajectories(key)] == [t.record for t in tiny.trajectories(key)]
    manifest = union.store.manifest()
    assert set(manifest["shards"]) == set(union.task_keys())
    assert manifest["target"] == tiny.store.manifest()["target"] and len(manifest["targets"]) == 3
    assert sum(1 for _ in union) == sum(len(union.trajectories(k)) for k in union.task_keys())


def test_a_task_is_read_from_the_first_root_that_finished_it(tiny_dataset, tmp_path):
    """A re-collection root listed first replaces the tasks it has finished, and only those: a
    task it has registered but not measured yet is read from the next root (the first copy of
    ``data/dataset_breadth_zen4`` while its collection runs). A task held out in one root is
    never a training task of the union."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.store import DatasetStore
    from cwm.dataset.union import open_datasets

    extra, own = _extra_root(tmp_path, {"kind": "llvm", "num-cores": 2, "mcpu": "znver4"})
    again = tmp_path / "again"
    shutil.copytree(extra, again)
    DatasetStore(again).shard_path(own).unlink()  # registered there, not collected yet
    union = open_datasets([again, extra])
    assert union.owner[own].store.root == extra and len(union.trajectories(own)) == 2
    store = DatasetStore(again)
    store.append(own, [{"id": 0, "task": own, "source": "random", "trace": "[[],[]]", "run_secs": [5e-3],
                        "build_error": None, "run_error": None, "final_hash": 0}] * 3)
    store.finish(own)  # now finished there: it replaces the other copy
    union = open_datasets([again, extra])
    assert union.owner[own].store.root == again and len(union.trajectories(own)) == 3

    tiny = DatasetLoader(tiny_dataset)
    test_key = tiny.task_keys("test")[0]
    everything_train = _copy_all_train(tiny_dataset, tmp_path / "all_train")
    union = open_datasets([everything_train, tiny_dataset])
    assert test_key not in union.task_keys("train") and test_key in union.task_keys("test")


def test_union_refuses_another_target_kind(tiny_dataset, tmp_path):
    from cwm.dataset.store import DatasetError
    from cwm.dataset.union import open_datasets

    extra, _ = _extra_root(tmp_path, {"kind": "cuda", "arch": "sm_90"})
    with pytest.raises(DatasetError, match="measured on target"):
        open_datasets([tiny_dataset, extra])
    with pytest.raises(DatasetError, match="no dataset root"):
        open_datasets([])


def test_probe_fit_only_root_joins_fitting_never_validation(tiny_dataset, tiny_model_dir, tmp_path):
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.probe import run_probe

    tiny = DatasetLoader(tiny_dataset)
    breadth = _copy_all_train(tiny_dataset, tmp_path / "breadth")  # calls the tiny test task a training task
    extra, own = _extra_root(tmp_path, {"kind": "llvm", "num-cores": 2})
    cache = tmp_path / "cache"
    names = ("zt_hat+stats", "stats")
    quiet = dict(folds=2, cache_dir=cache, max_candidates=8, log=lambda *_: None, names=names)
    plain = run_probe(tiny_dataset, tiny_model_dir, **quiet)
    wide = run_probe(tiny_dataset, tiny_model_dir, fit_only_data=[breadth, extra], **quiet)
    # the extra root's own task joins; the held-out task of --data does not, whatever breadth says
    assert plain["fit_only_tasks"] == 0 and wide["fit_only_tasks"] == 1 and len(tiny.task_keys("test")) == 1
    assert not list(cache.glob(f"{tiny.task_keys('test')[0]}-*")) and list(cache.glob(f"{own}-*"))
    assert wide["tasks"] == plain["tasks"] == len(tiny.task_keys("train"))  # the validated set is unchanged
    assert set(wide["representations"]) == set(names)
    for f in cache.glob("*.npz"):
        with np.load(f) as arrays:
            assert "et" not in arrays.files  # no representation read E(s_T): it was not computed
    two = run_probe(tiny_dataset, tiny_model_dir, fold_seeds=[0, 1], ranker="model", **quiet)
    assert two["fold_seeds"] == [0, 1] and len(two["per_fold_seed"]) == 2
    assert two["ranker"]["config"] == "model" and two["ranker"]["pair_top_k"] is not None
    for m in two["representations"].values():
        assert 0.0 <= m["pairwise_acc"] <= 1.0


def test_refit_ranker_on_extra_roots(tiny_dataset, tiny_model_dir, tmp_path):
    """``tools/refit_ranker.py --extra-data``: the ranker is fitted on both roots' training tasks,
    the check of ``--data`` against the model's training data still holds, the manifest says so."""
    from cwm.dataset.loader import DatasetLoader
    from tests.tool_modules import tool

    refit = tool("refit_ranker")
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    breadth = _copy_all_train(tiny_dataset, tmp_path / "breadth")
    extra, _ = _extra_root(tmp_path, {"kind": "llvm", "num-cores": 2})
    args = [str(model), "--data", str(tiny_dataset), "--extra-data", str(breadth), "--extra-data", str(extra)]
    assert refit.main(args) == 0
    meta = json.loads((model / "manifest.json").read_text())
    refit_meta = meta["ranker_refit"]
    assert refit_meta["extra_data"] == [str(breadth), str(extra)]
    # the extra root's own task joins; the tiny test task in the breadth copy does not: the first
    # root's split decides, so a held-out task stays held out whatever another root says
    assert refit_meta["ranker_training_data"]["train_shards"] == len(DatasetLoader(tiny_dataset).task_keys("train")) + 1
    assert meta["training_data"] != refit_meta["ranker_training_data"]  # the model's own data hash is kept
    with pytest.raises(SystemExit, match="not the training data"):
        refit.main([str(model), "--data", str(breadth)])


def test_refit_ranker_takes_another_ranker_seed(tiny_dataset, tiny_model_dir, tmp_path):
    """``tools/refit_ranker.py --ranker-seed N`` refits with XGBoost seed N and saves it; the
    rest of the config stays as saved."""
    from cwm.model.ranker import Ranker
    from tests.tool_modules import tool

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    before = Ranker.load(str(model / "ranker.json")).cfg
    assert tool("refit_ranker").main([str(model), "--data", str(tiny_dataset), "--ranker-seed", "7"]) == 0
    after = Ranker.load(str(model / "ranker.json")).cfg
    assert after.seed == 7 and after == dataclasses.replace(before, seed=7)


def test_eval_baselines_train_on_extra_roots_test_on_the_first(tiny_dataset, tiny_model_dir, tmp_path):
    """``cwm eval --extra-data``: every baseline trains on the extra root's tasks too; the test
    tasks are the first root's, and a copy that calls them training tasks changes nothing."""
    from cwm.model.evaluate import evaluate

    extra, _ = _extra_root(tmp_path, {"kind": "llvm", "num-cores": 2})
    breadth = _copy_all_train(tiny_dataset, tmp_path / "breadth")
    plain = evaluate(tiny_dataset, tiny_model_dir, log=lambda *_: None)
    wide = evaluate(tiny_dataset, tiny_model_dir, log=lambda *_: None, extra_roots=[breadth, extra])
    assert wide["test_tasks"] == plain["test_tasks"] == 1
    assert wide["train_tasks"] == plain["train_tasks"] + 1 and wide["extra_data"] == [str(breadth), str(extra)]
    assert wide["models"]["cwm"] == {**plain["models"]["cwm"],  # the shipped ranker: trained on neither
                                     "score_us_per_candidate": wide["models"]["cwm"]["score_us_per_candidate"]}


def test_pretrained_xgb_trains_on_extra_roots(tiny_dataset, tmp_path):
    """The search benchmark's pre-trained XGBModel reads the roots CWM's ranker was fitted on
    (``bench/search.py --extra-data``): one more training task, its own cache entry, and the
    training-data hash the benchmark compares with ``ranker_refit.ranker_training_data``."""
    import sys
    from pathlib import Path

    from cwm.cost_model.xgb_pretrained import pretrained_xgb_path
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import open_datasets
    from cwm.model.train import _data_hash

    extra, _ = _extra_root(tmp_path, {"kind": "llvm", "num-cores": 2})
    cache = tmp_path / "cache"
    one = pretrained_xgb_path(tiny_dataset, cache_dir=cache)
    both = pretrained_xgb_path([tiny_dataset, extra], cache_dir=cache)
    assert one != both  # another training set, another cache entry
    stats = json.loads(Path(str(both) + ".json").read_text())
    assert stats["train_tasks"] == len(DatasetLoader(tiny_dataset).task_keys("train")) + 1
    assert stats["extra_data"] == [str(extra.resolve())]
    assert pretrained_xgb_path([tiny_dataset, extra], cache_dir=cache) == both  # cached: built once
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        pretrained_xgb_path([tiny_dataset, tmp_path / "nowhere"], cache_dir=cache)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        from search_tuning import training_data_hash
    finally:
        sys.path.pop(0)
    assert training_data_hash([tiny_dataset, extra]) == _data_hash(open_datasets([tiny_dataset, extra]))
    assert training_data_hash(tiny_dataset) != training_data_hash([tiny_dataset, extra])
