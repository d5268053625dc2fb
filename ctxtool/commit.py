"""The commit protocol for rewriting a live session file.

Agents append to their session files while ctxtool works on them: pi and OpenClaw with a
fresh ``open`` per line (``appendFileSync``), Claude Code and Codex without any lock. Every
rewrite (``repair``, ``compact``, ``profile --apply``) goes through ``commit``, so that no
appended line is lost and no other writer's file is overwritten:

1. ``snapshot`` remembers what the plan was made from: the file's identity (st_dev,
   st_ino), the bytes read, a hash of the last 64 KiB of them and one of them all (``full_sum``), and where lines appended
   later begin (a last line without its newline is *pending*: a torn line is carried once
   it is complete, a complete record only waits for its newline).
2. The new content is written to ``.<name>.ctxtool-<pid>-<ms>.tmp`` beside the file.
3. Under the agent's lock (held by the caller), just before the rename, a file that was
   replaced, shrank or was rewritten in place is refused (``FileChanged``): nothing is
   written. Complete lines appended since the snapshot are copied onto the temp file byte
   for byte; the first one that links to a parent is re-linked from the old leaf to the new
   one when the rewrite changed the leaf (``Relink``: pi ``parentId``, Claude Code
   ``parentUuid``), and only that line changes. An unfinished last line stays pending.
4. The old file is hard-linked as ``.<name>.ctxtool-<pid>-<ms>.bak``; a process that keeps the
   file open for writing (``held_open``: Codex holds its rollout while it runs) is refused
   (``HeldOpen``: its next lines would go to the replaced file; the callers first wait for it,
   ``wait_unheld``); the temp file is renamed over the path. On Linux the rename is an exchange
   (``renameat2(RENAME_EXCHANGE)``), and the file it displaced is looked at: not the one read (another writer renamed
   a file of its own over the path since the last look), or rewritten in place (shorter, or any byte read changed:
   ``full_sum``), it is swapped back, what reached the new file in that instant appended to it, and the write refused
   (``FileChanged``). Elsewhere the last look is made before the rename.
5. A writer that opened the path before the rename writes to the old file. It is watched
   through the handle ctxtool holds on it, and lines arriving there are appended to the
   new file, until no process has it open for writing (``/proc``; without ``/proc``: until
   it has been quiet for ``SETTLE``), and for a live file (lines were appended meanwhile)
   at least ``LIVE_GRACE`` after the last sign of a writer, at most ``WATCH_MAX`` seconds.
   When the writer has meanwhile opened the path again and added its next lines to the new
   file, the late lines belong before those: the new file is committed once more with them
   in place (same protocol, at most ``PUT_BACK_ROUNDS`` times; where it cannot be, they are
   appended and the backup is kept).
6. The pending backup becomes ``<file>.bak-<pid>-<ms>`` (OpenClaw's backup name), or is
   removed when no backup was asked for. It is the file as it was before the rewrite, the
   carried lines included. A process that still holds the old file open for writing (a
   persistent handle) writes its next lines there, out of reach: the backup is then kept
   even without ``backup``, ``<backup>.writers`` records how far the new file has it and
   who holds it, and ``late_writes`` (run by the next read) reports lines found after that.
   A live file's old copy (lines were appended during the rewrite) is kept the same way: a
   writer whose ``open`` began before the rename and stalled past the watch can still write
   a line there.

A run killed at any point leaves the file untouched or fully rewritten; ``clean_leftovers``
(run by the next write) removes temp files whose pid is gone, removes a pending backup when
the rewrite never happened (it still is the file) and names it as a backup when it did.
"""

from __future__ import annotations

import errno
import json
import os
import time
from stat import S_ISREG
from dataclasses import dataclass, field
from typing import Callable, Iterable

import orjson

from . import interrupts
from .errors import FileChanged, ForkedError, HeldOpen, InputError, WriteError
from .jsonl import TEMP_NAME, backup_path, discard, dumps, fsync_dir, keep_owner, temp_path, write_temp
from .lock import pid_gone, process_starttime

TAIL_BYTES = 64 << 10  # the end of what was read, hashed: an in-place rewrite of the same size shows there
WATCH_MAX = 1.0  # seconds the old file is watched after the rename while a writer still has it open
LIVE_GRACE = 0.1  # seconds a live file's old copy is still watched after the last sign of a writer
# a writer seen at each of this many looks this far apart keeps the file open (an agent that opens it per line, as pi and
# Claude Code do, holds it some microseconds a line: even one appending every 0.2 ms is seen at 5 looks in a row
# about once in 10^5)
HELD_LOOKS = 5
HELD_GAP = 0.02
SETTLE = 0.05  # without /proc: the old file is let go after this long without growth
WRITERS = ".writers"  # <backup>.writers: a writer still held the old file open when ctxtool let it go
LISTING_TTL = 10.0  # seconds a directory's leftover names are reused (a batch in a 10,000-file folder lists it rarely)
LINK_FIELDS = {"pi": ("parentId", "id"), "claude": ("parentUuid", "uuid")}
PUT_BACK_ROUNDS = 3  # times a commit is written once more to put late lines before another writer's

#: test seam: callables ``(phase, path)`` run at each phase of a rewrite (see ``phase``)
hooks: list[Callable[[str, str], None]] = []


def phase(name: str, path: str) -> None:
    """A writer reached ``name``: before-read, planned (repair, compact), tmp-written,
    before-rename, after-rename, committed (commit)."""
    for hook in list(hooks):
        hook(name, path)


# ---------------------------------------------------------------- what was read


@dataclass(frozen=True)
class Snapshot:
    """What a plan was made from (plain data)."""

    path: str  # the real path
    dev: int
    ino: int
    size: int  # bytes read
    tail: str  # sha256 of the last TAIL_BYTES read (whole: of all of them)
    start: int  # where lines appended later begin
    skip_eol: bool = False  # the read ended in a complete record missing its newline
    whole: bool = False  # not an append-only file (a config): any change refuses
    sum: int | None = None  # a hash of all the bytes read (``full_sum``): looked at once the new file is in place


