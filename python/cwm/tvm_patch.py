"""Make TVMScript parsing fast here and in every Python process started from here.

Why
---
TVMScript's decorators (``@T.prim_func``, ``@I.ir_module``, ``@R.function``) call
``inspect.stack()`` once per parsed function. The stock ``inspect.stack`` resolves every
frame's source file through ``inspect.getmodule``, which walks *all* of ``sys.modules``;
with torch installed ``import tvm`` pulls in ~1950 modules (``tvm_ffi`` imports torch
eagerly). ``import tvm.s_tir.tensor_intrin`` parses ~500 functions; measured in a fresh
process (2 vCPUs, ``bench/fast_tuning.py``):

=====================  ======================  =====================
machine                stock                   with this patch
=====================  ======================  =====================
AMD EPYC znver3        35-45 s (39.9 typical)  4.0 s
AMD EPYC znver5        16.8-17.8 s             1.8-2.0 s
=====================  ======================  =====================

(``import tvm`` alone: 2-4 s either way.)

That import is not optional: MetaSchedule's ``default_build`` does it, and ``LocalBuilder``
starts a fresh worker pool on every ``build()`` call, so every batch pays it again against a
30 s build timeout. On the znver3 box stock ``ms.tune_tir`` of a 256^3 matmul ran 600 s for
32 trials and produced **0 valid records** (every build timed out); on the faster znver5 box
the builds fit, and 64 trials took 70 s stock vs 37 s with only this patch.

How
---
:func:`fast_stack` walks ``frame.f_back`` and reads the source line through ``linecache``
(keyed by ``co_filename``), never scanning ``sys.modules``. TVMScript only uses
``frame``, ``f_locals``, ``lineno`` and ``code_context`` of the returned records, and those
are identical to the stock ones for ordinary ``.py`` files.

:func:`install` (called by ``import cwm``) replaces ``inspect.stack`` in this process and
prepends ``python/cwm/_sitecustomize`` to ``PYTHONPATH``. That folder holds a
``sitecustomize.py`` which Python imports at start-up, so every child interpreter —
MetaSchedule popen builders/runners, ``tvm.exec.rpc_server``, subprocess tools — gets the
same replacement before it parses any TVMScript.

This module must stay importable without TVM (the ``sitecustomize`` loads it by path in
every interpreter); it imports only the standard library.
"""
from __future__ import annotations

import dis
import inspect
import linecache
import os
import sys

#: The folder holding the ``sitecustomize.py`` that child interpreters load.
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sitecustomize")

_MARK = "_cwm_fast_stack"          # attribute set on our replacement function
_ORIGINAL = "_cwm_original_stack"  # where the stock inspect.stack is kept, on the inspect module


def _positions(frame):
    """The ``dis.Positions`` stock ``inspect`` attaches (Python >= 3.11), or None."""
    get = getattr(inspect, "_get_code_position", None)
    if get is None:
        return None
    try:
        return dis.Positions(*get(frame.f_code, frame.f_lasti))
    except Exception:  # private helper: never let it break a caller
        return None


def _frame_info(frame, context):
    """One ``inspect.FrameInfo`` for ``frame``, mirroring ``inspect.getframeinfo``."""
    code = frame.f_code
    filename, lineno = code.co_filename, frame.f_lineno
    lines, index = None, None
    if context > 0 and lineno is not None:
        source = linecache.getlines(filename, frame.f_globals)
        if source:
            start = max(0, min(lineno - 1 - context // 2, len(source) - context))
            lines = source[start:start + context]
            index = lineno - 1 - start
    return inspect.FrameInfo(frame, filename, lineno, code.co_name, lines, index,
                             positions=_positions(frame))


def fast_stack(context: int = 1) -> list:
    """Drop-in ``inspect.stack`` that does not scan ``sys.modules`` for each frame.

    Returns the caller's frame records, innermost first, like ``inspect.stack(context)``.
    """
    frame = sys._getframe(1)
    out = []
    while frame is not None:
        out.append(_frame_info(frame, context))
        frame = frame.f_back
    return out


setattr(fast_stack, _MARK, True)


def original_stack():
    """The stock ``inspect.stack`` (even after :func:`patch_inspect`)."""
    return getattr(inspect, _ORIGINAL, None) or inspect.stack


def patch_inspect() -> None:
    """Replace ``inspect.stack`` with :func:`fast_stack` in this process (idempotent)."""
    if getattr(inspect.stack, _MARK, False):
        return
    setattr(inspect, _ORIGINAL, inspect.stack)
    inspect.stack = fast_stack


def unpatch_inspect() -> None:
    """Restore the stock ``inspect.stack`` (for tests and before/after measurements)."""
    original = getattr(inspect, _ORIGINAL, None)
    if original is not None:
        inspect.stack = original


def _on_pythonpath(path: str | None) -> bool:
    return SITE_DIR in (path or "").split(os.pathsep)


def install() -> None:
    """Patch this process and make every child interpreter patch itself (idempotent).

    Child processes inherit ``os.environ``; with :data:`SITE_DIR` first on ``PYTHONPATH``
    their ``site`` module imports our ``sitecustomize.py`` at start-up.
    """
    patch_inspect()
    current = os.environ.get("PYTHONPATH", "")
    if not _on_pythonpath(current):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SITE_DIR, current) if p)


def is_installed() -> bool:
    """True when this process is patched and its children will be too."""
    return bool(getattr(inspect.stack, _MARK, False)) and _on_pythonpath(
        os.environ.get("PYTHONPATH"))


def env_without_patch(env: dict | None = None) -> dict:
    """A copy of ``env`` (default ``os.environ``) whose children will run *stock* Python.

    Used by benchmarks that measure the unpatched behaviour in a subprocess. Note that the
    child must then not ``import cwm`` (which would install the patch again).
    """
    env = dict(os.environ if env is None else env)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE_DIR]
    if parts:
        env["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        env.pop("PYTHONPATH", None)
    return env
