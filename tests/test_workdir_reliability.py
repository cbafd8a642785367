"""A work dir survives concurrent compiles and damaged files (issue 13, findings 1 and 3).

* Two compiles on one work dir: the second waits for the first's lock (and says for whom);
  ``lock_timeout`` turns the wait into a ``WorkDirBusyError`` naming the holder.
* A database already damaged by concurrent writes (every workload twice, records pointing at
  the wrong line) is repaired; corrupt or truncated lines are dropped with a warning naming the
  file and line; the tuning state is believed only where the database agrees with it.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import cwm
from cwm.tuning.json_database import DatabaseWarning
from tests.compile_helpers import fast_settings

WORKLOADS = "database_workload.json"
RECORDS = "database_tuning_record.json"
STATE = "cwm_tuning_state.json"
TRIALS = 2


def write_tiny_mlp(path) -> str:
    """``y = relu(x @ w1 + b1) @ w2`` (x: 2x8) as ONNX: two small tasks."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(s).astype("float32"), n)
               for n, s in (("w1", (8, 16)), ("b1", (16,)), ("w2", (16, 4)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "tiny_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="module")
def mlp_onnx(tmp_path_factory):
    return write_tiny_mlp(tmp_path_factory.mktemp("mlp") / "mlp.onnx")


def _compile(model, work_dir, trials=TRIALS, **kwargs):
    return cwm.compile(model, trials_per_task=trials, cost_model="random", work_dir=work_dir,
                       settings=fast_settings(), **kwargs)


@pytest.fixture(scope="module")
def tuned(mlp_onnx, tmp_path_factory):
    """A work dir tuned for TRIALS per task (copy it before changing it)."""
    work_dir = tmp_path_factory.mktemp("tuned")
    _compile(mlp_onnx, work_dir)
    return work_dir


def _copy(tuned, tmp_path):
    work_dir = tmp_path / "w"
    shutil.copytree(tuned, work_dir, ignore=shutil.ignore_patterns("logs", ".cwm.lock"))
    return work_dir


def _lines(path) -> list:
    return open(path, "rb").read().splitlines()


def _records_per_workload(work_dir) -> dict:
    """``{workload line text: number of records}`` of a (readable) database."""
    workloads = _lines(work_dir / WORKLOADS)
    counts = {}
    for line in _lines(work_dir / RECORDS):
        key = workloads[json.loads(line)[0]]
        counts[key] = counts.get(key, 0) + 1
    return counts


def _from_db(model, work_dir):
    return _compile(model, work_dir, pipeline="from-db")


@contextlib.contextmanager
def _no_database_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatabaseWarning)
        yield


# ----------------------------------------------------------------------------- finding 1: the lock
def _script(body: str) -> str:
    return textwrap.dedent(f"import sys; sys.path.insert(0, {os.getcwd()!r})\n") + textwrap.dedent(body)


def test_second_compile_waits_for_the_first(mlp_onnx, tmp_path):
    """Two processes compile into one work dir at once; the second waits for the first's lock,
    says whose, then reuses its records. The database holds every workload once."""
    work_dir, marker = tmp_path / "w", tmp_path / "go"
    compile_call = (f"cwm.compile({mlp_onnx!r}, trials_per_task=1, cost_model='random', work_dir={str(work_dir)!r}, "
                    "settings=fast_settings(){extra})")
    first = _script(f"""
        import os, time
        import cwm
        from tests.compile_helpers import fast_settings
        from tvm.ir.utils import derived_object
        from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

        @derived_object
        class Hold(PyMeasureCallback):  # keep the lock until the test says go
            def apply(self, *args):
                deadline = time.monotonic() + 90
                while not os.path.exists({str(marker)!r}) and time.monotonic() < deadline:
                    time.sleep(0.05)

        {compile_call.format(extra=", measure_callbacks=(Hold(),)")}
    """)
    second = _script(f"""
        import json
        import cwm
        from tests.compile_helpers import fast_settings
        model = {compile_call.format(extra="")}
        print(json.dumps([[t["name"], t["status"], t["new"]] for t in model.report["tasks"]]))
    """)
    err_path = tmp_path / "second.err"
    a = subprocess.Popen([sys.executable, "-c", first], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    b = None
    try:
        from cwm.dirlock import lock_path, read_holder

        deadline = time.monotonic() + 90
        while read_holder(lock_path(work_dir)).get("pid") != a.pid:
            assert a.poll() is None and time.monotonic() < deadline, "the first compile took no lock on its work dir"
            time.sleep(0.05)
        with open(err_path, "w") as err:
            b = subprocess.Popen([sys.executable, "-c", second], stdout=subprocess.PIPE, stderr=err)
        while "waiting for the lock" not in err_path.read_text():
            assert b.poll() is None, f"the second compile did not wait: {err_path.read_text()[-2000:]}"
            assert time.monotonic() < deadline + 60, "the second compile never waited for the lock"
            time.sleep(0.05)
        marker.touch()
        assert a.wait(timeout=180) == 0, a.stderr.read().decode()[-2000:]
        out, _ = b.communicate(timeout=180)
    finally:
        marker.touch()
        for process in (a, b):
            if process is not None and process.poll() is None:
                process.kill()
    assert b.returncode == 0, err_path.read_text()[-2000:]
    message = err_path.read_text()
    assert f"work dir {work_dir} held by pid {a.pid}" in message, message
    tasks = json.loads(out.decode().strip().splitlines()[-1])
    assert tasks and all(status in ("reused", "finished") and new == 0 for _, status, new in tasks), tasks
    workloads = _lines(work_dir / WORKLOADS)
    assert len(workloads) == len(set(workloads)) == len(tasks)
    with _no_database_warning():
        _from_db(mlp_onnx, work_dir)  # the database loads as it is


def _hold_lock(work_dir):
    """A process holding the lock of ``work_dir`` until killed."""
    script = _script(f"""
        import time
        from cwm.dirlock import lock_dir
        with lock_dir({str(work_dir)!r}):
            print("held", flush=True)
            time.sleep(120)
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert holder.stdout.readline().strip() == b"held", holder.stderr.read().decode()
    return holder


def test_lock_timeout_names_the_holder(mlp_onnx, tmp_path, capsys):
    from cwm.compile.cli import main
    from cwm.compile.errors import WorkDirBusyError

    work_dir = tmp_path / "w"
    holder = _hold_lock(work_dir)
    try:
        start = time.monotonic()
        with pytest.raises(WorkDirBusyError, match=f"in use by pid {holder.pid}.*{work_dir}"):
            _compile(mlp_onnx, work_dir, lock_timeout=0.5)
        assert time.monotonic() - start < 30
        assert "waiting for the lock" in capsys.readouterr().err
        code = main([mlp_onnx, "-o", str(tmp_path / "out"), "--work-dir", str(work_dir), "--lock-timeout", "0",
                     "--no-baseline", "--no-progress"])
        assert code == 2
        err = capsys.readouterr().err
        assert err.startswith("cwm compile: error:") and f"pid {holder.pid}" in err and "Traceback" not in err
    finally:
        holder.kill()
        holder.wait()
    _compile(mlp_onnx, work_dir, lock_timeout=0, pipeline="no-tune")  # released when its holder dies


def test_dirlock_is_reentrant_and_exclusive(tmp_path):
    from cwm.dirlock import LockTimeout, lock_dir, read_holder

    with lock_dir(tmp_path) as path:
        assert read_holder(path)["pid"] == os.getpid()
        with lock_dir(tmp_path, timeout=0):  # the same thread again: no deadlock
            pass
        probe = _script(f"""
            from cwm.dirlock import LockTimeout, lock_dir
            try:
                with lock_dir({str(tmp_path)!r}, timeout=0):
                    print("got it")
            except LockTimeout as error:
                print("busy", error.holder.get("pid"))
        """)
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60).stdout
        assert out.split() == ["busy", str(os.getpid())]
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "got it"
    assert LockTimeout.__mro__[1] is TimeoutError


# ------------------------------------------------------------------- finding 1: a damaged database
def _damage_like_two_writers(work_dir):
    """What two processes appending at once leave: every workload line twice (interleaved), and
    records carrying each process's own index, which now points at the wrong line."""
    workloads = _lines(work_dir / WORKLOADS)
    with open(work_dir / WORKLOADS, "wb") as f:
        f.write(b"".join(line + b"\n" + line + b"\n" for line in workloads))


def test_database_written_twice_is_repaired(mlp_onnx, tuned, tmp_path):
    from tvm.s_tir import meta_schedule as ms

    work_dir = _copy(tuned, tmp_path)
    expected = _records_per_workload(work_dir)
    assert len(expected) == 2
    _damage_like_two_writers(work_dir)
    with pytest.raises(Exception, match="parallel_for_dynamic|old_outputs.size|ScheduleError"):
        ms.database.JSONDatabase(work_dir=str(work_dir))  # what every compile on it hit
    with pytest.warns(DatabaseWarning, match=f"{WORKLOADS}:2: duplicate of line 1"):
        model = _from_db(mlp_onnx, work_dir)
    assert model.report["scheduled_functions"] == 2
    assert _records_per_workload(work_dir) == expected  # every record back on its own workload
    assert len(_lines(work_dir / WORKLOADS)) == 2
    backups = sorted(p.name for p in work_dir.iterdir() if ".damaged-" in p.name)
    assert [b.split(".damaged-")[0] for b in backups] == [RECORDS, WORKLOADS]
    with _no_database_warning():
        again = _compile(mlp_onnx, work_dir)  # and it stays repaired: nothing to re-tune, nothing to fix
    assert all(t["status"] == "reused" for t in again.report["tasks"])


# ------------------------------------------------------------------- finding 3: corrupt lines
def test_corrupt_middle_record_line_is_skipped(mlp_onnx, tuned, tmp_path):
    work_dir = _copy(tuned, tmp_path)
    lines = _lines(work_dir / RECORDS)
    assert len(lines) >= 3
    lines[1] = lines[1][: len(lines[1]) // 2] + b"#garbage"
    open(work_dir / RECORDS, "wb").write(b"".join(line + b"\n" for line in lines))
    with pytest.warns(DatabaseWarning, match=rf"{RECORDS}:2: unreadable record") as caught:
        model = _from_db(mlp_onnx, work_dir)
    assert str(work_dir) in str(caught[0].message)
    assert model.report["scheduled_functions"] == 2
    assert len(_lines(work_dir / RECORDS)) == len(lines) - 1


def test_truncated_workload_line_is_skipped(mlp_onnx, tuned, tmp_path):
    work_dir = _copy(tuned, tmp_path)
    workloads = _lines(work_dir / WORKLOADS)
    workloads[0] = workloads[0][:100]  # cut short, newline kept
    open(work_dir / WORKLOADS, "wb").write(b"".join(line + b"\n" for line in workloads))
    with pytest.warns(DatabaseWarning, match=rf"{WORKLOADS}:1: unreadable workload"):
        model = _from_db(mlp_onnx, work_dir)
    assert model.report["scheduled_functions"] == 1  # the other task keeps its schedule
    assert len(_lines(work_dir / WORKLOADS)) == 1
    assert all(json.loads(line)[0] == 0 for line in _lines(work_dir / RECORDS))


def test_record_whose_trace_does_not_fit_is_named(mlp_onnx, tuned, tmp_path):
    """Valid JSON, but its trace names a block its workload does not have: TVM's own load fails
    with a raw error naming no file; here the record is dropped with its line."""
    work_dir = _copy(tuned, tmp_path)
    lines = _lines(work_dir / RECORDS)
    record = json.loads(lines[0])
    record[1][0] = json.loads(json.dumps(record[1][0]).replace('"matmul"', '"no_such_block"'))
    assert json.dumps(record) != lines[0].decode()
    lines[0] = json.dumps(record, separators=(",", ":")).encode()
    open(work_dir / RECORDS, "wb").write(b"".join(line + b"\n" for line in lines))
    with pytest.warns(DatabaseWarning, match=rf"{RECORDS}:1: record fits no workload"):
        model = _from_db(mlp_onnx, work_dir)
    assert model.report["scheduled_functions"] == 2
    assert len(_lines(work_dir / RECORDS)) == len(lines) - 1


def test_unrepairable_database_names_the_file(mlp_onnx, tuned, tmp_path, monkeypatch):
    from cwm.compile.errors import DatabaseError
    from tvm.s_tir import meta_schedule as ms

    work_dir = _copy(tuned, tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("parallel_for_dynamic error with Check failed: something")

    monkeypatch.setattr(ms.database, "JSONDatabase", broken)
    with pytest.raises(DatabaseError, match=f"{work_dir / RECORDS}.*cannot be loaded"):
        _from_db(mlp_onnx, work_dir)


# ------------------------------------------------------------------- finding 3: the tuning state
def test_edited_done_at_is_not_trusted(mlp_onnx, tuned, tmp_path):
    """After a 2-trial compile, `done_at: 4` in the state must not make 2-record tasks "finished"."""
    work_dir = _copy(tuned, tmp_path)
    state = json.loads((work_dir / STATE).read_text())
    entries = state["tasks"].values()
    assert entries
    for entry in entries:
        entry["done_at"] = 2 * TRIALS
    (work_dir / STATE).write_text(json.dumps(state))
    model = _compile(mlp_onnx, work_dir, trials=TRIALS + 1)
    tasks = model.report["tasks"]
    assert [(t["status"], t["reused"]) for t in tasks] == [("tuned", TRIALS)] * len(tasks)
    assert all(t["new"] >= 1 for t in tasks)


def test_state_claiming_missing_records_is_not_trusted():
    from cwm.compile.tuning import finished_before

    exhausted = {"done_at": 16, "records": 1, "exhausted": True}
    assert finished_before(exhausted, 16, records=1)  # a space of one schedule, searched for 16
    assert not finished_before(exhausted, 32, records=1)  # searched for less than asked now
    assert not finished_before(exhausted, 16, records=0)  # the database lost its record
    assert not finished_before({"done_at": 16, "records": 8, "exhausted": False}, 16, records=8)
    assert not finished_before({"name": "t", "done_at": 16}, 16, records=8)  # version-1 entry
    assert not finished_before({"done_at": "x", "records": 1, "exhausted": True}, 16, records=1)