def identity(path: str) -> tuple[int, int]:
    """(st_dev, st_ino) of the file ``path`` names now."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    return st.st_dev, st.st_ino


def snapshot(path: str, size: int, *, expect: tuple[int, int] | None = None, whole: bool = False) -> Snapshot:
    """The snapshot of ``path`` after its first ``size`` bytes were read (``Transcript.size``).

    ``expect``: the identity taken before reading; a file replaced while it was read raises
    ``FileChanged(retry=True)``. ``whole``: a file that is rewritten, never appended to."""
    real = os.path.realpath(path)
    fd = _open(real)
    try:
        st = os.fstat(fd)
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise FileChanged("was replaced by another file while it was read; read it again", path=path, retry=True)
        if st.st_size < size:
            raise FileChanged(f"shrank from {size} to {st.st_size} bytes while it was read", path=path)
        tail = _digest(fd, size, whole)
        start, skip = (size, False) if whole else _pending_start(fd, size)
        total = None if whole else full_sum(fd, size)  # (a whole file's digest is of all its bytes already)
    finally:
        os.close(fd)
    return Snapshot(real, st.st_dev, st.st_ino, size, tail, start, skip, whole, total)


def full_sum(fd: int, size: int) -> int:
    """A hash of the file's first ``size`` bytes: the C part's ``checksum`` (0.12 s for 500 MB, most of it the reads),
    else zlib's CRC-32. What tells a file rewritten in place, a byte far from its end changed, from the one read: the
    digest of its tail does not (review 2026-11-30: an edit of line 2 went back to what was read, unseen)."""
    from .scanloop import native

    c = native()
    if c is not None and hasattr(c, "checksum"):
        return c.checksum(fd, 0, size)
    import zlib

    crc = 0
    for block in _preads(fd, 0, size):
        crc = zlib.crc32(block, crc)
    return crc


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=path) from None


def _preads(fd: int, offset: int, length: int):
    """The bytes of ``fd`` from ``offset``, ``length`` of them or up to its end, 8 MiB at a time."""
    while length > 0:
        block = os.pread(fd, min(length, 8 << 20), offset)
        if not block:
            return
        yield block
        offset += len(block)
        length -= len(block)


def _pread_all(fd: int, offset: int, length: int) -> bytes:
    return b"".join(_preads(fd, offset, length))


def _digest(fd: int, size: int, whole: bool) -> str:
    import hashlib  # (imported where a file is written, not at every command's start)

    begin = 0 if whole else max(0, size - TAIL_BYTES)
    return hashlib.sha256(_pread_all(fd, begin, size - begin)).hexdigest()


def _pending_start(fd: int, size: int) -> tuple[int, bool]:
    """Where appended lines begin: after the last newline read. A last line without its
    newline is pending: a complete record (it parses) only lacks its newline, so carrying
    starts after it and a newline arriving first is its own; a torn line is carried whole
    once a writer completes it."""
    end = size
    while end > 0:
        begin = max(0, end - TAIL_BYTES)
        block = os.pread(fd, end - begin, begin)
        k = block.rfind(b"\n")
        if k >= 0:
            end = begin + k + 1
            break
        end = begin
    if end == size:
        return size, False
    return (size, True) if _record(_pread_all(fd, end, size - end)) is not None else (end, False)


def _record(line: bytes):
    """The JSON object of a line, or None."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


# ---------------------------------------------------------------- re-linking


@dataclass(frozen=True)
class Relink:
    """How carried-over lines hang on the rewritten file. The agent appends children of its
    leaf ``old``; the rewrite made ``new`` the leaf (e.g. the compaction record), so the first
    carried line that links to a parent is moved from ``old`` to ``new``. A carried line whose
    parent the rewrite removed (``gone``: a set, or a function computing it on first need)
    cannot be carried as it is: ``FileChanged(retry=True)``, the caller plans again or refuses. Nor can a carried
    tool result for a call the rewrite gave a synthetic result (``answered``; ``results(obj)``: the call ids a line
    answers): the tool was still running when the file was read, and its real result must not hang under the
    synthetic one; after the rename such a line is kept as written (not re-linked), with a note."""

    field: str  # pi parentId, Claude Code parentUuid
    id_field: str  # pi id, Claude Code uuid
    old: str | None
    new: str | None
    gone: frozenset | Callable[[], set] = frozenset()
    answered: frozenset = frozenset()
    results: Callable[[dict], list] | None = None


def relink_for(fmt_name: str, old: str | None, new: str | None, gone=frozenset(), answered=frozenset(),
               results: Callable[[dict], list] | None = None) -> Relink | None:
    """The Relink of a format with parent links (pi, Claude Code); None for the others."""
    fields = LINK_FIELDS.get(fmt_name)
    return Relink(fields[0], fields[1], old, new, gone, frozenset(answered), results) if fields else None


def relink_line(line: bytes, obj: dict, key: str, new: str | None) -> bytes:
    """``line`` with its top-level ``key`` set to ``new``; every other byte kept when the value
    can be swapped in place (verified by parsing), else the line re-serialized."""
    body = line.rstrip(b"\r\n")
    eol = line[len(body):]
    want = {**obj, key: new}
    name = dumps(key) + b":"
    old_value = name + dumps(obj[key])
    i = body.find(old_value)
    if i >= 0:
        swapped = body[:i] + name + dumps(new) + body[i + len(old_value):]
        if _record(swapped) == want:
            return swapped + eol
    return dumps(want) + (eol or b"\n")


# ---------------------------------------------------------------- the commit


@dataclass
class Committed:
    """What a commit did."""

    path: str
    written: int = 0  # bytes of the new content
    carried: int = 0  # appended lines copied over before the rename
    carried_late: int = 0  # lines that reached the old file after the rename, copied over
    relinked: str | None = None  # id of the carried line re-linked to the new leaf
    backup: str | None = None
    writers: list = field(default_factory=list)  # processes still holding the old file open for writing
    notices: list[str] = field(default_factory=list)
    completed: bool = False  # the torn last line the rewrite left out was finished meanwhile: carried whole


