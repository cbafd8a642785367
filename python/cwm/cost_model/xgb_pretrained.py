"""MetaSchedule's ``XGBModel`` pre-trained offline on the dataset's training records.

This is the ``"xgb-pretrained"`` cost model of :func:`cwm.tune`. It is trained the way
:class:`cwm.model.baselines.ms_xgb.MsXgbBaseline` trains it: every training-split task of the
dataset is replayed into ``MeasureCandidate`` objects and fed to ``XGBModel.update`` with its
recorded latencies, with one forced retrain at the end. Nothing is measured. The result is
saved with ``XGBModel.save`` (a tar of the booster and the per-store feature groups).

For tuning, :func:`load_pretrained_xgb` loads it into a fresh ``XGBModel`` with
``num_warmup_samples=0``, so it predicts from the first round, and with the seed and thread
count of the tuning run. During tuning it behaves like MetaSchedule's own transfer learning:
``update`` adds the task's measurements as a new feature group and retrains on all groups
(pre-trained ones included) whenever the data has grown by 1/5 since the last training. The
first ``update`` always retrains, because ``XGBModel.load`` does not restore
``last_train_size``.

Built models are cached, so the offline training happens once per dataset state:
``<cache_dir>/xgb_pretrained-<key>.tar``, where ``key`` hashes the training shards' sha256
(from the dataset manifest), the split, the target, the seed and the TVM version.
``cache_dir`` defaults to ``$CWM_CACHE_DIR`` or ``~/.cache/cwm``.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path


def default_cache_dir() -> Path:
    return Path(os.environ.get("CWM_CACHE_DIR") or Path.home() / ".cache" / "cwm")


def _target_json(target) -> str:
    if isinstance(target, dict):
        return json.dumps(target, sort_keys=True)
    return str(target)


def _cache_key(loader, target, seed: int) -> str:
    import tvm

    manifest = loader.store.manifest()
    train = loader.task_keys("train")
    shards = {k: v.get("sha256") for k, v in manifest.get("shards", {}).items() if k in set(train)}
    payload = {"shards": shards, "train": sorted(train), "target": _target_json(target), "seed": int(seed),
               "tvm": tvm.__version__, "format": 1}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def dataset_target(loader):
    """The target the dataset was measured on (its manifest), as a dict; llvm if unrecorded."""
    return loader.store.manifest().get("target") or {"kind": "llvm"}


def build_pretrained_xgb(dataset, out_path, target=None, seed: int = 0, num_threads: int = 2,
                         log=None) -> dict:
    """Train ``XGBModel`` on the training split of ``dataset``; save it to ``out_path``; return stats."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.baselines.ms_xgb import MsXgbBaseline

    loader = DatasetLoader(dataset)
    keys = loader.task_keys("train")
    if not keys:
        raise ValueError(f"{dataset}: no training tasks (is there a split.json? `cwm dataset split` writes one)")
    tasks = [{"key": k, "trajs": t} for k in keys if (t := loader.trajectories(k))]
    target = target if target is not None else dataset_target(loader)
    if isinstance(target, dict):
        target = json.dumps(target)
    baseline = MsXgbBaseline(target, seed=seed, num_threads=num_threads).fit(tasks, loader.workload)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp.tar")
    with warnings.catch_warnings():
        # XGBModel.save names its booster file "model.bin"; xgboost then warns that it picks UBJSON
        warnings.filterwarnings("ignore", message=".*UBJSON format as default.*")
        baseline.model.save(str(tmp))
    tmp.replace(out_path)
    stats = {k: v for k, v in baseline.stats.items() if not k.startswith("score")}
    stats.update(dataset=str(Path(dataset).resolve()), seed=int(seed), target=str(target))
    Path(str(out_path) + ".json").write_text(json.dumps(stats, indent=1, default=str) + "\n")
    if log:
        log(f"pre-trained XGBModel on {stats['train_tasks']} tasks / {stats['train_candidates']} candidates "
            f"in {stats['fit_s']:.1f} s -> {out_path}")
    return stats


def pretrained_xgb_path(dataset="data/dataset", target=None, seed: int = 0, cache_dir=None,
                        num_threads: int = 2, log=None) -> Path:
    """The cached pre-trained model for ``dataset`` (built now if missing); see the module docstring."""
    from cwm.dataset.loader import DatasetLoader

    if not (Path(dataset) / "manifest.json").exists():
        raise FileNotFoundError(f"no dataset at {dataset} (no manifest.json); pass dataset= or pretrained_xgb=")
    loader = DatasetLoader(dataset)
    target = target if target is not None else dataset_target(loader)
    path = Path(cache_dir or default_cache_dir()) / f"xgb_pretrained-{_cache_key(loader, target, seed)}.tar"
    if not path.exists():
        build_pretrained_xgb(dataset, path, target=target, seed=seed, num_threads=num_threads, log=log)
    return path


def load_pretrained_xgb(path, num_cores: int = 2, seed: int = 0):
    """A MetaSchedule ``XGBModel`` (``num_warmup_samples=0``, given seed/threads) loaded from ``path``."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

    if not Path(path).is_file():
        raise FileNotFoundError(f"no pre-trained XGBModel at {path}")
    model = ms.cost_model.XGBModel(config=XGBConfig(seed=int(seed), nthread=int(num_cores)), num_warmup_samples=0,
                                   num_tuning_cores=int(num_cores))
    with warnings.catch_warnings():
        # XGBModel.save names its booster file "model.bin"; xgboost guesses the format right but warns
        warnings.filterwarnings("ignore", message=".*Unknown file format.*")
        model.load(str(path))
    return model
