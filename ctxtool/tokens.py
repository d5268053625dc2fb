"""Token counting shared by every command.

The heuristic is pi's ``estimateTokens``: ceil(chars / 4) per message, where the
characters counted depend on the role (see ``formats.common.scan_anthropic_blocks``,
which computes ``Entry.chars`` while the file is read):

* user: text only (images are not counted);
* assistant: text + thinking + tool name + JSON of the arguments;
* toolResult and custom: text, plus 4,800 characters per image;
* bashExecution: command + output;
* compaction and branch summaries: the summary.

Other estimators (tiktoken, recorded usage, the count_tokens API) build on the
same entries; see ``ctxtool.estimate``. AceClaw's per-message overheads and
OpenClaw's safety margin are optional adjustments on top of the heuristic.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4
SAFETY_MARGIN = 1.2  # OpenClaw's margin on chars/4

# AceClaw ContextEstimator overheads (tokens).
MESSAGE_OVERHEAD = 4
TOOL_USE_OVERHEAD = 20
TOOL_RESULT_OVERHEAD = 10


def heuristic_chars_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN) if chars > 0 else 0


def heuristic_entry(e) -> int:
    """pi's estimateTokens for one message entry."""
    return heuristic_chars_tokens(e.chars)


def heuristic_entries(entries) -> int:
    return sum(heuristic_per_entry(entries))


def heuristic_per_entry(entries) -> list[int]:
    """pi's one ceil(chars / 4) per message, spread over entries.

    A Claude Code response split over several lines (consecutive assistant lines with one
    ``msg_key``) is one message: each line gets its marginal share, so the lines of one
    response add up to exactly ceil(total / 4) and per-line breakdowns still sum."""
    out = []
    key = None
    group = 0
    for e in entries:
        c = e.chars if e.chars > 0 else 0
        k = e.msg_key if e.role == "assistant" else None
        if k is not None and k == key:
            before = group
            group += c
            out.append(heuristic_chars_tokens(group) - heuristic_chars_tokens(before))
        else:
            key, group = k, c
            out.append(heuristic_chars_tokens(c))
    return out


class HeuristicSum:
    """pi's heuristic for messages added one at a time (``-t usage`` and calibration): one
    ceil(chars / 4) per message, the lines of one Claude Code response (one ``msg_key``) counted
    as one message wherever they fall, even with tool results between them (``heuristic_per_entry``
    groups consecutive lines only, as the breakdowns do)."""

    __slots__ = ("tokens", "groups")

    def __init__(self, entries=()):
        self.tokens = 0
        self.groups: dict = {}
        for e in entries:
            self.add(e)

    def add(self, e) -> None:
        c = e.chars if e.chars > 0 else 0
        k = e.msg_key if e.role == "assistant" else None
        if k is None:
            self.tokens += heuristic_chars_tokens(c)
            return
        g = self.groups.get(k, 0)
        self.groups[k] = g + c
        self.tokens += heuristic_chars_tokens(g + c) - heuristic_chars_tokens(g)


def heuristic_view(view) -> int:
    """Heuristic tokens of a provider view (list of ViewMessage)."""
    return sum(heuristic_entries(m.entries) for m in view)


def overhead_entry(e, *, new_message: bool = True) -> int:
    """AceClaw's per-message overheads for one entry: 4 per message, 20 per tool use, 10 per tool result.

    ``new_message`` is False for the later lines of a Claude Code response split over
    several lines (one API message, so the 4-token message overhead is counted once).
    """
    return (MESSAGE_OVERHEAD if new_message else 0) + TOOL_USE_OVERHEAD * len(e.calls) + TOOL_RESULT_OVERHEAD * len(e.results)


def overheads(entries) -> int:
    """AceClaw overheads of a sequence of entries (split Claude lines count as one message)."""
    total = 0
    prev_key = None
    for e in entries:
        key = e.msg_key
        total += overhead_entry(e, new_message=key is None or key != prev_key)
        prev_key = key
    return total


def with_margin(tokens: int, margin: float | None) -> int:
    """``tokens`` times a safety margin (OpenClaw: 1.2), rounded up."""
    if not margin or margin == 1:
        return int(tokens)
    return math.ceil(tokens * margin)