class _Carry:
    """Copies complete lines appended to the old file (``old``, a read handle) onto ``out``."""

    def __init__(self, snap: Snapshot, old: int, out: int, relink: Relink | None, may_hold: bool = True):
        self.snap, self.old, self.out, self.relink = snap, old, out, relink
        self.pos = snap.start
        self.skip_eol = snap.skip_eol
        self.lines = 0
        self.strict = True  # before the rename a line that cannot be carried as it is refuses the commit
        self.expect = os.fstat(out).st_size  # what ctxtool wrote to out: more means another writer appended too
        self.linked = False  # the first carried line with a parent link was seen
        self.relinked: str | None = None
        self.gone: set | None = None
        self.notes: list[str] = []
        self.completed = False  # a torn last line carried whole (finished meanwhile)
        self.may_hold = may_hold  # lines arriving after another writer's: held, put back in order
        self.held: list[bytes] = []  # late lines that belong before ``hold_at`` in the new file
        self.hold_at: int | None = None  # where another writer's first line on the new file begins
        self.misplaced: list[tuple[int, int]] = []  # byte ranges of held lines already written after that line
        self.written_held = 0  # how many of ``held`` those ranges hold (the first ones)
        self.interleaved = False
        self.live = False  # lines were appended since the read, or a writer was seen on the old file after the rename
        self.kept_to = snap.start  # the old file's lines up to here are in the new file (what an interrupted run has)
        self.noted = -1  # the ``kept_to`` last written beside the pending backup (``_note_pending``)

    def pull(self) -> int:
        """Carry the complete lines the old file has beyond ``pos``; returns how many."""
        size = os.fstat(self.old).st_size
        if size <= self.pos or self.snap.whole:
            return 0
        data = _pread_all(self.old, self.pos, size - self.pos)
        skip = 0
        if self.skip_eol:
            skip = 2 if data.startswith(b"\r\n") else 1 if data.startswith(b"\n") else 0
            self.skip_eol = False
        k = data.rfind(b"\n")
        if k < skip:
            self.pos += skip
            return 0
        lines = [ln + b"\n" for ln in data[skip:k].split(b"\n")]
        first_at = self.pos + skip
        self.pos += k + 1
        if first_at < self.snap.size:  # the first line completes a torn line read at the end
            lines[0] = self._torn(lines[0], first_at)
        out = [self._line(line) for line in lines]
        if not self.strict and self.hold_at is None and os.fstat(self.out).st_size != self.expect:
            self._behind(out)  # a writer opened the old file before the rename, then the new one for its next line
        if self.hold_at is not None:
            self.held += out
            self.lines += len(out)
            return len(out)
        data = b"".join(out)
        _write_all(self.out, data)
        self.kept_to = self.pos
        end = os.lseek(self.out, 0, os.SEEK_CUR)  # O_APPEND: just past where the write landed
        if not self.strict and end - len(data) != self.expect:
            # another writer's line landed between the look above and this write: these lines are behind it
            if self._behind(out):
                self.misplaced.append((end - len(data), end))
                self.held += out
                self.written_held += len(out)
        self.expect = end  # not fstat: a line another writer adds right after this one must show up as foreign
        self.lines += len(out)
        return len(out)

    def _behind(self, lines: list) -> bool:
        """Another writer's lines are on the new file before ``lines``: hold them (and every later
        one) to be put back before those (True), or, when that is not allowed, say so."""
        if self.may_hold:
            self.hold_at = self.expect
            return True
        if not self.interleaved:
            self.interleaved = True
            self.notes.append(f"{len(lines)} line(s) that reached the old file after the rename were appended after "
                              "lines added to the new file since (by their writer or another)")
        return False

    def _torn(self, line: bytes, at: int) -> bytes:
        """A torn last line with a new line glued to it (the torn writer never finished):
        carry the new line on its own; the torn bytes stay in the backup."""
        cut = self.snap.size - at
        if _record(line) is None and _record(line[cut:]) is not None:
            self.notes.append(f"an unfinished line at byte {at} was never completed; the line appended after it "
                              "is carried on its own (the unfinished bytes are in the backup)")
            return line[cut:]
        if _record(line) is not None:
            self.completed = True
            self.notes.append(f"the last line (byte {at}) was still being written when it was read: it is carried whole, "
                              "not dropped")
        elif not line[cut:].strip():
            # a writer ended the torn line with a newline (then appended its own line): still no record, not carried
            self.notes.append(f"an unfinished line at byte {at} was ended with a newline but never completed: it is not "
                              "carried (its bytes are in the backup)")
            return b""
        return line

    def _line(self, line: bytes) -> bytes:
        r = self.relink
        if r is None or (self.linked and not r.gone and not r.answered):
            return line
        obj = _record(line)
        if obj is None:
            return line
        if r.answered and r.results is not None:
            hit = next((i for i in r.results(obj) if i in r.answered), None)
            if hit is not None and self.strict:
                raise FileChanged(f"a tool result appended meanwhile answers {hit}, a call this rewrite gives a synthetic "
                                  "result (the tool was still running); nothing was written: run again",
                                  path=self.snap.path, retry=True)
            if hit is not None:
                self.notes.append(f"a tool result that reached the old file after the rename answers {hit}, a call this "
                                  "rewrite gave a synthetic result: kept as written (a repair run again keeps the real "
                                  "result and drops the synthetic one)")
                return line
        if r.field not in obj:
            return line
        parent = obj[r.field]
        if r.gone and parent is not None:
            if self.gone is None:
                self.gone = set(r.gone() if callable(r.gone) else r.gone)
            if parent in self.gone and not self.strict:
                self.notes.append(f"a line that reached the old file after the rename ({r.id_field} {obj.get(r.id_field)}) "
                                  f"points at {parent}, which the rewrite removed; it is kept as written")
            elif parent in self.gone:
                raise FileChanged(f"a line appended meanwhile ({r.id_field} {obj.get(r.id_field)}) points at {parent}, "
                                  "which this rewrite removes; nothing was written: run again", path=self.snap.path, retry=True)
        if self.linked:
            return line
        self.linked = True
        if parent is None or parent != r.old or r.new is None or r.new == r.old:
            return line
        self.relinked = obj.get(r.id_field)
        return relink_line(line, obj, r.field, r.new)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def commit(snap: Snapshot, chunks: Iterable[bytes], *, relink: Relink | None = None, backup: bool = True,
           keep: tuple[int, str] | None = None, _rounds: int = PUT_BACK_ROUNDS, _live: bool = False,
           _mine: tuple = ()) -> Committed:
    """Replace ``snap.path`` with ``chunks`` (the caller holds the agent's lock): the protocol
    in the module doc. Raises ``FileChanged`` (nothing written) when the file was replaced,
    shrank or was rewritten since the snapshot, ``WriteError`` when writing fails. ``keep``: (n, why): the first n
    bytes must come through unchanged, else ``ForkedError(why)`` and nothing is written (Codex forks read their parent
    up to a byte offset). Ctrl-C and SIGTERM stop it at once until the rename; from the rename until the old file's
    watch ends they wait, and are taken when the commit is whole (``interrupts.held``): the KeyboardInterrupt then
    carries the ``Committed`` as its ``committed``."""
    hold = interrupts.held()
    done = None
    try:
        done = _commit(snap, chunks, hold, relink, backup, keep, _rounds, _live, _mine)
        return done
    finally:
        try:
            hold.stop()
        except KeyboardInterrupt as e:  # a signal held until the commit was whole: it says what was written
            if done is not None:
                e.committed = done
            raise


