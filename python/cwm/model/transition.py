"""TransH transition model: ``z_t = F(z_{t-1}, a_t) = z - (w_a . z) w_a + d_a``.

Each action ``a`` (one row of the arrays made by :mod:`cwm.actions.featurize`) is embedded
as a *sum* of per-column embeddings plus a linear map of its log-scaled numbers, passed
through one hidden layer that emits the hyperplane normal ``w_a`` (normalised to unit
length) and the translation ``d_a``. The architecture is kept to lookups, one matrix
product per layer, ReLU and a normalisation so that the C++ core can evaluate the same
weights exactly (issue #5); :func:`rollout_numpy` is the NumPy reference of that path.

Padded steps (``kind == <pad>``) leave the state unchanged.

``state_dependent`` (default off) lets the action parameters read the state as well: the hidden
layer is ``relu(embed(a_t) + S z_{t-1})`` (``S`` is ``[hidden, dim]``, no bias). A tile factor
only means something against the extent it splits, and that extent lives in the state; on the
unmeasured corpus this form explains half the within-task variance of the final programs'
per-store features where the plain form explains 9% (docs/world_model_breadth.md, decision 57).
``(w, d)`` then change with the state, so the native core recomputes the output layer at every
step instead of caching ``(w, d)`` per distinct action row; it still caches ``embed(a)``.

``normalize_state`` (default on) puts each new state back on the unit sphere:
``z_t = n(z - (w.z) w + d)`` with ``n(x) = x / |x|``. The encoder's states are unit vectors,
and TransH keeps entity embeddings in the unit ball for the same reason; without it, the
translations of a 40-60 action rollout accumulate and training diverges (measured: rollout
distance 11.4 vs 0.19 for "no transition" on early data).

``translation_bound`` (default 0: none) caps the length of each translation:
``d <- d * b / max(b, |d|)``. The shipped transition has no cap, and a tenth of its translations
are longer than 37 against the unit state: each resets the state to its own direction, and the
normalisation leaves what came before at rounding (docs/decisions.md §96, ``bench/rollout_memory.py``).
With ``|d| <= b`` a step scales what it keeps of the state (all but the component along ``w``)
by at least ``1 / (1 + b)``, so ``z_0`` and the early actions' numbers reach ``ẑ_T`` (a
transition that remembers, issue #12).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from cwm.actions.featurize import COL, NUM_NUMBERS
from cwm.actions.vocab import KINDS

#: hashed columns -> their own embedding table of ``hash_buckets`` rows (index = hash % buckets)
HASH_COLUMNS = ("op0_hash", "op1_hash", "operands_hash", "op0_base_hash", "str0_hash", "str1_hash")
#: small integer columns -> embedding of ``clip(value + 1, 0, small_vocab - 1)`` (-1 -> 0)
SMALL_COLUMNS = ("phase", "n_operands", "op0_axis", "op0_part", "op0_depth", "n_numbers", "n_strings")


@dataclass(frozen=True)
class TransitionConfig:
    dim: int = 128  # latent state size (= encoder output size)
    hidden: int = 256
    hash_buckets: int = 1024
    small_vocab: int = 32
    normalize_state: bool = True
    state_dependent: bool = False  # hidden layer reads relu(embed(a_t) + S z_{t-1})
    translation_bound: float = 0.0  # > 0: each translation's length is capped at this (0: no cap)

    def to_dict(self) -> dict:
        return asdict(self)


def log_scale(numbers):
    """``sign(x) * log2(1 + |x|)``: tile factors and extents span 1..10^4."""
    return np.sign(numbers) * np.log2(1.0 + np.abs(numbers))


def action_indices(ints: np.ndarray, cfg: TransitionConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embedding indices of each action: kind ``[...]``, hashed ``[..., 6]``, small ``[..., 7]``."""
    kind = ints[..., COL["kind"]].astype(np.int64)
    hashed = np.stack([ints[..., COL[c]].astype(np.int64) % cfg.hash_buckets for c in HASH_COLUMNS], -1)
    small = np.stack([np.clip(ints[..., COL[c]].astype(np.int64) + 1, 0, cfg.small_vocab - 1)
                      for c in SMALL_COLUMNS], -1)
    return kind, hashed, small


