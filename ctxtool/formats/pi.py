"""pi coding agent / OpenClaw session files (versions 1 to 3).

Line 1 is the header ``{"type":"session","version":3,"id",...}``; entries carry an
8-hex ``id`` and a ``parentId`` (a tree, since v2). Messages hold an ``AgentMessage``
(user, assistant, toolResult, bashExecution, custom). Version 1 files have no ids and
use ``firstKeptEntryIndex`` in compactions; they are read as a linear list.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone

from ..model import COMPACTION, CONTENT_NOT_LIST, EMPTY, HEADER, IMAGE_CHARS, MESSAGE, META, Kinds, Result, Usage, as_text, js_len, parent_of
from .common import (
    REPAIR_TEXT,
    blank_user_fixed,
    error_turn_content,
    count_field,
    js_to_number,
    new_uuid,
    result_content_chars,
    scan_anthropic_blocks,
    set_extra,
    text_only,
    ts_field,
)

NAME = "pi"
CURRENT_VERSION = 3  # pi's CURRENT_SESSION_VERSION
ENTRY_TYPES = {
    "message", "thinking_level_change", "model_change", "compaction", "branch_summary",
    "custom", "custom_message", "label", "session_info",
}
COMPACTION_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
SUMMARY_SUFFIX = "\n</summary>"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# the message roles pi's convertToLlm passes on to the model (hookMessage: a v2 file's, read as custom);
# a message of any other role is in the session but never sent
SENT_ROLES = frozenset(("user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage", "branchSummary",
                        "compactionSummary"))

SNIFF_ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage")  # (as formats.SNIFF_ROLES)


def sniff(obj: dict) -> int:
    t = obj.get("type")
    if not isinstance(t, str):
        return 0
    if t == "session":
        return 10
    if t in ENTRY_TYPES:
        if t == "message":
            m = obj.get("message")
            return 3 if isinstance(m, dict) and m.get("role") in SNIFF_ROLES else 0
        return 3
    return 0



def _norm_block(b):
    if not isinstance(b, dict):
        return b
    t = b.get("type")
    if t == "toolCall":
        return {"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": b.get("arguments"), **({"partialJson": b["partialJson"]} if "partialJson" in b else {})}
    if t == "image":
        return {"type": "image", "source": {"type": "base64", "media_type": b.get("mimeType"), "data": b.get("data")}}
    if t == "thinking":
        out = {"type": "thinking", "thinking": b.get("thinking", "")}
        if b.get("thinkingSignature"):
            out["signature"] = b["thinkingSignature"]
        return out
    return b


def _content_blocks(content) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [_norm_block(b) for b in content]
    return []


def normalize(obj: dict, e, blocks: bool = True, stats: bool = True) -> None:
    """Fill the normalized view of entry ``e`` from a parsed pi line.

    ``blocks=False`` skips building the Anthropic-shaped blocks (the statistics are
    computed from pi's own blocks either way): streaming readers that release the
    blocks at once do not pay for them. ``stats=False`` skips character counts and
    usage of message content, which repair and validate never read.
    """
    get = obj.get
    t = get("type")
    e.type = t if isinstance(t, str) else "?"
    eid = get("id")
    e.id = eid if isinstance(eid, str) and eid else None  # "" links nothing: JavaScript takes it for false
    if eid is None and "id" in obj:
        set_extra(e, {"null_id": True})  # written null: pi resumes at no entry when it is the leaf (view.pi_path)
    pid = get("parentId")
    e.parent = parent_of(pid)
    if t == "message":
        m = get("message")
        role = m.get("role") if isinstance(m, dict) else None
        if not isinstance(role, str):
            e.kind = META
            e.ts = ts_field(e, get("timestamp"))
            set_extra(e, {"malformed": "message entry without a message object with a role (pi's buildSessionContext throws on it)"})
            return
        mget = m.get
        mts = mget("timestamp")
        e.ts = ts_field(e, mts, "message.timestamp") if type(mts) in (int, float) else None
        if e.ts is None:
            e.ts = ts_field(e, get("timestamp"))
        if role not in SENT_ROLES:  # pi's convertToLlm passes no other role on: the model never sees it
            e.kind = META
            set_extra(e, {"unsent": f"message with role {role!r} (pi does not send it)"})
            return
        e.kind = MESSAGE
        if role == "hookMessage":
            role = "custom"
        e.role = role
        if role == "toolResult":
            content = mget("content")
            call_id = mget("toolCallId")
            is_error = bool(mget("isError"))
            if blocks:
                e.blocks = [{"type": "tool_result", "tool_use_id": call_id, "content": _content_blocks(content), "is_error": is_error}]
            name = mget("toolName")
            if not isinstance(name, str):
                name = None
            if not isinstance(call_id, str):
                call_id = mget("toolUseId")
                if not isinstance(call_id, str):
                    call_id = ""
            if stats:
                text, images = result_content_chars(content)
                e.chars = text + images * IMAGE_CHARS
                e.kinds = Kinds(tool_result=text, image=images * IMAGE_CHARS)
                e.tool_chars = {name or "unknown": e.chars}
            e.results = (Result(0, call_id, name, is_error, e.chars),)
            e.nblocks = 1
            e.empty = False
            return
        if role == "bashExecution":
            cmd = as_text(mget("command"))
            out = as_text(mget("output"))
            text = f"Ran `{cmd}`\n" + (f"```\n{out}\n```" if out else "(no output)")
            e.blocks = [{"type": "text", "text": text}]
            e.chars = js_len(cmd) + js_len(out)
            e.kinds = Kinds(text=e.chars)
            e.nblocks = 1
            if mget("excludeFromContext"):
                set_extra(e, {"exclude": True})
                e.chars = 0
                e.kinds = EMPTY
            return
        content = mget("content")
        if role == "assistant" and type(content) is not list:
            # pi-ai reads an assistant message's content as an array (content.flatMap): another makes pi fail to send
            # the session at all (judge fuzz seed 1095, case 0094); repair gives it one (fix_content_list)
            set_extra(e, {CONTENT_NOT_LIST: True})
        if isinstance(content, str) and not blocks:
            text_only(e, content, stats)
        else:
            raw = [{"type": "text", "text": content}] if isinstance(content, str) else (content if isinstance(content, list) else [])
            scan_anthropic_blocks(e, raw, role, stats)
            if blocks:
                e.blocks = [_norm_block(b) for b in raw]
        if role == "assistant":
            stop = mget("stopReason")
            e.stop = stop if isinstance(stop, str) else None
            model = mget("model")
            e.model = model if isinstance(model, str) else None
            u = mget("usage") if stats else None
            if isinstance(u, dict):
                e.usage = Usage(
                    count_field(e, u, "input", "usage"), count_field(e, u, "output", "usage"),
                    count_field(e, u, "cacheRead", "usage"), count_field(e, u, "cacheWrite", "usage"),
                    count_field(e, u, "totalTokens", "usage"),
                )
            if e.model and mget("provider") == "openclaw":
                set_extra(e, {"synthetic_model": e.model})
        return
    e.ts = ts_field(e, obj.get("timestamp"))
    if t == "session":
        e.kind = HEADER
        if migrates_v1(obj):
            e.extra = {"v1": True}
        return
    if t == "compaction":
        e.kind = COMPACTION
        summary = obj.get("summary") if isinstance(obj.get("summary"), str) else ""
        e.role = "compactionSummary"
        e.blocks = [{"type": "text", "text": COMPACTION_PREFIX + summary + SUMMARY_SUFFIX}]
        e.chars = js_len(summary)
        e.kinds = Kinds(summary=e.chars)
        e.nblocks = 1
        first = obj.get("firstKeptEntryId")
        set_extra(e, {
            "first_kept": first if isinstance(first, str) else None,
            "first_kept_index": obj.get("firstKeptEntryIndex") if type(obj.get("firstKeptEntryIndex")) is int else None,  # pi ignores true/false
            "tokens_before": count_field(e, obj, "tokensBefore", "compaction"),
            "summary_chars": len(summary),
        })
        return
    if t == "branch_summary":
        summary = obj.get("summary") if isinstance(obj.get("summary"), str) else ""
        if summary:
            e.kind = MESSAGE
            e.role = "branchSummary"
            e.blocks = [{"type": "text", "text": BRANCH_PREFIX + summary + SUMMARY_SUFFIX}]
            e.chars = js_len(summary)
            e.kinds = Kinds(summary=e.chars)
            e.nblocks = 1
        else:
            e.kind = META
        return
    if t == "custom_message":
        e.kind = MESSAGE
        e.role = "custom"
        content = obj.get("content")
        raw = [{"type": "text", "text": content}] if isinstance(content, str) else (content if isinstance(content, list) else [])
        scan_anthropic_blocks(e, raw, "custom", stats)
        if blocks:
            e.blocks = [_norm_block(b) for b in raw]
        return
    e.kind = META
    if not isinstance(t, str):
        set_extra(e, {"malformed": "entry without a type (pi cannot place it; as the last line it would hide the whole history)"})
        return
    data = obj.get("data")
    if not isinstance(data, dict):
        data = EMPTY
    if t == "custom":
        set_extra(e, {"custom_type": obj.get("customType"), "data_ts": data.get("timestamp"), "provider": data.get("provider"),
                      "model": data.get("modelId")})
    elif t == "model_change":
        set_extra(e, {"provider": obj.get("provider"), "model": obj.get("modelId")})
    window = obj.get("contextWindow") or data.get("contextWindow")
    if window is not None:  # a recorded context window (ctxtool.window reads it from the index)
        e.extra = dict(e.extra or (), context_window=window)


# ---------------------------------------------------------------- builders


def new_id(taken: set, rng=None) -> str:
    """pi's id scheme: 8 hex chars, collision-checked, full UUID as a last resort.

    ``rng`` (a random.Random) makes ids reproducible: repair seeds it from the file's bytes.
    """
    for _ in range(100):
        cand = f"{rng.getrandbits(32):08x}" if rng is not None else os.urandom(4).hex()
        if cand not in taken:
            taken.add(cand)
            return cand
    cand = new_uuid(rng)
    taken.add(cand)
    return cand


def iso(ts: float | None = None) -> str:
    dt = datetime.fromtimestamp(ts, timezone.utc) if ts is not None else datetime.now(timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_id_from_path(path: str) -> str | None:
    m = UUID_RE.findall(os.path.basename(path).lower())
    return m[-1] if m else None


def cwd_from_path(path: str) -> str | None:
    """pi stores sessions under ``--<cwd with / replaced by ->--``; decode it (lossy)."""
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    if parent.startswith("--") and parent.endswith("--") and len(parent) > 4:
        return "/" + parent[2:-2].replace("-", "/")
    return None


def migrates_v1(header: dict) -> bool:
    """pi reads the file as version 1 (``migrateToCurrentVersion``: ``header.version ?? 1`` below 2,
    compared as JavaScript compares): it then gives every entry a new id, each linked to the one
    before it in file order, whatever ids and links the lines had."""
    v = header.get("version")
    return v is None or js_to_number(v) < 2


def make_header(path: str, *, version: int, first_ts: float | None, cwd: str | None = None, rng=None,
                session_id: str | None = None, timestamp: str | None = None) -> dict:
    """A session header as OpenClaw's ensureSessionHeader writes it; id from the file name when it has one."""
    header = {"type": "session"}
    if version >= 2:
        header["version"] = version
    header["id"] = session_id or session_id_from_path(path) or (
        new_uuid(rng))
    header["timestamp"] = timestamp or iso(first_ts)
    header["cwd"] = cwd or cwd_from_path(path) or ""
    return header


def synthetic_result(call_obj: dict, call_id: str, name: str, *, ts: float | None, with_ids: bool, taken: set, rng=None) -> dict:
    ms = int((ts if ts is not None else datetime.now(timezone.utc).timestamp()) * 1000)
    entry = {"type": "message"}
    if with_ids:
        entry["id"] = new_id(taken, rng)
        entry["parentId"] = call_obj.get("id")
    entry["timestamp"] = iso(ms / 1000)
    entry["message"] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name or "unknown",
        "content": [{"type": "text", "text": REPAIR_TEXT}],
        "isError": True,
        "timestamp": ms,
    }
    return entry


