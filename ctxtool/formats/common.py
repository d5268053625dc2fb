"""Block-level helpers shared by the formats: tool-call checks and pi's character counts."""

from __future__ import annotations

import json

import re
from datetime import datetime

import orjson

from ..model import IMAGE_CHARS, Call, Kinds, Result, as_decoded, as_text, js_len

CALL_TYPES = {"toolCall", "toolUse", "functionCall", "tool_use", "tool_call", "function_call"}
NAME_RE = re.compile(r"^[A-Za-z0-9_:.-]+$")
REPAIR_TEXT = (
    "[ctxtool repair] missing tool result in session history; "
    "inserted synthetic error result for transcript repair."
)
# what OpenClaw writes for a call whose result is missing (its session-tool-result-guard / transcript repair)
OPENCLAW_MISSING_TEXT = "[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair."
# the results a repair made, not a tool: where a call has one of these and a real result, the real one is kept
SYNTHETIC_RESULT_TEXTS = frozenset((REPAIR_TEXT, OPENCLAW_MISSING_TEXT))
STREAM_ERROR_FALLBACK_TEXT = "[assistant turn failed before producing content]"
BLANK_USER_FALLBACK_TEXT = "(continue)"


# Absurd numbers (fuzzed or damaged lines) are treated as missing, never computed with:
MAX_COUNT = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER: no token count is larger (nor exact beyond it)
MAX_EPOCH_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant a datetime holds
MIN_EPOCH_MS = -62135596800000  # 0001-01-01T00:00:00Z


def count(value) -> int | None:
    """A recorded count (tokens, sizes): an int, or a float truncated, in 0..MAX_COUNT; 0 when it
    is absent or not a number; None when it is an absurd number (negative, infinite, NaN, huge)."""
    t = type(value)
    if t is int:
        return value if 0 <= value <= MAX_COUNT else None
    if t is float:
        return int(value) if 0 <= value <= MAX_COUNT else None  # NaN fails both comparisons
    return 0


def ms_to_seconds(value) -> float | None:
    """Epoch milliseconds as epoch seconds; None unless a number between years 1 and 9999."""
    if type(value) not in (int, float) or not MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
        return None
    return value / 1000.0


def parse_ts(value) -> float | None:
    """Epoch seconds of a timestamp: epoch milliseconds, or an ISO-8601 string; None if unreadable
    or absurd (see ``ms_to_seconds``)."""
    if type(value) in (int, float):
        return ms_to_seconds(value)
    if isinstance(value, str):
        try:  # Python 3.11 reads a trailing "Z" itself; where it reads the string, the answer is the same
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            pass
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def note_ignored(entry, field: str) -> None:
    """Record that ``field`` of this entry held an absurd number, read as missing: commands
    with notes say so (``ignored_notes``). The rest of the entry is read as usual."""
    x = entry.extra
    entry.extra = {**x, "ignored": (*x.get("ignored", ()), field)} if x else {"ignored": (field,)}


def set_extra(entry, values: dict) -> None:
    """Set ``entry.extra``, keeping what normalizing the entry already noted there."""
    entry.extra = {**entry.extra, **values} if entry.extra else values


def count_field(entry, d: dict, key: str, where: str) -> int:
    """``count(d[key])``, noting an absurd value on the entry (as ``where.key``) and reading it as 0."""
    n = count(d.get(key))
    if n is None:
        note_ignored(entry, f"{where}.{key}")
        return 0
    return n


def ts_field(entry, value, where: str = "timestamp") -> float | None:
    """``parse_ts(value)``, noting a number outside years 1..9999 on the entry."""
    ts = parse_ts(value)
    if ts is None and type(value) in (int, float):
        note_ignored(entry, where)
    return ts


def ignored_notes(entries=(), limit: int = 3, found: list | None = None) -> list[str]:
    """One note for the absurd values the entries held (read as missing), with their lines;
    ``found``: those (line, field) pairs when the caller already gathered them."""
    if found is None:
        found = [(e.lineno, f) for e in entries if e.extra and e.extra.get("ignored") for f in e.extra["ignored"]]
    if not found:
        return []
    shown = ", ".join(f"line {n} {f}" for n, f in found[:limit]) + (f" and {len(found) - limit} more" if len(found) > limit else "")
    return [f"{len(found)} absurd number(s) read as missing (negative, infinite or beyond 2^53 counts; times outside "
            f"years 1-9999): {shown}"]


