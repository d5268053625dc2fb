"""Numbers as Codex's reader takes them where it reads a struct: an item line's ``metadata`` and an item's
``internal_chat_message_metadata_passthrough``.

Codex reads a rollout line with serde_json built with ``arbitrary_precision``: each number is kept as it is written
(an exponent's ``E`` read as ``e``, its ``+`` dropped), and where a struct is read, a number is handed on as one only
when it is an integer from -2**127 to below 2**128, or a double written as Rust writes that double (``ryu``'s text of
it, ``1e39``, ``5.0``, or its ``Display``, ``5``, ``0.0000001``). Any other number (``1.0e39``, ``5.0000``, ``1e-07``,
``1e400``, 2**128 written out) is handed on as a map the struct takes as empty: no value, and the line is read. A
number handed on as one is refused there, and the line skipped (judged at each case: ``tests/test_codex_judge.py``).

orjson reads the value, not the spelling (``1e39`` and ``1.0e39`` are one float; an integer of 20 digits or more is a
float too): a line with a number in one of these fields is parsed again for its spelling (``exact_numbers``).
"""

from __future__ import annotations

from decimal import Decimal
from math import copysign

PASSTHROUGH = "internal_chat_message_metadata_passthrough"  # a struct: an object, an array or null

_INF = float("inf")
_INT_DIGITS = 40  # more digits than any integer from -2**127 to below 2**128


def exact_numbers(obj, raw: bytes):
    """``obj`` (the line ``raw`` as parsed) with a number in its ``metadata`` or its item's passthrough that Codex reads
    as no value (``number_read``) made None; a number it reads as one is left as parsed. ``obj`` itself when neither
    field is a number (or the line does not parse again)."""
    if type(obj) is not dict:
        return obj
    p = obj.get("payload")
    m, pt = obj.get("metadata"), (p.get(PASSTHROUGH) if type(p) is dict else None)
    if not (_number(m) or _number(pt)):
        return obj
    import json

    try:  # every number as written: a _Written (text) in place of the value
        written = json.loads(raw, parse_float=_Written, parse_int=_Written)
    except (ValueError, RecursionError):
        return obj
    if type(written) is not dict:
        return obj
    out = dict(obj)
    wm, wp = written.get("metadata"), written.get("payload")
    if _number(m) and type(wm) is _Written and not number_read(wm):
        out["metadata"] = None
    if _number(pt) and type(wp) is dict and type(wp.get(PASSTHROUGH)) is _Written and not number_read(wp[PASSTHROUGH]):
        out["payload"] = {**p, PASSTHROUGH: None}
    return out


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
