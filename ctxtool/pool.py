"""Run one read-only job per file over many files on every CPU, results in input order.

``each(fn, paths, *args)`` yields ``(path, result, error)`` for every path, in the order given,
whatever order the work finishes in: ``result = fn(path, *args)``, or ``error``, the ``CtxError``
it raised (any other exception is raised here, as a serial loop would). It is what ``estimate``,
``validate``, ``repair --check`` and ``profile`` do over a folder.

Files of ``parallel.MIN_BYTES`` or more are done first, here, one at a time: their scan is split
into parts that helper processes scan (``parallel.py``), so every core works on them. The other
files go to worker processes (one per CPU but this one, at most ``parallel.MAX_WORKERS`` in all),
largest first, two jobs ahead (more of small files, up to 4 MB) so that a worker never waits; this
process takes the smallest files left meanwhile. In a worker, scans stay in one process.
Workers are forked where that is safe (``forked``: Linux, this process with one thread), else started as
``python -c`` (no main module is imported again), and take one job at a time over a pipe (pickled ``fn``, path and
arguments; ``fn`` must be a module-level function). ``CTXTOOL_SCAN_WORKERS=1``, or files too few or
too small to pay for starting workers, keep everything in this process; a worker that cannot start
or dies has its jobs done here.
"""

from __future__ import annotations

import os
import struct
import sys
from collections import deque
from typing import Callable, Iterable, Iterator

from . import forked, parallel
from .errors import unexpected
from .errors import CtxError

MIN_TOTAL_BYTES = 16 << 20  # below this, starting the workers (~0.1 s of CPU each) costs more than it saves
DEPTH = 2  # jobs sent ahead to each worker at least,
AHEAD_BYTES = 4 << 20  # and more while its jobs' files add up to less than this (at most AHEAD_MAX jobs): of small
AHEAD_MAX = 32  # files, a worker done with two would wait for this process to finish the file it is on
_HEAD = struct.Struct("<Q")


def each(fn: Callable, paths: Iterable[str], *args, workers: int | None = None,
         min_bytes: int | None = None) -> Iterator[tuple[str, object, CtxError | None]]:
    """``(path, fn(path, *args), None)`` or ``(path, None, error)`` per path, in input order."""
    paths = list(paths)
    min_bytes = MIN_TOTAL_BYTES if min_bytes is None else min_bytes
    sizes = [_size(p) for p in paths]
    n = parallel.worker_count(workers)
    small = [i for i, s in enumerate(sizes) if s < parallel.MIN_BYTES]
    if n < 2 or len(small) < 2 or sum(sizes[i] for i in small) < min_bytes:
        for p in paths:
            yield (p, *call(fn, p, args))
        return
    done: dict[int, tuple] = {}
    for i, s in enumerate(sizes):  # the large files first, here: their scans use every core already
        if s >= parallel.MIN_BYTES:
            done[i] = call(fn, paths[i], args)
    queue = sorted(small, key=lambda i: -sizes[i])  # workers take from the front, this process from the back
    with _Workers(min(n - 1, len(small) - 1)) as ws:
        nxt = 0
        while nxt < len(paths):
            if nxt in done:
                yield (paths[nxt], *done.pop(nxt))
                nxt += 1
                continue
            for w in ws.ws:  # jobs queued per worker: it never waits for this process
                while queue and (len(w.jobs) < DEPTH or (w.ahead < AHEAD_BYTES and len(w.jobs) < AHEAD_MAX)):
                    i = queue.pop(0)
                    if not w.send(i, fn, paths[i], args, sizes[i]):
                        done[i] = call(fn, paths[i], args)
                        break
            for i, out in ws.finished(block=False):
                done[i] = out if out is not None else call(fn, paths[i], args)
            if nxt in done:
                continue
            if queue:  # this process works too, on the smallest file left: soon back to feed the workers
                i = queue.pop()
                done[i] = call(fn, paths[i], args)
                continue
            for i, out in ws.finished(block=True):
                done[i] = out if out is not None else call(fn, paths[i], args)


def call(fn: Callable, path: str, args: tuple) -> tuple:
    """``(fn(path, *args), None)`` or ``(None, the error as one CtxError naming the file)``: any
    failure is that file's, and the rest of the batch goes on (``CTXTOOL_DEBUG`` raises it)."""
    try:
        return fn(path, *args), None
    except Exception as e:  # noqa: BLE001 - every failure of one file is reported, never a traceback
        return None, unexpected(e, path=path)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # fn reports the problem