def new_uuid(rng=None) -> str:
    """A version-4 UUID string; reproducible from ``rng`` (a random.Random) when given.
    ``uuid`` is imported here, on first use: reading a transcript never needs it."""
    import uuid

    return str(uuid.UUID(int=rng.getrandbits(128), version=4)) if rng is not None else str(uuid.uuid4())


def call_problem(block: dict, args_key: str) -> str | None:
    """Why OpenClaw's sanitizeToolCallInputs would drop this call, or None."""
    cid = block.get("id")
    if not isinstance(cid, str) or not cid.strip():
        return "no id"
    if block.get("partialJson") is not None:
        return "partialJson fragment"
    if block.get(args_key) is None and block.get("input" if args_key != "input" else "arguments") is None:
        return "no arguments"
    name = block.get("name")
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 64 or not NAME_RE.match(name.strip()):
        return "invalid name"
    return None


def args_chars(args) -> int:
    """len(JSON.stringify(args)) as JavaScript computes it (pi counts tool arguments so)."""
    if args is None:
        return 0
    if isinstance(args, str):
        return js_len(args)
    try:
        n = js_len(orjson.dumps(args).decode("utf-8"))
    except TypeError:  # an integer beyond 64 bits (read by msgspec): counted as orjson reads it, a float
        try:  # (or nested too deep for orjson to write: then nothing, as before)
            args = as_decoded(args)
            n = js_len(orjson.dumps(args).decode("utf-8"))
        except (TypeError, RecursionError):
            return 0
    floats: list = []
    _collect_floats(args, floats)
    for f in floats:  # orjson and JavaScript write some numbers differently (1.0 vs 1)
        n += len(js_number(f)) - len(orjson.dumps(f))
    return n


def _collect_floats(v, out: list) -> None:
    t = type(v)
    if t is float:
        out.append(v)
    elif t is dict:
        for x in v.values():
            _collect_floats(x, out)
    elif t is list:
        for x in v:
            _collect_floats(x, out)


def js_number(f: float) -> str:
    """A float as JavaScript's Number.prototype.toString (and so JSON.stringify) writes it."""
    if f != f or f in (float("inf"), float("-inf")):
        return "null"
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    from decimal import Decimal  # (here: not imported at every command's start)

    _, digits, exp = Decimal(repr(abs(f))).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len("".join(map(str, digits))) - len(ds)  # value = ds x 10^exp
    k = len(ds)
    n = k + exp  # position of the decimal point relative to the digits
    if k <= n <= 21:
        return sign + ds + "0" * (n - k)
    if 0 < n <= 21:
        return sign + ds[:n] + "." + ds[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + ds
    e = n - 1
    mant = ds[0] + ("." + ds[1:] if k > 1 else "")
    return f"{sign}{mant}e{'+' if e > 0 else '-'}{abs(e)}"


LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str read from JSON, a surrogate is a lone one (a pair is one character)
THINKING_TYPES = ("thinking", "redacted_thinking")


def without_thinking(blocks: list) -> list:
    """Message blocks less their thinking (redacted thinking too)."""
    return [b for b in blocks if not (isinstance(b, dict) and b.get("type") in THINKING_TYPES)]


DOUBLE_EXACT = 2 ** 53  # JavaScript's numbers hold every integer up to this exactly
_INDEX_MAX = 2 ** 32 - 2


def js_string(v, joined: bool = False) -> str:
    """A JSON value as JavaScript's ``String()`` writes it (``joined``: as ``Array.prototype.join`` writes an element,
    null as ""): a number as JavaScript writes its double, a list its elements joined by commas, an object
    ``[object Object]``."""
    if v is None:
        return "" if joined else "null"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and abs(v) < 2 ** 53:
        return str(v)
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:  # (an integer past a double's range)
            f = float("inf") if v > 0 else float("-inf")
        if f != f:
            return "NaN"
        if f in (float("inf"), float("-inf")):
            return "Infinity" if f > 0 else "-Infinity"
        return js_number(f)
    if isinstance(v, list):
        return ",".join(js_string(x, joined=True) for x in v)
    return "[object Object]"


def _js_key_order(d: dict) -> list:
    """A JavaScript object's own keys in its order: array indices ("0", "7"...) first, ascending, then
    the others as written."""
    idx = [k for k in d if type(k) is str and k.isdigit() and (k == "0" or k[0] != "0") and int(k) <= _INDEX_MAX]
    if not idx:
        return list(d)
    first = set(idx)
    return sorted(idx, key=int) + [k for k in d if k not in first]


def _js_str(s: str) -> str:
    out = json.dumps(s, ensure_ascii=False)
    return LONE_SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), out) if LONE_SURROGATE.search(out) else out


