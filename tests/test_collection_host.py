"""cwm.tuning.collect.check_collection_host: a dataset measured on one CPU model is not
silently extended on another (decision 51)."""
from __future__ import annotations

import pytest

from cwm.dataset.store import DatasetError
from cwm.tuning.collect import check_collection_host


def test_a_new_dataset_records_this_cpu():
    assert check_collection_host({}, "Intel Xeon") == ["Intel Xeon"]


def test_the_same_cpu_extends_its_dataset():
    assert check_collection_host({"cpu_model": "AMD EPYC"}, "AMD EPYC") == ["AMD EPYC"]
    assert check_collection_host({"cpu_models": ["AMD EPYC", "Intel Xeon"]}, "Intel Xeon") == ["AMD EPYC", "Intel Xeon"]


def test_another_cpu_is_refused_unless_allowed():
    with pytest.raises(DatasetError, match=r"measured on \['AMD EPYC'\]; this machine is 'Intel Xeon'"):
        check_collection_host({"cpu_model": "AMD EPYC"}, "Intel Xeon")
    assert check_collection_host({"cpu_model": "AMD EPYC"}, "Intel Xeon", allow=True) == ["AMD EPYC", "Intel Xeon"]


# --- the CPU generation (LLVM's mcpu): the model name alone does not tell Zen 4 from Zen 5 ---------

def _target(mcpu):
    import tvm

    return tvm.target.Target({"kind": "llvm", "num-cores": 2, "mcpu": mcpu})


def test_the_same_generation_extends_its_dataset():
    from cwm.tuning.collect import check_collection_mcpu

    check_collection_mcpu({"target": {"kind": "llvm", "mcpu": "znver4"}}, _target("znver4"))
    check_collection_mcpu({}, _target("znver4"))  # a new dataset


def test_another_generation_is_refused_unless_allowed():
    from cwm.tuning.collect import check_collection_mcpu

    manifest = {"cpu_model": "AMD EPYC", "target": {"kind": "llvm", "mcpu": "znver5"}}
    with pytest.raises(DatasetError, match="mcpu=znver5; this machine is mcpu=znver4"):
        check_collection_mcpu(manifest, _target("znver4"))
    check_collection_mcpu(manifest, _target("znver4"), allow=True)
