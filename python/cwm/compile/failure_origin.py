"""Where a failed legalization or build came from (issue 16, "build failures name their origin").

TVM reports a codegen failure from deep inside ``tvm.compile`` ("LLVM module verification failed
... fcmp oeq i1") without saying which function it was compiling, and a legalization failure
("Cannot decide min_value for typeT.bool") without saying which op. Once something has failed
(the normal path never calls this module), :func:`build_failure` / :func:`legalize_failure`
turn TVM's exception into a :class:`~cwm.compile.errors.BuildError` that names

* the pass (``cwm-build``, ``cwm-partition``);
* the TIR function: every PrimFunc of the module is built alone (``tvm.tirx.build``) until one
  fails, in the order ``main`` calls them;
* the Relax bindings that call it (``main: gv = R.call_tir(equal, (a, b))``);
* the Relax op(s) it was legalized from: ``LegalizeOps`` is re-run on the module cwm-partition
  legalized, with each op's ``FLegalize`` wrapped to record the PrimFuncs it adds, then
  ``FuseOps`` to learn which PrimFuncs a ``fused_*`` function joins. Without that module the op
  is guessed from the PrimFunc's name (and said to be a guess);
* the frontend node: TVM 0.27's ``from_exported_program`` and ``from_onnx`` keep no torch/ONNX
  node name and no span (every binding has ``span=None`` and is named ``lv``, ``lv1``, ``gv``),
  so this is "unknown" unless a binding carries a span;
* one line of TVM's message (a ``Check failed`` line if there is one, never the traceback).
"""
from __future__ import annotations

import re

from cwm.compile.errors import BuildError, CompileError

#: what the message says when no binding carries a span
UNKNOWN_NODE = "unknown (TVM's torch and ONNX importers keep no node names or spans)"
_CALL_TIR = ("relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad")
_MAX_LINE = 240


