"""The scan's hot loop and its entry builder, shared by the serial scan (``transcript.py``) and the
helper processes of the parallel scan (``parallel.py``): ``transcript`` imports ``parallel``, both
import this module, and this module imports neither.

``scan_lines`` parses each line once and hands it on; lines that cannot be used become
``BadLine``s. A format may declare which fields its ``normalize`` reads (``READS``, ``NESTED``,
``FULL_TYPES``, see ``formats/claude.py``): then, when nobody needs the parsed objects afterwards
(``lazy``), a line of a type outside ``FULL_TYPES`` (a progress, snapshot, queue or api-request
line) becomes its entry from type, uuid, parent and timestamp alone, made in the loop; and where
such lines carry the bytes, lines are decoded selectively by msgspec (optional; chosen per window
of lines, see ``scan_lines``): only those fields are built. Whatever msgspec
refuses goes the full way, and so does a line that is not valid UTF-8 (msgspec does not check the
strings it skips): msgspec then accepts no line that orjson and the strict fallback both refuse
(``tests/test_lazy_decoding.py``), so the index is the same either way.
"""

from __future__ import annotations

import gc
import os
from bisect import insort
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import orjson

from . import formats
from .errors import InputError, unexpected
from .formats.codex_numbers import exact_numbers
from .formats.common import parse_ts
from .jsonl import BOM, Line, open_binary, parse
from .jsonl import loads as loads_line
from .model import (BOUNDARY, COMPACTION, EMPTY, IMAGE_CHARS, MESSAGE, META, PLAIN, Call, Entry, FullEntry, Kinds, Result, Usage, _More,
                    full_entry, small_entry, parent_of)

CODEX = formats.get("codex")
ENV_LAZY = "CTXTOOL_LAZY_DECODE"  # "0": always parse whole lines with orjson (the Claude Code metadata lines too)
# "0": every line read in Python even where the C part (ctxtool._scan) is built: the reference the tests compare with
ENV_NATIVE = "CTXTOOL_NATIVE"
# "0": the C part leaves the lines of a Claude Code file that normalize reads whole (attachments, prompts, responses,
# system lines, checkpoints) to Python, and takes only the metadata lines: for A/B measures
ENV_NATIVE_MESSAGES = "CTXTOOL_NATIVE_MESSAGES"

NOT_OBJECT = "not a JSON object"  # a bad line's reason: JSON, but a number, a string, an array, true, false or null


@dataclass(slots=True)
class BadLine:
    lineno: int
    offset: int
    length: int
    reason: str
    blank: bool = False


class Part:
    """What ``scan_lines`` fills in: the format, bad lines and line/ending counts of the lines it read
    (a ``Transcript``, or a part of one in a helper process)."""

    def __init__(self, path: str, fmt=None):
        self.path = path
        self.fmt = fmt
        self.bad: list[BadLine] = []
        self.bom = False
        self.crlf = self.lf = self.size = self.lines = 0
        self.last_eol = b"\n"
        self.progress = None  # a lean index's progress lines (model.Progress), made no entry of


def make_entry(fmt, obj, index: int, lineno: int, offset: int, length: int, eol: bytes, blocks: bool = True,
               stats: bool = True) -> Entry:
    e = full_entry(index, lineno, offset, length, eol, obj)
    try:
        fmt.normalize(obj, e, blocks, stats)
    except Exception as exc:  # a bug met on this line: one error naming it (the caller adds the file)
        raise unexpected(exc, line=lineno or None) from None
    return e


def released_entry(fmt, made, obj, index: int, lineno: int, offset: int, length: int, eol: bytes, stats: bool,
                   shared: dict | None) -> Entry:
    """A line's entry without its object or blocks, its strings shared through ``shared`` (None: no table): made by
    the C part (``made``, from ``native_entries``) where it is sure of the line, else in Python (``make_entry``)."""
    e = None if made is None else made(obj, index, lineno, offset, length, eol, stats, shared)
    if e is None:
        e = make_entry(fmt, obj, index, lineno, offset, length, eol, False, stats)
        if shared is not None:
            share_strings(e, shared)
        e.release()
    return e


