"""The lossless entry and its normalized view.

Every line of a transcript becomes an ``Entry``: where it is in the file (line,
offset, length, line ending), so its original bytes can be written back exactly,
plus a normalized view that every command works on, whatever the on-disk format:
the kind of record, its id and parent link, the role it plays for the model,
tool calls and results (with their block positions), recorded usage, timestamps
and the character counts that pi's token heuristic is made of.

The parsed object (``obj``) and the normalized content blocks (``blocks``, in the
Anthropic Messages shape) are optional: streaming commands drop them after the
entry is normalized and load them again by offset when needed, which keeps a
1 GB session in a small index.
"""

from __future__ import annotations

import platform
import sys
import weakref
from dataclasses import dataclass
from typing import Mapping


class _Empty(dict):
    """A shared, read-only empty dict: the default of per-entry maps, so that an index of
    a million entries does not carry two million empty dicts."""

    __hash__ = object.__hash__

    def _readonly(self, *a, **k):
        raise TypeError("Entry maps are replaced, never changed in place")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _readonly


EMPTY: Mapping = _Empty()

KIND_NAMES = ("text", "thinking", "tool_call", "tool_result", "image", "summary")


class Kinds:
    """Characters by block kind, with the read-only dict API the commands use
    (``items``, ``values``, ``get``, ``[]``). Fixed slots: a third of a dict's memory,
    which matters in an index of a million entries."""

    __slots__ = KIND_NAMES

    def __init__(self, text=0, thinking=0, tool_call=0, tool_result=0, image=0, summary=0):
        self.text = text
        self.thinking = thinking
        self.tool_call = tool_call
        self.tool_result = tool_result
        self.image = image
        self.summary = summary

    def items(self):
        out = []
        if self.text:
            out.append(("text", self.text))
        if self.thinking:
            out.append(("thinking", self.thinking))
        if self.tool_call:
            out.append(("tool_call", self.tool_call))
        if self.tool_result:
            out.append(("tool_result", self.tool_result))
        if self.image:
            out.append(("image", self.image))
        if self.summary:
            out.append(("summary", self.summary))
        return out

    def keys(self):
        return [k for k, _ in self.items()]

    def values(self):
        return [v for _, v in self.items()]

    def get(self, key, default=0):
        v = getattr(self, key, 0) if key in KIND_NAMES else 0
        return v if v else default

    def __getitem__(self, key):
        v = self.get(key, None)
        if v is None:
            raise KeyError(key)
        return v

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.items())

    def __contains__(self, key):
        return self.get(key, None) is not None

    def __eq__(self, other):
        if isinstance(other, Kinds):
            other = dict(other.items())
        return isinstance(other, dict) and dict(self.items()) == {k: v for k, v in other.items() if v}

    def __repr__(self):
        return f"Kinds({dict(self.items())})"

# Kinds of entry.
HEADER = "header"  # pi session header
MESSAGE = "message"  # anything that becomes a model message
COMPACTION = "compaction"  # pi compaction record (becomes the summary message)
BOUNDARY = "boundary"  # Claude Code compact_boundary
META = "meta"  # everything the model never sees (settings, progress, snapshots, custom)

# Image blocks cost this many characters in pi's estimate (toolResult/custom).
IMAGE_CHARS = 4800


@dataclass(slots=True)
class Call:
    """A tool call block: its position in the entry's blocks and why it is unusable, if it is."""

    idx: int
    id: str
    name: str
    problem: str | None = None  # "no id", "no arguments", "invalid name", "partialJson"
    chars: int = 0  # pi heuristic characters of this call (name + JSON arguments)

    def renamed(self, new_id: str) -> "Call":
        return Call(self.idx, new_id, self.name, self.problem, self.chars)


@dataclass(slots=True)
class Result:
    idx: int
    id: str
    name: str | None = None
    is_error: bool = False
    chars: int = 0  # pi heuristic characters of this result (text + 4,800 per image)

    def renamed(self, new_id: str) -> "Result":
        return Result(self.idx, new_id, self.name, self.is_error, self.chars)


