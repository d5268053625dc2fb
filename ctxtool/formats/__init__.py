"""On-disk transcript formats: detect, normalize (read) and build records (write).

One module per format. Each exposes ``NAME``, ``sniff(obj) -> int`` (how strongly
one parsed line looks like this format), ``normalize(obj, entry)`` (fill the
normalized view of an Entry) and the record builders repair and compaction use.
"""

from __future__ import annotations

from ..errors import FormatError
from . import claude, messages, pi

FORMATS = {m.NAME: m for m in (pi, claude, messages)}
NAMES = tuple(FORMATS)
SNIFF_LINES = 50


def get(name: str):
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r} (choose from {', '.join(NAMES)})") from None


def detect(objs: list, *, path: str | None = None):
    """Pick the format from the first parseable lines; FormatError when unsure."""
    if not objs:
        raise FormatError("no parseable JSON lines: not a session transcript", path=path)
    scores = {name: 0 for name in FORMATS}
    for obj in objs[:SNIFF_LINES]:
        if not isinstance(obj, dict):
            continue
        for name, mod in FORMATS.items():
            scores[name] += mod.sniff(obj)
    best = max(scores, key=scores.get)
    ranked = sorted(scores.values(), reverse=True)
    if ranked[0] <= 0:
        raise FormatError(
            "cannot tell the transcript format from the first lines (not pi/OpenClaw, Claude Code "
            "or Messages JSONL); use --format to force one",
            path=path,
        )
    if len(ranked) > 1 and ranked[1] == ranked[0]:
        raise FormatError("ambiguous transcript format; use --format to choose", path=path)
    return FORMATS[best]