def meta_entry(index: int, lineno: int, offset: int, length: int, eol: bytes, t, u, p, ts, shared: dict | None) -> Entry:
    """The entry ``normalize`` makes of a line it reads only type, uuid, parent and timestamp of."""
    t = t if type(t) is str else "?"
    u = u if type(u) is str else None
    p = p if type(p) is str else parent_of(p)
    if shared is not None:
        get = shared.setdefault
        t = get(t, t)
        if u is not None:
            u = get(u, u)
        if p is not None:
            p = get(p, p)
    return small_entry(index, lineno, offset, length, eol, META, t, u, p, parse_ts(ts))


def share_strings(e: Entry, shared: dict) -> None:
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
def no_gc(freeze: bool = False):
    """Pause the cyclic garbage collector: the entry index is acyclic, and the collector
    would only re-walk it again and again while it grows (~15% of a scan). Reference
    counting still frees everything. ``freeze``: the objects made meanwhile (an index that
    lives on) are moved out of the collector's reach before it resumes (``gc.freeze``), so
    its first collection does not walk the whole index (~0.1 s at 500 MB)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()


# ----------------------------------------------------------------------------- selective decoding

_DECODERS: dict = {}
MODES = ("1", "msgspec", "orjson")  # CTXTOOL_LAZY_DECODE: adaptive (default), always msgspec, never msgspec
WINDOW = 2048  # lines between two choices of the decoder (adaptive mode)
# lines before the first choice: short, so that a file of a few thousand lines (most sessions in a folder)
# is not read whole by orjson when its metadata lines carry the bytes; a wrong first choice costs at most
# one window (the choice is made again every WINDOW lines)
FIRST_WINDOW = 64
META_SHARE = 4  # msgspec is chosen while at least 1/META_SHARE of the window's bytes were metadata lines


def decoder(fmt):
    """``(mode, full_types)`` for the format's selective decoding, or None (a format that declares
    nothing, or ``CTXTOOL_LAZY_DECODE=0``). Metadata lines become entries in the loop whichever
    decoder read them; ``msgspec_parts`` gives msgspec's decoder, imported only when chosen."""
    mode = os.environ.get(ENV_LAZY, "1")
    if fmt is None or getattr(fmt, "READS", None) is None or mode not in MODES:
        return None
    return mode, fmt.FULL_TYPES


def msgspec_parts(fmt):
    """``(decode, to_dict, refused)`` for the format (built once), or None without msgspec."""
    if fmt.NAME not in _DECODERS:
        _DECODERS[fmt.NAME] = _build(fmt)
    return _DECODERS[fmt.NAME]


def _build(fmt):
    try:
        import msgspec
    except ImportError:
        return None
    from typing import Any

    unset = msgspec.UNSET
    fields = []
    nested = {}
    for key in fmt.READS:
        sub = fmt.NESTED.get(key)
        if sub is None:
            fields.append((key, Any, unset))
        else:  # an object of which only these keys are read: the rest is skipped, not built
            inner = msgspec.defstruct(f"_{key}", [(k, Any, unset) for k in sub])
            nested[key] = sub
            fields.append((key, inner, unset))
    head = msgspec.defstruct(f"_{fmt.NAME}_head", fields)
    decode = msgspec.json.Decoder(head).decode
    keys = tuple(fmt.READS)
    astuple = msgspec.structs.astuple

    def to_dict(h) -> dict:
        out = {}
        for k, v in zip(keys, astuple(h)):
            if v is not unset:
                sub = nested.get(k)
                if sub is not None:
                    v = {s: x for s, x in zip(sub, astuple(v)) if x is not unset}
                out[k] = v
        return out

    # RecursionError: msgspec stops at ~1,000 levels of nesting, orjson at ~1,024: such a line goes the
    # whole way (orjson, then the strict fallback), as it would without msgspec
    return decode, to_dict, (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)


def rust_refuses(fmt, obj, raw: bytes = b"") -> str | None:
    """Why Codex cannot read a line that JavaScript's JSON.parse (and Python's) accepts and orjson
    refused: bytes that are not UTF-8 (Node reads them as U+FFFD) or a lone UTF-16 surrogate escape,
    which Codex's reader and parser (serde_json) reject, so that it skips the whole line when it
    resumes (judged). None for every other format and line (a line of unknown format counts as
    Codex's when it has the shape of one)."""
    if fmt is None:
        if type(obj) is not dict or not formats.get("codex").sniff(obj):
            return None
    elif fmt.NAME != "codex":
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 (byte {e.start + 1} of the line): Codex cannot read the line (it skips it)"
    depth, lone = _nesting_and_surrogates(obj)
    if depth >= CODEX_DEPTH:
        return f"nested {depth:,} levels deep: Codex cannot read the line (serde_json stops at {CODEX_DEPTH}; it skips it)"
    return "lone UTF-16 surrogate escape: Codex cannot read the line (it skips it)" if lone else None


