"""The agent's session write lock (``<file>.lock``), read and honoured the way OpenClaw does.

OpenClaw creates ``<realpath(dir)>/<basename>.lock`` with O_EXCL and writes
``{"pid", "createdAt", "starttime"?}``. ctxtool takes the same lock while it writes,
so a running gateway and ctxtool never write the same file at once. Who waits for whom:

* a live holder: waited for up to the timeout (OpenClaw's backoff), then a failure naming it;
* a holder that is gone (dead pid, pid reused by a later process, our own pid without a
  start time): the lock is taken over at once, with a one-line notice;
* a lock file with no usable pid (empty or garbage: a writer killed between creating and
  filling it; ctxtool's own lock is linked into place already filled, never empty): judged by its mtime. Untouched for ``GARBAGE_STALE_MS`` (5 s; a writer fills
  its lock microseconds after creating it) it is taken over; younger, it is waited for;
* a live holder older than ``STALE_MS`` (30 min, OpenClaw's staleMs): removed only with
  ``break_stale`` (``--break-stale-lock``), otherwise waited for like any live holder.

Pids are judged on this host, as OpenClaw does.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .errors import LockError, LockTimeout, StaleLock
from .jsonl import discard, temp_path

STALE_MS = 30 * 60 * 1000  # OpenClaw staleMs: 30 min
GARBAGE_STALE_MS = 5_000  # a lock file with no usable pid, untouched this long, is a crash leftover
DEFAULT_TIMEOUT = 10.0  # OpenClaw acquire timeout: 10 s
GONE = {"dead-pid": "is not running", "recycled-pid": "now belongs to another process",
        "orphan-self-pid": "is this process, which does not hold it"}


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


def process_start_epoch(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds, from /proc); None when unknown."""
    ticks = process_starttime(pid)
    if ticks is None:
        return None
    try:
        with open("/proc/stat", "rb") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return btime + ticks / os.sysconf("SC_CLK_TCK")


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


def pid_gone(pid: int, since: float) -> bool:
    """True when the process that ran as ``pid`` at time ``since`` (epoch seconds) is gone:
    the pid is dead, or belongs to a process started later (recycled)."""
    if not pid_alive(pid):
        return True
    started = process_start_epoch(pid)
    return started is not None and started > since + 1  # /proc/stat btime has 1 s resolution


@dataclass
class LockInfo:
    path: str
    pid: int | None
    created_at: str | None
    starttime: int | None
    age_ms: float
    stale_reasons: list[str] = field(default_factory=list)
    ino: int | None = None  # the lock file's inode: a takeover removes only the lock it inspected

    @property
    def holder(self) -> str:
        return f"pid={self.pid if self.pid is not None else '?'} {self.path}"

    @property
    def gone(self) -> str | None:
        """The reason the holder no longer holds the lock (dead, recycled, orphan), or None."""
        return next((r for r in self.stale_reasons if r in GONE), None)

    @property
    def garbage(self) -> bool:
        """No usable pid: an empty or unparseable lock file, or one without a pid."""
        return "missing-pid" in self.stale_reasons

    def takeover(self, break_stale: bool = False) -> str | None:
        """Why this lock may be removed now (the one-line notice), or None when it must be waited for."""
        if self.gone:
            return f"took over stale lock {self.path} ({self.gone}: holder pid {self.pid} {GONE[self.gone]})"
        if self.garbage:
            if self.age_ms > GARBAGE_STALE_MS:
                return (f"took over stale lock {self.path} (no pid in it, untouched for {self.age_ms / 1000:.0f} s: "
                        "left by a writer that stopped while creating it)")
            return None
        if break_stale and "too-old" in self.stale_reasons:
            return (f"removed stale lock {self.path} (too-old: held for {self.age_ms / 60000:.0f} min by live pid "
                    f"{self.pid}; --break-stale-lock)")
        return None


