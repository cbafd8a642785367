"""Seeded generator of training workloads for the unmeasured-trajectory corpus (issue #12).

A world model learns what schedule actions *do* from trajectories, and trajectories need no
measurement, so the transition can see far more workloads than the 63 measured training
tasks. This module draws workloads from the operator families networks are made of, over
the shape ranges networks use:

    dense, dense_bias_relu, batch_matmul, conv2d, conv2d_bias_relu, depthwise_conv2d,
    max_pool2d, avg_pool2d, softmax, layer_norm, elementwise (add / multiply / gelu-like chains)

``generate(n, seed, exclude)`` yields ``GeneratedWorkload(name, family, params, mod)`` with
distinct structural hashes (``task_key``), never one in ``exclude`` (the held-out tasks'
keys: :func:`heldout_keys`). The same ``(n, seed)`` gives the same workloads in the same order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FAMILIES = ("dense", "dense_bias_relu", "batch_matmul", "conv2d", "conv2d_bias_relu", "depthwise_conv2d",
            "max_pool2d", "avg_pool2d", "softmax", "layer_norm", "elementwise")


@dataclass
class GeneratedWorkload:
    name: str
    family: str
    params: dict = field(default_factory=dict)
    mod: object = None


def _pick(rng, values):
    return values[int(rng.integers(len(values)))]


def _channels(rng):
    return _pick(rng, (3, 8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512))


def _spatial(rng):
    return _pick(rng, (7, 8, 14, 16, 17, 28, 32, 35, 56, 64, 112))


def _seq(rng):
    return _pick(rng, (1, 16, 32, 49, 64, 77, 96, 128, 196, 197, 256))


def _hidden(rng):
    return _pick(rng, (64, 128, 192, 256, 320, 384, 512, 640, 768, 1024, 1536, 2048, 3072))


def _params(family: str, rng) -> dict:
    if family in ("dense", "dense_bias_relu"):
        return {"m": _seq(rng), "n": _hidden(rng), "k": _hidden(rng)}
    if family == "batch_matmul":
        return {"b": _pick(rng, (1, 2, 4, 8, 12, 16)), "n": _seq(rng), "m": _pick(rng, (32, 64, 128, 196, 256)),
                "k": _pick(rng, (32, 64, 96, 128))}
    if family in ("conv2d", "conv2d_bias_relu"):
        k = _pick(rng, (1, 1, 3, 3, 3, 5, 7))
        return {"c": _channels(rng), "hw": _spatial(rng), "oc": _channels(rng), "k": k,
                "stride": _pick(rng, (1, 1, 2)), "pad": k // 2}
    if family == "depthwise_conv2d":
        k = _pick(rng, (3, 3, 5))
        return {"c": _channels(rng), "hw": _spatial(rng), "k": k, "stride": _pick(rng, (1, 2)), "pad": k // 2}
    if family in ("max_pool2d", "avg_pool2d"):
        return {"c": _channels(rng), "hw": _spatial(rng), "k": _pick(rng, (2, 3)), "stride": _pick(rng, (1, 2))}
    if family in ("softmax", "layer_norm"):
        return {"rows": _seq(rng) * _pick(rng, (1, 1, 4, 12)), "cols": _hidden(rng)}
    if family == "elementwise":
        return {"shape": [_seq(rng), _hidden(rng)], "ops": _pick(rng, ("add", "add_relu", "mul_add", "gelu", "silu"))}
    raise ValueError(f"unknown workload family {family!r}; known: {FAMILIES}")


def build(family: str, p: dict):
    """The unscheduled ``IRModule`` of one family at parameters ``p`` (``tvm.te`` / ``topi``)."""
    import tvm
    from tvm import te, topi

    f32 = "float32"
    if family in ("dense", "dense_bias_relu"):
        # te.compute rather than topi.nn.dense: topi marks the weight layout-free, and Relax's
        # legalized linear layers (the measured tasks) do not
        x, w = te.placeholder((p["m"], p["k"]), f32, name="x"), te.placeholder((p["n"], p["k"]), f32, name="w")
        r = te.reduce_axis((0, p["k"]), name="k")
        out = te.compute((p["m"], p["n"]), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r), name="T_matmul_NT")
        args = [x, w]
        if family == "dense_bias_relu":
            b = te.placeholder((p["n"],), f32, name="b")
            out, args = topi.nn.relu(topi.add(out, b)), [x, w, b]
    elif family == "batch_matmul":
        x = te.placeholder((p["b"], p["n"], p["k"]), f32, name="x")
        y = te.placeholder((p["b"], p["m"], p["k"]), f32, name="y")
        r = te.reduce_axis((0, p["k"]), name="k")
        out = te.compute((p["b"], p["n"], p["m"]), lambda b, i, j: te.sum(x[b, i, r] * y[b, j, r], axis=r),
                         name="T_batch_matmul_NT")
        args = [x, y]
    elif family in ("conv2d", "conv2d_bias_relu"):
        data = te.placeholder((1, p["c"], p["hw"], p["hw"]), f32, name="data")
        weight = te.placeholder((p["oc"], p["c"], p["k"], p["k"]), f32, name="weight")
        out, args = topi.nn.conv2d_nchw(data, weight, p["stride"], p["pad"], 1), [data, weight]
        if family == "conv2d_bias_relu":
            b = te.placeholder((1, p["oc"], 1, 1), f32, name="bias")
            out, args = topi.nn.relu(topi.add(out, b)), [data, weight, b]
    elif family == "depthwise_conv2d":
        data = te.placeholder((1, p["c"], p["hw"], p["hw"]), f32, name="data")
        weight = te.placeholder((p["c"], 1, p["k"], p["k"]), f32, name="weight")
        out, args = topi.nn.depthwise_conv2d_nchw(data, weight, p["stride"], p["pad"], 1), [data, weight]
    elif family in ("max_pool2d", "avg_pool2d"):
        data = te.placeholder((1, p["c"], p["hw"], p["hw"]), f32, name="data")
        out = topi.nn.pool2d(data, (p["k"], p["k"]), (p["stride"], p["stride"]), (1, 1), (0, 0, 0, 0),
                             family.split("_")[0], layout="NCHW")
        args = [data]
    elif family == "softmax":
        x = te.placeholder((p["rows"], p["cols"]), f32, name="x")
        out, args = topi.nn.softmax(x, axis=-1), [x]
    elif family == "layer_norm":
        x = te.placeholder((p["rows"], p["cols"]), f32, name="x")
        g, b = te.placeholder((p["cols"],), f32, name="gamma"), te.placeholder((p["cols"],), f32, name="beta")
        out, args = topi.nn.layer_norm(x, g, b, axis=[1], epsilon=1e-5), [x, g, b]
    elif family == "elementwise":
        shape = tuple(p["shape"])
        a, b = te.placeholder(shape, f32, name="a"), te.placeholder(shape, f32, name="b")
        ops = p["ops"]
        if ops == "add":
            out = topi.add(a, b)
        elif ops == "add_relu":
            out = topi.nn.relu(topi.add(a, b))
        elif ops == "mul_add":
            out = topi.add(topi.multiply(a, b), a)
        elif ops == "gelu":
            out = topi.multiply(a, topi.add(topi.tanh(topi.multiply(a, b)), 1.0))
        else:  # silu
            out = topi.multiply(topi.sigmoid(a), b)
        args = [a, b]
    else:
        raise ValueError(f"unknown workload family {family!r}; known: {FAMILIES}")
    return tvm.IRModule({"main": te.create_prim_func([*args, out])})


def _name(family: str, p: dict) -> str:
    vals = [("x".join(map(str, v)) if isinstance(v, list) else str(v)) for v in p.values()]
    return f"{family}_" + "_".join(vals)


def heldout_keys(dataset_root) -> set[str]:
    """Structural-hash keys of the dataset's held-out (test) tasks: never generated."""
    from cwm.dataset.loader import DatasetLoader

    return set(DatasetLoader(dataset_root).task_keys("test"))


