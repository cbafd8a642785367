"""Byte-level BPE tokenizer for TensorIR (TVMScript) text.

Decisions
---------
* **Byte-level BPE, RoBERTa special tokens.** The model is the RoBERTa/CodeBERT
  tokenizer recipe: GPT-2 byte-level pre-tokenisation (every byte is in the base
  alphabet, so no text is ever out of vocabulary) and ``<s> <pad> </s> <unk> <mask>``
  at ids 0..4 as in RoBERTa. ``vocab_size`` (default 4096) is an upper bound: a small
  corpus may run out of pairs to merge before reaching it.
* **Pre-tokenisation for TIR** (replaces GPT-2's regex, then byte-level): runs of
  letters and ``_`` stay one piece (GPT-2 would cut ``x_sum_rf`` at every ``_``, so BPE
  could never learn ``v_ax0``-style names; this gives ~25% fewer tokens on TIR), and
  **digits are split one by one**: extents 1024 and 1023 then differ in one token out
  of four instead of being two unrelated whole-number tokens (robustness to odd
  extents), and no vocabulary is spent on the thousands of constants TIR holds.
* **Normalisation** (:func:`normalize_tir`, applied by :meth:`TirTokenizer.encode_batch`):
  comment lines are dropped (the ``# from tvm.script import ...`` header and the
  ``# with T.sblock("root"):`` marker carry no information), blank lines are dropped,
  the leading indentation becomes one space per nesting level (TVMScript prints four
  spaces per level; the depth is kept because nesting *is* the loop structure), and
  other runs of spaces/tabs collapse to one space. Identifiers and numbers are left
  alone: renaming robustness is learnt from augmentation (:mod:`cwm.model.augment`).
* **No special tokens are added by** :meth:`encode_batch`; the encoder wraps every
  window in ``<s> ... </s>`` itself.
* **Determinism.** ``tokenizers``' BPE trainer breaks count ties by pair id, so the
  same texts in the same order give the same ``tokenizer.json`` (checked by the tests);
  callers pass texts in a fixed order.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
_CONFIG = "tir_tokenizer.json"
_TOKENIZER = "tokenizer.json"
_WS = re.compile(r"[ \t]+")


def normalize_tir(text: str, indent: int = 4) -> str:
    """Drop comments/blank lines, one space per indentation level, collapse whitespace."""
    out = []
    for line in text.splitlines():
        body = line.lstrip(" \t")
        if not body or body.startswith("#"):
            continue
        depth = (len(line) - len(body)) // indent
        out.append(" " * depth + _WS.sub(" ", body.rstrip()))
    return "\n".join(out)


def _pre_tokenizer(split_digits: bool | None):
    """TIR: identifier-aware split + byte-level; ``None``: plain GPT-2/RoBERTa byte-level."""
    from tokenizers import Regex
    from tokenizers import pre_tokenizers as pt

    if split_digits is None:
        return pt.ByteLevel(add_prefix_space=False, use_regex=True)
    digits = "[0-9]" if split_digits else "[0-9]+"
    pattern = rf" ?[A-Za-z_]+| ?{digits}| ?[^\sA-Za-z_0-9]+|\s+(?!\S)|\s+"
    return pt.Sequence([pt.Split(Regex(pattern), behavior="isolated"),
                        pt.ByteLevel(add_prefix_space=False, use_regex=False)])


class TirTokenizer:
    """A ``tokenizers.Tokenizer`` plus the TIR normalisation; ids never include specials."""

    def __init__(self, tokenizer, normalize: bool = True, split_digits: bool | None = True):
        self.tokenizer = tokenizer
        self.normalize = normalize
        self.split_digits = split_digits
        ids = {t: tokenizer.token_to_id(t) for t in SPECIAL_TOKENS}
        missing = [t for t, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"tokenizer lacks the special tokens {missing}")
        self.bos_id, self.pad_id, self.eos_id = ids["<s>"], ids["<pad>"], ids["</s>"]
        self.unk_id, self.mask_id = ids["<unk>"], ids["<mask>"]

    # ------------------------------------------------------------------ build
    @classmethod
    def train(cls, texts, vocab_size: int = 4096, min_frequency: int = 2,
              normalize: bool = True, split_digits: bool = True) -> "TirTokenizer":
        """Train on ``texts`` (an iterable of TIR strings, used in the given order)."""
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = _pre_tokenizer(split_digits)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        corpus = [normalize_tir(t) if normalize else t for t in texts]
        tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
        return cls(tok, normalize=normalize, split_digits=split_digits)

    @classmethod
    def from_roberta_files(cls, path, normalize: bool = True) -> "TirTokenizer":
        """A RoBERTa/CodeBERT tokenizer from ``vocab.json`` + ``merges.txt`` (or ``tokenizer.json``).

        Its own pre-tokenisation is kept (no digit splitting: its merges were learnt without).
        """
        from tokenizers import Tokenizer, decoders, models

        path = Path(path)
        if (path / _TOKENIZER).is_file():
            tok = Tokenizer.from_file(str(path / _TOKENIZER))
            tok.post_processor = None
            tok.no_padding()
            tok.no_truncation()
        else:
            vocab, merges = path / "vocab.json", path / "merges.txt"
            missing = [str(p) for p in (vocab, merges) if not p.is_file()]
            if missing:
                raise FileNotFoundError(f"RoBERTa tokenizer files missing: {missing}")
            tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges), unk_token="<unk>"))
            tok.pre_tokenizer = _pre_tokenizer(None)
            tok.decoder = decoders.ByteLevel()
        return cls(tok, normalize=normalize, split_digits=None)

    # ------------------------------------------------------------------- use
    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def prepare(self, text: str) -> str:
        return normalize_tir(text) if self.normalize else text

    def encode_batch(self, texts) -> list[list[int]]:
        """Token ids of each text (normalised first if configured), without special tokens."""
        encs = self.tokenizer.encode_batch([self.prepare(t) for t in texts], add_special_tokens=False)
        return [e.ids for e in encs]

    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0]

    def decode(self, ids) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # ----------------------------------------------------------------- files
    def save(self, directory) -> None:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save(str(d / _TOKENIZER))
        cfg = {"normalize": self.normalize, "split_digits": self.split_digits}
        (d / _CONFIG).write_text(json.dumps(cfg, indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, directory) -> "TirTokenizer":
        from tokenizers import Tokenizer

        d = Path(directory)
        if not (d / _TOKENIZER).is_file():
            raise FileNotFoundError(f"no {_TOKENIZER} in {d}")
        cfg = json.loads((d / _CONFIG).read_text()) if (d / _CONFIG).is_file() else {}
        return cls(Tokenizer.from_file(str(d / _TOKENIZER)), **cfg)
