"""PooledBuilder: persistent workers, real builds, and a timeout that kills and recovers."""
from __future__ import annotations

import os
import shutil

import cloudpickle

from cwm.tuning.pooled_builder import PooledBuilder
from tests import slow_build


def test_builds_real_candidates_and_recovers_from_a_timeout():
    from tvm import te
    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from cwm import workloads
    from cwm.tuning import host_target

    cloudpickle.register_pickle_by_value(slow_build)
    a = te.placeholder((8,), name="slow_A")
    slow = tvm.IRModule({"main": te.create_prim_func([a, te.compute((8,), lambda i: a[i] + 1, name="B")])})
    fast = workloads.matmul(32)
    target = host_target()
    # 20 s: a real build plus worker start-up must fit on a loaded 2-core CI machine (3 s did not)
    builder = PooledBuilder(max_workers=2, timeout_sec=20, build_fn=slow_build.slow_then_build)
    results, again = [], []
    try:
        results = builder.build([BuilderInput(fast, target), BuilderInput(slow, target), BuilderInput(fast, target)])
        assert results[0].error_msg is None and os.path.exists(results[0].artifact_path)
        assert "timeout" in results[1].error_msg and results[1].artifact_path is None
        assert results[2].error_msg is None
        again = builder.build([BuilderInput(fast, target)])  # the killed worker restarts
        assert again[0].error_msg is None
        assert len(builder.build_seconds) == 2
    finally:
        builder.close()
        for r in results + again:
            if r.artifact_path:
                shutil.rmtree(os.path.dirname(r.artifact_path), ignore_errors=True)
