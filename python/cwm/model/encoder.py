"""State encoder ``z = E(s)``: a CodeBERT-architecture (RoBERTa) encoder over TIR text.

Decisions
---------
* **Size.** Defaults (hidden 128, 3 layers, 4 heads, FFN 512, window 256) train on a
  busy 2-core CPU; ``max_position_embeddings = window + 2`` because RoBERTa numbers
  positions from ``pad_id + 1``. Real CodeBERT weights load with :meth:`from_codebert`
  (never required).
* **Long inputs: overlapping windows.** A text's ids are cut into windows of
  ``window - 2`` content tokens (each wrapped in ``<s> ... </s>``), starting every
  ``stride`` tokens (default 192: 62 tokens of overlap); the last window is aligned to the
  end of the text so every window is full. All windows of a batch of texts are run as one
  batch (in chunks of ``batch_windows``, padded per chunk).
* **Pooling.** Masked mean over the content tokens of a text: a token seen by ``c``
  windows contributes each of its ``c`` vectors with weight ``1/c`` (i.e. it is counted
  once, as the mean of its windowed vectors); ``<s>``, ``</s>`` and padding get weight 0.
  An empty text pools its single ``<s>`` vector.
* **Output.** An optional linear projection to ``out_dim`` (default 128, the transition
  model's latent size) and L2 normalisation (default on: the contrastive loss is cosine,
  so only the direction is trained, and a unit-norm target keeps the transition
  model's scale fixed).
* **Files.** ``save(dir)`` writes ``encoder.json`` (format, version, this config, the
  RoBERTa config), ``model.safetensors`` and ``tokenizer/``; ``load(dir)`` reads them back.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from cwm.model.tokenizer import TirTokenizer

FORMAT = "cwm-state-encoder"
VERSION = 1


@dataclass
class EncoderConfig:
    hidden: int = 128
    layers: int = 3
    heads: int = 4
    intermediate: int = 512
    window: int = 256         # tokens per window including <s> and </s>
    stride: int = 192         # step between window starts, in content tokens
    out_dim: int | None = 128  # None: no projection (output size = hidden)
    normalize: bool = True
    dropout: float = 0.1
    batch_windows: int = 64   # windows per forward chunk

    @classmethod
    def from_dict(cls, d: dict) -> "EncoderConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def window_starts(n: int, content: int, stride: int) -> list[int]:
    """Start offsets of the windows covering ``n`` tokens (last one aligned to the end)."""
    if n <= content:
        return [0]
    starts = list(range(0, n - content, stride))
    return starts + [n - content]


class StateEncoder(torch.nn.Module):
    def __init__(self, tokenizer: TirTokenizer, config: EncoderConfig | None = None, roberta=None):
        from transformers import RobertaConfig, RobertaModel

        super().__init__()
        self.tokenizer = tokenizer
        self.config = cfg = config or EncoderConfig()
        if not 1 <= cfg.stride <= cfg.window - 2:
            raise ValueError(f"stride must be in [1, window - 2], got {cfg.stride} for window {cfg.window}")
        if roberta is None:
            rc = RobertaConfig(
                vocab_size=tokenizer.vocab_size, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
                num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate,
                max_position_embeddings=cfg.window + 2, type_vocab_size=1,
                hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                pad_token_id=tokenizer.pad_id, bos_token_id=tokenizer.bos_id, eos_token_id=tokenizer.eos_id,
                attn_implementation="eager")
            roberta = RobertaModel(rc, add_pooling_layer=False)
        self.roberta = roberta
        width = roberta.config.hidden_size
        self.proj = torch.nn.Linear(width, cfg.out_dim) if cfg.out_dim else None

    @property
    def dim(self) -> int:
        return self.config.out_dim or self.roberta.config.hidden_size

    # ------------------------------------------------------------- windows
    def windows(self, ids: list[int]) -> list[tuple[list[int], list[float]]]:
        """``(input_ids, pooling weights)`` of each window of one text's ids."""
        content = self.config.window - 2
        starts = window_starts(len(ids), content, self.config.stride)
        cover = [0] * len(ids)
        for s in starts:
            for i in range(s, min(s + content, len(ids))):
                cover[i] += 1
        out = []
        for s in starts:
            seg = ids[s:s + content]
            w = [0.0] + [1.0 / cover[i] for i in range(s, s + len(seg))] + [0.0]
            if not seg:
                w[0] = 1.0  # empty text: pool the <s> vector
            out.append(([self.tokenizer.bos_id] + seg + [self.tokenizer.eos_id], w))
        return out

    def forward(self, texts, ids: list[list[int]] | None = None) -> torch.Tensor:
        """Embeddings ``[B, dim]`` with autograd (training); ``ids`` skips tokenisation."""
        ids = self.tokenizer.encode_batch(texts) if ids is None else ids
        wins, owner = [], []
        for b, seq in enumerate(ids):
            for win in self.windows(seq):
                wins.append(win)
                owner.append(b)
        dev, dtype = next(self.parameters()).device, next(self.parameters()).dtype
        pooled = torch.zeros(len(ids), self.roberta.config.hidden_size, device=dev, dtype=dtype)
        pad = self.tokenizer.pad_id
        for c in range(0, len(wins), self.config.batch_windows):
            chunk = wins[c:c + self.config.batch_windows]
            width = max(len(w[0]) for w in chunk)
            inp = torch.full((len(chunk), width), pad, dtype=torch.long)
            wts = torch.zeros(len(chunk), width, dtype=dtype)
            for r, (x, w) in enumerate(chunk):
                inp[r, :len(x)] = torch.tensor(x)
                wts[r, :len(w)] = torch.tensor(w)
            mask = (inp != pad).long()
            hidden = self.roberta(input_ids=inp.to(dev), attention_mask=mask.to(dev)).last_hidden_state
            summed = (hidden * wts.to(dev).unsqueeze(-1)).sum(1)
            idx = torch.tensor(owner[c:c + len(chunk)], device=dev)
            pooled = pooled.index_add(0, idx, summed)
        counts = torch.tensor([max(len(s), 1) for s in ids], dtype=pooled.dtype, device=dev)
        z = pooled / counts.unsqueeze(-1)
        if self.proj is not None:
            z = self.proj(z)
        return torch.nn.functional.normalize(z, dim=-1) if self.config.normalize else z

    @torch.no_grad()
    def encode(self, texts, batch_size: int = 32) -> torch.Tensor:
        """Inference embeddings ``[B, dim]`` float32 (eval mode, no grad), the same bits on every host.

        The forward pass runs in float64 and is rounded to float32 once at the end. In float32,
        torch's kernels differ by host (AVX2 / AVX-512 code paths, MKL's vendor dispatch) in the
        last bits, and the ranker's trees split exactly at training values of ``ẑ_T - z_0``, so
        a 3e-8 change of z_0 moved scores by up to 0.16 on an Intel host (docs/decisions.md).
        Host differences in float64 (~1e-16) vanish in the rounding, except with negligible odds.
        The float32 -> float64 -> float32 round trip of the weights is exact.
        """
        was, dtype = self.training, next(self.parameters()).dtype
        self.eval()
        self.double()
        try:
            texts = list(texts)
            parts = [self.forward(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)]
            return torch.cat(parts).float() if parts else torch.zeros(0, self.dim)
        finally:
            self.to(dtype)
            self.train(was)

    # --------------------------------------------------------------- files
    def save(self, directory) -> None:
        from safetensors.torch import save_file

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT, "version": VERSION, "encoder": asdict(self.config),
                "roberta": self.roberta.config.to_dict()}
        (d / "encoder.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(state, str(d / "model.safetensors"), metadata={"format": FORMAT})
        self.tokenizer.save(d / "tokenizer")

    @classmethod
    def load(cls, directory) -> "StateEncoder":
        from safetensors.torch import load_file
        from transformers import RobertaConfig, RobertaModel

        d = Path(directory)
        if not (d / "encoder.json").is_file():
            raise FileNotFoundError(f"{d}: not a saved StateEncoder (no encoder.json)")
        meta = json.loads((d / "encoder.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version", 0) > VERSION:
            raise ValueError(f"{d}: unsupported encoder format {meta.get('format')} v{meta.get('version')}")
        rc = RobertaConfig.from_dict(meta["roberta"])
        rc._attn_implementation = "eager"
        enc = cls(TirTokenizer.load(d / "tokenizer"), EncoderConfig.from_dict(meta["encoder"]),
                  roberta=RobertaModel(rc, add_pooling_layer=False))
        enc.load_state_dict(load_file(str(d / "model.safetensors")), strict=True)
        return enc.eval()

    @classmethod
    def from_codebert(cls, path, window: int | None = None, stride: int | None = None,
                      out_dim: int | None = None, normalize: bool = True) -> "StateEncoder":
        """RoBERTa weights + tokenizer from a local directory (e.g. ``microsoft/codebert-base``
        copied from a machine with internet). ``out_dim=None`` keeps the 768-d hidden states."""
        from transformers import RobertaModel

        d = Path(path)
        if not d.is_dir():
            raise FileNotFoundError(
                f"CodeBERT directory {str(d)!r} does not exist; copy a RoBERTa checkpoint "
                "(config.json, model.safetensors or pytorch_model.bin, vocab.json, merges.txt) there, "
                "or train the small encoder instead (cwm.model.contrastive.train_encoder)")
        if not (d / "config.json").is_file():
            raise FileNotFoundError(f"CodeBERT directory {str(d)!r} has no config.json")
        roberta = RobertaModel.from_pretrained(str(d), add_pooling_layer=False, local_files_only=True,
                                               attn_implementation="eager")
        maxw = roberta.config.max_position_embeddings - roberta.config.pad_token_id - 1
        win = min(window or maxw, maxw)
        cfg = EncoderConfig(hidden=roberta.config.hidden_size, layers=roberta.config.num_hidden_layers,
                            heads=roberta.config.num_attention_heads,
                            intermediate=roberta.config.intermediate_size, window=win,
                            stride=stride or max(1, (win - 2) * 3 // 4), out_dim=out_dim,
                            normalize=normalize, dropout=roberta.config.hidden_dropout_prob)
        return cls(TirTokenizer.from_roberta_files(d), cfg, roberta=roberta).eval()
