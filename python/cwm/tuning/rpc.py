"""Distributed measurement: TVM's RPC tracker + servers, and MetaSchedule's ``RPCRunner``.

A *tracker* keeps a queue of *servers* per key (a device kind, e.g. ``rtx4090``); a runner asks
the tracker for a free server of its key, uploads the built artifact, and the server links,
loads and times it (docs/rpc.md has the commands for a real device farm). Here:

* :func:`start_tracker` / :func:`start_server` start ``python -m tvm.exec.rpc_tracker`` /
  ``python -m tvm.exec.rpc_server`` as child processes (each in its own process group, so
  stopping one also stops the worker processes TVM forks). Children inherit cwm's TVMScript
  start-up patch through ``PYTHONPATH`` (:mod:`cwm.tvm_patch`).
* :func:`local_rpc_cluster` is a context manager: a tracker and ``n_servers`` servers on
  127.0.0.1, waited for until all are registered, stopped on exit.
* :func:`rpc_runner` returns MetaSchedule's ``RPCRunner`` with the same ``EvaluatorConfig``
  (number/repeat/min_repeat_ms) as :class:`~cwm.tuning.settings.FastSettings`;
  :func:`parse_rpc_spec` / :func:`runner_from_spec` turn a ``host:port:key`` string (the
  proposed ``cwm tune --rpc`` value) into one.

Artifacts: MetaSchedule's builders export a ``.tar`` of object files; the server links it with
*its* C compiler when loading it (``load_module`` of a ``.tar``). For servers without a
compiler (phones, boards), build with :func:`build_so_in_worker` (``PooledBuilder(build_fn=...)``)
or pass :func:`export_so` as ``LocalBuilder(f_export=...)``: it links a ``.so`` on the tuning
host instead (the host's linker must target the server's OS/CPU).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

# the .so artifact functions live with the other build functions; documented here as cwm.tuning.rpc.*
from cwm.tuning.pooled_builder import build_so_in_worker, export_so  # noqa: F401
from cwm.tuning.settings import FastSettings

#: default key of :func:`local_rpc_cluster`
LOCAL_KEY = "cwm-local"


# ----------------------------------------------------------------------------- processes
def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def child_env(env: dict | None = None) -> dict:
    """``env`` (default ``os.environ``) with cwm's TVMScript patch and package on ``PYTHONPATH``."""
    from cwm import tvm_patch

    env = dict(os.environ if env is None else env)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    first = [tvm_patch.SITE_DIR, package_root]  # the patch's sitecustomize must come first
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in first]
    env["PYTHONPATH"] = os.pathsep.join(first + parts)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@dataclass
class RPCProcess:
    """A tracker or server child process; ``log_path`` receives its stdout and stderr."""

    role: str
    proc: subprocess.Popen
    host: str
    port: int
    log_path: str
    key: str | None = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group this child leads, then SIGKILL what is left."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):  # forked workers may outlive the leader
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)


def _spawn(role, args, host, port, log_dir, key=None, python=None, env=None) -> RPCProcess:
    log_dir = log_dir or tempfile.mkdtemp(prefix="cwm_rpc_")
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, f"{role}-{port}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([python or sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env(env), start_new_session=True)
    return RPCProcess(role, proc, host, port, log_path, key)


def start_tracker(host: str = "127.0.0.1", port: int | None = None, log_dir: str | None = None,
                  python: str | None = None, env: dict | None = None, wait_s: float = 60.0) -> RPCProcess:
    """Start ``python -m tvm.exec.rpc_tracker`` on ``host:port`` (a free port when None) and wait
    until it answers."""
    port = port or free_port(host)
    tracker = _spawn("tracker", ["tvm.exec.rpc_tracker", "--host", host, "--port", str(port),
                                 "--port-end", str(port + 1)], host, port, log_dir, python=python, env=env)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not tracker.alive():
            raise RuntimeError(f"rpc_tracker exited ({tracker.proc.returncode}):\n{tracker.log()}")
        with contextlib.suppress(OSError):
            with socket.create_connection((host, port), timeout=1):
                return tracker
        time.sleep(0.2)
    tracker.stop()
    raise TimeoutError(f"rpc_tracker did not listen on {host}:{port} within {wait_s} s:\n{tracker.log()}")