CODEX_DEPTH = 128  # serde_json's recursion limit: a line nested this deep is refused (judged: 127 read)


def _nesting_and_surrogates(v) -> tuple[int, bool]:
    """How deep ``v``'s containers nest, and whether a string in it holds a lone surrogate (a valid pair
    is one character by now). Without recursion: the value may nest thousands of levels."""
    most, lone = 0, False
    stack = [(v, 0)]
    while stack:
        x, d = stack.pop()
        t = type(x)
        if t is str:
            if not lone and not x.isascii() and any("\ud800" <= c <= "\udfff" for c in x):
                lone = True
        elif t is dict or t is list:
            d += 1
            if d > most:
                most = d
            if t is dict:
                for k, y in x.items():
                    stack.append((k, d))
                    stack.append((y, d))
            else:
                stack.extend((y, d) for y in x)
    return most, lone


def native():
    """The C part (``ctxtool/_scan.c``), or None where it is not built (no compiler at install) or
    ``CTXTOOL_NATIVE=0``: its ``Reader`` gives the lines of a file as ``for chunk in f`` does, and
    once given a ``Meta`` (``meta_reader``) it makes the entries of the metadata lines it is sure of
    itself, as the loop below makes them, and gives out only the others."""
    if os.environ.get(ENV_NATIVE, "1") == "0":
        return None
    if not _NATIVE:  # (imported once: the import statement cost each call, ~7 a file, a microsecond)
        try:
            from . import _scan
        except ImportError:
            _scan = None
        _NATIVE.append(_scan)
    return _NATIVE[0]


_NATIVE: list = []


_MADE: dict = {}


def native_made(name: str, make):
    """An object of the C part made once, ``make(module)``, or None where the part is not built or is turned
    off (``native`` is asked each time: ``CTXTOOL_NATIVE=0`` in a test takes effect at once)."""
    c = native()
    if c is None:
        return None
    obj = _MADE.get(name)
    if obj is None:
        obj = _MADE[name] = make(c)
    return obj


def index_passes():
    """The C part's passes over the whole index (``_scan.Rows``: ``claude_chain.main_entries``, the chain's
    first loop, repair's links check and the entries its hygiene looks at, estimate's facts, the entries it sends
    and its heuristic tally; each a loop over every entry that reads a slot or two), or None (not built, or
    ``CTXTOOL_NATIVE=0``)."""
    return native_made("passes", lambda c: c.Rows(Entry, FullEntry, _More, PLAIN, BOUNDARY, MESSAGE, META, COMPACTION,
                                                   Call, Kinds, Result))


def hander():
    """``hand(es, start, on_entry, plain) -> len(es)``: a streaming pass's entries (a list) numbered from ``start``
    (None: left as they are) and handed to ``on_entry`` in order; a metadata entry with nothing set (``e._m is PLAIN``)
    is left out when ``plain`` is false. The C part's loop (``_scan.Rows.hand``) where it is built."""
    passes = index_passes()
    return _hand if passes is None else passes.hand


def _hand(es: list, start: int | None, on_entry, plain: bool) -> int:
    for k, e in enumerate(es):
        if start is not None:
            e.index = start + k
        if plain or e._m is not PLAIN or e.kind != META:
            on_entry(e)
    return len(es)


def native_entries(fmt):
    """The C part's maker of a format's released entries, ``entry(obj, index, lineno, offset, length, eol, stats,
    shared) -> Entry | None``, for a scan that reads no blocks, or None (no such part for the format, not built,
    or turned off). It makes what ``make_entry(fmt, obj, ..., blocks=False, stats)``, then ``share_strings``
    (with ``shared``; None: no table) and ``release()`` make, and declines (None) every line it is not sure of:
    the caller then makes that entry in Python. Codex rollouts and pi sessions (``_scan.Whole``,
    ``ctxtool/_scan_codex.c`` and ``ctxtool/_scan_pi.c``)."""
    name = getattr(fmt, "NAME", None)
    if name not in WHOLE_FORMATS:
        return None
    made = native_made(name, lambda c: c.Whole(FullEntry, Call, Result, Kinds, Usage, EMPTY, META, MESSAGE,
                                               pi=_pi_parts(name)))
    return None if made is None else made.entry


