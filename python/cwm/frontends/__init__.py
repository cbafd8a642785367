"""Model frontends: reference models exported to ONNX / torch.export and imported into TVM Relax.

Each model module builds its network with fixed random weights; torch, onnx and TVM are
imported by the functions that need them. :mod:`cwm.frontends.zoo` is the 7-network
registry, :mod:`cwm.frontends.importers` turns a network into a Relax module,
:mod:`cwm.frontends.numerics` checks it against PyTorch, :mod:`cwm.frontends.tasks`
extracts and deduplicates its MetaSchedule tasks and :mod:`cwm.frontends.task_cache` caches
the zoo networks' tasks.
"""
from cwm.frontends.errors import UnsupportedOpError

__all__ = ["UnsupportedOpError"]
