"""MetaSchedule's ``XGBModel`` pre-trained offline on the dataset's training records.

This is the ``"xgb-pretrained"`` cost model of :func:`cwm.tune`. It is trained the way
:class:`cwm.model.baselines.ms_xgb.MsXgbBaseline` trains it: every training-split task of the
dataset is replayed into ``MeasureCandidate`` objects and fed to ``XGBModel.update`` with its
recorded latencies, with one forced retrain at the end. Nothing is measured. The result is
saved by :func:`save_xgb_model` (see "File format" below), not by ``XGBModel.save``.

For tuning, :func:`load_pretrained_xgb` loads it into a fresh ``XGBModel`` with
``num_warmup_samples=0``, so it predicts from the first round, and with the seed and thread
count of the tuning run. During tuning it behaves like MetaSchedule's own transfer learning:
``update`` adds the task's measurements as a new feature group and retrains on all groups
(pre-trained ones included) whenever the data has grown by 1/5 since the last training. The
first ``update`` always retrains, because loading does not restore ``last_train_size`` (as
TVM's ``XGBModel.load`` does not).

Built models are cached, so the offline training happens once per dataset state:
``<cache_dir>/xgb_pretrained-<key>-seed<S>.tar``, where ``key`` hashes the training shards'
sha256 (from the dataset manifest), the split, the target and the TVM version. Another seed of
a cached dataset state is retrained from that file's feature groups, without the replay.
``cache_dir`` defaults to ``$CWM_CACHE_DIR`` or ``~/.cache/cwm``. A cache entry that is not a
file of the format below (an old ``XGBModel.save`` tar, a planted file) is rebuilt, never loaded.

File format (no pickle anywhere)
--------------------------------
TVM's ``XGBModel.save``/``load`` keep the feature groups as a NumPy object array and load them
with ``np.load(..., allow_pickle=True)``: loading such a file runs whatever code its author put
in the pickle. cwm therefore never calls them on a file; it writes and reads its own format, an
uncompressed tar with exactly these regular-file members:

* ``cwm_xgb.json``: ``{"format": "cwm-xgb-model", "version": 1, "groups": [group hash, ...],
  "booster": true|false, ...}``;
* ``booster.ubj``: the XGBoost booster in XGBoost's own UBJSON model format (only if trained);
* ``data.npz``: plain numeric arrays read with ``allow_pickle=False``: ``features`` (float32,
  every candidate's per-store rows stacked), ``rows`` (int64, rows per candidate), ``costs``
  (float32, per candidate) and ``group_sizes`` (int64, candidates per group, in ``groups``
  order).

That is all the state ``XGBModel.load`` restores (``data``, ``data_size``, ``booster``). A tar
with any other member (an ``XGBModel.save`` tar holds ``model.bin`` + ``data.npy``), a link,
a duplicate, an object array or inconsistent sizes is refused with :class:`XGBModelFileError`
before anything in it is used. :func:`load_pretrained_xgb` and the models of
:func:`make_xgb_model` (``cwm tune --cost-model xgb``/``xgb-pretrained``, whose ``save``/``load``
use this format) are the only readers.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

FORMAT = "cwm-xgb-model"
FORMAT_VERSION = 1
META, BOOSTER, DATA = "cwm_xgb.json", "booster.ubj", "data.npz"
_ARRAYS = {"features": "f", "rows": "i", "costs": "f", "group_sizes": "i"}


class XGBModelFileError(ValueError):
    """A file given as a pre-trained XGBModel is not one cwm wrote (see "File format" above)."""


def default_cache_dir() -> Path:
    return Path(os.environ.get("CWM_CACHE_DIR") or Path.home() / ".cache" / "cwm")


def _target_json(target) -> str:
    if isinstance(target, dict):
        return json.dumps(target, sort_keys=True)
    return str(target)


def _data_key(loader, target) -> str:
    """What a model's training data depends on: the training shards, the target, TVM's version."""
    import tvm

    manifest = loader.store.manifest()
    train = loader.task_keys("train")
    shards = {k: v.get("sha256") for k, v in manifest.get("shards", {}).items() if k in set(train)}
    payload = {"shards": shards, "train": sorted(train), "target": _target_json(target),
               "tvm": tvm.__version__, "format": 3}  # 2: the pickle-free file format; 3: the seed outside the hash
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _cache_key(loader, target, seed: int) -> str:
    """``<data key>-seed<S>``: the models of one dataset state differ only in XGBoost's seed, so a
    missing seed is retrained from another seed's file (:func:`retrain_with_seed`)."""
    return f"{_data_key(loader, target)}-seed{int(seed)}"


