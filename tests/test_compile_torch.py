"""cwm.compile from torch: an nn.Module with example inputs, and a torch.export.ExportedProgram."""
from __future__ import annotations

import numpy as np
import pytest

import cwm
from tests.compile_helpers import assert_close, fast_settings


@pytest.fixture(scope="module")
def module_and_input():
    import torch

    from cwm.frontends import tiny_cnn

    return tiny_cnn.build_model(0), torch.from_numpy(tiny_cnn.example_input(0))


def test_torch_module_compiles_tuned_and_round_trips(module_and_input, tmp_path):
    import torch

    module, x = module_and_input
    model = cwm.compile(module, example_inputs=(x,), trials_per_task=2, cost_model="xgb", work_dir=tmp_path / "wd",
                        settings=fast_settings())
    assert model.report["frontend"] == "torch" and model.report["new_records"] > 0
    assert [(s.shape, s.dtype) for s in model.inputs] == [((1, 3, 32, 32), "float32")]
    assert [(s.shape, s.dtype) for s in model.outputs] == [((1, 10), "float32")]
    with torch.no_grad():
        expected = module(x).numpy()
    out = model(x)
    assert isinstance(out, torch.Tensor)
    assert_close(out.numpy(), expected)
    assert_close(model(x.numpy()), expected)  # numpy in, numpy out
    loaded = cwm.load(model.export(tmp_path / "out"))
    assert loaded.report["frontend"] == "torch"
    assert_close(loaded(x.numpy()), expected)


def test_exported_program_and_single_tensor_example(module_and_input):
    import torch

    module, x = module_and_input
    with torch.no_grad():
        expected = module(x).numpy()
    program = torch.export.export(module, (x,))
    from_program = cwm.compile(program, pipeline="no-tune")
    assert from_program.report["frontend"] == "exported-program"
    assert_close(from_program(x.numpy()), expected)
    from_module = cwm.compile(module, example_inputs=x, pipeline="no-tune")  # a bare tensor is fine too
    assert_close(from_module(x.numpy()), expected)
    with pytest.raises(cwm.compile.InputError, match="expects"):
        from_module(np.zeros((2, 3, 32, 32), "float32"))
