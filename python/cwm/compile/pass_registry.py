"""The registry of cwm passes: :class:`Option` (a typed pass option), :class:`PassSpec` (a
registered pass), :func:`register_pass` and :func:`get_pass`. The passes themselves are in
:mod:`cwm.compile.passes`, which registers them when imported (and re-exports these names).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cwm.compile.errors import PipelineError


@dataclass(frozen=True)
class Option:
    """One typed option of a pass. ``type`` is ``int``, ``float``, ``bool`` or ``str``."""

    name: str
    type: type
    default: Any = None
    help: str = ""
    #: the allowed values, or a function returning them (asked each time, e.g. the registered cost models)
    choices: tuple | Callable[[], tuple] | None = None
    #: the ``CompileOptions`` field used when the option is not given (``default`` is then ignored)
    field: str | None = None
    #: target kinds the option may be written for (empty: any)
    targets: tuple = ()

    @property
    def kind(self) -> str:
        """``"an int"``, ``"a float"``, ``"a bool"``, ``"a str"``."""
        name = self.type.__name__
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"

    def parse(self, text: str, pass_name: str):
        """The value of ``text`` (as written in a pipeline) converted to :attr:`type`."""
        value = text.strip()
        try:
            if self.type is bool:
                lowered = value.lower()
                if lowered not in ("true", "false", "1", "0"):
                    raise ValueError
                result = lowered in ("true", "1")
            elif self.type is int:
                result = int(value, 10)
            elif self.type is float:
                result = float(value)
            else:
                if not value:
                    raise ValueError
                result = value
        except ValueError:
            raise PipelineError(f"option {self.name!r} of pass {pass_name!r} takes {self.kind}, "
                                f"not {value!r}") from None
        return self.check(result, pass_name)

    def check(self, value, pass_name: str):
        """``value`` if it has the right type (and is one of ``choices``); ``PipelineError`` otherwise."""
        ok = isinstance(value, self.type) and not (self.type is int and isinstance(value, bool))
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise PipelineError(f"option {self.name!r} of pass {pass_name!r} takes {self.kind}, "
                                f"not {type(value).__name__} {value!r}")
        choices = self.choices() if callable(self.choices) else self.choices
        if choices is not None and value not in choices:
            raise PipelineError(f"option {self.name!r} of pass {pass_name!r} must be one of "
                                f"{list(choices)}, not {value!r}")
        return value

    def format(self, value) -> str:
        """``value`` as written in a pipeline text."""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


@dataclass(frozen=True)
class PassSpec:
    """A registered pass: its name, options, the passes it needs before it, and its body.

    ``run(state, mod, options) -> IRModule`` gets the :class:`~cwm.compile.state.CompileState`,
    the incoming Relax module and the resolved options (python names, e.g. ``cost_model``).
    """

    name: str
    run: Callable
    options: tuple = ()
    requires: tuple = ()
    doc: str = ""
    #: passes that must not come before this one (it rewrites what they consume)
    before: tuple = ()
    #: target kinds the pass runs for (empty: any); others are a ``PipelineError``
    targets: tuple = ()

    def check_target(self, kind: str, given: dict, pipeline: str) -> None:
        """``PipelineError`` when this pass, or an option written for it, is not for targets of ``kind``."""
        if self.targets and kind not in self.targets:
            raise PipelineError(f"pass {self.name!r} is for {' and '.join(self.targets)} targets only, not {kind}: "
                                f"remove it from the pipeline {pipeline!r}")
        for name in given:
            option = self.option(name)
            if option.targets and kind not in option.targets:
                raise PipelineError(f"option {name!r} of pass {self.name!r} is for {' and '.join(option.targets)} "
                                    f"targets only, not {kind}: remove it from the pipeline {pipeline!r}")

    def option(self, name: str) -> Option:
        for option in self.options:
            if option.name == name:
                return option
        known = ", ".join(o.name for o in self.options) or "none"
        raise PipelineError(f"pass {self.name!r} has no option {name!r}; its options: {known}")

    def resolve(self, given: dict, compile_options) -> dict:
        """All options of this pass as python keyword names: given ones, else the field/default."""
        resolved = {}
        for option in self.options:
            if option.name in given:
                value = given[option.name]
            elif option.field is not None and compile_options is not None:
                value = getattr(compile_options, option.field)
            else:
                value = option.default
            resolved[option.name.replace("-", "_")] = value
        return resolved

    def tvm_pass(self, state, given: dict):
        """This pass as a ``tvm.transform.ModulePass`` named :attr:`name`, bound to ``state``.

        An exception raised inside is kept on ``state.error``: TVM's FFI re-raises it as a plain
        ``RuntimeError``, and :meth:`cwm.compile.pipeline.Pipeline.run` re-raises the original.
        """
        import tvm

        options = self.resolve(given, state.options)
        spec = self

        def transform(mod, _ctx):
            try:
                out = spec.run(state, mod, options)
            except BaseException as error:  # noqa: BLE001 - re-raised by Pipeline.run
                state.error = error
                raise
            state.ran.append(spec.name)
            state.mod = out
            return out

        return tvm.transform.module_pass(transform, opt_level=0, name=self.name)


#: The registry: pass name -> :class:`PassSpec`.
PASSES: dict = {}


def register_pass(name: str, options=(), requires=(), doc: str = "", before=(), targets=()):
    """Decorator registering ``run(state, mod, options) -> IRModule`` as the pass ``name``.

    ``requires``: passes that must come earlier; ``before``: passes that must not; ``targets``:
    the target kinds it is for (empty: any).
    """
    def wrap(run):
        if name in PASSES:
            raise ValueError(f"a pass named {name!r} is already registered")
        PASSES[name] = PassSpec(name, run, tuple(options), tuple(requires), doc or (run.__doc__ or "").strip(),
                                tuple(before), tuple(targets))
        return run

    return wrap


def get_pass(name: str) -> PassSpec:
    """The registered pass ``name``; ``PipelineError`` naming the registered ones otherwise."""
    try:
        return PASSES[name]
    except KeyError:
        raise PipelineError(f"unknown pass {name!r}; registered passes: {', '.join(PASSES)}") from None
