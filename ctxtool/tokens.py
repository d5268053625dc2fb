"""Token counting shared by every command.

The heuristic is pi's ``estimateTokens``: ceil(chars / 4) per message, where the
characters counted depend on the role (see ``formats.common.scan_anthropic_blocks``,
which computes ``Entry.chars`` while the file is read). Other estimators
(tiktoken, recorded usage, the count_tokens API) build on the same entries.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4
SAFETY_MARGIN = 1.2  # OpenClaw's margin on chars/4


def heuristic_chars_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN) if chars > 0 else 0


def heuristic_entry(e) -> int:
    """pi's estimateTokens for one message entry."""
    return heuristic_chars_tokens(e.chars)


def heuristic_entries(entries) -> int:
    return sum(heuristic_chars_tokens(e.chars) for e in entries)


def heuristic_view(view) -> int:
    """Heuristic tokens of a provider view (list of ViewMessage)."""
    return sum(heuristic_entries(m.entries) for m in view)