def _torch_module():
    import torch
    from torch import nn

    class ActionEmbedding(nn.Module):
        """Sum of per-column embeddings of an action row plus a linear map of its log numbers."""

        def __init__(self, dim: int, hash_buckets: int, small_vocab: int):
            super().__init__()
            self.kind = nn.Embedding(len(KINDS), dim)
            self.hashed = nn.ModuleList(nn.Embedding(hash_buckets, dim) for _ in HASH_COLUMNS)
            self.small = nn.ModuleList(nn.Embedding(small_vocab, dim) for _ in SMALL_COLUMNS)
            self.numbers = nn.Linear(NUM_NUMBERS, dim)

        def forward(self, kind, hashed, small, numbers):
            x = self.kind(kind) + self.numbers(numbers)
            for j, emb in enumerate(self.hashed):
                x = x + emb(hashed[..., j])
            for j, emb in enumerate(self.small):
                x = x + emb(small[..., j])
            return x

    class TransH(nn.Module):
        def __init__(self, cfg: TransitionConfig):
            super().__init__()
            self.cfg = cfg
            self.embed = ActionEmbedding(cfg.hidden, cfg.hash_buckets, cfg.small_vocab)
            self.out = nn.Linear(cfg.hidden, 2 * cfg.dim)
            if cfg.state_dependent:  # starts at 0: the plain form's rollout until trained
                self.state = nn.Linear(cfg.dim, cfg.hidden, bias=False)
                nn.init.zeros_(self.state.weight)
            with torch.no_grad():  # start with no translation (d = 0); normals stay random
                self.out.weight[cfg.dim:].zero_()
                self.out.bias.zero_()

        def params_of_hidden(self, x):
            """``(w, d)`` from the hidden pre-activation ``x``; ``w`` has unit norm."""
            w_raw, d = self.out(torch.relu(x)).split(self.cfg.dim, dim=-1)
            w = w_raw / w_raw.norm(dim=-1, keepdim=True).clamp_min(1e-6)
            if self.cfg.translation_bound > 0:
                bound = self.cfg.translation_bound
                d = d * (bound / d.norm(dim=-1, keepdim=True).clamp_min(bound))
            return w, d

        def step(self, z, w, d):
            z = z - (w * z).sum(-1, keepdim=True) * w + d
            if self.cfg.normalize_state:
                z = z / z.norm(dim=-1, keepdim=True).clamp_min(1e-6)
            return z

        def forward(self, z0, kind, hashed, small, numbers, return_all: bool = False):
            """Roll ``z0 [B, D]`` through actions ``[B, T, ...]``; ``ẑ_T`` or all ``[B, T+1, D]``."""
            x = self.embed(kind, hashed, small, numbers)
            if not self.cfg.state_dependent:
                w, d = self.params_of_hidden(x)
            live = (kind != 0).unsqueeze(-1).to(z0.dtype)  # <pad> keeps the state
            z, out = z0, [z0]
            for t in range(kind.shape[1]):
                wt, dt = self.params_of_hidden(x[:, t] + self.state(z)) if self.cfg.state_dependent else (w[:, t], d[:, t])
                z = live[:, t] * self.step(z, wt, dt) + (1 - live[:, t]) * z
                if return_all:
                    out.append(z)
            return torch.stack(out, 1) if return_all else z

    return ActionEmbedding, TransH


_CLASSES = None


def _classes():
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _torch_module()
    return _CLASSES


def ActionEmbedding(dim: int, hash_buckets: int, small_vocab: int):  # noqa: N802 (torch imported lazily)
    """The action-row embedding shared by TransH and the sequence baseline (a ``torch.nn.Module``)."""
    return _classes()[0](dim, hash_buckets, small_vocab)


def TransH(cfg: TransitionConfig = TransitionConfig()):  # noqa: N802 (a factory: torch imported lazily)
    """The TransH transition model as a ``torch.nn.Module``."""
    return _classes()[1](cfg)


def tensors(fb, cfg: TransitionConfig):
    """Torch inputs ``(kind, hashed, small, numbers)`` from a :class:`FeatureBatch`."""
    import torch

    kind, hashed, small = action_indices(fb.ints, cfg)
    return (torch.from_numpy(kind), torch.from_numpy(hashed), torch.from_numpy(small),
            torch.from_numpy(log_scale(fb.numbers).astype(np.float32)))


def float32_state(module) -> dict[str, np.ndarray]:
    """A torch module's state dict as float32 NumPy arrays."""
    return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in module.state_dict().items()}


