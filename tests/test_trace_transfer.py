"""Contracts of cwm.tuning.trace_transfer, cwm.tuning.seed_library and the seeded search."""
import json
import math

import numpy as np
import pytest

from cwm import workloads
from cwm.tuning.seed_library import SeedEntry, SeedLibrary
from cwm.tuning.trace_transfer import (SAMPLING, closest_sketch, extent_distance, parse_json, remap_tile,
                                       signature_of_json, signature_of_sketch, transfer_decisions)


def _traces(trace_records, workload):
    return [r["trace"] for r in trace_records if r["workload"] == workload and r["source"] == "tuning"
            and r["run_secs"] and not r["build_error"] and not r["run_error"]]


@pytest.mark.parametrize("extent,factors,max_inner", [
    (64, [2, 4, 2, 4], 64), (96, [2, 4, 2, 4], 64), (7, [1, 2, 2, 2], 64), (1, [4, 4], 16),
    (3072, [1, 8, 48, 8], 64), (1000, [10, 10, 10], 4), (13, [13, 1], 1)])
def test_remap_tile_is_a_perfect_tiling(extent, factors, max_inner):
    out = remap_tile(extent, factors, max_inner)
    assert len(out) == len(factors) and all(f >= 1 for f in out)
    assert math.prod(out) == extent
    assert out[-1] <= max_inner


def test_remap_tile_keeps_a_tiling_that_fits():
    # the same extent: every factor is a divisor of what is left, so the source's tiling comes back
    for factors in ([2, 4, 2, 4], [1, 64, 1, 1], [8, 1, 1, 8]):
        assert remap_tile(math.prod(factors), factors, 64) == factors


def test_remap_tile_takes_the_nearest_divisor_in_log_scale():
    # 36 has no 8: its divisors nearest 8 in log scale are 9 (|log 9/8| = 0.12) and 6 (0.29) -> 9
    assert remap_tile(36, [3, 8], 64) == [4, 9]
    # the innermost limit: 64 wanted, at most 16 allowed -> 16
    assert remap_tile(128, [1, 2, 64], 16) == [4, 2, 16]


def _sketches(mod):
    from tvm.s_tir import meta_schedule as ms

    from cwm.target_spec import host_target

    context = ms.TuneContext(mod=mod, target=host_target(), space_generator="post-order-apply",
                             task_name="t", num_threads=1)
    return list(context.generate_design_space()), list(context.space_generator.postprocs)


def _matching(trace, mod):
    """The sketches of ``mod`` whose sampling signature is ``trace``'s."""
    return [s for s in _sketches(mod)[0] if signature_of_sketch(s) == signature_of_json(trace)]


def _scaled(trace, factor: int) -> str:
    """``trace`` with the outermost factor of every tile decision multiplied by ``factor``."""
    insts, decisions = json.loads(trace)
    tiles = {i for i, inst in enumerate(insts) if inst[0] == "SamplePerfectTile"}
    return json.dumps([insts, [[i, [d[0] * factor] + d[1:]] if i in tiles else [i, d] for i, d in decisions]])


def test_signature_and_extents_of_a_recorded_trace(trace_records):
    trace = _traces(trace_records, "conv2d_64x56x56_3x3")[0]
    signature, decisions, extents = parse_json(trace)
    # conv2d_nchw: 4 spatial loops tiled in 4, 3 reduction loops in 2; the unroll choice; the pad's location
    assert signature[:7] == ("T4",) * 4 + ("T2",) * 3 and signature[-1] == "L" and signature[-2].startswith("C")
    assert extents == [1, 64, 56, 56, 64, 3, 3] and len(decisions) == len(signature)
    # the recorded trace came from one of the workload's own design spaces
    assert signature in {signature_of_sketch(s) for s in _sketches(workloads.conv2d())[0]}


def test_transferred_decisions_compute_the_same_function(trace_records):
    """matmul_256 schedules replayed on a 96x80x48 matmul build and give the unscheduled result
    (float32, summation order changed by tiling: rtol 1e-4 on sums of 48 products of O(1) values)."""
    import tvm

    dst = workloads.matmul(96, 80, 48)
    schedules = []
    for trace in _traces(trace_records, "matmul_256")[:6]:
        schedules += [s for s in (transfer_decisions(trace, k, dst) for k in _matching(trace, dst)) if s]
    assert len(schedules) >= 4
    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 48)).astype("float32")
    b = rng.standard_normal((48, 80)).astype("float32")
    dev = tvm.cpu(0)
    for sch in schedules[:2]:
        lib = tvm.compile(sch.mod, target="llvm")
        out = tvm.runtime.tensor(np.zeros((96, 80), "float32"), dev)
        lib["main"](tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev), out)
        np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_transfer_across_epilogues(trace_records):
    """A plain conv2d's decisions on a conv2d + bias + ReLU of other shapes: other blocks, the same
    sampled loops; the tile factors fit the new extents."""
    dst = workloads.conv2d_bias_relu(c=32, h=28, w=28, oc=64)
    trace = _traces(trace_records, "conv2d_64x56x56_3x3")[0]
    sketches = _matching(trace, dst)
    assert sketches
    sch = next(s for s in (transfer_decisions(trace, k, dst) for k in sketches) if s)
    tiles = [sch.trace.decisions[i] for i in sch.trace.insts if i.kind.name == "SamplePerfectTile"]
    assert [math.prod(int(f) for f in t) for t in tiles] == [1, 64, 28, 28, 32, 3, 3]


