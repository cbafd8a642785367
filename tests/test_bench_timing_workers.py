"""bench/timing_workers.py: methods timed in their own processes (spawn), one at a time; set-up
errors and dead workers are reported, not hung on."""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"

FACTORY = textwrap.dedent('''
    import os
    import numpy as np

    def make(kind, size=1000):
        if kind == "broken":
            raise ValueError("no such runtime")
        if kind == "dies":
            def run():
                os._exit(3)
            return run, lambda: np.zeros(1)
        data = list(range(size))
        return (lambda: sum(data)), (lambda: np.array([sum(data), os.getpid()], dtype=np.int64))
''')


@pytest.fixture(scope="module")
def tw():
    # imported under its own name from bench/, as bench/e2e.py does: the spawned child finds
    # ``timing_workers._serve`` by that name
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("timing_workers")


@pytest.fixture()
def factory(tmp_path, monkeypatch):
    (tmp_path / "fake_runtime.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawn copies sys.path into the child
    return "fake_runtime:make"


def test_workers_sample_in_their_own_processes(tw, factory):
    import os

    settings = dict(warmup=2, warmup_s=0.0, min_sample_s=0.002)
    with tw.Worker("a", factory, {"kind": "ok"}, **settings).start() as a, \
            tw.Worker("b", factory, {"kind": "ok", "size": 10}, **settings).start() as b:
        assert a.output[0] == sum(range(1000)) and b.output[0] == sum(range(10))
        pids = {int(a.output[1]), int(b.output[1])}
        assert os.getpid() not in pids and len(pids) == 2  # each method in its own process
        assert a.number >= 1 and b.number > a.number  # the cheaper run needs more calls per sample
        samples = tw.rotated({"a": a.sample, "b": b.sample}, runs=4, gap_s=0.001)
    assert {k: len(v) for k, v in samples.items()} == {"a": 4, "b": 4}
    assert all(0 < x < 1 for v in samples.values() for x in v)
    assert a.process is None and b.process is None  # closed on exit


def test_setup_error_and_dead_worker_are_reported(tw, factory):
    with pytest.raises(tw.WorkerError, match="ValueError: no such runtime"):
        tw.Worker("x", factory, {"kind": "broken"}, warmup=0, warmup_s=0.0, min_sample_s=0.0).start()
    with pytest.raises(tw.WorkerError, match="died|exit code"):
        tw.Worker("y", factory, {"kind": "dies"}, warmup=1, warmup_s=0.0, min_sample_s=0.0).start()
