"""On-disk transcript formats: detect, normalize (read) and build records (write).

One module per format. Each exposes ``NAME``, ``sniff(obj) -> int`` (how strongly
one parsed line looks like this format), ``normalize(obj, entry)`` (fill the
normalized view of an Entry) and the record builders repair and compaction use.
"""

from __future__ import annotations

from ..errors import FormatError
from . import claude, codex, messages, pi

FORMATS = {m.NAME: m for m in (pi, claude, codex, messages)}
NAMES = tuple(FORMATS)
SNIFF_LINES = 50


def get(name: str):
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r} (choose from {', '.join(NAMES)})") from None


JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def detect(objs: list, *, path: str | None = None, forced=None):
    """The format of a file from its first parseable lines; FormatError when unsure.

    ``forced`` (a format module, from ``--format``) is checked rather than trusted: when
    none of the first lines looks like it, the file is refused, because reading, say, a
    Claude Code transcript as pi would make repair drop every line."""
    if not objs:
        raise FormatError("no parseable JSON lines: not a session transcript", path=path)
    sample = objs[:SNIFF_LINES]
    dicts = [o for o in sample if isinstance(o, dict)]
    rows = [line_scores(o) for o in dicts]
    fmt = chosen(rows, forced)
    if fmt is not None:
        return fmt
    scores = _totals(rows)
    best = max(scores, key=scores.get)
    if forced is not None:
        raise FormatError(f"does not look like a {forced.NAME} transcript ({_what(dicts, sample, scores, best)}); "
                          "refusing --format " + forced.NAME, path=path)
    if scores[best] <= 0:
        raise FormatError(_what(dicts, sample, scores, best) + "; not pi/OpenClaw, Claude Code, Codex CLI or Messages JSONL", path=path)
    raise FormatError("ambiguous transcript format; use --format to choose", path=path)


def line_scores(obj: dict) -> tuple:
    """How strongly one parsed line looks like each format, in ``FORMATS``' order (each format's ``sniff``). The C
    part's ``sniff`` gives the same from the line's bytes (``_scan_sniff.c``, with ``SNIFF_TYPES`` and
    ``SNIFF_ROLES``)."""
    return tuple(mod.sniff(obj) for mod in FORMATS.values())


def chosen(rows: list, forced=None):
    """The format the scores of the object lines among a file's first ``SNIFF_LINES`` tell, or None where ``detect``
    refuses them (no format scores, a tie, or a ``forced`` one that scores nothing)."""
    scores = _totals(rows)
    if forced is not None:
        return forced if scores[forced.NAME] > 0 else None
    ranked = sorted(scores.values(), reverse=True)
    if ranked[0] <= 0 or ranked[1] == ranked[0]:
        return None
    return FORMATS[max(scores, key=scores.get)]


def _totals(rows: list) -> dict:
    return dict(zip(FORMATS, map(sum, zip(*rows)))) if rows else dict.fromkeys(FORMATS, 0)


def _sniff_words() -> tuple[dict, dict]:
    """The words the sniffs compare, as the C part's ``sniff`` looks them up: the top-level ``type``'s (UTF-8) to its
    bits, and a ``role``'s to its bits (the SN_* constants of ``_scan_sniff.c``)."""
    types: dict = {}
    roles: dict = {}
    for table, words, bit in ((types, claude.SNIFF_MESSAGE_TYPES, 1), (types, claude.KNOWN, 2), (types, ("session",), 4),
                              (types, pi.ENTRY_TYPES, 8), (types, ("message",), 16), (types, codex.LINE_TYPES, 32),
                              (types, codex.SNIFF_STRONG_TYPES, 64), (roles, pi.SNIFF_ROLES, 1),
                              (roles, messages.SNIFF_ROLES, 2)):
        for w in words:
            table[w.encode()] = table.get(w.encode(), 0) | bit
    return types, roles


SNIFF_TYPES, SNIFF_ROLES = _sniff_words()


def _what(dicts: list, sample: list, scores: dict, best: str) -> str:
    """What the first lines look like, for an error message."""
    if not dicts:
        kinds = sorted({JSON_KINDS.get(type(o), "other") for o in sample})
        return f"its lines hold JSON {'/'.join(kinds)} values, not objects (one JSON object per line expected)"
    if scores[best] > 0:
        return f"it looks like {best}"
    return "cannot tell the transcript format from the first lines"
