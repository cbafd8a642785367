"""TVM ``Trace`` objects <-> TVM's trace JSON text (the form stored and featurised)."""
from __future__ import annotations

import json


def _plain(o):
    # as_json() can hold IntImm/FloatImm objects (e.g. Annotate values); store their value
    return o.value if hasattr(o, "value") else str(o)


def trace_to_json(trace, remove_postproc: bool = False) -> str:
    """Serialise a ``tvm.s_tir.Trace`` to compact JSON text ``[insts, decisions]``."""
    return json.dumps(trace.as_json(remove_postproc=remove_postproc), default=_plain, separators=(",", ":"))
