"""OpenAI Codex CLI rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

Every line is ``{"timestamp", "type", "payload"}`` (newer files add ``ordinal``, response items
a line-level ``metadata``). ``session_meta`` opens the file (its ``base_instructions`` are the
first item Codex sends); ``response_item`` lines are Responses API items (messages, reasoning,
function and custom tool calls and their outputs, local shell calls, web searches);
``compacted`` replaces the history before it (with ``replacement_history``, or rebuilt from the
user messages and its ``message`` summary); ``turn_context`` and ``event_msg`` lines (token
counts, user and agent messages, aborted turns, rollbacks) never reach the model, nor do the
newer ``world_state`` and ``token_usage_record`` lines. Calls and outputs pair by ``call_id``.

What Codex makes of these lines when it resumes is in ``ctxtool.codex_rules``; here each line
becomes one entry, items in the Anthropic block shape the commands share (``tool_use`` with the
``call_id`` as id, ``tool_result`` with it as ``tool_use_id``).
"""

from __future__ import annotations

import re

from datetime import datetime

import orjson

from ..model import (COMPACTION, HEADER, IMAGE_CHARS, MESSAGE, META, Call, Entry, Kinds, Result, Usage, entry_to_tuple,
                     js_len)
from . import messages as _messages
from .codex_numbers import PASSTHROUGH, no_value
from .common import MAX_COUNT, count_field, parse_ts, result_content_chars, scan_anthropic_blocks, set_extra

_fromiso = datetime.fromisoformat

NAME = "codex"
LINE_TYPES = {"session_meta", "response_item", "compacted", "turn_context", "event_msg", "world_state",
              "token_usage_record"}
# call item type -> the output item type that answers it (local shell calls are answered by
# function_call_output, as Codex records them)
CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
         "local_shell_call": "function_call_output", "tool_search_call": "tool_search_output"}
OUTPUTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}
SERVER_ITEMS = {"web_search_call", "image_generation_call", "compaction", "compaction_summary"}
# items Codex keeps out of what it sends
UNSENT_ITEMS = {"ghost_snapshot"}
ROLES = {"user", "assistant", "developer"}


def _tag(v):
    """A type or role field as the format uses it: text, or nothing (a list or object is no tag)."""
    return v if isinstance(v, str) else None


SNIFF_STRONG_TYPES = ("session_meta", "response_item")  # (as formats.SNIFF_TYPES)


def sniff(obj: dict) -> int:
    t = _tag(obj.get("type"))
    if t in LINE_TYPES and isinstance(obj.get("payload"), dict):
        return 6 if t in SNIFF_STRONG_TYPES else 4
    return 0


def normalize(obj: dict, e, blocks: bool = True, stats: bool = True) -> None:
    """``stats=False`` (repair, validate) reads the structure only: no character counts or
    usage, and no blocks unless ``blocks``: most lines of a rollout are events. Blocks of calls
    and outputs are built only for ``blocks`` (their counts are read from the payload)."""
    t = obj.get("type")
    p = obj.get("payload")
    ts = obj.get("timestamp")
    if type(ts) is str:  # parse_ts, its common case here
        try:
            e.ts = _fromiso(ts).timestamp()
        except ValueError:
            e.ts = parse_ts(ts)
    else:
        e.ts = parse_ts(ts)
    if type(t) is not str:
        t = None
    if type(p) is not dict:
        e.type = "?" if t is None else t
        e.kind = META
        return
    o = obj.get("ordinal")
    ordinal_ok = o is None or (type(o) is int and 0 <= o <= 18446744073709551615)  # U64, inline: every line
    if type(ts) is not str or not ordinal_ok:
        # the line's envelope: a String timestamp and an optional u64 ordinal to Codex's reader, which
        # skips a line with either of another type, whatever the line holds (judged)
        e.type = ("?" if type(p.get("type")) is not str else p["type"]) if t == "response_item" else (t or "?")
        bad = tuple(k for k, ok in (("timestamp", type(ts) is str), ("ordinal", ordinal_ok)) if not ok)
        what = "a timestamp that is no string" if bad[0] == "timestamp" else "an ordinal that is no unsigned integer"
        _refused(e, f"item whose line has {what}" if t == "response_item" else f"{t or 'a'} line with {what}")
        e.extra["envelope"] = bad  # the fields repair mends (repair_codex.fix_envelopes)
        return
    if t == "response_item":
        m = obj.get("metadata")
        if m is not None:  # an item's metadata is typed too (a compacted line's is not read: judged)
            why = _bad_metadata(m)
            if why is not None:
                e.type = "?" if type(p.get("type")) is not str else p["type"]
                return _refused(e, why)
        item(p, e, stats, blocks)
        return
    e.type = "?" if t is None else t
    if t == "event_msg":
        _event(p, e, stats)
    elif t == "turn_context":
        e.kind = META
        m = p.get("model")
        if type(m) is str:
            e.model = m
            e.extra = {"model": m}
    elif t == "session_meta":
        _session_meta(p, e, stats)
    elif t == "compacted":
        _compacted(p, e, stats)
    else:
        e.kind = META