def start_server(tracker_host: str, tracker_port: int, key: str, host: str = "127.0.0.1",
                 port: int | None = None, log_dir: str | None = None, python: str | None = None,
                 env: dict | None = None, extra_args=()) -> RPCProcess:
    """Start ``python -m tvm.exec.rpc_server --tracker HOST:PORT --key KEY`` bound to ``host``
    (returns at once; see :func:`wait_for_servers`)."""
    port = port or free_port(host)
    args = ["tvm.exec.rpc_server", "--tracker", f"{tracker_host}:{tracker_port}", "--key", key,
            "--host", host, "--port", str(port), "--port-end", str(port + 1), *extra_args]
    return _spawn("server", args, host, port, log_dir, key=key, python=python, env=env)


def tracker_summary(tracker_host: str, tracker_port: int) -> dict:
    """The tracker's summary: ``{"queue_info": {key: {"free", "pending"}}, "server_info": [...]}``."""
    from tvm import rpc

    session = rpc.connect_tracker(tracker_host, int(tracker_port))
    try:
        return session.summary()
    finally:
        session.close()


def free_servers(tracker_host: str, tracker_port: int, key: str) -> int:
    """How many servers of ``key`` are registered and idle."""
    info = tracker_summary(tracker_host, tracker_port).get("queue_info", {}).get(key, {})
    return int(info.get("free", 0))


def wait_for_servers(tracker_host: str, tracker_port: int, key: str, n: int, timeout_s: float = 120.0,
                     servers=()) -> None:
    """Block until ``n`` servers of ``key`` are free at the tracker (``TimeoutError`` otherwise)."""
    deadline = time.monotonic() + timeout_s
    free = 0
    while time.monotonic() < deadline:
        dead = [s for s in servers if not s.alive()]
        if dead:
            raise RuntimeError(f"rpc_server exited ({dead[0].proc.returncode}):\n{dead[0].log()}")
        with contextlib.suppress(OSError, RuntimeError):
            free = free_servers(tracker_host, tracker_port, key)
            if free >= n:
                return
        time.sleep(0.5)
    logs = "\n".join(s.log()[-2000:] for s in servers)
    raise TimeoutError(f"{free} of {n} rpc servers with key {key!r} registered within {timeout_s} s\n{logs}")


@dataclass
class RPCCluster:
    """What :func:`local_rpc_cluster` yields: where the tracker is and which key to ask for."""

    tracker_host: str
    tracker_port: int
    key: str
    tracker: RPCProcess | None = None
    servers: list = field(default_factory=list)
    runners: list = field(default_factory=list)

    @property
    def spec(self) -> str:
        """``host:port:key``, the form :func:`parse_rpc_spec` reads."""
        return f"{self.tracker_host}:{self.tracker_port}:{self.key}"

    def runner(self, **kwargs):
        """:func:`rpc_runner` for this cluster (one concurrent session per server by default)."""
        kwargs.setdefault("max_workers", max(1, len(self.servers)))
        runner = rpc_runner(self.tracker_host, self.tracker_port, self.key, **kwargs)
        self.runners.append(runner)
        return runner

    def stop(self) -> None:
        for runner in self.runners:
            close_runner(runner)
        for server in self.servers:
            server.stop()
        if self.tracker is not None:
            self.tracker.stop()


