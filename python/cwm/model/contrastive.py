"""Contrastive training of the state encoder (NT-Xent / InfoNCE over workload groups).

A *group* is one workload (a task): its states at various prefixes of various
candidates. Each step samples ``groups_per_batch`` groups and two distinct states of
each; each view is renamed (:func:`cwm.model.augment.rename_identifiers`) with
probability ``p_rename`` and cropped to at most ``train_max_windows`` windows (a random
crop: cheaper steps and one more augmentation). The positive of a view is the other view
of its group; the negatives are the ``2G - 2`` views of the other groups (one pair per
group per batch, so no same-group negatives). Loss: symmetric NT-Xent at
``temperature``; AdamW with linear warm-up and cosine decay; gradient clipping at 1.

Determinism: python/numpy/torch seeds are set from ``seed``, the model is initialised
after seeding, sampling uses its own ``random.Random(seed)``, and
``torch.use_deterministic_algorithms(True)`` is on while training. The same seed and
data give the same weights when ``max_steps`` ends training; ``time_budget_s`` is a
safety stop whose step count depends on the machine speed.

Metrics (:func:`evaluate_encoder`, before and after training): ``retrieval_acc`` (the
nearest training state of a held-out state is in its group), ``retrieval_acc_renamed``
(the same with every query renamed), ``nn_margin`` (cosine to the nearest same-group
training state minus to the nearest other-group one, averaged), ``cos_same`` /
``cos_diff`` (mean cosine of held-out pairs in the same / different groups),
``rename_cos`` (a held-out text vs its renamed variant), and for the held-out matmul
peeling pairs of :func:`cwm.model.augment.peel_pairs` the cosine of 1024 vs 1023 and the
largest cosine of the 1024 text to other reference workloads (``..._other_max``).
Held-out states are a random ``holdout_frac`` of each group's distinct texts, so a
held-out state may have a near-twin (a neighbouring prefix) in training.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from cwm.model.augment import peel_pairs, rename_identifiers, tile_outer
from cwm.model.encoder import EncoderConfig, StateEncoder
from cwm.model.tokenizer import TirTokenizer

_OTHER_WORKLOADS = ("conv2d_64x56x56_3x3", "depthwise_conv2d_96x56x56_3x3",
                    "softmax_128x768", "layer_norm_128x768")


@dataclass
class ContrastiveConfig:
    seed: int = 0
    vocab_size: int = 4096
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    groups_per_batch: int = 8
    temperature: float = 0.1
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 10
    max_steps: int = 200
    time_budget_s: float | None = 300.0
    holdout_frac: float = 0.2
    p_rename: float = 0.8
    train_max_windows: int | None = 2
    eval_max_per_group: int = 12
    eval_before: bool = True
    eval_robustness: bool = True
    log_every: int = 10  # 0: silent
    tokenizer: TirTokenizer | None = None  # None: train one on the training texts


def split_groups(texts_by_group: dict, frac: float, seed: int) -> tuple[dict, dict]:
    """Distinct texts of each group, shuffled, a ``frac`` held out (none if fewer than 3)."""
    rng = random.Random(seed)
    train, held = {}, {}
    for g in sorted(texts_by_group):
        texts = list(dict.fromkeys(texts_by_group[g]))
        rng.shuffle(texts)
        k = max(1, round(frac * len(texts))) if len(texts) >= 3 and frac > 0 else 0
        train[g], held[g] = texts[k:], texts[:k]
    return train, held


def nt_xent(z: torch.Tensor, temperature: float) -> torch.Tensor:
    """Views ``2i`` and ``2i + 1`` are positives; every other row is a negative."""
    z = F.normalize(z, dim=-1)
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(len(z), dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.arange(len(z), device=z.device) ^ 1
    return F.cross_entropy(sim, target)


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).t()


def _spread(texts: list, k: int) -> list:
    if len(texts) <= k:
        return list(texts)
    return [texts[round(i * (len(texts) - 1) / (k - 1))] for i in range(k)] if k > 1 else texts[:1]


def _robustness_texts() -> list[tuple[str, str, str, list[str]]]:
    from cwm import workloads

    others = [workloads.get(n) for n in _OTHER_WORKLOADS]
    pairs = peel_pairs()
    plain = [m.script() for m in others]
    tiled = [tile_outer(m).script() for m in others]
    return [(label, a, b, tiled if label.endswith("tiled") else plain) for label, a, b in pairs]


def evaluate_encoder(enc: StateEncoder, train: dict, held: dict, seed: int = 0,
                     max_per_group: int = 12, robustness: bool = True) -> dict:
    """Retrieval / cosine / robustness metrics (see the module docstring)."""
    db = [(g, t) for g in sorted(train) for t in _spread(train[g], max_per_group)]
    qs = [(g, t) for g in sorted(held) for t in _spread(held[g], max_per_group)]
    if not qs:
        qs = db
    zdb = enc.encode([t for _, t in db])
    zq = enc.encode([t for _, t in qs])
    gq = np.array([g for g, _ in qs])
    gdb = np.array([g for g, _ in db])
    nn = _cos(zq, zdb).argmax(1).numpy()
    out = {"retrieval_acc": float(np.mean(gdb[nn] == gq)), "n_queries": len(qs)}
    cdb = _cos(zq, zdb).numpy()
    same_db = gdb[None, :] == gq[:, None]
    best_same = np.where(same_db, cdb, -np.inf).max(1)
    best_other = np.where(~same_db, cdb, -np.inf).max(1)
    ok = np.isfinite(best_same) & np.isfinite(best_other)
    out["nn_margin"] = float((best_same - best_other)[ok].mean()) if ok.any() else float("nan")
    cq = _cos(zq, zq).numpy()
    same = gq[:, None] == gq[None, :]
    off = ~np.eye(len(qs), dtype=bool)
    out["cos_same"] = float(cq[same & off].mean()) if (same & off).any() else float("nan")
    out["cos_diff"] = float(cq[~same].mean()) if (~same).any() else float("nan")
    if robustness:
        rng = random.Random(seed)
        sample = _spread([t for _, t in qs], 16)
        za = enc.encode(sample)
        zb = enc.encode([rename_identifiers(t, rng) for t in sample])
        out["rename_cos"] = float((F.normalize(za, dim=-1) * F.normalize(zb, dim=-1)).sum(-1).mean())
        zr = enc.encode([rename_identifiers(t, rng) for _, t in qs])
        out["retrieval_acc_renamed"] = float(np.mean(gdb[_cos(zr, zdb).argmax(1).numpy()] == gq))
        for label, a, b, others in _robustness_texts():
            z = enc.encode([a, b] + others)
            c = _cos(z[:1], z)[0]
            out[f"{label}_cos"] = float(c[1])
            out[f"{label}_other_max"] = float(c[2:].max())
            out[f"{label}_other_mean"] = float(c[2:].mean())
    return out


def warmup_cosine(warmup_steps: int, max_steps: int):
    """The learning-rate factor of a step: linear warm-up, then cosine decay to 0 at ``max_steps``."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        frac = (step - warmup_steps) / max(1, max_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))

    return factor


