"""What a synthetic turn is made of (calls, steps, turns) and the small helpers that plan it."""

from __future__ import annotations

import zlib

from datetime import datetime, timezone
from typing import Any


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

_M32 = 0xFFFFFFFF
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _result_order(n_calls: int, target: str | None) -> tuple[list[int], int | None]:
    """Which calls get a result line, in order, and the one whose result is written late,
    for the corruption being injected into this turn."""
    order = list(range(n_calls))
    if target == "missing_result":
        order.pop()
    elif target == "no_id_call":
        order.remove(0)
    moved = order.pop() if target == "separated_result" else None
    return order, moved


def _plain_args(call, old_key: str, new_key: str) -> dict[str, Any]:
    """Tool arguments as pi and plain Messages tools take them (edits name their keys differently)."""
    kind = call.kind
    if kind == "read":
        return {"path": call.path}
    if kind == "write":
        return {"path": call.path, "content": call.arg}
    if kind == "edit":
        return {"path": call.path, old_key: call.arg, new_key: call.arg2}
    if kind == "exec":
        return {"command": call.arg}
    if kind == "grep":
        return {"pattern": call.arg, "path": call.path}
    return {"url": call.arg}


def _mix32(x: int) -> int:
    """A bijection on 32-bit ints (distinct inputs give distinct ids)."""
    x &= _M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _M32
    x ^= x >> 16
    return x


def _numbered(text: str, first: int = 1) -> str:
    """``cat -n`` style numbering, as Claude Code's Read tool returns it."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.split("\n"), first))


class _Call:
    __slots__ = ("kind", "path", "arg", "arg2", "out", "err", "image", "ms", "cid", "name", "noid")

    def __init__(self, kind: str, path: str, arg: str, arg2: str, out: str, err: bool, image: Any, ms: int):
        self.kind = kind
        self.path = path
        self.arg = arg
        self.arg2 = arg2
        self.out = out
        self.err = err
        self.image = image
        self.ms = ms
        self.cid: str | None = None
        self.name: str | None = None  # overrides the format's tool name (bad_tool_name)
        self.noid = False


class _Step:
    __slots__ = ("thinking", "text", "calls", "stop")

    def __init__(self, thinking: str | None, text: str | None, calls: list[_Call], stop: str):
        self.thinking = thinking
        self.text = text
        self.calls = calls
        self.stop = stop  # toolUse | stop | error | aborted | partial


class _Turn:
    __slots__ = ("prompts", "steps", "corruption", "target")

    def __init__(self) -> None:
        self.prompts: list[tuple[str, Any]] = []
        self.steps: list[_Step] = []
        self.corruption: str | None = None
        self.target = -1  # index of the step that carries a tool corruption


_PI_NAMES = {"read": "read", "write": "write", "edit": "edit", "exec": "exec", "grep": "grep", "web_fetch": "web_fetch"}
_CL_NAMES = {"read": "Read", "write": "Write", "edit": "Edit", "exec": "Bash", "grep": "Grep", "web_fetch": "WebFetch"}
_MS_NAMES = {"read": "read", "write": "write", "edit": "edit", "exec": "bash", "grep": "grep", "web_fetch": "web_fetch"}
_TOOL_KINDS = ("read", "exec", "edit", "write", "grep", "web_fetch")
_TOOL_WEIGHTS = (30, 30, 12, 8, 12, 8)
_TOOL_CUM = tuple(sum(_TOOL_WEIGHTS[: i + 1]) for i in range(len(_TOOL_WEIGHTS)))

# pi providers: (api, provider, model, $/M rates (input, output, cacheRead, cacheWrite), id style, cache ttl ms)
_PI_PROVIDERS = (
    ("anthropic-messages", "anthropic", "claude-sonnet-4-6", (3.0, 15.0, 0.3, 3.75), "toolu", 5 * 60_000),
    ("openai-completions", "vllm", "qwen3.5-9b", (0.0, 0.0, 0.0, 0.0), "indexed", 0),
)
_CLAUDE_MODEL = "claude-opus-4-6"
_CLAUDE_VERSION = "2.1.39"
_CLAUDE_CACHE_TTL = 60 * 60_000


def _as_utc_ms(start: datetime) -> int:
    if start.tzinfo is None:
        start = start.replace(tzinfo=timezone.utc)
    return int(start.timestamp() * 1000)

def _hash_path(p: str) -> int:
    """Stable 32-bit hash of a string (Python's str hash is salted per process)."""
    return zlib.crc32(p.encode())
