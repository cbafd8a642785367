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
        start = time.perf_counter()
        try:
            self.inner.update(context, candidates, results)
        finally:
            self.clock.add("cost_model", start)
            self.clock.calls["update"] += 1

    def predict(self, context, candidates):
        start = time.perf_counter()
        try:
            return self.inner.predict(context, candidates)
        finally:
            self.clock.add("cost_model", start)
            self.clock.calls["predict"] += 1


@derived_object
class TimedBuilder(PyBuilder):
    """Delegates ``build`` to ``inner`` (and ``close`` if it has one); times ``build``."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def build(self, build_inputs):
        start = time.perf_counter()
        try:
            return self.inner.build(build_inputs)
        finally:
            self.clock.add("build", start)
            self.clock.calls["build"] += 1

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


@derived_object
class TimedRunnerFuture(PyRunnerFuture):
    """Delegates ``done``/``result`` to ``inner``; time blocked in ``result`` counts as run time."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def done(self) -> bool:
        return self.inner.done()

    def result(self):
        start = time.perf_counter()
        try:
            return self.inner.result()
        finally:
            self.clock.add("run", start)


@derived_object
class TimedRunner(PyRunner):
    """Delegates ``run`` to ``inner`` (and ``close`` if it has one); times ``run`` and the futures."""

    def __init__(self, inner, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def run(self, runner_inputs):
        start = time.perf_counter()
        try:
            futures = self.inner.run(runner_inputs)
        finally:
            self.clock.add("run", start)
            self.clock.calls["run"] += 1
        return [TimedRunnerFuture(f, self.clock) for f in futures]

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
