"""Ranking quality on held-out tasks: TenSet top-k score, pairwise accuracy, NDCG@k.

All functions take per-task arrays of measured latencies (seconds; NaN/inf = failed) and
model scores (higher = predicted faster).
"""
from __future__ import annotations

import numpy as np

from cwm.model.ranker import relevance


def _valid(lat):
    lat = np.asarray(lat, np.float64)
    return np.isfinite(lat) & (lat > 0)


def topk_score(tasks: list[tuple[np.ndarray, np.ndarray, float]], k: int) -> float:
    """TenSet: ``sum_w best_latency / sum_w latency of the best among the model's top-k picks``.

    ``tasks`` = ``[(latencies, scores, weight), ...]``. A failed candidate among the picks
    counts as not picked (its latency is infinite).
    """
    num = den = 0.0
    for lat, score, w in tasks:
        lat = np.where(_valid(lat), lat, np.inf)
        if not np.isfinite(lat).any():
            continue
        picks = np.argsort(-np.asarray(score), kind="stable")[:k]
        best_pick = lat[picks].min()
        num += w * lat.min()
        den += w * (best_pick if np.isfinite(best_pick) else lat[np.isfinite(lat)].max())
    return num / den if den else float("nan")


def top1_task_mean(tasks: list[tuple[np.ndarray, np.ndarray, float]]) -> float:
    """The mean over tasks of ``best_latency / latency of the model's top pick``, unweighted.

    :func:`topk_score` weights each task by its weight *and* its latency, so one slow task can
    decide it (in task-grouped CV it moved 0.28 -> 0.66 with the fold seed alone,
    docs/decisions.md §50); this one gives every task the same say. A failed pick counts as the
    task's slowest valid candidate, as in :func:`topk_score`.
    """
    ratios = []
    for lat, score, _ in tasks:
        lat = np.where(_valid(lat), lat, np.inf)
        if not np.isfinite(lat).any():
            continue
        pick = lat[int(np.argsort(-np.asarray(score), kind="stable")[0])]
        ratios.append(lat.min() / (pick if np.isfinite(pick) else lat[np.isfinite(lat)].max()))
    return float(np.mean(ratios)) if ratios else float("nan")


def pairwise_accuracy(lat: np.ndarray, score: np.ndarray) -> float:
    """Fraction of candidate pairs with different latencies that the scores order correctly."""
    ok = _valid(lat)
    lat, score = np.asarray(lat)[ok], np.asarray(score)[ok]
    dl = np.sign(lat[:, None] - lat[None, :])  # +1 where i slower than j
    ds = np.sign(score[None, :] - score[:, None])  # +1 where j scored higher than i
    mask = dl != 0
    return float((dl[mask] == ds[mask]).mean()) if mask.any() else float("nan")


def ndcg_at_k(lat: np.ndarray, score: np.ndarray, k: int = 10) -> float:
    """NDCG@k with the ranker's relevance grades as gains (``2^grade - 1``)."""
    gains = 2.0 ** relevance(lat) - 1
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    order = np.argsort(-np.asarray(score), kind="stable")[:k]
    ideal = np.sort(gains)[::-1][:k]
    idcg = (ideal * disc[:len(ideal)]).sum()
    return float((gains[order] * disc[:len(order)]).sum() / idcg) if idcg > 0 else float("nan")


def summarize(tasks: list[tuple[np.ndarray, np.ndarray, float]]) -> dict:
    """All metrics over tasks (pairwise accuracy and NDCG averaged over tasks)."""
    pa = [pairwise_accuracy(lat, s) for lat, s, _ in tasks]
    nd = [ndcg_at_k(lat, s, 10) for lat, s, _ in tasks]
    return {"top1": topk_score(tasks, 1), "top5": topk_score(tasks, 5), "top1_task_mean": top1_task_mean(tasks),
            "pairwise_acc": float(np.nanmean(pa)) if pa else float("nan"),
            "ndcg10": float(np.nanmean(nd)) if nd else float("nan")}