class _Worker:
    def __init__(self, proc):
        self.proc = proc
        self.jobs: deque[int] = deque()  # sent, in the order the answers come
        self.sizes: deque[int] = deque()  # their files' sizes
        self.ahead = 0  # their sum

    def send(self, i: int, fn, path: str, args: tuple, size: int = 0) -> bool:
        import pickle  # (here and below: imported where workers start, not at every command's start)

        try:
            data = pickle.dumps((fn, path, args), pickle.HIGHEST_PROTOCOL)
            _write_all(self.proc.stdin, _HEAD.pack(len(data)) + data)
        except (OSError, ValueError, pickle.PicklingError, AttributeError, TypeError):
            return False
        self.jobs.append(i)
        self.sizes.append(size)
        self.ahead += size
        return True

    def answered(self) -> int:
        """The oldest job, answered: its index."""
        self.ahead -= self.sizes.popleft()
        return self.jobs.popleft()

    def receive(self):
        """The oldest job's (result, error), or None when the worker died or answered nonsense
        (an exception other than a CtxError is raised here)."""
        import pickle

        answer = None
        try:
            head = _read_exact(self.proc.stdout, _HEAD.size)
            if len(head) == _HEAD.size:
                (size,) = _HEAD.unpack(head)
                data = _read_exact(self.proc.stdout, size)
                if len(data) == size:
                    answer = pickle.loads(data)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, AttributeError, ImportError):
            return None
        if answer is None:
            return None
        if answer[0] == "raise":
            raise answer[1]
        return answer[1]


class _Workers:
    """This process's workers (some may fail to start: then fewer, or none)."""

    def __init__(self, n: int):
        import selectors

        self.ws = [w for w in (_start() for _ in range(max(n, 0))) if w is not None]
        self.sel = selectors.DefaultSelector()
        for w in self.ws:
            self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sel.close()
        for w in self.ws:
            try:
                w.proc.stdin.close()  # end of jobs: the worker exits
            except OSError:
                pass
        _reap_ended()
        for w in self.ws:
            if exc[0] is None and not w.jobs and isinstance(w.proc, forked.Child):
                # its stdin closed, it ends on its own: its end (2-3 ms of freeing memory) is not waited for here
                # but reaped by the next pool, or by the system once this process ends
                _ENDING.append(w.proc)
                w.proc.stdout.close()
                continue
            import subprocess  # (the rare way: not imported at every command's start)

            if exc[0] is not None or w.jobs:
                w.proc.kill()
            try:
                w.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            w.proc.stdout.close()

    def finished(self, block: bool) -> list[tuple[int, tuple | None]]:
        """Jobs answered (or lost with their worker: None) since the last call; ``block``: wait for one."""
        out: list = []
        while any(w.jobs for w in self.ws):
            ready = self.sel.select(None if block and not out else 0)
            if not ready:
                return out
            self._read(ready, out)
        return out

    def _read(self, ready: list, out: list) -> None:
        """One answer from each worker ``ready`` names (a dead worker's jobs, None)."""
        for key, _ in ready:
            w = key.data
            res = w.receive()
            if res is not None:
                out.append((w.answered(), res))
                continue
            self.sel.unregister(w.proc.stdout)  # dead: its jobs are done here, no new ones
            self.ws.remove(w)
            w.proc.kill()
            w.proc.wait()
            w.proc.stdout.close()
            out.extend((i, None) for i in w.jobs)
            w.jobs.clear()


_ENDING: list = []  # forked workers told to end whose end was not waited for


def _reap_ended() -> None:
    """Reap the forked workers of earlier pools that have ended (none is left a zombie for long)."""
    _ENDING[:] = [p for p in _ENDING if p.poll() is None]


# The pipes are unbuffered: a buffered reader could hold an answer that select() then never reports.
def _read_exact(f, n: int) -> bytes:
    parts = []
    while n:
        chunk = f.read(n)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _write_all(f, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[f.write(view):]


def _start() -> _Worker | None:
    """A worker: forked where that is safe (``forked``), else started as ``python -c``."""
    proc = forked.child(_forked_worker, stdin=True, buffered=False, env={parallel.ENV: "1"})
    if proc is not None:
        return _Worker(proc)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # as in parallel.py: this copy of ctxtool, not one in the current directory
    code = f"import sys; sys.path.insert(0, {root!r}); from ctxtool.pool import worker_main; worker_main()"
    env = dict(os.environ, **{parallel.ENV: "1"})  # the pool already uses every CPU: no helpers per file
    import subprocess  # (the rare way: not imported at every command's start)

    try:
        return _Worker(subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, bufsize=0))
    except (OSError, TypeError, ValueError):  # TypeError: sys.executable is None in some embedded interpreters
        return None


def worker_main() -> None:
    """Worker process started as ``python -c``: ``worker_loop`` on stdin and stdout."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the answers
    worker_loop(sys.stdin.buffer, out)


def _forked_worker(read_fd: int, write_fd: int) -> None:
    with open(read_fd, "rb") as inp, open(write_fd, "wb") as out:
        worker_loop(inp, out)


def worker_loop(inp, out) -> None:
    """A worker's work: run jobs from ``inp`` until it closes, each answer a pickled (kind, value) frame on ``out``."""
    import pickle

    while True:
        head = inp.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        (size,) = _HEAD.unpack(head)
        fn, path, args = pickle.loads(inp.read(size))
        try:
            answer = ("ok", call(fn, path, args))
            data = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # a bug: raised again in the parent, as a serial loop would
            try:
                data = pickle.dumps(("raise", e), pickle.HIGHEST_PROTOCOL)
            except Exception:
                data = pickle.dumps(("raise", RuntimeError(f"{type(e).__name__}: {e}")), pickle.HIGHEST_PROTOCOL)
        out.write(_HEAD.pack(len(data)) + data)
        out.flush()
