"""Baseline (e) of the offline ranking evaluation: *sequence only* (TLP-style, no latent state).

TLP (Zhai et al., ASPLOS'23) embeds the sequence of schedule primitives and runs a sequence
encoder to predict a score, without looking at the program. Here:

* each action row (the arrays of :mod:`cwm.actions.featurize`) is embedded exactly like the
  TransH action encoder of :mod:`cwm.model.transition`: kind + six hashed columns + seven
  small-int columns (one embedding table each, via :func:`~cwm.model.transition.action_indices`)
  plus a linear map of the :func:`~cwm.model.transition.log_scale`-d numbers, summed;
* a small sequence encoder over the valid steps: a unidirectional GRU (default) or a
  TransformerEncoder with sinusoidal positions and a key-padding mask;
* masked mean + max pooling over the valid steps, an MLP head -> one scalar score.

With ``state_input`` each step also reads a state, through a linear map added to the action's
embedding before the LayerNorm (:func:`step_states` computes them; the task's rows then need
``"steps"`` ``[N, T, D]`` beside ``"fb"``):

* ``"displacement"``: the world model's rolled-out state after the step, less the start,
  ``ẑ_t - z_0``. Without a transition (``ẑ_t = z_0``) the input is zero and the head is the
  action-only head, bit for bit (its extra weights are drawn aside from the rest);
* ``"absolute"``: the rolled-out state ``ẑ_t`` itself (the task's program and the dynamics);
* ``"start"``: ``z_0`` at every step: ``"absolute"``'s ablation without a transition.

Training is listwise-within-task: every step takes a group of candidates of *one* task and
applies a pairwise logistic loss on all pairs with different measured latency (failed
candidates, latency inf/NaN, rank below every measured one; failed-vs-failed pairs are
ignored). ``loss="lambdarank"`` additionally weights each pair by ``|ΔNDCG|`` of swapping it
(gains ``2^grade - 1`` from :func:`cwm.model.ranker.relevance`); the default ``"pairwise"``
weights every pair by 1 plus that term, so pairs within one relevance grade still count.

Determinism: everything (init, shuffling, dropout) is seeded from ``seed`` inside a forked
torch RNG, and training runs with ``threads`` intra-op threads, so the same seed gives the
same scores - as long as the ``epochs`` limit, not the wall-clock ``time_budget_s``, ends
training (the budget is checked between steps; hitting it makes the step count, and so the
model, depend on the machine's speed).

Scores depend on nothing but a candidate's own valid steps: sequences are trimmed to the
longest valid length of each scoring chunk and pooling is masked; the GRU is causal, and the
Transformer masks padded keys. So padding (or batching with longer traces) does not change a
candidate's score beyond float round-off.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from cwm.model.pair_loss import pair_loss
from cwm.model.transition import ActionEmbedding, TransitionConfig, action_indices, log_scale

#: the states a step can read besides its action (``SequenceConfig.state_input``; see above)
STATE_INPUTS = ("displacement", "absolute", "start")


def _check_state_input(mode: str) -> None:
    if mode not in STATE_INPUTS:
        raise ValueError(f"unknown state input {mode!r} (none | {' | '.join(STATE_INPUTS)})")


@dataclass(frozen=True)
class SequenceConfig:
    encoder: str = "gru"  # "gru" | "transformer"
    dim: int = 64
    layers: int = 1  # GRU layers / Transformer layers (the task suggests 2 for a Transformer)
    heads: int = 4
    dropout: float = 0.1
    hash_buckets: int = 1024
    small_vocab: int = 32
    lr: float = 2e-3
    weight_decay: float = 1e-4
    group_size: int = 64  # candidates of one task per training step
    loss: str = "pairwise"  # "pairwise" (1 + |ΔNDCG| per pair) | "lambdarank" (|ΔNDCG| only)
    grad_clip: float = 1.0
    threads: int = 1
    score_batch: int = 1024
    state_input: str = "none"  # "none" | one of STATE_INPUTS (the state each step reads)
    state_dim: int = 128  # the world model's latent width (read with state_input)

    def to_dict(self) -> dict:
        return asdict(self)


def _torch_module():
    import torch
    from torch import nn

    class SequenceScorer(nn.Module):
        def __init__(self, cfg: SequenceConfig):
            super().__init__()
            self.cfg = cfg
            d = cfg.dim
            self.actions = ActionEmbedding(d, cfg.hash_buckets, cfg.small_vocab)
            self.norm = nn.LayerNorm(d)
            self.drop = nn.Dropout(cfg.dropout)
            if cfg.encoder == "gru":
                self.seq = nn.GRU(d, d, num_layers=cfg.layers, batch_first=True,
                                  dropout=cfg.dropout if cfg.layers > 1 else 0.0)
            elif cfg.encoder == "transformer":
                layer = nn.TransformerEncoderLayer(d, cfg.heads, 2 * d, cfg.dropout, batch_first=True,
                                                   norm_first=True)
                self.seq = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
            else:
                raise ValueError(f"unknown encoder {cfg.encoder!r} (gru | transformer)")
            self.head = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Dropout(cfg.dropout), nn.Linear(d, 1))
            if cfg.state_input != "none":
                _check_state_input(cfg.state_input)
                with torch.random.fork_rng(devices=[]):  # drawn aside: the rest draws as without it
                    self.state = nn.Linear(cfg.state_dim, d, bias=False)

        def embed(self, kind, hashed, small, numbers, steps=None):
            """The TransH action embedding (shared module), plus the state read, normalised."""
            x = self.actions(kind, hashed, small, numbers)
            if steps is not None:
                x = x + self.state(steps)
            return self.drop(self.norm(x))

        def forward(self, kind, hashed, small, numbers, lengths, steps=None):
            """Scores ``[B]`` of actions ``[B, T, ...]`` with ``lengths [B]`` valid steps (and the
            rolled-out ``steps [B, T, D]`` with ``state_input``)."""
            t = kind.shape[1]
            valid = torch.arange(t)[None, :] < lengths[:, None]  # [B, T]
            x = self.embed(kind, hashed, small, numbers, steps)
            if self.cfg.encoder == "gru":
                h, _ = self.seq(x)  # causal: valid steps never see the padding after them
            else:
                pos = torch.arange(t, dtype=torch.float32)[:, None]
                freq = torch.exp(torch.arange(0, self.cfg.dim, 2, dtype=torch.float32)
                                 * (-math.log(10000.0) / self.cfg.dim))
                pe = torch.zeros(t, self.cfg.dim)
                pe[:, 0::2] = torch.sin(pos * freq)
                pe[:, 1::2] = torch.cos(pos * freq)
                h = self.seq(x + pe, src_key_padding_mask=~valid)
            m = valid.unsqueeze(-1).to(h.dtype)
            mean = (h * m).sum(1) / m.sum(1).clamp_min(1.0)
            mx = h.masked_fill(~valid.unsqueeze(-1), float("-inf")).amax(1)
            mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))  # empty traces
            return self.head(torch.cat([mean, mx], -1)).squeeze(-1)

    return SequenceScorer


_MODULE = None


def step_states(z0: np.ndarray, fb, weights: dict, tcfg: TransitionConfig, mode: str = "displacement") -> np.ndarray:
    """``[N, T, D]`` float32: the state each step ``t`` of every trace of ``fb`` reads in ``mode``
    (:data:`STATE_INPUTS`), rolled out from ``z0 [D]`` by the TransH of ``weights``
    (:func:`~cwm.model.transition.numpy_weights`); padding steps keep the last state."""
    from cwm.model.transition import rollout_numpy

    _check_state_input(mode)
    z = np.repeat(np.asarray(z0, np.float64)[None], fb.ints.shape[0], 0)
    if mode == "start":
        return np.repeat(z[:, None], fb.ints.shape[1], 1).astype(np.float32)
    states = rollout_numpy(z, fb.ints, fb.numbers, weights, tcfg, return_all=True)[:, 1:]
    return (states - z[:, None] if mode == "displacement" else states).astype(np.float32)


def _inputs(task, cfg: SequenceConfig):
    """NumPy ``(kind, hashed, small, numbers, lengths)`` of a task's FeatureBatch ``task["fb"]``,
    and its ``task["steps"]`` with ``state_input``."""
    fb = task["fb"]
    kind, hashed, small = action_indices(fb.ints, TransitionConfig(hash_buckets=cfg.hash_buckets,
                                                                    small_vocab=cfg.small_vocab))
    arrays = (kind, hashed, small, log_scale(fb.numbers).astype(np.float32), np.asarray(fb.lengths, np.int64))
    if cfg.state_input == "none":
        return arrays
    if "steps" not in task:
        raise ValueError("this sequence model reads the rolled-out states: give each task its \"steps\" "
                         "(step_states)")
    steps = np.asarray(task["steps"], np.float32)
    if steps.shape[:2] != kind.shape[:2] or steps.shape[2] != cfg.state_dim:
        raise ValueError(f"steps {steps.shape} do not match the actions {kind.shape[:2]} x state_dim {cfg.state_dim}")
    return arrays + (steps,)


def _to_torch(arrays, idx):
    """Rows ``idx`` of the input arrays as tensors, trimmed to their longest valid length."""
    import torch

    kind, hashed, small, numbers, lengths = arrays[:5]
    t = max(int(lengths[idx].max()) if len(idx) else 0, 1)

    def steps(a):
        """``a[idx, :t]``, padded with zeros (the padding kind) to ``t`` steps: a batch of empty
        traces (the unscheduled program) still gives the recurrent encoder one step to read."""
        rows = a[idx, :t]
        if rows.shape[1] < t:
            rows = np.concatenate([rows, np.zeros((rows.shape[0], t - rows.shape[1], *rows.shape[2:]), rows.dtype)], 1)
        return torch.from_numpy(np.ascontiguousarray(rows))

    out = (steps(kind), steps(hashed), steps(small), steps(numbers), torch.from_numpy(lengths[idx]))
    return out + tuple(steps(a) for a in arrays[5:])


class SequenceBaseline:
    """TLP-style ranking model on the action tokens only (``sequence_only`` in ``cwm eval``)."""

    def __init__(self, seed: int = 0, epochs: int = 40, time_budget_s: float = 150.0, log=None, **hparams):
        self.seed = seed
        self.epochs = epochs
        self.time_budget_s = time_budget_s
        self.cfg = SequenceConfig(**hparams)
        self.log = log
        self.model = None
        self.history: list[float] = []  # mean training loss per epoch
        self.steps = 0

    def _threads(self):
        import torch

        prev = torch.get_num_threads()
        torch.set_num_threads(self.cfg.threads)
        return prev

    def build(self):
        """A fresh (untrained) scorer module of :attr:`cfg` as :attr:`model`, returned (a saved
        one's weights are then loaded into it: :mod:`cwm.model.sequence_head`)."""
        global _MODULE
        if _MODULE is None:
            _MODULE = _torch_module()
        self.model = _MODULE(self.cfg)
        return self.model

    def fit(self, train_tasks, after_epoch=None) -> "SequenceBaseline":
        """Train on ``train_tasks``. ``after_epoch(epochs_done, self)``, when given, is called
        after every epoch with the model in eval mode (it may score with :meth:`score`); it draws
        no random numbers, so the training is the same with or without it."""
        import torch

        tasks = []
        for t in train_tasks:
            lat = np.asarray(t["lat"], np.float64)
            if len(lat) >= 2 and (np.isfinite(lat) & (lat > 0)).any():
                tasks.append((_inputs(t, self.cfg), lat))
        if not tasks:
            raise ValueError("no training task with at least two candidates and one measured latency")
        prev = self._threads()
        start = time.perf_counter()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                rng = np.random.default_rng(self.seed)
                self.build()
                opt = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
                self.model.train()
                out_of_time = False
                for epoch in range(self.epochs):
                    groups = []
                    for ti, (_, lat) in enumerate(tasks):
                        perm = rng.permutation(len(lat))
                        n_groups = max(1, round(len(lat) / self.cfg.group_size))
                        groups += [(ti, g) for g in np.array_split(perm, n_groups) if len(g) >= 2]
                    order = rng.permutation(len(groups))
                    losses = []
                    for gi in order:
                        if time.perf_counter() - start > self.time_budget_s:
                            out_of_time = True
                            break
                        ti, idx = groups[gi]
                        arrays, lat = tasks[ti]
                        scores = self.model(*_to_torch(arrays, idx))
                        loss = pair_loss(scores, lat[idx], self.cfg.loss)
                        if loss is None:
                            continue
                        opt.zero_grad()
                        loss.backward()
                        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
                        opt.step()
                        self.steps += 1
                        losses.append(float(loss.detach()))
                    if losses:
                        self.history.append(float(np.mean(losses)))
                    if self.log:
                        self.log(f"epoch {epoch}: loss {self.history[-1] if self.history else float('nan'):.4f} "
                                 f"({time.perf_counter() - start:.1f}s)")
                    if after_epoch is not None and not out_of_time:
                        self.model.eval()
                        after_epoch(epoch + 1, self)
                        self.model.train()
                    if out_of_time:
                        break
        finally:
            torch.set_num_threads(prev)
        self.model.eval()
        self.fit_seconds = time.perf_counter() - start
        return self

    def score(self, task) -> np.ndarray:
        """One score per candidate of ``task`` (``task["fb"]``); higher = predicted faster."""
        import torch

        if self.model is None:
            raise RuntimeError("the sequence baseline is not trained: call fit() first")
        arrays = _inputs(task, self.cfg)
        n = len(arrays[0])
        out = np.zeros(n, np.float64)
        prev = self._threads()
        try:
            with torch.no_grad():
                for s in range(0, n, self.cfg.score_batch):
                    idx = np.arange(s, min(n, s + self.cfg.score_batch))
                    out[idx] = self.model(*_to_torch(arrays, idx)).double().numpy()
        finally:
            torch.set_num_threads(prev)
        return out