def dataset_target(loader):
    """The target the dataset was measured on (its manifest), as a dict; llvm if unrecorded."""
    return loader.store.manifest().get("target") or {"kind": "llvm"}


def _roots(dataset) -> list[Path]:
    """``dataset`` as a list of roots: one root, or several read as one (:mod:`cwm.dataset.union`,
    as ``cwm train --extra-data`` reads them), so the baseline trains on what CWM's ranker did."""
    roots = [dataset] if isinstance(dataset, (str, bytes)) or hasattr(dataset, "__fspath__") else list(dataset)
    for root in roots:
        if not (Path(root) / "manifest.json").exists():
            raise FileNotFoundError(f"no dataset at {root} (no manifest.json); pass dataset= or pretrained_xgb=")
    return [Path(r) for r in roots]


def build_pretrained_xgb(dataset, out_path, target=None, seed: int = 0, num_threads: int = 2,
                         log=None) -> dict:
    """Train ``XGBModel`` on the training split of ``dataset`` (a root or a list of roots); save
    it to ``out_path``; return stats."""
    from cwm.dataset.union import open_datasets
    from cwm.model.baselines.ms_xgb import MsXgbBaseline

    roots = _roots(dataset)
    loader = open_datasets(roots)
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
    save_xgb_model(baseline.model, out_path)
    stats = {k: v for k, v in baseline.stats.items() if not k.startswith("score")}
    stats.update(dataset=str(roots[0].resolve()), seed=int(seed), target=str(target),
                 extra_data=[str(r.resolve()) for r in roots[1:]])
    Path(str(out_path) + ".json").write_text(json.dumps(stats, indent=1, default=str) + "\n")
    if log:
        log(f"pre-trained XGBModel on {stats['train_tasks']} tasks / {stats['train_candidates']} candidates "
            f"in {stats['fit_s']:.1f} s -> {out_path}")
    return stats


def pretrained_xgb_path(dataset="data/dataset", target=None, seed: int = 0, cache_dir=None,
                        num_threads: int = 2, log=None) -> Path:
    """The cached pre-trained model for ``dataset`` (a root or a list of roots; built now if
    missing); see the module docstring."""
    from cwm.dataset.union import open_datasets

    loader = open_datasets(_roots(dataset))
    target = target if target is not None else dataset_target(loader)
    cache = Path(cache_dir or default_cache_dir())
    path = cache / f"xgb_pretrained-{_cache_key(loader, target, seed)}.tar"
    if path.exists():
        try:
            _read_members(path)
            return path
        except XGBModelFileError as error:  # an old XGBModel.save tar or a planted file: never loaded
            import warnings

            warnings.warn(f"rebuilding the cached pre-trained XGBModel: {error}", stacklevel=2)
            if log:
                log(f"rebuilding {path}: {error}")
    for sibling in sorted(cache.glob(f"xgb_pretrained-{_data_key(loader, target)}-seed*.tar")):
        if sibling != path:
            try:
                retrain_with_seed(sibling, path, seed, num_threads=num_threads, log=log)
                return path
            except XGBModelFileError:  # not a file of ours: build from the dataset
                continue
    build_pretrained_xgb(dataset, path, target=target, seed=seed, num_threads=num_threads, log=log)
    return path


