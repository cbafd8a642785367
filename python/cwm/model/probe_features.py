"""Per-task representations for the probe (``cwm probe``), computed once and cached.

For every measured candidate of a task, the probe compares what each representation says
about its speed (issue #12). One ``.npz`` per task under the cache directory holds:

* ``z0``     ``[D]``     ``E(s_0)`` of the unscheduled workload (what CWM scores from);
* ``zt_hat`` ``[N, D]``  the rollout ``ẑ_T`` of each candidate's actions (CWM's scoring path);
* ``et``     ``[N, D]``  ``E(s_T)``, the encoder on the real final program (a snapshot);
* ``store``  ``[N, 2F]`` MetaSchedule's per-store features of the real final program, pooled
  over stores (sum, then max): the snapshot ceiling of experiment A;
* ``stats``  ``[N, S]``  the action statistics and hardware features the ranker sees;
* ``lat``    ``[N]``     measured latency (inf when the build or run failed).

A candidate whose trace no longer replays gets NaN per-store features (XGBoost treats them as
missing); ``store_ok`` marks the rest. The cache is keyed by task and by the model's
fingerprint (:mod:`cwm.model.fingerprint`: its manifest and every weight file, the ranker's aside), so a retrained or
swapped-in encoder or transition never reads stale rollouts; an interrupted probe resumes.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

STORE_POOLS = ("sum", "max")
#: MetaSchedule's per-store feature vector has 164 entries, pooled by each of :data:`STORE_POOLS`
STORE_WIDTH = 164 * len(STORE_POOLS)


def _per_store(loader, key, workload, trajs, target) -> tuple[np.ndarray, np.ndarray]:
    """Pooled per-store features of every candidate's real final program (replay + TVM)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from cwm.replay import apply_trace

    ctx = ms.TuneContext(mod=workload, target=tvm.target.Target(target), task_name=str(key), num_threads=1)
    extractor = ms.feature_extractor.PerStoreFeature()
    rows, ok = [], []
    for traj in trajs:
        try:
            sch = apply_trace(workload, traj.trace)
            cand = ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
            f = extractor.extract_from(ctx, [cand])[0].numpy()
        except Exception:  # noqa: BLE001 - a record that no longer replays is a missing value
            rows.append(None)
            ok.append(False)
            continue
        rows.append(np.concatenate([f.sum(0), f.max(0)]) if len(f) else None)
        ok.append(len(f) > 0)
    width = next((len(r) for r in rows if r is not None), STORE_WIDTH)
    out = np.full((len(rows), width), np.nan, np.float32)
    for i, r in enumerate(rows):
        if r is not None:
            out[i] = r
    return out, np.array(ok)


def probe_subset(trajs: list, max_candidates: int | None, seed: int) -> list:
    """The probe's seeded subset of a task's candidates (all of them when there are few enough)."""
    if not max_candidates or len(trajs) <= max_candidates:
        return trajs
    keep = np.sort(np.random.default_rng([seed, len(trajs)]).choice(len(trajs), max_candidates, replace=False))
    return [trajs[i] for i in keep]


def _cache_path(cache_dir, key: str, fingerprint: str, max_candidates, seed: int, lat: np.ndarray) -> Path:
    """The task's probe file, named by the model, the subset and a digest of the measured latencies.

    Two dataset roots may hold the same task measured apart (``data/dataset_breadth`` on Zen 5,
    ``data/dataset_breadth_zen4`` with twice the candidates on Zen 4): the digest keeps one root's
    arrays from being read for the other's candidates. A file named before the digest existed
    (``<key>-<model>-n<N>-s<seed>.npz``) is taken over, renamed, when its latencies are these.
    """
    stem = f"{key}-{fingerprint}-n{max_candidates or 'all'}-s{seed}"
    path = Path(cache_dir) / f"{stem}-{hashlib.sha1(lat.tobytes()).hexdigest()[:10]}.npz"
    legacy = Path(cache_dir) / f"{stem}.npz"
    if not path.is_file() and legacy.is_file():
        with np.load(legacy, allow_pickle=False) as f:
            same = np.array_equal(f["lat"], lat)
        if same:
            legacy.replace(path)
    return path


