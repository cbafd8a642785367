"""Canonical action sequences: a MetaSchedule trace as one action per schedule transformation.

This module is the *specification* of canonicalisation; the native core
(``src/canonical.cc``) implements the same rules and is tested against it.

Rules (input: TVM's trace JSON ``[insts, decisions]``, each inst
``[kind, inputs, attrs, outputs]``, each decision ``[inst_index, value]``):

1. **Identities, not RV numbers.** Every block/loop random variable gets a semantic
   identity derived from how it was obtained, never from its name (``b3``, ``l17``):

   * ``GetSBlock``            -> the block name, e.g. ``C``
   * ``GetLoops(b)``          -> ``<b>/<i>`` (axis ``i`` of block ``b`` at that point)
   * ``Split(l)``             -> ``<l>.s<j>`` (part ``j``)
   * ``Fuse(l1, l2, ...)``    -> ``fuse(<l1>,<l2>,...)``
   * ``SampleComputeLocation(b)`` -> ``loc(<b>)``; its sampled index travels as a number
   * any other output         -> ``<Kind>(<rv identities>,<int attrs>)#<k>`` for output ``k``
     (e.g. ``CacheWrite(C,0)#0``, ``GetChildBlocks(root)#2``, ``DecomposeReduction(C,C/2)#0``)

   Renumbering RVs therefore cannot change the sequence.
2. **Decisions folded in.** ``Sample*`` and ``Get*`` instructions emit no action. A
   ``SamplePerfectTile`` binds its factors to its output variables and the ``Split``
   consuming them carries the factors; a ``SampleCategorical`` binds the chosen
   candidate value, carried by the ``Annotate`` that uses it.
3. **Arguments.** An action's numbers are its attribute numbers (in order, bools as
   0/1, lists flattened) followed by its input numbers (literals, values of sampled
   variables, sampled compute locations; ``None`` -> 0, i.e. "inferred"). Its strings
   are its attribute strings followed by its string-literal inputs (unquoted).
4. **Unknown kinds** become ``<unk>`` actions that keep their operands and arguments
   and are counted in ``CanonicalTrace.unknown_kinds``; nothing is dropped.
5. ``EnterPostproc`` is kept: actions after it have ``phase`` 1.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from cwm.actions.vocab import UNK, KIND_ID, is_pure


@dataclass(frozen=True)
class Ident:
    """Semantic identity of a block or loop, with the structure the featuriser reads."""

    text: str
    base: str  # the named block this identity is derived from ("" if none)
    axis: int = -1  # GetLoops index of the loop it descends from, -1 for blocks
    part: int = -1  # split part of the last Split on its path, -1 if none
    depth: int = 0  # derivation steps from a named block


@dataclass(frozen=True)
class Action:
    kind: str  # an instruction kind from the vocabulary, or "<unk>"
    raw_kind: str  # the kind as written in the trace
    operands: tuple[Ident, ...]
    numbers: tuple[float, ...]
    strings: tuple[str, ...]
    phase: int  # 0: design space, 1: after EnterPostproc
    inst_index: int  # index of the instruction in the trace (for prefix replay)

    def __str__(self) -> str:
        ops = ",".join(o.text for o in self.operands)
        return f"{self.kind}({ops}; {list(self.numbers)}; {list(self.strings)})"


@dataclass
class CanonicalTrace:
    actions: list[Action] = field(default_factory=list)
    unknown_kinds: dict[str, int] = field(default_factory=dict)
    num_insts: int = 0


class TraceFormatError(ValueError):
    """The text is not a MetaSchedule trace in TVM's JSON form."""


#: a random variable's name in a trace (``b3``, ``l12``, ``v0``); quoted strings are literals, and
#: other text (the JSON of an ``IndexMap`` that ``TransformLayout`` takes) is a literal as written
_RV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _is_rv(x) -> bool:
    return isinstance(x, str) and x != "None" and _RV_NAME.match(x) is not None


