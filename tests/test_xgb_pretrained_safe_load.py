"""Pre-trained XGB models load without pickle (issue 13, finding 5).

TVM's ``XGBModel.load`` reads its feature groups with ``np.load(..., allow_pickle=True)``, so a
tar made by an attacker runs code. cwm writes and reads its own pickle-free format
(:mod:`cwm.cost_model.xgb_pretrained`) and refuses everything else, before using any of it.
"""
from __future__ import annotations

import io
import json
import os
import tarfile

import numpy as np
import pytest

from cwm.cli import main


class _CreatesFile:
    """Unpickling this creates ``path``: the payload an attacker would put in data.npy."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _tar(path, members: dict) -> str:
    with tarfile.open(path, "w") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return str(path)


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _malicious_tar(path, marker) -> str:
    """An ``XGBModel.save``-shaped tar whose data.npy unpickles into ``open(marker, "w")``."""
    data = np.empty(1, dtype=object)
    data[0] = _CreatesFile(marker)
    return _tar(path, {"model.bin": b"{}", "data.npy": _npy(data)})


def _trained_model(seed: int = 0):
    """A small XGBModel with two feature groups and a booster (no TVM tuning needed)."""
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import FeatureGroup

    from cwm.cost_model.xgb_pretrained import make_xgb_model

    rng = np.random.default_rng(seed)
    model = make_xgb_model(num_warmup_samples=0, num_tuning_cores=1)
    for index, count in enumerate((7, 5)):
        features = [rng.standard_normal((int(rng.integers(1, 4)), 164)).astype("float32")  # per-store width
                    for _ in range(count)]
        model.data[f"group{index}"] = FeatureGroup(f"group{index}", features,
                                                   rng.uniform(1e-4, 1e-3, count).astype("float32"))
    model.data_size = 12
    xs = [f for g in model.data.values() for f in g.features]
    ys = np.concatenate([g.min_cost / g.costs for g in model.data.values()])
    model._train(xs=xs, ys=ys)
    return model, xs


def test_the_payload_runs_through_tvms_own_loader(tmp_path):
    """The reason for all this: TVM's XGBModel.load executes the payload (a control for the tests below)."""
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBModel

    marker = tmp_path / "pwned"
    evil = _malicious_tar(tmp_path / "evil.tar", marker)
    try:
        XGBModel().load(evil)
    except Exception:  # noqa: BLE001 - it fails after unpickling; the file exists by then
        pass
    assert marker.exists()


