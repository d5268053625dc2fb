"""Helper processes forked from this one, where that is safe: the scan's helpers (``parallel.py``) and the folder's
workers (``pool.py``) start in ~2 ms with everything imported, where ``python -c`` took ~45 ms of start-up and imports
(229M instructions) before a helper read its first line.

Forking is safe only from a process with one thread (another thread may hold a lock the child would wait for
forever): ``child`` is None, and the caller starts ``python -c`` as before, when this process has another thread (a
progress bar's, a thread pool's; counted by the kernel, so C threads too), off Linux, or with ``CTXTOOL_FORK=0``. The
child keeps only the descriptors it is given (the ends of its pipes, a spool), never writes to this process's
standard output or error (both /dev/null in it, as for a started helper), and ends with ``os._exit``: no buffer of
this process is flushed twice, no exit handler runs twice.
"""

from __future__ import annotations

import os
import select
import sys
import time
from typing import Callable

ENV = "CTXTOOL_FORK"  # "0": helpers and workers are always started as ``python -c``


def possible() -> bool:
    """Whether a helper may be forked from this process now (Linux, one thread, not turned off)."""
    if not sys.platform.startswith("linux") or os.environ.get(ENV, "1") == "0" or not hasattr(os, "fork"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class Child:
    """A forked helper, with the part of ``subprocess.Popen``'s API its callers use."""

    def __init__(self, pid: int, stdin, stdout):
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None

    def _reap(self, flags: int) -> int | None:
        """The exit code once the child ended (``waitpid`` with ``flags``), None while it runs."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:
                self.returncode = -1
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self, timeout: float | None = None) -> int:
        """The exit code, once the child ended; ``timeout``: ``subprocess.TimeoutExpired`` after that many seconds."""
        if timeout is None:
            return self._reap(0)
        if self.poll() is not None:
            return self.returncode
        fd = _pidfd(self.pid)
        if fd is not None:  # woken as the child ends: a sleep between polls cost a pool's end 5 ms
            try:
                ready = select.select([fd], [], [], timeout)[0]
            finally:
                os.close(fd)
            if not ready:
                raise _timeout(self.pid, timeout)
            return self._reap(0)
        deadline = time.monotonic() + timeout
        pause = 0.0002
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise _timeout(self.pid, timeout)
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass


def child(run: Callable[[int, int], None], keep: tuple[int, ...] = (), stdin: bool = False,
          buffered: bool = True, env: dict | None = None) -> Child | None:
    """``run(read_fd, write_fd)`` in a forked child (``read_fd``: the child's end of a pipe from this process when
    ``stdin``, else /dev/null; ``write_fd``: its end of the pipe to this process), or None when forking is not
    possible (``possible``) or fails. ``keep``: other descriptors the child keeps open; ``env``: variables set in it.
    The child exits 0 when ``run`` returns, 1 when it raises (whatever it raises)."""
    if not possible():
        return None
    for stream in (sys.stdout, sys.stderr):  # nothing of this process's left in a buffer the child holds too
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    try:
        up_r, up_w = os.pipe()
        down_r, down_w = os.pipe() if stdin else (-1, -1)
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the child
        code = 1
        try:
            null = os.open(os.devnull, os.O_RDWR)
            read_fd = down_r if stdin else null
            wanted = {up_w, read_fd, *keep}
            os.dup2(null, 1)
            os.dup2(null, 2)
            for fd in _open_fds():
                if fd > 2 and fd not in wanted:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            if env:
                os.environ.update(env)
            run(read_fd, up_w)
            code = 0
        except BaseException:  # noqa: BLE001 - the child's failure is its exit code; the parent scans the part itself
            pass
        finally:
            os._exit(code)
    os.close(up_w)
    if stdin:
        os.close(down_r)
    out = os.fdopen(up_r, "rb", buffering=-1 if buffered else 0)
    inp = os.fdopen(down_w, "wb", buffering=0) if stdin else None
    return Child(pid, inp, out)


def _timeout(pid: int, timeout: float) -> Exception:
    import subprocess  # (here: the module costs every command's start 4 ms, and only a helper that hangs needs it)

    return subprocess.TimeoutExpired(f"forked helper {pid}", timeout)


def _pidfd(pid: int) -> int | None:
    """A descriptor that is readable once the child ``pid`` ends (Linux 5.3 and later), or None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _open_fds() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))
