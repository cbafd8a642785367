"""``cwm.tuning.tune_model`` keeps the work-dir contract of ``cwm.tune`` / ``cwm.compile``:
it holds the work dir's lock, and a database damaged earlier is repaired, not fatal."""
from __future__ import annotations

import os
import threading

import pytest

from cwm.tuning.json_database import DatabaseWarning
from tests.compile_helpers import relax_module

RECORDS = "database_tuning_record.json"


@pytest.fixture(scope="module")
def fused():
    from tvm import relax

    from cwm.partition import fuse
    from cwm.target_spec import host_target

    mod = relax_module(lambda x, w: relax.op.nn.relu(relax.op.matmul(x, w)),
                       x=((16, 16), "float32"), w=((16, 16), "float32"))
    target = host_target()
    return fuse(mod, target), target


def _tune(fused, work_dir):
    from cwm.tuning import tune_model

    mod, target = fused
    return tune_model(mod, target, trials_per_task=2, work_dir=str(work_dir), cost_model="random")


def test_a_damaged_database_is_repaired_then_tuning_goes_on(fused, tmp_path):
    first = _tune(fused, tmp_path)
    assert first.n_records >= 1
    with open(tmp_path / RECORDS, "a") as f:
        f.write('{"not a record": \n')  # what a kill -9 in the middle of a write leaves
    with pytest.warns(DatabaseWarning, match=RECORDS):
        second = _tune(fused, tmp_path)
    assert second.n_records >= first.n_records


def test_it_waits_for_the_work_dir_lock(fused, tmp_path, capfd):
    import fcntl

    from cwm.dirlock import lock_path

    done = threading.Event()
    # another process's lock: an open file description of its own, held with flock
    fd = os.open(lock_path(str(tmp_path)), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    worker = threading.Thread(target=lambda: (_tune(fused, tmp_path), done.set()))
    worker.start()
    try:
        # the waiting line is printed before it blocks: proof it waits on the lock, not that it is slow
        for _ in range(100):
            if "cwm: waiting for the lock on work dir" in capfd.readouterr().err:
                break
            assert not done.wait(0.1), "tune_model ran while another holder had the work dir's lock"
        else:
            pytest.fail("tune_model neither waited for the work dir's lock nor finished within 10 s")
        assert not done.is_set() and not (tmp_path / RECORDS).exists()
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    worker.join(300)
    assert done.is_set()
