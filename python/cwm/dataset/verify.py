"""``cwm dataset verify``: the loader round-trips every shard of a dataset.

Per finished task: the shard's sha256 and record count match the manifest; every record
parses and canonicalises (its action sequence is non-empty); for ``replay_per_task`` records
(spread over the task; ``0`` = none, ``-1`` = all) the full replay reproduces the structural
hash stored at collection time (``final_hash``). Returns a report; any problem is listed by
file and record id.
"""
from __future__ import annotations

import time


def verify(root, replay_per_task: int = 2, log=print) -> dict:
    import tvm_ffi

    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.store import sha256_file

    start = time.time()
    loader = DatasetLoader(root)
    manifest = loader.store.manifest()
    shards = manifest.get("shards", {})
    problems, n_records, n_replayed = [], 0, 0
    for i, key in enumerate(loader.task_keys()):
        if not loader.store.is_finished(key):
            continue
        path = loader.store.shard_path(key)
        entry = shards.get(key)
        if entry is None:
            problems.append(f"{path}: shard not in manifest.json")
        elif entry["sha256"] != sha256_file(path):
            problems.append(f"{path}: sha256 differs from manifest.json")
        trajs = loader.trajectories(key)  # raises CorruptShardError naming the file
        if entry is not None and entry["records"] != len(trajs):
            problems.append(f"{path}: {len(trajs)} records, manifest says {entry['records']}")
        for t in trajs:
            if not t.actions:
                problems.append(f"{path}: record {t.record['id']} has no actions")
        n_records += len(trajs)
        if replay_per_task and trajs:
            step = 1 if replay_per_task < 0 else max(1, len(trajs) // replay_per_task)
            for t in trajs[::step][:None if replay_per_task < 0 else replay_per_task]:
                got = int(tvm_ffi.structural_hash(t.states()[-1]))
                if t.record.get("final_hash") is not None and got != int(t.record["final_hash"]):
                    problems.append(f"{path}: record {t.record['id']} replays to another program")
                n_replayed += 1
        log(f"[{i + 1}/{len(loader.task_keys())}] {key}: {len(trajs)} records ok")
    return {"tasks": len(shards), "records": n_records, "replayed": n_replayed, "problems": problems,
            "seconds": round(time.time() - start, 1)}
