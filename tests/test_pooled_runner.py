"""PooledRunner: a crashing candidate is an error result, not a dead tuner."""
from __future__ import annotations

import os
import shutil

import numpy as np


def _artifact(mod, target):
    from cwm.tuning.pooled_builder import build_in_worker

    return build_in_worker(mod, target)


def test_segfaulting_candidate_is_contained_and_the_next_one_runs():
    import tvm
    from tvm import te
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, RunnerInput

    from cwm import workloads
    from cwm.tuning import host_target
    from cwm.tuning.pooled_runner import PooledRunner

    target = host_target()
    a = te.placeholder((8,), name="A")
    far = tvm.tirx.const(1 << 40, "int64")
    crash = tvm.IRModule({"main": te.create_prim_func([a, te.compute((8,), lambda i: a[i.astype("int64") + far])])})
    good = workloads.matmul(32)
    paths = [_artifact(crash, target), _artifact(good, target)]
    inputs = [RunnerInput(p, "cpu", ArgInfo.from_entry_func(m)) for p, m in zip(paths, (crash, good))]
    runner = PooledRunner(EvaluatorConfig(number=1, repeat=3, min_repeat_ms=1), timeout_sec=60)
    try:
        results = [f.result() for f in runner.run(inputs)]
        assert results[0].run_secs is None and "PooledRunner" in results[0].error_msg
        assert results[1].error_msg is None and len(results[1].run_secs) == 3
        assert all(float(s) > 0 for s in results[1].run_secs)
    finally:
        runner.close()
        for p in paths:
            shutil.rmtree(os.path.dirname(p), ignore_errors=True)


def test_integer_arguments_are_zero_filled():
    import tvm

    from cwm.tuning.pooled_runner import alloc_arguments

    (args,) = alloc_arguments(tvm.cpu(0), [("TENSOR", "int64", [1, 16]), ("TENSOR", "float32", [64])], 1)
    assert not args[0].numpy().any()
    assert np.unique(args[1].numpy()).size > 1
