"""Training the TransH transition with the ranker's signal in its loss (issue #12).

The shipped transition was trained to land on encoder states of 63 workloads; what it rolls
out adds nothing the ranker can use over ``E(s_0)`` (decision 52). Here the same TransH form
(so the C++ core evaluates it unchanged) is fine-tuned on the *measured* records of every
training root (the zoo's tasks and the generated breadth workloads) so that the rolled-out
state orders a task's candidates:

* each step takes a group of up to ``group_size`` candidates of one task, rolls them out from
  the task's ``z_0`` and reads a score off the displacement ``ẑ_T - z_0``;
* ``readout="axis"``: the score is ``scale · (ẑ_T - z_0)[axis]`` (a learned scalar ``scale``), so
  the ranker's existing column ``dz{axis}`` carries it and nothing about the model format
  changes; ``"linear"``: a learned direction (the ranker then sees it spread over every column);
* the loss is the pairwise logistic loss of :mod:`cwm.model.pair_loss` within the group, plus
  ``anchor_weight · ||ẑ_T - ẑ_T^init||²`` (summed over the latent, averaged over candidates),
  which keeps what the initial transition's rollout carried (its state matching) while the
  ranking direction is learned.

Scores come from nothing but the candidate's own actions and its task's ``z_0``: a rollout,
no replay (DESIGN.md §5). Deterministic for a seed as long as ``epochs``, not the wall-clock
``time_budget_s``, ends training.
"""
from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

READOUTS = ("axis", "linear")


@dataclass(frozen=True)
class RankTransitionConfig:
    epochs: int = 6
    lr: float = 1e-3
    group_size: int = 64
    readout: str = "axis"
    axis: int = 0
    anchor_weight: float = 1.0
    loss: str = "pairwise"  # see cwm.model.pair_loss
    seed: int = 0
    threads: int = 2
    time_budget_s: float = 900.0
    clip_norm: float = 1.0
    #: k > 1: the ranker's training rows get *out-of-fold* rollouts (k transitions, each trained
    #: without a k-th of the tasks, roll out that k-th), so the ranker learns how far to trust the
    #: rollout on tasks the transition never saw; 0: the rows get the final transition's rollouts
    cross_fit: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def _task_tensors(task, tcfg):
    """Torch inputs of a task's candidates, plus its valid lengths and latencies."""
    from cwm.model.transition import tensors

    kind, hashed, small, numbers = tensors(task["fb"], tcfg)
    return (kind, hashed, small, numbers), np.asarray(task["fb"].lengths, np.int64), np.asarray(task["lat"], np.float64)


def _rows(arrays, lengths, idx):
    """Rows ``idx`` trimmed to their longest valid length (padding keeps the state, so this only saves time)."""
    import torch

    t = max(int(lengths[idx].max()), 1)
    sel = torch.from_numpy(np.asarray(idx))
    return tuple(a[sel, :t] for a in arrays)


