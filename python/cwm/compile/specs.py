"""``TensorSpec``: the name, static shape and dtype of one model input, output or parameter."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of a model's signature. ``shape`` is a tuple of ints (static shapes only)."""

    name: str
    shape: tuple
    dtype: str

    def to_json(self) -> dict:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "TensorSpec":
        return cls(str(data["name"]), tuple(int(d) for d in data["shape"]), str(data["dtype"]))

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)}"


def spec_of_type(name: str, ty) -> TensorSpec:
    """The :class:`TensorSpec` of a Relax ``TensorType`` with a static shape (``ValueError`` otherwise)."""
    shape = getattr(ty, "shape", None)
    values = getattr(shape, "values", None)
    if values is None:
        raise ValueError(f"tensor {name!r} has no static shape ({ty}); cwm.compile needs static shapes")
    try:
        dims = tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"tensor {name!r} has a symbolic shape {shape}; pass static input shapes "
                         "(input_shapes= / example_inputs=)") from None
    return TensorSpec(name, dims, str(ty.dtype))