def retrain_with_seed(source, out_path, seed: int, num_threads: int = 2, log=None) -> dict:
    """Save to ``out_path`` the model of ``source``'s training data (a file of this format) retrained
    with XGBoost seed ``seed``; return its stats.

    Most of :func:`build_pretrained_xgb`'s time is replaying every training candidate into
    per-store features (6 minutes for 28,160 candidates on 2 cores), and those do not depend on
    the seed. The training here is the one :meth:`MsXgbBaseline.fit`'s last ``update`` runs: every
    feature group in the file's order, labels ``min_cost / cost``; the booster is the same bits as
    one built from the dataset with that seed (tests/test_xgb_pretrained_seeds.py).
    """
    import time

    import numpy as np
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

    start = time.perf_counter()
    model = ms.cost_model.XGBModel(config=XGBConfig(seed=int(seed), nthread=num_threads), num_warmup_samples=0)
    restore_xgb_model(model, source)
    groups = list(model.data.values())
    if not groups:
        raise XGBModelFileError(f"{source}: holds no training data to retrain")
    with np.errstate(divide="ignore", invalid="ignore"):  # as XGBModel.update computes them
        ratios = [np.divide(g.min_cost, g.costs, out=np.zeros_like(g.costs), where=g.costs != 0) for g in groups]
    model._train(xs=[f for g in groups for f in g.features], ys=np.concatenate(ratios, axis=0))
    model.last_train_size = model.data_size
    save_xgb_model(model, out_path)
    stats = {}
    meta_path = Path(str(source) + ".json")
    if meta_path.is_file():
        stats = json.loads(meta_path.read_text())
    stats.update(seed=int(seed), retrained_from=str(source), fit_s=time.perf_counter() - start)
    Path(str(out_path) + ".json").write_text(json.dumps(stats, indent=1, default=str) + "\n")
    if log:
        log(f"pre-trained XGBModel retrained with seed {seed} on the data of {source} in {stats['fit_s']:.1f} s "
            f"-> {out_path}")
    return stats


def load_pretrained_xgb(path, num_cores: int = 2, seed: int = 0):
    """A MetaSchedule ``XGBModel`` (``num_warmup_samples=0``, given seed/threads) loaded from ``path``.

    ``path`` must be a file of this module's format (:func:`save_xgb_model`); anything else,
    an ``XGBModel.save`` tar included, is an :class:`XGBModelFileError` and nothing of it is used.
    """
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

    if not Path(path).is_file():
        raise FileNotFoundError(f"no pre-trained XGBModel at {path}")
    model = make_xgb_model(config=XGBConfig(seed=int(seed), nthread=int(num_cores)), num_warmup_samples=0,
                           num_tuning_cores=int(num_cores))
    restore_xgb_model(model, path)  # not model.load(): through TVM's FFI the error would be a RuntimeError
    if model.booster is None:
        raise XGBModelFileError(f"{path}: holds no trained booster, so it cannot predict as a pre-trained model")
    return model


