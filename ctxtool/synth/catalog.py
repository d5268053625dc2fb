"""The synthetic formats, the corruption catalogue and fixed values."""

from __future__ import annotations

from datetime import datetime, timezone


FORMATS: tuple[str, ...] = ("pi", "pi-v1", "claude", "messages")

DEFAULT_START = datetime(2026, 3, 1, 9, 0, 0, tzinfo=timezone.utc)

_ALL = frozenset(FORMATS)
_PI = frozenset({"pi", "pi-v1"})
_TREE = frozenset({"pi", "claude"})

#: corruption name -> formats where it can be injected
CORRUPTIONS: dict[str, frozenset[str]] = {
    "torn_tail": _ALL,
    "bad_control_char": _ALL,
    "partial_json_call": _PI,
    "missing_result": _ALL,
    "orphan_result": _ALL,
    "duplicate_result": _ALL,
    "separated_result": _ALL,
    "missing_header": _PI,
    "invalid_header": _PI,
    "duplicate_id": _TREE,
    "dangling_parent": _TREE,
    "parent_cycle": _TREE,
    "blank_lines": _ALL,
    "crlf": _ALL,
    "bom": _ALL,
    "nul_bytes": _ALL,
    "invalid_utf8": _ALL,
    "empty_error_turn": _PI,
    "blank_user_turn": _ALL,
    "bad_tool_name": _ALL,
    "no_id_call": _ALL,
}

# Applied to the file as a whole rather than to one turn.
_FILE_LEVEL = frozenset({"torn_tail", "crlf", "bom", "missing_header", "invalid_header"})
# Per-turn corruptions that need a turn with at least one tool call.
_NEEDS_TOOLS = frozenset(
    {
        "invalid_utf8",
        "missing_result",
        "orphan_result",
        "duplicate_result",
        "separated_result",
        "bad_tool_name",
        "no_id_call",
    }
)

BAD_TOOL_NAME = "bad name!"
BOM = b"\xef\xbb\xbf"
_CTRL_SENTINEL = "@@SYNTH-CTRL@@"
_UTF8_SENTINEL = "@@SYNTH-UTF8@@"
_CTRL_BYTES = b"\t\x1b[0m"  # raw TAB and ESC inside a JSON string
_BAD_UTF8 = b"\xe4\xb8 \xff\xfe"  # truncated CJK sequence, then bytes never valid in UTF-8
_ERROR_FALLBACK = "[assistant turn failed before producing content]"
