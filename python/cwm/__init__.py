"""CWM: a compiler world model for tensor-program auto-scheduling on TVM MetaSchedule.

Importing ``cwm`` is cheap: TVM, torch and the native core are imported by the
functions that need them. Importing it also makes TVMScript parsing fast in this
process and in every worker process it starts (see :mod:`cwm.tvm_patch`).
"""
from cwm._version import NATIVE_API_VERSION, __version__
from cwm import tvm_patch as _tvm_patch

_tvm_patch.install()

__all__ = ["__version__", "NATIVE_API_VERSION"]
