"""Ranker rows centred on the task's design space (docs/decisions.md §62).

A tree splits on absolute values, so "this candidate's rollout moves further along some
direction than its siblings do" is a comparison it has to learn workload by workload. Giving
the ranker each row beside the row less a per-task *reference* makes it one threshold. The
reference is the mean ranker row of ``REFERENCE_SAMPLES`` seeded samples of the task's own
design space (:func:`cwm.design_sample.sample_traces`; nothing is measured): a function of the
workload and the target alone, so a candidate's score never depends on the batch it is scored
in (MetaSchedule compares scores across predict calls). The mean of the scored candidates
themselves ranked about as well in CV but is batch-dependent.

:func:`mean_row` is the spec of the reference's arithmetic: float64, rows added in order, then
divided and rounded to float32 once, so NumPy and C++ (``cwm_score``) agree bit for bit.
"""
from __future__ import annotations

import numpy as np

REFERENCE_SAMPLES = 32
REFERENCE_SEED = 0
PREFIX = "c_"  # feature names of the centred copy


def centring_meta(samples: int, seed: int = REFERENCE_SEED) -> dict:
    """The model manifest's entry (``{"centring": {...}}``, or ``{}`` for a model that does not centre)."""
    if samples < 0:
        raise ValueError(f"centring samples must be >= 0, not {samples}")
    return {"centring": {"samples": int(samples), "seed": int(seed), "reference": "design-space sample mean"}} \
        if samples else {}


def mean_row(rows: np.ndarray) -> np.ndarray:
    """``[F]`` float32: the mean of ``rows [N, F]`` summed in float64 in row order; zeros if N = 0."""
    rows = np.asarray(rows, np.float32)
    acc = np.zeros(rows.shape[1], np.float64)
    for r in rows:  # in order (NumPy's own mean sums pairwise)
        acc += r
    return (acc / max(len(rows), 1)).astype(np.float32)


def centred(rows: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``[N, 2F]``: each row, then the row less ``reference [F]`` (float32 arithmetic)."""
    rows = np.asarray(rows, np.float32)
    reference = np.asarray(reference, np.float32)
    if reference.shape != rows.shape[1:]:
        raise ValueError(f"a reference of {reference.shape[0] if reference.ndim else 0} values for rows of "
                         f"{rows.shape[1]} features")
    return np.concatenate([rows, rows - reference[None]], 1)


def centred_names(names: list[str]) -> list[str]:
    return list(names) + [PREFIX + n for n in names]
