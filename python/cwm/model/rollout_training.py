"""Training the TransH transition with a multi-step rollout loss against a frozen encoder.

For each training trajectory (one measured candidate) we replay its trace, encode the states
at ``steps_per_trajectory`` sampled prefix lengths (always including the final state) with the
frozen encoder ``E``, and train ``F`` so that the rollout from ``z_0 = E(s_0)`` lands on them:

``loss = mean_t ||ẑ_t - E(s_t)||^2 + λ · mean_t max(0, m + ||ẑ_t - E(s_t)|| - ||ẑ_t - E(s⁻)||)``

with negatives ``s⁻`` = the state of another candidate of the same task after the same number
of actions (a hard negative: same workload, other decisions) when it differs, else a state of
another task. States are encoded once (cached by text) - the encoder is the expensive part.
"""
from __future__ import annotations

import hashlib
import random
import time
from dataclasses import asdict, dataclass

import numpy as np

from cwm.model.transition import TransitionConfig


@dataclass(frozen=True)
class RolloutConfig:
    steps_per_trajectory: int = 4
    margin: float = 0.5
    rank_weight: float = 0.5
    lr: float = 3e-3
    epochs: int = 30
    batch_size: int = 64
    seed: int = 0
    time_budget_s: float = 1800.0
    clip_norm: float = 1.0
    #: "random": PyTorch's default init of the normals; "null_space": start every normal on the
    #: direction along which the training states vary least (so F starts as the identity) and
    #: let training move each action's normal away from it where that helps
    normal_init: str = "random"
    #: the ranking term's margin is ``margin`` if >= 0, else ``|margin|`` times the median
    #: target-to-negative distance of the training data (states of one task lie close together)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RolloutData:
    """Everything training needs, as arrays: one row per trajectory."""

    ints: np.ndarray  # [N, T, C]
    numbers: np.ndarray  # [N, T, K]
    lengths: np.ndarray  # [N]
    z0: np.ndarray  # [N, D]
    steps: np.ndarray  # [N, S] prefix lengths (in actions) with a target
    targets: np.ndarray  # [N, S, D] E(s_step)
    negatives: np.ndarray  # [N, S, D]
    task: np.ndarray  # [N] task index


def build_rollout_data(trajectories, encode_fn, cfg: RolloutConfig) -> RolloutData:
    """Replay, pick steps, encode (cached by text), pick negatives."""
    from cwm.actions import featurize_batch

    rng = random.Random(cfg.seed)
    cache: dict[str, np.ndarray] = {}
    texts_needed, picks = [], []
    for traj in trajectories:
        states = traj.states()
        n = len(states) - 1
        chosen = sorted(set(rng.sample(range(1, n + 1), min(cfg.steps_per_trajectory - 1, n))) | {n}) if n else [0]
        chosen = (chosen + [chosen[-1]] * cfg.steps_per_trajectory)[:cfg.steps_per_trajectory]
        texts = [states[0].script()] + [states[k].script() for k in chosen]
        picks.append((traj, chosen, texts))
        texts_needed.extend(texts)
    _encode_cached(texts_needed, encode_fn, cache)

    fb = featurize_batch([p[0].trace for p in picks])
    tasks = sorted({p[0].task for p in picks})
    task_idx = np.array([tasks.index(p[0].task) for p in picks])
    z0 = np.stack([cache[_h(p[2][0])] for p in picks])
    targets = np.stack([[cache[_h(t)] for t in p[2][1:]] for p in picks])
    steps = np.array([p[1] for p in picks])
    negatives = _negatives(picks, cache, task_idx, rng)
    return RolloutData(fb.ints, fb.numbers, fb.lengths, z0.astype(np.float32), steps, targets.astype(np.float32),
                       negatives.astype(np.float32), task_idx)