def _commit(snap: Snapshot, chunks: Iterable[bytes], hold: interrupts.held, relink: Relink | None, backup: bool,
            keep: tuple[int, str] | None, _rounds: int, _live: bool, _mine: tuple) -> Committed:
    path = snap.path
    res = Committed(path)
    try:
        old = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise _replaced(path) from None
    except OSError as e:
        raise WriteError(f"cannot read: {e.strerror or e}", path=path) from None
    tmp, out, pending = None, -1, None
    try:
        st = os.fstat(old)
        if (st.st_dev, st.st_ino) != (snap.dev, snap.ino):
            raise _replaced(path)
        _may_replace(st, path)
        tmp, out, res.written = write_temp(path, chunks)
        if keep is not None and not _same_start(old, tmp, min(keep[0], st.st_size)):
            raise ForkedError(keep[1], path=path)
        carry = _Carry(snap, old, out, relink, may_hold=_rounds > 0)
        carry.live = _live  # a second write to put late lines back: its file is live already
        phase("tmp-written", path)
        _check(snap, old)
        carry.pull()
        pending = _keep_old(old, path, copy=backup)
        phase("before-rename", path)
        _check(snap, old)  # once more, as close to the rename as possible
        _refuse_held(old, st, path, _mine)
        phase("renaming", path)
        carry.pull()
        _note_pending(pending, snap, carry)
        res.carried = carry.lines
        keep_owner(out, st)
        os.fchmod(out, st.st_mode & 0o7777)
        _same_owner(out, st, path)
        _copy_xattrs(old, out, path)
        os.fsync(out)
        wrote = os.fstat(out).st_size
        hold.start()  # from here a signal waits: a rename without its watch would leave an agent's late line behind
        if _exchange(tmp, path):
            # tmp names what path named: the file read, unless another writer renamed a file of its own over it
            # since the last look (review 2026-11-30: that file was replaced unseen, gone from disk)
            if not _displaced_is(tmp, snap):
                tmp = _given_back(tmp, path, out, wrote)
                raise _replaced(path)
            try:  # and rewritten in place since the last look (shorter, or its bytes read differ): put back too
                _check_bytes(snap, old)
                _check_sum(snap, old)
            except FileChanged:
                tmp = _given_back(tmp, path, out, wrote)
                raise
            os.unlink(tmp)
        else:  # (no exchange here: the last look is before the rename, which cannot be undone)
            _check_sum(snap, old)
            os.replace(tmp, path)
        tmp = None
    except BaseException as e:
        if tmp is not None and not getattr(e, "written", False):
            discard(tmp, out)
        elif out >= 0:
            os.close(out)
        if pending is not None:
            discard(pending)
            _drop_note(pending)
        os.close(old)
        if isinstance(e, OSError):
            raise WriteError(f"cannot write: {e.strerror or e}", path=path) from None
        raise
    carry.strict = False
    try:
        phase("after-rename", path)
        res.writers = _watch(carry, os.path.basename(path), _mine, lambda: _note_pending(pending, snap, carry))
        res.carried_late = carry.lines - res.carried
        os.fsync(out)
        # late lines left out of order: the backup has them in order
        out_of_order = _put_back(res, carry, _rounds) if carry.held else False
        res.relinked = carry.relinked
        res.completed = carry.completed
        res.notices += carry.notes
        _settle_backup(res, snap, carry, pending, backup, keep=out_of_order)
        phase("committed", path)
    except OSError as e:
        err = WriteError(f"the file was rewritten, but watching its old copy failed: {e.strerror or e} "
                         f"(the old copy is {pending})", path=path)
        err.written = True  # after the rename: the new content is in place
        raise err from None
    except BaseException:  # (an error while the old file is watched: its late lines reported by the next read)
        _abandon(pending, snap, carry)
        raise
    finally:
        os.close(out)
        os.close(old)
    fsync_dir(os.path.dirname(path))
    return res


AT_FDCWD, RENAME_EXCHANGE = -100, 2
_renameat2: list = []  # (libc's renameat2, ctypes.get_errno), once looked up (None: there is none)


def _exchange(a: str, b: str) -> bool:
    """Swap the files ``a`` and ``b`` name, atomically (Linux ``renameat2(RENAME_EXCHANGE)``): True when done, False
    where the system or the filesystem cannot (the caller then renames ``a`` over ``b``)."""
    if not _renameat2:
        try:
            import ctypes

            f = ctypes.CDLL(None, use_errno=True).renameat2
            f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            f.restype = ctypes.c_int
            _renameat2.append((f, ctypes.get_errno))
        except (ImportError, OSError, AttributeError):
            _renameat2.append(None)
    if _renameat2[0] is None:
        return False
    f, get_errno = _renameat2[0]
    if f(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False  # (a filesystem without it)
    raise OSError(err, os.strerror(err), b)


def _check_sum(snap: Snapshot, old: int) -> None:
    if snap.sum is not None and full_sum(old, snap.size) != snap.sum:
        raise FileChanged("was rewritten in place while ctxtool was rewriting it (the bytes read differ now); "
                          "nothing was written (run again)", path=snap.path)


def _displaced_is(name: str, snap: Snapshot) -> bool:
    st = os.stat(name)
    return (st.st_dev, st.st_ino) == (snap.dev, snap.ino)


def _given_back(tmp: str, path: str, out: int, wrote: int) -> str:
    """After an exchange that displaced another writer's file: that file put back in place, and what an agent appended
    to this write's new file in between (it was at ``path`` for an instant) appended to it. Returns the name of this
    write's file, to be discarded. Where the swap back fails, ``tmp`` holds the other writer's file: it is kept there
    (never discarded), and ``WriteError`` says where."""
    try:
        back = _exchange(tmp, path)
    except OSError:
        back = False
    if not back:
        err = WriteError(f"another program replaced the file at the moment ctxtool did, and putting its file back "
                         f"failed: its file is kept as {tmp}", path=path)
        err.written = True  # (this write's file is in place)
        raise err
    late = _pread_all(out, wrote, os.fstat(out).st_size - wrote)
    if late:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, late)
        finally:
            os.close(fd)
    return tmp


