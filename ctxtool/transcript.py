"""Read a transcript file into a compact index of entries, in one streaming pass.

``scan`` parses each line once, normalizes it with the file's format and, unless
asked to keep them, drops the parsed object and blocks again: what stays is the
small ``Entry`` index (ids, links, roles, tool ids, usage, character counts).
``load`` re-reads one entry's original line by its offset when a command needs the
content again. Lines that cannot be used are listed with line, offset and reason.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import orjson

from . import formats, parallel
from .errors import InputError, unexpected
from .jsonl import BOM, Line, loads, open_binary, parse, read_at
from .model import Entry
from .paths import NOT_REGULAR, regular


@dataclass(slots=True)
class BadLine:
    lineno: int
    offset: int
    length: int
    reason: str
    blank: bool = False


@dataclass
class Transcript:
    path: str
    fmt: object  # the format module
    entries: list[Entry] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    bom: bool = False
    crlf: int = 0
    lf: int = 0
    size: int = 0
    lines: int = 0
    last_eol: bytes = b"\n"
    parts: int = 1  # how many processes scanned it (see parallel.py)

    @property
    def format_name(self) -> str:
        return self.fmt.NAME

    @property
    def eol(self) -> bytes:
        """The file's dominant line ending, used for lines ctxtool writes."""
        return b"\r\n" if self.crlf > self.lf else b"\n"

    def raw(self, e: Entry, f=None) -> bytes:
        return read_at(self.path, e.offset, e.length, f)

    def raw_line(self, b: BadLine) -> bytes:
        return read_at(self.path, b.offset, b.length)

    def load(self, e: Entry, f=None) -> dict:
        """The parsed object of ``e`` (re-read from disk when it was released)."""
        if e.obj is not None:
            return e.obj
        try:
            return loads(self.raw(e, f))
        except ValueError as err:
            raise InputError(f"{err}: the file changed while it was read", path=self.path, line=e.lineno) from None

    def reload(self, e: Entry, f=None) -> Entry:
        """``e`` with its object and blocks restored (a fresh normalization)."""
        if e.obj is not None and e.blocks is not None:
            return e
        obj = self.load(e, f)
        if e.extra is not None and e.extra.get("sub") is not None:  # an item inside the line (Codex)
            return self.fmt.reload_part(obj, e)
        fresh = make_entry(self.fmt, obj, e.index, e.lineno, e.offset, e.length, e.eol)
        return fresh


def make_entry(fmt, obj, index: int, lineno: int, offset: int, length: int, eol: bytes, blocks: bool = True,
               stats: bool = True) -> Entry:
    e = Entry(index, lineno, offset, length, eol, "meta", "?")
    e.obj = obj
    try:
        fmt.normalize(obj, e, blocks, stats)
    except Exception as exc:  # a bug met on this line: one error naming it (the caller adds the file)
        raise unexpected(exc, line=lineno or None) from None
    return e


COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
              (b"PK\x03\x04", "zip"))
PRETTY_CHECK_BYTES = 16 << 20  # a failed file this small is parsed whole to tell a pretty-printed JSON document


def _check_binary(path: str) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(8192)
    except OSError:
        return
    for magic, name in COMPRESSED:
        if head.startswith(magic):
            raise InputError(f"{name}-compressed file: decompress it first", path=path)
    nontext = sum(1 for b in head if b < 9 or 13 < b < 32 or b == 127)
    if head and nontext > len(head) * 0.3:
        raise InputError("binary file, not a JSONL transcript", path=path)


def scan(
    path: str,
    fmt: str | None = None,
    *,
    keep: bool = False,
    on_entry: Callable[[Entry], None] | None = None,
    keep_index: bool = True,
    blocks: bool | None = None,
    on_format: Callable[[object], None] | None = None,
    workers: int | None = None,
    split_min_bytes: int | None = None,
    stats: bool = True,
) -> Transcript:
    """Index ``path``. ``on_entry`` sees each entry with its object and blocks before they are released.

    ``on_format(module)`` is told the format (forced or detected) before the first entry.

    ``blocks=False`` tells the scan that ``on_entry`` does not read ``Entry.blocks``.
    ``stats=False`` leaves character counts and usage of message content at zero: the
    structure (ids, links, roles, tool ids and names, emptiness) is all repair needs.
    ``keep_index=False`` keeps no entries at all (``t.entries`` stays empty): a pure streaming pass
    for consumers that aggregate in ``on_entry`` (the index of a 500 MB session is ~150 MB).

    A large file indexed without callbacks is split at line boundaries and the later parts are
    scanned by ``workers`` helper processes at the same time (default: one per CPU, at most 4;
    ``CTXTOOL_SCAN_WORKERS=1`` turns this off). The index is the same either way.
    """
    if os.path.isdir(path):
        raise InputError("is a directory", path=path)
    if os.path.exists(path) and not regular(path):  # a FIFO with no writer would block the read forever
        raise InputError(NOT_REGULAR, path=path)
    _check_binary(path)
    t = Transcript(path, None)
    pending: list[tuple[Line, object]] = []
    module = formats.get(fmt) if fmt else None
    index = 0
    # build Anthropic-shaped blocks only for someone who reads them (an on_entry that only
    # needs the parsed object or the counts passes blocks=False)
    want_blocks = keep or (on_entry is not None if blocks is None else blocks)
    shared: dict[str, str] = {}
    if keep_index and not keep and on_entry is None and on_format is None:
        split = parallel.plan(path, workers, parallel.MIN_BYTES if split_min_bytes is None else split_min_bytes)
        if split is not None:
            with no_gc():
                done = parallel.scan(t, path, module, split, shared, stats)
            if done:
                return t

    announce = on_format

    def emit(where: tuple, obj) -> None:
        nonlocal index, announce
        if announce is not None:
            announce(t.fmt)
            announce = None
        no, offset, length, eol = where
        if not isinstance(obj, dict):
            t.bad.append(BadLine(no, offset, length, "not a JSON object"))
            return
        e = make_entry(t.fmt, obj, index, no, offset, length, eol, want_blocks, stats)
        if keep_index:
            _share_strings(e, shared)
        index += 1
        if on_entry is not None:
            on_entry(e)
        if not keep:
            e.release()
        if keep_index:
            t.entries.append(e)

    with no_gc():
        try:
            _scan_lines(t, path, pending, module, emit)
        except InputError:  # FormatError too: say what the file is when it is a known other thing
            if not t.entries and _pretty_json(path):
                raise InputError("a pretty-printed JSON document, not JSONL (one JSON object per line); "
                                 "convert it first, e.g. with jq -c", path=path) from None
            raise
    if len(t.bad) > 1:  # non-object lines read before the format was known are reported late: line order, as a parallel scan
        t.bad.sort(key=_lineno)
    return t