# the formats whose lines the C part's Whole parses and normalizes (``native_entries``)
WHOLE_FORMATS = ("codex", "pi")


def _pi_parts(name: str) -> dict | None:
    """``Whole``'s ``pi`` argument for a pi session (None for a Codex rollout): what its blocks are read with."""
    return _block_parts() if name == "pi" else None


def _block_parts() -> dict:
    """What the C part reads a message's blocks with (``blocks_facts``): the classes of what it makes, and the Python it
    calls for a tool call's arguments and problem (``formats.common``), as ``scan_anthropic_blocks`` does."""
    from .formats.common import args_chars, call_problem

    return {"call": Call, "result": Result, "usage": Usage, "args_chars": args_chars, "call_problem": call_problem,
            "loads": orjson.loads, "dumps": orjson.dumps, "stop_map": {}, "interrupts": (), "image_chars": IMAGE_CHARS}


def _taker(c, fmt, into, shared, sizes, taken, tuples=False, stats=True, progress=None):
    """The C part's ``Meta`` for this scan, and the list it fills for a streaming pass (``taken``), or None.
    ``progress``: a lean index's (``meta_reader``), the index's or a helper's part's."""
    if into is not None:
        return meta_reader(c, fmt, into, shared, sizes, stats=stats, progress=progress), None
    took: list = []
    if tuples:
        return meta_reader(c, fmt, took, shared, sizes, tuples=True, stats=stats, progress=progress), took
    return meta_reader(c, fmt, took, None, sizes, stats=stats), took  # no string table: a streaming pass keeps nothing


# the entries a streaming pass or a helper's part is handed at most at once from the C part's Codex: it gives the
# next line out then, so that what it took is handed on (a streaming pass keeps nothing, a helper sends frames)
TAKEN_AT_MOST = 1024


def _whole_taker(c, fmt, into, shared, taken, tuples, stats, sizes=None):
    """The C part's ``Whole`` that takes a rollout's or pi session's lines for this scan (``native_entries``), and the
    list it fills for a streaming pass or a helper's part (``taken``), or None: into ``into``, strings shared through
    ``shared``; else entries with no string table (streaming), or their tuples, strings shared (``tuples``: a helper's
    part). ``sizes``: the scan's table of line lengths, one int object per value (the index's entries only)."""
    took: list | None = None
    if into is None:
        into = took = []
        if not tuples:
            shared = None
    return c.Whole(FullEntry, Call, Result, Kinds, Usage, EMPTY, META, MESSAGE, into=into,
                   shared=shared, loads=orjson.loads,
                   tuples=tuples, eol=b"\n", stats=stats,
                   cap=0 if took is None else TAKEN_AT_MOST, sizes=sizes if took is None else None,
                   pi=_pi_parts(fmt.NAME)), took


def takes_messages(fmt) -> bool:
    """Whether the C part's ``Meta`` takes a file's message lines too (Claude Code's, ``meta_reader``), not only its
    metadata lines: then the few lines it declines are parsed by orjson, never by msgspec (``scan_lines``)."""
    return getattr(fmt, "NAME", None) == "claude" and os.environ.get(ENV_NATIVE_MESSAGES, "1") != "0"


def meta_reader(c, fmt, into: list, shared: dict | None, sizes: dict, tuples: bool = False, stats: bool = True,
                progress=None):
    """The C part's ``Meta``: it takes the metadata lines it is sure of, and of a Claude Code file the lines ``normalize``
    reads whole that it is sure of (attachments, prompts, responses, system lines, checkpoints: a FullEntry each, made
    with ``stats`` as ``normalize``, ``share_strings`` and ``release()`` make it; ``ctxtool/_scan_claude.c``).
    ``progress`` (a ``model.Progress``, Claude Code): a lean index, whose progress lines it makes no entry of."""
    if takes_messages(fmt):
        return c.Meta(into, shared, sizes, tuple(fmt.FULL_TYPES), parse_ts, META, Entry, PLAIN, tuples, stats=stats,
                      claude=_claude_parts(fmt), progress=progress)
    return c.Meta(into, shared, sizes, tuple(fmt.FULL_TYPES), parse_ts, META, Entry, PLAIN, tuples)