def _put_back(res: Committed, carry: _Carry, rounds: int) -> bool:
    """Late lines held because another writer had already added lines to the new file (an
    open-per-line writer whose open came just before the rename writes its next line to the
    new file): the new file is committed once more with them where they belong, before that
    writer's lines, through the same protocol (what is appended meanwhile is carried too).
    Where that cannot be done (the file was replaced or changed meanwhile) they are appended:
    returns True then (they are out of order in the new file)."""
    path, held, at = res.path, carry.held, carry.hold_at
    st = os.fstat(carry.out)
    try:
        src = _open(path)
    except InputError:
        src = -1
    try:
        if src < 0 or not os.path.samestat(os.fstat(src), st):
            raise _replaced(path)
        again = snapshot(path, st.st_size, expect=(st.st_dev, st.st_ino))
        if any(b < at or e > again.start for b, e in carry.misplaced):
            raise FileChanged("does not hold the late lines where they were written", path=path)

        def chunks():
            yield from _read_range(src, 0, at, path)
            yield b"".join(held)
            pos = at
            for b, e in sorted(carry.misplaced):  # the copies written behind another writer's line: left out
                yield from _read_range(src, pos, b - pos, path)
                pos = e
            yield from _read_range(src, pos, again.start - pos, path)
            if again.skip_eol:  # a complete record still waiting for its newline: the carry skips that newline
                yield b"\n"

        # (this write's own handle on the file is no other writer's)
        more = commit(again, chunks(), backup=False, _rounds=rounds - 1, _live=True, _mine=(carry.out,))
    except (FileChanged, WriteError, InputError, HeldOpen) as e:  # (HeldOpen: a writer keeps the new file open)
        if getattr(e, "written", False):  # the second write is in place; only watching after it failed
            res.notices.append(f"{len(held)} line(s) that reached the old file after the rename were put in place, "
                               f"but {e.reason}")
            return False
        _write_all(carry.out, b"".join(held[carry.written_held:]))
        res.notices.append(f"{len(held)} line(s) that reached the old file after the rename were appended after lines "
                           f"added to the new file since, by their writer or another (they could not be put in place: "
                           f"{e.reason})")
        return True
    finally:
        if src >= 0:
            os.close(src)
    res.carried_late += more.carried + more.carried_late
    # the second write's own backup and writers are said in its notices (and recorded beside its
    # backup), not merged into this write's
    res.notices.append(f"{len(held)} line(s) that reached the old file after the rename were put before the lines their "
                       "writer had meanwhile added to the new file (the file was written once more)")
    res.notices += more.notices
    return False


def _same_start(a: int, path: str, n: int) -> bool:
    """Whether the file ``a`` and the file at ``path`` hold the same first ``n`` bytes."""
    b = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while pos < n:
            k = min(1 << 20, n - pos)
            x, y = os.pread(a, k, pos), os.pread(b, k, pos)
            if x != y or len(x) < k:
                return False
            pos += k
        return True
    finally:
        os.close(b)


def _read_range(fd: int, offset: int, length: int, path: str):
    """``_preads``, all ``length`` bytes of them: a file that has fewer now is refused."""
    got = 0
    for block in _preads(fd, offset, length):
        got += len(block)
        yield block
    if got < length:
        raise FileChanged("shrank while ctxtool was putting late lines in place", path=path)


def _replaced(path: str) -> FileChanged:
    what = "was replaced by another file" if os.path.exists(path) else "was removed"
    return FileChanged(f"{what} while ctxtool was rewriting it; nothing was written (run again)", path=path)


def _check(snap: Snapshot, old: int) -> None:
    """Refuse a file that is no longer what was read, appends aside."""
    path = snap.path
    try:
        now = identity(path)
    except InputError:  # removed meanwhile
        raise _replaced(path) from None
    if now != (snap.dev, snap.ino):
        raise _replaced(path)
    _check_bytes(snap, old)


def _check_bytes(snap: Snapshot, old: int) -> None:
    """Refuse a file whose bytes read are no longer there (appends aside): shorter, or rewritten in place."""
    path = snap.path
    size = os.fstat(old).st_size
    if snap.whole and size != snap.size:
        raise FileChanged(f"changed since it was read ({snap.size} -> {size} bytes); nothing was written (run again)", path=path)
    if size < snap.size:
        raise FileChanged(f"shrank from {snap.size} to {size} bytes while ctxtool was rewriting it (another program "
                          "truncated or rewrote it); nothing was written (run again)", path=path)
    if _digest(old, snap.size, snap.whole) != snap.tail:
        raise FileChanged("was rewritten in place while ctxtool was rewriting it (the bytes read differ now); "
                          "nothing was written (run again)", path=path)


def _may_replace(st: os.stat_result, path: str) -> None:
    """Refuse (nothing written) to replace a file whose agent would not get it back as it had it: one with other names
    (hard links: they would keep the old content, and a writer using one of them would write to a file that is no
    longer the session), one of another user's (the new file would be this process's: the agent could no longer
    append to it; root can give it back) and a read-only one."""
    if st.st_nlink > 1:
        raise WriteError(f"has {st.st_nlink} names (hard links): a rewrite would leave the others with the old content; "
                         "nothing was written (remove the other links, or write elsewhere with -o)", path=path)
    euid = os.geteuid()
    if euid != 0 and st.st_uid != euid:
        raise WriteError(f"belongs to another user (uid {st.st_uid}, this process is uid {euid}): rewritten here, its "
                         "agent could no longer append to it; nothing was written (run ctxtool as that user)", path=path)
    if not st.st_mode & (0o222 if euid == 0 else 0o200):
        raise WriteError(f"is read-only (mode {st.st_mode & 0o7777:04o}): nothing was written (make it writable first, "
                         "or write elsewhere with -o)", path=path)


