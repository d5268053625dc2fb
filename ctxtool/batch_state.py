"""The resume state of a ``compact --batch`` run: an append-only journal beside the run.

One JSON object per line. Each event is appended with a single ``write`` (``O_APPEND``) and,
where losing it would cost money or redo work, fsynced before ctxtool goes on:

* ``run``: the first line: the run's key (a hash of what decides its requests: targets, shard,
  model, compaction options), so a state is never applied to another run;
* ``submitting`` (fsynced *before* the batch is created): the request ids (``custom_id``, a hash
  of the request's content) and the files each belongs to;
* ``submitted`` (fsynced): the batch id the API gave them;
* ``unsubmitted``: the create call was refused, or never reached the API (the requests may be
  sent again);
* ``candidates``: batches adopted for a submission whose outcome was unknown (a crash or a
  timeout between ``submitting`` and ``submitted``): a batch created in that window with the
  same number of requests; its results are used only for the request ids they carry;
* ``plan``: a file's size, mtime and inode when it was planned, and the requests it needs;
* ``ended``: a batch ended (its request counts);
* ``retry``: requests of an ended batch whose answer was an error (errored, expired, canceled,
  or no result at all): from the next run on they are free to submit again (the run that read
  the error keeps it: nothing is sent twice within one run);
* ``done``: a file was written or skipped, with its result (synced after each batch's results
  and when the run ends: a crash of ctxtool loses nothing already written, a power loss at
  worst the last few of these, and those files are then planned again, where a pi or Claude
  Code file is found already compacted at its leaf).

A torn last line (a crash in the middle of an append) is ignored; any other unreadable line
makes the state unusable (one error naming the line). Two runs never share a state: the
journal is locked (``flock``) while a run uses it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from dataclasses import dataclass, field

import orjson

from .errors import BatchStateError, WriteError

VERSION = 1
STATE_PREFIX = ".ctxtool-batch-"


def run_key(spec: dict) -> str:
    """A stable hash of what decides a run's requests (targets, shard, model, options)."""
    return hashlib.sha256(orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)).hexdigest()


def default_path(directory: str, key: str) -> str:
    return os.path.join(directory, f"{STATE_PREFIX}{key[:16]}.jsonl")


def file_stamp(path: str) -> list | None:
    """[size, mtime_ns, inode] of ``path``; None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


@dataclass
class Submission:
    """One batch submission: ``batch`` is None while the create call's outcome is unknown."""

    n: int
    ids: list[str]
    files: dict[str, list[str]]  # custom_id -> paths
    at: float
    batch: str | None = None
    candidates: list[str] = field(default_factory=list)
    error: str | None = None  # refused or never sent: the ids are free to submit again

    @property
    def batches(self) -> list[str]:
        return [self.batch] if self.batch else list(self.candidates)


