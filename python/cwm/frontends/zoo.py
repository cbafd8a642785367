"""The model zoo: 7 reference networks built from ``transformers`` classes with random weights.

Every network is batch 1: images are float32 ``1x3x224x224`` (``pixel_values``), sequences
are int64 ``1x128`` token ids (``input_ids``). Weights are drawn after ``torch.manual_seed(0)``
(:data:`SEED`), so every build of a network is the same model. Each module is wrapped so
that ``forward(x)`` takes the one input tensor and returns one tensor (logits for the
classifiers, the last hidden state for the encoders/decoders; text models run with
``use_cache=False``; GPT-2 also gets an all-ones ``attention_mask``, see its entry).

``small=True`` builds a reduced-depth/width config of the *same* class with the same input
shape, for fast tests. :func:`to_onnx` writes the TorchScript-exporter ONNX file
(opset 17); the Relax importers live in :mod:`cwm.frontends.importers`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

SEED = 0
IMAGE_SHAPE = (1, 3, 224, 224)
SEQ_SHAPE = (1, 128)
TOKEN_HIGH = 1000  # token ids are drawn from [0, TOKEN_HIGH): valid for every vocabulary here
OPSET = 17
OUTPUT_NAME = "output"


@dataclass(frozen=True)
class NetworkSpec:
    """One zoo network: how to build it (full or ``small``) and what its input looks like."""

    name: str
    how: str                          # the transformers class + config, as built
    config: Callable[[bool], object]  # small -> the transformers config object
    model_class: str                  # transformers class name
    input_name: str
    input_shape: tuple
    input_dtype: str
    ones_mask: bool = False           # pass attention_mask=ones_like(x) (see GPT-2 below)
    onnx_dynamo: bool = False         # export ONNX with torch.export (dynamo=True, needs onnxscript)

    @property
    def is_text(self) -> bool:
        return self.input_dtype == "int64"

    def make_input(self, seed: int = SEED):
        """A numpy example input: N(0,1) float32 image or uniform int64 token ids."""
        import numpy as np

        rng = np.random.default_rng(seed)
        if self.is_text:
            return rng.integers(0, TOKEN_HIGH, size=self.input_shape, dtype="int64")
        return rng.standard_normal(self.input_shape).astype("float32")

    def build(self, small: bool = False):
        """Wrapped eval-mode ``torch.nn.Module``, weights drawn after ``manual_seed(SEED)``."""
        import torch
        import transformers

        config = self.config(small)
        torch.manual_seed(SEED)
        model = getattr(transformers, self.model_class)(config).eval()
        return first_output(model, self.input_name, self.ones_mask)


def first_output(model, input_name: str, ones_mask: bool = False):
    """``model`` wrapped so that ``forward(x)`` takes the input positionally and returns one tensor
    (see :func:`_wrapper_class`), in eval mode; the zoo and :mod:`cwm.frontends.architectures` use it."""
    return _wrapper_class()(model, input_name, ones_mask).eval()


def _wrapper_class():
    """``forward(x) = m(<input_name>=x, return_dict=False)[0]`` (+ ``use_cache=False`` for text,
    + ``attention_mask=ones_like(x)`` where ``ones_mask``)."""
    import torch

    class FirstOutput(torch.nn.Module):
        def __init__(self, model, input_name, ones_mask=False):
            super().__init__()
            self.m, self.input_name, self.ones_mask = model, input_name, ones_mask

        def forward(self, x):
            kwargs = {self.input_name: x, "return_dict": False}
            if self.input_name == "input_ids":
                kwargs["use_cache"] = False
            if self.ones_mask:
                kwargs["attention_mask"] = torch.ones_like(x)
            return self.m(**kwargs)[0]

    return FirstOutput


def _cfg(class_name: str, full: dict, small: dict) -> Callable[[bool], object]:
    def make(is_small: bool):
        import transformers

        return getattr(transformers, class_name)(**(small if is_small else full))
    return make


_LLAMA_100M = dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                   num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048)

_TEXT_SMALL = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                   intermediate_size=512)

_SPECS = [
    NetworkSpec("resnet18", "ResNetForImageClassification(ResNetConfig(depths=[2,2,2,2], "
                "layer_type='basic', hidden_sizes=[64,128,256,512], num_labels=1000))",
                _cfg("ResNetConfig",
                     dict(depths=[2, 2, 2, 2], layer_type="basic",
                          hidden_sizes=[64, 128, 256, 512], num_labels=1000),
                     dict(depths=[1, 1, 1, 1], layer_type="basic", hidden_sizes=[16, 32, 64, 128],
                          embedding_size=16)),
                "ResNetForImageClassification", "pixel_values", IMAGE_SHAPE, "float32"),
    NetworkSpec("resnet50", "ResNetForImageClassification(ResNetConfig(num_labels=1000))",
                _cfg("ResNetConfig", dict(num_labels=1000),
                     dict(depths=[1, 1, 1, 1], hidden_sizes=[64, 128, 256, 512],
                          embedding_size=16)),
                "ResNetForImageClassification", "pixel_values", IMAGE_SHAPE, "float32"),
    NetworkSpec("mobilenet_v2", "MobileNetV2ForImageClassification(MobileNetV2Config("
                "tf_padding=False, num_labels=1000))",
                _cfg("MobileNetV2Config", dict(tf_padding=False, num_labels=1000),
                     dict(tf_padding=False, depth_multiplier=0.35)),
                "MobileNetV2ForImageClassification", "pixel_values", IMAGE_SHAPE, "float32"),
    NetworkSpec("bert_base", "BertModel(BertConfig()), seq 128",
                _cfg("BertConfig", {}, _TEXT_SMALL),
                "BertModel", "input_ids", SEQ_SHAPE, "int64"),
    # GPT-2 gets an explicit all-ones attention mask (same output): without a mask,
    # transformers' packed-sequence detection runs torch.diff + a cumsum over a bool tensor,
    # which the ONNX exporter rejects ("Exporting the operator 'aten::diff' to ONNX opset
    # version 17 is not supported") and TVM's torch importer mistypes (cumsum of bool stays
    # bool; LLVM codegen then fails "Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat))").
    NetworkSpec("gpt2", "GPT2Model(GPT2Config()), seq 128, attention_mask=ones",
                _cfg("GPT2Config", {}, dict(n_layer=2, n_embd=128, n_head=2)),
                "GPT2Model", "input_ids", SEQ_SHAPE, "int64", ones_mask=True),
    NetworkSpec("opt_125m", "OPTModel(OPTConfig()), seq 128",
                _cfg("OPTConfig", {}, dict(num_hidden_layers=2, hidden_size=128, ffn_dim=512,
                                           num_attention_heads=2, word_embed_proj_dim=128)),
                "OPTModel", "input_ids", SEQ_SHAPE, "int64"),
    NetworkSpec("vit_b16", "ViTModel(ViTConfig()), 224x224, patch 16",
                _cfg("ViTConfig", {}, _TEXT_SMALL),
                "ViTModel", "pixel_values", IMAGE_SHAPE, "float32"),
    # A LLaMA-style decoder of 100.1M parameters (grouped-query attention, rotary embeddings,
    # SwiGLU), called without a mask as users call it: its causal mask compares bool tensors
    # (cwm.compile.bool_ops), and its packed-sequence check uses aten::diff, which only the
    # dynamo ONNX exporter handles.
    NetworkSpec("llama_100m", "LlamaModel(LlamaConfig(" + ", ".join(
                    f"{k}={v}" for k, v in _LLAMA_100M.items()) + ")), seq 128",
                _cfg("LlamaConfig", _LLAMA_100M, dict(_LLAMA_100M, num_hidden_layers=2, hidden_size=128,
                                                      intermediate_size=256, num_attention_heads=4,
                                                      num_key_value_heads=2, vocab_size=1000)),
                "LlamaModel", "input_ids", SEQ_SHAPE, "int64", onnx_dynamo=True),
]

#: name -> :class:`NetworkSpec`, in a fixed order.
NETWORKS: dict[str, NetworkSpec] = {spec.name: spec for spec in _SPECS}
#: the networks whose tasks make the measured dataset and its train/test split (issue #3); a
#: network added to the zoo later does not change them
DATASET_NETWORKS = ("resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "opt_125m", "vit_b16")


def get(name: str) -> NetworkSpec:
    """The spec of ``name``; an unknown name raises ``KeyError`` listing the known ones."""
    try:
        return NETWORKS[name]
    except KeyError:
        raise KeyError(f"unknown network {name!r}; known networks: {', '.join(NETWORKS)}") from None


def fingerprint(name: str, small: bool = False) -> str:
    """8 hex digits naming this build of ``name`` (spec, size, input, opset, library versions),
    so that files cached from an older definition are not reused."""
    import hashlib
    from importlib.metadata import version

    spec = get(name)
    text = "|".join(map(str, (spec.how, spec.model_class, spec.config(small).to_json_string(),
                              spec.input_shape, spec.input_dtype, spec.ones_mask, OPSET, SEED,
                              TOKEN_HIGH, version("torch"), version("transformers"))))
    if spec.onnx_dynamo:  # appended only here, so the other networks keep their cached files
        text += "|dynamo"
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def build_torch(name: str, small: bool = False):
    """``(module, example_inputs)``: the eval-mode wrapped module and a 1-tuple of torch tensors."""
    import torch

    spec = get(name)
    return spec.build(small), (torch.from_numpy(spec.make_input()),)


def to_onnx(name: str, path: str, small: bool = False) -> str:
    """Export ``name`` to ``path`` (opset 17, ``dynamo=False``; a spec with ``onnx_dynamo``: opset 18
    through :func:`cwm.frontends.onnx_export.export_onnx`); input named ``spec.input_name``."""
    import warnings

    import torch

    spec = get(name)
    module, inputs = build_torch(name, small)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if spec.onnx_dynamo:
        from cwm.frontends.onnx_export import export_onnx

        return str(export_onnx(module, inputs, path, input_names=[spec.input_name], output_names=[OUTPUT_NAME]))
    with warnings.catch_warnings(), torch.no_grad():  # the TorchScript exporter is deprecated
        warnings.simplefilter("ignore")
        torch.onnx.export(module, inputs, path, input_names=[spec.input_name],
                          output_names=[OUTPUT_NAME], opset_version=OPSET, dynamo=False)
    return path
