"""Syntactic noise that keeps a TIR program's meaning, for contrastive training and checks.

Two kinds:

* :func:`rename_identifiers` — consistent renaming of the names a TVMScript text
  *defines*: function parameters (``A: T.Buffer``), assigned names (``x = T.sblock_alloc_buffer``,
  ``v_i, v_j = T.axis.remap``), loop variables (``for i, j in``), ``as`` targets, and
  (optionally) block names (the string in ``T.sblock("...")``). Only those names are
  touched, and only outside string literals and comment lines, never after a ``.``
  (so ``T.grid``, ``T.axis.spatial`` and keyword arguments such as ``annotations=`` stay),
  so the result parses to the same program with other names. TVM's structural
  equality ignores name hints, so ``tvm_ffi.structural_equal(from_source(renamed),
  original)`` holds, and printing the parsed result gives back the renamed text
  exactly (both checked by the tests).
  **Used as training positives** (with probability ``p_rename`` per view).

* Odd extents (loop peeling / predicates): :func:`odd_extent_variant` gives a reference
  workload at extents one smaller (``softmax 128x768 -> 127x767``), and :func:`tile_outer`
  a fixed tiling that turns odd extents into ``T.where`` guards. These are *different*
  workloads for ranking, but the encoder should put them close. Decision: the non-matmul
  families' variants may be added to their group as **training positives** (the smoke tool
  does); **matmul's odd-extent variants are never trained on** (matmul_256 states are,
  as an ordinary group), and :func:`peel_pairs` (matmul 1024 vs 1023, unscheduled and
  tiled: extents no training text has) is the held-out robustness evaluation.
"""
from __future__ import annotations

import keyword
import random
import re

_IDENT = r"[A-Za-z_]\w*"
_NAMES = rf"{_IDENT}(?:\s*,\s*{_IDENT})*"
_DEF_PATTERNS = [
    re.compile(rf"[(,]\s*({_IDENT})\s*:\s*T\."),            # function parameters
    re.compile(rf"^\s*({_NAMES})\s*=\s*T\."),                 # name(s) = T.xxx(...)
    re.compile(rf"^\s*for\s+({_NAMES})\s+in\b"),              # loop variables
    re.compile(rf"\bas\s+({_IDENT})"),                        # with ... as name
]
_BLOCK = re.compile(r'T\.sblock\("([^"]*)"')
_STRING = re.compile(r'("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')')
_USE = re.compile(rf"(?<![\w.])({_IDENT})\b")
#: never renamed: the script's module aliases, Python keywords/builtins, TVMScript fixed names
RESERVED = frozenset(keyword.kwlist) | {"T", "I", "R", "main", "Module", "range", "self"}
_PREFIXES = ("v", "x", "t", "it", "idx", "buf", "tmp", "ax", "lv", "q", "n", "acc")


def defined_names(text: str) -> tuple[list[str], list[str]]:
    """(variable/buffer names, block names) defined by the text, in order of appearance."""
    names, blocks = {}, {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for pat in _DEF_PATTERNS:
            for m in pat.finditer(line):
                for n in re.split(r"\s*,\s*", m.group(1).strip()):
                    if n not in RESERVED:
                        names.setdefault(n, None)
        for m in _BLOCK.finditer(line):
            blocks.setdefault(m.group(1), None)
    return list(names), list(blocks)


def _buffer_names(text: str) -> set:
    out = set()
    for line in text.splitlines():
        if not line.lstrip().startswith("#"):
            out.update(m.group(1) for m in _DEF_PATTERNS[0].finditer(line))
            m = re.match(rf"^\s*({_IDENT})\s*=\s*T\.\w*buffer\b", line)
            if m:
                out.add(m.group(1))
    return out


def _fresh(rng: random.Random, taken: set) -> str:
    while True:
        name = f"{rng.choice(_PREFIXES)}{rng.choice(['', '_'])}{rng.randrange(1000)}"
        if name not in taken and name not in RESERVED:
            taken.add(name)
            return name


def rename_identifiers(text: str, seed=0, rename_buffers: bool = True,
                       rename_blocks: bool = True) -> str:
    """The text with its defined names consistently replaced by random fresh ones.

    ``seed`` is an int or a ``random.Random``. ``rename_buffers=False`` renames only
    names that are not function parameters or allocated buffers (loop and block vars).
    """
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    names, blocks = defined_names(text)
    if not rename_buffers:
        names = [n for n in names if n not in _buffer_names(text)]
    taken = set(_USE.findall(text)) | set(names) | set(blocks)
    var_map = {n: _fresh(rng, taken) for n in names}
    block_map = {b: _fresh(rng, taken) for b in blocks} if rename_blocks else {}

    def code(part: str) -> str:
        return _USE.sub(lambda m: var_map.get(m.group(1), m.group(1)), part)

    out = []
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("#"):
            out.append(line)
            continue
        parts = _STRING.split(line)
        for i in range(0, len(parts), 2):
            parts[i] = code(parts[i])
        for i in range(1, len(parts), 2):
            body = parts[i][1:-1]
            if body in block_map and parts[i - 1].endswith("T.sblock("):
                parts[i] = parts[i][0] + block_map[body] + parts[i][-1]
        out.append("".join(parts))
    return "".join(out)


# ----------------------------------------------------------------- odd extents
def _odd_factories() -> dict:
    from cwm import workloads as w

    return {
        "matmul_256": lambda: w.matmul(255),
        "batch_matmul_12x128x128x64": lambda: w.batch_matmul(12, 127, 127, 63),
        "conv2d_64x56x56_3x3": lambda: w.conv2d(h=55, w=55),
        "depthwise_conv2d_96x56x56_3x3": lambda: w.depthwise_conv2d(h=55, w=55),
        "conv2d_bias_relu_32x28x28": lambda: w.conv2d_bias_relu(h=27, w=27),
        "softmax_128x768": lambda: w.softmax(127, 767),
        "layer_norm_128x768": lambda: w.layer_norm(127, 767),
    }


def odd_extent_variant(name: str):
    """The reference workload ``name`` (see :data:`cwm.workloads.WORKLOADS`) at odd extents."""
    return _odd_factories()[name]()


def tile_outer(mod, factor: int = 32):
    """Split the outermost loop of every top-level block by ``factor`` (odd extents -> T.where)."""
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    for block in sch.get_child_blocks(sch.get_sblock("root")):
        try:
            loops = sch.get_loops(block)
            if loops:
                sch.split(loops[0], [None, factor])
        except Exception:  # noqa: BLE001 - an unsplittable block is left as it is
            continue
    return sch.mod


def peel_pairs(n: int = 1024, factor: int = 32) -> list[tuple[str, str, str]]:
    """Held-out robustness pairs ``(label, text at n, text at n - 1)`` for the matmul family."""
    from cwm import workloads as w

    even, odd = w.matmul(n), w.matmul(n - 1)
    return [(f"matmul_{n}_vs_{n - 1}", even.script(), odd.script()),
            (f"matmul_{n}_vs_{n - 1}_tiled", tile_outer(even, factor).script(),
             tile_outer(odd, factor).script())]
