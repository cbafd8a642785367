"""Textual pipelines of cwm passes, MLIR style: ``cwm-import,cwm-partition,cwm-tune{trials=8},...``.

Grammar (whitespace between tokens is ignored; :meth:`Pipeline.__str__` writes none)::

    pipeline := pass ("," pass)*
    pass     := NAME ["{" [option ("," option)*] "}"]
    option   := KEY "=" VALUE
    NAME,KEY := [a-z][a-z0-9-]*
    VALUE    := one or more characters other than , { } = and whitespace

Values are typed by the pass's :class:`~cwm.compile.passes.Option` (int, float, bool
``true``/``false``, str). ``str(parse(text)) == text`` for any text written without spaces,
and ``parse(str(p)) == p`` for every pipeline. :data:`PIPELINES` names a few pipelines;
:func:`resolve` accepts a name, a text or a :class:`Pipeline`, and a target: for a target of
kind ``KIND`` the name ``NAME`` means ``NAME-KIND`` when that is named too (``default`` for cuda
is ``default-cuda``, with the GPU passes), else ``NAME``. So a compile's pipeline text, which its
report and ``cwm compile`` print, is all it runs (docs/compile.md, "What a CUDA compile runs").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from cwm.compile.errors import PipelineError
from cwm.compile.passes import get_pass

_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
_VALUE = re.compile(r"[^,{}=\s]+\Z")

_IMPORT = "cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-int-power"
_FRONT = f"{_IMPORT},cwm-partition"
#: CPU: libm's exp / tanh / erf replaced by vectorizable polynomials before legalization
_FRONT_LLVM = f"{_IMPORT},cwm-vector-math,cwm-partition"
#: what a cuda build adds: TVM's GPU kernels for sort/scan/sampling, DLight for every function
#: without a (tuned) schedule, nvcc device code
_CUDA_BUILD = "cwm-gpu-dispatch,cwm-gpu-default-schedules,cwm-build{device-code=fatbin,compiler=auto}"

#: Named pipelines. ``NAME-KIND`` is what ``NAME`` resolves to for a target of kind ``KIND``.
PIPELINES = {
    # CPU: weights layout-free while tuning, packed ahead of time, transformed at compile time
    "default": f"{_FRONT_LLVM},cwm-layout-free,cwm-tune,cwm-apply-db,cwm-pack-weights,cwm-build,cwm-transform-weights",
    # default schedules only (llvm: TVM's unscheduled lowering), no measurement
    "no-tune": f"{_FRONT_LLVM},cwm-build,cwm-transform-weights",
    # the best schedules already in work_dir's database, no measurement
    "from-db": f"{_FRONT_LLVM},cwm-layout-free,cwm-apply-db,cwm-pack-weights,cwm-build,cwm-transform-weights",
    # the same for cuda targets (resolve("default", cuda) etc.)
    "default-cuda": f"{_FRONT},cwm-tune,cwm-apply-db,{_CUDA_BUILD}",
    "no-tune-cuda": f"{_FRONT},{_CUDA_BUILD}",
    "from-db-cuda": f"{_FRONT},cwm-apply-db,{_CUDA_BUILD}",
}


@dataclass(frozen=True)
class PassInvocation:
    """One pass of a pipeline and the options written for it (in the order written)."""

    name: str
    options: tuple = ()  # ((option name, typed value), ...)

    def __str__(self) -> str:
        if not self.options:
            return self.name
        spec = get_pass(self.name)
        body = ",".join(f"{k}={spec.option(k).format(v)}" for k, v in self.options)
        return f"{self.name}{{{body}}}"

    @property
    def given(self) -> dict:
        return dict(self.options)


@dataclass(frozen=True)
class Pipeline:
    """An ordered list of :class:`PassInvocation`; build one with :func:`parse` or :meth:`of`."""

    passes: tuple = field(default_factory=tuple)

    def __str__(self) -> str:
        return ",".join(str(p) for p in self.passes)

    def __iter__(self):
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    @property
    def names(self) -> list:
        return [p.name for p in self.passes]

    @classmethod
    def of(cls, *items) -> "Pipeline":
        """A pipeline from ``"name"`` or ``("name", {option: value})`` items, checked like :func:`parse`."""
        invocations = []
        for item in items:
            name, given = (item, {}) if isinstance(item, str) else item
            spec = get_pass(name)
            options = tuple((key, spec.option(key).check(value, name)) for key, value in dict(given).items())
            invocations.append(PassInvocation(name, options))
        pipeline = cls(tuple(invocations))
        pipeline.validate()
        return pipeline

    def validate(self, target=None) -> None:
        """Every pass is registered, appears once, comes after the passes it requires and before
        the passes it must precede; with ``target`` (a ``Target`` or a spec), every pass and
        option written is for its kind (:meth:`~cwm.compile.passes.PassSpec.check_target`)."""
        if not self.passes:
            raise PipelineError("a pipeline needs at least one pass")
        seen = []
        for invocation in self.passes:
            spec = get_pass(invocation.name)
            if invocation.name in seen:
                raise PipelineError(f"pass {invocation.name!r} appears twice in {str(self)!r}")
            missing = [r for r in spec.requires if r not in seen]
            if missing:
                raise PipelineError(f"pass {invocation.name!r} needs {', '.join(map(repr, missing))} earlier "
                                    f"in the pipeline: {str(self)!r}")
            late = [b for b in spec.before if b in seen]
            if late:
                raise PipelineError(f"pass {invocation.name!r} must come before {', '.join(map(repr, late))} "
                                    f"in the pipeline: {str(self)!r}")
            seen.append(invocation.name)
        if target is not None:
            kind = target_kind(target)
            for invocation in self.passes:
                get_pass(invocation.name).check_target(kind, invocation.given, str(self))

    def run(self, state, instruments=(), opt_level: int = 3):
        """Run the passes on ``state`` inside one ``tvm.transform.PassContext(instruments=...)``.

        The payload starts as an empty ``IRModule`` (cwm-import fills it) and each pass's result
        feeds the next. Returns ``state``; a pass's exception is re-raised as itself.
        """
        import tvm

        self.validate(state.target)
        mod = state.mod if state.mod is not None else tvm.IRModule()
        with tvm.transform.PassContext(opt_level=opt_level, instruments=list(instruments)):
            for invocation in self.passes:
                tvm_pass = get_pass(invocation.name).tvm_pass(state, invocation.given)
                state.error = None
                try:
                    mod = tvm_pass(mod)
                except BaseException as raised:  # noqa: BLE001 - re-raise the pass's own exception
                    original, state.error = state.error, None
                    if original is not None and original is not raised:
                        raise original from original.__cause__  # keep what the pass chained (TVM's error under a BuildError)
                    raise
        return state


def _split_top(text: str, what: str) -> list:
    """``text`` split at commas that are not inside braces."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == "{":
            depth += 1
            if depth > 1:
                raise PipelineError(f"nested '{{' in {what} {text!r}")
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced '}}' in {what} {text!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise PipelineError(f"unclosed '{{' in {what} {text!r}")
    parts.append("".join(current))
    return parts


def parse(text: str) -> Pipeline:
    """The :class:`Pipeline` written in ``text`` (grammar in the module docstring), validated."""
    if not isinstance(text, str):
        raise TypeError(f"a pipeline text must be a str, not {type(text).__name__}")
    invocations = []
    for part in _split_top(text, "pipeline"):
        part = part.strip()
        if not part:
            raise PipelineError(f"empty pass in pipeline {text!r}")
        name, body = part, None
        if "{" in part:
            name, rest = part.split("{", 1)
            name = name.strip()
            if not rest.rstrip().endswith("}"):
                raise PipelineError(f"text after '}}' in {part!r}")
            body = rest.rstrip()[:-1]
        if not _NAME.match(name):
            raise PipelineError(f"bad pass name {name!r} in pipeline {text!r}")
        spec = get_pass(name)
        options = []
        if body is not None and body.strip():
            for item in body.split(","):
                if "=" not in item:
                    raise PipelineError(f"option {item.strip()!r} of pass {name!r} must be written KEY=VALUE")
                key, value = (s.strip() for s in item.split("=", 1))
                if not _NAME.match(key):
                    raise PipelineError(f"bad option name {key!r} of pass {name!r}")
                if not _VALUE.match(value):
                    raise PipelineError(f"bad value {value!r} for option {key!r} of pass {name!r}")
                if key in dict(options):
                    raise PipelineError(f"option {key!r} given twice for pass {name!r}")
                options.append((key, spec.option(key).parse(value, name)))
        invocations.append(PassInvocation(name, tuple(options)))
    pipeline = Pipeline(tuple(invocations))
    pipeline.validate()
    return pipeline


def target_kind(target) -> str:
    """``"llvm"``, ``"cuda"``, ...: the kind of a ``Target`` or of a target spec
    (:func:`cwm.target_spec.resolve_target`)."""
    kind = getattr(getattr(target, "kind", None), "name", None)
    if kind is not None:
        return kind
    if isinstance(target, dict) and isinstance(target.get("kind"), str):
        return target["kind"]
    if isinstance(target, str) and target in ("llvm", "cuda"):
        return target
    from cwm.target_spec import resolve_target

    return resolve_target(target).kind.name


def resolve(spec, target=None) -> Pipeline:
    """A :class:`Pipeline` from a name in :data:`PIPELINES`, a pipeline text, or a ``Pipeline``.

    With ``target`` (a ``Target`` or a spec such as ``"cuda"``) a name ``NAME`` resolves to
    ``NAME-KIND`` (``KIND``: the target's kind) when that is named, so ``resolve("default",
    "cuda")`` is the ``default-cuda`` pipeline; and the pipeline is checked for the target (a
    pass or option for another kind is a ``PipelineError``).
    """
    if isinstance(spec, Pipeline):
        spec.validate(target)
        return spec
    if spec is None:
        spec = "default"
    name = spec.strip() if isinstance(spec, str) else None
    if name in PIPELINES:
        if target is not None and f"{name}-{target_kind(target)}" in PIPELINES:
            name = f"{name}-{target_kind(target)}"
        pipeline = parse(PIPELINES[name])
    elif isinstance(spec, str) and "," not in spec and "{" not in spec and not name.startswith("cwm-"):
        raise PipelineError(f"unknown pipeline {spec!r}; named pipelines: {', '.join(PIPELINES)} "
                            "(or write one, e.g. 'cwm-import,cwm-partition,cwm-build')")
    else:
        pipeline = parse(spec)
    pipeline.validate(target)
    return pipeline


def register_pipeline(name: str, text: str) -> None:
    """Name the pipeline ``text`` (checked now) as ``name``; ``NAME-KIND`` (e.g. ``fast-cuda``) is
    what ``NAME`` resolves to for targets of kind ``KIND``."""
    parse(text)
    if not _NAME.match(name) or name.startswith("cwm-"):
        raise ValueError(f"pipeline names are [a-z][a-z0-9-]* and do not start with 'cwm-': {name!r}")
    PIPELINES[name] = text
