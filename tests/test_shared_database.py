"""The tuning database shared by a machine's compiles (issue #14): a task tuned by one compile is
reused by the next (another work dir, another model holding the same layer), records are never
duplicated (kill -9 included), two compiles at once are safe, and it can be turned off."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal

import numpy as np
import pytest

from tests.compile_helpers import fast_settings


def _mlp(seed: int, depth: int = 1):
    import torch

    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval(), torch.randn(8, 64)


def _compile(root, work_dir, seed=0, depth=1, trials=4, **kwargs):
    import cwm

    model, x = _mlp(seed, depth)
    compiled = cwm.compile(model, example_inputs=(x,), trials_per_task=trials, cost_model="random",
                           settings=fast_settings(), work_dir=str(work_dir), tuning_cache=str(root), **kwargs)
    np.testing.assert_allclose(compiled(x.numpy()), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    return compiled


def _record_lines(root) -> list:
    folders = [os.path.join(root, d) for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))]
    assert len(folders) == 1  # one target
    path = os.path.join(folders[0], "database_tuning_record.json")
    return [line for line in open(path).read().splitlines() if line.strip()]


def test_root_resolution(monkeypatch, tmp_path):
    from cwm.tuning.shared_database import default_root, resolve_root

    monkeypatch.delenv("CWM_TUNING_CACHE", raising=False)
    assert resolve_root(True) == default_root() and default_root().endswith(os.path.join(".cache", "cwm", "tuning"))
    monkeypatch.setenv("CWM_TUNING_CACHE", str(tmp_path))
    assert resolve_root(True) == str(tmp_path)
    monkeypatch.setenv("CWM_TUNING_CACHE", "off")
    assert resolve_root(True) is None
    assert resolve_root(False) is None and resolve_root("off") is None and resolve_root(str(tmp_path)) == str(tmp_path)


def test_a_second_compile_reuses_the_first_ones_records(tmp_path):
    root = tmp_path / "shared"
    first = _compile(root, tmp_path / "a")
    r1 = first.report
    assert r1["new_records"] > 0 and r1["shared_records"] == 0
    assert r1["shared_database"].startswith(str(root))
    stored = _record_lines(root)
    assert len(stored) == r1["new_records"]
    # a new work dir, the same network: every task starts from the shared records, nothing is measured
    second = _compile(root, tmp_path / "b")
    r2 = second.report
    assert r2["new_records"] == 0 and r2["shared_records"] == r1["new_records"]
    assert all(t["status"] == "reused" and t["shared"] == t["reused"] for t in r2["tasks"])
    assert _record_lines(root) == stored  # nothing appended twice


def test_the_same_layer_in_another_model_is_reused(tmp_path):
    root = tmp_path / "shared"
    _compile(root, tmp_path / "a", seed=0, depth=1)
    deeper = _compile(root, tmp_path / "b", seed=1, depth=3, trials=4)  # other weights, the layer 3 times
    shared = [t for t in deeper.report["tasks"] if t["shared"]]
    assert shared and all(t["new"] == 0 for t in shared)


def test_turned_off_it_is_neither_read_nor_written(tmp_path):
    root = tmp_path / "shared"
    _compile(root, tmp_path / "a")
    count = len(_record_lines(root))
    off = _compile("off", tmp_path / "b")
    assert off.report["shared_records"] == 0 and off.report["new_records"] > 0
    assert off.report["shared_database"] is None
    assert len(_record_lines(root)) == count


def test_export_after_kill_9_adds_no_duplicate(tmp_path):
    """A writer killed in the middle of an append leaves a cut line: the next open drops it and an
    export repeated afterwards adds exactly what is missing."""
    from cwm.compile.api import run_pipeline
    from cwm.tuning.shared_database import SharedDatabase

    root = tmp_path / "shared"
    model, x = _mlp(0)
    state = run_pipeline(model, example_inputs=(x,), trials_per_task=6, cost_model="random", settings=fast_settings(),
                         work_dir=str(tmp_path / "a"), tuning_cache="off",
                         pipeline="cwm-import,cwm-partition,cwm-layout-free,cwm-tune")
    shared = SharedDatabase(str(root), state.target)
    total = shared.export_from(state.work_dir, state.tasks)
    assert total == state.tuning.new_records > 2
    lines = _record_lines(root)
    path = os.path.join(shared.folder, "database_tuning_record.json")
    # as if killed mid-append: two whole lines lost, a third cut in half
    with open(path, "w") as f:
        f.write("\n".join(lines[:-3]) + "\n" + lines[-3][: len(lines[-3]) // 2])
    assert shared.export_from(state.work_dir, state.tasks) == 3
    assert sorted(_record_lines(root)) == sorted(lines)
    assert shared.export_from(state.work_dir, state.tasks) == 0


def _export_loop(root, work_dir, tasks_json, target_json, rounds):
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from cwm.tuning.shared_database import SharedDatabase

    class Task:  # what export_from reads of an ExtractedTask
        def __init__(self, mod):
            self.dispatched = [mod]

    tasks = [Task(ms.database.Workload.from_json(w).mod) for w in tasks_json]
    shared = SharedDatabase(root, tvm.target.Target(target_json))
    for _ in range(rounds):
        shared.export_from(work_dir, tasks)


def test_two_processes_at_once_leave_one_copy_of_each_record(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from cwm.compile.api import run_pipeline

    root = tmp_path / "shared"
    model, x = _mlp(0)
    state = run_pipeline(model, example_inputs=(x,), trials_per_task=4, cost_model="random", settings=fast_settings(),
                         work_dir=str(tmp_path / "a"), tuning_cache="off",
                         pipeline="cwm-import,cwm-partition,cwm-layout-free,cwm-tune")
    tasks = [[str(v) for v in ms.database.Workload(t.dispatched[0]).as_json()] for t in state.tasks]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_export_loop, args=(str(root), state.work_dir, tasks, json.loads(str(state.target)), 5))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    lines = _record_lines(root)
    assert len(lines) == len(set(lines)) == state.tuning.new_records


def test_a_killed_holder_does_not_block_the_next(tmp_path):
    """The lock is an flock: a process killed while holding it frees it."""
    import tvm

    from cwm.tuning.shared_database import SharedDatabase

    shared = SharedDatabase(str(tmp_path / "shared"), tvm.target.Target("llvm"))
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()

    def hold():
        with shared._locked():
            ready.set()
            signal.pause()

    p = ctx.Process(target=hold)
    p.start()
    assert ready.wait(60)
    os.kill(p.pid, signal.SIGKILL)
    p.join(30)
    assert shared.count() == 0  # takes the lock


@pytest.mark.parametrize("bad", ["not json\n", "[0, \"x\"]\n"])
def test_a_damaged_shared_file_is_repaired_not_fatal(tmp_path, bad):
    root = tmp_path / "shared"
    _compile(root, tmp_path / "a")
    lines = _record_lines(root)
    folder = os.path.dirname(os.path.join(root, os.listdir(root)[0], "x"))
    with open(os.path.join(folder, "database_tuning_record.json"), "a") as f:
        f.write(bad)
    with pytest.warns(Warning):
        again = _compile(root, tmp_path / "b")
    assert again.report["new_records"] == 0
    assert _record_lines(root) == lines  # the bad line was dropped (kept in a .damaged copy)