def _cached_store(cache_dir, key: str, max_candidates, seed: int, lat: np.ndarray):
    """``(store, store_ok)`` from this task's cache file of another model, if there is one for the
    same candidates: the per-store features replay the trace and do not depend on the model, and
    the replay is most of a cold probe's time. The same measured latencies, in the same order,
    say the subset is the same."""
    for other in sorted(Path(cache_dir).glob(f"{key}-*-n{max_candidates or 'all'}-s{seed}*.npz")):
        if other.name.endswith(".tmp.npz"):
            continue
        with np.load(other, allow_pickle=False) as f:
            if "store" in f.files and np.array_equal(f["lat"], lat):
                return f["store"], f["store_ok"]
    return None


def pooled_store_features(loader, key: str, workload, trajs: list, target, cache_dir, max_candidates, seed: int,
                          lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(store, store_ok)`` of the probe's subset ``trajs`` of a task: from any cached probe file of
    the same candidates, else by replaying each trace (TVM)."""
    cached = _cached_store(cache_dir, key, max_candidates, seed, lat)
    return cached if cached is not None else _per_store(loader, key, workload, trajs, target)


def design_space_reference(loader, model, key: str, target, cache_dir, fingerprint: str, samples: int,
                           seed: int = 0) -> np.ndarray | None:
    """The task's reference row (:meth:`WorldModel.reference` with ``samples`` design-space samples,
    whatever the model's own centring), cached; None when MetaSchedule draws no sample."""
    path = Path(cache_dir) / f"ref-{key}-{fingerprint}-k{samples}-s{seed}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as f:
            return f["ref"] if int(f["n"]) else None
    workload = loader.workload(key)
    fb = model.design_samples(workload, target, samples, seed)
    ref = np.zeros(0, np.float32) if fb is None else model.reference(workload, target, samples, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # processes may share the cache
    np.savez(tmp, ref=ref, n=0 if fb is None else len(fb.lengths))
    tmp.replace(path)
    return None if fb is None else ref


def task_representations(loader, model, key: str, target, cache_dir, fingerprint: str,
                         max_candidates: int | None = None, seed: int = 0, with_et: bool = True,
                         with_store: bool = True) -> dict | None:
    """The arrays above for one task (from the cache when present); ``None`` if < 2 valid latencies.

    ``max_candidates`` keeps a seeded random subset of a task's candidates (encoding every final
    program takes ~0.2 s a candidate on this machine; 64 of ~150 keep the probe under an hour).
    ``with_et=False`` skips that encoding (no ``et`` array) when no representation asked for
    reads it; a cached file without ``et`` is computed again when one does. ``with_store=False``
    skips the per-store features likewise (``store`` all NaN, ``store_ok`` all False, and the file
    says so with a ``no_store`` entry): replaying every candidate is most of a cold probe's time,
    and a ranker on the rollout does not read them.
    """
    from cwm.model.state_cache import encoded_states

    trajs = probe_subset(loader.trajectories(key), max_candidates, seed)
    lat = np.array([t.latency if t.latency is not None else np.inf for t in trajs], np.float64)
    if np.isfinite(lat).sum() < 2:
        return None
    path = _cache_path(cache_dir, key, fingerprint, max_candidates, seed, lat)
    if path.is_file():
        with np.load(path, allow_pickle=False) as f:
            if ("et" in f.files or not with_et) and ("no_store" not in f.files or not with_store):
                return {k: f[k] for k in f.files if k != "no_store"}
    workload = loader.workload(key)
    fb = model.featurize(workload, [t.trace for t in trajs])
    z0 = model.z0(workload)
    zt_hat = model.rollout(z0, fb)
    stats = model.raw_features(zt_hat, fb, target, z0)[:, len(z0):]
    if with_store:
        store, ok = pooled_store_features(loader, key, workload, trajs, target, cache_dir, max_candidates, seed, lat)
    else:
        store, ok = np.full((len(trajs), STORE_WIDTH), np.nan, np.float32), np.zeros(len(trajs), bool)
    arrays = {"z0": z0, "zt_hat": zt_hat.astype(np.float32),
              **({"et": encoded_states(model, trajs, "final")} if with_et else {}),
              "store": store, "store_ok": ok, "stats": stats.astype(np.float32), "lat": lat}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # processes may share the cache
    np.savez(tmp, **arrays, **({} if with_store else {"no_store": np.ones(1, bool)}))
    tmp.replace(path)  # atomic: an interrupted probe never leaves a half-written task
    return arrays