@dataclass(slots=True)
class Usage:
    """Recorded provider usage, normalized: context = input + cache read + cache write."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0
    placeholder: bool = False  # Claude Code streaming chunk (stop_reason null)

    @property
    def context(self) -> int:
        """Tokens of context the provider saw for this request (prompt side)."""
        return self.input + self.cache_read + self.cache_write

    @property
    def context_after(self) -> int:
        """pi's calculateContextTokens: totalTokens, or the sum of all four when it is 0."""
        return self.total or (self.input + self.output + self.cache_read + self.cache_write)


# The parent of a line whose parent field holds something other than a string or null (a number, an
# object): no line has it as its id, so every reader sees a lost parent (as the agents do: their map
# lookup finds nothing), and repair re-links the line like any other lost parent.
BAD_PARENT = "(not a string)"
# The same for a value JavaScript takes for false (0, false): Claude Code's walk ends at such a line as
# at a root (judged), pi's lookup finds nothing (a lost parent, as above)
FALSY_PARENT = "(not a string, false)"
FALSY_ID = "falsy_id"  # a response line's extra: its uuid is no string and JavaScript reads it as false (0, null, none)
FALSY_MESSAGE_ID = "falsy_message_id"  # a response line's extra: its message.id JavaScript reads as false ("", 0, null, none)
CONTENT_NOT_LIST = "content_not_list"  # a pi assistant line's extra: its content is no array (pi-ai cannot send it)
UNREADABLE_CONTENT = "unreadable_content"  # a user line's extra: its message is no object, or its content no string or list
COMPANION = "companion"  # a user line's extra: no results, written by the client beside a turn (turnCompanion, sourceToolUseID)
# a response line's extra: its content is a string of white space alone (as JavaScript trims), or no string and no
# list: the client's walk from the row it resumes at to the first message passes it (claude_chain._up_to_message)
SILENT_RESPONSE = "silent_response"


NOT_STRINGS = (int, float, bool, dict, list)  # JSON values that are neither a string nor null


def js_false(value) -> bool:
    """Whether JavaScript takes this JSON value for false (null, false, 0, ""; an empty array or object it takes for
    true)."""
    return not value and type(value) is not dict and type(value) is not list


def parent_of(value):
    """A line's parent id as read from its parent field (absent or null: None)."""
    t = type(value)
    if t is str:
        return value
    if t in NOT_STRINGS:
        return FALSY_PARENT if js_false(value) else BAD_PARENT
    return None


# The fields of an entry, in constructor order; ``_MORE`` are the ones most entries leave at their
# default (everything but messages: progress, snapshots, settings): they live in a second object,
# created on the first write, so that an index of a million such lines stays small.
_CORE = ("index", "lineno", "offset", "length", "eol", "kind", "type", "id", "parent", "role")
# a line ending other than "\n", role, obj and blocks: none on almost every metadata line (most lines of
# a Claude Code file): in the second object too on an ``Entry`` (32 bytes a line), in slots of their own on
# a ``FullEntry``
_RARE = {"eol": b"\n", "role": None, "obj": None, "blocks": None}
_MORE = {"stop": None, "msg_key": None, "ts": None, "model": None, "calls": (), "results": (), "nblocks": 0, "empty": False,
         "blank_text": False, "signed_thinking": False, "chars": 0, "kinds": EMPTY, "tool_chars": EMPTY, "usage": None,
         "extra": None}
FIELDS = _CORE + tuple(_MORE) + ("obj", "blocks")


class _More:
    __slots__ = tuple(k for k in _MORE if k != "ts") + tuple(_RARE)

    def __init__(self):
        self.eol = b"\n"
        self.role = self.obj = self.blocks = None
        self.stop = self.msg_key = self.model = self.usage = self.extra = None
        self.calls = self.results = ()
        self.nblocks = self.chars = 0
        self.empty = self.blank_text = self.signed_thinking = False
        self.kinds = self.tool_chars = EMPTY


_NONE = _More()  # the shared defaults of entries that set none of these: never written (see _set)
# ``e._m is PLAIN``: an ``Entry`` none of whose optional fields (calls, results, extra, usage, model,
# chars...) is set, such as the scan's metadata lines; a pass that reads only those fields skips it
PLAIN = _NONE