# Codex's reader (serde) types the fields of the items it knows strictly: a field of another type, or a
# required one missing, makes it refuse the whole line, which it then skips on resume (judged field by
# field with the real Codex 0.169: tests/test_codex_judge.py)
KNOWN_ITEMS = frozenset(("message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                         "custom_tool_call_output"))
# the items whose id and passthrough Codex's reader types as it types the known items' (judged: a local shell call, a
# tool search call and its output, a web search call, an image generation call, a compaction given an id of 5, or a
# passthrough turn_id of -1, are skipped)
TYPED_ITEMS = KNOWN_ITEMS | {"local_shell_call", "tool_search_call", "tool_search_output", "web_search_call",
                            "image_generation_call", "compaction", "compaction_summary"}
_CONTENT_ITEMS = {"input_text": "text", "output_text": "text", "input_image": "image_url"}
# an input_image's detail as Codex's reader takes it (its enum, names as written; null or missing: none): another value
# makes it refuse the line (judged: "zzz", "Original", "", 5, true, {})
IMAGE_DETAILS = frozenset(("auto", "low", "high", "original"))
NAMESPACED = frozenset(("function_call", "custom_tool_call", "function_call_output"))  # a string namespace or null
PHASES = ("commentary", "final_answer")  # a message's phase, or null
NO_CALL_ID = "no_call_id"  # an entry's extra: a function_call_output Codex sends without a call_id (rule 4m)


def bad_detail(c: dict) -> bool:
    """Whether an ``input_image``'s ``detail`` is one Codex's reader refuses."""
    d = c.get("detail")
    return d is not None and (type(d) is not str or d not in IMAGE_DETAILS)


# a local shell call's status and its action's fields as Codex's reader takes them (judged with 0.169, each field given
# 5, {}, null, "x" and left out; judge fuzz seed 1085, case 0037: a working_directory of 0): the status one of these,
# required; the action an object tagged ``exec`` whose ``command`` is an array of strings (required) and whose
# ``timeout_ms`` is an unsigned integer, ``working_directory`` and ``user`` strings, ``env`` an object of strings, each
# null or missing where it has none; other fields of it are not read
LOCAL_SHELL_STATUS = ("completed", "in_progress", "incomplete")
LOCAL_SHELL_ACTION = ("command", "timeout_ms", "working_directory", "env", "user")


def local_shell_readable(p: dict) -> bool:
    """Whether Codex's reader takes a ``local_shell_call`` item's ``call_id``, ``status`` and ``action``."""
    a = p.get("action")
    if not _opt(p.get("call_id"), str) or p.get("status") not in LOCAL_SHELL_STATUS or type(a) is not dict:
        return False
    command, timeout, env = a.get("command"), a.get("timeout_ms"), a.get("env")
    return (a.get("type") == "exec" and type(command) is list and all(type(x) is str for x in command)
            and (timeout is None or (type(timeout) is int and 0 <= timeout <= U64))
            and _opt(a.get("working_directory"), str) and _opt(a.get("user"), str)
            and (env is None or (type(env) is dict and all(type(v) is str for v in env.values()))))


def server_item_readable(p: dict) -> bool:
    """Whether Codex's reader takes an image generation call's or a compaction's fields (judged with 0.169, each given
    5, null and left out): an image generation call's ``status`` and ``result`` strings, required, its
    ``revised_prompt`` a string or null; a compaction's (or ``compaction_summary``'s) ``encrypted_content`` a string,
    required."""
    it = p.get("type")
    if it == "image_generation_call":
        return type(p.get("status")) is str and type(p.get("result")) is str and _opt(p.get("revised_prompt"), str)
    if it == "compaction" or it == "compaction_summary":
        return type(p.get("encrypted_content")) is str
    return True


def tool_search_readable(p: dict) -> bool:
    """Whether Codex's reader takes a ``tool_search_call`` or ``tool_search_output`` item's fields (judged with 0.169,
    each given 5, "x", null and left out): a ``call_id`` string or null; an ``execution`` string, required; a call's
    ``status`` a string or null and its ``arguments`` any value, required; an output's ``status`` a string, required,
    and its ``tools`` an array (of anything), required."""
    if not _opt(p.get("call_id"), str) or type(p.get("execution")) is not str:
        return False
    if p.get("type") == "tool_search_call":
        return _opt(p.get("status"), str) and "arguments" in p
    return type(p.get("status")) is str and type(p.get("tools")) is list


def _refused(e: Entry, why: str) -> None:
    e.kind = META  # Codex skips the line on resume
    e.extra = {"unsent": f"{why}: Codex cannot read it (skipped on resume)", "refused": True}


def _opt(v, kind) -> bool:
    """``v`` is null or of type ``kind`` (an optional field as Codex's reader takes it)."""
    return v is None or type(v) is kind


U64 = (1 << 64) - 1
U32 = (1 << 32) - 1
_SOURCE_ROLES = ("user", "assistant")


# an item line's ``metadata`` as Codex's reader (0.171) types it: field -> kind, every field may be missing (read as its
# default), other keys (``mcp_attribution``, ``ordinal``...) are not read. A kind: "u64", "u8", "bool", "str",
# "retained_source" (``_retained_source``), ("opt", kind) (null too), ("list", kind), ("enum", names) (a name, or an
# object of one name whose value is null or {}), ("struct", ((field, kind), ...)) (an object whose fields not "opt" are
# required, or an array of all of them in order). Each field given 5, null, "x", [], {}, true, -1, ["x"] and [5], the
# structs' fields found from the reader's own messages (``RUST_LOG=warn``: "missing field `text`"), judged.
_SENDER = ("struct", (("receiver_turn_id", "str"), ("receiver_message_id", "str"), ("text", "str")))
_OMISSIONS = ("struct", (("user_instructions", "bool"), ("assistant_context", "bool")))
_IMAGE_SOURCE = ("struct", (("prepared_url_digest", ("list", "u8")),
                            ("detail", ("opt", ("enum", ("auto", "low", "high", "original")))),
                            ("original_data_url", "str")))
_ITEM_META = {
    **dict.fromkeys(("history_sequence", "sampled_through_sequence", "user_input_order", "fallback_token_limit_override"),
                    ("opt", "u64")),
    **dict.fromkeys(("client_authored", "compaction_output", "guardian_source_order_guidance",
                     "additional_context_tool_output", "harness_authored_configuration",
                     "compaction_without_file_error_sources", "inherited_user_message", "native_search_fallback_used",
                     "tool_audio_budget_applied"), "bool"),
    "retain_across_windows": ("opt", "bool"),
    "delivered_assistant_message": ("opt", "str"),
    "compaction_model_hash": ("opt", "str"),
    "guardian_review_ids": ("list", "str"),
    "sender_user_messages": ("opt", _SENDER),
    "guardian_retained_omissions": ("opt", _OMISSIONS),
    "image_replay_sources": ("list", _IMAGE_SOURCE),
    "model_search_state": ("opt", ("enum", ("unused", "search_mcp", "standalone"))),
    "retained_source": ("opt", "retained_source"),
}
# the same written as an array is read as the struct's fields in order (serde): what the first seven must be, as probed
# (judge fuzz, seed 106; 0.171 put the image sources third); what comes after them is not known here: taken as read
_META_SEQ = (("opt", "u64"), ("opt", "u64"), ("list", _IMAGE_SOURCE), ("list", "retained_source"), ("list", "str"),
             "bool", ("opt", _OMISSIONS))
_SCALARS = {"u64": lambda v: type(v) is int and 0 <= v <= U64, "u8": lambda v: type(v) is int and 0 <= v <= 255,
            "bool": lambda v: type(v) is bool, "str": lambda v: type(v) is str,
            "retained_source": lambda v: _retained_source(v)}


def _typed(v, kind) -> bool:
    """``v`` is of the ``kind`` (as ``_ITEM_META`` writes one) to Codex's reader."""
    if type(kind) is str:
        return _SCALARS[kind](v)
    form, inner = kind
    if form == "opt":
        return v is None or _typed(v, inner)
    if form == "list":
        return type(v) is list and all(_typed(x, inner) for x in v)
    if form == "enum":
        if type(v) is dict and len(v) == 1:
            (v, unit), = v.items()
            if not (unit is None or unit == {}):
                return False
        return type(v) is str and v in inner
    if type(v) is list:  # a struct as an array: every field, in order
        return len(v) == len(inner) and all(_typed(x, k) for x, (_, k) in zip(v, inner))
    return type(v) is dict and all(
        _typed(v[name], k) if name in v else (type(k) is tuple and k[0] == "opt") for name, k in inner)


# the entries of a reasoning item's summary and content: tagged texts (judged: another tag, a text of another type, a
# missing one, make Codex skip the line)
SUMMARY_TAGS = ("summary_text",)
CONTENT_TAGS = ("reasoning_text", "text")


def reasoning_parts(entries: list, tags: tuple) -> list | None:
    """``(tag, text)`` of each entry of a reasoning item's summary or content as Codex's reader takes it (an object with
    one of ``tags`` as its ``type`` and a string ``text``, its other fields left out; or an array of the two), or None
    when one is of another shape: Codex then skips the line (judged)."""
    out = []
    for x in entries:
        if type(x) is dict:
            tag, text = x.get("type"), x.get("text")
        elif type(x) is list and len(x) == 2:
            tag, text = x
        else:
            return None
        if type(tag) is not str or tag not in tags or type(text) is not str:
            return None
        out.append((tag, text))
    return out


def output_items(out: list) -> list | None:
    """A call output's array as Codex's reader takes it: each item an ``input_text`` with a string ``text`` (also
    written as the array ``["input_text", text]``, read as the object) or an ``input_image`` with a string
    ``image_url`` (and a ``detail`` it knows, ``bad_detail``); None when one is of another shape: Codex then skips the
    line (judged)."""
    items = []
    for x in out:
        if type(x) is list and len(x) == 2 and x[0] == "input_text" and type(x[1]) is str:
            x = {"type": "input_text", "text": x[1]}
        elif type(x) is not dict or type(x.get("text" if x.get("type") == "input_text" else "image_url")) is not str or (
                x.get("type") not in ("input_text", "input_image")) or (x["type"] == "input_image" and bad_detail(x)):
            return None
        items.append(x)
    return items


def sent_content(parts: list) -> list:
    """The content entries Codex sends of a reasoning item: all of them when one is a ``reasoning_text``, else none
    (the field left out; judged)."""
    return parts if any(tag == "reasoning_text" for tag, _ in parts) else []


def _bad_metadata(m) -> str | None:
    """Why Codex's reader refuses an item line's ``metadata``, or None: each field typed as ``_ITEM_META`` says; an
    array is read as the struct's fields in order, the first seven checked (``_META_SEQ``)."""
    if m is None:
        return None
    if type(m) is list:
        if not all(_typed(v, kind) for v, kind in zip(m, _META_SEQ)):
            return "item whose line's metadata (an array) holds a field of another type"
        return None
    if no_value(m):
        return None  # read as no metadata
    if type(m) is not dict:
        return "item whose line's metadata is no object"
    for k, v in m.items():
        kind = _ITEM_META.get(k)
        if kind is not None and not _typed(v, kind):
            return f"item whose line's metadata.{k} is of another type"
    return None


def _retained_source(rs) -> bool:
    """A ``retained_source`` as Codex's reader takes it: an ``id`` (``message_id`` and ``turn_id``
    strings, ``role`` user or assistant), a string ``revision`` and a boolean ``complete``, all
    required. A struct may also be an array of its fields in this order, all of them (judged)."""
    got = _fields3(rs, "id", "revision", "complete")
    ids = _fields3(got[0], "message_id", "turn_id", "role") if got is not None else None
    if ids is None:
        return False
    mid, turn, role = ids
    return (type(mid) is str and type(turn) is str and type(role) is str and role in _SOURCE_ROLES
            and type(got[1]) is str and type(got[2]) is bool)


def _fields3(v, a: str, b: str, c: str):
    """The three fields of a struct as serde reads one: an object's keys, or an array of exactly
    three values in order; None for anything else."""
    if type(v) is dict:
        return v.get(a), v.get(b), v.get(c)
    if type(v) is list and len(v) == 3:
        return v
    return None


def _bad_content(content: list) -> str | None:
    """Why Codex's reader refuses a message's content items: each is an input_text or output_text
    with a string text, or an input_image with a string image_url (and a detail it knows)."""
    for c in content:
        key = _CONTENT_ITEMS.get(c.get("type")) if type(c) is dict and type(c.get("type")) is str else None
        if key is None:
            return "message with a content item Codex does not know"
        if type(c.get(key)) is not str:
            return f"message whose {c['type']} {key} is not a string"
        if key == "image_url" and bad_detail(c):
            return "message whose input_image detail is not one Codex knows"
        if c["type"] == "output_text" and not _lists_or_null(c):
            return "message whose output_text annotations or logprobs is no array"
    return None


def item(p: dict, e: Entry, stats: bool = True, blocks: bool = True) -> None:
    """One Responses item (a ``response_item`` payload, or an item of a replacement history).
    Without ``blocks`` a call, an output or a reasoning item is read without building its block."""
    it = p.get("type")
    if type(it) is not str:
        it = None
    e.type = "?" if it is None else it
    i = p.get("id")
    e.id = i if type(i) is str else None
    if it in TYPED_ITEMS:  # the fields Codex's reader types strictly, checked where each is read below
        if not _opt(i, str):
            return _refused(e, f"{it} whose id is not a string")
        if it in NAMESPACED and not _opt(p.get("namespace"), str):
            return _refused(e, f"{it} whose namespace is not a string")
        if it == "message" and p.get("phase") is not None and p.get("phase") not in PHASES:
            return _refused(e, "message whose phase is not one Codex knows")
        pt = p.get(PASSTHROUGH)
        if pt is not None:
            if type(pt) is dict or type(pt) is list:
                # its typed fields (judged): turn_id a string, create_time a number, by name or, in an array, the
                # first two in that order (judge fuzz seed 116); inline
                turn, ct = (pt.get("turn_id"), pt.get("create_time")) if type(pt) is dict else (pt + [None, None])[:2]
                if (turn is not None and type(turn) is not str) or (ct is not None and type(ct) is not float
                                                                    and type(ct) is not int):
                    return _refused(e, f"{it} whose {PASSTHROUGH}.turn_id or create_time is of another type")
            elif not no_value(pt):  # (such a number: read as no passthrough)
                return _refused(e, f"{it} whose {PASSTHROUGH} is no object")
    if it == "message":
        role = _tag(p.get("role"))
        content = p.get("content")
        if role is None or role == "system" or not isinstance(content, list):
            # Codex sends no system message and cannot read one without content or a string role; another
            # role it sends as written (judged: "", "tool", "System"), which the API then refuses (validate)
            e.kind = META
            e.extra = {"unsent": f"message with role {role!r}" if role is None or role == "system" else "message without content"}
            return
        if not _opt(p.get("status"), str):
            return _refused(e, "message whose status is not a string")
        texts = None if blocks else _texts(content)
        why = _bad_content(content) if texts is None else None
        if why is not None:
            return _refused(e, why)
        e.kind = MESSAGE
        e.role = "assistant" if role == "assistant" else "user"
        if texts is not None:  # text items only: scan_anthropic_blocks' reading of them, without the blocks
            e.nblocks = len(texts)
            chars = visible = 0
            for x in texts:
                if stats:
                    chars += js_len(x)
                if x and not x.isspace():
                    visible += 1
                else:
                    e.blank_text = True
            e.chars = chars
            if chars:
                e.kinds = Kinds(chars)
            e.empty = visible == 0
        else:
            bl = [_content_block(c) for c in content]
            e.blocks = bl
            scan_anthropic_blocks(e, bl, e.role, stats)
        if role == "developer":
            e.extra = {"context": "developer", ROLLBACK_TRIM: True} if trimmed_with_turn(content) else {"context": "developer"}
        elif role not in ROLES:
            e.extra = {"context": "developer", "odd_role": role}
        elif role == "user" and _contextual(content):
            e.extra = {"context": "user"}
            if _text0(content).lstrip().startswith("<environment_context>"):
                e.extra["environment"] = True
        return
    if it == "reasoning":  # one thinking block (scan_anthropic_blocks' reading of it, inline)
        summary, more, enc = p.get("summary"), p.get("content"), p.get("encrypted_content")
        if type(summary) is not list or not _opt(more, list) or not _opt(enc, str):
            return _refused(e, "reasoning whose summary is no array, or content or encrypted_content of another type")
        parts, extra = reasoning_parts(summary, SUMMARY_TAGS), reasoning_parts(more or [], CONTENT_TAGS)
        if parts is None or extra is None:
            return _refused(e, "reasoning whose summary or content holds an entry of another shape")
        e.kind = MESSAGE
        e.role = "assistant"
        thinking = "\n".join(text for _, text in parts + sent_content(extra))
        if blocks:
            b = {"type": "thinking", "thinking": thinking}
            if isinstance(enc, str):
                b["signature"] = enc
            e.blocks = [b]
        e.nblocks = 1
        n = js_len(thinking) if stats else 0
        e.chars = n
        if n:
            e.kinds = Kinds(0, n)
        if enc and isinstance(enc, str):
            e.signed_thinking = True
        e.empty = False  # an empty summary still carries the encrypted reasoning
        return
    if it in CALLS:
        cid = p.get("call_id")
        name = p.get("name")
        if it == "function_call" or it == "custom_tool_call":
            raw = p.get("arguments" if it == "function_call" else "input")
            if type(name) is not str or type(raw) is not str or not _opt(p.get("status"), str):
                return _refused(e, f"{it} whose name, {'arguments' if it == 'function_call' else 'input'} or status "
                                   "is of another type, or missing")
        elif it == "local_shell_call" and not local_shell_readable(p):
            return _refused(e, "local_shell_call whose call_id, status or action is of another type, or missing")
        elif it == "tool_search_call" and not tool_search_readable(p):
            return _refused(e, "tool_search_call whose call_id, status, execution or arguments is of another type, "
                               "or missing")
        if type(name) is not str:
            name = "local_shell" if it == "local_shell_call" else it
        if type(cid) is not str:
            if it in ("function_call", "custom_tool_call"):
                e.kind = META  # Codex cannot read it (call_id is required): skipped on resume
                e.extra = {"unsent": f"{it} without a call_id"}
                return
            cid = ""  # local shell and tool search calls may lack one: no output is expected then
        e.kind = MESSAGE
        e.role = "assistant"
        e.nblocks = 1
        n = 0
        if stats or blocks:
            raw = p.get("arguments") if it in ("function_call", "tool_search_call") else (
                p.get("input") if it == "custom_tool_call" else p.get("action"))
            if stats:  # the call as the model wrote it: its name and its arguments' JSON text
                n = js_len(name) + (js_len(raw) if type(raw) is str else js_len(_dumps(raw)) if raw is not None else 0)
                e.chars = n
                if n:
                    e.kinds = Kinds(0, 0, n)
            if blocks:
                inp = raw
                if it == "function_call" and type(raw) is str:
                    try:
                        inp = orjson.loads(raw)
                    except orjson.JSONDecodeError:
                        pass
                e.blocks = [{"type": "tool_use", "id": cid, "name": name, "input": inp if inp is not None else {}}]
        if cid:
            e.calls = (Call(0, cid, name, None, n),)
        return
    if it in OUTPUTS:
        cid = p.get("call_id")
        if it in KNOWN_ITEMS:
            out = p.get("output")
            if it == "custom_tool_call_output" and not _opt(p.get("name"), str):
                return _refused(e, f"{it} whose name is not a string")
            if type(out) is not str and (type(out) is not list or output_items(out) is None):
                return _refused(e, f"{it} whose output is no string or array of text and image items")
        elif it == "tool_search_output" and not tool_search_readable(p):
            return _refused(e, f"{it} whose call_id, status, execution or tools is of another type, or missing")
        no_id = False
        if type(cid) is not str:
            if it == "tool_search_output":
                cid = ""
            elif cid is None and it == "function_call_output":
                # Codex reads it (the field may be null or missing) and sends it without a call_id, where it is
                # (judged, rule 4m): the API refuses it (validate), repair gives it the call it answers
                cid, no_id = "", True
            else:
                e.kind = META
                e.extra = {"unsent": f"{it} without a call_id"}
                return
        e.kind = MESSAGE
        e.role = "toolResult"
        e.nblocks = 1
        n = 0
        if stats or blocks:
            out = p.get("output") if it != "tool_search_output" else p.get("tools")
            if it in KNOWN_ITEMS and type(out) is list:
                out = output_items(out)
            content = out if type(out) is str else _output_content(out)
            if stats:
                if type(content) is str:
                    text, images = js_len(content), 0
                else:
                    text, images = result_content_chars(content)
                n = text + images * IMAGE_CHARS
                e.chars = n
                if n:
                    e.kinds = Kinds(0, 0, 0, text, images * IMAGE_CHARS)
            if blocks:
                e.blocks = [{"type": "tool_result", "tool_use_id": cid, "content": content}]
        if cid:
            e.results = (Result(0, cid, None, False, n),)
        elif no_id:
            e.extra = {NO_CALL_ID: True}
        return
    if it == "web_search_call" and (("action" in p and web_search_action(p["action"]) is REFUSED_ACTION)
                                    or not _opt(p.get("status"), str)):
        return _refused(e, "web_search_call whose action or status Codex cannot read")
    if it in SERVER_ITEMS and not server_item_readable(p):
        return _refused(e, f"{it} whose fields Codex cannot read")
    if it in SERVER_ITEMS:
        e.kind = MESSAGE
        e.role = "assistant"
        e.blocks = [{"type": "server_item", "item": it}]
        e.nblocks = 1
        if stats:
            n = len(p["encrypted_content"]) if it.startswith("compaction") else js_len(_dumps(p.get("action") or p.get("result") or ""))
            e.chars = n
            if n:
                e.kinds = Kinds(tool_call=n)
        return
    e.kind = META
    e.extra = {"unsent": f"{it} item" if it in UNSENT_ITEMS else f"item type {it!r} Codex does not send"}


# A web search call's action as Codex reads it (an enum tagged by ``type``, its fields optional and typed; a tag it does
# not know, or an index past the last variant, is its ``other``; the list form gives the tag, then the fields in
# order). Judged with the real Codex: tests/test_codex_judge.py (34 shapes), judge fuzz seed 1069, case 0114.
_WS_ACTIONS = (("search", (("query", str), ("queries", list))), ("open_page", (("url", str),)),
               ("find_in_page", (("url", str), ("pattern", str))), ("other", ()))
_WS_NAMES = tuple(n for n, _ in _WS_ACTIONS)
REFUSED_ACTION = object()


def web_search_action(v):
    """The action Codex sends for a web_search_call's ``action`` (None: none), or ``REFUSED_ACTION`` where it cannot
    read it and skips the line: an object without a ``type``, a tag of another type (null, a boolean, a fraction, an
    object), a known variant's field of another type, an empty list or one with more elements than its variant has
    fields (``["other", 1]``), a string or a number."""
    if v is None:
        return None
    if type(v) is dict:
        if "type" not in v:
            return REFUSED_ACTION
        tag, fields = v["type"], v
    elif type(v) is list and v:
        tag, fields = v[0], None
    else:
        return REFUSED_ACTION
    if type(tag) is str:
        k = _WS_NAMES.index(tag) if tag in _WS_NAMES else 3
    elif type(tag) is int and tag >= 0:
        k = min(tag, 3)
    else:
        return REFUSED_ACTION
    name, spec = _WS_ACTIONS[k]
    if fields is None:  # the list form: no more elements than the variant has fields (``other``: none)
        if len(v) - 1 > len(spec):
            return REFUSED_ACTION
        fields = {key: x for (key, _), x in zip(spec, v[1:])}
    if not spec:
        return {"type": name}
    out = {"type": name}
    for key, kind in spec:
        x = fields.get(key)
        if x is None:
            continue
        if type(x) is not kind or (kind is list and any(type(y) is not str for y in x)):
            return REFUSED_ACTION
        out[key] = x
    return out


def reload_part(obj: dict, e: Entry) -> Entry:
    """A fresh entry for item ``e.extra["sub"]`` of the replacement history of ``obj`` (a
    ``compacted`` line), blocks included."""
    fresh = Entry(e.index, e.lineno, e.offset, e.length, e.eol, META, "?")
    item(obj["payload"]["replacement_history"][e.extra["sub"]], fresh)
    fresh.extra = dict(fresh.extra or {}, **e.extra)
    fresh.obj = obj
    return fresh


def _texts(content: list) -> list | None:
    """The texts of a message's content when every item is an input or output text with a string
    text (as ``_content_block`` reads them), else None."""
    out = []
    for c in content:
        if type(c) is not dict:
            return None
        t = c.get("type")
        if t != "input_text" and t != "output_text":
            return None
        x = c.get("text")
        if type(x) is not str or not _lists_or_null(c):
            return None
        out.append(x)
    return out


def _lists_or_null(c: dict) -> bool:
    """A text item's ``annotations`` and ``logprobs``: arrays or null, as Codex's reader takes them (judged)."""
    return _opt(c.get("annotations"), list) and _opt(c.get("logprobs"), list)


def _content_block(c) -> dict:
    if not isinstance(c, dict):
        return {"type": "text", "text": ""}
    t = _tag(c.get("type"))
    if t in ("input_text", "output_text"):
        x = c.get("text")
        return {"type": "text", "text": x if isinstance(x, str) else ""}
    if t == "input_image":
        return {"type": "image", "source": {"type": "url", "url": c.get("image_url")}}
    return dict(c)


def _output_content(out):
    """A call output as tool_result content: its text, or its content items as blocks."""
    if isinstance(out, str):
        return out
    if isinstance(out, dict):  # older payload object {"content", "success"}
        inner = out.get("content")
        if isinstance(inner, str):
            return inner
        out = inner if isinstance(inner, list) else out.get("content_items")
    if isinstance(out, list):
        return [_content_block(c) for c in out]
    return "" if out is None else _dumps(out)


# a developer message Codex trims with a rolled-back turn when it stands right above that turn's prompt: one of its
# input_text items starts, after white space, with one of these, in any ASCII case (judged with Codex 0.169, each
# written before the last prompt of a recording and that turn rolled back; "<model_switchx", "<foo>", "Hello" and an
# "<environment_context>" from the developer are kept: docs/codex-rules.md, rule 7)
TRIMMED_DEVELOPER = ("<permissions instructions>", "<model_switch>", "<persistent_mode>", "<apps_instructions>",
                     "<collaboration_mode>", "<multi_agent_role>", "<multi_agent_mode>", "<environments_instructions>",
                     "<git_attribution>", "<realtime_conversation>", "<tools>", "<personality_spec>", "<token_budget>",
                     "<context_window_guidance>", "<context_window>", "<skills_instructions>", "<plugins_instructions>",
                     "<rollout_budget>", "approved command prefix saved:")
ROLLBACK_TRIM = "rollback_trim"  # an entry's extra: a developer message of TRIMMED_DEVELOPER
_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


def trimmed_with_turn(content: list) -> bool:
    """Whether a developer message of this content is one Codex trims with a rolled-back turn (``TRIMMED_DEVELOPER``)."""
    for c in content:
        if type(c) is dict and c.get("type") == "input_text" and type(c.get("text")) is str:
            if c["text"].lstrip()[:32].translate(_ASCII_LOWER).startswith(TRIMMED_DEVELOPER):
                return True
    return False


# the texts Codex 0.169 takes for context it renders, not typed by the user: one whose white-space-trimmed text starts
# with one of these tags and ends with its closing one, in any ASCII case; a user message one of whose input_text items
# is such a text is context (no turn of the user's: rule 7, and an older compaction's user messages, rule 6). Judged
# with each written right above a rolled-back turn: an environment context written without its closing tag, a
# "<user_instructions>" message (older clients wrote AGENTS.md so) and a text followed by context in one message were
# read otherwise by ctxtool, which took a message whose every text started with a tag of its own list
CONTEXT_MARKERS = (("<environment_context>", "</environment_context>"), ("# agents.md instructions", "</instructions>"),
                   ("<turn_aborted>", "</turn_aborted>"), ("<user_shell_command>", "</user_shell_command>"),
                   ("<skill>", "</skill>"), ("<subagent_notification>", "</subagent_notification>"),
                   ("<recommended_plugins>", "</recommended_plugins>"), ("<goal_context>", "</goal_context>"))


def context_text(text: str) -> bool:
    """Whether Codex takes this user text for context it renders (``CONTEXT_MARKERS``)."""
    t = text.strip()
    head, tail = t[:32].translate(_ASCII_LOWER), t[-32:].translate(_ASCII_LOWER)
    return any(head.startswith(a) and tail.endswith(b) for a, b in CONTEXT_MARKERS)


def _contextual(content: list) -> bool:
    return any(type(c) is dict and c.get("type") == "input_text" and type(c.get("text")) is str
               and context_text(c["text"]) for c in content)


def _text0(content: list) -> str:
    for c in content:
        if isinstance(c, dict) and isinstance(c.get("text"), str):
            return c["text"]
    return ""


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
HISTORY_MODES = ("legacy", "paginated")


def meta_refusal(p) -> str | None:
    """Why Codex 0.169's reader refuses a ``session_meta`` payload (it then refuses to resume the whole rollout: "does
    not start with session metadata"), or None. Judged field by field (tests/test_codex_judge.py): the id a UUID; the
    timestamp, cwd, originator and cli_version strings; the others as ``_META_FIELDS`` says (each may be missing); a
    fork's history base with its thread id and both ends."""
    if type(p) is not dict:
        return "its payload is missing or no object"
    i = p.get("id")
    if type(i) is not str or not _UUID.fullmatch(i):
        return "its id is missing or no UUID"
    for k in ("timestamp", "cwd", "originator", "cli_version"):
        if type(p.get(k)) is not str:
            return f"its {k} is missing or no string"
    for k, ok, nullable in _META_FIELDS:
        if k not in p or (nullable and p[k] is None):
            continue
        v = p[k]
        if not ok(v):
            return f"its {k} is {'null' if v is None else _kind_of(v)}, which Codex does not read there"
    base = p.get("history_base")
    if base is not None:
        if type(base) is not dict or type(base.get("thread_id")) is not str or not _UUID.fullmatch(base["thread_id"]):
            return "its history_base has no thread id"
        for k in ("end_byte_offset", "end_ordinal_exclusive"):
            v = base.get(k)
            if type(v) is not int or v < 0:
                return f"its history_base's {k} is missing or no count"
    return None


# (field, what Codex's reader takes, whether null is taken too): each judged (tests/test_codex_judge.py, META_FIELDS)
_META_FIELDS = (
    ("source", lambda v: type(v) is str or (type(v) is dict and list(v) == ["subagent"]), False),  # any name; one object
    ("history_mode", lambda v: v in HISTORY_MODES, False),
    ("account_scoped", lambda v: type(v) is bool, False),
    ("model_provider", lambda v: type(v) is str, True),
    ("base_instructions", lambda v: type(v) is dict and type(v.get("text")) is str, True),
    ("context_window", lambda v: type(v) is dict and type(v.get("window_id")) is str, True),
    ("runtime_workspace_roots", lambda v: type(v) is list and all(type(x) is str for x in v), True),
)


def _kind_of(v) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list",
            dict: "an object"}.get(type(v), "another value") if not (type(v) is str and len(v) < 20) else repr(v)


def _session_meta(p: dict, e: Entry, stats: bool) -> None:
    """The file's header: Codex sends its ``base_instructions`` first (older files have
    ``instructions``, which the current client ignores: it sends its own then)."""
    e.kind = HEADER
    i = p.get("id")
    e.id = i if isinstance(i, str) else None
    extra: dict = {}
    why = meta_refusal(p)
    if why is not None:
        extra["meta_refused"] = why
    fork = p.get("forked_from_id")
    if isinstance(fork, str):
        extra["forked_from"] = fork
        base = p.get("history_base")
        if isinstance(base, dict) and isinstance(base.get("thread_id"), str):
            end = base.get("end_byte_offset")
            extra["history_base"] = {"thread_id": base["thread_id"],
                                     "end_byte_offset": end if isinstance(end, int) and not isinstance(end, bool) else None}
    src = p.get("source")
    if isinstance(src, dict) and isinstance(src.get("subagent"), (dict, str)):
        sub = src["subagent"]
        spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
        extra["subagent"] = spawn.get("parent_thread_id") if isinstance(spawn, dict) and spawn.get("parent_thread_id") else True
    for k in ("cli_version", "model_provider", "originator"):
        if isinstance(p.get(k), str):
            extra[k] = p[k]
    if isinstance(p.get("history_mode"), str):
        extra["paginated"] = p["history_mode"] == "paginated"
    bi = p.get("base_instructions")
    text = bi.get("text") if isinstance(bi, dict) else None
    if isinstance(text, str) and text:  # empty instructions: Codex sends no item for them (judged; judge fuzz seed 113)
        extra["base"] = True
        e.role = "user"
        e.blocks = [{"type": "text", "text": text}]
        scan_anthropic_blocks(e, e.blocks, "user", stats)
    elif isinstance(p.get("instructions"), str):
        extra["legacy_instructions"] = True
    e.extra = extra


def _compacted(p: dict, e: Entry, stats: bool) -> None:
    if type(p.get("message")) is not str:  # a required String to Codex's reader (judged: missing, null, 5)
        return _refused(e, "compacted line whose message is missing or no string")
    rh = p.get("replacement_history")
    why = _bad_compaction(p, rh)
    if why is not None:
        return _refused(e, why)
    subs = None
    if isinstance(rh, list):  # read first: one item Codex's reader refuses makes it skip the whole line
        subs = []
        for k, x in enumerate(rh):
            if type(x) is not dict:
                return _refused(e, "compacted line whose replacement history holds an item that is no object")
            why = _bad_replacement_item(x)
            if why is not None:
                return _refused(e, f"compacted line whose replacement history holds {why}")
            s = Entry(0, 0, 0, 0, b"", META, "?")  # placed at the line when expanded (codex_rules.expand)
            item(x, s, stats)
            if s.extra is not None and s.extra.get("refused"):
                return _refused(e, f"compacted line whose replacement history holds {s.extra['unsent'].split(':')[0]}")
            s.extra = dict(s.extra or {}, sub=k)
            s.blocks = None
            subs.append(entry_to_tuple(s))
    e.kind = COMPACTION
    e.role = "user"
    msg = p.get("message")
    msg = msg if isinstance(msg, str) else ""
    e.blocks = [{"type": "text", "text": msg}]
    e.nblocks = 1
    e.empty = not msg
    if stats:
        n = js_len(msg)
        e.chars = n
        if n:
            e.kinds = Kinds(summary=n)
    extra: dict = {"compaction": True}
    if subs is not None:
        extra["replacement"] = tuple(subs)
    e.extra = extra


def _bad_compaction(p: dict, rh) -> str | None:
    """Why Codex's reader refuses a ``compacted`` payload for its other fields (judged field by field,
    nine values each, on a recorded line: tests/test_codex_judge.py), or None. ``replacement_history_metadata``:
    null, or one item metadata per replacement item (typed as an item line's ``metadata``);
    ``window_number`` a u64; ``window_id`` a string or a u64; ``first_window_id``,
    ``previous_window_id`` and ``compaction_response_id`` strings; ``retained_context``,
    ``latest_token_usage_record`` and ``resume_metadata`` objects typed field by field (``_COMPACTED_STRUCTS``); each
    may be null or missing."""
    rhm = p.get("replacement_history_metadata")
    if rhm is not None:
        if type(rhm) is not list:
            return "compacted line whose replacement_history_metadata is no array"
        if type(rh) is list and len(rhm) != len(rh):
            return "compacted line whose replacement_history_metadata does not hold one entry per replacement item"
        for m in rhm:
            if m is None or (type(m) is not list and _bad_metadata(m) is not None):
                return "compacted line whose replacement_history_metadata holds an entry of another type"
    w = p.get("window_number")
    if w is not None and not (type(w) is int and 0 <= w <= U64):
        return "compacted line whose window_number is no unsigned integer"
    w = p.get("window_id")
    if w is not None and type(w) is not str and not (type(w) is int and 0 <= w <= U64):
        return "compacted line whose window_id is of another type"
    for k in ("first_window_id", "previous_window_id", "compaction_response_id"):
        if not _opt(p.get(k), str):
            return f"compacted line whose {k} is not a string"
    return _bad_fields(p, _COMPACTED_STRUCTS, "compacted line whose", top=True)


# the typed fields of a compacted line's structs as Codex's reader types them (each field given 5, "x", null and {}
# and left out, judged): field -> (kind, required); required is True (missing or null: refused), False (either: read
# as none) or "default" (missing: read as its default; null: refused); a kind is "str", "bool", "list", "uuid" (as
# ``_uuid_text``), "i64" (a signed 64-bit integer), "u64", "objects" (an array of non-empty objects), the strings
# allowed, a struct (a dict of its fields), or an array of a struct (``[struct]``: each item an object, no array);
# a struct's empty object is refused where it has a required field. Not checked: the items of ``tools``, what
# ``initiating_agent_path`` holds, a verified answer's fields (Codex refuses ``{"x": 1}``; no recorded rollout holds
# one to learn them from), a usage's ``cache_write_input_tokens`` (which may be left out).
_USAGE = {k: ("i64", True) for k in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens",
                                     "total_tokens")}