def _same_owner(out: int, st: os.stat_result, path: str) -> None:
    """The replacement has the owner and group of the file it replaces (``keep_owner`` tried), or nothing is written."""
    o = os.fstat(out)
    if o.st_uid != st.st_uid:
        raise WriteError(f"its owner (uid {st.st_uid}) cannot be kept by this process (uid {os.geteuid()}): nothing was "
                         "written (run ctxtool as that user, or as root)", path=path)
    if o.st_gid != st.st_gid:
        raise WriteError(f"its group (gid {st.st_gid}) cannot be kept by this process (uid {os.geteuid()}, not a member): "
                         "nothing was written (run ctxtool as a member of that group, or as root)", path=path)


def _copy_xattrs(old: int, out: int, path: str) -> None:
    """The old file's extended attributes on the replacement: a POSIX ACL (``system.posix_acl_access``) that lets the
    agent's user write the file among them. One that cannot be set, and that the new file does not have already with
    the same value, refuses the rewrite (nothing written)."""
    try:
        names = os.listxattr(old)
    except OSError:  # a file system without them
        return
    for name in names:
        try:
            value = os.getxattr(old, name)
        except OSError:
            continue
        try:
            os.setxattr(out, name, value)
        except OSError as e:
            try:
                same = os.getxattr(out, name) == value
            except OSError:
                same = False
            if not same:
                raise WriteError(f"its extended attribute {name} cannot be kept ({e.strerror or e}): "
                                 "nothing was written", path=path) from None


def _keep_old(old: int, path: str, *, copy: bool) -> str | None:
    """Link the old file (the inode ctxtool read) under a pending backup name; where hard links
    are not possible, copy it when a backup is wanted. Returns the pending name or None."""
    pending = temp_path(path, "bak")
    directory = os.open(os.path.dirname(path), os.O_RDONLY)
    try:  # linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd: exactly the inode read, whatever the path names now
        os.link(f"/proc/self/fd/{old}", pending, src_dir_fd=directory, follow_symlinks=True)
        return pending
    except OSError:
        pass
    finally:
        os.close(directory)
    try:
        os.link(path, pending)
        st = os.fstat(old)
        if identity(pending) == (st.st_dev, st.st_ino):
            return pending
        os.unlink(pending)
    except OSError:
        pass
    if not copy:
        return None
    out = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        st = os.fstat(old)
        size, offset = st.st_size, 0
        while offset < size:
            offset += os.sendfile(out, old, offset, size - offset) or size
        keep_owner(out, st)
        os.fchmod(out, st.st_mode & 0o7777)
        os.fsync(out)
    except OSError as e:
        discard(pending, out)
        raise WriteError(f"cannot write backup {pending}: {e.strerror or e}", path=path) from None
    os.close(out)
    return pending


def _watch(carry: _Carry, name: str, mine: tuple = (), noted: Callable[[], None] = lambda: None) -> list[dict]:
    """After the rename: carry what writers that opened the old file still write to it, until
    none has it open for writing (two looks in a row) or, without /proc, until it is quiet.
    ``mine``: this process's own descriptors of it, no other writer's (a second write putting late lines in place
    keeps the first new file open: review 2026-11-30, it waited the whole watch and named ctxtool's own pid).

    A live file (lines were appended since it was read) is watched at least ``LIVE_GRACE``
    after the last sign of a writer: an agent whose ``open`` of the path began before the
    rename is not yet a writer of the old file to the kernel, but will write there."""
    st = os.fstat(carry.old)
    start = last = time.monotonic()
    delay, clean = 0.001, 0
    size = max(carry.pos, os.fstat(carry.old).st_size)  # an unfinished line read at the end is no sign of a writer
    if carry.lines:
        carry.live = True
    while True:
        if carry.pull() or os.fstat(carry.old).st_size != size:
            noted()
            size = os.fstat(carry.old).st_size
            last, clean, carry.live = time.monotonic(), 0, True
        writers = writers_of(carry.old, st, name, mine)
        now = time.monotonic()
        grace = LIVE_GRACE if carry.live else 0
        if writers is None:
            if now - last >= max(SETTLE, grace):
                break
        elif not writers:
            clean += 1
            if clean >= 2 and now - last >= grace:
                break
        else:
            clean, last, carry.live = 0, now, True
        if now - start >= WATCH_MAX:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    if carry.pull():
        carry.live = True
    return writers or []


def _settle_backup(res: Committed, snap: Snapshot, carry: _Carry, pending: str | None, backup: bool,
                   keep: bool = False) -> None:
    """Name the pending backup (or remove it), and say what the new file does not have. ``keep``:
    the backup is needed (the new file has late lines out of order)."""
    end = os.fstat(carry.old).st_size
    if snap.whole:
        left = end != snap.size
    else:
        left = end > max(carry.pos, snap.size)  # bytes that arrived after the read and were not carried
    who = ", ".join(f"pid {w['pid']} ({w['name']})" for w in res.writers)
    # a live file (lines were appended while it was rewritten): a writer whose open began before the
    # rename and was held up longer than the watch may still write one line to the old file. It is
    # kept, and the next read reports such a line (``late_writes``)
    needed = backup or bool(res.writers) or left or keep
    _drop_note(pending)
    if pending is not None:
        if needed or carry.live:
            res.backup = backup_path(snap.path)
            os.rename(pending, res.backup)
            if not needed:
                res.notices.append(f"lines were appended while ctxtool rewrote the file: the replaced file is kept as "
                                   f"{res.backup} (a line an agent may still write there is reported by the next read)")
        else:
            os.unlink(pending)
    where = res.backup or "nowhere (no backup could be kept)"
    if snap.whole and left:
        res.notices.append(f"the file changed while it was being replaced; that change is only in {where}")
    elif left:
        res.notices.append(f"an unfinished line ({end - max(carry.pos, snap.size)} bytes, no newline yet) reached the "
                           f"old file after it was read; it is in {where}")
    if res.writers:
        res.notices.append(f"{who} still has the replaced file open for writing: what it writes from now on goes to "
                           f"{where}, not to the file (ctxtool repair/validate will report it)")
    if res.writers or (carry.live and not snap.whole):
        if res.backup:
            # with writers: what the new file has of the old one; live only: all the old file had when let go
            size = max(carry.pos, snap.size) if res.writers else end
            _write_record(res.backup + WRITERS, snap.path, size, res.writers)


def _note_pending(pending: str | None, snap: Snapshot, carry: _Carry) -> None:
    """Beside the pending backup, how far the new file has the old one's lines (``<pending>.writers``, kept up to date
    while the old file is watched): a run killed after the rename leaves it, and the next run, naming the backup,
    keeps it as the backup's record, so that ``late_writes`` reports the lines only the old file got (review
    2026-11-30: a late line lost, and nothing said)."""
    if pending is None or snap.whole or carry.noted == carry.kept_to:
        return
    _write_record(pending + WRITERS, snap.path, carry.kept_to, [])
    carry.noted = carry.kept_to


