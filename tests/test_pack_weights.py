"""Packed weights on CPU (issue #14): the weights are stored in the layout the tuned kernels read,
transformed at compile time, so neither ``cwm.load`` nor a call transforms them."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.compile_helpers import fast_settings

# float32 matmuls over K = 256 summed in another order by the tiled kernels: ~1e-6 relative
RTOL = ATOL = 1e-5


def _mlp():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(256, 256), torch.nn.Linear(256, 128)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    torch.manual_seed(0)
    return MLP().eval(), torch.randn(32, 256)


def _compile(tmp_path, name, **kwargs):
    import cwm

    model, x = _mlp()
    kwargs.setdefault("trials_per_task", 4)
    compiled = cwm.compile(model, example_inputs=(x,), cost_model="random", settings=fast_settings(),
                           work_dir=str(tmp_path / name), **kwargs)
    return compiled, x.numpy(), model(x).detach().numpy()


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    return _compile(tmp_path_factory.mktemp("packed"), "wd")


def test_cpu_pipelines_pack_and_cuda_ones_do_not():
    import tvm

    from cwm.compile.pipeline import resolve

    cpu = resolve("default", tvm.target.Target("llvm")).names
    assert cpu.index("cwm-layout-free") < cpu.index("cwm-tune") < cpu.index("cwm-apply-db") \
        < cpu.index("cwm-pack-weights") < cpu.index("cwm-build") < cpu.index("cwm-transform-weights")
    assert "cwm-layout-free" in resolve("from-db", tvm.target.Target("llvm")).names
    cuda = resolve("default", tvm.target.Target({"kind": "cuda", "arch": "sm_80"})).names
    assert not {"cwm-layout-free", "cwm-pack-weights", "cwm-transform-weights"} & set(cuda)


def test_cpu_only_passes_refuse_a_cuda_target():
    import tvm

    from cwm.compile.errors import PipelineError
    from cwm.compile.pipeline import parse

    pipeline = parse("cwm-import,cwm-partition,cwm-layout-free,cwm-build")
    with pytest.raises(PipelineError, match="cwm-layout-free.*llvm targets only"):
        pipeline.validate(tvm.target.Target({"kind": "cuda", "arch": "sm_80"}))


def test_weights_are_packed_and_outputs_match_pytorch(packed):
    compiled, x, expected = packed
    assert compiled.param_mode == "transformed"
    assert compiled.report["weights_packed"] >= 1 and compiled.report["layout_free_functions"] == 2
    assert max(w.ndim for w in compiled.params.values()) > 2  # a packed (tiled) weight layout
    np.testing.assert_allclose(compiled(x), expected, rtol=RTOL, atol=ATOL)


def test_artifact_stores_packed_weights_and_load_does_not_transform(packed, tmp_path, monkeypatch):
    import tvm

    import cwm

    compiled, x, expected = packed
    compiled.export(str(tmp_path / "art"))
    manifest = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert manifest["params"]["mode"] == "transformed"
    assert manifest["params"]["packed_functions"] == compiled.report["weights_packed"]
    shapes = {t["name"]: tuple(t["shape"]) for t in manifest["params"]["tensors"]}
    assert shapes == {k: v.shape for k, v in compiled.params.items()}

    fetched = []
    real = tvm.relax.VirtualMachine

    class Recording(real):
        def __getitem__(self, name):
            fetched.append(name)
            return super().__getitem__(name)

    monkeypatch.setattr(tvm.relax, "VirtualMachine", Recording)
    loaded = cwm.load(str(tmp_path / "art"))
    np.testing.assert_array_equal(loaded(x), compiled(x))  # the same library and weights
    assert "main" in fetched and "main_transform_params" not in fetched


def test_packing_off_keeps_the_weight_layout(tmp_path):
    compiled, x, expected = _compile(tmp_path, "off", pack_weights=False)
    assert compiled.report["weights_packed"] == 0 and compiled.report["layout_free_functions"] == 0
    assert compiled.param_mode == "transformed"  # the lifted transposes still run at compile time
    assert max(w.ndim for w in compiled.params.values()) == 2
    np.testing.assert_allclose(compiled(x), expected, rtol=RTOL, atol=ATOL)


def test_pipeline_option_turns_packing_off(tmp_path):
    text = ("cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-partition,cwm-layout-free{enabled=false},cwm-tune,"
            "cwm-apply-db,cwm-pack-weights{enabled=false},cwm-build,cwm-transform-weights")
    compiled, x, expected = _compile(tmp_path, "text", pipeline=text)
    assert compiled.report["weights_packed"] == 0
    assert max(w.ndim for w in compiled.params.values()) == 2


def test_an_artifact_with_lifted_weights_still_loads(tmp_path):
    """Artifacts written before cwm-transform-weights hold the source weights (mode ``lifted``):
    they transform them once, on the first call, as before."""
    import cwm

    compiled, x, expected = _compile(tmp_path, "old", trials_per_task=0,
                                     pipeline="cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-partition,cwm-build")
    assert compiled.param_mode == "lifted"
    compiled.export(str(tmp_path / "art"))
    loaded = cwm.load(str(tmp_path / "art"))
    assert loaded.param_mode == "lifted"
    np.testing.assert_allclose(loaded(x), expected, rtol=RTOL, atol=ATOL)


def test_an_unknown_weight_mode_is_a_clear_error(packed, tmp_path):
    import cwm
    from cwm.compile.errors import ArtifactError

    compiled, _, _ = packed
    compiled.export(str(tmp_path / "art"))
    path = tmp_path / "art" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["params"]["mode"] = "packed-v9"
    path.write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="mode 'packed-v9'.*newer cwm"):
        cwm.load(str(tmp_path / "art"))
