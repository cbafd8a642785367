"""The sequence head of a world model (model v6; docs/decisions.md §71).

The ranker reads the rolled-out state; the sequence head reads the action rows themselves: the
GRU of :mod:`cwm.model.baselines.sequence_model` (each step embedded like a TransH action, a
pairwise loss within a task), trained on the same measured records. CWM's margin is

    (1 - weight) · ranker margin + weight · (ranker_spread / sequence_spread) · sequence score

where each spread is the mean over the training tasks of the standard deviation of that model's
in-sample scores within a task. The spreads are constants of the model, so a candidate's margin
does not depend on the others scored with it (search compares margins across calls), and the
margin stays in the ranker's units (the online residual of the cost model keeps its scale).

Scoring reads the candidate's actions only: no replay, no program (DESIGN.md §5). The head is
trained in PyTorch and scored by the native core (``cwm.native.sequence_core``, in double, the
PyTorch module its specification, parity-tested); the standalone C++ scorer (``cwm_score``,
docs/scorer.md) scores it with the same native code.

Files: ``sequence.safetensors`` (the GRU scorer's weights) and the manifest's ``sequence_head``
(``weight``, both spreads, the :class:`~cwm.model.baselines.sequence_model.SequenceConfig`, seed
and epochs of the fit).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

FILE = "sequence.safetensors"
META_KEY = "sequence_head"


@dataclass(frozen=True)
class SequenceBlend:
    weight: float
    ranker_spread: float
    sequence_spread: float

    def __call__(self, ranker_margin: np.ndarray, sequence_score: np.ndarray) -> np.ndarray:
        """The blended margin, in the ranker's units."""
        ratio = self.ranker_spread / self.sequence_spread
        return ((1.0 - self.weight) * np.asarray(ranker_margin, np.float64)
                + self.weight * ratio * np.asarray(sequence_score, np.float64))


def within_task_spread(scores: list[np.ndarray]) -> float:
    """The mean over tasks (those with ≥ 2 candidates) of the standard deviation of their scores."""
    spreads = [float(np.std(s)) for s in scores if len(s) >= 2]
    if not spreads or not np.mean(spreads) > 0:
        raise ValueError("the scores do not vary within any task: no spread to blend by")
    return float(np.mean(spreads))


def numpy_weights(sequence) -> dict:
    """The native core's weights of a one-layer GRU :class:`SequenceBaseline`'s trained module."""
    cfg = sequence.cfg
    if cfg.encoder != "gru" or cfg.layers != 1:
        raise ValueError(f"the native core scores a one-layer GRU head; this one is {cfg.layers} x {cfg.encoder!r}")
    if cfg.state_input != "none":
        raise ValueError(f"the native core scores a head on the actions alone; this one reads the state "
                         f"({cfg.state_input!r})")
    from cwm.model.transition import action_embedding_weights, float32_state

    sd = float32_state(sequence.model)
    return {**action_embedding_weights(sd, "actions"),
            "ln_w": sd["norm.weight"], "ln_b": sd["norm.bias"],
            "w_ih": sd["seq.weight_ih_l0"], "w_hh": sd["seq.weight_hh_l0"],
            "b_ih": sd["seq.bias_ih_l0"], "b_hh": sd["seq.bias_hh_l0"],
            "head_w": sd["head.0.weight"], "head_b": sd["head.0.bias"],
            "out_w": sd["head.3.weight"][0], "out_b": sd["head.3.bias"]}


class SequenceHead:
    """A trained sequence scorer and the blend that mixes it into the ranker's margin."""

    def __init__(self, sequence, blend: SequenceBlend):
        self.sequence, self.blend = sequence, blend
        self._core = None  # the native scorer, built on first use

    def scores(self, fb) -> np.ndarray:
        """The head's scores of a :class:`FeatureBatch` (native core; ``self.sequence.score`` is
        the PyTorch specification)."""
        from cwm import native

        if self._core is None:
            cfg = self.sequence.cfg
            self._core = native.sequence_core(numpy_weights(self.sequence), cfg.hash_buckets, cfg.small_vocab)
        return native.sequence_scores(self._core, fb)

    def margins(self, ranker_margin: np.ndarray, fb) -> np.ndarray:
        return self.blend(ranker_margin, self.scores(fb))

    def meta(self) -> dict:
        return {"weight": self.blend.weight, "ranker_spread": self.blend.ranker_spread,
                "sequence_spread": self.blend.sequence_spread, "config": self.sequence.cfg.to_dict(),
                "seed": self.sequence.seed, "epochs": self.sequence.epochs}

    def save(self, directory) -> dict:
        """Write :data:`FILE` into ``directory``; returns the manifest entry."""
        from safetensors.numpy import save_file

        save_file({k: v.detach().cpu().numpy() for k, v in self.sequence.model.state_dict().items()},
                  str(Path(directory) / FILE))
        return self.meta()

    @classmethod
    def load(cls, directory, entry: dict) -> "SequenceHead":
        from safetensors.torch import load_file

        from cwm.model.baselines.sequence_model import SequenceBaseline

        path = Path(directory) / FILE
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: the manifest names a sequence head but {FILE} is missing")
        sequence = SequenceBaseline(seed=int(entry["seed"]), epochs=int(entry["epochs"]), **entry["config"])
        sequence.build().load_state_dict(load_file(str(path)))
        sequence.model.eval()
        return cls(sequence, SequenceBlend(float(entry["weight"]), float(entry["ranker_spread"]),
                                           float(entry["sequence_spread"])))


def fit_head(tasks: list[dict], ranker_margins: list[np.ndarray], weight: float, seed: int = 0, epochs: int = 40,
             log=None, **hparams) -> SequenceHead:
    """The head trained on ``tasks`` (each ``{"fb", "lat"}``; failed runs inf) by its epochs
    alone, as ``cwm eval``'s sequence-only row is; ``ranker_margins``: the ranker's in-sample
    margins of the same tasks, for its spread; ``hparams``: SequenceConfig fields."""
    from cwm.model.baselines.sequence_model import SequenceBaseline

    if not 0.0 < weight < 1.0:
        raise ValueError(f"the sequence weight must be in (0, 1), not {weight}")
    sequence = SequenceBaseline(seed=seed, epochs=epochs, time_budget_s=float("inf"), log=log,
                                **hparams).fit(tasks)
    blend = SequenceBlend(weight, within_task_spread(ranker_margins),
                          within_task_spread([sequence.score(t) for t in tasks]))
    return SequenceHead(sequence, blend)