def _pretty_json(path: str) -> bool:
    """A file that is one JSON document spread over lines (``json.dump(..., indent=2)``), not JSONL:
    its first line opens an object or array it does not close, and the whole file parses (a large
    one: its next line is indented, as pretty-printers write)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
            if head.startswith(BOM):
                head = head[3:]
            text = head.lstrip()
            first, _, rest = text.partition(b"\n")
            if first[:1] not in (b"{", b"[") or not rest.strip():
                return False
            try:
                orjson.loads(first)
                return False  # a whole value on its first line: JSONL (its problem is another one)
            except orjson.JSONDecodeError:
                pass
            size = os.fstat(f.fileno()).st_size
            if size > PRETTY_CHECK_BYTES:
                return first.strip() in (b"{", b"[") and rest[:1] in (b" ", b"\t")
            f.seek(0)
            orjson.loads(f.read().removeprefix(BOM))
            return True
    except (OSError, orjson.JSONDecodeError):
        return False


def _lineno(b: "BadLine") -> int:
    return b.lineno


def _share_strings(e: Entry, shared: dict) -> None:
    """One string object per distinct value across the index: a parent link is the same
    object as its parent's id, a result id the same as its call's, and "message",
    roles, models and tool names are stored once. Saves about a third of the index."""
    get = shared.setdefault
    e.type = get(e.type, e.type)
    if e.id is not None:
        e.id = get(e.id, e.id)
    if e.parent is not None:
        e.parent = get(e.parent, e.parent)
    if e.role is not None:
        e.role = get(e.role, e.role)
    if e.stop is not None:
        e.stop = get(e.stop, e.stop)
    if e.model is not None:
        e.model = get(e.model, e.model)
    for c in e.calls:
        c.id = get(c.id, c.id)
        c.name = get(c.name, c.name)
    for r in e.results:
        r.id = get(r.id, r.id)
        if r.name is not None:
            r.name = get(r.name, r.name)
    if e.tool_chars:
        e.tool_chars = {get(k, k): v for k, v in e.tool_chars.items()}


@contextmanager
def no_gc():
    """Pause the cyclic garbage collector: the entry index is acyclic, and the collector
    would only re-walk it again and again while it grows (~15% of a scan). Reference
    counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _scan_lines(t: Transcript, path: str, pending: list, module, emit, begin: int = 0, end: int | None = None) -> None:
    """The hot loop: one orjson parse per line and no per-line objects unless the line is bad
    (orjson accepts the trailing newline as whitespace, so lines are never copied).

    ``begin``/``end`` (line boundaries) limit it to part of the file; line numbers then count
    from the part's first line."""
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    offset = begin
    no = lf = crlf = 0
    eol = b"\n"
    with open_binary(path) as f:
        if begin:
            f.seek(begin)
        for chunk in f:
            if end is not None and offset >= end:
                break
            no += 1
            start = offset
            offset += len(chunk)
            if no == 1 and not begin and chunk.startswith(BOM):
                chunk = chunk[3:]
                start += 3
                t.bom = True
            if chunk.endswith(b"\n"):
                if chunk.endswith(b"\r\n"):
                    eol = b"\r\n"
                    crlf += 1
                else:
                    eol = b"\n"
                    lf += 1
            else:
                eol = b""
            try:
                obj = loads(chunk)
            except decode_error:
                obj, reason = parse(Line(no, start, chunk, eol))
                if reason is not None:
                    t.bad.append(BadLine(no, start, len(chunk) - len(eol), reason, blank=reason == "blank line"))
                    continue
            where = (no, start, len(chunk) - len(eol), eol)
            if t.fmt is None:
                pending.append((where, obj))
                if len(pending) < formats.SNIFF_LINES:
                    continue
                t.fmt = formats.detect([o for _, o in pending], path=path, forced=module)
                for w, o in pending:
                    emit(w, o)
                pending.clear()
                continue
            emit(where, obj)
    t.lines, t.size, t.lf, t.crlf = no, offset - begin, lf, crlf
    if no:
        t.last_eol = eol
    if t.fmt is None:
        if not pending:
            if t.lines and all(b.blank for b in t.bad):
                raise InputError("empty session file", path=path)
            if t.lines == 0:
                raise InputError("empty session file", path=path)
            first = t.bad[0]
            raise InputError(f"no parseable JSON lines, not a session transcript (first: {first.reason})", path=path, line=first.lineno)
        t.fmt = formats.detect([o for _, o in pending], path=path, forced=module)
        for ln, o in pending:
            emit(ln, o)