def drop_blocks(obj: dict, idxs: set) -> None:
    m = obj["message"]
    m["content"] = [b for i, b in enumerate(m.get("content") or []) if i not in idxs]


def fix_empty_error_turn(obj: dict) -> None:
    obj["message"]["content"] = error_turn_content()


def fix_content_list(obj: dict) -> None:
    """An assistant message's content that is no array as the array pi-ai reads: a string as its text block, else
    empty (nothing pi could send is lost)."""
    c = obj["message"].get("content")
    obj["message"]["content"] = [{"type": "text", "text": c}] if isinstance(c, str) else []


def fix_blank_user(obj: dict) -> None:
    obj["message"]["content"] = blank_user_fixed(obj["message"].get("content"))


def set_parent(obj: dict, parent: str | None) -> None:
    obj["parentId"] = parent


def set_id(obj: dict, new: str) -> None:
    obj["id"] = new


def fill_result_name(obj: dict, name: str) -> None:
    obj["message"]["toolName"] = name or "unknown"


def result_ids(obj: dict) -> list:
    """The call ids a raw line answers: a toolResult message's ``toolCallId`` (a string), else none."""
    m = obj.get("message")
    if obj.get("type") == "message" and isinstance(m, dict) and m.get("role") == "toolResult":
        i = m.get("toolCallId")
        return [i] if isinstance(i, str) else []
    return []

