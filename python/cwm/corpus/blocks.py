"""Network blocks with random shapes, lowered the way a compiled network is (issue #12).

:mod:`cwm.corpus.generator` writes single operators with ``tvm.te``. The measured tasks are
different programs: Relax's legalization fused by ``FuseOps`` (``fused_conv2d_add_relu``,
``fused_matmul_add``, reshapes and transposes feeding a multiply, ...). Here small PyTorch
blocks (conv, depthwise conv, MLP, attention, norm, pooling) at random shapes go through the
project's own import route (``torch.export`` → Relax → :func:`cwm.frontends.tasks.extract_tasks`),
so their tasks have the zoo's fused forms. ``generate_blocks(n, seed, exclude)`` yields
:class:`~cwm.corpus.generator.GeneratedWorkload` s with distinct keys, none in ``exclude``.
"""
from __future__ import annotations

import numpy as np

from cwm.corpus.generator import GeneratedWorkload, _channels, _hidden, _pick, _seq, _spatial, distinct

BLOCKS = ("conv", "depthwise", "mlp", "attention", "norm", "pool")


def _block_params(kind: str, rng) -> dict:
    act = _pick(rng, ("relu", "relu", "relu6", "none"))
    if kind in ("conv", "depthwise"):
        k = _pick(rng, (1, 3, 3, 5)) if kind == "conv" else _pick(rng, (3, 5))
        c = _channels(rng)
        return {"c": c, "oc": c if kind == "depthwise" else _channels(rng), "hw": _spatial(rng), "k": k,
                "stride": _pick(rng, (1, 1, 2)), "act": act, "residual": bool(rng.integers(2))}
    if kind == "mlp":
        return {"seq": _seq(rng), "k": _hidden(rng), "n": _hidden(rng),
                "act": _pick(rng, ("gelu", "relu", "none")), "residual": bool(rng.integers(2))}
    if kind == "attention":
        heads = _pick(rng, (1, 2, 4, 8, 12))
        return {"seq": _seq(rng), "heads": heads, "dim": heads * _pick(rng, (16, 32, 64))}
    if kind == "norm":
        return {"seq": _seq(rng), "n": _hidden(rng), "residual": bool(rng.integers(2))}
    if kind == "pool":
        return {"c": _channels(rng), "hw": _spatial(rng), "op": _pick(rng, ("max", "avg", "mean")),
                "k": _pick(rng, (2, 3))}
    raise ValueError(f"unknown block {kind!r}; known: {BLOCKS}")


def _module_and_input(kind: str, p: dict):
    import torch
    from torch import nn

    def act(x):
        return {"relu": torch.relu, "relu6": nn.functional.relu6, "gelu": nn.functional.gelu}.get(
            p.get("act"), lambda v: v)(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            if kind in ("conv", "depthwise"):
                self.conv = nn.Conv2d(p["c"], p["oc"], p["k"], p["stride"], p["k"] // 2,
                                      groups=p["c"] if kind == "depthwise" else 1)
            elif kind == "mlp":
                self.fc = nn.Linear(p["k"], p["n"])
            elif kind == "attention":
                self.qkv = nn.Linear(p["dim"], 3 * p["dim"])
            elif kind == "norm":
                self.ln = nn.LayerNorm(p["n"])

        def forward(self, x):
            if kind in ("conv", "depthwise"):
                y = act(self.conv(x))
                return y + x if p["residual"] and y.shape == x.shape else y
            if kind == "mlp":
                y = act(self.fc(x))
                return y + x if p["residual"] and y.shape == x.shape else y
            if kind == "attention":
                b, s, d = x.shape
                q, k, v = self.qkv(x).reshape(b, s, 3, p["heads"], d // p["heads"]).permute(2, 0, 3, 1, 4)
                w = torch.softmax(q @ k.transpose(-1, -2) * (d // p["heads"]) ** -0.5, -1)
                return (w @ v).transpose(1, 2).reshape(b, s, d)
            if kind == "norm":
                y = self.ln(x)
                return y + x if p["residual"] else y
            if p["op"] == "mean":
                return x.mean((2, 3))
            pool = nn.functional.max_pool2d if p["op"] == "max" else nn.functional.avg_pool2d
            return pool(x, p["k"], 2)

    if kind in ("conv", "depthwise", "pool"):
        shape = (1, p["c"], p["hw"], p["hw"])
    else:
        shape = (1, p["seq"], {"mlp": p.get("k"), "attention": p.get("dim"), "norm": p.get("n")}[kind])
    return Block().eval(), torch.randn(*shape)


def block_tasks(kind: str, p: dict, target=None) -> list:
    """The MetaSchedule tasks of one block (``cwm.frontends.tasks.Task``), in extraction order."""
    import torch

    from cwm.frontends.importers import from_exported_program
    from cwm.frontends.tasks import extract_tasks

    module, x = _module_and_input(kind, p)
    with torch.no_grad():
        program = torch.export.export(module, (x,))
    return extract_tasks(from_exported_program(program), target)


def generate_blocks(n: int, seed: int = 0, exclude: set[str] = frozenset(), target=None, max_blocks=None):
    """``n`` block-derived workloads of distinct structure, none in ``exclude``."""
    rng = np.random.default_rng([seed, 1])

    def draw(i):
        kind = BLOCKS[i % len(BLOCKS)]
        params = _block_params(kind, rng)
        try:
            tasks = block_tasks(kind, params, target)
        except (ImportError, NameError, AttributeError):  # a bug, not a rejected shape: never swallowed
            raise
        except Exception:  # noqa: BLE001 - a shape the importer or topi rejects
            return []
        return [GeneratedWorkload(f"block_{kind}_{t.name}_{t.key[:6]}", f"block_{kind}", {**params, "task": t.name},
                                  t.mod) for t in tasks]

    if n > 0:
        yield from distinct(n, draw, exclude, max_blocks or 20 * n, f"block tasks (seed {seed})")
