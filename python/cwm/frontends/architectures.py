"""Tiny random-weight configs of ``transformers`` architectures beyond the zoo: what cwm compiles.

:data:`ARCHITECTURES` maps a name to an :class:`Architecture`: the config class and its tiny
keyword arguments, the model class, and the example input. :meth:`Architecture.build` returns
``(module, example_inputs)``: an eval-mode ``torch.nn.Module`` whose ``forward`` takes the
example input and returns one tensor (the logits, or the last hidden state), weights drawn after
``torch.manual_seed(0)``. ``tests/test_model_coverage.py`` compiles each of them (plus the zoo)
with the ``no-tune`` pipeline and checks it against PyTorch; ``tools/coverage_report.py`` writes
the table in docs/zoo.md.

The decoders (LLaMA, Qwen2, Mistral) run without an attention mask, as a user calls them: that
is the path whose causal-mask code compares ``bool`` tensors (see :mod:`cwm.compile.bool_ops`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cwm.frontends.zoo import first_output

SEED = 0

#: the decoder sizes shared by the LLaMA-family entries: 2 layers, grouped-query attention (4 query
#: heads over 2 key/value heads)
_DECODER = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)


@dataclass(frozen=True)
class Architecture:
    """One architecture at a tiny config, and how to call it."""

    name: str
    config_class: str              # transformers config class
    model_class: str               # transformers model class
    config: dict = field(default_factory=dict)
    #: ``"tokens"`` (int64 ids in [0, 128)), ``"image"`` (float32 NCHW) or ``"audio"`` (float32
    #: log-mel features, batch x mel bins x frames)
    input_kind: str = "tokens"
    input_shape: tuple = (1, 16)
    #: the keyword the input is passed as, and the attribute of the model called (``"encoder"``:
    #: ``model.encoder``)
    input_name: str = "input_ids"
    submodule: str | None = None

    @property
    def how(self) -> str:
        """The build as one line, for reports."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        target = f"{self.model_class}({self.config_class}({args}))"
        return target + (f".{self.submodule}" if self.submodule else "")

    def make_input(self, seed: int = SEED):
        """The example input as a numpy array."""
        import numpy as np

        rng = np.random.default_rng(seed)
        if self.input_kind == "tokens":
            return rng.integers(0, 128, size=self.input_shape, dtype="int64")
        return rng.standard_normal(self.input_shape).astype("float32")

    def build(self):
        """``(module, example_inputs)``: the wrapped eval-mode module and a 1-tuple of torch tensors."""
        import torch
        import transformers

        config = getattr(transformers, self.config_class)(**self.config)
        torch.manual_seed(SEED)
        model = getattr(transformers, self.model_class)(config).eval()
        if self.submodule:
            model = getattr(model, self.submodule)
        return first_output(model, self.input_name), (torch.from_numpy(self.make_input()),)


_ENTRIES = [
    Architecture("llama", "LlamaConfig", "LlamaForCausalLM", dict(_DECODER)),
    Architecture("qwen2", "Qwen2Config", "Qwen2ForCausalLM", dict(_DECODER)),
    Architecture("mistral", "MistralConfig", "MistralForCausalLM", dict(_DECODER, sliding_window=8)),
    Architecture("convnext", "ConvNextConfig", "ConvNextModel",
                 dict(num_channels=3, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, image_size=32),
                 input_kind="image", input_shape=(1, 3, 32, 32), input_name="pixel_values"),
    Architecture("swin", "SwinConfig", "SwinModel",
                 dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 2],
                      window_size=4),
                 input_kind="image", input_shape=(1, 3, 32, 32), input_name="pixel_values"),
    Architecture("whisper_encoder", "WhisperConfig", "WhisperModel",
                 dict(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                      decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=64, num_mel_bins=16,
                      max_source_positions=16, max_target_positions=16, vocab_size=128,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
                 input_kind="audio", input_shape=(1, 16, 32), input_name="input_features",
                 submodule="encoder"),
    Architecture("t5_encoder", "T5Config", "T5EncoderModel",
                 dict(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)),
]

#: name -> :class:`Architecture`, in a fixed order.
ARCHITECTURES: dict[str, Architecture] = {entry.name: entry for entry in _ENTRIES}
#: the LLaMA-family decoders (grouped-query attention, rotary embeddings, causal bool masks)
DECODERS = ("llama", "qwen2", "mistral")


def get(name: str) -> Architecture:
    """The entry ``name``; an unknown name raises ``KeyError`` listing the known ones."""
    try:
        return ARCHITECTURES[name]
    except KeyError:
        raise KeyError(f"unknown architecture {name!r}; known: {', '.join(ARCHITECTURES)}") from None