def test_malicious_pretrained_xgb_file_is_refused_by_cwm_tune(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = _malicious_tar(tmp_path / "evil.tar", marker)
    status = main(["tune", "matmul_256", "--trials", "4", "--cost-model", "xgb-pretrained",
                   "--pretrained-xgb", evil, "--work-dir", str(tmp_path / "wd")])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "XGBModel.save tar" in err and "unpickle" in err, err
    assert not marker.exists()


def test_malicious_file_is_refused_by_every_loader(tmp_path):
    from cwm.cost_model.xgb_pretrained import XGBModelFileError, load_pretrained_xgb, make_xgb_model
    from cwm.cost_model import create

    marker = tmp_path / "pwned"
    evil = _malicious_tar(tmp_path / "evil.tar", marker)
    with pytest.raises(XGBModelFileError, match="refuses it"):
        load_pretrained_xgb(evil)
    with pytest.raises(XGBModelFileError):
        create("xgb-pretrained", 1, pretrained_xgb=evil)
    # the XGB models' own load() (called through TVM's FFI, which turns the error into a RuntimeError)
    with pytest.raises(Exception, match="refuses it"):
        create("xgb", 1).load(evil)
    with pytest.raises(Exception, match="refuses it"):
        make_xgb_model().load(evil)
    assert not marker.exists()


def test_planted_cache_entry_is_rebuilt_not_loaded(tmp_path, tiny_dataset):
    """A file at the cache path (computable from the public manifest) is checked, not trusted."""
    from cwm.cost_model.xgb_pretrained import _cache_key, dataset_target, load_pretrained_xgb, pretrained_xgb_path
    from cwm.dataset.loader import DatasetLoader

    cache = tmp_path / "cache"
    loader = DatasetLoader(tiny_dataset)
    path = cache / f"xgb_pretrained-{_cache_key(loader, dataset_target(loader), 0)}.tar"
    cache.mkdir()
    marker = tmp_path / "pwned"
    _malicious_tar(path, marker)  # planted where the model would be cached
    with pytest.warns(UserWarning, match="rebuilding"):
        again = pretrained_xgb_path(tiny_dataset, cache_dir=cache)
    assert again == path
    model = load_pretrained_xgb(again)
    assert model.booster is not None and model.data_size > 0
    assert not marker.exists()
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == ["booster.ubj", "cwm_xgb.json", "data.npz"]


def test_round_trip_keeps_the_state_and_predictions(tmp_path):
    import xgboost as xgb

    from cwm.cost_model.xgb_pretrained import load_pretrained_xgb, make_xgb_model

    model, xs = _trained_model()
    path = tmp_path / "m.tar"
    model.save(str(path))
    loaded = make_xgb_model()
    loaded.load(str(path))
    assert list(loaded.data) == list(model.data) and loaded.data_size == model.data_size
    for group in model.data:
        a, b = model.data[group], loaded.data[group]
        np.testing.assert_array_equal(a.costs, b.costs)
        assert a.min_cost == b.min_cost and len(a.features) == len(b.features)
        for fa, fb in zip(a.features, b.features):
            np.testing.assert_array_equal(fa, fb)
            assert fb.dtype == np.float32
    matrix = xgb.DMatrix(np.concatenate(xs))
    np.testing.assert_array_equal(loaded.booster.predict(matrix), model.booster.predict(matrix))
    pretrained = load_pretrained_xgb(path, num_cores=1)
    np.testing.assert_array_equal(pretrained.booster.predict(matrix), model.booster.predict(matrix))


def _members(path) -> dict:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


@pytest.mark.parametrize("case", ["extra member", "object array", "pickle npy", "symlink", "bad json", "sizes",
                                  "booster garbage", "not a tar", "empty tar"])
def test_anything_else_is_refused(tmp_path, case):
    from cwm.cost_model.xgb_pretrained import XGBModelFileError, load_pretrained_xgb

    model, _ = _trained_model()
    good = tmp_path / "good.tar"
    model.save(str(good))
    members = _members(good)
    marker = tmp_path / "pwned"
    bad = tmp_path / "bad.tar"
    if case == "extra member":
        members["evil.py"] = b"print('hi')"
        _tar(bad, members)
    elif case in ("object array", "pickle npy"):
        payload = np.empty(1, dtype=object)
        payload[0] = _CreatesFile(marker)
        if case == "object array":  # the same array names, one of them an object array
            with np.load(io.BytesIO(members["data.npz"])) as npz:
                arrays = {k: npz[k] for k in npz.files}
            arrays["costs"] = payload
            buffer = io.BytesIO()
            np.savez(buffer, **arrays)
            members["data.npz"] = buffer.getvalue()
        else:
            members["data.npz"] = _npy(payload)
        _tar(bad, members)
    elif case == "symlink":
        with tarfile.open(bad, "w") as tar:
            for name, payload in members.items():
                if name == "booster.ubj":
                    info = tarfile.TarInfo(name)
                    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                    tar.addfile(info)
                else:
                    info = tarfile.TarInfo(name)
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    elif case == "bad json":
        members["cwm_xgb.json"] = b"{not json"
        _tar(bad, members)
    elif case == "sizes":
        meta = json.loads(members["cwm_xgb.json"])
        meta["groups"].append("group2")
        members["cwm_xgb.json"] = json.dumps(meta).encode()
        _tar(bad, members)
    elif case == "booster garbage":
        members["booster.ubj"] = b"garbage"
        _tar(bad, members)
    elif case == "not a tar":
        bad.write_bytes(b"\x80\x04K\x01." * 200)  # a pickle stream
    elif case == "empty tar":
        _tar(bad, {})
    with pytest.raises(XGBModelFileError, match=str(bad)):
        load_pretrained_xgb(bad)
    assert not marker.exists()


def test_save_cost_model_then_pretrained_xgb_round_trips_through_the_cli(tmp_path, capsys):
    """`cwm tune --save-cost-model` writes the safe format that `--pretrained-xgb` reads."""
    saved = tmp_path / "xgb.tar"
    model, _ = _trained_model()
    model.save(str(saved))
    assert main(["tune", "matmul_256", "--trials", "4", "--cost-model", "xgb-pretrained", "--pretrained-xgb",
                 str(saved), "--work-dir", str(tmp_path / "wd"), "--save-cost-model",
                 str(tmp_path / "again.tar")]) in (0, 1)
    capsys.readouterr()
    with tarfile.open(tmp_path / "again.tar") as tar:
        assert "data.npy" not in tar.getnames() and "cwm_xgb.json" in tar.getnames()