class Entry:
    """One line of a transcript: where it is and its normalized view (see the module's doc).

    Fields: index, lineno, offset, length, eol, kind, type (the record's own type tag, or the role
    for Messages JSONL), id, parent, role, stop, msg_key (Claude Code: message.id(+requestId),
    groups split lines), ts (epoch seconds), model, calls, results, nblocks, empty (no content the
    model would see), blank_text (a text block that is empty or whitespace only), signed_thinking,
    chars (pi heuristic characters), kinds (chars by block kind; replaced, never mutated in
    place), tool_chars (tool-result chars by tool name), usage, extra, obj, blocks. Compared by
    identity. The fields most entries leave at their default cost no memory until set."""

    __slots__ = tuple(k for k in _CORE if k not in _RARE) + ("ts", "_m")

    def __init__(self, index: int, lineno: int, offset: int, length: int, eol: bytes, kind: str, type: str,
                 id: str | None = None, parent: str | None = None, role: str | None = None, stop: str | None = None,
                 msg_key: str | None = None, ts: float | None = None, model: str | None = None,
                 calls: tuple = (), results: tuple = (), nblocks: int = 0, empty: bool = False, blank_text: bool = False,
                 signed_thinking: bool = False, chars: int = 0, kinds: Mapping = EMPTY, tool_chars: Mapping = EMPTY,
                 usage: "Usage | None" = None, extra: dict | None = None, obj: dict | None = None, blocks: list | None = None):
        self.index = index
        self.lineno = lineno
        self.offset = offset
        self.length = length
        self.kind = kind
        self.type = type
        self.id = id
        self.parent = parent
        self.ts = ts
        if self.__class__ is not Entry:  # FullEntry: the fields below are its own slots
            self._m = None
        elif (eol == b"\n" and role is None and obj is None and blocks is None and stop is None and msg_key is None and model is None
                and not calls and not results and not nblocks and not empty and not blank_text and not signed_thinking
                and not chars and kinds is EMPTY and tool_chars is EMPTY and usage is None and extra is None):
            self._m = _NONE
            return
        else:
            self._m = _More()  # the fields below are written into it
        self.eol, self.role, self.obj, self.blocks = eol, role, obj, blocks
        self.stop, self.msg_key, self.model, self.calls, self.results, self.nblocks = stop, msg_key, model, calls, results, nblocks
        self.empty, self.blank_text, self.signed_thinking, self.chars, self.kinds = empty, blank_text, signed_thinking, chars, kinds
        self.tool_chars, self.usage, self.extra = tool_chars, usage, extra

    def __repr__(self) -> str:
        return "Entry(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in FIELDS) + ")"

    @property
    def api_role(self) -> str | None:
        if self.role is None:
            return None
        return "assistant" if self.role == "assistant" else "user"

    @property
    def errored(self) -> bool:
        """A turn pi never replays: the stream failed or was aborted."""
        return self.role == "assistant" and self.stop in ("error", "aborted")

    def get(self, key: str, default=None):
        return (self.extra or {}).get(key, default)

    def release(self) -> None:
        """Drop the parsed object and blocks; ``reload`` brings them back."""
        self.obj = None
        self.blocks = None


def _more_field(name: str) -> property:
    from operator import attrgetter

    default = _RARE[name] if name in _RARE else _MORE[name]

    def _set(self, value, _name=name, _default=default):
        m = self._m
        if m is _NONE:
            # the value it has: nothing to hold (a metadata line's release()). A line ending is compared by
            # value: b"\n" read from a module's bytecode (an installed package's .pyc) is another object
            if value is _default or (_name == "eol" and value == _default):
                return
            m = self._m = _More()
        setattr(m, _name, value)

    return property(attrgetter("_m." + name), _set)


for _name in (*_MORE, *_RARE):
    if _name != "ts":
        setattr(Entry, _name, _more_field(_name))
del _name


class Progress:
    """The progress lines of a Claude Code file that its index made no entry of (a lean index: ``transcript.scan``,
    ``lean=True``): a progress line is no row of the client's and is sent as nothing; all the client reads of one is its
    uuid and its parent, in file order (``claude_chain.chain``'s map of them). ``offsets``: where each line starts,
    int64 in native byte order (the order they are read in among the entries, whose ``offset`` tells theirs); ``ids``:
    their uuids (None where the line's is no string: the client reads such a line as nothing); ``parents``: their
    parents, as ``Entry.parent`` holds them."""

    __slots__ = ("offsets", "ids", "parents")

    def __init__(self) -> None:
        self.offsets = bytearray()
        self.ids: list = []
        self.parents: list = []

    def __len__(self) -> int:
        return len(self.ids)

    def extend(self, offsets: bytes, ids: list, parents: list) -> None:
        """A later part's lines after these (a split scan's helper's: its offsets are the file's)."""
        self.offsets += offsets
        self.ids += ids
        self.parents += parents

    def items(self):
        """(offset, uuid, parent) of each, in file order."""
        return zip(memoryview(self.offsets).cast("q"), self.ids, self.parents)


