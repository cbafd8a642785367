"""The decisions of one workload's schedule replayed on another workload's design space.

A MetaSchedule design space (a *sketch*) is a trace whose sampling instructions
(``SamplePerfectTile``, ``SampleCategorical``, ``SampleComputeLocation``) still have to be decided.
Two workloads whose sketches sample the same sequence (the same kinds, the same tile counts, the
same categorical choices) can exchange decisions even when their blocks differ: a conv2d with a
bias and a ReLU and a conv2d with a clip (``maximum`` / ``minimum``) tile the same seven loops.
That sequence is the *sampling signature* (:func:`signature_of_json`, :func:`signature_of_sketch`).

:func:`transfer_decisions` replays the target's own sketch with the source's decisions, in order:
each tile decision is mapped onto the target's loop extent (:func:`remap_tile`), a categorical
decision is kept when the choices are the same, and a compute location is kept when it fits the
target (else the sketch's own). The result is a program of the target's design space; a source
that does not fit gives ``None``.
"""
from __future__ import annotations

import json
import math

SAMPLING = ("SamplePerfectTile", "SampleCategorical", "SampleComputeLocation")


def remap_tile(extent: int, factors: list[int], max_innermost: int) -> list[int]:
    """A perfect tiling of ``extent`` into ``len(factors)`` factors close to ``factors``.

    From the innermost out, each factor is the divisor of what is left of ``extent`` nearest
    to the source's factor in log scale (ties: the smaller); the innermost stays
    ``<= max_innermost`` (when positive); the outermost takes the rest. The product is
    ``extent``.
    """
    n, rest = len(factors), int(extent)
    out = [1] * n
    for i in range(n - 1, 0, -1):
        limit = max_innermost if (i == n - 1 and max_innermost > 0) else rest
        divisors = [d for d in range(1, min(rest, limit) + 1) if rest % d == 0]
        want = math.log(max(1, int(factors[i])))
        out[i] = min(divisors, key=lambda d: (abs(math.log(d) - want), d))
        rest //= out[i]
    out[0] = rest
    return out


def _token(kind: str, attrs) -> str:
    if kind == "SamplePerfectTile":
        return f"T{int(attrs[0])}"
    if kind == "SampleCategorical":
        return "C" + ",".join(str(int(c)) for c in attrs[0])
    return "L"


def parse_json(trace) -> tuple[tuple, list, list[int]]:
    """``(signature, decisions, tile extents)`` of a trace in JSON form (text or parsed): the
    sampling instructions before postprocessing, their decisions in order, and the extent of each
    tiled loop (the product of its tile decision)."""
    insts, decisions = json.loads(trace) if isinstance(trace, (str, bytes)) else trace
    by_index = {d[0]: d[1] for d in decisions}
    signature, out, extents = [], [], []
    for i, inst in enumerate(insts):
        if inst[0] == "EnterPostproc":
            break
        if inst[0] in SAMPLING:
            signature.append(_token(inst[0], inst[2]))
            out.append(by_index.get(i))
            if inst[0] == "SamplePerfectTile":
                extents.append(math.prod(int(f) for f in by_index.get(i) or [1]))
    return tuple(signature), out, extents


def signature_of_json(trace) -> tuple:
    """The sampling signature of a trace in JSON form."""
    return parse_json(trace)[0]


def parse_sketch(sketch) -> tuple[tuple, list[int]]:
    """``(signature, tile extents)`` of a design space (a ``Schedule`` whose trace samples)."""
    trace = sketch.trace
    signature, extents = [], []
    for inst in trace.insts:
        kind = inst.kind.name
        if kind == "EnterPostproc":
            break
        if kind in SAMPLING:
            signature.append(_token(kind, inst.attrs))
            if kind == "SamplePerfectTile":
                extents.append(math.prod(int(f) for f in trace.decisions[inst]))
    return tuple(signature), extents


def signature_of_sketch(sketch) -> tuple:
    return parse_sketch(sketch)[0]


def kinds_of_json(trace) -> tuple:
    """The instruction kinds of a trace in JSON form, before postprocessing: its sketch's shape."""
    insts = (json.loads(trace) if isinstance(trace, (str, bytes)) else trace)[0]
    kinds = [inst[0] for inst in insts]
    return tuple(kinds[: kinds.index("EnterPostproc")] if "EnterPostproc" in kinds else kinds)


def kinds_of_sketch(sketch) -> tuple:
    kinds = [inst.kind.name for inst in sketch.trace.insts]
    return tuple(kinds[: kinds.index("EnterPostproc")] if "EnterPostproc" in kinds else kinds)


def closest_sketch(trace, sketches) -> tuple:
    """``(sketch, likeness)``: the sketch of ``sketches`` with ``trace``'s sampling signature whose
    instruction kinds are the most like the trace's (``difflib`` ratio, 1.0 = the same kinds;
    ties: the first), or ``(None, 0.0)``: a trace's decisions go to the target's design space most
    like the one they were made for."""
    import difflib

    signature, kinds = signature_of_json(trace), kinds_of_json(trace)
    scored = [(difflib.SequenceMatcher(None, kinds, kinds_of_sketch(s), autojunk=False).ratio(), -i, s)
              for i, s in enumerate(sketches) if signature_of_sketch(s) == signature]
    if not scored:
        return None, 0.0
    likeness, _, sketch = max(scored, key=lambda x: x[:2])
    return sketch, likeness


def extent_distance(a: list[int], b: list[int]) -> float:
    """Sum over tiled loops of ``|log a_i - log b_i|``; ``inf`` for different loop counts."""
    if len(a) != len(b):
        return math.inf
    return sum(abs(math.log(max(x, 1)) - math.log(max(y, 1))) for x, y in zip(a, b))


def transfer_decisions(trace, sketch, mod):
    """The target ``sketch`` (a design space of ``mod``) replayed with the decisions of ``trace``
    (JSON, of another workload with the same sampling signature): a ``Schedule`` without its
    postprocessing, or ``None`` when the signatures differ or the replay fails. Compute locations
    are taken from the source where they fit, else from the sketch."""
    from tvm.s_tir import Schedule

    try:
        signature, decisions, _ = parse_json(trace)
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    if signature != signature_of_sketch(sketch):
        return None
    for keep_locations in (True, False):
        sch = Schedule(mod)
        source = iter(decisions)

        def provider(inst, inputs, attrs, decision):
            kind = inst.kind.name
            if kind not in SAMPLING:
                return decision
            wanted = next(source)
            if wanted is None:
                return decision
            if kind == "SamplePerfectTile":
                return remap_tile(int(sch.get(inputs[0]).extent), [int(f) for f in wanted], int(attrs[1]))
            if kind == "SampleComputeLocation" and not keep_locations:
                return decision
            return wanted

        try:
            sketch.trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=provider)
            return sch
        except Exception:  # noqa: BLE001 -- TVM raises several kinds; a location that does not fit
            continue
    return None
