"""Plain Anthropic Messages JSONL: one ``{"role", "content"}`` object per line."""

from __future__ import annotations

from ..model import MESSAGE, META
from . import claude  # same block shape: its content helpers serve here too
from .common import REPAIR_TEXT, scan_anthropic_blocks, set_extra

NAME = "messages"
SNIFF_ROLES = ("user", "assistant")  # (as formats.SNIFF_ROLES)


def sniff(obj: dict) -> int:
    if "type" not in obj and obj.get("role") in SNIFF_ROLES and "content" in obj:
        return 4
    return 0


def normalize(obj: dict, e, blocks: bool = True, stats: bool = True) -> None:
    role = obj.get("role")
    e.type = role if isinstance(role, str) else "?"
    if role not in ("user", "assistant") or "type" in obj:
        e.kind = META
        return
    e.kind = MESSAGE
    e.role = role
    content = obj.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content if isinstance(content, list) else [])
    e.blocks = blocks
    has_results = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    scan_anthropic_blocks(e, blocks, "assistant" if role == "assistant" else ("toolResult" if has_results else "user"), stats)
    bad = tuple(i for i, b in enumerate(blocks) if type(b) is not dict or type(b.get("type")) is not str)
    if bad:  # not a content block (no string type): the API refuses the request; repair removes them
        set_extra(e, {"bad_blocks": bad})
    stop = obj.get("stop_reason")
    if isinstance(stop, str):
        e.stop = {"end_turn": "stop", "tool_use": "toolUse", "max_tokens": "length"}.get(stop, stop)


def synthetic_result(call_obj: dict, call_id: str, name: str, *, ts=None, with_ids=False, taken=None, rng=None) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": REPAIR_TEXT, "is_error": True}]}


def _as_message(fn):
    def wrapped(obj, *a):
        holder = {"message": obj}
        fn(holder, *a)
    return wrapped


# The Claude helpers act on obj["message"]; a Messages line is the message itself.
add_result_blocks = _as_message(claude.add_result_blocks)
drop_blocks = _as_message(claude.drop_blocks)
fix_empty_error_turn = _as_message(claude.fix_empty_error_turn)
fix_blank_user = _as_message(claude.fix_blank_user)


def set_parent(obj, parent) -> None:  # no tree in this format
    return None


def set_id(obj, new) -> None:
    return None


def new_id(taken, rng=None):
    return None
