"""Read a transcript file into a compact index of entries, in one streaming pass.

``scan`` parses each line once, normalizes it with the file's format and, unless
asked to keep them, drops the parsed object and blocks again: what stays is the
small ``Entry`` index (ids, links, roles, tool ids, usage, character counts).
``load`` re-reads one entry's original line by its offset when a command needs the
content again. Lines that cannot be used are listed with line, offset and reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from stat import S_ISDIR, S_ISREG
from typing import Callable

import orjson

from . import formats, parallel
from .errors import InputError, unexpected
from .formats.codex_numbers import exact_numbers
from .formats.common import set_extra
from .jsonl import BOM, loads, read_at
from .model import HEADER, Entry, Progress, full_entry, lean
from .paths import NOT_REGULAR
from .scanloop import CODEX, NOT_OBJECT, BadLine, hander, make_entry, meta_entry, native, native_entries, no_gc, scan_lines, share_strings

__all__ = ["BadLine", "Transcript", "make_entry", "no_gc", "scan"]


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
    # a lean index (scan's ``lean``): the progress lines it made no entry of (model.Progress), or None
    progress: object = None

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
        raw = self.raw(e, f)
        try:
            obj = loads(raw)
        except ValueError as err:
            raise InputError(f"{err}: the file changed while it was read", path=self.path, line=e.lineno) from None
        return exact_numbers(obj, raw) if self.fmt is CODEX else obj

    def reload(self, e: Entry, f=None) -> Entry:
        """``e`` with its object and blocks restored (a fresh normalization)."""
        if e.obj is not None and e.blocks is not None:
            return e
        obj = self.load(e, f)
        if e.extra is not None and e.extra.get("sub") is not None:  # an item inside the line (Codex)
            return self.fmt.reload_part(obj, e)
        fresh = make_entry(self.fmt, obj, e.index, e.lineno, e.offset, e.length, e.eol)
        return fresh


_NONTEXT = bytes(b for b in range(256) if b < 9 or 13 < b < 32 or b == 127)
COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
              (b"PK\x03\x04", "zip"))
PRETTY_CHECK_BYTES = 16 << 20  # a failed file this small is parsed whole to tell a pretty-printed JSON document


def _check_path(path: str) -> None:
    """A directory, a FIFO, socket or device (never opened: reading one may block forever), a compressed or binary file
    is refused here, each with its one-line reason; a path that cannot be looked at is left to the scan's open, which
    says why. One ``stat`` (a folder's run does this for each of thousands of files)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if S_ISDIR(mode):
        raise InputError("is a directory", path=path)
    if not S_ISREG(mode):
        raise InputError(NOT_REGULAR, path=path)
    _check_binary(path)


def _check_binary(path: str) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(8192)
    except OSError:
        return
    for magic, name in COMPRESSED:
        if head.startswith(magic):
            raise InputError(f"{name}-compressed file: decompress it first", path=path)
    c = native()
    nontext = c.nontext(head) if c is not None else len(head) - len(head.translate(None, _NONTEXT))
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
    lazy: bool | None = None,
    plain: bool = True,
    lean: bool = False,
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

    ``lazy`` (default: when nobody sees the parsed objects, i.e. no ``keep`` and no ``on_entry``)
    decodes only what the format reads (``scanloop``): the index is the same, but ``Entry.obj``
    then holds only those fields, and lines that need nothing more have none. ``profile``, whose
    ``on_entry`` reads no object, asks for it.

    ``plain=False``: ``on_entry`` reads nothing of a metadata entry with nothing set (``e._m is PLAIN``: most lines of
    a Claude Code file), so a streaming pass may leave such entries out (they are still numbered).

    ``lean=True``: a Claude Code file's progress lines (most of an older client's lines) get no entry, where the C part
    reads them: their offsets, uuids and parents are kept apart (``t.progress``, ``model.lean_progress(t.entries)``),
    all the client reads of them (``claude_chain.chain``). For a reader that writes nothing and reads no line by its
    place in ``t.entries`` but through the chain (``estimate``, ``validate``): repair, which writes every line, never.
    """
    _check_path(path)
    t = Transcript(path, None)
    indexing = keep_index and not keep and on_entry is None and on_format is None  # (an index, nobody handed a line)
    fast = indexing and lazy is not False  # the index's fast way: metadata lines' entries made in the loop (scanloop)
    if lean and fast:
        t.progress = Progress()
    pending: list[tuple[tuple, object]] = []
    module = formats.get(fmt) if fmt else None
    index = 0
    # build Anthropic-shaped blocks only for someone who reads them (an on_entry that only
    # needs the parsed object or the counts passes blocks=False)
    want_blocks = keep or (on_entry is not None if blocks is None else blocks)
    shared: dict[str, str] = {}
    # a streaming pass (an on_entry that keeps what it needs, reading no object or block) is split too
    streaming = on_entry is not None and not keep_index and not keep and not want_blocks and lazy is not False
    # what a streaming pass's consumer keeps (profile: a record per message) lives on as an index does: out of the
    # collector's reach too, or its first collection walks it all (pi, 500 MB: ~35 ms of profile's 0.6 s)
    freeze = keep_index or streaming
    if indexing or streaming:
        split = parallel.split(path, workers, parallel.MIN_BYTES if split_min_bytes is None else split_min_bytes,
                               module, streaming, lazy is not False)
        if split is not None:
            with no_gc(freeze=freeze):
                parallel.scan(t, path, split[0], split[1], shared, stats, lazy is not False,
                              on_entry=on_entry if streaming else None, on_format=on_format if streaming else None,
                              plain=plain)
            _mark_value_leaf(t)
            _kept_apart(t)
            return t

    announce = on_format
    into = None
    append = t.entries.append
    # the C part's maker of released entries for the format (native_entries), when nobody reads an entry's
    # object or blocks; looked up at the first entry (the format is known then)
    made = False
    table = shared if keep_index else None

    def emit(where: tuple, obj) -> None:
        nonlocal index, announce, made
        if announce is not None:
            announce(t.fmt)
            announce = None
        no, offset, length, eol = where
        if not isinstance(obj, dict):
            t.bad.append(BadLine(no, offset, length, NOT_OBJECT))
            return
        if into is not None:  # the loop appends entries too
            n = len(into)
            if index != n:  # (equal: keep the object, the previous line number's)
                index = n
        if made is False:
            made = native_entries(t.fmt) if not want_blocks and not keep and (on_entry is None or streaming) else None
        e = None if made is None else made(obj, index, no, offset, length, eol, stats, table)
        if e is None:
            e = full_entry(index, no, offset, length, eol, obj)  # make_entry, inline
            try:
                t.fmt.normalize(obj, e, want_blocks, stats)
            except Exception as exc:  # a bug met on this line: one error naming it (the caller adds the file)
                raise unexpected(exc, line=no or None) from None
            if keep_index:
                share_strings(e, shared)
        index = no if no == index + 1 else index + 1  # one int object for this line number and the next index
        if on_entry is not None:
            if streaming:  # it reads no object: handed none, as the C part's entries and a helper's come
                e.obj = e.blocks = None
            on_entry(e)
        if not keep:
            e.obj = e.blocks = None  # e.release()
        if keep_index:
            append(e)

    on_meta = on_taken = None
    if fast:
        into = t.entries
    elif lazy or (lazy is None and not keep and on_entry is None):
        entries = t.entries
        hand = hander()  # (each entry numbered, and handed to on_entry as plain says)

        def meta(no, offset, length, eol, ty, u, p, ts) -> None:
            nonlocal index, announce
            if announce is not None:
                announce(t.fmt)
                announce = None
            e = meta_entry(index, no, offset, length, eol, ty, u, p, ts, table)
            index = no if no == index + 1 else index + 1
            if on_entry is not None:
                hand([e], None, on_entry, plain)
            if keep_index:
                entries.append(e)

        on_meta = meta
        if streaming:  # a streaming pass (it reads no object nor block): the C part's entries too

            def _taken(es) -> None:
                nonlocal index, announce
                if announce is not None:
                    announce(t.fmt)
                    announce = None
                index += hand(es, index, on_entry, plain)

            on_taken = _taken
    with no_gc(freeze=freeze):
        try:
            scan_lines(t, path, pending, module, emit, meta=on_meta, into=into, shared=shared, taken=on_taken,
                       stats=stats)
        except InputError:  # FormatError too: say what the file is when it is a known other thing
            if not t.entries and _pretty_json(path):
                raise InputError("a pretty-printed JSON document, not JSONL (one JSON object per line); "
                                 "convert it first, e.g. with jq -c", path=path) from None
            raise
    if len(t.bad) > 1:  # non-object lines read before the format was known are reported late: line order, as a parallel scan
        t.bad.sort(key=_lineno)
    _mark_value_leaf(t)
    _kept_apart(t)
    return t


def _kept_apart(t: "Transcript") -> None:
    """A lean index whose progress lines went apart: told to ``lean_progress`` (for as long as ``t`` lives); one that
    kept them all as entries is an index as any other."""
    if t.progress is not None:
        if len(t.progress):
            lean(t.entries, t.progress, t)
        else:
            t.progress = None


def _lineno(b: "BadLine") -> int:
    return b.lineno


def _mark_value_leaf(t: "Transcript") -> None:
    """pi keeps every line JSON.parse reads, objects or not: when the last of them is a number, a string, an array or
    true, pi resumes at it (it has no id), finds no message on its way and sends none (judged). The index has no entry
    for such a line (a bad line, which repair drops); the last entry before it is marked (``value_after``: the line's
    number), and ``view.pi_path`` gives an empty path from it. Lines JSON.parse refuses (torn, control bytes) and blank
    ones, which pi skips, do not count."""
    if not t.bad or not t.entries or getattr(t.fmt, "NAME", None) != "pi":
        return
    last = t.entries[-1].lineno
    value = None
    for b in reversed(t.bad):
        if b.lineno < last:
            break
        if b.reason == NOT_OBJECT:
            value = b
            break
    if value is None:
        return
    leaf = next((e for e in reversed(t.entries) if e.kind != HEADER), None)
    if leaf is not None:
        set_extra(leaf, {"value_after": value.lineno})


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
