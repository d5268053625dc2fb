"""The agent's session write lock (``<file>.lock``), read and honoured the way OpenClaw does.

OpenClaw creates ``<realpath(dir)>/<basename>.lock`` with O_EXCL and writes
``{"pid", "createdAt", "starttime"?}``. ctxtool takes the same lock while it writes,
so a running gateway and ctxtool never write the same file at once; it waits for a
live holder up to a timeout and never removes a stale lock unless asked to.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .errors import LockError, LockTimeout, StaleLock

STALE_MS = 30 * 60 * 1000  # OpenClaw staleMs: 30 min
DEFAULT_TIMEOUT = 10.0  # OpenClaw acquire timeout: 10 s


def lock_path(path: str) -> str:
    directory = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    return os.path.join(directory, os.path.basename(path) + ".lock")


def process_starttime(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), as OpenClaw records it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    rest = stat.rsplit(")", 1)[-1].split()
    try:
        return int(rest[19])  # fields after "pid (comm)" start at field 3
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


@dataclass
class LockInfo:
    path: str
    pid: int | None
    created_at: str | None
    starttime: int | None
    age_ms: float
    stale_reasons: list[str] = field(default_factory=list)

    @property
    def holder(self) -> str:
        return f"pid={self.pid if self.pid is not None else '?'} {self.path}"

    @property
    def reclaimable(self) -> bool:
        """Stale in a way OpenClaw itself would reclaim."""
        if not self.stale_reasons:
            return False
        weak = {"missing-pid", "invalid-createdAt"}
        if set(self.stale_reasons) <= weak:
            return self.age_ms > STALE_MS
        return True


def inspect_lock(path: str, *, now: float | None = None) -> LockInfo | None:
    """Read the lock of session ``path``; None when there is none."""
    lp = lock_path(path)
    now = time.time() if now is None else now
    try:
        with open(lp, "rb") as f:
            data = f.read()
        mtime = os.stat(lp).st_mtime
    except FileNotFoundError:
        return None
    except OSError:
        return LockInfo(lp, None, None, None, 0.0, ["unreadable"])
    try:
        payload = json.loads(data.decode("utf-8"))
        if not isinstance(payload, dict):
            payload = {}
    except (ValueError, UnicodeDecodeError):
        payload = {}
    pid = payload.get("pid")
    pid = pid if isinstance(pid, int) and pid > 0 else None
    created = payload.get("createdAt")
    starttime = payload.get("starttime") if isinstance(payload.get("starttime"), int) else None
    reasons: list[str] = []
    created_ts = _parse_iso(created) if isinstance(created, str) else None
    age_ms = (now - (created_ts if created_ts is not None else mtime)) * 1000
    if pid is None:
        reasons.append("missing-pid")
    elif not pid_alive(pid):
        reasons.append("dead-pid")
    elif starttime is not None and process_starttime(pid) not in (None, starttime):
        reasons.append("recycled-pid")
    elif pid == os.getpid() and starttime is None:
        reasons.append("orphan-self-pid")
    if created_ts is None:
        reasons.append("invalid-createdAt")
    elif age_ms > STALE_MS:
        reasons.append("too-old")
    if set(reasons) <= {"missing-pid", "invalid-createdAt"}:
        age_ms = (now - mtime) * 1000
    return LockInfo(lp, pid, created, starttime, age_ms, reasons)


def _parse_iso(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class SessionLock:
    """Hold ``<file>.lock`` while writing ``path``; a context manager.

    Waits for a live holder up to ``timeout`` seconds (backoff min(1 s, 50 ms x attempt)),
    then raises LockTimeout naming the holder. A stale lock raises StaleLock unless
    ``break_stale`` is set, in which case it is removed and acquisition retried.
    """

    def __init__(self, path: str, *, timeout: float = DEFAULT_TIMEOUT, break_stale: bool = False):
        self.path = path
        self.lock_path = lock_path(path)
        self.timeout = timeout
        self.break_stale = break_stale
        self.broken: LockInfo | None = None
        self._held = False

    def __enter__(self) -> "SessionLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        attempt = 0
        while True:
            attempt += 1
            try:
                fd = os.open(self.lock_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileNotFoundError:
                raise LockError(f"cannot create lock {self.lock_path}: directory does not exist", path=self.path) from None
            except PermissionError as e:
                raise LockError(f"cannot create lock {self.lock_path}: {e.strerror} (is the directory writable?)", path=self.path) from None
            except FileExistsError:
                info = inspect_lock(self.path)
                if info is None:
                    continue
                if info.stale_reasons and (info.reclaimable or "dead-pid" in info.stale_reasons):
                    if not self.break_stale:
                        raise StaleLock(
                            f"stale lock ({', '.join(info.stale_reasons)}): {info.holder}; "
                            "rerun with --break-stale-lock to remove it",
                            path=self.path,
                        )
                    try:
                        os.unlink(self.lock_path)
                    except FileNotFoundError:
                        pass
                    except OSError as e:
                        raise LockError(f"cannot remove stale lock {self.lock_path}: {e.strerror}", path=self.path) from None
                    self.broken = info
                    continue
                if time.monotonic() >= deadline:
                    raise LockTimeout(
                        f"session file locked (timeout {int(self.timeout * 1000)}ms): {info.holder}",
                        path=self.path,
                    )
                time.sleep(min(1.0, 0.05 * attempt, max(0.0, deadline - time.monotonic())))
                continue
            payload = {
                "pid": os.getpid(),
                "createdAt": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            }
            st = process_starttime(os.getpid())
            if st is not None:
                payload["starttime"] = st
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(payload, indent=2))
            self._held = True
            return

    def release(self) -> None:
        if self._held:
            self._held = False
            try:
                os.unlink(self.lock_path)
            except FileNotFoundError:
                pass


class SessionLocks:
    """The locks to hold for ``path``: the agent's lock for the path it writes
    (``<realpath(dir)>/<basename>.lock``, OpenClaw's rule) and, when the session file
    is a symlink, the real file's lock too. Same interface as SessionLock."""

    def __init__(self, path: str, *, timeout: float = DEFAULT_TIMEOUT, break_stale: bool = False):
        self.path = path
        paths = [path]
        real = os.path.realpath(path)
        if lock_path(real) != lock_path(path):
            paths.append(real)
        self.locks = [SessionLock(p, timeout=timeout, break_stale=break_stale) for p in paths]
        self.lock_path = self.locks[0].lock_path

    @property
    def broken(self) -> LockInfo | None:
        return next((lk.broken for lk in self.locks if lk.broken is not None), None)

    def __enter__(self) -> "SessionLocks":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        held = []
        try:
            for lk in self.locks:
                lk.acquire()
                held.append(lk)
        except BaseException:
            for lk in reversed(held):
                lk.release()
            raise

    def release(self) -> None:
        for lk in reversed(self.locks):
            lk.release()
