"""The native core against the Python reference (the specification)."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from cwm import native
from cwm.actions import KINDS, TraceFormatError, canonicalize, featurize_batch
from tests.test_actions import HANDMADE


def _as_tuples(ct):
    return [(a.kind, a.raw_kind, [(o.text, o.base, o.axis, o.part, o.depth) for o in a.operands],
             list(a.numbers), list(a.strings), a.phase, a.inst_index) for a in ct.actions]


def test_vocabulary_is_identical():
    assert native.action_kinds() == list(KINDS)


def test_canonical_actions_identical_on_real_traces(trace_records):
    assert len(trace_records) >= 200
    for rec in trace_records:
        ref = canonicalize(rec["trace"])
        actions, unknown, num_insts = native.canonical_actions(rec["trace"])
        assert [tuple(a) for a in actions] == [tuple(a) for a in _as_tuples(ref)]
        assert unknown == ref.unknown_kinds and num_insts == ref.num_insts


@pytest.mark.parametrize("threads", [1, 2])
def test_feature_arrays_identical_on_real_traces(trace_records, threads):
    traces = [r["trace"] for r in trace_records]
    ref, nat = featurize_batch(traces), native.featurize_batch(traces, num_threads=threads)
    for field in ("ints", "numbers", "lengths", "unknown"):
        r, n = getattr(ref, field), getattr(nat, field)
        assert r.dtype == n.dtype and r.shape == n.shape, field
        assert np.array_equal(r, n), field


def test_identical_on_edge_cases():
    rng = random.Random(1)
    cases = [HANDMADE, [[], []]]
    unk = json.loads(json.dumps(HANDMADE))
    unk[0].append(["FutureKind", ["l13", "\"lit\"", [1, 2.5, True]], [7, "x", False], ["l14"]])
    unk[0].append(["Annotate", ["l14", 0.1], ["k"], []])
    cases.append(unk)
    no_decisions = [HANDMADE[0], []]
    cases.append(no_decisions)
    for _ in range(20):  # random subsets of decisions
        t = json.loads(json.dumps(HANDMADE))
        t[1] = [d for d in t[1] if rng.random() < 0.5]
        cases.append(t)
    texts = [json.dumps(c) for c in cases]
    ref, nat = featurize_batch(texts), native.featurize_batch(texts)
    assert np.array_equal(ref.ints, nat.ints) and np.array_equal(ref.numbers, nat.numbers)
    assert ref.unknown.tolist() == nat.unknown.tolist()


@pytest.mark.parametrize("bad", ["[1, 2", "[[], [], []]", '[[["GetLoops", ["b9"], [], ["l0"]]], []]'])
def test_both_reject_malformed_traces(bad):
    with pytest.raises(TraceFormatError):
        canonicalize(bad)
    with pytest.raises(TraceFormatError, match="trace 1"):
        native.featurize_batch([json.dumps(HANDMADE), bad])


def test_missing_native_core_is_one_clear_error(monkeypatch):
    import sys

    import cwm

    monkeypatch.setattr(native, "_module", None)
    monkeypatch.delattr(cwm, "_native", raising=False)
    monkeypatch.setitem(sys.modules, "cwm._native", None)  # import of it now fails
    with pytest.raises(native.NativeCoreError, match="make build"):
        native.load()


def test_stale_native_core_is_detected(monkeypatch, tmp_path):
    for f in native._SRC_DIR.iterdir():
        if f.suffix in (".cc", ".h", ".txt"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "featurize.cc").write_text((tmp_path / "featurize.cc").read_text() + "\n// edited\n")
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "_SRC_DIR", tmp_path)
    with pytest.raises(native.NativeCoreError, match="stale.*make build"):
        native.load()


def test_api_version_mismatch_is_detected(monkeypatch):
    from cwm import _native

    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "NATIVE_API_VERSION", _native.api_version() + 1)
    with pytest.raises(native.NativeCoreError, match="native API"):
        native.load()


def test_sequence_stats_identical_to_reference(trace_records):
    from cwm.model.action_stats import NAMES, sequence_stats

    fb = featurize_batch([r["trace"] for r in trace_records] + [json.dumps(HANDMADE), "[[], []]"])
    ref = sequence_stats(fb.ints, fb.numbers, fb.lengths)
    nat = native.sequence_stats(fb)
    assert nat.shape == ref.shape == (len(trace_records) + 2, len(NAMES)) and nat.dtype == np.float32
    assert np.abs(nat - ref).max() <= 1e-6
    counts = [i for i, n in enumerate(NAMES) if n.startswith("count_") or n in ("length", "n_postproc", "n_splits")]
    assert np.array_equal(nat[:, counts], ref[:, counts])  # integral features exactly
    with pytest.raises(ValueError, match="lengths must have shape"):
        native.load().sequence_stats(fb.ints, fb.numbers, fb.lengths[:-1])


def test_transform_layout_index_map_is_a_literal():
    """``TransformLayout`` takes an ``IndexMap`` written as JSON text: both featurizers read it as
    a literal (it used to be taken for a random variable, failing every trace of a task whose
    weights are layout-free, issue #14), and they agree on it."""
    import tvm
    import tvm.s_tir as s_tir
    from tvm import te

    from cwm.actions.trace_io import trace_to_json

    a, b = te.placeholder((64, 32), name="A"), te.placeholder((32, 16), name="B")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((64, 16), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    sch = s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([a, b, c])}))
    block = sch.get_sblock("C")
    sch.transform_layout(block, ("read", 1), lambda kk, j: (j // 8, kk, j % 8))
    sch.split(sch.get_loops(block)[0], [None, 8])
    text = trace_to_json(sch.trace)
    ref = canonicalize(text)
    layout = [act for act in ref.actions if act.kind == "TransformLayout"]
    assert len(layout) == 1 and layout[0].strings and '"tirx.IndexMap"' in layout[0].strings[0]
    actions, unknown, num_insts = native.canonical_actions(text)
    assert [tuple(x) for x in actions] == [tuple(x) for x in _as_tuples(ref)]
    nat, py = native.featurize_batch([text]), featurize_batch([text])
    assert np.array_equal(nat.ints, py.ints) and np.array_equal(nat.numbers, py.numbers)