_LEAN: dict = {}  # id(a lean index's entries) -> (that list, its Progress): see lean_progress


def lean_progress(entries) -> Progress | None:
    """The progress lines a lean index (``transcript.scan(lean=True)``) holds apart from ``entries``, its list of
    entries (that very list: another list of its entries, filtered or copied, has none); None for any other list."""
    got = _LEAN.get(id(entries))
    return got[1] if got is not None and got[0] is entries else None


def lean(entries: list, progress: Progress, owner) -> None:
    """Tell ``lean_progress`` that ``entries`` is a lean index with ``progress`` apart, for as long as ``owner`` (its
    transcript) lives."""
    _LEAN[id(entries)] = (entries, progress)
    weakref.finalize(owner, _LEAN.pop, id(entries), None)


def small_entry(index: int, lineno: int, offset: int, length: int, eol: bytes, kind: str, type: str, id: str | None,
                parent: str | None, ts: float | None) -> Entry:
    """``Entry(index, lineno, offset, length, eol, kind, type, id, parent, ts=ts)``, made faster (the scan makes
    one per metadata line)."""
    e = _new(Entry)
    e.index = index
    e.lineno = lineno
    e.offset = offset
    e.length = length
    e.kind = kind
    e.type = type
    e.id = id
    e.parent = parent
    e.ts = ts
    e._m = _NONE  # role, obj and blocks: None there, and the line ending "\n"
    if eol != b"\n":
        e.eol = eol  # (a second object of its own)
    return e


_new = object.__new__


class FullEntry(Entry):
    """An entry with every field in a slot of its own (its slots take the place of ``Entry``'s
    properties): what a normalized line becomes, as fast to fill and read as a plain object, and
    smaller than an ``Entry`` with its second object. ``Entry``s made without anything but the
    common fields (the scan's metadata lines) stay small."""

    __slots__ = _More.__slots__


def full_entry(index: int, lineno: int, offset: int, length: int, eol: bytes, obj: dict | None = None) -> FullEntry:
    """``FullEntry(index, lineno, offset, length, eol, META, "?", obj=obj)``, made faster: what the scan
    makes of each line before the format normalizes it."""
    e = _new(FullEntry)
    e.index = index
    e.lineno = lineno
    e.offset = offset
    e.length = length
    e.eol = eol
    e.kind = META
    e.type = "?"
    e.obj = obj
    e.id = e.parent = e.role = e.ts = e.blocks = e._m = None
    e.stop = e.msg_key = e.model = e.usage = e.extra = None
    e.calls = e.results = ()
    e.nblocks = e.chars = 0
    e.empty = e.blank_text = e.signed_thinking = False
    e.kinds = e.tool_chars = EMPTY
    return e


def entry_to_tuple(e: Entry) -> tuple:
    """The index fields of ``e`` as plain values (marshal-able), for a scan done in another process.
    The parsed object and blocks are not carried: they are released after a scan anyway."""
    kinds = e.kinds
    return (
        e.index, e.lineno, e.offset, e.length, e.eol, e.kind, e.type, e.id, e.parent, e.role, e.stop,
        e.msg_key, e.ts, e.model,
        tuple((c.idx, c.id, c.name, c.problem, c.chars) for c in e.calls) if e.calls else None,
        tuple((r.idx, r.id, r.name, r.is_error, r.chars) for r in e.results) if e.results else None,
        e.nblocks, e.empty, e.blank_text, e.signed_thinking, e.chars,
        (kinds.text, kinds.thinking, kinds.tool_call, kinds.tool_result, kinds.image, kinds.summary)
        if kinds is not EMPTY else None,
        dict(e.tool_chars) if e.tool_chars is not EMPTY else None,
        (e.usage.input, e.usage.output, e.usage.cache_read, e.usage.cache_write, e.usage.total, e.usage.placeholder)
        if e.usage is not None else None,
        e.extra,
    )


