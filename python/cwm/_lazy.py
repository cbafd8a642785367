"""Lazy re-exports for package ``__init__`` files: names resolve on first use, so importing a
package stays cheap (no TVM, no torch).

    __all__, __getattr__, __dir__ = lazy_exports(__name__, {"name": "submodule", ...})

A value is a submodule of the package, or a full module name (``"cwm.partition"``) for a name
that lives lower in the package (docs/architecture.md).
"""
from __future__ import annotations

from importlib import import_module


def lazy_exports(package: str, exports: dict[str, str]):
    """``(__all__, __getattr__, __dir__)`` resolving ``name`` from ``package.exports[name]``
    (or from ``exports[name]`` itself when that starts with ``cwm.``)."""
    names = sorted(exports)

    def __getattr__(name):  # noqa: N807 (module protocol)
        if name in exports:
            module = exports[name]
            return getattr(import_module(module if module.startswith("cwm.") else f"{package}.{module}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():  # noqa: N807
        return names

    return names, __getattr__, __dir__