def _literal(x: str) -> str:
    if not x.startswith('"'):
        return x  # an object written as text (an IndexMap's JSON)
    return x[1:-1] if len(x) >= 2 and x.endswith('"') else x[1:]


def _flatten_numbers(x, out: list) -> None:
    if isinstance(x, bool):
        out.append(1.0 if x else 0.0)
    elif isinstance(x, (int, float)):
        out.append(float(x))
    elif isinstance(x, list):
        for y in x:
            _flatten_numbers(y, out)


def _int_text(x) -> list[str]:
    """Integer attributes that enter generic identities (bools as 0/1)."""
    if isinstance(x, bool):
        return [str(int(x))]
    if isinstance(x, int):
        return [str(x)]
    return []


class _Env:
    """Maps RV names to identities (blocks/loops) or sampled values (expressions)."""

    def __init__(self):
        self.ident: dict[str, Ident] = {}
        self.value: dict[str, list[float]] = {}

    def get(self, name: str) -> Ident:
        if name not in self.ident:
            raise TraceFormatError(f"random variable {name!r} is used before it is defined")
        return self.ident[name]


def parse_trace(trace) -> tuple[list, dict[int, object]]:
    """Accept JSON text or the parsed ``[insts, decisions]`` list."""
    if isinstance(trace, (str, bytes)):
        try:
            trace = json.loads(trace)
        except json.JSONDecodeError as e:
            raise TraceFormatError(f"trace is not valid JSON: {e}") from None
    if not (isinstance(trace, list) and len(trace) == 2 and isinstance(trace[0], list)):
        raise TraceFormatError("trace JSON must be [instructions, decisions]")
    insts, decisions = trace
    for inst in insts:
        if not (isinstance(inst, list) and len(inst) == 4 and isinstance(inst[0], str)
                and all(isinstance(x, list) for x in inst[1:])
                and all(isinstance(o, str) for o in inst[3])):
            raise TraceFormatError(f"bad instruction {inst!r}: expected [kind, inputs, attrs, outputs]")
    if not isinstance(decisions, list):
        raise TraceFormatError("trace decisions must be a list")
    try:
        dec = {int(i): d for i, d in decisions}
    except (TypeError, ValueError):
        raise TraceFormatError("decisions must be [inst_index, value] pairs") from None
    return insts, dec


def canonicalize(trace) -> CanonicalTrace:
    """Turn a trace (JSON text or parsed JSON) into its canonical action sequence."""
    insts, decisions = parse_trace(trace)
    env, out, phase = _Env(), CanonicalTrace(num_insts=len(insts)), 0
    for idx, (kind, inputs, attrs, outputs) in enumerate(insts):
        if kind == "EnterPostproc":
            phase = 1
        if is_pure(kind):
            _define_pure(env, kind, inputs, attrs, outputs, decisions.get(idx))
            continue
        operands, in_numbers, in_strings = _read_inputs(env, inputs)
        numbers: list[float] = []
        _flatten_numbers(attrs, numbers)
        strings = [a for a in attrs if isinstance(a, str)]
        known = kind in KIND_ID
        if not known:
            out.unknown_kinds[kind] = out.unknown_kinds.get(kind, 0) + 1
        out.actions.append(Action(kind if known else UNK, kind, tuple(operands), tuple(numbers + in_numbers),
                                  tuple(strings + in_strings), phase, idx))
        _define_outputs(env, kind, inputs, attrs, outputs)
    return out


def _read_inputs(env: _Env, inputs) -> tuple[list[Ident], list[float], list[str]]:
    operands, numbers, strings = [], [], []

    def visit(x):
        if x is None or x == "None":  # TVM writes a None input (an inferred factor) as "None"
            numbers.append(0.0)
        elif isinstance(x, list):
            for y in x:
                visit(y)
        elif _is_rv(x):
            if x in env.value:
                numbers.extend(env.value[x])
            if x in env.ident:
                operands.append(env.ident[x])
            elif x not in env.value:
                raise TraceFormatError(f"random variable {x!r} is used before it is defined")
        elif isinstance(x, str):
            strings.append(_literal(x))
        else:
            _flatten_numbers(x, numbers)

    for x in inputs:
        visit(x)
    return operands, numbers, strings


