"""States by replay, checked against what tuning actually built."""
from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from cwm import replay
from cwm.actions import canonicalize


def test_fixture_covers_required_workloads_and_targets(trace_records):
    per_workload = Counter(r["workload"] for r in trace_records)
    assert len(per_workload) >= 5
    for name in ("matmul", "conv2d", "depthwise", "batch_matmul"):
        assert any(name in w for w in per_workload), name
    assert any("softmax" in w or "layer_norm" in w for w in per_workload)
    sources = Counter((json.loads(r["target"])["kind"], r["source"]) for r in trace_records)
    assert sources[("llvm", "tuning")] >= 200 and sources[("cuda", "sampled")] >= 50


def test_full_replay_reproduces_the_built_program(trace_records, workload_mods):
    import tvm_ffi

    for rec in trace_records:
        states = replay.action_states(workload_mods[rec["workload"]], rec["trace"])
        final = states[-1]
        assert int(tvm_ffi.structural_hash(final)) == rec["final_hash"], rec["workload"]
        assert len(states) == len(canonicalize(rec["trace"]).actions) + 1


def test_full_replay_is_structurally_equal_to_recorded_script(trace_records, workload_mods):
    import tvm_ffi
    from tvm.script import from_source

    rng = random.Random(0)
    for rec in rng.sample(trace_records, 24):
        final = replay.apply_trace(workload_mods[rec["workload"]], rec["trace"]).mod
        assert final.script() == rec["final_script"]
        assert tvm_ffi.structural_equal(final, from_source(rec["final_script"]))


def test_prefix_states_match_independent_replays(trace_records, workload_mods):
    import tvm_ffi

    rng = random.Random(1)
    for rec in rng.sample(trace_records, 30):
        mod = workload_mods[rec["workload"]]
        states = replay.action_states(mod, rec["trace"])
        for k in sorted({0, len(states) - 1, rng.randrange(len(states)), rng.randrange(len(states))}):
            assert tvm_ffi.structural_equal(states[k], replay.state_after(mod, rec["trace"], k)), (rec["workload"], k)
        assert tvm_ffi.structural_equal(states[0], mod)


def test_states_change_only_at_actions(trace_records, workload_mods):
    """Each action is a transformation: most change the program (annotations on loops too)."""
    import tvm_ffi

    rec = next(r for r in trace_records if r["workload"] == "matmul_256")
    states = replay.action_states(workload_mods["matmul_256"], rec["trace"])
    changed = sum(not tvm_ffi.structural_equal(a, b) for a, b in zip(states, states[1:]))
    assert changed >= len(states) // 2
    assert "T.prim_func" in replay.state_text(states[len(states) // 2])


def test_prefix_out_of_range_is_an_error(trace_records, workload_mods):
    rec = trace_records[0]
    n = len(canonicalize(rec["trace"]).actions)
    with pytest.raises(IndexError, match=f"{n} actions"):
        replay.state_after(workload_mods[rec["workload"]], rec["trace"], n + 1)


def test_live_cuda_design_space_samples_replay_exactly():
    """Fresh CUDA candidates (no GPU needed): replay equals the candidate's own program."""
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    from cwm import workloads
    from cwm.actions.trace_io import trace_to_json
    from cwm.tuning import resolve_target

    mod = workloads.matmul(128)
    ctx = ms.TuneContext(mod=mod, target=resolve_target("cuda"), space_generator="post-order-apply",
                         search_strategy=ms.search_strategy.EvolutionarySearch(
                             population_size=32, init_min_unmeasured=8, genetic_num_iters=1),
                         num_threads=2, rand_state=7)
    ctx.generate_design_space()
    ctx.pre_tuning(max_trials=8, num_trials_per_iter=8, database=ms.database.MemoryDatabase(),
                   cost_model=ms.cost_model.RandomModel())
    cands = list(ctx.generate_measure_candidates())
    ctx.post_tuning()
    assert len(cands) >= 4
    for c in cands:
        text = trace_to_json(c.sch.trace)
        assert tvm_ffi.structural_equal(replay.action_states(mod, text)[-1], c.sch.mod)


def test_live_llvm_tuning_traces_replay_exactly(tmp_path):
    """Tune for real (16 trials), record every measured candidate, replay each exactly."""
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    from cwm import workloads
    from cwm.dataset.recorder import make_recorder
    from cwm.tuning import FastSettings, host_target
    from cwm.tuning.tune import drop_unnamed_ms_handlers

    drop_unnamed_ms_handlers()  # MetaSchedule's logging set-up crashes on pytest's handlers
    mod, records = workloads.matmul(64), []
    s = FastSettings(population_size=32, init_min_unmeasured=8, num_trials_per_iter=8, builder_kind="in-process")
    callbacks = ms.measure_callback.MeasureCallback.create("default") + [make_recorder(records.extend)]
    ms.tune_tir(mod, host_target(), str(tmp_path), max_trials_global=16, num_trials_per_iter=8,
                builder=s.builder(), runner=s.runner(), strategy=s.strategy(), cost_model="random",
                measure_callbacks=callbacks, num_tuning_cores=2, seed=3)
    assert len(records) >= 8
    assert sum(r["run_secs"] is not None and r["run_error"] is None for r in records) >= 8
    for r in records:
        assert json.loads(r["target"])["kind"] == "llvm"
        final = replay.action_states(mod, r["trace"])[-1]
        assert int(tvm_ffi.structural_hash(final)) == r["final_hash"]
        assert final.script() == r["final_script"]