# ------------------------------------------------------------------------------ public
def tvm_line(error) -> str:
    """One line of TVM's message: the ``Check failed`` line if any, else the first line (joined
    with the next one when it ends with ``:``), at most 240 characters."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    checks = [line for line in lines if "Check failed" in line]
    if checks:
        line = checks[0][checks[0].index("Check failed"):]
    else:
        line = lines[0]
        if line.endswith(":") and len(lines) > 1:
            line = f"{line} {lines[1]}"
    return line if len(line) <= _MAX_LINE else line[:_MAX_LINE - 3] + "..."


def build_failure(error, mod, target, pass_name: str = "cwm-build", source=None) -> CompileError:
    """The :class:`BuildError` for ``error``, raised while building the Relax module ``mod``.

    ``source``: the module before legalization (what cwm-partition fused), for the op names;
    when ``mod`` is not legalized yet (a pipeline without cwm-partition) it is its own source.
    Never raises: if finding the origin fails, the error names only the pass and TVM's line.
    """
    kind = target.kind.name
    try:
        lowered = mod
        if _needs_legalization(mod):
            from cwm.partition import fuse

            source = mod
            try:
                lowered = fuse(mod, target)
            except Exception as legalize_error:  # noqa: BLE001 - tvm.compile's own legalization failed
                return legalize_failure(legalize_error, mod, target, pass_name)
        name, own_error = _failing_primfunc(lowered, target)
        if name is None:
            return BuildError(f"{pass_name}: building for {kind} failed (no TIR function fails when built "
                              f"alone): {tvm_line(error)}", pass_name=pass_name, tvm_message=tvm_line(error),
                              tvm_error=error)
        line = tvm_line(own_error)
        callers = [text for text, _binding in _callers(lowered, name)]
        ops, guessed, nodes, texts = _origins(source, target, name)
        if ops:
            op_text = ", ".join(ops) + (" (guessed from the function's name)" if guessed else "")
            if texts:  # the bindings before legalization, the first 3
                op_text += f" (before legalization: {'; '.join(texts[:3])}{'; ...' if len(texts) > 3 else ''})"
        else:
            op_text = "unknown"
        node = ", ".join(nodes) if nodes else UNKNOWN_NODE
        lines = [f"{pass_name}: TIR function {name!r} does not build for {kind}: {line}",
                 f"  called by: {'; '.join(callers) if callers else 'no Relax binding'}",
                 f"  relax op(s): {op_text}",
                 f"  frontend node: {node}"]
        return BuildError("\n".join(lines), pass_name=pass_name, function=name, callers=tuple(callers),
                          ops=tuple(ops), node=node if nodes else None, tvm_message=line,
                          tvm_error=error)
    except Exception:  # noqa: BLE001 - the explanation must not hide the failure
        return BuildError(f"{pass_name}: building for {kind} failed: {tvm_line(error)}", pass_name=pass_name,
                          tvm_message=tvm_line(error), tvm_error=error)


def legalize_failure(error, mod, target, pass_name: str = "cwm-partition") -> CompileError:
    """The :class:`BuildError` for ``error``, raised while legalizing/fusing the Relax module
    ``mod``: ``LegalizeOps`` is re-run with every op's legalization wrapped, and the first op
    that raises is named with its binding. Never raises."""
    kind = target.kind.name
    try:
        failed = _first_failing_legalization(mod, target)
    except Exception:  # noqa: BLE001
        failed = None
    if failed is None:
        return BuildError(f"{pass_name}: legalizing and fusing for {kind} failed: {tvm_line(error)}",
                          pass_name=pass_name, tvm_message=tvm_line(error), tvm_error=error)
    op_name, text, node, own_error = failed
    line = tvm_line(own_error)
    lines = [f"{pass_name}: cannot legalize {op_name} for {kind}: {line}",
             f"  binding: {text or 'not found in the module'}",
             f"  frontend node: {node or UNKNOWN_NODE}"]
    return BuildError("\n".join(lines), pass_name=pass_name, callers=(text,) if text else (), ops=(op_name,),
                      node=node, tvm_message=line, tvm_error=error)


# ------------------------------------------------------------------------------ relax walks
def _bindings(mod):
    """``(function name, binding)`` for every binding of every Relax function, nested ones included."""
    from tvm import relax

    def walk(expr, where):
        if isinstance(expr, relax.SeqExpr):
            for block in expr.blocks:
                for binding in block.bindings:
                    yield where, binding
                    yield from walk(getattr(binding, "value", None), where)
            yield from walk(expr.body, where)
        elif isinstance(expr, relax.If):
            yield from walk(expr.true_branch, where)
            yield from walk(expr.false_branch, where)
        elif isinstance(expr, relax.Function):
            yield from walk(expr.body, where)

    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            yield from walk(func.body, gv.name_hint)


def _binding_text(where, binding) -> str:
    value = str(getattr(binding, "value", binding))
    value = re.sub(r", out_ty=.*\)$", ")", value.splitlines()[0] if value else value)
    if len(value) > 120:
        value = value[:117] + "..."
    return f"{where}: {binding.var} = {value}"


def _node_of(binding):
    """``file:line`` of the binding's span, or None (TVM's frontends set none)."""
    for span in (getattr(binding, "span", None), getattr(getattr(binding, "value", None), "span", None)):
        source = getattr(span, "source_name", None) if span is not None else None
        if source is not None and getattr(source, "name", ""):
            return f"{source.name}:{span.line}"
    return None


def _callee(value):
    """The name of the GlobalVar that ``value`` calls through call_tir (or directly), else None."""
    import tvm
    from tvm import relax

    if not isinstance(value, relax.Call):
        return None
    if isinstance(value.op, tvm.ir.Op) and value.op.name in _CALL_TIR and value.args:
        target = value.args[0]
    else:
        target = value.op
    return target.name_hint if isinstance(target, tvm.ir.GlobalVar) else None


def _callers(mod, name):
    return [(_binding_text(where, b), b) for where, b in _bindings(mod) if _callee(getattr(b, "value", None)) == name]


def _needs_legalization(mod) -> bool:
    """Whether a Relax function of ``mod`` still calls an op that ``LegalizeOps`` would lower."""
    import tvm
    from tvm import relax

    for _where, binding in _bindings(mod):
        value = getattr(binding, "value", None)
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) \
                and value.op.get_attr("FLegalize") is not None:
            return True
    return False


# ------------------------------------------------------------------------------ finding the function
def _failing_primfunc(mod, target):
    """``(name, error)`` of the first PrimFunc of ``mod`` that does not build alone, or ``(None, None)``."""
    import tvm
    from tvm import tirx

    funcs = {gv.name_hint: (gv, f) for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)}
    order = []
    for _where, binding in _bindings(mod):
        callee = _callee(getattr(binding, "value", None))
        if callee in funcs and callee not in order:
            order.append(callee)
    order += [name for name in funcs if name not in order]
    for name in order:
        gv, func = funcs[name]
        try:
            tvm.tirx.build(tvm.IRModule({gv: func.with_attr("global_symbol", name)}), target=target)
        except Exception as error:  # noqa: BLE001 - this is the one
            return name, error
    return None, None


# ------------------------------------------------------------------------------ finding the op
def _op_calls(mod):
    """``{op name: FLegalize}`` of the ops that ``mod``'s Relax functions call."""
    import tvm
    from tvm import relax

    ops = {}
    for _where, binding in _bindings(mod):
        value = getattr(binding, "value", None)
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
            legalize = value.op.get_attr("FLegalize")
            if legalize is not None:
                ops[value.op.name] = legalize
    return ops


