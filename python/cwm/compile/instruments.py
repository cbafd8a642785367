"""Pass instruments for compile pipelines: timing, IR dumps, print-after.

Each is a ``tvm.instrument.PassInstrument`` subclass (made by TVM's ``@pass_instrument``, which
lets the class keep Python attributes), so it runs inside TVM's ``PassContext``
like any TVM instrument (``PassContext(instruments=[...])``) and also sees TVM's own passes.
By default they only act on the cwm passes (names starting with ``cwm-``): a cwm-build runs
hundreds of TVM passes. ``all_passes=True`` includes those too.
"""
from __future__ import annotations

import os
import re
import sys
import time

from tvm.ir.instrument import pass_instrument

CWM_PREFIX = "cwm-"


def _wanted(name: str, all_passes: bool) -> bool:
    return all_passes or name.startswith(CWM_PREFIX)


@pass_instrument
class Timing:
    """Wall time of each pass: ``records`` is a list of ``(pass name, seconds, depth)``.

    ``depth`` counts enclosing passes that are also recorded (0 for the cwm passes of a
    pipeline). :meth:`seconds` sums by name; :meth:`render` is a text table.
    """

    def __init__(self, all_passes: bool = False):
        self.all_passes = all_passes
        self.records: list = []
        self._stack: list = []

    def run_before_pass(self, mod, info):
        if _wanted(info.name, self.all_passes):
            self._stack.append((info.name, time.perf_counter()))

    def run_after_pass(self, mod, info):
        if _wanted(info.name, self.all_passes) and self._stack:
            name, start = self._stack.pop()
            self.records.append((name, time.perf_counter() - start, len(self._stack)))

    def seconds(self) -> dict:
        """``{pass name: total seconds}`` in first-run order."""
        out: dict = {}
        for name, secs, _ in self.records:
            out[name] = out.get(name, 0.0) + secs
        return out

    def render(self) -> str:
        lines = [f"{'pass':<32}{'seconds':>10}"]
        for name, secs, depth in self.records:  # completion order: a nested pass precedes its parent
            lines.append(f"{'  ' * depth + name:<32}{secs:>10.3f}")
        return "\n".join(lines)


@pass_instrument
class DumpIR:
    """Write the IR after each pass to ``folder/NNN_<pass>.py`` (TVMScript); ``files`` lists them.

    Unlike ``tvm.instrument.DumpIR`` it only dumps the cwm passes unless ``all_passes``, and
    starts numbering where earlier dumps in ``folder`` stopped.
    """

    def __init__(self, folder, all_passes: bool = False):
        self.folder = os.fspath(folder)
        self.all_passes = all_passes
        self.files: list = []

    def run_after_pass(self, mod, info):
        if not _wanted(info.name, self.all_passes):
            return
        os.makedirs(self.folder, exist_ok=True)
        index = len([n for n in os.listdir(self.folder) if re.match(r"\d{3}_", n)])
        path = os.path.join(self.folder, f"{index:03d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', info.name)}.py")
        with open(path, "w") as f:
            f.write(f"# IR after pass {info.name}\n")
            f.write(mod.script())
        self.files.append(path)


@pass_instrument
class PrintAfter:
    """Print the IR after each pass named in ``pass_names`` to ``stream`` (default stdout)."""

    def __init__(self, pass_names, stream=None):
        self.pass_names = {pass_names} if isinstance(pass_names, str) else set(pass_names)
        self.stream = stream

    def run_after_pass(self, mod, info):
        if info.name in self.pass_names:
            stream = self.stream or sys.stdout
            print(f"// ----- IR after {info.name} -----", file=stream)
            print(mod.script(), file=stream)
