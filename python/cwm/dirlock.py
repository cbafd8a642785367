"""An exclusive lock on a folder: one process at a time works in it.

``with lock_dir(path, timeout=None):`` takes an ``fcntl.flock`` lock on the file
``path/.cwm.lock`` (created if missing, never deleted: deleting a lock file that another
process has open would let two processes hold "the" lock). While it is held the file names the
holder (pid, host, command line, start time), so that a second process can say whom it waits
for. The kernel releases the lock when the holder exits, ``kill -9`` included: there are no
stale locks to clean up.

A second process that finds the lock taken prints one line on stderr, ``cwm: waiting for the
lock on W held by pid N (...)``, and waits: forever with ``timeout=None``, at most ``timeout``
seconds otherwise (then :class:`LockTimeout`, naming the holder; ``timeout=0`` fails at once).
The lock is reentrant in the thread that holds it, so nested ``lock_dir`` calls on one folder
(``cwm.compile`` locking its work dir, a tuning call inside it locking the same folder) do not
deadlock; another thread of the same process waits like another process would.

A folder this process cannot create the lock file in (a read-only file system, or no write
permission) is one it cannot write to either: ``lock_dir`` then yields without a lock (None). ``flock`` locks do not reach across NFS clients on every
set-up; a work dir shared by several machines is not protected by this.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import threading
import time

LOCK_NAME = ".cwm.lock"

_held: dict = {}  # realpath of the folder -> [fd, owning thread ident, depth]
_guard = threading.Lock()


class LockTimeout(TimeoutError):
    """The folder stayed locked by another process for longer than the timeout."""

    def __init__(self, message: str, path: str, holder: dict):
        super().__init__(message)
        self.path = path
        self.holder = holder


def lock_path(folder) -> str:
    """The lock file of ``folder``."""
    return os.path.join(os.fspath(folder), LOCK_NAME)


def read_holder(path: str) -> dict:
    """What the lock file ``path`` says about its holder (``{}`` if it says nothing readable)."""
    try:
        with open(path) as f:
            data = json.loads(f.read() or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def describe(holder: dict) -> str:
    """``"pid 123 (python -m cwm compile m.onnx ..., host h, since 12:00:01)"``, or ``"another process"``."""
    if not holder.get("pid"):
        return "another process"
    details = []
    if holder.get("command"):
        command = holder["command"]
        details.append(command if len(command) <= 80 else command[:77] + "...")
    if holder.get("host") and holder["host"] != socket.gethostname():
        details.append(f"host {holder['host']}")
    if holder.get("since"):
        details.append("since " + time.strftime("%H:%M:%S", time.localtime(holder["since"])))
    return f"pid {holder['pid']}" + (f" ({', '.join(details)})" if details else "")


def _write_holder(fd: int) -> None:
    info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
            "command": " ".join([os.path.basename(sys.executable or "python"), *sys.argv])}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)


def _acquire(path: str, folder: str, timeout: float | None, label: str, poll: float) -> int:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        holder = read_holder(path)
        if timeout is not None and timeout <= 0:
            raise LockTimeout(f"{label} {folder} is in use by {describe(holder)} (lock file {path})", path, holder)
        wait = "" if timeout is None else f" (at most {timeout:g} s)"
        print(f"cwm: waiting for the lock on {label} {folder} held by {describe(holder)}{wait}; "
              f"lock file {path}", file=sys.stderr, flush=True)
        if timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fd
        deadline = time.monotonic() + timeout
        while True:
            time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = read_holder(path) or holder
                    raise LockTimeout(f"{label} {folder} is still in use by {describe(holder)} after waiting "
                                      f"{timeout:g} s (lock file {path})", path, holder) from None
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def lock_dir(folder, timeout: float | None = None, label: str = "folder", poll: float = 0.2):
    """Hold the exclusive lock of ``folder`` (created if missing) for the ``with`` block.

    ``timeout``: None waits as long as it takes, a number of seconds raises :class:`LockTimeout`
    after that long (0: at once). ``label`` names the folder in messages ("work dir").
    Yields the lock file's path, or None where this process cannot write in the folder.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    key = os.path.realpath(folder)
    me = threading.get_ident()
    with _guard:
        entry = _held.get(key)
        if entry is not None and entry[1] == me:
            entry[2] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield lock_path(folder)
        finally:
            with _guard:
                _held[key][2] -= 1
        return
    path = lock_path(folder)
    try:
        fd = _acquire(path, folder, timeout, label, poll)
    except OSError as error:
        if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        fd = None
    if fd is None:
        yield None
        return
    try:
        _write_holder(fd)
    except OSError:
        pass  # the lock holds without the note of who holds it
    with _guard:
        _held[key] = [fd, me, 1]
    try:
        yield path
    finally:
        with _guard:
            del _held[key]
        import fcntl

        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
