"""Reference tensor programs (TIR PrimFuncs) used by tests, benchmarks and the demo.

Each factory returns an ``IRModule`` whose ``main`` is an unscheduled PrimFunc built
with ``tvm.te``. Names are stable: they key fixtures and benchmark results.
"""
from __future__ import annotations


def _module(tensors):
    import tvm
    from tvm import te

    return tvm.IRModule({"main": te.create_prim_func(tensors)})


def matmul(n: int = 256, m: int | None = None, k: int | None = None, dtype: str = "float32"):
    from tvm import te

    m, k = m or n, k or n
    a = te.placeholder((n, k), dtype, name="A")
    b = te.placeholder((k, m), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return _module([a, b, c])


def batch_matmul(b: int = 12, n: int = 128, m: int = 128, k: int = 64, dtype: str = "float32"):
    from tvm import te

    x = te.placeholder((b, n, k), dtype, name="X")
    y = te.placeholder((b, k, m), dtype, name="Y")
    r = te.reduce_axis((0, k), name="k")
    z = te.compute((b, n, m), lambda bb, i, j: te.sum(x[bb, i, r] * y[bb, r, j], axis=r), name="Z")
    return _module([x, y, z])


def conv2d(n=1, c=64, h=56, w=56, oc=64, kh=3, kw=3, stride=1, pad=1, dtype="float32"):
    from tvm import te, topi

    data = te.placeholder((n, c, h, w), dtype, name="data")
    weight = te.placeholder((oc, c, kh, kw), dtype, name="weight")
    out = topi.nn.conv2d_nchw(data, weight, stride, pad, 1)
    return _module([data, weight, out])


def depthwise_conv2d(n=1, c=96, h=56, w=56, k=3, stride=1, pad=1, dtype="float32"):
    from tvm import te, topi

    data = te.placeholder((n, c, h, w), dtype, name="data")
    weight = te.placeholder((c, 1, k, k), dtype, name="weight")
    out = topi.nn.depthwise_conv2d_nchw(data, weight, stride, pad, 1)
    return _module([data, weight, out])


def conv2d_bias_relu(n=1, c=32, h=28, w=28, oc=64, k=3, dtype="float32"):
    from tvm import te, topi

    data = te.placeholder((n, c, h, w), dtype, name="data")
    weight = te.placeholder((oc, c, k, k), dtype, name="weight")
    bias = te.placeholder((1, oc, 1, 1), dtype, name="bias")
    out = topi.nn.relu(topi.add(topi.nn.conv2d_nchw(data, weight, 1, 1, 1), bias))
    return _module([data, weight, bias, out])


def softmax(rows: int = 128, cols: int = 768, dtype: str = "float32"):
    from tvm import te, topi

    x = te.placeholder((rows, cols), dtype, name="x")
    return _module([x, topi.nn.softmax(x, axis=-1)])


def layer_norm(rows: int = 128, cols: int = 768, dtype: str = "float32"):
    from tvm import te, topi

    x = te.placeholder((rows, cols), dtype, name="x")
    gamma = te.placeholder((cols,), dtype, name="gamma")
    beta = te.placeholder((cols,), dtype, name="beta")
    return _module([x, gamma, beta, topi.nn.layer_norm(x, gamma, beta, axis=[1], epsilon=1e-5)])


WORKLOADS = {
    "matmul_256": lambda: matmul(256),
    "batch_matmul_12x128x128x64": lambda: batch_matmul(),
    "conv2d_64x56x56_3x3": lambda: conv2d(),
    "depthwise_conv2d_96x56x56_3x3": lambda: depthwise_conv2d(),
    "conv2d_bias_relu_32x28x28": lambda: conv2d_bias_relu(),
    "softmax_128x768": lambda: softmax(),
    "layer_norm_128x768": lambda: layer_norm(),
}


def get(name: str):
    """Build the named workload; raises ``KeyError`` listing the known names."""
    try:
        return WORKLOADS[name]()
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {sorted(WORKLOADS)}") from None