def _rv_inputs(env: _Env, inputs) -> list[Ident]:
    found = []

    def visit(x):
        if isinstance(x, list):
            for y in x:
                visit(y)
        elif _is_rv(x) and x in env.ident:
            found.append(env.ident[x])

    for x in inputs:
        visit(x)
    return found


def _generic(env: _Env, kind: str, inputs, attrs, outputs) -> None:
    parents = _rv_inputs(env, inputs)
    args = [p.text for p in parents]
    for a in attrs:
        args.extend(_int_text(a))
    head = f"{kind}({','.join(args)})"
    first = parents[0] if parents else Ident("", "")
    depth = max((p.depth for p in parents), default=-1) + 1
    for k, name in enumerate(outputs):
        env.ident[name] = Ident(f"{head}#{k}", first.base, first.axis, first.part, depth)


def _first_input(kind: str, inputs) -> str:
    if not inputs or not _is_rv(inputs[0]):
        raise TraceFormatError(f"{kind} needs a random variable as its first input")
    return inputs[0]


def _define_pure(env: _Env, kind: str, inputs, attrs, outputs, decision) -> None:
    if kind == "GetSBlock":
        if not (attrs and isinstance(attrs[0], str) and outputs):
            raise TraceFormatError("GetSBlock needs a block name attribute and one output")
        env.ident[outputs[0]] = Ident(attrs[0], attrs[0])
    elif kind == "GetLoops":
        b = env.get(_first_input(kind, inputs))
        for i, name in enumerate(outputs):
            env.ident[name] = Ident(f"{b.text}/{i}", b.base, i, -1, b.depth + 1)
    elif kind in ("SamplePerfectTile", "SamplePartitionedTile"):
        values = list(decision) if isinstance(decision, list) else []
        for i, name in enumerate(outputs):
            env.value[name] = [float(values[i])] if i < len(values) else [0.0]
    elif kind == "SampleCategorical":
        candidates = attrs[0] if attrs and isinstance(attrs[0], list) else []
        ok = isinstance(decision, int) and not isinstance(decision, bool) and 0 <= decision < len(candidates)
        v: list[float] = []
        if ok:
            _flatten_numbers(candidates[decision], v)
        for name in outputs[:1]:
            env.value[name] = v if v else [0.0]
    elif kind == "SampleComputeLocation":
        b = env.get(_first_input(kind, inputs))
        for name in outputs[:1]:
            env.ident[name] = Ident(f"loc({b.text})", b.base, -1, -1, b.depth + 1)
            env.value[name] = [float(decision) if isinstance(decision, (int, float)) else 0.0]
    else:  # GetChildBlocks, GetProducers, GetConsumers, GetOutputBlocks
        _generic(env, kind, inputs, attrs, outputs)


def _define_outputs(env: _Env, kind: str, inputs, attrs, outputs) -> None:
    if not outputs:
        return
    if kind == "Split":
        loop = env.get(_first_input(kind, inputs))
        for j, name in enumerate(outputs):
            env.ident[name] = Ident(f"{loop.text}.s{j}", loop.base, loop.axis, j, loop.depth + 1)
    elif kind == "Fuse":
        parts = _rv_inputs(env, inputs)
        first = parts[0] if parts else Ident("", "")
        for name in outputs[:1]:
            env.ident[name] = Ident("fuse(" + ",".join(p.text for p in parts) + ")", first.base, first.axis, -1,
                                      max((p.depth for p in parts), default=-1) + 1)
    else:
        _generic(env, kind, inputs, attrs, outputs)