def test_transfer_to_the_same_workload_keeps_every_decision(trace_records):
    """On its own workload a trace's decisions come back unchanged, in the sketch most like its own
    (the sketch's other instructions and attributes, e.g. the parallel extent, are this host's)."""
    src = workloads.matmul(256)
    for trace in _traces(trace_records, "matmul_256")[:3]:
        sketch, likeness = closest_sketch(trace, _sketches(src)[0])
        # the recorded trace's design space is (nearly: the fixture predates this host's sketches) one of them
        assert likeness > 0.9
        sch = transfer_decisions(trace, sketch, src)
        got = [sch.trace.decisions[i] for i in sch.trace.insts if i.kind.name in SAMPLING]
        wanted = parse_json(trace)[1]
        assert [[int(x) for x in d] if isinstance(d, (list, tuple)) or hasattr(d, "__len__") else int(d)
                for d in got] == wanted


def test_transfer_that_does_not_fit_is_none(trace_records):
    trace = _traces(trace_records, "matmul_256")[0]
    softmax_sketch = _sketches(workloads.softmax(16, 32))[0][0]
    assert transfer_decisions(trace, softmax_sketch, workloads.softmax(16, 32)) is None  # another signature
    sketch = _matching(trace, workloads.matmul(64))[0]
    assert transfer_decisions("not json", sketch, workloads.matmul(64)) is None


def _before_postproc(trace):
    insts, decisions = json.loads(trace)
    end = next((i for i, inst in enumerate(insts) if inst[0] == "EnterPostproc"), len(insts))
    return [insts[:end], [d for d in decisions if d[0] < end]]


def _entry(key, traces, networks=()):
    return SeedEntry(key, list(networks), list(traces), [1.0] * len(traces))


def test_library_candidates_nearest_extents_first_and_exclusions(tmp_path, trace_records):
    t1, t2 = _traces(trace_records, "matmul_256")[:2]
    lib = SeedLibrary([_entry("m1024", [_scaled(t1, 4)]),
                       _entry("m256", [t1, t2], networks=("netA",)),
                       _entry("m512", [_scaled(t1, 2)]),
                       _entry("softmax", _traces(trace_records, "softmax_128x768")[:1])])
    sketch = _matching(t1, workloads.matmul(300))[0]
    assert [k for k, _ in lib.candidates(sketch)] == ["m256", "m256", "m512", "m1024"]
    assert lib.candidates(sketch, max_tasks=2, per_task=1) == [("m256", t1), ("m512", _scaled(t1, 2))]
    assert [k for k, _ in lib.candidates(sketch, exclude_networks=("netA",))] == ["m512", "m1024"]
    assert [k for k, _ in lib.candidates(sketch, exclude_keys=("m512", "m1024"))] == ["m256", "m256"]
    assert lib.candidates(_sketches(workloads.layer_norm(16, 32))[0][0]) == []
    path = tmp_path / "lib.jsonl.gz"
    lib.save(path)
    again = SeedLibrary.load(path)
    assert [e.__dict__ for e in again.entries] == [e.__dict__ for e in lib.entries]


def test_library_refuses_another_file(tmp_path):
    import gzip

    path = tmp_path / "x.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write('{"format": "something-else", "version": 1}\n')
    with pytest.raises(ValueError, match="not a cwm-seed-library v1 file"):
        SeedLibrary.load(path)


def test_extent_distance():
    assert extent_distance([4, 8], [4, 8]) == 0
    assert extent_distance([4, 8], [4, 8, 1]) == math.inf
    assert extent_distance([2], [8]) == pytest.approx(math.log(4))


def test_library_from_dataset_keeps_held_out_tasks_out(tiny_dataset):
    from cwm.dataset.loader import DatasetLoader

    lib = SeedLibrary.from_datasets([tiny_dataset])
    loader = DatasetLoader(tiny_dataset)
    assert {e.key for e in lib.entries} == set(loader.task_keys("train"))
    assert not {e.key for e in lib.entries} & set(loader.task_keys("test"))
    for e in lib.entries:
        assert 1 <= len(e.traces) <= 3 and e.latency_s == sorted(e.latency_s)