def _crop(ids: list, cfg: EncoderConfig, max_windows: int | None, rng: random.Random) -> list:
    if not max_windows:
        return ids
    span = cfg.window - 2 + (max_windows - 1) * cfg.stride
    if len(ids) <= span:
        return ids
    start = rng.randrange(len(ids) - span + 1)
    return ids[start:start + span]


def train_encoder(texts_by_group: dict, cfg: ContrastiveConfig | None = None):
    """Train a :class:`StateEncoder` on ``{group: [TIR text, ...]}``; returns ``(encoder, metrics)``."""
    cfg = cfg or ContrastiveConfig()
    train, held = split_groups(texts_by_group, cfg.holdout_frac, cfg.seed)
    groups = [g for g in sorted(train) if train[g]]
    if len(groups) < 2:
        raise ValueError(f"contrastive training needs at least 2 non-empty groups, got {len(groups)}")
    prev_det = (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        tok = cfg.tokenizer or TirTokenizer.train([t for g in groups for t in train[g]], cfg.vocab_size)
        enc = StateEncoder(tok, cfg.encoder)
        metrics = {"groups": len(groups), "train_texts": sum(len(train[g]) for g in groups),
                   "heldout_texts": sum(len(v) for v in held.values()), "loss": []}

        def evaluate():
            return evaluate_encoder(enc, {g: train[g] for g in groups}, held, cfg.seed,
                                    cfg.eval_max_per_group, cfg.eval_robustness)

        if cfg.eval_before:
            metrics["before"] = evaluate()
        cache = dict(zip((t for g in groups for t in train[g]),
                         tok.encode_batch([t for g in groups for t in train[g]])))
        opt = torch.optim.AdamW(enc.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.warmup_steps, cfg.max_steps))
        rng = random.Random(cfg.seed + 1)
        enc.train()
        t0, stopped = time.monotonic(), "steps"
        for step in range(cfg.max_steps):
            if cfg.time_budget_s is not None and time.monotonic() - t0 > cfg.time_budget_s:
                stopped = "time"
                break
            ids = []
            for g in rng.sample(groups, min(cfg.groups_per_batch, len(groups))):
                pair = rng.sample(train[g], 2) if len(train[g]) > 1 else train[g] * 2
                for i, text in enumerate(pair):
                    force = i == 1 and pair[0] == pair[1]
                    if force or rng.random() < cfg.p_rename:
                        ids.append(tok.encode(rename_identifiers(text, rng)))
                    else:
                        ids.append(cache[text])
            ids = [_crop(x, cfg.encoder, cfg.train_max_windows, rng) for x in ids]
            loss = nt_xent(enc(None, ids=ids), cfg.temperature)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(enc.parameters(), 1.0)
            opt.step()
            sched.step()
            value = loss.item()
            metrics["loss"].append(value)
            if cfg.log_every and (step % cfg.log_every == 0 or step == cfg.max_steps - 1):
                print(f"step {step:4d}  loss {value:.4f}  lr {sched.get_last_lr()[0]:.2e}  "
                      f"{time.monotonic() - t0:6.1f}s", flush=True)
        metrics.update(steps=len(metrics["loss"]), train_seconds=time.monotonic() - t0, stopped_by=stopped)
        enc.eval()
        metrics["after"] = evaluate()
        return enc, metrics
    finally:
        torch.use_deterministic_algorithms(prev_det[0], warn_only=prev_det[1])
