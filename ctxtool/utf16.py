"""Strings as JavaScript and Java see them: sequences of UTF-16 code units.

OpenClaw (JavaScript), Claude Code (JavaScript) and AceClaw (Java) measure and cut
text by UTF-16 code units. ``units(s)`` turns a Python string into one whose
characters *are* those code units (a character outside the BMP becomes its two
surrogates), so ``len``, slicing and indexes behave as ``String.length`` and
``slice`` do; ``text(u)`` turns it back (pairs join again, a lone half stays a lone
surrogate). The usual case, text without astral characters, costs nothing.
"""

from __future__ import annotations

from array import array

from .model import js_len

# ECMAScript WhiteSpace + LineTerminator: what String.prototype.trim() and \s remove/match.
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_SPACE_CLASS = "[" + JS_SPACE.replace("\\", "\\\\") + "]"
JS_NONSPACE_CLASS = "[^" + JS_SPACE + "]"


def units(s: str) -> str:
    """``s`` with each UTF-16 code unit as one character."""
    if s.isascii() or len(s) == js_len(s):
        return s
    return "".join(map(chr, array("H", s.encode("utf-16-le", "surrogatepass"))))


def text(u: str) -> str:
    """Back from code units to a Python string (surrogate pairs joined)."""
    if u.isascii() or not any("\ud800" <= c <= "\udfff" for c in u):
        return u
    return u.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def printable(s: str, replacement: str = "\ufffd") -> str:
    """A lone surrogate (text cut inside a pair) replaced so that the string can be written as UTF-8."""
    if s.isascii() or not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    return "".join(replacement if "\ud800" <= c <= "\udfff" else c for c in s)


def trim_end(u: str) -> str:
    """JavaScript's ``trimEnd()``."""
    return u.rstrip(JS_SPACE)


def trim(u: str) -> str:
    """JavaScript's ``trim()``."""
    return u.strip(JS_SPACE)


def is_high(c: str) -> bool:
    return "\ud800" <= c <= "\udbff"


def is_low(c: str) -> bool:
    return "\udc00" <= c <= "\udfff"


def safe_slice(u: str, start: int, end: int | None = None) -> str:
    """OpenClaw's ``sliceUtf16Safe``: ``slice`` that never returns half of a surrogate pair at either edge."""
    n = len(u)
    lo = max(n + start, 0) if start < 0 else min(start, n)
    hi = n if end is None else (max(n + end, 0) if end < 0 else min(end, n))
    if hi <= lo:
        return ""
    if 0 < lo < n and is_low(u[lo]) and is_high(u[lo - 1]):
        lo += 1
    if 0 < hi < n and is_high(u[hi - 1]) and is_low(u[hi]):
        hi -= 1
    return u[lo:hi]


def truncate_safe(u: str, limit: int) -> str:
    """OpenClaw's ``truncateUtf16Safe``."""
    limit = max(0, int(limit))
    return u if len(u) <= limit else safe_slice(u, 0, limit)


def line_of(u: str, offset: int) -> int:
    """1-based line number of code unit ``offset``."""
    return u.count("\n", 0, max(0, offset)) + 1
