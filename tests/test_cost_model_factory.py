"""The cost-model factory (cwm.cost_model.factory): names, options, and the tuners going through it."""
from __future__ import annotations

import argparse

import pytest

from cwm import cost_model
from cwm.cost_model import factory


def test_registered_names_are_the_cli_choices():
    assert cost_model.registered() == ("cwm", "xgb", "xgb-pretrained", "random")
    from cwm.compile.cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    choices = next(a.choices for a in parser._actions if a.dest == "cost_model")
    assert tuple(choices) == cost_model.registered()


def test_create_builds_metaschedule_models():
    from tvm.s_tir import meta_schedule as ms

    assert isinstance(cost_model.create("random", 2, seed=1), ms.cost_model.RandomModel)
    xgb = cost_model.create("xgb", 1)
    assert type(xgb._inst).__name__ == "SafeXGBModel" and xgb._inst.config.nthread == 1  # pickle-free XGBModel
    # options another model reads are ignored; an option nobody reads is an error
    assert isinstance(cost_model.create("random", model_dir="x", dataset="y"), ms.cost_model.RandomModel)
    with pytest.raises(TypeError, match="bogus"):
        cost_model.create("random", bogus=1)
    with pytest.raises(ValueError, match="unknown cost model 'nope'"):
        cost_model.create("nope")


def test_resolve_passes_instances_and_metaschedule_names_through():
    from tvm.s_tir import meta_schedule as ms

    model = ms.cost_model.RandomModel()
    assert cost_model.resolve(model) is model
    assert isinstance(cost_model.resolve("random"), ms.cost_model.RandomModel)


def test_a_registered_model_is_accepted_by_tune_and_compile_options():
    from tvm.s_tir import meta_schedule as ms

    from cwm.compile.options import CompileOptions
    from cwm.compile.passes import get_pass

    made = []

    @cost_model.register("test-seeded-random", options={"offset": 0})
    def _build(num_cores, seed, offset=0):
        made.append((num_cores, seed, offset))
        return ms.cost_model.RandomModel(seed=seed + offset)

    try:
        assert "test-seeded-random" in cost_model.registered()
        assert isinstance(cost_model.create("test-seeded-random", 3, seed=2, offset=5), ms.cost_model.RandomModel)
        assert made == [(3, 2, 5)]
        CompileOptions(cost_model="test-seeded-random")  # validated against the registry
        option = next(o for o in get_pass("cwm-tune").options if o.name == "cost-model")
        assert option.check("test-seeded-random", "cwm-tune") == "test-seeded-random"
        with pytest.raises(ValueError, match="registered already"):
            cost_model.register("test-seeded-random")(_build)
    finally:
        factory._REGISTRY.pop("test-seeded-random", None)
    with pytest.raises(ValueError, match="unknown cost_model"):
        CompileOptions(cost_model="test-seeded-random")