def _write_record(name: str, file: str, size: int, writers: list) -> None:
    """A backup's record (``<backup>.writers``, or a pending backup's): the file, how far it has the backup's lines,
    when, and who still held the backup open for writing."""
    with open(name, "w", encoding="utf-8") as f:
        json.dump({"file": file, "size": size, "at": _now_iso(), "writers": writers}, f)
    _listed(os.path.dirname(name), add=os.path.basename(name))


def _drop_note(pending: str | None) -> None:
    if pending is None:
        return
    try:
        os.unlink(pending + WRITERS)
    except OSError:
        return
    _listed(os.path.dirname(pending), drop=os.path.basename(pending) + WRITERS)


def _abandon(pending: str | None, snap: Snapshot, carry: _Carry) -> None:
    """An interrupted watch: the old file kept as the backup, with its record (best effort)."""
    if pending is None or not os.path.exists(pending):
        return
    try:
        _note_pending(pending, snap, carry)
        kept = backup_path(snap.path)
        os.rename(pending, kept)
        _move_note(pending, kept)
    except OSError:
        pass


def _move_note(pending: str, kept: str) -> bool:
    """A pending backup's record, as the record of the backup it became (``<backup>.writers``); False: none."""
    directory = os.path.dirname(kept)
    try:
        os.rename(pending + WRITERS, kept + WRITERS)
    except OSError:
        return False
    _listed(directory, drop=os.path.basename(pending) + WRITERS)
    _listed(directory, add=os.path.basename(kept) + WRITERS)
    return True


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


# ---------------------------------------------------------------- who still writes to the old file


def held_open(fd: int, st: os.stat_result, name: str, mine: tuple = ()) -> list[dict]:
    """The processes that keep the file open for writing: seen at each of ``HELD_LOOKS`` looks ``HELD_GAP`` apart (the
    first look, the kernel's lease, costs nothing when nobody writes). An agent that opens the file for each line is
    not one; Codex, which holds its rollout open for as long as it runs, is. ``mine``: this process's own descriptors
    of the file, not counted."""
    seen = None
    for k in range(HELD_LOOKS):
        if k:
            time.sleep(HELD_GAP)
        found = writers_of(fd, st, name, mine)
        if not found:  # nobody (or it cannot be told: None)
            return []
        keys = {(w["pid"], w["starttime"]): w for w in found}
        seen = keys if seen is None else {key: w for key, w in keys.items() if key in seen}
        if not seen:
            return []
    return list(seen.values())


def _held_error(holders: list[dict], path: str, waited: float | None = None) -> HeldOpen:
    who = ", ".join(f"pid {w['pid']} ({w['name']})" if w["pid"] else w["name"] for w in holders)
    since = f" (waited {waited:g} s)" if waited else ""
    return HeldOpen(f"{who} keeps the file open for writing{since}: a rewrite would lose what it writes next (an agent "
                    f"still running, as Codex holds its rollout); nothing was written. Stop it and run again",
                    path=path, holders=holders)


def _refuse_held(fd: int, st: os.stat_result, path: str, mine: tuple = ()) -> None:
    holders = held_open(fd, st, os.path.basename(path), mine)
    if holders:
        raise _held_error(holders, path)


