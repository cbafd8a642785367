"""The errors of :mod:`cwm.compile`, one class per kind of mistake.

All derive from :class:`CompileError` (a ``RuntimeError``) except the ones about a value the
caller passed, which also derive from ``ValueError``/``TypeError`` so that ordinary
``except ValueError`` code keeps working.
"""
from __future__ import annotations


class CompileError(RuntimeError):
    """A compile step could not be done (missing cost model, missing CUDA builder, ...)."""


class PipelineError(CompileError, ValueError):
    """A pipeline text or pass option is wrong: unknown pass, unknown option, bad type, bad order."""


class ArtifactError(CompileError):
    """A compiled-model directory cannot be loaded: missing or corrupted file, version or target mismatch."""


class InputError(ValueError):
    """The inputs given to a :class:`~cwm.compile.compiled_model.CompiledModel` do not match its signature."""
