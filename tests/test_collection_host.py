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