def _h(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _encode_cached(texts, encode_fn, cache, chunk: int = 32) -> None:
    todo = list({_h(t): t for t in texts if _h(t) not in cache}.items())
    for i in range(0, len(todo), chunk):
        part = todo[i:i + chunk]
        emb = np.asarray(encode_fn([t for _, t in part]), np.float32)
        for (h, _), e in zip(part, emb):
            cache[h] = e


def _negatives(picks, cache, task_idx, rng) -> np.ndarray:
    by_task: dict[int, list[int]] = {}
    for i, t in enumerate(task_idx):
        by_task.setdefault(int(t), []).append(i)
    out = []
    for i, (traj, chosen, texts) in enumerate(picks):
        row = []
        for s, text in enumerate(texts[1:]):
            same = [j for j in by_task[int(task_idx[i])] if j != i and picks[j][2][1 + s] != text]
            others = [j for j in range(len(picks)) if task_idx[j] != task_idx[i]]
            j = rng.choice(same) if same else (rng.choice(others) if others else i)
            row.append(cache[_h(picks[j][2][1 + s])])
        out.append(row)
    return np.asarray(out)


def train_transition(data: RolloutData, tcfg: TransitionConfig, cfg: RolloutConfig, log=print):
    """Train a :class:`TransH` on ``data``; returns ``(model, history)``."""
    import torch

    from cwm.model.transition import TransH, action_indices, log_scale

    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)
    model = TransH(tcfg)
    if cfg.normal_init == "null_space":
        _null_space_init(model, data, tcfg)
    elif cfg.normal_init != "random":
        raise ValueError(f"normal_init must be 'random' or 'null_space', got {cfg.normal_init!r}")
    margin = _margin(cfg, data)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    kind, hashed, small = (torch.from_numpy(a) for a in action_indices(data.ints, tcfg))
    nums = torch.from_numpy(log_scale(data.numbers).astype(np.float32))
    z0, tgt, neg = (torch.from_numpy(a) for a in (data.z0, data.targets, data.negatives))
    steps = torch.from_numpy(data.steps).long()
    n, history, start = len(z0), [], time.time()
    gen = torch.Generator().manual_seed(cfg.seed)
    for epoch in range(cfg.epochs):
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for b in range(0, n, cfg.batch_size):
            idx = perm[b:b + cfg.batch_size]
            all_z = model(z0[idx], kind[idx], hashed[idx], small[idx], nums[idx], return_all=True)
            pred = all_z.gather(1, steps[idx].unsqueeze(-1).expand(-1, -1, all_z.shape[-1]))
            d_pos = (pred - tgt[idx]).norm(dim=-1)
            d_neg = (pred - neg[idx]).norm(dim=-1)
            loss = (d_pos ** 2).mean() + cfg.rank_weight * torch.relu(margin + d_pos - d_neg).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)  # long rollouts: gradients compound
            opt.step()
            total += float(loss.detach()) * len(idx)
        history.append(total / n)
        log(f"epoch {epoch}: rollout loss {history[-1]:.4f}")
        if time.time() - start > cfg.time_budget_s:
            break
    return model.eval(), history


def _margin(cfg: RolloutConfig, data: RolloutData) -> float:
    if cfg.margin >= 0:
        return float(cfg.margin)
    return float(-cfg.margin * np.median(np.linalg.norm(data.targets - data.negatives, axis=-1)))


def _null_space_init(model, data: RolloutData, tcfg: TransitionConfig) -> None:
    """Normals start at the least-variance direction ``u`` of the states (``w·z ≈ 0``: F ≈ id)."""
    import torch

    states = np.concatenate([data.z0, data.targets.reshape(-1, data.targets.shape[-1])]).astype(np.float64)
    u = np.linalg.svd(states, full_matrices=False)[2][-1]  # right singular vector, smallest value
    with torch.no_grad():
        model.out.weight[:tcfg.dim].mul_(0.1)
        model.out.bias[:tcfg.dim].copy_(torch.from_numpy(u.astype(np.float32)) * 4.0)


def rollout_error(model, data: RolloutData, tcfg: TransitionConfig) -> dict:
    """Mean distance of predicted states to targets, and of ``z_0`` (no transition) to them."""
    import torch

    from cwm.model.transition import action_indices, log_scale

    kind, hashed, small = (torch.from_numpy(a) for a in action_indices(data.ints, tcfg))
    nums = torch.from_numpy(log_scale(data.numbers).astype(np.float32))
    with torch.no_grad():
        all_z = model(torch.from_numpy(data.z0), kind, hashed, small, nums, return_all=True).numpy()
    pred = np.take_along_axis(all_z, data.steps[..., None], 1)
    d_pos = np.linalg.norm(pred - data.targets, axis=-1)
    d_neg = np.linalg.norm(pred - data.negatives, axis=-1)
    d_id = np.linalg.norm(data.z0[:, None] - data.targets, axis=-1)
    return {"state_distance": float(d_pos.mean()), "identity_distance": float(d_id.mean()),
            "closer_than_negative": float((d_pos < d_neg).mean())}
