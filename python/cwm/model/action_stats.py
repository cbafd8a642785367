"""Structured features of an action sequence for the ranker (NumPy; the spec of the native path).

Computed from the arrays of :func:`cwm.actions.featurize_batch` only, per trace:

* counts of each action kind (``len(KINDS)`` columns), sequence length, post-processing actions;
* tile factors of ``Split`` actions (numbers after the two attribute flags): number of splits,
  mean/max of ``log2`` factor, mean/max ``log2`` of the innermost factor, max ``log2`` outermost;
* annotation extents (``log2(1 + value)``, max over actions, 0 if absent) for the keys in
  :data:`ANNOTATION_KEYS`;
* hardware features of the target (:func:`hardware_features`), the same for every candidate of
  a task but they let one ranker serve several targets.
"""
from __future__ import annotations

import numpy as np

from cwm.actions.featurize import COL, fnv1a
from cwm.actions.vocab import KIND_ID, KINDS

ANNOTATION_KEYS = ("meta_schedule.parallel", "meta_schedule.vectorize", "meta_schedule.unroll_explicit",
                   "meta_schedule.unroll_implicit", "pragma_auto_unroll_max_step",
                   "meta_schedule.thread_extent_low_inclusive", "meta_schedule.thread_extent_high_inclusive",
                   "meta_schedule.cooperative_fetch")
SPLIT_STATS = ("n_splits", "mean_log2_factor", "max_log2_factor", "mean_log2_inner", "max_log2_inner",
               "max_log2_outer")
HW_FEATURES = ("num_cores", "is_cpu", "is_gpu", "log2_max_threads_per_block", "log2_l2_cache_bytes")
NAMES = tuple(f"count_{k}" for k in KINDS) + ("length", "n_postproc") + SPLIT_STATS + \
    tuple(f"annot_{k}" for k in ANNOTATION_KEYS)


def sequence_stats(ints: np.ndarray, numbers: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[B, len(NAMES)]`` float32 features of a padded batch."""
    b = ints.shape[0]
    out = np.zeros((b, len(NAMES)), np.float32)
    nk = len(KINDS)
    split_id, annot_id = KIND_ID["Split"], KIND_ID["Annotate"]
    key_hash = {fnv1a(k): j for j, k in enumerate(ANNOTATION_KEYS)}
    for i in range(b):
        n = int(lengths[i])
        kinds = ints[i, :n, COL["kind"]]
        out[i, :nk] = np.bincount(kinds, minlength=nk)[:nk]
        out[i, nk] = n
        out[i, nk + 1] = int(ints[i, :n, COL["phase"]].sum())
        logs, inner, outer = [], [], []
        for t in np.nonzero(kinds == split_id)[0]:
            k = min(int(ints[i, t, COL["n_numbers"]]), numbers.shape[-1])
            f = numbers[i, t, 2:k]
            f = f[f > 0]  # 0 = inferred factor
            if f.size:
                lf = np.log2(f)
                logs.extend(lf.tolist())
                inner.append(lf[-1])
                outer.append(lf[0])
        s = nk + 2
        out[i, s] = len(inner)
        if logs:
            out[i, s + 1:s + 6] = [np.mean(logs), np.max(logs), np.mean(inner), np.max(inner), np.max(outer)]
        a = s + len(SPLIT_STATS)
        for t in np.nonzero(kinds == annot_id)[0]:
            j = key_hash.get(int(ints[i, t, COL["str0_hash"]]))
            if j is not None and ints[i, t, COL["n_numbers"]] > 0:
                out[i, a + j] = max(out[i, a + j], np.log2(1.0 + abs(float(numbers[i, t, 0]))))
    return out


def hardware_features(target) -> np.ndarray:
    """``[len(HW_FEATURES)]`` float32 from a TVM target, its JSON text, or its dict."""
    import json

    t = target if isinstance(target, dict) else json.loads(str(target))
    kind = t.get("kind", "")
    return np.array([float(t.get("num-cores", 0) or 0), float(kind == "llvm"), float(kind in ("cuda", "rocm")),
                     np.log2(1.0 + float(t.get("max_threads_per_block", 0) or 0)),
                     np.log2(1.0 + float(t.get("l2_cache_size_bytes", 0) or 0))], np.float32)
