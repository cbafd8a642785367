"""The one error type of the frontends: an operator the TVM importer cannot translate."""
from __future__ import annotations


class UnsupportedOpError(NotImplementedError):
    """``op`` (an ONNX op type or a torch ATen target) has no TVM Relax translation.

    ``node`` names the first graph node that uses it (ONNX node name, or the FX node name
    of the exported program); ``frontend`` is ``"onnx"`` or ``"torch"``; ``others`` lists
    further unsupported ops of the same graph, if the frontend reported several.
    """

    def __init__(self, op: str, node: str, frontend: str = "", others: tuple = (),
                 detail: str = ""):
        self.op, self.node, self.frontend, self.others = op, node, frontend, tuple(others)
        self.detail = detail
        where = f" frontend {frontend!r}" if frontend else ""
        msg = f"operator {op!r} (used by node {node!r}) is not supported by the TVM{where} importer"
        if self.others:
            msg += f"; also unsupported: {', '.join(self.others)}"
        if detail:
            msg += f" [{detail}]"
        super().__init__(msg)

    def __reduce__(self):  # keep the fields through pickling (worker pools)
        return (type(self), (self.op, self.node, self.frontend, self.others, self.detail))
