"""Model zoo, importers, numerics and task extraction (~20 s on 2 cores).

Only ResNet-18 (full size) and a 2-layer GPT-2 (``small=True``, same class) are imported,
compiled and run here; all eight full networks are covered by ``tools/zoo_report.py``
(~7 minutes), whose results are in docs/zoo.md.
"""
from __future__ import annotations

import time

import pytest

from cwm.frontends import UnsupportedOpError, importers, numerics, tasks, zoo

EXPECTED = ["resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "opt_125m", "vit_b16", "llama_100m"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("zoo_cache"))


@pytest.fixture(scope="module")
def target():
    from cwm.tuning import host_target

    return host_target()


@pytest.fixture(scope="module")
def resnet18_onnx(cache_dir):
    from cwm.frontends import task_cache

    return importers.import_onnx("resnet18", task_cache.onnx_dir(cache_dir))


@pytest.fixture(scope="module")
def resnet18_tasks(resnet18_onnx, target):
    return tasks.extract_tasks(resnet18_onnx, target, network="resnet18")


def test_registry_lists_exactly_the_eight_networks():
    assert list(zoo.NETWORKS) == EXPECTED
    assert list(zoo.DATASET_NETWORKS) == EXPECTED[:7]
    for name, spec in zoo.NETWORKS.items():
        assert spec.name == name
        x = spec.make_input()
        assert x.shape == spec.input_shape and str(x.dtype) == spec.input_dtype
        assert x.shape == ((1, 128) if spec.is_text else (1, 3, 224, 224))
        assert spec.input_name == ("input_ids" if spec.is_text else "pixel_values")


def test_unknown_network_is_a_key_error_listing_known_names():
    for call in (zoo.get, zoo.build_torch, importers.import_torch):
        with pytest.raises(KeyError) as info:
            call("resnet19")
        assert "resnet19" in str(info.value)
        assert all(name in str(info.value) for name in EXPECTED)


def test_build_is_deterministic_and_small_keeps_the_class():
    import torch

    full, (x,) = zoo.build_torch("gpt2", small=True)
    again, _ = zoo.build_torch("gpt2", small=True)
    with torch.no_grad():
        assert torch.equal(full(x), again(x))
    assert type(full.m).__name__ == "GPT2Model" and full.m.config.n_layer == 2


def test_resnet18_onnx_matches_pytorch(resnet18_onnx):
    module, inputs = zoo.build_torch("resnet18")
    expected = numerics.torch_reference(module, inputs)
    actual, _, _ = numerics.run_relax(resnet18_onnx, [x.numpy() for x in inputs])
    assert expected.shape == (1, 1000)
    err = numerics.max_rel_err(actual, expected)
    assert err <= 1e-3, err


def test_resnet18_torch_export_matches_pytorch():
    err = numerics.check_numerics("resnet18", via="torch")
    assert 0.0 <= err <= 1e-3, err


def test_max_rel_err_is_relative_to_output_scale():
    import numpy as np

    ref = np.array([0.0, 10.0, -20.0])
    assert numerics.max_rel_err(ref + [0.0, 0.2, 0.0], ref) == pytest.approx(0.01)
    with pytest.raises(ValueError):
        numerics.max_rel_err(np.zeros(2), np.zeros(3))


def test_resnet18_tasks_have_keys_names_and_positive_weights(resnet18_tasks):
    assert len(resnet18_tasks) >= 10
    keys = [t.key for t in resnet18_tasks]
    assert len(set(keys)) == len(keys)  # MetaSchedule already merged identical kernels
    assert all(len(k) == 16 and int(k, 16) >= 0 for k in keys)
    assert all(t.weight > 0 and t.networks == ("resnet18",) for t in resnet18_tasks)
    names = {t.name for t in resnet18_tasks}
    assert any(name.startswith("fused_conv2d") for name in names)
    conv = next(t for t in resnet18_tasks if t.name.startswith("fused_conv2d"))
    assert conv.flop and conv.flop > 1e6
    assert sum(t.weight for t in resnet18_tasks) > len(resnet18_tasks)  # repeated blocks


def test_task_table_merges_by_structural_hash(resnet18_tasks):
    table = tasks.TaskTable.from_networks({"a": resnet18_tasks, "b": resnet18_tasks})
    assert len(table) == len(resnet18_tasks)
    for task in resnet18_tasks:
        merged = table[task.key]
        assert merged.weights == {"a": task.weight, "b": task.weight}
        assert merged.weight == 2 * task.weight and merged.networks == ("a", "b")
    summary = table.summary()
    assert summary["unique_tasks"] == len(resnet18_tasks) == summary["shared_tasks"]
    assert summary["networks"]["a"]["tasks"] == len(resnet18_tasks)
    rows = table.to_rows()
    assert len(rows) == len(table) and {"key", "name", "flop", "weight", "networks"} <= set(rows[0])


def test_zoo_tasks_dedups_and_caches(resnet18_tasks, target, cache_dir):
    import os

    from cwm.frontends import task_cache

    first = task_cache.zoo_tasks(["resnet18", "resnet18"], target, cache_dir=cache_dir)
    assert first.networks == ["resnet18"]
    assert {t.key for t in first} == {t.key for t in resnet18_tasks}
    assert os.path.exists(task_cache.path("resnet18", cache_dir))
    start = time.perf_counter()
    second = task_cache.zoo_tasks(["resnet18"], target, cache_dir=cache_dir)
    assert time.perf_counter() - start < 5.0
    assert [(t.key, t.name, t.weight) for t in second] == [(t.key, t.name, t.weight) for t in first]
    # a cache written for another target is ignored
    other = {"kind": "llvm", "num-cores": 1}
    import tvm

    assert task_cache.load("resnet18", tvm.target.Target(other), cache_dir) is None


def test_unsupported_onnx_op_is_named_with_its_node():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
         helper.make_node("Det", ["r"], ["d"], name="det0"),
         helper.make_node("Celu", ["d"], ["y"], name="celu0")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOpError) as info:
        importers.from_onnx_model(model, {"x": [2, 3, 3]})
    error = info.value
    assert (error.op, error.node, error.frontend) == ("Det", "det0", "onnx")
    assert error.others == ("Celu",)
    assert "'Det'" in str(error) and "det0" in str(error) and isinstance(error, NotImplementedError)


