"""The import layering of cwm (docs/architecture.md): the contracts of ``.importlinter`` hold, and no
module of ``python/cwm`` is part of an import circle. Imports inside functions count (grimp reads
every import statement), so a circle that only closes at call time fails too."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DIR = ROOT / "python"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR), *filter(None, [env.get("PYTHONPATH")])])
    return env


def test_lint_imports_contracts_are_kept():
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.fail(f"{exe} not found: install the pinned import-linter (pip install -r requirements.txt "
                    "-c constraints.txt)")
    proc = subprocess.run([str(exe), "--no-cache", "--no-logo"], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"lint-imports failed (exit {proc.returncode}):\n{output}"
    assert "0 broken" in output, output


def _cwm_graph():
    import grimp

    spec = importlib.util.find_spec("cwm")
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin).resolve().parent == (PYTHON_DIR / "cwm").resolve(), (
        f"cwm resolves to {spec.origin}, not this checkout's python/cwm (run with PYTHONPATH=python)")
    return grimp.build_graph("cwm")


def _find_cycle(edges: dict) -> list | None:
    """One import circle ``[a, b, ..., a]`` of the directed graph ``edges`` (module -> imported set), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(edges):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def test_find_cycle_sees_circles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"a"}}) == ["a", "a"]


def test_no_import_circle_among_cwm_modules():
    graph = _cwm_graph()
    modules = {m for m in graph.modules if m == "cwm" or m.startswith("cwm.")}
    assert len(modules) > 50, sorted(modules)  # the real package, not an empty stand-in
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if i in modules} - {m} for m in modules}
    cycle = _find_cycle(edges)
    if cycle:
        details = []
        for importer, imported in zip(cycle, cycle[1:]):
            lines = graph.get_import_details(importer=importer, imported=imported)
            details.append(f"  {importer} -> {imported} (line {', '.join(str(d['line_number']) for d in lines)})")
        pytest.fail("import circle: " + " -> ".join(cycle) + "\n" + "\n".join(details))
