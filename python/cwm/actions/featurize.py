"""Canonical actions -> the integer/float arrays the world model consumes (reference).

This pure-Python path is the specification; ``cwm.native.featurize_batch`` must give
identical arrays (``tests/test_native_parity.py``).

Per action, ``INT_COLUMNS`` (int32) and ``NUM_NUMBERS`` numbers (float32). Hashes are
FNV-1a 32-bit of the UTF-8 text masked to 31 bits; 0 means "absent". A batch is
padded with ``<pad>`` rows (all zeros) to its longest sequence.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import numpy as np

from cwm.actions.canonical import CanonicalTrace, TraceFormatError, canonicalize
from cwm.actions.vocab import KIND_ID

INT_COLUMNS = (
    "kind", "phase", "n_operands", "op0_hash", "op1_hash", "operands_hash", "op0_base_hash",
    "op0_axis", "op0_part", "op0_depth", "str0_hash", "str1_hash", "n_numbers", "n_strings",
)
NUM_NUMBERS = 10
COL = {c: i for i, c in enumerate(INT_COLUMNS)}
logger = logging.getLogger("cwm.actions")


def fnv1a(text: str) -> int:
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h & 0x7FFFFFFF


@dataclass
class FeatureBatch:
    ints: np.ndarray  # [B, T, len(INT_COLUMNS)] int32
    numbers: np.ndarray  # [B, T, NUM_NUMBERS] float32
    lengths: np.ndarray  # [B] int32, actions per trace
    unknown: np.ndarray  # [B] int32, <unk> actions per trace
    traces: list | None = None  # the trace JSON texts (cwm.native.featurize_batch keeps them)
    facts: str | None = None  # the task's facts as JSON text, for cwm.model.tile_footprint (WorldModel.featurize)
    nests: object | None = None  # each trace's tiled nest, read in the native parse (native.featurize_batch(nests=True))


def action_rows(ct: CanonicalTrace) -> tuple[np.ndarray, np.ndarray]:
    """Arrays ``[T, INT_COLUMNS]`` and ``[T, NUM_NUMBERS]`` of one canonical trace."""
    n = len(ct.actions)
    ints = np.zeros((n, len(INT_COLUMNS)), np.int32)
    nums = np.zeros((n, NUM_NUMBERS), np.float32)
    for t, a in enumerate(ct.actions):
        ops, strs = a.operands, a.strings
        row = ints[t]
        row[COL["kind"]] = KIND_ID[a.kind]
        row[COL["phase"]] = a.phase
        row[COL["n_operands"]] = len(ops)
        row[COL["op0_hash"]] = fnv1a(ops[0].text) if ops else 0
        row[COL["op1_hash"]] = fnv1a(ops[1].text) if len(ops) > 1 else 0
        row[COL["operands_hash"]] = fnv1a("|".join(o.text for o in ops)) if ops else 0
        row[COL["op0_base_hash"]] = fnv1a(ops[0].base) if ops and ops[0].base else 0
        row[COL["op0_axis"]] = ops[0].axis if ops else -1
        row[COL["op0_part"]] = ops[0].part if ops else -1
        row[COL["op0_depth"]] = ops[0].depth if ops else -1
        row[COL["str0_hash"]] = fnv1a(strs[0]) if strs else 0
        row[COL["str1_hash"]] = fnv1a(strs[1]) if len(strs) > 1 else 0
        row[COL["n_numbers"]] = len(a.numbers)
        row[COL["n_strings"]] = len(strs)
        k = min(len(a.numbers), NUM_NUMBERS)
        nums[t, :k] = a.numbers[:k]
    return ints, nums


def featurize_batch(traces) -> FeatureBatch:
    """Featurise trace JSON texts (or parsed traces), padding to the longest."""
    rows, unknown, unknown_kinds = [], [], {}
    for i, tr in enumerate(traces):
        try:
            ct = canonicalize(tr)
        except TraceFormatError as e:
            raise TraceFormatError(f"trace {i}: {e}") from None
        rows.append(action_rows(ct))
        unknown.append(sum(ct.unknown_kinds.values()))
        for k, n in ct.unknown_kinds.items():
            unknown_kinds[k] = unknown_kinds.get(k, 0) + n
    if unknown_kinds:
        logger.warning("instruction kinds missing from the action vocabulary were mapped to <unk>: %s",
                       ", ".join(f"{k} x{n}" for k, n in sorted(unknown_kinds.items())))
    b = len(rows)
    t = max((r[0].shape[0] for r in rows), default=0)
    ints = np.zeros((b, t, len(INT_COLUMNS)), np.int32)
    nums = np.zeros((b, t, NUM_NUMBERS), np.float32)
    lengths = np.zeros(b, np.int32)
    for i, (ri, rn) in enumerate(rows):
        lengths[i] = ri.shape[0]
        ints[i, : ri.shape[0]] = ri
        nums[i, : rn.shape[0]] = rn
    texts = [t if isinstance(t, str) else json.dumps(t) for t in traces]
    return FeatureBatch(ints, nums, lengths, np.asarray(unknown, np.int32), texts)