_RESUME_METADATA = {
    "dynamic_tools": ({"thread_id": ("uuid", True), "tools": ("list", True)}, False),
    "multi_agent_version": (("v1",), False),
    "last_started_turn_id": ("str", False),
    "turn_attribution": ({"turn_id": ("str", True), "turn_trigger": ("str", False), "parent_turn_id": ("str", False),
                          "initiating_agent_path": ("list", False), "root_turn_id": ("str", False)}, False),
    "previous_turn_settings": ({"model": ("str", True), "comp_hash": ("str", False), "realtime_active": ("bool", False)},
                               False),
}
_RETAINED_MESSAGE = {"revision": ("str", False), "order": ("u64", "default"), "turn_id": ("str", True),
                     "message_id": ("str", False), "text": ("str", True), "complete": ("bool", True)}
_COMPACTED_STRUCTS = {
    "retained_context": ({"verified_answers": ("objects", True), "incomplete": ("bool", True),
                          "user_messages": ([_RETAINED_MESSAGE], "default"), "user_messages_incomplete": ("bool", "default"),
                          "assistant_messages": ([_RETAINED_MESSAGE], "default"),
                          "assistant_messages_incomplete": ("bool", "default"), "next_order": ("u64", "default")}, False),
    "latest_token_usage_record": ({"thread_id": ("uuid", True), "session_id": ("uuid", True), "turn_id": ("str", True),
                                   "root_turn_id": ("str", True), "response_id": ("str", True),
                                   "usage": (_USAGE, True), "turn_token_usage": (_USAGE, True),
                                   "thread_token_usage": (_USAGE, True)}, False),
    "resume_metadata": (_RESUME_METADATA, False),
}
_KINDS = {"str": lambda x: type(x) is str, "bool": lambda x: type(x) is bool, "list": lambda x: type(x) is list,
          "uuid": lambda x: _uuid_text(x), "i64": lambda x: type(x) is int and -I64 <= x < I64,
          "u64": lambda x: type(x) is int and 0 <= x <= U64,
          "objects": lambda x: type(x) is list and all(type(y) is dict and y for y in x)}


