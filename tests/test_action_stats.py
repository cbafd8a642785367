"""Ranker features of action sequences."""
from __future__ import annotations

import json

import numpy as np

from cwm.actions import featurize_batch
from cwm.actions.vocab import KIND_ID
from cwm.model.action_stats import NAMES, hardware_features, sequence_stats
from tests.test_actions import HANDMADE


def test_handmade_sequence_stats():
    fb = featurize_batch([HANDMADE, [[], []]])
    f = dict(zip(NAMES, sequence_stats(fb.ints, fb.numbers, fb.lengths)[0]))
    assert f["count_Split"] == 2 and f["count_Annotate"] == 2 and f["length"] == 9 and f["n_postproc"] == 2
    assert f["n_splits"] == 2  # factors [16, 16] and [None -> inferred, 4]
    assert f["max_log2_inner"] == 4.0 and f["mean_log2_inner"] == 3.0  # 16 and 4
    assert f["annot_meta_schedule.unroll_explicit"] == np.float32(np.log2(65.0))
    empty = sequence_stats(fb.ints, fb.numbers, fb.lengths)[1]
    assert not empty.any()


def test_real_traces_have_consistent_counts(trace_records):
    fb = featurize_batch([r["trace"] for r in trace_records[:50]])
    s = sequence_stats(fb.ints, fb.numbers, fb.lengths)
    kinds = len([n for n in NAMES if n.startswith("count_")])
    assert np.array_equal(s[:, :kinds].sum(1), fb.lengths.astype(np.float32))
    assert (s[:, NAMES.index("annot_meta_schedule.parallel")] > 0).any()


def test_hardware_features():
    cpu = hardware_features({"kind": "llvm", "num-cores": 2, "mcpu": "znver5"})
    gpu = hardware_features(json.dumps({"kind": "cuda", "max_threads_per_block": 1024}))
    assert cpu[0] == 2 and cpu[1] == 1 and cpu[2] == 0
    assert gpu[2] == 1 and gpu[3] == np.float32(np.log2(1025.0))