def distinct(n: int, draw, exclude: set[str] = frozenset(), max_draws: int = 1000, what: str = "workloads"):
    """The first ``n`` workloads of distinct structural hash, none in ``exclude``, from
    ``draw(i)`` (the i-th draw: a list of :class:`GeneratedWorkload`, empty where the shape was
    rejected); ``RuntimeError`` after ``max_draws`` draws without ``n``."""
    from cwm.workload_key import task_key

    seen, made = set(exclude), 0
    for i in range(max_draws):
        for w in draw(i):
            key = task_key(w.mod)
            if key in seen:
                continue
            seen.add(key)
            made += 1
            yield w
            if made == n:
                return
    raise RuntimeError(f"only {made} distinct {what} in {max_draws} draws; widen the ranges")


def generate(n: int, seed: int = 0, exclude: set[str] = frozenset(), families=FAMILIES, max_draws: int | None = None):
    """``n`` workloads of distinct structure, round-robin over ``families``, none in ``exclude``."""
    rng = np.random.default_rng(seed)

    def draw(i):
        family = families[i % len(families)]
        params = _params(family, rng)
        try:
            return [GeneratedWorkload(_name(family, params), family, params, build(family, params))]
        except Exception:  # noqa: BLE001 - a shape topi rejects (e.g. a kernel larger than the input)
            return []

    if n > 0:
        yield from distinct(n, draw, exclude, max_draws or 50 * n, f"workloads (seed {seed})")
