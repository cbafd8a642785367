"""``cwm.compile``: a model (ONNX, torch, Relax) -> a tuned, callable, exportable compiled model.

``cwm.compile(model, target="llvm", trials_per_task=64, cost_model="cwm", ...)`` runs a pipeline
of named passes (``cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-int-power,cwm-partition,cwm-tune,cwm-apply-db,cwm-build``;
for cuda the ``default-cuda`` variant with the GPU passes) on TVM's pass infrastructure and returns a
:class:`CompiledModel`; ``cwm.load(dir)`` reads one back that ``CompiledModel.export(dir)`` wrote.
See docs/compile.md.

This package module is itself callable (``cwm.compile(model, ...)`` is :func:`api.compile`),
because ``import cwm.compile.<anything>`` makes the attribute ``cwm.compile`` this module.
Names are resolved lazily: importing it does not import TVM.
"""
from __future__ import annotations

import sys
import types
from importlib import import_module

from cwm._lazy import lazy_exports

_EXPORTS = {
    "compile": "api", "load": "api", "run_pipeline": "api",
    "CompileOptions": "options", "make_options": "options",
    "CompiledModel": "compiled_model", "CompileState": "state", "TensorSpec": "specs",
    "Pipeline": "pipeline", "PassInvocation": "pipeline", "parse": "pipeline", "resolve": "pipeline",
    "PIPELINES": "pipeline", "register_pipeline": "pipeline",
    "PASSES": "passes", "Option": "passes", "PassSpec": "passes", "register_pass": "passes", "get_pass": "passes",
    "Timing": "instruments", "DumpIR": "instruments", "PrintAfter": "instruments",
    "CompileError": "errors", "PipelineError": "errors", "ArtifactError": "errors", "InputError": "errors",
    "InvalidModelError": "errors", "InputShapeError": "errors",
    "WorkDirBusyError": "errors", "DatabaseError": "errors", "BuildError": "errors",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`cwm.compile.api.compile`."""

    def __call__(self, model, options=None, **kwargs):
        return import_module("cwm.compile.api").compile(model, options, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