def inspect_lock(path: str, *, now: float | None = None) -> LockInfo | None:
    """Read the lock of session ``path``; None when there is none."""
    lp = lock_path(path)
    now = time.time() if now is None else now
    try:
        with open(lp, "rb") as f:
            data = f.read()
            st = os.fstat(f.fileno())
    except FileNotFoundError:
        return None
    except OSError:
        return LockInfo(lp, None, None, None, 0.0, ["unreadable"])
    mtime = st.st_mtime
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
    if pid is None or set(reasons) <= {"missing-pid", "invalid-createdAt"}:
        age_ms = (now - mtime) * 1000  # no holder to ask: only the file's own age tells
    return LockInfo(lp, pid, created, starttime, age_ms, reasons, st.st_ino)


def _parse_iso(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class _Held:
    """A lock used as a context manager: ``acquire`` on entry, ``release`` on exit."""

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class SessionLock(_Held):
    """Hold ``<file>.lock`` while writing ``path``; a context manager.

    Waits for a live holder up to ``timeout`` seconds (backoff min(1 s, 50 ms x attempt)),
    then raises LockTimeout naming the holder (StaleLock when that holder has held it for
    more than 30 min and ``break_stale`` is not set). A lock whose holder is gone is taken
    over at once (module doc); ``broken`` is the lock taken over and ``notice`` says why.
    """

    def __init__(self, path: str, *, timeout: float = DEFAULT_TIMEOUT, break_stale: bool = False):
        self.path = path
        self.lock_path = lock_path(path)
        self.timeout = timeout
        self.break_stale = break_stale
        self.broken: LockInfo | None = None
        self.notice: str | None = None
        self._held = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        attempt = 0
        filled = self._filled()
        try:
            while True:
                attempt += 1
                if self._create(filled):
                    self._held = True
                    return
                info = inspect_lock(self.path)
                if info is None:
                    continue
                why = info.takeover(self.break_stale)
                if why is not None:
                    self._remove(info)
                    self.broken, self.notice = info, why
                    continue
                if time.monotonic() >= deadline:
                    raise self._timeout(info)
                time.sleep(min(1.0, 0.05 * attempt, max(0.0, deadline - time.monotonic())))
        finally:
            discard(filled)

    def _fail(self, e: OSError) -> LockError:
        if isinstance(e, FileNotFoundError):
            return LockError(f"cannot create lock {self.lock_path}: directory does not exist", path=self.path)
        if isinstance(e, PermissionError):
            return LockError(f"cannot create lock {self.lock_path}: {e.strerror} (is the directory writable?)", path=self.path)
        return LockError(f"cannot create lock {self.lock_path}: {e.strerror or e}", path=self.path)

    def _filled(self) -> str:
        """The lock's content, written beside it under a temp name: linked into place whole, a lock
        from ctxtool is never seen empty (a run killed while taking it leaves no garbage lock)."""
        payload = {
            "pid": os.getpid(),
            "createdAt": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        st = process_starttime(os.getpid())
        if st is not None:
            payload["starttime"] = st
        tmp = temp_path(self.lock_path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(payload, indent=2))
        except OSError as e:
            discard(tmp)
            raise self._fail(e) from None
        return tmp

    def _create(self, filled: str) -> bool:
        """Put the lock in place unless one exists (link(2) fails on an existing name, like O_EXCL)."""
        try:
            os.link(filled, self.lock_path)
            return True
        except FileExistsError:
            return False
        except OSError:
            pass  # no hard links here: create with O_EXCL and fill it
        try:
            fd = os.open(self.lock_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        except OSError as e:
            raise self._fail(e) from None
        with open(filled, "rb") as src, os.fdopen(fd, "wb") as f:
            f.write(src.read())
        return True

    def _timeout(self, info: LockInfo) -> LockError:
        if info.garbage:
            return LockTimeout(f"lock file {self.lock_path} has no pid and was modified {info.age_ms / 1000:.1f} s ago "
                               f"(taken over once untouched for {GARBAGE_STALE_MS // 1000} s); rerun", path=self.path)
        if "too-old" in info.stale_reasons:
            return StaleLock(f"session file locked for {info.age_ms / 60000:.0f} min (over {STALE_MS // 60000} min) by "
                             f"live {info.holder}; rerun with --break-stale-lock to remove it", path=self.path)
        return LockTimeout(f"session file locked (timeout {int(self.timeout * 1000)}ms): {info.holder}", path=self.path)

    def _remove(self, info: LockInfo) -> None:
        """Remove the stale lock ``info`` describes, unless another writer replaced it meanwhile."""
        try:
            if os.stat(self.lock_path).st_ino != info.ino:
                return  # someone else took it over first: look again
            os.unlink(self.lock_path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise LockError(f"cannot remove stale lock {self.lock_path}: {e.strerror}", path=self.path) from None

    def release(self) -> None:
        if self._held:
            self._held = False
            try:
                os.unlink(self.lock_path)
            except FileNotFoundError:
                pass


def clear_stale(path: str) -> list[str]:
    """Remove the locks of ``path`` (see SessionLocks) whose holder is gone, as taking them would;
    a run that ends up not writing still leaves no dead run's lock behind. One notice per lock."""
    notices = []
    for lk in SessionLocks(path).locks:
        info = inspect_lock(lk.path)
        why = info.takeover() if info is not None else None
        if why is not None:
            lk._remove(info)
            notices.append(why.replace("took over", "removed", 1))
    return notices


class SessionLocks(_Held):
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

    @property
    def notices(self) -> list[str]:
        """One line per lock taken over."""
        return [lk.notice for lk in self.locks if lk.notice]

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


PROPER_LOCKFILE_STALE_MS = 10_000  # proper-lockfile's default ``stale``: a lock directory untouched this long is dead


class DirLock(_Held):
    """pi's lock on its ``settings.json``: the ``proper-lockfile`` package (``lockSync(path,
    {realpath: false})`` in pi's ``FileSettingsStorage``) creates the directory ``<file>.lock``
    with mkdir, which is atomic; a lock directory whose mtime is older than its ``stale`` (10 s)
    is taken to be dead and removed. ctxtool takes and honours it the same way: a fresh lock is
    waited for up to ``timeout``, a stale one is taken over with a notice. Same interface as
    SessionLocks (``notices``)."""

    def __init__(self, path: str, *, timeout: float = DEFAULT_TIMEOUT, stale_ms: int = PROPER_LOCKFILE_STALE_MS):
        self.path = path
        self.lock_path = path + ".lock"
        self.timeout = timeout
        self.stale_ms = stale_ms
        self.notices: list[str] = []
        self.held = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        delay = 0.02
        while True:
            try:
                os.mkdir(self.lock_path)
                self.held = True
                return
            except FileExistsError:
                pass
            except OSError as e:
                raise LockError(f"cannot create lock {self.lock_path}: {e.strerror or e}", path=self.path) from None
            try:
                age_ms = (time.time() - os.stat(self.lock_path).st_mtime) * 1000
            except FileNotFoundError:
                continue  # released between the mkdir and the stat: try again at once
            if age_ms > self.stale_ms:
                try:
                    os.rmdir(self.lock_path)
                    self.notices.append(f"took over the stale lock {self.lock_path} (untouched for {age_ms / 1000:.0f} s; "
                                        f"proper-lockfile treats a lock older than {self.stale_ms / 1000:g} s as dead)")
                except FileNotFoundError:
                    pass
                except OSError as e:
                    raise LockError(f"cannot remove the stale lock {self.lock_path}: {e.strerror or e}", path=self.path) from None
                continue
            if time.monotonic() >= deadline:
                raise LockTimeout(f"the settings file is locked by another process ({self.lock_path}, "
                                  f"{age_ms / 1000:.1f} s old); nothing was written", path=self.path)
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                os.rmdir(self.lock_path)
            except FileNotFoundError:
                pass
