"""Coverage: every architecture of :mod:`cwm.frontends.architectures` and every zoo network (small
config) compiles through ``torch.export`` and matches PyTorch.

The fast tests use the ``no-tune`` pipeline (TVM's default lowering, nothing measured), about
5 s a model on 2 cores. The ``slow`` one tunes the LLaMA decoder for a few trials, so the tuned
schedules of its bool-mask and GQA kernels are checked too; ``-m "not slow"`` skips it.

Tolerance, everywhere: max |y - y_torch| / max |y_torch| <= 1e-5. The compiled kernels sum the
float32 matmul, layer-norm and softmax reductions in another order than PyTorch's (measured: 2e-7
to 5e-7 at these sizes, 2e-6 for the full 100M LLaMA); a wrong mask or a wrong op gives errors of
order 1.
"""
from __future__ import annotations

import numpy as np
import pytest

from cwm.frontends import architectures, zoo

TOLERANCE = 1e-5


def _max_rel_err(compiled, module, inputs) -> float:
    import torch

    with torch.no_grad():
        expected = module(*inputs).numpy()
    got = np.asarray(compiled(*[x.numpy() for x in inputs]))
    assert got.shape == expected.shape
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("name", list(architectures.ARCHITECTURES))
def test_architecture_compiles_and_matches_torch(name):
    import cwm

    module, inputs = architectures.get(name).build()
    compiled = cwm.compile(module, example_inputs=inputs, pipeline="no-tune")
    assert _max_rel_err(compiled, module, inputs) <= TOLERANCE


@pytest.mark.parametrize("name", list(zoo.NETWORKS))
def test_zoo_network_small_config_compiles_and_matches_torch(name):
    import cwm

    module, inputs = zoo.build_torch(name, small=True)
    compiled = cwm.compile(module, example_inputs=inputs, pipeline="no-tune")
    assert _max_rel_err(compiled, module, inputs) <= TOLERANCE


def test_the_zoo_has_a_100m_llama_style_decoder():
    spec = zoo.get("llama_100m")
    config = spec.config(False)
    assert config.num_key_value_heads < config.num_attention_heads  # grouped-query attention
    hidden, layers, inter, vocab = (config.hidden_size, config.num_hidden_layers, config.intermediate_size,
                                    config.vocab_size)
    kv = hidden * config.num_key_value_heads // config.num_attention_heads
    params = vocab * hidden + layers * (2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * inter + 2 * hidden) + hidden
    assert 95e6 <= params <= 105e6, params
    assert "llama_100m" not in zoo.DATASET_NETWORKS  # the measured dataset and its split stay as they are


@pytest.mark.slow
def test_llama_tuned_for_a_few_trials_matches_torch(tmp_path):
    import cwm

    module, inputs = architectures.get("llama").build()
    compiled = cwm.compile(module, example_inputs=inputs, trials_per_task=2, cost_model="xgb",
                           work_dir=str(tmp_path / "work"))
    report = compiled.report
    assert report["new_records"] >= len(report["tasks"])  # 2 trials a task; a tiny task may have 1 candidate
    assert report["scheduled_functions"] > 0  # tuned schedules are in the build, not only defaults
    assert _max_rel_err(compiled, module, inputs) <= TOLERANCE