# ------------------------------------------------------------------------------ file format
def save_xgb_model(model, path) -> None:
    """Write ``model``'s (a MetaSchedule ``XGBModel``) booster and feature groups to ``path``
    in the pickle-free format of the module docstring; atomic (temp file, then rename)."""
    import numpy as np

    groups = list(model.data.values())
    features = [np.asarray(f, dtype="float32") for g in groups for f in g.features]
    dim = features[0].shape[1] if features else 0
    arrays = {
        "features": np.concatenate(features, axis=0) if features else np.zeros((0, dim), "float32"),
        "rows": np.array([len(f) for f in features], dtype="int64"),
        "costs": (np.concatenate([np.asarray(g.costs, dtype="float32").reshape(-1) for g in groups])
                  if groups else np.zeros(0, "float32")),
        "group_sizes": np.array([len(g.features) for g in groups], dtype="int64"),
    }
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    booster = model.booster
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "groups": [str(g.group_hash) for g in groups],
            "booster": booster is not None, "data_size": int(arrays["costs"].size), "feature_dim": int(dim)}
    members = [(META, json.dumps(meta, indent=1).encode()), (DATA, buffer.getvalue())]
    if booster is not None:
        members.append((BOOSTER, bytes(booster.save_raw("ubj"))))
    path = Path(path)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tarfile.open(tmp, "w") as tar:
            for name, payload in members:
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(payload), 0o644
                tar.addfile(info, io.BytesIO(payload))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _read_members(path) -> tuple[dict, dict]:
    """``(meta, {member name: bytes})`` of a file of this format; :class:`XGBModelFileError` otherwise.

    Reads the members into memory (nothing is extracted to disk) after checking that the tar
    holds only the known regular files, each once.
    """
    try:
        tar = tarfile.open(path, mode="r:")  # uncompressed, as written by save_xgb_model
    except (tarfile.TarError, OSError) as error:
        raise XGBModelFileError(f"{path}: not a cwm pre-trained XGBModel file (not an uncompressed tar: "
                                f"{error})") from None
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, OSError) as error:
            raise XGBModelFileError(f"{path}: not a cwm pre-trained XGBModel file (damaged tar: {error})") from None
        names = [m.name for m in members]
        if {"model.bin", "data.npy"} & set(names):
            raise XGBModelFileError(
                f"{path}: an XGBModel.save tar (model.bin + data.npy, a pickled NumPy object array); cwm refuses "
                "it because loading it would unpickle, i.e. run code from the file. Rebuild it with cwm "
                "(cwm.cost_model.build_pretrained_xgb, or `cwm tune --cost-model xgb-pretrained --save-cost-model "
                "FILE`), which writes the pickle-free format")
        allowed = {META, BOOSTER, DATA}
        unknown = sorted(set(names) - allowed)
        if unknown or len(names) != len(set(names)):
            extra = f"unknown member(s) {unknown}" if unknown else f"duplicate members in {names}"
            raise XGBModelFileError(f"{path}: not a cwm pre-trained XGBModel file ({extra}; allowed: "
                                    f"{sorted(allowed)})")
        links = [m.name for m in members if not m.isreg()]
        if links:
            raise XGBModelFileError(f"{path}: member(s) {links} are not regular files (links, folders or devices "
                                    "are refused)")
        if META not in names or DATA not in names:
            raise XGBModelFileError(f"{path}: not a cwm pre-trained XGBModel file (it lacks "
                                    f"{sorted({META, DATA} - set(names))})")
        payload = {m.name: tar.extractfile(m).read() for m in members}
    try:
        meta = json.loads(payload[META])
    except (ValueError, UnicodeDecodeError) as error:
        raise XGBModelFileError(f"{path}: {META} is not valid JSON ({error})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise XGBModelFileError(f"{path}: {META} does not say format {FORMAT!r}")
    if meta.get("version") != FORMAT_VERSION:
        raise XGBModelFileError(f"{path}: format version {meta.get('version')!r}; this cwm reads "
                                f"version {FORMAT_VERSION}")
    groups = meta.get("groups")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups) or len(set(groups)) != len(groups):
        raise XGBModelFileError(f"{path}: {META} 'groups' must be a list of distinct strings")
    if bool(meta.get("booster")) != (BOOSTER in payload):
        raise XGBModelFileError(f"{path}: {META} says booster={meta.get('booster')!r} but {BOOSTER} is "
                                f"{'present' if BOOSTER in payload else 'missing'}")
    return meta, payload


