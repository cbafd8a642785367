"""NaN-propagating ReLU, clip and element-wise max/min: the body of the ``cwm-keep-nan`` pass.

TVM lowers ``relu(x)`` to ``max(x, 0)``, ``clip`` to ``max(min(x, hi), lo)`` and
``maximum``/``minimum`` to TIR ``Max``/``Min``, and its code generators turn a float ``Max`` into
an ordered compare and select (llvm: ``fcmp ogt`` + ``select``; CUDA: ``fmaxf``). A NaN operand
then yields the *other* operand, so a compiled ``relu(nan)`` is ``0``. PyTorch, ONNX Runtime and
numpy propagate NaN.

:func:`keep_nan` rewrites, before legalization, every float

* ``relax.nn.relu`` (and ``relax.nn.relu6``, which TVM builds as ``clip(x, 0, 6)``),
* ``relax.clip`` with constant bounds (torch ``clamp``/``hardtanh``/``relu6``/``hardswish``/
  ``hardsigmoid``, ONNX ``HardSigmoid``),
* ``relax.maximum`` / ``relax.minimum`` (torch ``maximum``/``minimum``/``clamp`` with tensor bounds),
* ``R.call_tir`` of a PrimFunc that is one element-wise tree of ``Max``/``Min`` over its inputs
  (broadcast) and float constants: what TVM's ONNX importer emits for ``Clip``
  (``topi.maximum``/``topi.minimum``),
* ``R.max``/``R.min`` over axis 0 of an ``R.stack``: how TVM's ONNX importer builds ``Max``/``Min``,

into one ``call_tir`` whose single block computes the same max/min tree with NaN-propagating
max/min written as ordered compares and selects (see :func:`_max`): ``relu(x)`` becomes
``Select(x <= 0, 0, x)``. It stays one element-wise block, so FuseOps fuses it with the
conv/matmul it follows exactly as before, task names stay the same, and llvm keeps the compare
(TVM's llvm target sets no fast-math flags unless ``fast-math*`` is given in the target).

Not rewritten, and so still NaN-dropping (docs/compile.md "NaN semantics", tests/test_nan_semantics.py):
reductions (``max_pool*``, other ``R.max``/``R.min``), whose result depends on where the NaN sits in
the window. A call whose rewrite fails is left as it was, with a warning.
"""
from __future__ import annotations

import math
from collections import Counter

#: relax ops rewritten, by name (``relax.max``/``relax.min`` only over a stack, ``relax.call_tir``
#: only of an element-wise max/min PrimFunc)
RELAX_OPS = ("relax.nn.relu", "relax.nn.relu6", "relax.clip", "relax.maximum", "relax.minimum",
             "relax.max", "relax.min", "relax.call_tir")


def _is_float(dtype) -> bool:
    return str(dtype).startswith(("float", "bfloat"))


def _ty(expr) -> str:
    """The dtype of a TIR expression (this TVM names it ``.ty``; upstream ``.dtype``)."""
    ty = getattr(expr, "ty", None)
    return str(expr.dtype if ty is None else ty)


# ---------------------------------------------------------------- the NaN-keeping TE compute
def _compute(leaves, tree, name):
    """``te.compute`` of ``tree(values)`` over the broadcast shape of the tensor ``leaves``.

    ``leaves``: ``te.Tensor`` or python float each; ``tree(values) -> PrimExpr`` builds the
    expression from the leaf values (in the same order) with :func:`_max` / :func:`_min`.
    """
    from tvm import te

    tensors = [leaf for leaf in leaves if isinstance(leaf, te.Tensor)]
    dtype = tensors[0].dtype
    shape = _broadcast_shape([t.shape for t in tensors])

    def body(*index):
        return tree([_load(leaf, index, shape, dtype) for leaf in leaves])

    return te.compute(shape, body, name=name)


def _is_one(dim) -> bool:
    from tvm import tirx

    return isinstance(dim, tirx.IntImm) and int(dim) == 1 or isinstance(dim, int) and dim == 1


