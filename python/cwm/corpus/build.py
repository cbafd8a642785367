"""The unmeasured-trajectory corpus: sampled schedules of generated workloads and their prefix states.

For each workload of :func:`cwm.corpus.generator.generate` (and, optionally, each training
task of the measured dataset), MetaSchedule samples candidates from the design space the way
its search's first generation does (random decisions, post-processed, deduplicated), with no
build and no run. Each candidate's trace is replayed once (:func:`cwm.replay.action_states`)
and the pooled per-store features (sum and max over stores of MetaSchedule's
``PerStoreFeature``) of several prefix states are its targets:

    shards/<index>-<key>.npz
        traces     [N] str        the candidate traces (JSON text)
        prefix     [N, P] int32   number of canonical actions of each target state (last = T)
        store      [N, P, F] f16  pooled per-store features of those states (NaN: not extractable)
        workload   str            the unscheduled workload (``tvm.ir.save_json``)
    manifest.json                 seed, sizes, target, generator families, shard list (rewritten at the end)

A shard is written to a temporary file and renamed, so an interrupted build leaves only whole
shards, and the next run skips them: ``cwm corpus build`` is resumable and seeded (the same
arguments rebuild the same corpus). Nothing here is measured; only the ranker needs latencies.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from cwm.design_sample import sample_traces

PREFIX_FRACTIONS = (1 / 3, 2 / 3, 1.0)
FORMAT, VERSION = "cwm-trajectory-corpus", 1


def pooled_store_features(state, ctx, extractor) -> np.ndarray | None:
    """Sum and max over stores of ``PerStoreFeature`` of one program state, or ``None``."""
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    sch = Schedule(state)
    cand = ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
    f = extractor.extract_from(ctx, [cand])[0].numpy()
    return np.concatenate([f.sum(0), f.max(0)]) if len(f) else None


def prefix_points(num_actions: int) -> list[int]:
    return [max(1, int(round(frac * num_actions))) if num_actions else 0 for frac in PREFIX_FRACTIONS]


def trajectory_targets(mod, traces, target):
    """``(prefix [N, P], store [N, P, F])`` for each trace; NaN rows where extraction fails."""
    from tvm.s_tir import meta_schedule as ms

    from cwm.replay import action_states

    ctx = ms.TuneContext(mod=mod, target=target, task_name="corpus", num_threads=1)
    extractor = ms.feature_extractor.PerStoreFeature()
    prefix = np.zeros((len(traces), len(PREFIX_FRACTIONS)), np.int32)
    rows: dict[tuple[int, int], np.ndarray] = {}
    for i, trace in enumerate(traces):
        try:
            states = action_states(mod, trace)
        except Exception:  # noqa: BLE001 - a trace that does not replay keeps NaN targets
            continue
        prefix[i] = prefix_points(len(states) - 1)
        for j, k in enumerate(prefix[i]):
            try:
                f = pooled_store_features(states[k], ctx, extractor)
            except Exception:  # noqa: BLE001 - some intermediate states have no extractable store
                f = None
            if f is not None:
                rows[i, j] = f
    width = len(next(iter(rows.values()))) if rows else 0
    store = np.full((len(traces), len(PREFIX_FRACTIONS), width), np.nan, np.float32)
    for (i, j), f in rows.items():
        store[i, j] = f
    return prefix, store


def _shard_path(root: Path, index: int, key: str) -> Path:
    return root / "shards" / f"{index:05d}-{key}.npz"


def corpus_keys(root) -> set[str]:
    """The structural hashes of every workload listed in the corpus at ``root``."""
    manifest = json.loads((Path(root) / "manifest.json").read_text())
    return {entry["key"] for entry in manifest["listing"]}


def build_corpus(root, workloads: int, per_workload: int, seed: int = 0, dataset=None, part=(0, 1),
                 target=None, blocks: int = 0, log=print, exclude_corpora=()) -> dict:
    """Builds (or resumes) the corpus under ``root``: ``workloads`` single operators, then
    ``blocks`` tasks of network blocks (:mod:`cwm.corpus.blocks`); ``part=(i, n)`` does every
    n-th workload from i. No workload of the corpora in ``exclude_corpora`` is generated again,
    so a second part (another seed) adds only new workloads."""
    import itertools

    import tvm

    from cwm.corpus.blocks import generate_blocks

    from cwm.corpus.generator import FAMILIES, generate, heldout_keys
    from cwm.workload_key import task_key

    root = Path(root)
    (root / "shards").mkdir(parents=True, exist_ok=True)
    exclude = heldout_keys(dataset) if dataset else set()
    heldout_count = len(exclude)
    for other in exclude_corpora:
        exclude |= corpus_keys(other)
    if target is None:
        from cwm.dataset.loader import DatasetLoader

        target = (DatasetLoader(dataset).store.manifest().get("target") if dataset else None) or "llvm -num-cores 2"
    tgt = tvm.target.Target(target)
    done = {p.name.split("-", 1)[0] for p in (root / "shards").glob("*.npz") if not p.name.endswith(".tmp.npz")}
    start, made, trajectories = time.perf_counter(), 0, 0
    listing = []
    source = itertools.chain(generate(workloads, seed, exclude), generate_blocks(blocks, seed, exclude, tgt))
    for index, w in enumerate(source):
        key = task_key(w.mod)
        assert key not in exclude, f"{w.name} has a held-out task's or an excluded corpus's structural hash"
        listing.append({"index": index, "key": key, "name": w.name, "family": w.family, "params": w.params})
        if index % part[1] != part[0] or f"{index:05d}" in done:
            continue
        traces = sample_traces(w.mod, tgt, per_workload, seed + index)
        prefix, store = trajectory_targets(w.mod, traces, tgt)
        path = _shard_path(root, index, key)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, traces=np.array(traces, dtype=str), prefix=prefix, store=store.astype(np.float16),
                 workload=np.array(tvm.ir.save_json(w.mod)))
        tmp.replace(path)
        made, trajectories = made + 1, trajectories + len(traces)
        log(f"[{index + 1}/{workloads + blocks}] {w.name}: {len(traces)} trajectories "
            f"({time.perf_counter() - start:.0f} s, {made} shards this run)")
    manifest = {"format": FORMAT, "version": VERSION, "seed": seed, "workloads": workloads, "blocks": blocks,
                "per_workload": per_workload, "target": target if isinstance(target, dict) else str(target),
                "families": list(FAMILIES),
                "prefix_fractions": list(PREFIX_FRACTIONS), "excluded_heldout_keys": heldout_count,
                "excluded_corpora": [str(c) for c in exclude_corpora],
                "listing": listing}
    if part[0] == 0:
        (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return {"shards_written": made, "trajectories_written": trajectories,
            "seconds": round(time.perf_counter() - start, 1)}


def corpus_stats(root) -> dict:
    """Counts over the finished shards, by family."""
    root = Path(root)
    manifest = json.loads((root / "manifest.json").read_text()) if (root / "manifest.json").is_file() else {}
    family = {f"{e['index']:05d}": e["family"] for e in manifest.get("listing", [])}
    out: dict = {"shards": 0, "trajectories": 0, "by_family": {}}
    for p in sorted((root / "shards").glob("*.npz")):
        if p.name.endswith(".tmp.npz"):
            continue
        with np.load(p, allow_pickle=False) as f:
            n = len(f["traces"])
        fam = family.get(p.name.split("-", 1)[0], "?")
        out["shards"] += 1
        out["trajectories"] += n
        out["by_family"][fam] = out["by_family"].get(fam, 0) + n
    return out