@contextlib.contextmanager
def local_rpc_cluster(n_servers: int = 2, key: str = LOCAL_KEY, host: str = "127.0.0.1",
                      log_dir: str | None = None, timeout_s: float = 180.0, python: str | None = None):
    """A tracker and ``n_servers`` servers on ``host`` (loopback), ready when the block starts.

    Yields an :class:`RPCCluster` (``tracker_host``, ``tracker_port``, ``key``, ``spec``,
    ``runner()``); every process is stopped when the block ends, also on error. ``timeout_s``
    covers start-up (each child imports TVM: a few seconds, more on a loaded machine). Logs go
    to ``log_dir`` (default: a temporary folder, removed after a clean exit, kept on error).
    """
    if n_servers < 1:
        raise ValueError("n_servers must be >= 1")
    own_logs = log_dir is None
    log_dir = log_dir or tempfile.mkdtemp(prefix="cwm_rpc_")
    cluster = RPCCluster(host, 0, key)
    ok = False
    try:
        cluster.tracker = start_tracker(host, log_dir=log_dir, python=python, wait_s=timeout_s)
        cluster.tracker_port = cluster.tracker.port
        for _ in range(n_servers):
            cluster.servers.append(start_server(host, cluster.tracker_port, key, host=host, log_dir=log_dir,
                                                python=python))
        wait_for_servers(host, cluster.tracker_port, key, n_servers, timeout_s, cluster.servers)
        yield cluster
        ok = True
    finally:
        cluster.stop()
        if own_logs and ok:  # keep the logs of a failed run for inspection
            shutil.rmtree(log_dir, ignore_errors=True)


# ----------------------------------------------------------------------------- runner
def rpc_runner(tracker_host: str, tracker_port: int, key: str, settings: FastSettings = FastSettings(),
               evaluator_config=None, max_workers: int = 1, session_timeout_sec: float = 60,
               session_priority: int = 1, alloc_repeat: int = 1, **kwargs):
    """MetaSchedule's ``RPCRunner`` measuring through the tracker at ``tracker_host:tracker_port``
    on servers of ``key``.

    ``evaluator_config`` defaults to ``settings.evaluator_config()`` (number=3, repeat=1,
    min_repeat_ms=10 for :class:`FastSettings`), so records are comparable with the local
    runners. ``max_workers``: concurrent sessions (at most one per server is useful).
    ``session_timeout_sec``: per candidate (upload + link + measure). ``kwargs`` go to
    ``RPCRunner`` (e.g. ``f_alloc_argument``).
    """
    from tvm.s_tir import meta_schedule as ms

    config = ms.runner.RPCConfig(tracker_host=tracker_host, tracker_port=int(tracker_port), tracker_key=key,
                                 session_priority=session_priority,
                                 session_timeout_sec=int(session_timeout_sec))
    return ms.runner.RPCRunner(rpc_config=config, evaluator_config=evaluator_config or settings.evaluator_config(),
                               alloc_repeat=alloc_repeat, max_workers=max_workers, **kwargs)


def close_runner(runner) -> None:
    """Stop an ``RPCRunner``'s worker processes (MetaSchedule leaves them to garbage collection)."""
    pool = getattr(runner, "pool", None)
    if pool is not None:
        with contextlib.suppress(Exception):
            pool.shutdown()


def parse_rpc_spec(spec: str) -> tuple[str, int, str]:
    """``"host:port:key"`` -> ``(host, port, key)`` (``ValueError`` for anything else)."""
    parts = spec.rsplit(":", 2) if isinstance(spec, str) else []
    if len(parts) != 3 or not parts[0] or not parts[2] or not parts[1].isdigit():
        raise ValueError(f"RPC tracker must be given as host:port:key (e.g. 127.0.0.1:9190:rtx4090), not {spec!r}")
    return parts[0], int(parts[1]), parts[2]


def runner_from_spec(spec: str, **kwargs):
    """:func:`rpc_runner` from a ``host:port:key`` string (see :func:`parse_rpc_spec`)."""
    host, port, key = parse_rpc_spec(spec)
    return rpc_runner(host, port, key, **kwargs)

