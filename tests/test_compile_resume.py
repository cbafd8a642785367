"""Tuning state persists in work_dir: an interrupted or killed compile resumes without re-measuring."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import cwm
from tests.compile_helpers import assert_close, fast_settings, onnxruntime_output, tiny_onnx  # noqa: F401

TRIALS = 4
RECORDS = "database_tuning_record.json"


def _lines(path) -> int:
    return open(path).read().count("\n") if os.path.exists(path) else 0


class Interrupted(Exception):
    pass


def _interrupt_after(batches: int):
    """A MetaSchedule measure callback raising :class:`Interrupted` on its ``batches``-th call
    (it runs after the default callbacks, so that batch is already in the database)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class Interrupt(PyMeasureCallback):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            self.calls += 1
            if self.calls >= batches:
                raise Interrupted("simulated interruption")

    return Interrupt()


def test_interrupted_compile_resumes(tiny_onnx, tmp_path):
    from cwm.frontends import tiny_cnn

    with pytest.raises(Exception, match="simulated interruption"):
        cwm.compile(tiny_onnx, trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                    settings=fast_settings(), measure_callbacks=(_interrupt_after(1),))
    committed = _lines(tmp_path / RECORDS)
    assert committed == TRIALS  # the first task's batch was committed before the interruption
    with open(tmp_path / RECORDS, "a") as f:  # a record cut short by a kill must not break the database
        f.write('[0, [["SampleCategorical"')
    model = cwm.compile(tiny_onnx, trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings())
    tasks = {t["name"]: t for t in model.report["tasks"]}
    first = tasks["fused_matmul_add1"]
    assert (first["status"], first["reused"], first["new"]) == ("reused", TRIALS, 0)
    assert model.report["reused_records"] == committed
    assert model.report["new_records"] == _lines(tmp_path / RECORDS) - committed > 0
    x = tiny_cnn.example_input(0)
    assert_close(model(x), onnxruntime_output(tiny_onnx, x))


def test_killed_compile_keeps_its_records(tiny_onnx, tmp_path):
    """SIGKILL a compiling process once the first records are on disk; the next compile reuses them."""
    trials = 2
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.getcwd()!r})
        import cwm
        from tests.compile_helpers import fast_settings
        cwm.compile({tiny_onnx!r}, trials_per_task={trials}, cost_model="xgb", work_dir={str(tmp_path)!r},
                    settings=fast_settings())
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # the child imports TVM and tunes before its first record: seconds on a quiet machine, minutes
    # on a loaded one; the loop ends at the first record, so the long deadline costs nothing
    deadline = time.monotonic() + 600
    while _lines(tmp_path / RECORDS) < 1 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    committed = _lines(tmp_path / RECORDS)
    assert committed >= 1, process.stderr.read().decode()[-2000:]
    model = cwm.compile(tiny_onnx, trials_per_task=trials, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings())
    assert model.report["reused_records"] == committed
    assert sum(t["reused"] + t["new"] for t in model.report["tasks"]) == _lines(tmp_path / RECORDS)
    first = model.report["tasks"][0]
    assert first["reused"] >= 1 and first["reused"] + first["new"] <= trials
