"""The pairwise logistic loss within one task's candidates, shared by the sequence baseline and
the ranking-trained transition (:mod:`cwm.model.rank_transition`).

Failed candidates (latency inf/NaN) rank below every measured one; failed-vs-failed pairs are
ignored. ``loss="lambdarank"`` weights each pair by ``|ΔNDCG|`` of swapping it (gains
``2^grade - 1`` from :func:`cwm.model.ranker.relevance`); ``"pairwise"`` weights every pair by 1
plus that term, so pairs within one relevance grade still count.
"""
from __future__ import annotations

import numpy as np

from cwm.model.ranker import relevance


def pair_loss(scores, lat: np.ndarray, loss: str):
    """Pairwise logistic loss within one group; ``lat`` inf/NaN = failed (ranked last)."""
    import torch

    lat = np.where(np.isfinite(lat) & (lat > 0), lat, np.inf)
    a, b = lat[:, None], lat[None, :]
    with np.errstate(invalid="ignore"):
        better = (a < b)  # i strictly faster than j (any measured beats failed; inf vs inf -> False)
    if not better.any():
        return None
    better_t = torch.from_numpy(better)
    diff = scores[:, None] - scores[None, :]  # s_i - s_j, want > 0 where better
    # |ΔNDCG| of swapping i and j under the current ranking (LambdaRank weights)
    gains = torch.from_numpy(2.0 ** relevance(lat) - 1).to(scores.dtype)
    with torch.no_grad():
        rank = torch.empty_like(scores)
        rank[torch.argsort(-scores)] = torch.arange(len(scores), dtype=scores.dtype)
        disc = 1.0 / torch.log2(rank + 2.0)
        idcg = (torch.sort(gains, descending=True).values / torch.log2(torch.arange(len(gains)) + 2.0)).sum()
        dndcg = (gains[:, None] - gains[None, :]).abs() * (disc[:, None] - disc[None, :]).abs() / idcg.clamp_min(1e-9)
        w = dndcg * len(scores) if loss == "lambdarank" else 1.0 + dndcg * len(scores)
        w = w * better_t
    if float(w.sum()) <= 0:
        return None
    return (torch.nn.functional.softplus(-diff) * w).sum() / w.sum()