def train_rank_transition(transition, tasks: list[dict], cfg: RankTransitionConfig = RankTransitionConfig(),
                          log=None):
    """Fine-tune a copy of ``transition`` (a :class:`~cwm.model.transition.TransH`) on ``tasks``
    (dicts with ``z0 [D]``, ``fb`` a FeatureBatch and ``lat [N]``); returns ``(model, history)``."""
    import torch

    from cwm.model.pair_loss import pair_loss

    if cfg.readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, not {cfg.readout!r}")
    tcfg = transition.cfg
    if not 0 <= cfg.axis < tcfg.dim:
        raise ValueError(f"axis {cfg.axis} is outside the latent (dim {tcfg.dim})")
    usable = [t for t in tasks if len(t["lat"]) >= 2 and np.isfinite(np.asarray(t["lat"], np.float64)).sum() >= 1]
    if not usable:
        raise ValueError("no task with at least two candidates and one measured latency")
    prev = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            rng = np.random.default_rng(cfg.seed)
            model = copy.deepcopy(transition).train()
            data = []
            with torch.no_grad():
                for t in usable:
                    arrays, lengths, lat = _task_tensors(t, tcfg)
                    z0 = torch.from_numpy(np.repeat(np.asarray(t["z0"], np.float32)[None], len(lat), 0))
                    data.append((arrays, lengths, lat, z0, transition(z0, *arrays) if cfg.anchor_weight else None))
            head = torch.nn.Linear(tcfg.dim, 1, bias=False) if cfg.readout == "linear" else None
            scale = torch.nn.Parameter(torch.tensor(10.0))
            params = list(model.parameters()) + [scale] + (list(head.parameters()) if head else [])
            opt = torch.optim.Adam(params, lr=cfg.lr)
            history, start, out_of_time = [], time.perf_counter(), False
            for epoch in range(cfg.epochs):
                groups = []
                for ti, (_, _, lat, _, _) in enumerate(data):
                    perm = rng.permutation(len(lat))
                    n_groups = max(1, round(len(lat) / cfg.group_size))
                    groups += [(ti, g) for g in np.array_split(perm, n_groups) if len(g) >= 2]
                losses = []
                for gi in rng.permutation(len(groups)):
                    if time.perf_counter() - start > cfg.time_budget_s:
                        out_of_time = True
                        break
                    ti, idx = groups[gi]
                    arrays, lengths, lat, z0, z_init = data[ti]
                    sel = torch.from_numpy(np.asarray(idx))
                    z_t = model(z0[sel], *_rows(arrays, lengths, idx))
                    dz = z_t - z0[sel]
                    score = scale * (dz[:, cfg.axis] if head is None else head(dz).squeeze(-1))
                    loss = pair_loss(score, lat[idx], cfg.loss)
                    if loss is None:
                        continue
                    if cfg.anchor_weight:
                        loss = loss + cfg.anchor_weight * ((z_t - z_init[sel]) ** 2).sum(-1).mean()
                    opt.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, cfg.clip_norm)
                    opt.step()
                    losses.append(float(loss.detach()))
                history.append(float(np.mean(losses)) if losses else float("nan"))
                if log:
                    log(f"rank transition epoch {epoch}: loss {history[-1]:.4f} ({time.perf_counter() - start:.0f} s)")
                if out_of_time:
                    break
    finally:
        torch.set_num_threads(prev)
    return model.eval(), history


def rollouts(transition, tasks: list[dict]) -> list[np.ndarray]:
    """``ẑ_T`` of every task's candidates through the native core (the scoring path)."""
    from cwm import native
    from cwm.model.transition import numpy_weights

    core = native.transition_core(numpy_weights(transition), transition.cfg)
    out = []
    for t in tasks:
        z = np.ascontiguousarray(np.repeat(np.asarray(t["z0"], np.float32)[None], len(t["lat"]), 0))
        out.append(core.rollout(z, t["fb"].ints, t["fb"].numbers))
    return out


def task_parts(n: int, k: int, seed: int) -> list[np.ndarray]:
    """Indices ``0..n-1`` dealt into ``k`` seeded parts (every index in exactly one)."""
    order = np.random.default_rng([seed, n, k]).permutation(n)
    return [np.sort(order[i::k]) for i in range(k)]


def fit_with_ranker_rows(transition, tasks: list[dict], cfg: RankTransitionConfig = RankTransitionConfig(),
                         log=None):
    """``(model, history, rows)``: the transition trained on every task, and the rollouts the
    ranker's training rows should use (out of fold when ``cfg.cross_fit > 1``, else the model's own)."""
    model, history = train_rank_transition(transition, tasks, cfg, log)
    if cfg.cross_fit <= 1:
        return model, history, rollouts(model, tasks)
    rows: list = [None] * len(tasks)
    for part in task_parts(len(tasks), cfg.cross_fit, cfg.seed):
        held = set(part.tolist())
        inner, _ = train_rank_transition(transition, [t for i, t in enumerate(tasks) if i not in held], cfg)
        for i, z in zip(part, rollouts(inner, [tasks[i] for i in part])):
            rows[i] = z
    return model, history, rows


def save_transition(transition, directory, meta: dict) -> None:
    """The layout ``tools/refit_ranker.py --transition DIR`` reads: weights and ``transition.json``."""
    from safetensors.numpy import save_file

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().numpy() for k, v in transition.state_dict().items()},
              str(d / "transition.safetensors"))
    (d / "transition.json").write_text(json.dumps({"transition": transition.cfg.to_dict(), **meta}, indent=1) + "\n")