def _binding_index(mod) -> tuple[dict, dict]:
    """The bindings of ``mod`` by value object and by value text: ``(text, node)`` each."""
    by_object, by_text = {}, {}
    for where, binding in _bindings(mod):
        value = getattr(binding, "value", None)
        if value is None:
            continue
        entry = (_binding_text(where, binding), _node_of(binding))
        by_object.setdefault(value, entry)
        by_text.setdefault(str(value), entry)
    return by_object, by_text


def _lookup(index, call):
    by_object, by_text = index
    return by_object.get(call) or by_text.get(str(call)) or (None, None)


def _legalize_passes(mod, target, wrap):
    """Run DecomposeOpsForInference and LegalizeOps (as :func:`cwm.partition.fuse`
    does) with each op's legalization replaced by ``wrap(op name, default)``."""
    import tvm

    from cwm.partition import legalize_passes

    custom = {name: wrap(name, default) for name, default in _op_calls(mod).items()}
    with target:
        return tvm.transform.Sequential(legalize_passes(custom))(mod)


def _first_failing_legalization(mod, target):
    """``(op name, binding text, node, error)`` of the first op whose legalization raises, or None."""
    index = _binding_index(mod)
    failed = []

    def wrap(name, default):
        def legalize(bb, call):
            try:
                return default(bb, call)
            except Exception as error:  # noqa: BLE001 - recorded, re-raised
                if not failed:
                    text, node = _lookup(index, call)
                    failed.append((name, text, node, error))
                raise
        return legalize

    try:
        _legalize_passes(mod, target, wrap)
    except Exception:  # noqa: BLE001 - expected: the recorded failure
        pass
    return failed[0] if failed else None


def _origins(source, target, name):
    """``(ops, guessed, nodes, texts)`` for the PrimFunc ``name``: the Relax op names it was
    legalized from, whether they are only guessed from ``name``, the frontend nodes (spans) known,
    and the bindings that held the ops before legalization."""
    if source is not None:
        try:
            recorded = _legalized_from(source, target)
        except Exception:  # noqa: BLE001 - fall back to the name
            recorded = {}
        if name in recorded:
            ops, nodes, texts = [], [], []
            for op_name, text, node in recorded[name]:
                for found, seen in ((op_name, ops), (node, nodes), (text, texts)):
                    if found and found not in seen:
                        seen.append(found)
            return ops, False, nodes, texts
    return _guess_ops(name), True, [], []


def _legalized_from(source, target) -> dict:
    """``{PrimFunc name: [(op name, binding text, node), ...]}`` for the module that
    :func:`cwm.partition.fuse` makes of ``source`` (fused functions included)."""
    import tvm
    from tvm import relax

    from cwm.partition import fusion_passes

    index = _binding_index(source)
    record: dict = {}

    def wrap(op_name, default):
        def legalize(bb, call):
            before = {gv.name_hint for gv in bb.get().get_global_vars()}
            out = default(bb, call)
            new = {gv.name_hint for gv in bb.get().get_global_vars()} - before
            callee = _callee(out)
            if callee is not None:  # an identical PrimFunc added before is reused, not added
                new.add(callee)
            text, node = _lookup(index, call)
            for func_name in new:
                record.setdefault(func_name, []).append((op_name, text, node))
            return out
        return legalize

    legalized = _legalize_passes(source, target, wrap)
    with target:
        fused = tvm.transform.Sequential(fusion_passes())(legalized)
    for gv, func in fused.functions_items():  # fused_* functions: FuseTIR makes a PrimFunc of that name
        if isinstance(func, relax.Function) and func.attrs is not None and "Primitive" in func.attrs:
            parts = []
            for _where, binding in _bindings(tvm.IRModule({gv: func})):
                parts += record.get(_callee(getattr(binding, "value", None)), [])
            record.setdefault(gv.name_hint, parts)
    return record


def _guess_ops(name) -> list:
    """Relax ops whose short names spell ``name`` (``fused_reshape_less_add_where`` ->
    relax.reshape, relax.less, relax.add, relax.where), or [] if it cannot be spelled so."""
    import tvm

    short = {}
    for op in tvm.ir.Op.list_op_names():
        if op.startswith("relax.") and not op.startswith(("relax.call_", "relax.vm.", "relax.builtin.")):
            short.setdefault(op.rsplit(".", 1)[1], op)
    stem = name[len("fused_"):] if name.startswith("fused_") else name
    found = _spell(stem, short) or _spell(re.sub(r"\d+$", "", stem), short)  # equal1: a second equal
    return list(dict.fromkeys(found))


def _spell(stem: str, short: dict) -> list:
    words = stem.split("_")
    best: dict = {0: []}  # words[:i] spelled as these ops
    for i in range(len(words)):
        if i not in best:
            continue
        for j in range(i + 1, len(words) + 1):
            candidate = "_".join(words[i:j])
            if candidate in short and j not in best:
                best[j] = best[i] + [short[candidate]]
    return best.get(len(words), [])