def js_stringify(v) -> str:
    """``JSON.stringify`` of a value JavaScript read from JSON (``JSON.parse``): compact, numbers as
    JavaScript writes its doubles (an integer past 2**53 rounded, one past double range ``null``), an
    object's keys in JavaScript's order, a lone surrogate escaped. Any depth (no recursion)."""
    out: list[str] = []
    todo: list = [v]
    while todo:
        x = todo.pop()
        t = type(x)
        if t is tuple:  # a piece of punctuation or a written key
            out.append(x[0])
        elif x is None:
            out.append("null")
        elif t is bool:
            out.append("true" if x else "false")
        elif t is int:
            if -DOUBLE_EXACT <= x <= DOUBLE_EXACT:
                out.append(str(x))
            else:
                try:
                    out.append(js_number(float(x)))
                except OverflowError:
                    out.append("null")
        elif t is float:
            out.append(js_number(x))
        elif t is str:
            out.append(_js_str(x))
        elif t is list:
            if not x:
                out.append("[]")
                continue
            out.append("[")
            todo.append(("]",))
            for i in range(len(x) - 1, -1, -1):
                todo.append(x[i])
                if i:
                    todo.append((",",))
        elif t is dict:
            keys = _js_key_order(x)
            if not keys:
                out.append("{}")
                continue
            out.append("{")
            todo.append(("}",))
            for i in range(len(keys) - 1, -1, -1):
                k = keys[i]
                todo.append(x[k])
                todo.append((_js_str(k if type(k) is str else str(k)) + ":",))
                if i:
                    todo.append((",",))
        else:
            out.append(_js_str(str(x)))
    return "".join(out)


def brief(v, limit: int = 40) -> str:
    """A value as a message names it: JSON text for a scalar (cut at ``limit``), "(an object)" or
    "(an array)" for a container (which may be nested deeper than repr goes)."""
    if type(v) is dict:
        return "(an object)"
    if type(v) is list:
        return "(an array)"
    if type(v) is float and (v != v or v in (float("inf"), float("-inf"))):
        return "Infinity" if v > 0 else "-Infinity" if v < 0 else "NaN"
    try:
        text = json.dumps(v)  # escaped: a lone surrogate prints
    except (TypeError, ValueError):
        text = repr(v)
    return text[:limit]


def js_to_number(v) -> float:
    """JavaScript's ``Number(v)`` for a value JSON holds, as a comparison with a number coerces it:
    NaN (every comparison false) where JavaScript gets no number."""
    nan = float("nan")
    t = type(v)
    if t is bool:
        return 1.0 if v else 0.0
    if t is int or t is float:
        return v
    if v is None:
        return 0.0
    if t is list:  # Number(String(list)): [] and [null] are 0, [x] is Number(String(x)), more is NaN
        if len(v) > 1:
            return nan
        x = v[0] if v else None
        return nan if type(x) in (bool, dict) else js_to_number(x)
    if t is str:
        s = v.strip(" \t\n\r\v\f\u00a0\ufeff\u2028\u2029")
        if not s:
            return 0.0
        if s[:2].lower() in ("0x", "0o", "0b"):
            try:
                return float(int(s[2:], {"x": 16, "o": 8, "b": 2}[s[1].lower()]))
            except ValueError:
                return nan
        if s in ("Infinity", "+Infinity", "-Infinity"):
            return float(s.replace("Infinity", "inf"))
        if not all(c in "0123456789+-.eE" for c in s):  # Python's float takes "inf", "nan", "1_0": JavaScript does not
            return nan
        try:
            return float(s)
        except ValueError:
            return nan
    return nan


def result_content_chars(content) -> tuple[int, int]:
    """(text chars, image count) of a tool result's content (string or blocks)."""
    if content is None:
        return 0, 0
    if isinstance(content, str):
        return js_len(content), 0
    text = images = 0
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict):
                t = b.get("type")
                if t == "text":
                    text += js_len(as_text(b.get("text")))
                elif t == "image":
                    images += 1
    return text, images