def read_xgb_model(path) -> tuple:
    """``(booster or None, [(group hash, [features per candidate], costs), ...])`` of a file of
    this format, checked throughout; :class:`XGBModelFileError` for anything else."""
    import numpy as np
    import xgboost as xgb

    meta, payload = _read_members(path)
    try:
        with np.load(io.BytesIO(payload[DATA]), allow_pickle=False) as npz:
            if sorted(npz.files) != sorted(_ARRAYS):
                raise XGBModelFileError(f"{path}: {DATA} must hold exactly the arrays {sorted(_ARRAYS)}, it holds "
                                        f"{sorted(npz.files)}")
            arrays = {name: npz[name] for name in _ARRAYS}
    except XGBModelFileError:
        raise
    except Exception as error:  # noqa: BLE001 - object arrays (ValueError), bad zip, bad headers
        raise XGBModelFileError(f"{path}: {DATA} is not a plain-array npz ({type(error).__name__}: {error})") from None
    for name, kind in _ARRAYS.items():
        if arrays[name].dtype.kind != kind:
            raise XGBModelFileError(f"{path}: {DATA}/{name} has dtype {arrays[name].dtype}")
    features, rows, costs, sizes = (arrays[k] for k in ("features", "rows", "costs", "group_sizes"))
    if features.ndim != 2 or rows.ndim != 1 or costs.ndim != 1 or sizes.ndim != 1:
        raise XGBModelFileError(f"{path}: {DATA} arrays have the wrong number of dimensions")
    if (len(sizes) != len(meta["groups"]) or (sizes < 1).any() or int(sizes.sum()) != len(rows)
            or len(costs) != len(rows) or (rows < 1).any() or int(rows.sum()) != len(features)):
        raise XGBModelFileError(f"{path}: {DATA} array sizes do not agree with each other or with {META}")
    booster = None
    if BOOSTER in payload:
        booster = xgb.Booster()
        try:
            booster.load_model(bytearray(payload[BOOSTER]))
        except xgb.core.XGBoostError as error:
            raise XGBModelFileError(f"{path}: {BOOSTER} is not an XGBoost model "
                                    f"({str(error).splitlines()[0]})") from None
        if len(features) and booster.num_features() != features.shape[1]:
            raise XGBModelFileError(f"{path}: the booster takes {booster.num_features()} features, the data has "
                                    f"{features.shape[1]}")
    per_candidate = np.split(features.astype("float32", copy=False), np.cumsum(rows)[:-1]) if len(rows) else []
    groups, start = [], 0
    for group_hash, size in zip(meta["groups"], sizes.tolist()):
        groups.append((group_hash, list(per_candidate[start:start + size]),
                       costs[start:start + size].astype("float32", copy=False)))
        start += size
    return booster, groups


def restore_xgb_model(model, path) -> None:
    """Set ``model``'s (a MetaSchedule ``XGBModel``) ``data``, ``data_size`` and ``booster`` from
    ``path`` (:func:`read_xgb_model`), the state ``XGBModel.load`` restores, without pickle."""
    from collections import OrderedDict

    from tvm.s_tir.meta_schedule.cost_model.xgb_model import FeatureGroup

    booster, groups = read_xgb_model(path)
    data = OrderedDict()
    for group_hash, features, costs in groups:
        data[group_hash] = FeatureGroup(group_hash=group_hash, features=features, costs=costs)
    model.data = data
    model.data_size = sum(len(costs) for _, _, costs in groups)
    model.booster = booster


_SAFE_CLASS = None


def make_xgb_model(*args, **kwargs):
    """A MetaSchedule ``XGBModel`` (same arguments) whose ``save``/``load`` use the pickle-free
    format (:func:`save_xgb_model`, :func:`restore_xgb_model`) instead of TVM's pickle-based one."""
    global _SAFE_CLASS
    if _SAFE_CLASS is None:
        from tvm.ir.utils import derived_object
        from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBModel

        @derived_object
        class SafeXGBModel(XGBModel._cls):  # noqa: N801 - TVM's derived-object pattern
            """MetaSchedule's ``XGBModel``; ``save``/``load`` in cwm's pickle-free format."""

            def load(self, path: str) -> None:
                restore_xgb_model(self, path)

            def save(self, path: str) -> None:
                save_xgb_model(self, path)

        _SAFE_CLASS = SafeXGBModel
    return _SAFE_CLASS(*args, **kwargs)