def _bad_fields(v, fields: dict, where: str, top: bool = False) -> str | None:
    """Why Codex's reader refuses the struct ``v`` (null: none) whose ``fields`` are typed as ``_COMPACTED_STRUCTS``
    says, naming the field by its path from ``where`` (``top``: ``v`` is the payload, its fields named alone); None
    when it reads it."""
    if v is None:
        return None
    if type(v) is not dict:
        return f"{where} is no object"
    for k, (kind, required) in fields.items():
        x = v.get(k)
        name = f"{where} {k}" if top else f"{where}.{k}"
        if x is None:
            if required is True or (required and k in v):
                return f"{name} is missing" if k not in v else f"{name} is null"
            continue
        if type(kind) is dict:
            why = _bad_fields(x, kind, name)
            if why is not None:
                return why
        elif type(kind) is list:
            if type(x) is not list:
                return f"{name} is no array"
            for n, y in enumerate(x):
                why = _bad_fields(y, kind[0], f"{name}[{n}]") if type(y) is dict else f"{name}[{n}] is no object"
                if why is not None:
                    return why
        elif not (x in kind if type(kind) is tuple else _KINDS[kind](x)):
            return f"{name} is of another type"
    return None


I64 = 1 << 63
_HEX = frozenset("0123456789abcdefABCDEF")