def scan_anthropic_blocks(entry, blocks: list, role: str, stats: bool = True) -> None:
    """Fill calls/results/char counts of an entry whose blocks are Anthropic-shaped.

    pi's estimateTokens rules: user messages count text only; assistants count text,
    thinking and tool name plus JSON arguments; tool results count text plus 4,800
    characters per image. ``stats=False`` leaves the character counts at 0 (repair and
    validate only need the structure, and measuring tool arguments is the costly part).
    """
    calls, results = [], []
    k_text = k_think = k_call = k_result = k_image = 0
    chars = 0
    visible = 0
    for i, b in enumerate(blocks):
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if type(t) is not str:  # not a block type: content the API refuses, counted as "other"
            t = None
        if t == "text":
            text = b.get("text")
            text = text if isinstance(text, str) else ""
            if stats:
                n = js_len(text)
                chars += n
                k_text += n
            if text and not text.isspace():
                visible += 1
            else:
                entry.blank_text = True
        elif t in THINKING_TYPES:
            if stats and role == "assistant":
                n = js_len(as_text(b.get("thinking"))) if t == "thinking" else 0
                chars += n
                k_think += n
            if b.get("signature") or b.get("thinkingSignature") or t == "redacted_thinking":
                entry.signed_thinking = True
            visible += 1
        elif t in CALL_TYPES:
            key = "input" if "input" in b else "arguments"
            name = b.get("name") if isinstance(b.get("name"), str) else ""
            cid = b.get("id") if isinstance(b.get("id"), str) else ""
            n = js_len(name) + args_chars(b.get(key)) if stats else 0
            calls.append(Call(i, cid, name, call_problem(b, key), n))
            chars += n
            k_call += n
            visible += 1
        elif t == "tool_result":
            rid = b.get("tool_use_id")
            if stats:
                text, images = result_content_chars(b.get("content"))
                n = text + images * IMAGE_CHARS
            else:
                text = images = n = 0
            results.append(Result(i, rid if isinstance(rid, str) else "", None, bool(b.get("is_error")), n))
            chars += n
            k_result += text
            if images:
                k_image += images * IMAGE_CHARS
            visible += 1
        elif t == "image":
            if stats and role in ("toolResult", "custom"):
                chars += IMAGE_CHARS
                k_image += IMAGE_CHARS
            visible += 1
        else:
            visible += 1
    if calls:
        entry.calls = tuple(calls)
    if results:
        entry.results = tuple(results)
    entry.nblocks = len(blocks)
    entry.chars = chars
    if k_text or k_think or k_call or k_result or k_image:
        entry.kinds = Kinds(k_text, k_think, k_call, k_result, k_image)
    entry.empty = visible == 0


def text_only(entry, text: str, stats: bool = True) -> None:
    """``scan_anthropic_blocks`` for string content (one text block), without building the block."""
    entry.nblocks = 1
    if stats:
        n = js_len(text)
        entry.chars = n
        if n:
            entry.kinds = Kinds(n)
    else:
        entry.chars = 0
    if text and not text.isspace():
        entry.empty = False
    else:
        entry.blank_text = True
        entry.empty = True


def blank_user_fixed(content):
    """OpenClaw's blank-user repair: whitespace-only string -> "(continue)"; blank text
    blocks removed, and an array left empty becomes one "(continue)" text block."""
    if isinstance(content, str):
        return BLANK_USER_FALLBACK_TEXT
    # content that is no list (an object, a number) or holds no block objects is empty, as the API sees it
    kept = [b for b in content if isinstance(b, dict) and not is_blank_text(b)] if isinstance(content, list) else []
    return kept or [{"type": "text", "text": BLANK_USER_FALLBACK_TEXT}]


def is_blank_text(block: dict) -> bool:
    """A text block the API refuses ("text content blocks must be non-empty"): its text empty,
    whitespace or not a string (as ``scan_anthropic_blocks`` reads it)."""
    if block.get("type") != "text":
        return False
    text = block.get("text")
    return not (isinstance(text, str) and text.strip())


def error_turn_content() -> list:
    return [{"type": "text", "text": STREAM_ERROR_FALLBACK_TEXT}]
