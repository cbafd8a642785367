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


class InvalidModelError(CompileError, ValueError):
    """The model given to :func:`cwm.compile` cannot be imported: not ONNX, empty, missing external
    data, or a model without a graph, inputs or outputs."""


class InputShapeError(CompileError, ValueError):
    """``input_shapes=`` is wrong (non-positive or non-integer dims, wrong rank) or missing for a
    symbolic dimension. ``cli`` is the same message worded for ``cwm compile --input-shape``."""

    def __init__(self, message: str, cli: str | None = None):
        super().__init__(message)
        self.cli = cli or message


class WorkDirBusyError(CompileError):
    """Another process holds the work dir's lock (:mod:`cwm.dirlock`) for longer than ``lock_timeout``."""


class DatabaseError(CompileError):
    """The work dir's tuning database cannot be read or repaired; the message names the file."""


class BuildError(CompileError):
    """Legalizing or building one function failed (:mod:`cwm.compile.failure_origin`). The message
    names the pass, the TIR function, the Relax bindings that call it, the Relax op(s) it came from,
    the frontend node ("unknown" when the importer kept none) and one line of TVM's message, in at
    most 4 lines; ``cli`` is the same on one line (``cwm compile``). TVM's exception is ``tvm_error``
    and ``__cause__``. The parts are attributes too: ``pass_name``, ``function``, ``callers``,
    ``ops``, ``node``, ``tvm_message``."""

    def __init__(self, message: str, pass_name: str = "", function: str | None = None, callers: tuple = (),
                 ops: tuple = (), node: str | None = None, tvm_message: str = "",
                 tvm_error: BaseException | None = None):
        super().__init__(message)
        self.pass_name, self.function, self.callers = pass_name, function, tuple(callers)
        self.ops, self.node, self.tvm_message, self.tvm_error = tuple(ops), node, tvm_message, tvm_error
        self.cli = "; ".join(line.strip() for line in message.splitlines() if line.strip())