def _claude_parts(fmt) -> dict:
    """What the C part reads Claude Code's prompts and responses with: the classes of what it makes, and the Python it
    calls for a tool call's arguments and problem (``formats.common``), as ``normalize`` does."""
    return {**_block_parts(), "full": FullEntry, "kinds": Kinds, "message": MESSAGE, "empty": EMPTY,
            "stop_map": dict(fmt.STOP_MAP), "interrupts": tuple(fmt.INTERRUPT_TEXTS)}


# ----------------------------------------------------------------------------- the hot loop


def _unbuffered(f, offset: int):
    """The raw file under ``f`` (a buffered reader), at ``offset``: what the C part's reader reads the rest of the file
    from, into its own buffer. Read through ``f``, each byte was copied twice (into ``f``'s buffer, then into the
    reader's: 60M of the 700M instructions a 62 MB folder's scan cost). ``f`` is not read again."""
    raw = f.raw
    try:
        raw.seek(offset)
    except (OSError, ValueError):  # not seekable (a pipe): through ``f``, which is at ``offset``
        return f
    return raw


UNPARSED = object()  # a line the C part's sniff scored: parsed only when it is emitted (``_parsed``)
REFUSED = object()  # such a line, once parsed, Codex cannot read (``_parsed``)


def _told(pending: list, raws: list, scores: list, path: str, module):
    """The format the lines read so far tell (``formats.chosen``, from the C part's scores where it gave them and the
    formats' sniffs of the other object lines); where it is refused, ``formats.detect`` of the parsed lines says why."""
    rows = [s if s is not None else formats.line_scores(o) for (_, o), s in zip(pending, scores)
            if s is not None or type(o) is dict]
    fmt = formats.chosen(rows, module)
    if fmt is not None:
        return fmt
    return formats.detect([loads_line(raw) if o is UNPARSED else o for (_, o), raw in zip(pending, raws)], path=path,
                          forced=module)


def _parsed(t, where: tuple, obj, raw: bytes):
    """A line read before the format was known, as the loop reads one after: parsed now if the C part's sniff scored
    it (orjson, then the strict fallback, after which Codex may refuse the line: then ``REFUSED``, and a bad line in
    its place), its numbers as Codex reads them."""
    if obj is UNPARSED:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            no, start, size, eol = where
            obj, reason = parse(Line(no, start, raw, eol))
            if reason is None:
                reason = rust_refuses(t.fmt, obj, raw)
            if reason is not None:
                insort(t.bad, BadLine(no, start, size, reason, blank=reason == "blank line"), key=lambda b: b.lineno)
                return REFUSED
    return exact_numbers(obj, raw) if t.fmt is CODEX else obj


def _decoding(fmt, lazy: tuple) -> tuple:
    """How the loop decodes a format's lines from the line it is told at (``lazy``: ``decoder(fmt)``): ``(full_types,
    (decode, to_dict, refused), adaptive)``: msgspec's parts when the mode is msgspec throughout and it is installed
    (else ``(None, None, ())``: orjson), and whether the adaptive mode chooses the decoder after ``FIRST_WINDOW``
    lines (else orjson throughout)."""
    mode, full_types = lazy
    parts = msgspec_parts(fmt) if mode == "msgspec" else None
    return full_types, parts or (None, None, ()), parts is None and mode == "1"


def _told_ahead(c, f, module, words, selective: bool):
    """``(reader, format, decoder)`` when the C part's sniff of a file's first lines (``formats.SNIFF_LINES``, or all of a
    shorter file) is sure of each and they tell the format, and the C part's reader then takes the format's lines
    (``decoder`` or ``native_entries``): the reader at the file's start, its lines read but not given out yet. Else None,
    and ``f`` is at its start again: a line needs the Python (not sure, not an object, torn, a BOM), or the format is not
    told so (``formats.detect`` then says why)."""
    raw = getattr(f, "raw", None)
    if raw is None or not raw.seekable():
        return None
    reader = c.Reader(_unbuffered(f, 0), 0, None)
    scores = reader.peek(formats.SNIFF_LINES, *words)
    fmt = formats.chosen(scores, module) if scores and scores[-1] is not None else None
    lazy = decoder(fmt) if fmt is not None and selective else None
    if fmt is None or (lazy is None and native_entries(fmt) is None):
        f.seek(0)
        return None
    return reader, fmt, lazy