@pytest.mark.parametrize("placement,choice", [("first", "library"), ("last", "library"), ("last", "model")])
def test_seeded_search_measures_the_seeds_in_their_round(tmp_path, trace_records, placement, choice):
    """A 64x48x32 matmul tuned for 12 trials (rounds of 4) with a library holding matmul_256's
    fastest traces: 3 transferred candidates are measured as the first (or the last) round, the
    budget is kept, and the evolutionary search measures the rest. Chosen by the cost model, the
    3 are 3 distinct members of the pool."""
    import tvm_ffi

    from cwm import tuning
    from cwm.replay import apply_trace
    from cwm.tuning.seeded_search import SeedConfig

    traces = _traces(trace_records, "matmul_256")
    lib = SeedLibrary([_entry("m256", traces[:4])])
    mod = workloads.matmul(64, 48, 32)
    sketches = _sketches(mod)[0]
    transferred = {tvm_ffi.structural_hash(transfer_decisions(t, closest_sketch(t, sketches)[0], mod).mod)
                   for t in traces[:4]}
    stats = {}
    out = tuning.tune_tir(mod, trials=12, work_dir=str(tmp_path / "wd"), seed_library=lib,
                          seed_config=SeedConfig(seed_trials=3, placement=placement, choice=choice,
                                                 stats=stats),
                          settings=tuning.FastSettings(population_size=16, init_min_unmeasured=8,
                                                       num_trials_per_iter=4))
    # one candidate per distinct program after postprocessing: two transfers may postprocess alike
    assert 3 <= stats["transferred"] <= len(transferred) and stats["seeded"] == 3
    assert out.n_records == 12
    is_seed = [tvm_ffi.structural_hash(apply_trace(mod, _before_postproc(r["trace"])).mod) in transferred
               for r in out.records]
    seed_round = is_seed[:3] if placement == "first" else is_seed[-3:]
    assert all(seed_round), is_seed
    if choice == "model" and stats["transferred"] > 3:  # the cost model chose 3 of the pool
        assert len(set(stats["chosen"])) == 3 and max(stats["chosen"]) < stats["transferred"]


class _FixedScores:
    def __init__(self, scores):
        self.scores = scores

    def predict(self, context, candidates):
        return self.scores[:len(candidates)]


class _Inner:
    def pre_tuning(self, *args):
        self.args = args


@pytest.mark.parametrize("choice,expected", [("library", ["a", "b"]), ("model", ["d", "b"])])
def test_seed_choice_takes_the_library_order_or_the_cost_models_best(monkeypatch, choice, expected):
    """The seeds: the first transferred candidates, or those the cost model scores highest (best
    first); the inner search gets the rest of the budget."""
    from cwm.tuning import seeded_search

    monkeypatch.setattr(seeded_search, "transferred_candidates", lambda *a: ["a", "b", "c", "d", "e"])
    # the Python object behind MetaSchedule's derived-object wrapper (its pre_tuning is the FFI one)
    search = seeded_search.SeededSearch(_Inner(), None, seeded_search.SeedConfig(seed_trials=2, choice=choice))._inst
    search.context = type("Context", (), {"mod": None, "space_generator": type("G", (), {"postprocs": []})})()
    search.pre_tuning(10, 4, [], None, _FixedScores([0.1, 0.7, 0.5, 0.9, 0.2]))
    assert search.pending == expected
    assert search.inner.args[0] == 8


def test_seed_config_refuses_unknown_choices():
    from cwm.tuning.seeded_search import SeedConfig

    with pytest.raises(ValueError, match="choice"):
        SeedConfig(choice="best")
    with pytest.raises(ValueError, match="placement"):
        SeedConfig(placement="middle")


def test_no_similar_workload_means_plain_search(tmp_path, trace_records):
    from cwm import tuning
    from cwm.tuning.seeded_search import SeedConfig

    lib = SeedLibrary([_entry("m256", _traces(trace_records, "matmul_256")[:2])])
    stats = {}
    out = tuning.tune_tir(workloads.softmax(16, 32), trials=4, work_dir=str(tmp_path / "wd"), seed_library=lib,
                          seed_config=SeedConfig(stats=stats),
                          settings=tuning.FastSettings(population_size=16, init_min_unmeasured=8,
                                                       num_trials_per_iter=4))
    assert stats == {"library_traces": 0, "transferred": 0, "seeded": 0}
    assert out.n_records == 4



def test_model_seed_library_falls_back_to_the_shipped_one(tmp_path):
    from cwm.model import default_model_dir
    from cwm.tuning.seed_library import FILE_NAME, model_seed_library

    shipped = default_model_dir(must_exist=False) / FILE_NAME
    if not shipped.is_file():
        pytest.skip("no shipped seed library in this checkout")
    assert model_seed_library(tmp_path) is model_seed_library(None)  # a model dir without one: the shipped
    assert len(model_seed_library(None)) > 0
    own = tmp_path / "own"
    own.mkdir()
    SeedLibrary([SeedEntry("k", [], [], [])]).save(own / FILE_NAME)
    assert len(model_seed_library(own)) == 1