def entry_from_tuple(t: tuple, index_shift: int = 0, line_shift: int = 0) -> Entry:
    """Rebuild an Entry from ``entry_to_tuple``; index and line number moved by the part's start."""
    (index, lineno, offset, length, eol, kind, type_, id_, parent, role, stop, msg_key, ts, model,
     calls, results, nblocks, empty, blank_text, signed, chars, kinds, tool_chars, usage, extra) = t
    e = _new(FullEntry)  # FullEntry(...) with every field given, made faster (the parallel scan's merge)
    e.index = index + index_shift
    e.lineno = lineno + line_shift
    e.offset = offset
    e.length = length
    e.eol = eol
    e.kind = kind
    e.type = type_
    e.id = id_
    e.parent = parent
    e.role = role
    e.ts = ts
    e.obj = e.blocks = e._m = None
    e.stop = stop
    e.msg_key = msg_key
    e.model = model
    e.calls = tuple([Call(*c) for c in calls]) if calls else ()
    e.results = tuple([Result(*r) for r in results]) if results else ()
    e.nblocks = nblocks
    e.empty = empty
    e.blank_text = blank_text
    e.signed_thinking = signed
    e.chars = chars
    e.kinds = Kinds(*kinds) if kinds is not None else EMPTY
    e.tool_chars = tool_chars if tool_chars is not None else EMPTY
    e.usage = Usage(*usage) if usage is not None else None
    e.extra = extra
    return e


def js_len(s: str) -> int:
    """String length as JavaScript counts it (UTF-16 code units), which pi's chars/4 uses."""
    if s.isascii():
        return len(s)
    n = len(s)
    # CPython stores a str with 1, 2 or 4 bytes per character; only the 4-byte kind can hold
    # characters outside the BMP (2 UTF-16 units each). sys.getsizeof tells the kind in O(1);
    # anything unexpected (another Python, a cached UTF-8 copy) takes the exact slow path.
    if _CPYTHON and _sizeof(s) - _STR_BASE < 4 * (n + 1):
        return n
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _str_base() -> int:
    try:
        base = sys.getsizeof("\xe9") - 2  # header of a compact non-ASCII str (1 char + NUL, 1 byte each)
        ok = sys.getsizeof("\u0100\u0100") - base == 6 and sys.getsizeof("\U0001f600") - base == 8
        return base if ok else -1
    except TypeError:
        return -1


_sizeof = sys.getsizeof
_STR_BASE = _str_base()
_CPYTHON = platform.python_implementation() == "CPython" and _STR_BASE > 0


def as_list(value) -> list | tuple:
    """A field that should hold an array, read as one: a list (or tuple) as is, anything else
    (a number, a string, an object: what a damaged line can hold) as empty."""
    return value if type(value) in (list, tuple) else ()


def as_text(value) -> str:
    """A block field read as text: a string as is; a number as written; anything else (null, an
    object, an array: content the API refuses) as "" - never ``str()`` of a nested value, which a
    line nested a thousand levels deep would turn into a RecursionError."""
    t = type(value)
    if t is str:
        return value
    if t in (int, float) and value:
        return str(decoded_number(value))
    return ""


def decoded_number(value):
    """A JSON number as orjson reads it: an integer beyond 64 bits as a float. msgspec, which the scan
    uses for some lines, keeps such an integer whole; this makes what is read of it the same. One
    beyond a float's range stays whole: orjson refuses its line, and the fallback reads it whole."""
    if type(value) is int and not -(1 << 63) <= value < (1 << 64):
        try:
            return float(value)
        except OverflowError:
            return value
    return value


def as_decoded(value):
    """``value`` with every integer beyond 64 bits made a float (``decoded_number``), as orjson reads it."""
    t = type(value)
    if t is int:
        return decoded_number(value)
    if t is dict:
        return {k: as_decoded(v) for k, v in value.items()}
    if t is list:
        return [as_decoded(v) for v in value]
    return value


def text_of(content) -> str:
    """Plain text of a content value (string or list of blocks), images as markers."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                parts.append(as_text(b.get("text")))
            elif t == "image":
                parts.append("[image]")
            elif t == "tool_result":
                parts.append(text_of(b.get("content")))
    return "\n".join(parts)