def test_unsupported_torch_op_is_named_with_its_node():
    import torch

    class UsesLgamma(torch.nn.Module):
        def forward(self, x):
            return torch.lgamma(torch.relu(x) + 1.0)

    program = torch.export.export(UsesLgamma(), (torch.rand(4),))
    with pytest.raises(UnsupportedOpError) as info:
        importers.from_exported_program(program)
    error = info.value
    assert (error.op, error.node, error.frontend) == ("lgamma.default", "lgamma", "torch")
    assert "lgamma.default" in str(error)


def test_import_network_rejects_unknown_path():
    with pytest.raises(ValueError, match="onnx"):
        importers.import_network("resnet18", via="tflite")


def test_scalar_constant_of_shape_is_rewritten_and_imports():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from cwm.frontends import onnx_fixes

    empty = numpy_helper.from_array(np.zeros(0, "int64"), "empty")
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["shape"], name="c0", value=empty),
         helper.make_node("ConstantOfShape", ["shape"], ["two"], name="cos0",
                          value=numpy_helper.from_array(np.array([2.0], "float32"))),
         helper.make_node("Mul", ["x", "two"], ["y"], name="mul0")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert onnx_fixes.scalar_constant_of_shape_nodes(model) == [1]
    fixed = onnx_fixes.fix_scalar_constant_of_shape(model)
    assert fixed is not model and model.graph.node[1].op_type == "ConstantOfShape"
    assert fixed.graph.node[1].op_type == "Constant"
    assert onnx_fixes.fix_scalar_constant_of_shape(fixed) is fixed  # nothing left to fix
    x = np.array([1.0, -2.0, 3.5], "float32")
    out, _, _ = numerics.run_relax(importers.from_onnx_model(model, {"x": [3]}), [x])
    np.testing.assert_allclose(out, 2 * x)


@pytest.mark.parametrize("via", ["onnx", "torch"])
def test_gpt2_small_imports_both_ways(via, cache_dir):
    """Guards the GPT-2 workarounds (all-ones mask; scalar ConstantOfShape rewrite)."""
    assert numerics.check_numerics("gpt2", via=via, small=True, cache_dir=cache_dir) <= 1e-3
