"""Thin timing wrappers around any MetaSchedule cost model, builder and runner.

Each wrapper delegates every call to the object it wraps and adds the wall time spent inside
to a shared :class:`Clock`, so a tuning run can be split into search, cost model, build and
run time (``search = total - the others``). Runner time counts both ``run()`` and the time
spent blocked in each future's ``result()``: a synchronous runner (``PooledRunner``) measures
inside ``run()``, an asynchronous one (``LocalRunner``, ``RPCRunner``) while MetaSchedule waits
on the futures.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import PyBuilder
from tvm.s_tir.meta_schedule.cost_model import PyCostModel
from tvm.s_tir.meta_schedule.runner import PyRunner, PyRunnerFuture


@dataclass
class Clock:
    """Seconds spent in each wrapped component, and how often it was called."""

    seconds: dict = field(default_factory=lambda: {"cost_model": 0.0, "build": 0.0, "run": 0.0})
    calls: dict = field(default_factory=lambda: {"predict": 0, "update": 0, "build": 0, "run": 0})

    def add(self, part: str, start: float) -> None:
        self.seconds[part] += time.perf_counter() - start

    @contextmanager
    def timed(self, part: str, call: str | None = None):
        """Add the time inside the ``with`` block to ``part`` (and count one ``call``), even if it raises."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, start)
            if call is not None:
                self.calls[call] += 1


def _close(inner) -> None:
    close = getattr(inner, "close", None)
    if close is not None:
        close()


@derived_object
class TimedCostModel(PyCostModel):
    """Delegates ``predict``/``update``/``save``/``load`` to ``inner``; times predict and update."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def load(self, path: str) -> None:
        self.inner.load(path)

    def save(self, path: str) -> None:
        self.inner.save(path)

    def update(self, context, candidates, results) -> None:
        with self.clock.timed("cost_model", "update"):
            self.inner.update(context, candidates, results)

    def predict(self, context, candidates):
        with self.clock.timed("cost_model", "predict"):
            return self.inner.predict(context, candidates)


@derived_object
class TimedBuilder(PyBuilder):
    """Delegates ``build`` to ``inner`` (and ``close`` if it has one); times ``build``."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def build(self, build_inputs):
        with self.clock.timed("build", "build"):
            return self.inner.build(build_inputs)

    def close(self) -> None:
        _close(self.inner)


@derived_object
class TimedRunnerFuture(PyRunnerFuture):
    """Delegates ``done``/``result`` to ``inner``; time blocked in ``result`` counts as run time."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def done(self) -> bool:
        return self.inner.done()

    def result(self):
        with self.clock.timed("run"):
            return self.inner.result()


@derived_object
class TimedRunner(PyRunner):
    """Delegates ``run`` to ``inner`` (and ``close`` if it has one); times ``run`` and the futures."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def run(self, runner_inputs):
        with self.clock.timed("run", "run"):
            futures = self.inner.run(runner_inputs)
        return [TimedRunnerFuture(f, self.clock) for f in futures]

    def close(self) -> None:
        _close(self.inner)