def wait_unheld(path: str, timeout: float) -> None:
    """Before a rewrite: wait up to ``timeout`` seconds until no process keeps ``path`` open for writing (``held_open``);
    ``HeldOpen`` when one still does. A file that cannot be opened is left to the rewrite's read, which says why."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not S_ISREG(st.st_mode):
            return
        name = os.path.basename(os.path.realpath(path))  # (a link's target is what /proc names)
        start = time.monotonic()
        while True:
            holders = held_open(fd, st, name)
            if not holders:
                return
            waited = time.monotonic() - start
            if waited >= timeout:
                raise _held_error(holders, path, round(timeout, 2))
            time.sleep(min(0.1, max(0.0, timeout - waited)))
    finally:
        os.close(fd)


def writers_of(fd: int, st: os.stat_result, name: str, mine: tuple = ()) -> list[dict] | None:
    """Processes that have the file open for writing; None when that cannot be told.

    First the kernel's own answer, in O(1): a read lease (``F_SETLEASE``) is granted only when no
    process has the file open for writing. Only when there is one is /proc searched, to name it.
    ``mine``: descriptors of this process not counted (the lease then cannot tell another user's writer)."""
    lease = _lease_free(fd)
    if lease:
        return []
    found = open_writers(st.st_dev, st.st_ino, name, mine)
    if lease is False and not found and not mine:  # the kernel says someone writes; /proc does not show whom
        return [{"pid": 0, "name": "a process of another user", "starttime": None}]
    return found


def ignore_lease_breaks() -> None:
    """Ignore SIGIO, the signal the kernel sends a lease's holder when another process opens the file for writing:
    its default action ends the process, and an agent opening the file between ``_lease_free``'s two calls sent it
    (review 2026-11-30: ctxtool killed with no word, its lock and temporary file left). Only the main thread can set a
    handler: the CLI does at its start, this module again where it can."""
    import signal
    import threading

    sig = getattr(signal, "SIGIO", None)
    if sig is not None and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(sig) == signal.SIG_DFL:
        signal.signal(sig, signal.SIG_IGN)


def _lease_free(fd: int) -> bool | None:
    """True when no process has ``fd``'s file open for writing, False when one has, None when the
    filesystem or the process cannot take leases."""
    try:
        import fcntl

        ignore_lease_breaks()
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except (ImportError, AttributeError):
        return None
    except OSError as e:
        return False if e.errno == errno.EAGAIN else None
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    return True


def open_writers(dev: int, ino: int, name: str, mine: tuple = ()) -> list[dict] | None:
    """Processes that have the file (dev, ino) open for writing, from /proc (only this user's
    processes are visible); None when /proc cannot tell. ``name`` (the file's base name)
    narrows the search to descriptors whose path mentions it."""
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    if not pids:
        return None
    found = []
    me = str(os.getpid()) if mine else None
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for n in fds:
            if pid == me and int(n) in mine:
                continue
            try:
                if name not in os.readlink(f"{fd_dir}/{n}"):
                    continue
                st = os.stat(f"{fd_dir}/{n}")
                if (st.st_dev, st.st_ino) != (dev, ino):
                    continue
                with open(f"/proc/{pid}/fdinfo/{n}", "rb") as f:
                    flags = next(int(line.split()[1], 8) for line in f if line.startswith(b"flags:"))
            except (OSError, StopIteration, ValueError, IndexError):
                continue
            if flags & 3:  # O_WRONLY or O_RDWR
                found.append({"pid": int(pid), "name": _comm(pid), "starttime": process_starttime(int(pid))})
                break
    return found


def _comm(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


# ---------------------------------------------------------------- the next run


def clean_leftovers(path: str) -> list[str]:
    """Remove what an interrupted ctxtool run left beside ``path``; one notice per file.

    Only ctxtool's own names (``.<name>.ctxtool-<pid>-<ms>.tmp|bak``) of processes that are
    gone: a temp file is removed; a pending backup is removed when it still is the file (the
    rewrite never happened) and named ``<file>.bak-<pid>-<ms>`` when the file was replaced.
    ``<backup>.writers`` records whose writers are gone and whose backup did not grow go too."""
    real = os.path.realpath(path)
    directory, base = os.path.split(real)
    names = [n for n in _listed(directory) if n.startswith(("." + base + ".ctxtool-", "." + base + ".lock.ctxtool-",
                                                             base + ".bak-"))]
    try:
        current = identity(real)
    except InputError:
        current = None
    notices = []
    for name in names:
        full = os.path.join(directory, name)
        m = TEMP_NAME.match(name)
        if m is not None and m["name"] in (base, base + ".lock"):
            pid, ms = int(m["pid"]), int(m["ms"])
            if pid == os.getpid() or not pid_gone(pid, ms / 1000) or (m["name"] != base and m["kind"] != "tmp"):
                continue
            try:
                _listed(directory, drop=name)
                if m["kind"] == "tmp":
                    os.unlink(full)
                    notices.append(f"removed {full}, a temp file of an interrupted ctxtool run (pid {pid})")
                elif identity(full) == current:
                    os.unlink(full)
                    _drop_note(full)
                    notices.append(f"removed {full}, the backup link of an interrupted ctxtool run (pid {pid}) "
                                   "that never replaced the file")
                else:
                    kept = f"{real}.bak-{pid}-{ms}"
                    os.rename(full, kept)
                    if _move_note(full, kept):  # (how far the file has it: late_writes reports the rest)
                        _quiet_record(kept + WRITERS)  # (nothing came after: no record left)
                    notices.append(f"kept the file from before an interrupted ctxtool run (pid {pid}) as {kept}")
            except (OSError, InputError):
                continue
        elif name.endswith(".bak" + WRITERS) and not os.path.exists(full[:-len(WRITERS)]):
            m = TEMP_NAME.match(name[:-len(WRITERS)])  # a pending backup's record left without it (a kill between)
            if m is not None and int(m["pid"]) != os.getpid() and pid_gone(int(m["pid"]), int(m["ms"]) / 1000):
                _listed(directory, drop=name)
                try:
                    os.unlink(full)
                except OSError:
                    pass
        elif name.startswith(base + ".bak-") and name.endswith(WRITERS):
            _quiet_record(full)
    return notices


def _quiet_record(full: str) -> None:
    """A backup's record removed when its writers are gone and the backup got nothing after what the file has."""
    record = _writers_record(full)
    if record is None:
        return
    backup, data = record
    try:
        grown = os.stat(backup).st_size > data["size"]
    except OSError:
        grown = False
        data["writers"] = []
    if not grown and not _alive(data["writers"]):
        _listed(os.path.dirname(full), drop=os.path.basename(full))
        try:
            os.unlink(full)
        except OSError:
            pass


def late_writes(path: str) -> list[str]:
    """What the next read says about lines written to the old copy of ``path`` after ctxtool
    replaced it (a writer with a persistent handle; see ``<backup>.writers``)."""
    real = os.path.realpath(path)
    directory, base = os.path.split(real)
    names = [n for n in _listed(directory) if n.startswith(base + ".bak-") and n.endswith(WRITERS)]
    out = []
    for name in sorted(names):
        record = _writers_record(os.path.join(directory, name))
        if record is None:
            continue
        backup, data = record
        who = ", ".join(f"pid {w.get('pid')} ({w.get('name')})" for w in data["writers"]) or "a writer"
        try:
            with open(backup, "rb") as f:
                f.seek(data["size"])
                extra = f.read()
        except OSError:
            continue
        if extra:
            lines = extra.count(b"\n")
            out.append(f"{lines} line(s) ({len(extra)} bytes) were written to the old copy of this file by "
                       f"{who} after ctxtool replaced it ({data.get('at')}): they are only in {backup}")
        elif _alive(data["writers"]):
            out.append(f"{who} still has the old copy of this file open for writing since ctxtool replaced it "
                       f"({data.get('at')}): what it writes goes to {backup}, not to this file")
    return out


_listings: dict[str, tuple[float, set]] = {}


def _listed(directory: str, *, add: str | None = None, drop: str | None = None) -> set:
    """The names in ``directory`` that can be ctxtool's leftovers or writer records, listed at most
    every LISTING_TTL seconds; ``add``/``drop`` keep the list current for what this process does."""
    now = time.monotonic()
    entry = _listings.get(directory)
    if entry is None or now - entry[0] > LISTING_TTL:
        try:
            names = {n for n in os.listdir(directory) if ".ctxtool-" in n or n.endswith(WRITERS)}
        except OSError:
            names = set()
        entry = _listings[directory] = (now, names)
    if add:
        entry[1].add(add)
    if drop:
        entry[1].discard(drop)
    return set(entry[1])


def _writers_record(marker: str) -> tuple[str, dict] | None:
    try:
        with open(marker, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or not isinstance(data.get("size"), int):
            return None
    except (OSError, ValueError):
        return None
    if not isinstance(data.get("writers"), list):
        data["writers"] = []
    return marker[: -len(WRITERS)], data


def _alive(writers: list) -> bool:
    for w in writers:
        pid = w.get("pid") if isinstance(w, dict) else None
        if isinstance(pid, int) and process_starttime(pid) is not None and process_starttime(pid) == w.get("starttime"):
            return True
    return False