class BatchState:
    """The journal, replayed into plain data. ``open`` locks it; ``close`` releases it."""

    def __init__(self, path: str, key: str):
        self.path = path
        self.key = key
        self.meta: dict = {}
        self.submissions: list[Submission] = []
        self.by_id: dict[str, Submission] = {}  # custom_id -> the latest live submission holding it
        self.plans: dict[str, dict] = {}  # path -> {"stamp", "needs"}
        self.ended: dict[str, dict] = {}  # batch id -> counts
        self.done: dict[str, dict] = {}  # path -> {"status", "stamp", "result"}
        self.retry: set[str] = set()  # custom_ids an earlier run got an error for: free to submit again
        self.resumed = False
        self._fd: int | None = None

    # ------------------------------------------------------------ open / close

    @classmethod
    def open(cls, path: str, key: str, meta: dict | None = None) -> "BatchState":
        st = cls(path, key)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as e:
            raise BatchStateError(f"cannot open the batch state: {e.strerror or e}", path=path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise BatchStateError("in use by another ctxtool compact --batch run (it holds the lock); wait for it "
                                  "or give this run its own --batch-state", path=path) from None
        st._fd = fd
        try:
            with open(path, "rb") as f:
                data = f.read()
            st._replay(data)
            if not st.meta and data.strip() and not data.startswith(b'{"v":'):
                raise BatchStateError("not a ctxtool batch state (refusing to overwrite it)", path=path)
            # a torn last line (or a torn first event: nothing complete) is cut off, so the next
            # append starts a line of its own
            keep = data.rfind(b"\n") + 1 if st.meta else 0
            if keep < len(data):
                os.ftruncate(fd, keep)
            if not st.meta:
                st.meta = {"v": VERSION, "ev": "run", "key": key, "created": time.time(), **(meta or {})}
                st._append(st.meta, sync=True)
            else:
                st.resumed = True
        except BaseException:
            st.close()
            raise
        return st

    def close(self) -> None:
        if self._fd is not None:
            try:
                try:
                    os.fsync(self._fd)
                except OSError:
                    pass
                os.close(self._fd)  # releases the lock
            finally:
                self._fd = None

    def remove(self) -> None:
        """The run is complete: the journal goes (a later run starts afresh)."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ replay

    def _replay(self, data: bytes) -> None:
        lines = data.split(b"\n")
        torn_tail = bool(data) and not data.endswith(b"\n")
        for i, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                ev = orjson.loads(raw)
                if not isinstance(ev, dict) or not isinstance(ev.get("ev"), str):
                    raise ValueError("not an event object")
            except ValueError as e:
                if torn_tail and i == len(lines):
                    break  # a crash in the middle of the last append
                raise BatchStateError(f"unreadable event ({e}); remove the file to start the run afresh",
                                      path=self.path, line=i) from None
            try:
                self._apply(ev, first=not self.meta)
            except (KeyError, TypeError, ValueError) as e:
                raise BatchStateError(f"malformed {ev.get('ev')!r} event ({type(e).__name__}: {e}); remove the file "
                                      "to start the run afresh", path=self.path, line=i) from None

    def _apply(self, ev: dict, first: bool = False) -> None:
        kind = ev["ev"]
        if first:
            if kind != "run":
                raise BatchStateError("not a ctxtool batch state (its first event is not a run)", path=self.path, line=1)
            if ev.get("v") != VERSION:
                raise BatchStateError(f"written by another ctxtool version (state version {ev.get('v')!r}, "
                                      f"this one reads {VERSION})", path=self.path, line=1)
            if ev.get("key") != self.key:
                raise BatchStateError("belongs to another run (other targets, shard, model or compaction options); "
                                      "remove it or give this run its own --batch-state", path=self.path)
            self.meta = ev
            return
        if kind == "submitting":
            sub = Submission(int(ev["n"]), list(ev["ids"]), dict(ev["files"]), float(ev["at"]))
            self.submissions.append(sub)
            for cid in sub.ids:
                self.by_id[cid] = sub
        elif kind == "submitted":
            self._sub(ev["n"]).batch = str(ev["batch"])
        elif kind == "candidates":
            self._sub(ev["n"]).candidates = [str(b) for b in ev["batches"]]
        elif kind == "unsubmitted":
            sub = self._sub(ev["n"])
            sub.error = str(ev["error"])
            for cid in sub.ids:
                if self.by_id.get(cid) is sub:
                    del self.by_id[cid]
        elif kind == "plan":
            self.plans[ev["path"]] = {"stamp": ev["stamp"], "needs": list(ev["needs"])}
        elif kind == "ended":
            self.ended[str(ev["batch"])] = dict(ev["counts"])
        elif kind == "retry":
            bid = str(ev["batch"])
            for cid in ev["ids"]:
                sub = self.by_id.get(cid)
                if sub is not None and bid in sub.batches:  # (not a later submission of the same request)
                    del self.by_id[cid]
                    self.retry.add(cid)
        elif kind == "done":
            self.done[ev["path"]] = {"status": ev["status"], "stamp": ev["stamp"], "result": ev.get("result") or {}}
        # unknown kinds (a newer minor version) are ignored

    def _sub(self, n) -> Submission:
        for s in self.submissions:
            if s.n == n:
                return s
        raise KeyError(f"submission {n}")

    # ------------------------------------------------------------ appends

    def _write(self, data: bytes) -> None:
        try:
            written = os.write(self._fd, data)
        except OSError as e:
            raise WriteError(f"cannot write the batch state: {e.strerror or e}", path=self.path) from None
        if written != len(data):
            raise WriteError(f"short write to the batch state ({written} of {len(data)} bytes; disk full?)", path=self.path)

    def _append(self, ev: dict, *, sync: bool = False) -> None:
        self._write(orjson.dumps(ev) + b"\n")
        if sync:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise WriteError(f"cannot sync the batch state: {e.strerror or e}", path=self.path) from None

    def _record(self, ev: dict, *, sync: bool = False) -> None:
        self._append(ev, sync=sync)
        self._apply(ev)

    def submitting(self, ids: list[str], files: dict[str, list[str]]) -> Submission:
        n = max((s.n for s in self.submissions), default=0) + 1
        self._record({"ev": "submitting", "n": n, "at": time.time(), "ids": ids, "files": files}, sync=True)
        return self.submissions[-1]

    def submitted(self, sub: Submission, batch_id: str) -> None:
        self._record({"ev": "submitted", "n": sub.n, "batch": batch_id, "at": time.time()}, sync=True)

    def candidates(self, sub: Submission, batch_ids: list[str]) -> None:
        self._record({"ev": "candidates", "n": sub.n, "batches": batch_ids}, sync=True)

    def unsubmitted(self, sub: Submission, error: str) -> None:
        self._record({"ev": "unsubmitted", "n": sub.n, "error": error}, sync=True)

    def plan(self, path: str, stamp: list | None, needs: list[str]) -> None:
        self._record({"ev": "plan", "path": path, "stamp": stamp, "needs": needs})

    def batch_ended(self, batch_id: str, counts: dict) -> None:
        if self.ended.get(batch_id) != counts:
            self._record({"ev": "ended", "batch": batch_id, "counts": counts})

    def retry_later(self, batch_id: str, ids: list[str]) -> None:
        """``ids`` got an error from ``batch_id``: the next run may submit them again. Appended only: this
        run keeps them as they are (their error is its answer; it never sends a request twice)."""
        if ids:
            self._append({"ev": "retry", "batch": batch_id, "ids": ids})

    def file_done(self, path: str, status: str, stamp: list | None, result: dict) -> None:
        self._record({"ev": "done", "path": path, "status": status, "stamp": stamp, "result": result})

    def sync(self) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise WriteError(f"cannot sync the batch state: {e.strerror or e}", path=self.path) from None