def action_embedding_weights(sd: dict, prefix: str) -> dict[str, np.ndarray]:
    """The native core's weights of the :class:`ActionEmbedding` at ``prefix`` of a
    :func:`float32_state` (``kind``, ``hashed``, ``small``, ``numbers_w``, ``numbers_b``)."""
    return {
        "kind": sd[f"{prefix}.kind.weight"],
        "hashed": np.stack([sd[f"{prefix}.hashed.{j}.weight"] for j in range(len(HASH_COLUMNS))]),
        "small": np.stack([sd[f"{prefix}.small.{j}.weight"] for j in range(len(SMALL_COLUMNS))]),
        "numbers_w": sd[f"{prefix}.numbers.weight"], "numbers_b": sd[f"{prefix}.numbers.bias"],
    }


def numpy_weights(model) -> dict[str, np.ndarray]:
    """The weights the native rollout needs, as float32 arrays (names are the contract)."""
    sd = float32_state(model)
    return {
        **action_embedding_weights(sd, "embed"),
        "out_w": sd["out.weight"], "out_b": sd["out.bias"],
        **({"state_w": sd["state.weight"]} if "state.weight" in sd else {}),
    }


def with_state_read(model):
    """A state-dependent TransH holding ``model``'s weights and ``S = 0``: the same rollout as
    ``model`` until it is trained (the starting point of a corpus run from a plain transition)."""
    from dataclasses import replace

    if model.cfg.state_dependent:
        return model
    out = TransH(replace(model.cfg, state_dependent=True))
    missing, unexpected = out.load_state_dict(model.state_dict(), strict=False)
    if unexpected or missing != ["state.weight"]:
        raise ValueError(f"not a plain TransH: missing {missing}, unexpected {unexpected}")
    return out


def hidden_numpy(ints: np.ndarray, numbers: np.ndarray, weights: dict, cfg: TransitionConfig):
    """``(kind, x)``: each action's kind and its :class:`ActionEmbedding` (the hidden
    pre-activation ``x``, float64) of a padded batch; NumPy reference."""
    kind, hashed, small = action_indices(ints, cfg)
    x = weights["kind"][kind].astype(np.float64)
    x = x + log_scale(numbers).astype(np.float32) @ weights["numbers_w"].T.astype(np.float64) + weights["numbers_b"]
    for j in range(hashed.shape[-1]):
        x = x + weights["hashed"][j][hashed[..., j]]
    for j in range(small.shape[-1]):
        x = x + weights["small"][j][small[..., j]]
    return kind, x


def params_numpy(hidden: np.ndarray, weights: dict, cfg: TransitionConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(w, d)`` of :meth:`TransH.params_of_hidden` (unit normals, translations); NumPy reference."""
    y = np.maximum(hidden, 0) @ np.asarray(weights["out_w"], np.float64).T + np.asarray(weights["out_b"], np.float64)
    w_raw, d = y[..., :cfg.dim], y[..., cfg.dim:]
    if cfg.translation_bound > 0:
        d = d * (cfg.translation_bound / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), cfg.translation_bound))
    return w_raw / np.maximum(np.linalg.norm(w_raw, axis=-1, keepdims=True), 1e-6), d


def rollout_numpy(z0: np.ndarray, ints: np.ndarray, numbers: np.ndarray, weights: dict, cfg: TransitionConfig,
                  return_all: bool = False) -> np.ndarray:
    """NumPy reference of :meth:`TransH.forward` (float64 inside) - the native core's spec."""
    kind, x = hidden_numpy(ints, numbers, weights, cfg)
    out64 = {k: np.asarray(weights[k], np.float64) for k in ("out_w", "out_b")}  # once, not every step

    def params(hidden):
        return params_numpy(hidden, out64, cfg)

    if cfg.state_dependent:
        state_w = weights["state_w"].T.astype(np.float64)  # [dim, hidden]
    else:
        w, d = params(x)
    z = z0.astype(np.float64)
    out = [z]
    for t in range(ints.shape[1]):
        live = (kind[:, t] != 0)[:, None]
        wt, dt = params(x[:, t] + z @ state_w) if cfg.state_dependent else (w[:, t], d[:, t])
        step = z - (wt * z).sum(-1, keepdims=True) * wt + dt
        if cfg.normalize_state:
            step = step / np.maximum(np.linalg.norm(step, axis=-1, keepdims=True), 1e-6)
        z = np.where(live, step, z)
        if return_all:
            out.append(z)
    return np.stack(out, 1) if return_all else z
