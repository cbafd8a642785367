"""``cwm dataset verify``: check every file of a dataset against its manifest.

Checked, each problem listed (by file, and record id where there is one) and none stopping
the check:

* ``manifest.json`` exists and parses; its totals (``records``, ``finished_tasks``) agree
  with its ``shards`` table; ``split.json`` parses and names only known tasks;
* every shard the manifest lists exists, has the listed sha256, decodes (gzip + one JSON
  object per line) and holds the listed number of records; its ``tasks/<key>.json`` exists
  and parses (and its workload loads);
* a shard on disk that the manifest does not list is reported;
* every record parses and canonicalises (its action sequence is non-empty); for
  ``replay_per_task`` records (spread over the task; ``0`` = none, ``-1`` = all) the full
  replay reproduces the structural hash stored at collection time (``final_hash``).

Returns a report; ``problems`` is empty for a sound dataset (the CLI then exits 0, else 1).
"""
from __future__ import annotations

import time
from pathlib import Path


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def verify(root, replay_per_task: int = 2, log=print) -> dict:
    import tvm_ffi

    from cwm.dataset.loader import Trajectory
    from cwm.dataset.stats import load_split
    from cwm.dataset.store import CorruptShardError, DatasetError, DatasetStore, sha256_file

    start = time.time()
    root = Path(root)
    problems: list[str] = []
    if not root.is_dir():
        problems.append(f"{root}: no dataset here (not a folder)")
        return {"tasks": 0, "records": 0, "manifest_records": None, "replayed": 0, "problems": problems,
                "seconds": 0.0}
    store = DatasetStore(root)
    manifest_path = root / "manifest.json"
    try:
        manifest = store.manifest()
        if not manifest:
            problems.append(f"{manifest_path}: manifest is missing")
    except DatasetError as e:
        problems.append(str(e))
        manifest = None
    manifest_ok = bool(manifest)  # present and readable: shards on disk are checked against it
    manifest = manifest or {}
    shards = manifest.get("shards", {})
    if not isinstance(shards, dict):
        problems.append(f"{manifest_path}: 'shards' is not a JSON object")
        shards = {}
    listed_records = 0
    for key, entry in shards.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("records"), int)
                and isinstance(entry.get("sha256"), str)):
            problems.append(f"{manifest_path}: entry of shard {key} lacks records/sha256")
            shards[key] = entry = {}
        listed_records += entry.get("records", 0)
    if manifest:
        if manifest.get("records") != listed_records:
            problems.append(f"{manifest_path}: says {manifest.get('records')} records, its shards list "
                            f"{listed_records}")
        if manifest.get("finished_tasks") != len(shards):
            problems.append(f"{manifest_path}: says {manifest.get('finished_tasks')} finished tasks, "
                            f"its shards list {len(shards)}")

    known = set(store.task_keys())
    try:
        split = load_split(root)
        for side in ("test_tasks", "train_tasks"):
            unknown = sorted(set(split.get(side, [])) - known)
            if unknown:
                problems.append(f"{root / 'split.json'}: {side} names unknown tasks {unknown[:5]}"
                                f"{' …' if len(unknown) > 5 else ''}")
    except DatasetError as e:
        problems.append(str(e))

    on_disk = sorted(p.name[: -len(".jsonl.gz")] for p in (root / "shards").glob("*.jsonl.gz"))
    for key in on_disk:
        if key not in shards and manifest_ok:
            problems.append(f"{store.shard_path(key)}: shard not in manifest.json")
    keys = sorted(set(shards) | set(on_disk))
    n_records, n_replayed = 0, 0
    for i, key in enumerate(keys):
        path = store.shard_path(key)
        entry = shards.get(key)
        n_before = len(problems)
        if not path.exists():
            problems.append(f"{path}: shard is missing (listed in manifest.json)")
            log(f"[{i + 1}/{len(keys)}] {key}: MISSING")
            continue
        if entry and entry["sha256"] != sha256_file(path):
            problems.append(f"{path}: sha256 differs from manifest.json")
        workload = None
        if not store.task_path(key).exists():
            problems.append(f"{store.task_path(key)}: task metadata is missing")
        else:
            try:
                import tvm

                workload = tvm.ir.load_json(store.get_task(key)["workload"])
            except CorruptShardError as e:
                problems.append(str(e))
            except Exception as e:  # noqa: BLE001  (any failure is a problem to list)
                problems.append(f"{store.task_path(key)}: workload does not load ({_err(e)})")
        try:
            records = store.read_shard(key)
        except CorruptShardError as e:
            problems.append(str(e))
            log(f"[{i + 1}/{len(keys)}] {key}: UNDECODABLE")
            continue
        if entry and entry["records"] != len(records):
            problems.append(f"{path}: {len(records)} records, manifest says {entry['records']}")
        trajs = []
        for j, r in enumerate(records):
            rid = r.get("id", f"#{j}") if isinstance(r, dict) else f"#{j}"
            try:
                t = Trajectory(key, r, workload)
                if not t.actions:
                    problems.append(f"{path}: record {rid} has no actions")
                    continue
                trajs.append(t)
            except Exception as e:  # noqa: BLE001
                problems.append(f"{path}: record {rid} does not canonicalise ({_err(e)})")
        n_records += len(records)
        if replay_per_task and trajs and workload is not None:
            step = 1 if replay_per_task < 0 else max(1, len(trajs) // replay_per_task)
            for t in trajs[::step][:None if replay_per_task < 0 else replay_per_task]:
                try:
                    got = int(tvm_ffi.structural_hash(t.states()[-1]))
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{path}: record {t.record.get('id')} does not replay ({_err(e)})")
                    continue
                if t.record.get("final_hash") is not None and got != int(t.record["final_hash"]):
                    problems.append(f"{path}: record {t.record.get('id')} replays to another program")
                n_replayed += 1
        status = "ok" if len(problems) == n_before else f"{len(problems) - n_before} problem(s)"
        log(f"[{i + 1}/{len(keys)}] {key}: {len(records)} records {status}")
    return {"tasks": len(keys), "records": n_records, "manifest_records": listed_records if manifest else None,
            "replayed": n_replayed, "problems": problems, "seconds": round(time.time() - start, 1)}