def _broadcast_shape(shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        wide = [d for d in dims if not _is_one(d)]
        out.append(wide[0] if wide else dims[0])
    return out


def _load(leaf, index, shape, dtype):
    """``leaf`` at the output point ``index`` of ``shape`` (numpy broadcasting)."""
    from tvm import te, tirx

    if not isinstance(leaf, te.Tensor):
        return tirx.const(leaf, dtype)
    skip = len(index) - len(leaf.shape)
    return leaf(*[tirx.const(0, _ty(d)) if _is_one(d) and not _is_one(o) else i
                  for d, o, i in zip(leaf.shape, shape[skip:], index[skip:])])


def _scalar(expr):
    """A python float for a 0-d (or all-1) float ``relax.Constant``, else None."""
    import tvm

    constant = getattr(tvm.relax, "Constant", None) or tvm.ir.expr.Constant  # this TVM: tvm.ir.expr
    if isinstance(expr, constant) and hasattr(expr, "data"):
        data = expr.data.numpy()
        if data.size == 1 and data.dtype.kind == "f":
            return float(data.reshape(()))
    return None


def _bound(value):
    """A constant clip bound (IntImm/FloatImm, or one wrapped in a PrimValue) as a python float,
    else None (a symbolic bound)."""
    for _ in range(3):
        if isinstance(value, (int, float)):
            return float(value)
        value = getattr(value, "value", None)
    return None


# ---------------------------------------------------------------- recognising emit_te'd max/min
def _minmax_tree(func):
    """For a PrimFunc ``(in_0, ..., in_k, out)`` whose only block stores, at every point of
    ``out``, a tree of float ``Max``/``Min`` over broadcast loads of the inputs and float
    constants: ``(leaves, tree)`` where ``leaves`` are input indices (int) or floats and
    ``tree(values)`` rebuilds the expression. None for anything else."""
    from tvm import tirx

    params = list(func.params)
    if len(params) < 2:
        return None
    root = func.body
    if not hasattr(root, "block") or root.block.alloc_buffers or root.block.match_buffers or root.block.init:
        return None
    loops, node = [], root.block.body
    while isinstance(node, tirx.For):
        if not (isinstance(node.min, tirx.IntImm) and int(node.min) == 0) or node.thread_binding is not None:
            return None
        loops.append(node)
        node = node.body
    if not hasattr(node, "block") or not hasattr(node, "iter_values"):
        return None
    block = node.block
    if block.init is not None or block.alloc_buffers or block.match_buffers or len(block.iter_vars) != len(loops):
        return None
    if not (isinstance(node.predicate, tirx.IntImm) and int(node.predicate) == 1):
        return None
    ivars = [iv.var for iv in block.iter_vars]
    for iv, value, loop in zip(block.iter_vars, node.iter_values, loops):
        if int(iv.iter_type) != 0 or not value.same_as(loop.loop_var) or not _same_extent(iv.dom.extent, loop.extent):
            return None
    store = block.body
    if not isinstance(store, tirx.BufferStore) or not store.buffer.same_as(params[-1]):
        return None
    if len(store.indices) != len(ivars) or not all(i.same_as(v) for i, v in zip(store.indices, ivars)):
        return None
    if not _is_float(_ty(store.value)) or not isinstance(store.value, (tirx.Max, tirx.Min)):
        return None
    leaves = []

    def walk(expr):
        """``(tree, is_bound)``: a one-element input (e.g. the ``Clip`` bounds, which TVM's ONNX
        importer has already turned from NaN into -inf/inf) or a constant is a bound, compared
        against once, like a constant (a NaN there is not propagated, as before)."""
        if isinstance(expr, (tirx.Max, tirx.Min)):
            (left, left_bound), (right, right_bound) = walk(expr.a), walk(expr.b)
            if left is None or right is None:
                return None, False
            combine = _max if isinstance(expr, tirx.Max) else _min
            return (lambda values: combine(left(values), right(values), left_bound, right_bound)), False
        if isinstance(expr, tirx.FloatImm):
            leaves.append(float(expr.value))
            bound = True
        else:
            source = _input_of(expr, params[:-1], ivars)
            if source is None:
                return None, False
            leaves.append(source)
            bound = all(_is_one(d) for d in params[source].shape)
        slot = len(leaves) - 1
        return (lambda values: values[slot]), bound

    tree, _ = walk(store.value)
    return None if tree is None else (leaves, tree)


def _same_extent(a, b) -> bool:
    from tvm import tirx

    if isinstance(a, tirx.IntImm) and isinstance(b, tirx.IntImm):
        return int(a) == int(b)
    return a.same_as(b)


def _input_of(expr, inputs, ivars):
    """The input index that ``expr`` loads with broadcast indexing, else None."""
    from tvm import tirx

    # this TVM's loads are ``TensorLoad(source=<param>, indices)``; upstream's ``BufferLoad(buffer, ...)``
    source = getattr(expr, "source", None)
    source = getattr(expr, "buffer", None) if source is None else source
    indices = getattr(expr, "indices", None)
    if source is None or indices is None:
        return None
    matches = [k for k, param in enumerate(inputs) if source.same_as(param)]
    if len(matches) != 1:
        return None
    skip = len(ivars) - len(indices)
    if skip < 0:
        return None
    for axis, index in enumerate(indices):
        if index.same_as(ivars[skip + axis]):
            continue
        if isinstance(index, tirx.IntImm) and int(index) == 0 and _is_one(source.shape[axis]):
            continue
        return None
    return matches[0]


# NaN-propagating max/min written with ordered compares and selects only. Not ``isnan``: TVM's
# vectorizer cannot vectorize that call and scalarizes the loop (LLVM then re-vectorizes it with
# gathers/scatters: a tuned conv2d+relu ran 2x slower). Not ``x != x`` or ``not (x <= c)``: TVM's
# simplifier assumes no NaN and folds them (to false, to ``c < x``). An ordered compare is false
# when an operand is NaN, so the select returns the operand that may be NaN:
#   max(x, c) = Select(x <= c, c, x)   min(x, c) = Select(x >= c, c, x)     (c a constant)
#   max(a, b) = Select(b <= a, a, Select(a <= b, b, a + b))   (a + b: NaN if either is)
# With c not NaN these equal TVM's own max/min wherever no operand is NaN (up to the sign of a
# zero from a two-tensor max/min of -0 and +0); llvm turns each into
# one compare and one blend (vcmpnleps + masked move on AVX-512), like the max it replaces.
def _max(a, b, a_bound=False, b_bound=False):
    return _keep_nan_minmax(a, b, lambda x, y: x <= y, a_bound, b_bound)


def _min(a, b, a_bound=False, b_bound=False):
    return _keep_nan_minmax(a, b, lambda x, y: x >= y, a_bound, b_bound)


def _keep_nan_minmax(a, b, beaten, a_bound=False, b_bound=False):
    """max (``beaten = <=``) or min (``beaten = >=``) of ``a`` and ``b`` that propagates NaN.

    A constant operand, or one marked as a bound (``a_bound``/``b_bound``), is taken as not NaN:
    one compare and select then suffice."""
    from tvm import tirx

    def nan_const(e):
        return isinstance(e, tirx.FloatImm) and math.isnan(float(e.value))

    if nan_const(a) or nan_const(b):
        return a if nan_const(a) else b
    if b_bound or isinstance(b, tirx.FloatImm):
        return tirx.Select(beaten(a, b), b, a)
    if a_bound or isinstance(a, tirx.FloatImm):
        return tirx.Select(beaten(b, a), a, b)
    return tirx.Select(beaten(b, a), a, tirx.Select(beaten(a, b), b, a + b))


def _clip(x, low, high):
    """TVM's ``clip`` (``max(min(x, high), low)``) keeping NaN; an infinite bound is left out."""
    from tvm import tirx

    dtype = _ty(x)
    if high != math.inf:
        x = _min(x, tirx.const(high, dtype))
    if low != -math.inf:
        x = _max(x, tirx.const(low, dtype))
    return x


# ---------------------------------------------------------------- the rewrite
def _mutator_class():
    from tvm import relax
    from tvm.relax import PyExprMutator, expr_functor

    @expr_functor.mutator
    class KeepNaN(PyExprMutator):
        def __init__(self, mod):
            super().__init__(mod)
            self.counts = Counter()
            self.failed = []

        def visit_call_(self, call):
            call = super().visit_call_(call)
            try:
                replaced = self._rewrite(call)
            except Exception as error:  # noqa: BLE001 - keep TVM's lowering rather than fail the compile
                self.failed.append(f"{getattr(call.op, 'name', call.op)}: {type(error).__name__}: {error}")
                return call
            return call if replaced is None else replaced

        def _rewrite(self, call):
            op = getattr(call.op, "name", None)
            out_ty = call.ty
            if not hasattr(out_ty, "dtype") or not _is_float(out_ty.dtype):
                return None
            bb = self.builder_
            if op in ("relax.nn.relu", "relax.nn.relu6"):
                self.counts[op] += 1
                high = 6.0 if op == "relax.nn.relu6" else math.inf
                return bb.call_te(lambda x: _compute([x], lambda v: _clip(v[0], 0.0, high), "T_relu_keep_nan"),
                                  call.args[0], primfunc_name_hint="relu" if high == math.inf else "tir_clip")
            if op == "relax.clip":
                low, high = _bound(call.args[1]), _bound(call.args[2])
                if low is None or high is None:
                    return None
                self.counts[op] += 1
                return bb.call_te(lambda x: _compute([x], lambda v: _clip(v[0], low, high), "T_clip_keep_nan"),
                                  call.args[0], primfunc_name_hint="tir_clip")
            if op in ("relax.maximum", "relax.minimum"):
                combine = _max if op == "relax.maximum" else _min
                a, b = call.args
                scalars = [_scalar(a), _scalar(b)]
                tensors = [arg for arg, s in zip((a, b), scalars) if s is None]
                if not tensors:
                    return None
                self.counts[op] += 1
                name = op.split(".")[-1]

                def te_func(*ts):
                    it = iter(ts)
                    leaves = [s if s is not None else next(it) for s in scalars]
                    return _compute(leaves, lambda v: combine(v[0], v[1]), f"T_{name}_keep_nan")

                return bb.call_te(te_func, *tensors, primfunc_name_hint=name)
            if op in ("relax.max", "relax.min"):
                return self._stacked(call, _max if op == "relax.max" else _min, op.split(".")[-1])
            return None

        def _stacked(self, call, combine, name):
            """``R.max(R.stack(fields, axis=0), axis=[0])`` (TVM's ONNX ``Max``/``Min``) as an
            element-wise NaN-keeping max/min of the fields; any other reduction: None."""
            axes = [int(a) for a in (call.attrs.axis or ())]
            if axes != [0] or bool(call.attrs.keepdims):
                return None
            stacked = self._bound_call(call.args[0], "relax.stack")
            if stacked is None or int(stacked.attrs.axis) != 0 or not hasattr(stacked.args[0], "fields"):
                return None
            scalars, tensors = [], []
            for field in stacked.args[0].fields:
                spread = self._bound_call(field, "relax.broadcast_to")
                scalar = _scalar(field) if spread is None else _scalar(spread.args[0])
                scalars.append(scalar)
                if scalar is None:
                    tensors.append(field)
            if not tensors:
                return None
            self.counts["relax.stack+" + name] += 1

            def te_func(*ts):
                it = iter(ts)
                leaves = [s if s is not None else next(it) for s in scalars]

                def tree(values):
                    out = values[0]
                    for value in values[1:]:
                        out = combine(out, value)
                    return out

                return _compute(leaves, tree, f"T_{name}_keep_nan")

            return self.builder_.call_te(te_func, *tensors, primfunc_name_hint=name)

        def _bound_call(self, var, op_name):
            """The call ``var`` is bound to, if it is a call of ``op_name``."""
            try:
                value = self.lookup_binding(var)
            except Exception:  # noqa: BLE001 - not a bound var
                return None
            if value is not None and getattr(getattr(value, "op", None), "name", None) == op_name:
                return value
            return None

    return KeepNaN


def _keep_nan_prim_func(func):
    """``func`` (an element-wise max/min tree, :func:`_minmax_tree`) rebuilt with NaN-keeping
    max/min, same parameters and attributes; None if ``func`` is not one."""
    from tvm import te

    found = _minmax_tree(func)
    if found is None:
        return None
    leaves, tree = found
    params = list(func.params)
    inputs = [te.placeholder(tuple(p.shape), str(p.dtype), name=p.name) for p in params[:-1]]
    out = _compute([leaf if isinstance(leaf, float) else inputs[leaf] for leaf in leaves], tree, "T_minmax_keep_nan")
    if len(out.shape) != len(params[-1].shape) or not all(
            _same_extent(a, b) for a, b in zip(out.shape, params[-1].shape)) or str(out.dtype) != str(params[-1].dtype):
        return None
    new = te.create_prim_func(inputs + [out]).without_attr("global_symbol")  # private, like ``func``
    return new.with_attrs(dict(func.attrs)) if func.attrs is not None else new


def keep_nan(mod):
    """``(rewritten module, Counter of what was rewritten)``; see the module docstring.

    A PrimFunc already in ``mod`` that is an element-wise max/min tree (what TVM's ONNX importer
    emits for ``Clip``) is replaced in place (same name and signature); a rewritten relax op
    becomes a ``call_tir`` of a new PrimFunc named as LegalizeOps would name it (``relu``,
    ``tir_clip``, ``maximum``, ...), so fused task names do not change.
    """
    from tvm import relax, tirx

    from cwm.compile.relax_rewrite import rewrite_relax_functions

    counts = Counter()
    replaced = {}
    for gv, func in mod.functions_items():
        if isinstance(func, tirx.PrimFunc):
            try:
                new = _keep_nan_prim_func(func)
            except Exception as error:  # noqa: BLE001 - keep TVM's lowering rather than fail the compile
                _warn([f"PrimFunc {gv.name_hint}: {type(error).__name__}: {error}"])
                new = None
            if new is not None:
                replaced[gv] = new
                counts["PrimFunc " + gv.name_hint.rstrip("0123456789")] += 1
    if replaced:
        mod = mod.clone()
        for gv, new in replaced.items():
            mod.update_func(gv, new)
    out, mutator = rewrite_relax_functions(_mutator_class()(mod), mod)
    if mutator.failed:
        _warn(mutator.failed)
    counts.update(mutator.counts)
    if mutator.counts or mutator.failed:
        entries = [gv.name_hint for gv, func in out.functions_items() if isinstance(func, relax.Function)]
        out = relax.transform.DeadCodeElimination(entries)(out)
    return out, counts


def _warn(failed):
    import warnings

    warnings.warn(f"cwm-keep-nan left {len(failed)} call(s) as TVM lowers them (NaN may become "
                  f"a number there): {'; '.join(failed[:3])}", RuntimeWarning, stacklevel=3)
