"""CWM: a compiler world model for tensor-program auto-scheduling on TVM MetaSchedule.

Importing ``cwm`` is cheap: TVM, torch and the native core are imported by the
functions that need them. Importing it also makes TVMScript parsing fast in this
process and in every worker process it starts (see :mod:`cwm.tvm_patch`).

``cwm.tune`` (one TIR task, a choice of cost models; docs/tuning.md) and ``cwm.TuneResult``
are resolved on first use, and so are ``cwm.compile`` (a model -> a tuned, callable
``CompiledModel``; docs/compile.md), ``cwm.load``, ``cwm.CompiledModel`` and ``cwm.CompileOptions``.
"""
from cwm._version import NATIVE_API_VERSION, __version__
from cwm import tvm_patch as _tvm_patch

_tvm_patch.install()

__all__ = ["__version__", "NATIVE_API_VERSION", "tune", "TuneResult", "compile", "load", "CompiledModel",
           "CompileOptions", "UntunableTaskError"]

_LAZY = {"tune": "cwm.tuning.tune", "TuneResult": "cwm.tuning.tune",
         # cwm.compile is also a package; once imported, the attribute is that (callable) module
         "compile": "cwm.compile.api", "load": "cwm.compile.api",
         "CompiledModel": "cwm.compile.compiled_model", "CompileOptions": "cwm.compile.options",
         "UntunableTaskError": "cwm.tuning.design_space"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        return globals().get(name, value)  # a subpackage of that name (cwm.compile), once imported, wins
    raise AttributeError(f"module 'cwm' has no attribute {name!r}")