def _handed(t, pending: list, raws: list, meta, emit, prev):
    """The lines read before the format was known, handed on once it is: the C part's ``meta`` (or None) takes those it
    is sure of from their bytes, the others are parsed (``_parsed``) and emitted. Returns the last line's number."""
    for (w, o), raw in zip(pending, raws):
        if meta is None or not meta.line(raw, w[0], w[1], prev):
            o = _parsed(t, w, o, raw)
            if o is REFUSED:
                continue
            emit(w, o)
        prev = w[0]
    return prev


def scan_lines(t, path: str, pending: list, module, emit, begin: int = 0, end: int | None = None, meta=None,
               into: list | None = None, shared: dict | None = None, sizes: dict | None = None, taken=None,
               tuples: bool = False, stats: bool = True) -> None:
    """The hot loop: one parse per line and no per-line objects unless the line is bad
    (orjson accepts the trailing newline as whitespace, so lines are never copied).

    ``emit(where, obj)`` gets each parsed line, ``where = (lineno, offset, length, eol)``.
    ``meta(lineno, offset, length, eol, type, uuid, parent, timestamp)``, when given, asks for
    selective decoding (see the module's doc): it gets the lines that need nothing more, and
    ``emit`` gets the others with only the fields the format reads. ``t`` is a ``Part`` (or a
    ``Transcript``). ``begin``/``end`` (line boundaries) limit it to part of the file; line
    numbers then count from the part's first line. ``into`` (in place of ``meta``): the list
    ``emit`` appends every entry to; those lines' entries are appended here directly, their
    index its length, their strings shared through ``shared`` (the index's fast way). ``sizes``: the
    table of line lengths (one int object per value), when the caller goes on with it. ``taken(entries)``
    (with ``meta``, a streaming pass): gets the entries the C part made of metadata lines, in file order,
    before the next line is handed on; their ``index`` is for the caller to set. ``tuples``: it gets the
    tuples ``meta``'s arguments make instead, ``(lineno, offset, length, eol, type, uuid, parent, ts)``,
    strings shared through ``shared`` (a helper's part). A Codex rollout's and a pi session's lines are taken
    the same way, whole (``native_entries``: the C part parses them and makes their entries, ``stats`` as ``emit``
    would; into ``into``, or handed to ``taken``, as tuples with ``tuples``); ``emit`` gets the lines it declines."""
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    # a lean index (``t.progress``, a model.Progress): the C part makes no entry of a progress line (of a line the
    # Python reads, one is made as always: chain reads both)
    lean = t.progress if into is not None or tuples else None
    offset = begin
    no = lf = crlf = 0
    eol = b"\n"
    selective = meta is not None or into is not None
    # The decoder: msgspec pays where metadata lines (which it skips) carry the bytes, as in real
    # Claude Code files; on lines read whole it costs more than orjson (the bytes it skips must
    # still be checked for UTF-8). Adaptive (the default): orjson first, then chosen again every
    # WINDOW lines from the last window's share of metadata bytes; msgspec is imported on first use.
    lazy = decoder(t.fmt) if selective else None
    decode = to_dict = None
    refused: tuple = ()
    fast = False
    window = WINDOW
    next_choice = -1  # the line number at which the decoder is chosen again (-1: never)
    window_start, meta_bytes = begin, 0  # a later part of a split scan starts at its own offset
    sizes = sizes if sizes is not None else {}
    c = native()
    sniff, sniff_words = (c.sniff, (formats.SNIFF_TYPES, formats.SNIFF_ROLES)) if c is not None else (None, None)
    reader = None  # the C part's line reader (``native``), which takes the metadata lines it can once told the format
    rmb0 = 0  # its count of metadata bytes when the decoder was last chosen
    if into is not None:
        append = into.append
        get = shared.setdefault
    fromiso = datetime.fromisoformat
    same_size = sizes.setdefault
    prev = None  # the line number of the last line emitted: its int object is the next index (see transcript.scan)
    pending_raw: list[bytes] = []  # the lines in ``pending``, as read
    pending_scores: list = []  # their scores as the C part's sniff gave them (None: the Python sniffs the object)
    early = None  # the C part's Meta the first lines (read to tell the format) went through: the reader's then
    with open_binary(path) as f:
        if begin:
            f.seek(begin)
        src = f  # the lines: Python's own iteration until the C part's reader can take metadata lines (then
        # its reader: on a file whose lines it takes none of, it would only cost the loop a little)
        took: list | None = None  # streaming: the entries the C part made since the last line handed on
        native_ok = c is not None and (into is not None or (taken is not None and meta is not None))
        if native_ok and t.fmt is None and not begin and end is None and selective and sniff is not None:
            # the format told from the first lines' bytes alone (most files): then every line, those first ones too,
            # goes through the C part's reader as the rest of a file goes (none is parsed to be sniffed, none handed
            # on); where a line needs the Python, the loop below reads the file from its start as before
            told = _told_ahead(c, f, module, sniff_words, selective)
            if told is not None:
                reader, t.fmt, lazy = told
        if lazy is not None:
            full_types, (decode, to_dict, refused), adaptive = _decoding(t.fmt, lazy)
            fast = decode is not None
            if adaptive:
                next_choice = FIRST_WINDOW
        if native_ok and (lazy is not None or native_entries(t.fmt) is not None):
            if reader is None:
                reader = c.Reader(_unbuffered(f, begin), begin, end)
            src = reader
            if lazy is not None:
                reader.meta, took = _taker(c, t.fmt, into, shared, sizes, taken, tuples, stats, lean)
            else:
                reader.whole, took = _whole_taker(c, t.fmt, into, shared, taken, tuples, stats, sizes)
        while True:
            switch = False
            for chunk in src:
                if reader is not None:  # the lines it takes are counted there; the bounds below are kept there too
                    if took:
                        taken(took)
                        took.clear()
                    no = reader.no
                    start = reader.start
                    offset = start + len(chunk)
                else:
                    if end is not None and offset >= end:
                        break
                    if not eol:
                        # the last chunk had no newline: the end of the file when it was read. A file an agent
                        # appends to meanwhile has more now, starting with the rest of that line: it is not read
                        # as lines of their own (a line torn in two), it is what the commit carries whole
                        break
                    if end is not None and offset + len(chunk) > end:
                        # the last part ends where the file ended when it was split: a line that was unfinished
                        # then and is complete now is read as it was (torn), as the part's size says
                        chunk = chunk[: end - offset]
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
                size = len(chunk) - len(eol)
                if no >= next_choice > 0:  # (">=": the C reader gives out no metadata line)
                    if reader is not None:
                        rmb = reader.meta_bytes
                        meta_bytes += rmb - rmb0
                        rmb0 = rmb
                    fast = meta_bytes * META_SHARE >= start - window_start
                    if fast and decode is None:
                        # where the C part takes the messages too, msgspec would read a line in a thousand (for 8-17 ms
                        # of import): orjson throughout, as without msgspec
                        parts = None if reader is not None and takes_messages(t.fmt) else msgspec_parts(t.fmt)
                        if parts is None:
                            fast, next_choice = False, -1
                        else:
                            decode, to_dict, refused = parts
                    window_start, meta_bytes = start, 0
                    if next_choice != -1:
                        next_choice = no + window
                ty = None  # set (with u, p, ts) when the line is a metadata line whose entry is made here
                if fast:
                    try:
                        if not chunk.isascii():
                            chunk.decode()  # msgspec does not check UTF-8 in what it skips: this does (as strictly as orjson)
                        h = decode(chunk)
                    except refused:
                        pass
                    else:
                        ty = h.type
                        if type(ty) is not str or ty in full_types:
                            emit((no, start, size, eol), to_dict(h))
                            prev = no
                            continue
                        u, p, ts = h.uuid, h.parentUuid, h.timestamp
                if ty is None:
                    # while the format is not known, the C part's sniff scores a line from its bytes: it is parsed
                    # only if it is emitted (``_parsed``)
                    scores = sniff(chunk, *sniff_words) if t.fmt is None and sniff is not None else None
                    if scores is not None:
                        obj = UNPARSED
                    else:
                        try:
                            obj = loads(chunk)
                        except decode_error:
                            obj, reason = parse(Line(no, start, chunk, eol))
                            if reason is None:
                                reason = rust_refuses(t.fmt, obj, chunk)
                            if reason is not None:
                                t.bad.append(BadLine(no, start, size, reason, blank=reason == "blank line"))
                                continue
                        if t.fmt is CODEX:
                            obj = exact_numbers(obj, chunk)  # (a number whose spelling Codex's reader tells apart)
                    where = (no, start, size, eol)
                    if t.fmt is None:
                        pending.append((where, obj))
                        pending_raw.append(chunk)
                        pending_scores.append(scores)
                        if len(pending) < formats.SNIFF_LINES:
                            continue
                        t.fmt = _told(pending, pending_raw, pending_scores, path, module)
                        # the lines read to tell the format: into the index as the rest of the file goes (the C
                        # part's Meta takes those it is sure of, from their bytes), the others emitted
                        if native_ok and into is not None and decoder(t.fmt) is not None:
                            early = meta_reader(c, t.fmt, into, shared, sizes, tuples, stats, lean)
                        prev = _handed(t, pending, pending_raw, early, emit, prev)
                        pending.clear()
                        pending_raw.clear()
                        pending_scores.clear()
                        if selective:
                            lazy = decoder(t.fmt)
                            if lazy is not None:
                                full_types, (decode, to_dict, refused), adaptive = _decoding(t.fmt, lazy)
                                fast = decode is not None
                                if adaptive:
                                    window_start, meta_bytes, next_choice = offset, 0, no + FIRST_WINDOW
                            if native_ok and eol and (lazy is not None or native_entries(t.fmt) is not None):
                                switch = True  # the rest of the file through the C part's reader
                                break
                        continue
                    if lazy is not None and type(obj) is dict:
                        ty = obj.get("type")
                        if type(ty) is str and ty not in full_types:
                            u, p, ts = obj.get("uuid"), obj.get("parentUuid"), obj.get("timestamp")
                        else:
                            ty = None
                    if ty is None:
                        emit(where, obj)
                        prev = no
                        continue
                # a metadata line (progress, snapshot, queue, api-request...): its entry from type, uuid,
                # parent and timestamp, whichever decoder read it
                meta_bytes += len(chunk)
                # one int object per distinct length of a metadata line: most repeat (~7 MB of a 500 MB Claude Code index)
                size = same_size(size, size)
                if into is None:
                    meta(no, start, size, eol, ty, u, p, ts)
                else:  # meta_entry, inline: most lines of a Claude Code file come this way
                    n = len(into)
                    if type(ts) is str:  # parse_ts, its common case inline
                        try:
                            ts = fromiso(ts).timestamp()
                        except ValueError:
                            ts = parse_ts(ts)
                    else:
                        ts = parse_ts(ts)
                    # the line's own uuid is not put in the string table: such lines (progress) are leaves,
                    # a line naming one as its parent still gets an equal string
                    append(small_entry(prev if prev == n else n, no, start, size, eol, META,
                                       get(ty, ty), u if type(u) is str else None,
                                       get(p, p) if type(p) is str else parent_of(p), ts))
                    prev = no
            if not switch:
                break
            reader = src = c.Reader(_unbuffered(f, offset), offset, end, no=no)
            if lazy is not None:
                reader.meta, took = (early, None) if early is not None else _taker(c, t.fmt, into, shared, sizes, taken,
                                                                                   tuples, stats, lean)
            else:
                reader.whole, took = _whole_taker(c, t.fmt, into, shared, taken, tuples, stats, sizes)
    if took:
        taken(took)
    if reader is not None:
        if reader.no != no:  # the last lines were metadata lines the C part took: each ends in "\n"
            eol = b"\n"
        no, offset, lf = reader.no, reader.offset, lf + reader.lf
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
        t.fmt = _told(pending, pending_raw, pending_scores, path, module)
        # a file shorter than the lines read to tell its format: its lines go as they go above
        early = meta_reader(c, t.fmt, into, shared, sizes, tuples, stats, lean) if (
            native_ok and into is not None and decoder(t.fmt) is not None) else None
        _handed(t, pending, pending_raw, early, emit, prev)
