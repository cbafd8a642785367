"""The collector survives kill -9: restart, and no record is lost or duplicated."""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cwm.dataset.store import CorruptShardError, CorruptShardWarning, DatasetStore, register_task


def _collect_cmd(root, trials, random):
    return [sys.executable, "-m", "cwm", "dataset", "collect", "--root", str(root), "--trials", str(trials),
            "--random", str(random), "--no-progress"]


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    from cwm import workloads

    store = DatasetStore(tmp_path)
    key = register_task(store, "matmul_48", workloads.matmul(48), {"probe": 1})
    proc = subprocess.Popen(_collect_cmd(tmp_path, 32, 8), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 240
    try:
        while len(store.journal_records(key)) < 16:  # random phase done and the first search batch in
            assert proc.poll() is None, "collector ended before it could be killed"
            assert time.time() < deadline, "collector made no progress"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    acknowledged = store.journal_records(key)
    assert 16 <= len(acknowledged) < 40 and not store.is_finished(key)
    # simulate the worst case of a kill: half a line at the end of the journal
    with open(store.journal_path(key), "ab") as f:
        f.write(b'{"id": 999, "task": "torn')

    rerun = subprocess.run(_collect_cmd(tmp_path, 32, 8), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    final = store.shard_records(key)
    # first the ids: a gap is a lost record, a short but gap-free list is a budget not topped up
    assert [r["id"] for r in final] == list(range(len(final)))  # no gap, no duplicate id
    assert len(final) == 40  # 8 random + 32 search: the budget, not more
    by_id = {r["id"]: r for r in final}
    for r in acknowledged:  # every acknowledged record survives unchanged
        assert by_id[r["id"]] == r
    search = [r for r in final if r["source"] == "search"]
    assert len({r["trace"] for r in search}) == len(search) == 32  # nothing measured twice
    assert all(len(r["run_secs"]) >= 3 for r in final if r["run_secs"] and not r["run_error"])


def test_corrupt_shard_names_the_file_and_can_be_skipped(tmp_path):
    store = DatasetStore(tmp_path)
    store.put_task("abc", {"name": "x", "networks": {}})
    store.append("abc", [{"id": 0, "source": "search"}])
    store.finish("abc")
    data = store.shard_path("abc").read_bytes()
    store.shard_path("abc").write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(CorruptShardError, match="abc.jsonl.gz"):
        store.shard_records("abc")
    with pytest.warns(CorruptShardWarning, match="abc.jsonl.gz"):  # skipped, not silently
        assert store.shard_records("abc", skip_corrupt=True) == []
    store.shard_path("abc").write_bytes(gzip.compress(b"not json\n"))
    with pytest.raises(CorruptShardError, match="abc.jsonl.gz"):
        store.records("abc")


def test_journal_round_trip_and_torn_tail(tmp_path):
    store = DatasetStore(tmp_path)
    rows = [{"id": i, "x": [i, i * 0.5]} for i in range(5)]
    store.append("k", rows[:3])
    with open(store.journal_path("k"), "ab") as f:
        f.write(b'{"id": 3, "x"')  # torn
    assert store.journal_records("k") == rows[:3]
    store.append("k", rows[3:])
    assert store.journal_records("k") == rows
    assert store.finish("k") == 5 and store.shard_records("k") == rows
    assert json.loads(gzip.decompress(store.shard_path("k").read_bytes()).splitlines()[0]) == rows[0]
