"""A script of ``tools/`` as a module, for the tests that call its ``main`` or helpers."""
from __future__ import annotations

import importlib.util
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def tool(name: str):
    """``tools/<name>.py``, loaded afresh."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