def _uuid_text(v) -> bool:
    """A UUID as Rust's uuid crate reads one (judged): 32 hex digits, in either case, bare or hyphenated 8-4-4-4-12,
    the hyphenated form also in braces or after ``urn:uuid:``."""
    if type(v) is not str:
        return False
    wrapped = v.startswith("urn:uuid:") or (v.startswith("{") and v.endswith("}"))
    if wrapped:
        v = v[9:] if v[0] == "u" else v[1:-1]
    if len(v) == 36:
        if [len(g) for g in v.split("-")] != [8, 4, 4, 4, 12]:
            return False
        v = v.replace("-", "")
    elif wrapped:
        return False
    return len(v) == 32 and _HEX.issuperset(v)


def _bad_replacement_item(x: dict) -> str | None:
    """What makes Codex's reader refuse a replacement item that a ``response_item`` line may hold
    (there it skips just that line, which ctxtool reads as an unsent item): a type that is no
    string, or a message whose role is no string or whose content is no array (judged)."""
    t = x.get("type")
    if type(t) is not str and not (type(t) is int and t >= 0):  # (an integer is a variant's index to serde)
        return "an item whose type is no string"
    if t == "message":
        if type(x.get("role")) is not str:
            return "a message whose role is no string"
        if type(x.get("content")) is not list:
            return "a message whose content is no array"
    return None


