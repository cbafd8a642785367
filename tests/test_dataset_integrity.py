"""Issue 13, findings 4 and 7, and the resume shortfall: reading a dataset writes nothing,
``verify`` checks every file the manifest lists and reports every problem, unreadable
metadata is a :class:`DatasetError` naming the file, the collector meets its budget."""
from __future__ import annotations

import builtins
import gzip
import io
import json
import os
import shutil
import zlib
from pathlib import Path

import pytest

from cwm.dataset.loader import DatasetLoader
from cwm.dataset.store import CorruptShardError, CorruptShardWarning, DatasetError, DatasetStore


def _copy(tiny_dataset, tmp_path) -> Path:
    dst = tmp_path / "ds"
    shutil.copytree(tiny_dataset, dst)
    return dst


def _snapshot(root: Path) -> dict:
    """Every entry under ``root`` (root included): kind, size, mode, mtime in ns."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        out[str(p.relative_to(root))] = (p.is_dir(), st.st_size, st.st_mode, st.st_mtime_ns)
    return out


def _verify_cli(root, capsys, *extra):
    from cwm.dataset_cli import main

    rc = main(["verify", "--root", str(root), "--replay", "0", *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---------------------------------------------------------------- finding 4: reads do not write
def _forbid_writes_under(monkeypatch, root: Path):
    """Make any write-type file-system call under ``root`` raise (on top of the snapshot check:
    tests may run as root, where a read-only ``chmod`` blocks nothing)."""
    root = os.path.realpath(root)
    attempts = []

    def under(path) -> bool:
        try:
            p = os.path.realpath(os.fsdecode(path))
        except TypeError:  # a file descriptor
            return False
        return p == root or p.startswith(root + os.sep)

    def guard(name, fn, path_args=(0,)):
        def wrapped(*args, **kwargs):
            if any(i < len(args) and under(args[i]) for i in path_args):
                attempts.append((name, args))
                raise PermissionError(f"test: {name} under a read-only dataset: {args}")
            return fn(*args, **kwargs)
        monkeypatch.setattr(os, name, wrapped)

    for name in ("mkdir", "makedirs", "remove", "unlink", "rmdir", "truncate"):
        guard(name, getattr(os, name))
    for name in ("replace", "rename"):
        guard(name, getattr(os, name), (0, 1))

    real_open = builtins.open

    def open_(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and under(file):
            attempts.append(("open", file, mode))
            raise PermissionError(f"test: open({file!r}, {mode!r}) under a read-only dataset")
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)
    real_os_open = os.open

    def os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC) and under(path):
            attempts.append(("os.open", path, flags))
            raise PermissionError(f"test: os.open({path!r}) for writing under a read-only dataset")
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    return attempts


def test_loading_a_dataset_writes_nothing(tiny_dataset, tmp_path, monkeypatch):
    from cwm.dataset.stats import dataset_stats
    from cwm.dataset.verify import verify

    root = _copy(tiny_dataset, tmp_path)
    shutil.rmtree(root / "journal", ignore_errors=True)  # as shipped: data/dataset has no journal/
    before = _snapshot(root)
    attempts = _forbid_writes_under(monkeypatch, root)

    loader = DatasetLoader(root)
    trajs = list(loader)
    assert len(trajs) == 6 * 12 and loader.task_keys("test") and loader.task_keys("train")
    assert loader.store.manifest()["records"] == 72
    for key in loader.task_keys():
        loader.workload(key)
    assert dataset_stats(root)["records"] == 72
    assert verify(root, replay_per_task=1, log=lambda *_: None)["problems"] == []
    monkeypatch.undo()

    assert attempts == []  # no write was even tried
    assert _snapshot(root) == before  # nothing created, removed or modified (journal/ included)


def _make_read_only(root: Path):
    """Really forbid writes under ``root``: ``chmod a-w`` for a normal user; for root (whom file
    modes do not stop) the immutable attribute (``chattr +i``). Returns an undo, or ``None``
    where neither works here."""
    import subprocess

    paths = [root, *root.rglob("*")]
    if os.geteuid() != 0:
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return lambda: [p.chmod(0o755 if p.is_dir() else 0o644) for p in paths]
    if shutil.which("chattr") is None:
        return None
    if subprocess.run(["chattr", "-R", "+i", str(root)], capture_output=True).returncode != 0:
        subprocess.run(["chattr", "-R", "-i", str(root)], capture_output=True)
        return None
    return lambda: subprocess.run(["chattr", "-R", "-i", str(root)], check=True, capture_output=True)


def test_a_read_only_dataset_loads(tiny_dataset, tmp_path):
    from cwm.dataset.stats import dataset_stats
    from cwm.dataset.verify import verify

    root = _copy(tiny_dataset, tmp_path)
    shutil.rmtree(root / "journal", ignore_errors=True)
    undo = _make_read_only(root)
    if undo is None:
        pytest.skip("cannot make a folder read-only for root here (no chattr +i); the test above covers it")
    try:
        with pytest.raises(OSError):  # the guard is real
            (root / "journal").mkdir()
        loader = DatasetLoader(root)
        assert len(list(loader)) == 72 and loader.store.manifest()["records"] == 72
        assert dataset_stats(root)["records"] == 72
        assert verify(root, replay_per_task=0, log=lambda *_: None)["problems"] == []
    finally:
        undo()


def test_loading_a_missing_dataset_is_an_error_and_creates_nothing(tmp_path):
    with pytest.raises(DatasetError, match="nowhere"):
        DatasetLoader(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------- finding 7: verify that verifies
def _shards(root) -> list[Path]:
    return sorted((root / "shards").glob("*.jsonl.gz"))


def _flip_to_zlib_error(shard: Path) -> None:
    """Flip one byte of the deflate stream so that decompression raises ``zlib.error``."""
    data = shard.read_bytes()
    for i in range(len(data) // 3, len(data) - 8):
        bad = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
        try:
            gzip.decompress(bad)
        except zlib.error:
            shard.write_bytes(bad)
            return
        except Exception:
            continue
    raise AssertionError("no byte flip gives zlib.error")


def test_verify_reports_a_missing_shard(tiny_dataset, tmp_path, capsys):
    root = _copy(tiny_dataset, tmp_path)
    gone = _shards(root)[0]
    gone.unlink()
    rc, out, _ = _verify_cli(root, capsys)
    assert rc == 1
    assert any(gone.name in line and "missing" in line for line in out.splitlines() if line.startswith("PROBLEM"))
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["problems"] >= 1 and summary["records"] == 60 and summary["manifest_records"] == 72


def test_verify_lists_every_problem_and_never_stops(tiny_dataset, tmp_path, capsys):
    root = _copy(tiny_dataset, tmp_path)
    truncated, flipped, missing, short, _, _ = _shards(root)
    truncated.write_bytes(truncated.read_bytes()[:100])  # undecodable: EOFError / CorruptShardError
    _flip_to_zlib_error(flipped)  # undecodable: raw zlib.error before the fix
    missing.unlink()
    lines = gzip.decompress(short.read_bytes()).decode().splitlines(keepends=True)
    short.write_bytes(gzip.compress("".join(lines[:-2]).encode()))  # valid gzip, 2 records fewer

    rc, out, err = _verify_cli(root, capsys)
    assert rc == 1 and "Traceback" not in out + err
    problems = [line for line in out.splitlines() if line.startswith("PROBLEM")]
    assert any(truncated.name in p and "undecodable" in p for p in problems), problems
    assert any(flipped.name in p and "undecodable" in p for p in problems), problems
    assert any(missing.name in p and "missing" in p for p in problems), problems
    assert any(short.name in p and "10 records, manifest says 12" in p for p in problems), problems
    for shard in (truncated, flipped, short):
        assert any(shard.name in p and "sha256" in p for p in problems), problems
    assert "--skip-corrupt" not in out + err  # verify does not suggest a flag it does not take
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["problems"] == len(problems) and summary["records"] == 2 * 12 + 10


def test_verify_reports_files_the_manifest_does_not_list(tiny_dataset, tmp_path):
    from cwm.dataset.verify import verify

    root = _copy(tiny_dataset, tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    key = sorted(manifest["shards"])[0]
    del manifest["shards"][key]
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "tasks" / f"{sorted(manifest['shards'])[0]}.json").unlink()
    problems = verify(root, replay_per_task=0, log=lambda *_: None)["problems"]
    assert any(key in p and "not in manifest.json" in p for p in problems), problems
    assert any("tasks" in p and "missing" in p for p in problems), problems
    assert any("manifest.json" in p and "records" in p for p in problems), problems  # totals disagree


@pytest.mark.parametrize("name", ["manifest.json", "split.json"])
def test_unparsable_manifest_or_split_names_the_file(tiny_dataset, tmp_path, capsys, name):
    root = _copy(tiny_dataset, tmp_path)
    (root / name).write_text('{"shards": {')  # cut short
    with pytest.raises(DatasetError, match=name):
        DatasetLoader(root).store.manifest()
    rc, out, err = _verify_cli(root, capsys)
    assert rc != 0 and "Traceback" not in out + err and "JSONDecodeError" not in out + err
    assert name in out + err


def test_loader_skip_corrupt_skips_undecodable_shards_with_a_warning(tiny_dataset, tmp_path):
    root = _copy(tiny_dataset, tmp_path)
    truncated, flipped, missing = _shards(root)[:3]
    truncated.write_bytes(truncated.read_bytes()[:100])
    _flip_to_zlib_error(flipped)
    with pytest.raises(CorruptShardError, match=flipped.name):  # not a raw zlib.error
        DatasetStore(root).shard_records(flipped.name.split(".")[0])
    missing.unlink()
    with pytest.raises(CorruptShardError, match=f"{missing.name}: shard is missing"):
        DatasetLoader(root).trajectories(missing.name.split(".")[0])  # not an unfinished task
    with pytest.warns(CorruptShardWarning) as caught:
        trajs = list(DatasetLoader(root, skip_corrupt=True))
    assert len(trajs) == 3 * 12
    text = " ".join(str(w.message) for w in caught)
    assert truncated.name in text and flipped.name in text and missing.name in text


# ---------------------------------------------------------------- the resume test's lost record
def test_unterminated_last_journal_line_is_not_acknowledged(tmp_path):
    """A line without its newline was cut by a crash, even when it happens to parse: it was
    never acknowledged, and ``journal_records`` must agree with ``append`` (which drops it)."""
    store = DatasetStore(tmp_path)
    rows = [{"id": i} for i in range(5)]
    store.append("k", rows[:3])
    with open(store.journal_path("k"), "ab") as f:
        f.write(json.dumps(rows[3]).encode())  # complete JSON, the newline never written
    assert store.journal_records("k") == rows[:3]
    store.append("k", [rows[3], rows[4]])
    assert store.journal_records("k") == rows


def _fake_tune_phase(always_duplicate: bool):
    """Stands in for MetaSchedule: measures ``n`` programs, the first of them already measured
    when the seed is the natural one (``cfg.seed + len(previous)``), as a real search re-seeded
    with its own best records can (seen on matmul_48 with 39 of 40 measured)."""
    from cwm.tuning import collect

    calls = []

    def tune(mod, target, phase, n, previous, cfg, sink, builder, runner=None, seed=None):
        seed = cfg.seed + len(previous) if seed is None else seed
        calls.append((phase, n, seed))
        natural = seed == cfg.seed + len(previous)
        batch = []
        for j in range(n):
            dup = (j == 0 and natural) or always_duplicate
            h = previous[0]["final_hash"] if dup and previous else hash((phase, seed, j)) & 0xFFFFFFFF
            batch.append({"trace": f"t{h}", "run_secs": [1.0, 1.0, 1.0], "build_error": None,
                          "run_error": None, "final_hash": h})
        sink(batch)

    return collect, tune, calls


@pytest.mark.parametrize("always_duplicate", [False, True])
def test_resume_tops_up_the_budget_when_the_search_repeats_itself(tmp_path, monkeypatch, always_duplicate):
    from cwm import workloads
    from cwm.dataset.store import register_task

    collect, tune, calls = _fake_tune_phase(always_duplicate)
    monkeypatch.setattr(collect, "_tune_phase", tune)
    store = DatasetStore(tmp_path)
    key = register_task(store, "matmul_16", workloads.matmul(16), {"probe": 1})
    rows = [{"id": i, "task": key, "source": "random" if i < 8 else "search", "trace": f"r{i}",
             "run_secs": [1.0], "build_error": None, "run_error": None, "final_hash": 10_000 + i}
            for i in range(39)]
    store.append(key, rows)  # killed with 39 of 8 + 32 measured
    cfg = collect.CollectConfig(trials=32, random_samples=8)
    collect.collect_task(store, key, None, cfg, builder=None)
    final = store.journal_records(key)
    assert [r["id"] for r in final] == list(range(len(final)))
    assert len({r["final_hash"] for r in final}) == len(final)
    if always_duplicate:  # a search that only repeats itself ends (with a warning), short of budget
        assert len(final) == 39 and 1 < len(calls) <= 5
    else:
        assert len(final) == 40 and final[:39] == rows
        assert len({seed for _, _, seed in calls}) == len(calls)  # a retry is not the same search again
