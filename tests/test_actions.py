"""Canonical action sequences (the Python reference)."""
from __future__ import annotations

import json
import logging
import random
import re

import numpy as np
import pytest

from cwm.actions import KINDS, TraceFormatError, canonicalize, featurize_batch
from cwm.actions.featurize import COL, fnv1a
from cwm.actions.vocab import KIND_ID, PURE_KINDS, TRANSFORM_KINDS, UNK

HANDMADE = [[
    ["GetSBlock", [], ["C", "main"], ["b0"]],
    ["Annotate", ["b0", '"SSRSRS"'], ["meta_schedule.tiling_structure"], []],
    ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
    ["SamplePerfectTile", ["l1"], [2, 64], ["v4", "v5"]],
    ["Split", ["l1", "v4", "v5"], [True, False], ["l6", "l7"]],
    ["Fuse", ["l6", "l2"], [True], ["l8"]],
    ["Parallel", ["l8"], [], []],
    ["SampleCategorical", [], [[0, 16, 64], [0.3, 0.3, 0.4]], ["v9"]],
    ["Annotate", ["b0", "v9"], ["meta_schedule.unroll_explicit"], []],
    ["CacheWrite", ["b0", []], [0, "global"], ["b10"]],
    ["SampleComputeLocation", ["b10"], [], ["l11"]],
    ["ComputeAt", ["b10", "l11"], [True, -1], []],
    ["EnterPostproc", [], [], []],
    ["Split", ["l7", "None", 4], [True, False], ["l12", "l13"]],
], [[3, [16, 16]], [7, 2], [10, 5]]]


def test_one_action_per_transformation_with_decisions_folded():
    ct = canonicalize(json.dumps(HANDMADE))
    kinds = [a.kind for a in ct.actions]
    assert kinds == ["Annotate", "Split", "Fuse", "Parallel", "Annotate", "CacheWrite", "ComputeAt",
                     "EnterPostproc", "Split"]
    tiling, split, fuse, par, unroll, cache, compute_at, post, split2 = ct.actions
    assert tiling.strings == ("meta_schedule.tiling_structure", "SSRSRS")
    assert split.operands[0].text == "C/0" and split.numbers == (1.0, 0.0, 16.0, 16.0)
    assert fuse.operands[0].text == "C/0.s0" and fuse.operands[0].part == 0 and fuse.operands[1].text == "C/1"
    assert par.operands[0].text == "fuse(C/0.s0,C/1)"
    assert unroll.numbers == (64.0,)  # candidates[decision 2]
    assert cache.operands[0].text == "C" and cache.strings == ("global",)
    assert compute_at.operands[1].text == "loc(CacheWrite(C,0)#0)"
    assert compute_at.numbers == (1.0, -1.0, 5.0)  # attrs, then the sampled location
    assert [a.phase for a in ct.actions] == [0] * 7 + [1, 1]
    assert split2.numbers == (1.0, 0.0, 0.0, 4.0)  # "None" factor -> 0 (inferred)
    assert split2.operands[0].text == "C/0.s1" and split2.operands[0].axis == 0
    assert ct.unknown_kinds == {}


def _renumber(trace, rng):
    """Rename every RV consistently to a fresh random name of the same kind letter."""
    text = json.dumps(trace)
    names = sorted(set(re.findall(r'"([blv]\d+)"', text)))
    fresh = rng.sample(range(1000, 100000), len(names))
    mapping = {n: f"{n[0]}{k}" for n, k in zip(names, fresh)}
    return json.loads(re.sub(r'"([blv]\d+)"', lambda m: f'"{mapping[m.group(1)]}"', text))


def test_same_schedule_same_sequence_whatever_the_numbering(trace_records):
    rng = random.Random(0)
    for rec in trace_records[::7]:
        trace = json.loads(rec["trace"])
        renamed = _renumber(trace, rng)
        assert renamed != trace
        a, b = canonicalize(trace), canonicalize(renamed)
        assert [str(x) for x in a.actions] == [str(x) for x in b.actions]
        fa, fb = featurize_batch([trace]), featurize_batch([renamed])
        assert np.array_equal(fa.ints, fb.ints) and np.array_equal(fa.numbers, fb.numbers)


def test_different_decisions_give_different_sequences():
    other = json.loads(json.dumps(HANDMADE))
    other[1][0] = [3, [8, 32]]
    assert not np.array_equal(featurize_batch([HANDMADE]).numbers, featurize_batch([other]).numbers)


def test_unknown_kind_is_counted_and_reported(caplog):
    trace = json.loads(json.dumps(HANDMADE))
    trace[0].append(["FutureKind", ["l13"], [7, "x"], ["l14"]])
    trace[0].append(["Parallel", ["l14"], [], []])
    ct = canonicalize(trace)
    assert ct.unknown_kinds == {"FutureKind": 1}
    unk = ct.actions[-2]
    assert unk.kind == UNK and unk.raw_kind == "FutureKind" and unk.numbers == (7.0,) and unk.strings == ("x",)
    assert ct.actions[-1].operands[0].text == "FutureKind(C/0.s1.s1,7)#0"
    with caplog.at_level(logging.WARNING, logger="cwm.actions"):
        fb = featurize_batch([trace, HANDMADE])
    assert fb.unknown.tolist() == [1, 0]
    assert fb.ints[0, fb.lengths[0] - 2, COL["kind"]] == KIND_ID[UNK]
    assert "FutureKind" in caplog.text


@pytest.mark.parametrize("bad, match", [
    ("[1, 2", "not valid JSON"),
    ("[[], [], []]", r"\[instructions, decisions\]"),
    ('[[["Split", "l0", [], []]], []]', "bad instruction"),
    ('[[["GetLoops", ["b9"], [], ["l0"]]], []]', "used before it is defined"),
    ('[[["GetSBlock", [], [], ["b0"]]], []]', "GetSBlock"),
])
def test_malformed_traces_raise_clear_errors(bad, match):
    with pytest.raises(TraceFormatError, match=match):
        canonicalize(bad)


def test_featurize_batch_pads_and_reports_lengths():
    fb = featurize_batch([HANDMADE, [[], []]])
    assert fb.ints.shape == (2, 9, len(COL)) and fb.numbers.shape[:2] == (2, 9)
    assert fb.lengths.tolist() == [9, 0]
    assert not fb.ints[1].any() and not fb.numbers[1].any()
    assert fb.ints[0, 0, COL["str0_hash"]] == fnv1a("meta_schedule.tiling_structure")


def test_fnv1a_known_values():
    assert fnv1a("") == 0x811C9DC5 & 0x7FFFFFFF
    assert fnv1a("a") == 0xE40C292C & 0x7FFFFFFF


def test_vocabulary_matches_tvm_instruction_kinds():
    from tvm.s_tir.schedule import InstructionKind

    assert len(set(KINDS)) == len(KINDS) == 2 + 52
    for kind in PURE_KINDS + TRANSFORM_KINDS:
        assert InstructionKind.get(kind).is_pure == (kind in PURE_KINDS), kind


def test_every_kind_in_real_llvm_and_cuda_traces_is_in_the_vocabulary(trace_records):
    seen = {inst[0] for r in trace_records for inst in json.loads(r["trace"])[0]}
    assert seen <= set(KINDS), seen - set(KINDS)
    targets = {json.loads(r["target"])["kind"] for r in trace_records}
    assert targets == {"llvm", "cuda"}
    assert sum(canonicalize(r["trace"]).unknown_kinds.get(k, 0) for r in trace_records for k in seen) == 0
