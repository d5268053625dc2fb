"""Numbers as Codex's reader takes them where it reads a struct: an item line's ``metadata``, an item's
``internal_chat_message_metadata_passthrough``, and a ``compacted`` line's struct fields (``_struct_places``).

Codex reads a rollout line with serde_json built with ``arbitrary_precision``: each number is kept as it is written
(an exponent's ``E`` read as ``e``, its ``+`` dropped), and where a struct is read, a number is handed on as one only
when it is an integer from -2**127 to below 2**128, or a double written as Rust writes that double (``ryu``'s text of
it, ``1e39``, ``5.0``, or its ``Display``, ``5``, ``0.0000001``). Any other number (``1.0e39``, ``5.0000``, ``1e-07``,
``1e400``, 2**128 written out) is handed on as a map the struct takes as empty: no value, and the line is read (unless
the struct requires a field). A number handed on as one is refused there, and the line skipped (judged at each case:
``tests/test_codex_judge.py``).

orjson reads the value, not the spelling (``1e39`` and ``1.0e39`` are one float; an integer of 20 digits or more is a
float too): a line with a number in one of these fields is parsed again for its spelling (``exact_numbers``).
"""

from __future__ import annotations

from math import copysign

PASSTHROUGH = "internal_chat_message_metadata_passthrough"  # a struct: an object, an array or null

_INF = float("inf")
_INT_DIGITS = 40  # more digits than any integer from -2**127 to below 2**128


def exact_numbers(obj, raw: bytes):
    """``obj`` (the line ``raw`` as parsed) with each number where Codex's reader reads a struct (``_struct_places``)
    that it reads as no value (``number_read``) made an empty object, as that reader makes it a map the struct takes
    as empty (a struct with required fields then refuses it, as it refuses ``{}``); a number it reads as one is left as
    parsed. ``obj`` itself, changed in place; parsed again only when such a place holds a number."""
    if type(obj) is not dict or not any(_number(c[k]) for c, k in _struct_places(obj)):
        return obj
    import json

    try:  # every number as written: a _Written (its text) in place of the value
        written = json.loads(raw, parse_float=_Written, parse_int=_Written)
    except (ValueError, RecursionError):
        return obj
    if type(written) is not dict:
        return obj
    for (c, k), (wc, wk) in zip(_struct_places(obj), _struct_places(written)):
        w = wc[wk]
        if _number(c[k]) and type(w) is _Written and not number_read(w):
            c[k] = {}
    return obj


def _struct_places(obj: dict):
    """(container, key) of each place in a line where Codex's reader reads a struct and the line holds a value: an item
    line's ``metadata``, an item's passthrough, and a ``compacted`` line's ``replacement_history_metadata`` entries, its
    replacement items' passthroughs, ``retained_context``, ``latest_token_usage_record`` and ``resume_metadata``."""
    if "metadata" in obj:
        yield obj, "metadata"
    p = obj.get("payload")
    if type(p) is not dict:
        return
    if PASSTHROUGH in p:
        yield p, PASSTHROUGH
    if obj.get("type") != "compacted":
        return
    for k in ("retained_context", "latest_token_usage_record", "resume_metadata"):
        if k in p:
            yield p, k
    rhm, rh = p.get("replacement_history_metadata"), p.get("replacement_history")
    if type(rhm) is list:
        yield from ((rhm, i) for i in range(len(rhm)))
    if type(rh) is list:
        yield from ((x, PASSTHROUGH) for x in rh if type(x) is dict and PASSTHROUGH in x)


class _Written(str):
    """A number's JSON text, as the line writes it."""


def _number(v) -> bool:
    return type(v) is int or type(v) is float


def number_read(text: str) -> bool:
    """Whether Codex's reader, where it reads a struct, takes the JSON number ``text`` as a number (the line refused
    there) rather than as no value (the line read as if the field were null)."""
    s = text.replace("E", "e").replace("e+", "e")
    if "." not in s and "e" not in s and len(s) <= _INT_DIGITS and -(1 << 127) <= int(s) < (1 << 128):
        return True
    f = float(s)
    return f not in (_INF, -_INF) and (s == rust_ryu(f) or s == rust_display(f))


def no_value(v) -> bool:
    """``number_read``'s answer for a number known only by its value (a line parsed without its spellings): an integer
    outside -2**127 to 2**128, or a double beyond range, is no value (as written out, which such a value is)."""
    return (type(v) is int and not -(1 << 127) <= v < (1 << 128)) or (type(v) is float and v in (_INF, -_INF))


def _shortest(f: float) -> tuple[str, int]:
    """The shortest digits that read back as ``abs(f)`` (not zero), and where the decimal point goes among them:
    0.0025 is ("25", -2), 1234.5 ("12345", 4), 1e39 ("1", 40)."""
    from decimal import Decimal  # (here: not imported at every command's start)

    sign, digits, exp = Decimal(repr(abs(f))).normalize().as_tuple()
    ds = "".join(map(str, digits))
    return ds, len(ds) + exp


def rust_ryu(f: float) -> str:
    """``ryu::Buffer::format_finite(f)``, as serde_json writes a double: ``5.0``, ``1000000000000000.0``, ``1e16``,
    ``0.00001``, ``1e-7``, ``1.5e300``."""
    if f == 0:
        return "-0.0" if copysign(1.0, f) < 0 else "0.0"
    ds, kk = _shortest(f)
    n, sign = len(ds), "-" if f < 0 else ""
    if n <= kk <= 16:
        return f"{sign}{ds}{'0' * (kk - n)}.0"
    if 0 < kk <= 16:
        return f"{sign}{ds[:kk]}.{ds[kk:]}"
    if -5 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{ds}"
    return f"{sign}{ds if n == 1 else ds[0] + '.' + ds[1:]}e{kk - 1}"


def rust_display(f: float) -> str:
    """Rust's ``f.to_string()``: the shortest digits, never an exponent, no ``.0``: ``5``, ``0.0000001``, ``1`` and 39
    zeros for 1e39."""
    if f == 0:
        return "-0" if copysign(1.0, f) < 0 else "0"
    ds, kk = _shortest(f)
    n, sign = len(ds), "-" if f < 0 else ""
    if kk <= 0:
        return f"{sign}0.{'0' * -kk}{ds}"
    if kk < n:
        return f"{sign}{ds[:kk]}.{ds[kk:]}"
    return f"{sign}{ds}{'0' * (kk - n)}"
