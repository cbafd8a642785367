"""Time several runtimes side by side, each in its own process (bench/e2e.py's timing).

Why processes: PyTorch's OpenMP pool, ONNX Runtime's pool and TVM's pool all spin-wait after a
call. In one process on 2 cores they fought each other. In the first e2e run the samples of
one method were bimodal: ONNX Runtime on ResNet-18 took 8.2 ms or 31 ms, eager PyTorch 16 ms or
115 ms. The median then depended on luck. Here each method lives in a worker process
(``spawn``) that sets itself up, checks its output, warms up and calibrates, then waits on a pipe.
The driver asks one worker at a time for a sample, with a pause before each, so only one
runtime is active and the others sleep in ``recv``. The worker times the sample itself, so pipe
latency is not part of it.

A method's factory is named ``"module:function"`` (importable in the child; bench/ is on the
child's ``sys.path`` because spawn copies the parent's) and called with keyword arguments; it
returns ``(run, output)``: ``run()`` is what is timed, ``output()`` gives the array checked
against the reference.
"""
from __future__ import annotations

import importlib
import math
import time
import traceback

SETUP_TIMEOUT_S = 1800.0  # torch.compile of a transformer on 2 cores takes minutes
SAMPLE_TIMEOUT_S = 600.0


class WorkerError(RuntimeError):
    """A worker failed to set up (its message is the child's exception) or died."""


def warm_up(fn, calls: int, seconds: float, clock=time.perf_counter, max_calls: int = 100_000) -> int:
    """Call ``fn`` at least ``calls`` times and for at least ``seconds``; returns the number of calls.

    (Eager PyTorch is still slow for its first calls, oneDNN and allocator warm-up.)"""
    start, n = clock(), 0
    while (n < calls or clock() - start < seconds) and n < max_calls:
        fn()
        n += 1
    return n


def calibrate(fn, min_sample_s: float, clock=time.perf_counter, probes: int = 5) -> int:
    """Calls per sample so that one sample lasts >= ``min_sample_s`` (1 for slow functions).

    Uses the fastest of ``probes`` calls: one call stalled by another process must not make a
    method's samples short (and noisier) for the whole measurement."""
    times = []
    for _ in range(probes):
        start = clock()
        fn()
        times.append(clock() - start)
    per_call = max(min(times), 1e-9)
    return max(1, math.ceil(min_sample_s / per_call))


def rotated(samplers: dict, runs: int, gap_s: float = 0.0, sleep=time.sleep) -> dict:
    """``{name: [sampler(), one per round]}``: ``runs`` rounds over every sampler; round ``r``
    starts at sampler ``r mod n`` (no method always first), with a ``gap_s`` pause before each
    sample (lets the previous method's spinning thread pool go idle)."""
    order = list(samplers)
    samples = {name: [] for name in order}
    for r in range(runs):
        k = r % len(order) if order else 0
        for name in order[k:] + order[:k]:
            if gap_s > 0:
                sleep(gap_s)
            samples[name].append(samplers[name]())
    return samples


def interleaved(fns: dict, runs: int, numbers: dict, gap_s: float = 0.0, clock=time.perf_counter,
                sleep=time.sleep) -> dict:
    """:func:`rotated` over local functions: a sample times ``numbers[name]`` back-to-back calls
    and gives seconds per call."""
    def timed(fn, number):
        def sample():
            start = clock()
            for _ in range(number):
                fn()
            return (clock() - start) / number
        return sample

    return rotated({name: timed(fn, numbers.get(name, 1)) for name, fn in fns.items()}, runs, gap_s, sleep)


def _serve(conn, factory: str, kwargs: dict, warmup: int, warmup_s: float, min_sample_s: float) -> None:
    """The worker: set up, report ``("ready", output, number, setup_s)`` or ``("error", text)``,
    then answer ``"sample"`` with seconds per call until ``"stop"``. A sample is one untimed call
    (the other methods ran in between and evicted this one's weights from the caches) and then
    ``number`` timed back-to-back calls."""
    start = time.perf_counter()
    try:
        module_name, function = factory.split(":")
        run, output = getattr(importlib.import_module(module_name), function)(**kwargs)
        import numpy as np

        out = np.asarray(output())  # the first call (torch.compile compiles here)
        warm_up(run, warmup, warmup_s)
        number = calibrate(run, min_sample_s)
    except Exception as error:  # noqa: BLE001 - reported to the driver, which records it
        conn.send(("error", f"{type(error).__name__}: {error}", traceback.format_exc()))
        conn.close()
        return
    conn.send(("ready", out, number, round(time.perf_counter() - start, 3)))
    while True:
        msg = conn.recv()
        if msg != "sample":
            break
        run()  # untimed: back in the caches after the other methods ran
        start = time.perf_counter()
        for _ in range(number):
            run()
        conn.send((time.perf_counter() - start) / number)
    conn.close()


class Worker:
    """One method in its own process. ``start()`` blocks until it is ready (or raises
    :class:`WorkerError`); ``sample()`` returns seconds per call; ``close()`` stops it."""

    def __init__(self, name: str, factory: str, kwargs: dict, *, warmup: int, warmup_s: float,
                 min_sample_s: float):
        self.name, self.factory, self.kwargs = name, factory, kwargs
        self.settings = (warmup, warmup_s, min_sample_s)
        self.process = self.conn = None
        self.output = self.number = self.setup_s = None

    def start(self) -> "Worker":
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, self.factory, self.kwargs, *self.settings),
                                   name=f"timing-{self.name}", daemon=True)
        self.process.start()
        child.close()
        msg = self._recv(SETUP_TIMEOUT_S)
        if msg[0] == "error":
            self.close()
            raise WorkerError(msg[1])
        _, self.output, self.number, self.setup_s = msg
        return self

    def _recv(self, timeout: float):
        if not self.conn.poll(timeout):
            self.close()
            raise WorkerError(f"{self.name}: no answer within {timeout:.0f} s")
        try:
            return self.conn.recv()
        except EOFError:
            self.process.join(5)
            code = self.process.exitcode
            self.close()
            raise WorkerError(f"{self.name}: the worker process died (exit code {code})") from None

    def sample(self) -> float:
        self.conn.send("sample")
        return float(self._recv(SAMPLE_TIMEOUT_S))

    def close(self) -> None:
        if self.process is None:
            return
        try:
            self.conn.send("stop")
        except (OSError, ValueError):
            pass
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()
        self.process = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
