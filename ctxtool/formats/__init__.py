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
    scores = {name: 0 for name in FORMATS}
    for obj in dicts:
        for name, mod in FORMATS.items():
            scores[name] += mod.sniff(obj)
    best = max(scores, key=scores.get)
    ranked = sorted(scores.values(), reverse=True)
    if forced is not None:
        if scores[forced.NAME] > 0:
            return forced
        raise FormatError(f"does not look like a {forced.NAME} transcript ({_what(dicts, sample, scores, best)}); "
                          "refusing --format " + forced.NAME, path=path)
    if ranked[0] <= 0:
        raise FormatError(_what(dicts, sample, scores, best) + "; not pi/OpenClaw, Claude Code, Codex CLI or Messages JSONL", path=path)
    if len(ranked) > 1 and ranked[1] == ranked[0]:
        raise FormatError("ambiguous transcript format; use --format to choose", path=path)
    return FORMATS[best]


def _what(dicts: list, sample: list, scores: dict, best: str) -> str:
    """What the first lines look like, for an error message."""
    if not dicts:
        kinds = sorted({JSON_KINDS.get(type(o), "other") for o in sample})
        return f"its lines hold JSON {'/'.join(kinds)} values, not objects (one JSON object per line expected)"
    if scores[best] > 0:
        return f"it looks like {best}"
    return "cannot tell the transcript format from the first lines"
