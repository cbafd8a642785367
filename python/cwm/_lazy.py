"""Lazy re-exports for package ``__init__`` files: names resolve on first use, so importing a
package stays cheap (no TVM, no torch).

    __all__, __getattr__, __dir__ = lazy_exports(__name__, {"name": "submodule", ...})
"""
from __future__ import annotations

from importlib import import_module


def lazy_exports(package: str, exports: dict[str, str]):
    """``(__all__, __getattr__, __dir__)`` resolving ``name`` from ``package.exports[name]``."""
    names = sorted(exports)

    def __getattr__(name):  # noqa: N807 (module protocol)
        if name in exports:
            return getattr(import_module(f"{package}.{exports[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():  # noqa: N807
        return names

    return names, __getattr__, __dir__