EVENTS = {"token_count", "thread_rolled_back", "user_message", "turn_aborted", "task_started", "turn_started",
          "task_complete"}  # the events ctxtool reads; the others are kept as bare entries


def _event(p: dict, e: Entry, stats: bool) -> None:
    e.kind = META
    et = p.get("type")
    if type(et) is not str or et not in EVENTS:
        return
    if et == "token_count":
        extra: dict = {"event": et}
        info = p.get("info")
        if type(info) is dict:
            if stats:
                last = info.get("last_token_usage")
                if type(last) is dict:  # an absurd number (huge, negative) is read as missing, with a note
                    where = "payload.info.last_token_usage"
                    inp, cached = count_field(e, last, "input_tokens", where), count_field(e, last, "cached_input_tokens", where)
                    e.usage = Usage(max(inp - cached, 0), count_field(e, last, "output_tokens", where), min(cached, inp), 0,
                                    count_field(e, last, "total_tokens", where))
            tot = info.get("total_token_usage")
            if type(tot) is dict:
                extra["total_tokens"] = count_field(e, tot, "total_tokens", "payload.info.total_token_usage")
            w = info.get("model_context_window")
            if type(w) is int and w > 0:
                if w <= MAX_COUNT:
                    extra["context_window"] = w
                else:
                    count_field(e, info, "model_context_window", "payload.info")
        set_extra(e, extra)
    elif et == "thread_rolled_back":
        n = p.get("num_turns")
        if type(n) is not int or not 0 <= n <= U32:  # (Codex reads it as a u32: judged, 2**32 and -1 skip the line)
            return _refused(e, "thread_rolled_back whose num_turns is no 32-bit unsigned integer")
        e.extra = {"event": et, "rollback": n}
    elif et == "task_complete":
        e.extra = {"event": et}
    else:  # user_message, turn_aborted, task_started, turn_started
        e.extra = {"event": et, "turn": et}


def _dumps(v) -> str:
    try:
        return orjson.dumps(v).decode("utf-8")
    except TypeError:
        return ""


# ---------------------------------------------------------------- records ctxtool writes

def line(obj_ts: str | None, kind: str, payload: dict, ordinal: int | None = None) -> dict:
    """A rollout line in Codex's envelope (``ordinal`` where the file numbers its lines)."""
    out: dict = {"timestamp": obj_ts or iso()}
    if ordinal is not None:
        out["ordinal"] = ordinal
    out["type"] = kind
    out["payload"] = payload
    return out


def iso(ts: float | None = None) -> str:
    from datetime import datetime, timezone

    dt = datetime.fromtimestamp(ts, timezone.utc) if ts is not None else datetime.now(timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# no parent links nor ids repair would set in a rollout: the Messages JSONL no-ops serve
set_parent, set_id, new_id = _messages.set_parent, _messages.set_id, _messages.new_id
