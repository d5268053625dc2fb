"""Simulate context-pruning strategies on a session, never touching the file.

Pruning in the agents ctxtool models is transient: it shapes one request and
leaves the session alone. This module rebuilds what the model would be sent
(the provider view), applies one strategy to a copy and reports what changed:

* ``openclaw``: OpenClaw's cache-TTL context pruning (soft trim, hard clear),
  with every setting of ``agents.defaults.contextPruning`` (reference §5).
* ``aceclaw``: AceClaw's ``pruneForRequest`` phase 1 (stubs, thinking removed).
* ``history-turns``: OpenClaw's ``limitHistoryTurns`` plus the pairing repair (§6).
* ``history-share``: OpenClaw's ``pruneHistoryForContextShare`` (§4.2).
* ``spacebot``: Spacebot's compactor: the background (80%) and aggressive (85%) tiers drain the
  oldest 30% / 50% of the messages into a summary (a summarizer: extractive offline by default),
  the emergency tier (95%) truncates.

The working unit is an agent message (``Unit``): an assistant turn, a user
message, or one tool result, each with the file lines it comes from. The
result is turned back into plain Anthropic messages (``finalize``): errored
assistant turns skipped, consecutive same-role messages merged.

Token counts go through a ``counter``: any callable taking a list of plain
``{"role", "content"}`` messages and returning tokens; ``heuristic_messages``
(pi's chars/4) is the default. A counter with a ``units`` attribute counts the
agent messages themselves (``count_units``): pi's estimateTokens is one
ceil(chars / 4) per agent message by its pi role, which merged API messages lose.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterable

import orjson

from . import config
from . import window as window_rule
from .errors import ConfigError, InputError, SummarizerError, TokenizerUnavailable
from .formats.common import OPENCLAW_MISSING_TEXT, THINKING_TYPES, args_chars, ms_to_seconds, new_uuid, scan_anthropic_blocks, without_thinking
from .model import Entry, IMAGE_CHARS, as_list, as_text, js_len
from .view import context_entries, is_result, merges, sent_context

STRATEGIES = ("openclaw", "aceclaw", "history-turns", "history-share", "spacebot")
DEFAULT_WINDOW = window_rule.DEFAULT_WINDOW  # 200,000: the one default (ctxtool.window)

# OpenClaw (reference §3.3, §5).
SOFT_TRIM_NOTE = "\n\n[Tool result trimmed: kept first {h} chars and last {t} chars of {n} chars.]"
IMAGE_REMOVED_TEXT = "[image removed during context pruning]"
OC_IMAGE_CHARS = 8_000
OC_OTHER_ROLE_CHARS = 256
OC_CHARS_PER_TOKEN = 4
MISSING_RESULT_TEXT = OPENCLAW_MISSING_TEXT
CACHE_TTL_TYPE = "openclaw.cache-ttl"

# AceClaw pruneForRequest (seed: AceClaw context management).
ACECLAW_DEFAULTS = {"protectTurns": 5, "stubChars": 200, "marker": "[content pruned...]", "triggerRatio": 0.85, "targetRatio": 0.60}
HISTORY_SHARE_DEFAULTS = {"maxHistoryShare": 0.5, "parts": 2}
# Spacebot compactor (seed: Spacebot compaction).
SPACEBOT_DEFAULTS = {"background": 0.80, "aggressive": 0.85, "emergency": 0.95,
                     "backgroundFraction": 0.30, "aggressiveFraction": 0.50, "emergencyFraction": 0.50}
SPACEBOT_MARKER = "[System: {n} older messages were truncated due to context limits]"

Counter = Callable[[list], int]


# ----------------------------------------------------------------- units


@dataclass
class Unit:
    """One agent message: ``assistant``, ``user`` or ``toolResult`` (a single tool_result block)."""

    role: str
    src: str  # source role: user, assistant, toolResult, custom, bashExecution, compactionSummary, branchSummary, marker, synthetic
    blocks: list
    lines: list = field(default_factory=list)
    entries: list = field(default_factory=list)
    errored: bool = False
    tool_id: str | None = None
    tool_name: str | None = None
    changed: bool = False
    merges: bool = True  # joins a preceding message of the same role (not pi assistants: view.merges)
    base_chars: int | None = None  # pi's estimateTokens chars as read (Entry.chars); None: count the blocks

    @property
    def api_role(self) -> str:
        return "assistant" if self.role == "assistant" else "user"

    @property
    def line(self) -> int | None:
        return self.lines[0] if self.lines else None

    @property
    def calls(self) -> list[tuple[str, str]]:
        if self.role != "assistant":
            return []
        out = []
        for b in self.blocks:
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str) and b["id"].strip():
                out.append((b["id"], b.get("name") if isinstance(b.get("name"), str) else ""))
        return out

    def message(self) -> dict:
        return {"role": self.api_role, "content": self.blocks}


def load_units(fmt_name: str, entries: list[Entry], transcript=None) -> list[Unit]:
    """Agent messages of the context (entries must carry their blocks: ``scan(keep=True)``). ``transcript`` (the scan
    ``entries`` come from): Claude Code's messages the client leaves out are left out (``view.sent_context``)."""
    units: list[Unit] = []
    names: dict[str, str] = {}
    ctx = context_entries(fmt_name, entries)
    for e in ctx if transcript is None else sent_context(transcript, ctx):
        blocks = list(e.blocks or [])
        if e.role == "assistant":
            if e.empty and not e.errored:
                continue  # pi-ai never sends it
            prev = units[-1] if units else None
            if (prev is not None and prev.role == "assistant" and e.msg_key is not None
                    and prev.entries and prev.entries[-1].msg_key == e.msg_key):
                prev.blocks.extend(blocks)  # Claude Code: one response split over lines
                prev.lines.append(e.lineno)
                prev.entries.append(e)
                if prev.base_chars is not None:
                    prev.base_chars += e.chars
                prev.errored = prev.errored or e.errored
                for cid, name in prev.calls:
                    names[cid] = name
                continue
            u = Unit("assistant", "assistant", blocks, [e.lineno], [e], errored=e.errored, merges=merges(fmt_name, "assistant"),
                     base_chars=e.chars)
            units.append(u)
            for cid, name in u.calls:
                names[cid] = name
            continue
        rest = []
        whole = sum(1 for b in blocks if is_result(b)) == 1 and len(blocks) == 1  # the entry is this one result
        result_chars = 0
        for i, b in enumerate(blocks):
            if is_result(b):
                rid = b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else ""
                name = None
                for r in e.results:
                    if r.id == rid and r.name:
                        name = r.name
                name = name or names.get(rid)
                chars = e.chars if whole else next((r.chars for r in e.results if r.idx == i), None)
                result_chars = None if chars is None or result_chars is None else result_chars + chars
                units.append(Unit("toolResult", "toolResult", [b], [e.lineno], [e], tool_id=rid, tool_name=name, base_chars=chars))
            else:
                rest.append(b)
        if rest or not e.results:
            # Claude Code's rendered attachments are context the client adds, not a turn the user took
            src = e.role if e.role in ("custom", "bashExecution", "compactionSummary", "branchSummary") \
                else ("context" if e.get("context") else "user")
            base = None if result_chars is None else max(0, e.chars - result_chars)
            units.append(Unit("user", src, rest, [e.lineno], [e], base_chars=base))
    return units


def finalize(units: list[Unit]) -> tuple[list[dict], list[list[int]]]:
    """Plain Anthropic messages (errored assistants skipped, same roles merged) and their lines."""
    msgs: list[dict] = []
    lines: list[list[int]] = []
    for u in units:
        if u.role == "assistant" and u.errored:
            continue
        if not u.blocks:
            continue
        role = u.api_role
        if msgs and msgs[-1]["role"] == role and u.merges:
            msgs[-1]["content"].extend(u.blocks)
            for ln in u.lines:
                if ln not in lines[-1]:
                    lines[-1].append(ln)
        else:
            msgs.append({"role": role, "content": list(u.blocks)})
            lines.append(list(u.lines))
    return msgs, lines


# ----------------------------------------------------------------- token counting


class _Probe:
    """Stands in for an Entry so that ``scan_anthropic_blocks`` counts a unit's blocks."""

    def __init__(self):
        self.calls = ()
        self.results = ()
        self.nblocks = 0
        self.chars = 0
        self.kinds = {}
        self.empty = False
        self.blank_text = False
        self.signed_thinking = False


def blocks_chars(blocks: list, src: str) -> int:
    """pi's estimateTokens characters of an agent message's blocks, by its source role (reference §4.1).

    The same function ``ctxtool estimate`` counts entries with: user text only,
    assistant text + thinking + tool name + JSON arguments, toolResult and custom
    text + 4,800 per image.
    """
    if src == "assistant":
        role = "assistant"
    elif src in ("toolResult", "synthetic"):
        role = "toolResult"
    elif src == "custom":
        role = "custom"
    else:
        role = "user"
    probe = _Probe()
    scan_anthropic_blocks(probe, blocks or [], role)
    return probe.chars


def unit_chars(u: Unit) -> int:
    """pi's estimateTokens characters of one agent message.

    An unchanged unit keeps what the file read gave (``Entry.chars``: bashExecution
    is command + output, summaries their summary, custom images 4,800 each); a
    modified or new one is counted from its blocks by its source role.
    """
    if u.base_chars is not None and not u.changed:
        return u.base_chars
    return blocks_chars(u.blocks, u.src)


def _sent(u: Unit) -> bool:
    """pi-ai sends it: not an errored/aborted assistant turn, not empty."""
    return bool(u.blocks) and not (u.role == "assistant" and u.errored)


def _ceil4(chars: int) -> int:
    return (chars + 3) // 4 if chars > 0 else 0


def heuristic_units(units: list[Unit]) -> int:
    """pi's estimateTokens summed over the agent messages sent: one ceil(chars / 4) per message.

    Units split out of one file entry (the tool results of one Claude Code user line)
    stay one message while adjacent, as ``ctxtool estimate`` counts them.
    """
    total = 0
    key, chars = None, 0
    for u in units:
        if not _sent(u):
            continue
        k = id(u.entries[0]) if u.entries else None
        if k is None or k != key:
            total += _ceil4(chars)
            chars = 0
        key = k
        chars += unit_chars(u)
    return total + _ceil4(chars)


def message_chars(msg: dict) -> int:
    """pi's estimateTokens characters for a plain message (user images are not counted).

    Plain messages lose the pi role (custom, bashExecution): prefer ``unit_chars``.
    """
    content = msg.get("content")
    if isinstance(content, str):
        return js_len(content)
    return blocks_chars(content if isinstance(content, list) else [], "assistant" if msg.get("role") == "assistant" else "user")


def heuristic_messages(messages: list) -> int:
    """pi's chars/4 heuristic over plain messages (ceil per message); on units, ``heuristic_units``."""
    return sum(_ceil4(message_chars(m)) for m in messages)


heuristic_messages.units = heuristic_units  # the per-agent-message count simulate uses


def count_units(units: list[Unit], counter: Counter) -> int:
    """Tokens of the units sent: per agent message when the counter knows units, else on the merged messages."""
    fn = getattr(counter, "units", None)
    if callable(fn):
        return fn(units)
    return counter(finalize(units)[0])


def message_text(msg: dict, *, images: bool = False) -> tuple[str, int]:
    """What a tokenizer sees of a plain message: its text (tool input as JSON) and its image count.

    Images in tool results always count; top-level image blocks only with ``images``
    (toolResult and custom messages): pi counts no user images (reference §4.1).
    """
    content = msg.get("content")
    if isinstance(content, str):
        return content, 0
    parts, n_images = [], 0
    for b in content or []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            parts.append(as_text(b.get("text")))
        elif t == "thinking":
            parts.append(as_text(b.get("thinking")))
        elif t == "tool_use":
            parts.append(as_text(b.get("name")))
            parts.append(orjson.dumps(b.get("input")).decode("utf-8") if b.get("input") is not None else "")
        elif t == "tool_result":
            c = b.get("content")
            if isinstance(c, str):
                parts.append(c)
            else:
                for x in c or []:
                    if isinstance(x, dict) and x.get("type") == "text":
                        parts.append(as_text(x.get("text")))
                    elif isinstance(x, dict) and x.get("type") == "image":
                        n_images += 1
        elif t == "image" and images:
            n_images += 1
    return "\n".join(parts), n_images


def tiktoken_counter(encoding: str) -> Counter:
    """Tokens by a tiktoken encoding (offline, via ``ctxtool.tokenizers``); images at pi's 1,200 tokens."""
    from . import tokenizers

    enc = tokenizers.get_encoding(encoding)

    def one(text: str, n_images: int) -> int:
        return len(enc.encode_ordinary(text)) + n_images * (IMAGE_CHARS // 4)

    def count(messages: list) -> int:
        return sum(one(*message_text(m)) for m in messages)

    def count_units_(units: list[Unit]) -> int:
        return sum(one(*message_text(u.message(), images=u.src in ("toolResult", "synthetic", "custom")))
                   for u in units if _sent(u))

    count.units = count_units_
    return count


TOKENIZERS = ("heuristic", "cl100k_base", "o200k_base")


def get_counter(name: str = "heuristic") -> Counter:
    """A token counter over plain messages: ``heuristic`` (pi chars/4) or a tiktoken encoding."""
    if name in (None, "", "heuristic"):
        return heuristic_messages
    if name in ("cl100k_base", "o200k_base", "tiktoken"):
        return tiktoken_counter("cl100k_base" if name == "tiktoken" else name)
    raise TokenizerUnavailable(f"tokenizer {name!r} is not available for prune (use heuristic)")


# ----------------------------------------------------------------- actions


def _action(kind: str, u: Unit, detail: str = "", before: int | None = None, after: int | None = None) -> dict:
    return {
        "action": kind,
        "line": u.line,
        "lines": list(u.lines),
        "role": u.src,
        "tool": u.tool_name if u.role == "toolResult" else (", ".join(n for _, n in u.calls) or None),
        "tool_use_id": u.tool_id,
        "chars_before": before,
        "chars_after": after,
        "detail": detail,
    }


def _unit_chars(u: Unit) -> int:
    return unit_chars(u)


# ----------------------------------------------------------------- pairing repair


def repair_pairing(units: list[Unit], *, errored_policy: str = "drop") -> tuple[list[Unit], list[dict]]:
    """OpenClaw's repairToolUseResultPairing on agent messages (reference §3.3).

    Results move next to their call in call order, duplicates and orphans are
    dropped, missing results get a synthetic error result; results of errored or
    aborted turns are dropped (``errored_policy="drop"``) or kept (``"preserve"``).
    """
    out: list[Unit] = []
    actions: list[dict] = []
    seen: set[str] = set()
    i = 0
    n = len(units)
    while i < n:
        u = units[i]
        if u.role != "assistant":
            if u.role == "toolResult":
                actions.append(_action("dropped", u, "orphan tool result (its call is not in the previous assistant turn)"))
            else:
                out.append(u)
            i += 1
            continue
        calls = u.calls
        if not calls:
            out.append(u)
            i += 1
            continue
        ids = {cid for cid, _ in calls}
        span: dict[str, Unit] = {}
        remainder: list[Unit] = []
        j = i + 1
        while j < n and units[j].role != "assistant":
            v = units[j]
            if v.role == "toolResult":
                rid = v.tool_id
                if rid in seen or (rid in ids and rid in span):
                    actions.append(_action("dropped", v, "duplicate tool result"))
                elif rid in ids:
                    span[rid] = v
                else:
                    actions.append(_action("dropped", v, "orphan tool result (its call is not in the previous assistant turn)"))
            else:
                remainder.append(v)
            j += 1
        out.append(u)
        if u.errored:
            if errored_policy == "drop":
                for v in span.values():
                    actions.append(_action("dropped", v, f"result of an {u.entries[0].stop if u.entries else 'errored'} assistant turn"))
            else:
                for cid, _ in calls:
                    if cid in span:
                        out.append(span[cid])
                        seen.add(cid)
        else:
            for cid, name in calls:
                if cid in span:
                    out.append(span[cid])
                else:
                    syn = Unit("toolResult", "synthetic", [{"type": "tool_result", "tool_use_id": cid,
                                                            "content": [{"type": "text", "text": MISSING_RESULT_TEXT}], "is_error": True}],
                               tool_id=cid, tool_name=name or "unknown", changed=True)
                    out.append(syn)
                    a = _action("added", syn, "synthetic error result for a call whose result was cut")
                    a["line"] = u.line
                    a["lines"] = list(u.lines)
                    actions.append(a)
                seen.add(cid)
        out.extend(remainder)
        i = j
    return out, actions


# ----------------------------------------------------------------- result


@dataclass
class PruneResult:
    strategy: str
    settings: dict
    window: int
    tokens_before: int
    tokens_after: int
    fired: bool
    reason: str
    units: list[Unit]
    actions: list[dict]
    messages_before: int = 0
    details: dict = field(default_factory=dict)
    baseline: list = field(default_factory=list)  # the unpruned provider view, as plain messages
    _final: tuple | None = None

    @property
    def final(self) -> tuple[list[dict], list[list[int]]]:
        if self._final is None:
            self._final = finalize(self.units)
        return self._final

    @property
    def messages(self) -> list[dict]:
        return self.final[0]

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def saved_share(self) -> float:
        return self.saved / self.tokens_before if self.tokens_before else 0.0

    def counts(self) -> dict:
        out: dict = {}
        for a in self.actions:
            out[a["action"]] = out.get(a["action"], 0) + 1
        return out

    def to_dict(self, *, messages: bool = False) -> dict:
        d = {
            "strategy": self.strategy,
            "fired": self.fired,
            "reason": self.reason,
            "window": self.window,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.saved,
            "share_saved": round(self.saved_share, 6),
            "usage_before": round(self.tokens_before / self.window, 6) if self.window else None,
            "usage_after": round(self.tokens_after / self.window, 6) if self.window else None,
            "messages_before": self.messages_before,
            "messages_after": len(self.messages),
            "counts": self.counts(),
            "settings": self.settings,
            "details": self.details,
            "actions": self.actions,
        }
        if messages:
            d["messages"] = self.messages
        return d



# ----------------------------------------------------------------- openclaw


# CJK, Hangul and kana, plus CJK Symbols and Punctuation (U+3000-303F: '。' '、') and
# Halfwidth/Fullwidth Forms (U+FF00-FFEF: '，' '？'), as OpenClaw's cjk-chars regex.
_CJK = re.compile("[\u1100-\u11ff\u3000-\u303f\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                  "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]")


def cjk_len(s: str) -> int:
    """Text length with CJK, Hangul and kana characters counted 4 times (OpenClaw's estimate)."""
    if s.isascii():
        return len(s)
    n = js_len(s)
    for m in _CJK.finditer(s):
        n += 4 - (2 if ord(m.group()) > 0xFFFF else 1)
    return n


def openclaw_chars(u: Unit) -> int:
    """OpenClaw's estimateMessageChars for one agent message."""
    if u.src in ("user", "toolResult", "synthetic") and u.role != "assistant":
        n = 0
        for b in u.blocks:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                n += cjk_len(as_text(b.get("text")))
            elif t == "image":
                n += OC_IMAGE_CHARS
            elif t == "tool_result":
                c = b.get("content")
                if isinstance(c, str):
                    n += cjk_len(c)
                elif isinstance(c, list):
                    for x in c:
                        if isinstance(x, dict) and x.get("type") == "text":
                            n += cjk_len(as_text(x.get("text")))
                        elif isinstance(x, dict) and x.get("type") == "image":
                            n += OC_IMAGE_CHARS
        return n
    if u.role == "assistant":
        n = 0
        for b in u.blocks:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                n += cjk_len(as_text(b.get("text")))
            elif t == "thinking":
                n += cjk_len(as_text(b.get("thinking"))) + len(as_text(b.get("signature")))
            elif t == "redacted_thinking":
                n += len(as_text(b.get("data")))
            elif t == "tool_use":
                n += args_chars(b.get("input") if b.get("input") is not None else {})
        return n
    return OC_OTHER_ROLE_CHARS


def _glob_re(pattern: str):
    return re.compile("^" + ".*".join(re.escape(p) for p in pattern.strip().lower().split("*")) + "$")


def _show(v) -> str:
    """A setting's value as the config file spells it (JSON), shortened for a one-line error."""
    try:
        text = json.dumps(v, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _globs(v, key: str) -> list[str]:
    """A tools.allow/deny setting as a list of globs: a string is one glob."""
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)):
        for p in v:
            if not isinstance(p, str):
                raise ConfigError(f"contextPruning.tools.{key} must be a list of tool-name globs, not {_show(v)}")
        return list(v)
    raise ConfigError(f"contextPruning.tools.{key} must be a list of tool-name globs, not {_show(v)}")


def tool_predicate(tools: dict | None) -> Callable[[str | None], bool]:
    """OpenClaw's makeToolPrunablePredicate: case-insensitive globs, deny wins, empty allow = all."""
    tools = tools or {}
    allow = [_glob_re(p) for p in _globs(tools.get("allow"), "allow") if p.strip()]
    deny = [_glob_re(p) for p in _globs(tools.get("deny"), "deny") if p.strip()]

    def prunable(name: str | None) -> bool:
        n = (name or "").strip().lower()
        if any(r.match(n) for r in deny):
            return False
        if not allow:
            return True
        return any(r.match(n) for r in allow)

    return prunable


def _number(v, key: str) -> float | int:
    """A finite number (not a bool, not a string), or a ConfigError naming the setting."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"contextPruning.{key} must be a number, not {_show(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"contextPruning.{key} must be a finite number, not {_show(v)}")
    return v


def _clamp01(v, key):
    return min(1.0, max(0.0, float(_number(v, key))))


def _int_setting(v, key, minimum=None):
    v = int(_number(v, key))
    if minimum is not None and v < minimum:
        v = minimum
    return v


def _object(v, key: str, default: dict) -> dict:
    if v is None:
        return dict(default)
    if not isinstance(v, dict):
        raise ConfigError(f"contextPruning.{key} must be an object, not {_show(v)}")
    return dict(v)


def openclaw_settings(overrides: dict | None = None) -> dict:
    """Effective contextPruning settings: defaults with ``overrides`` applied, validated.

    Every invalid value raises ``ConfigError`` naming the setting and the value.
    """
    if overrides is not None and not isinstance(overrides, dict):
        raise ConfigError(f"contextPruning must be an object, not {_show(overrides)}")
    d = config.PRUNING_DEFAULTS
    s = config.merged(d, overrides)
    try:
        s["ttlMs"] = config.duration_ms(s.get("ttl", "5m"))
    except ConfigError as e:
        raise ConfigError(f"contextPruning.ttl: {e.reason}") from None
    s["keepLastAssistants"] = _int_setting(s["keepLastAssistants"], "keepLastAssistants")
    s["softTrimRatio"] = _clamp01(s["softTrimRatio"], "softTrimRatio")
    s["hardClearRatio"] = _clamp01(s["hardClearRatio"], "hardClearRatio")
    s["minPrunableToolChars"] = _int_setting(s["minPrunableToolChars"], "minPrunableToolChars", 0)
    st = s["softTrim"] = _object(s.get("softTrim"), "softTrim", d["softTrim"])
    for k in ("maxChars", "headChars", "tailChars"):
        st[k] = _int_setting(st.get(k, d["softTrim"][k]), f"softTrim.{k}", 0)
    hc = s["hardClear"] = _object(s.get("hardClear"), "hardClear", d["hardClear"])
    enabled = hc.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"contextPruning.hardClear.enabled must be true or false, not {_show(enabled)}")
    hc["enabled"] = enabled
    placeholder = hc.get("placeholder")
    if placeholder is None:
        hc["placeholder"] = d["hardClear"]["placeholder"]
    elif not isinstance(placeholder, str):
        raise ConfigError(f"contextPruning.hardClear.placeholder must be a string, not {_show(placeholder)}")
    tools = s.get("tools")
    if tools is None:
        tools = {}
    if not isinstance(tools, dict):
        raise ConfigError(f"contextPruning.tools must be an object with allow/deny lists, not {_show(tools)}")
    s["tools"] = {"allow": _globs(tools.get("allow"), "allow"), "deny": _globs(tools.get("deny"), "deny")}
    return s


def max_history_share(v) -> float:
    """compaction.maxHistoryShare: a number from 0.1 to 0.9, or a ConfigError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0.1 <= v <= 0.9:
        raise ConfigError(f"compaction.maxHistoryShare must be a number between 0.1 and 0.9, not {_show(v)}")
    return float(v)


def _result_parts(b: dict) -> tuple[list[str], bool]:
    c = b.get("content")
    if isinstance(c, str):
        return [c], False
    parts, images = [], False
    for x in c or []:
        if isinstance(x, dict) and x.get("type") == "text":
            parts.append(as_text(x.get("text")))
        elif isinstance(x, dict) and x.get("type") == "image":
            parts.append(IMAGE_REMOVED_TEXT)
            images = True
    return parts, images


def _with_text(u: Unit, text: str) -> Unit:
    b = dict(u.blocks[0])
    b["content"] = [{"type": "text", "text": text}]
    return Unit(u.role, u.src, [b], list(u.lines), list(u.entries), u.errored, u.tool_id, u.tool_name, True, u.merges)


def utf16_head(s: str, n: int) -> str:
    """The first ``n`` UTF-16 code units of ``s`` (JavaScript's ``s.slice(0, n)``), whole characters only:
    a surrogate pair cut by the limit is left out rather than split."""
    if n <= 0:
        return ""
    if s.isascii() or len(s) == js_len(s):
        return s[:n]
    units = 0
    for i, ch in enumerate(s):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > n:
            return s[:i]
    return s


def utf16_tail(s: str, n: int) -> str:
    """The last ``n`` UTF-16 code units of ``s`` (JavaScript's ``s.slice(-n)``), whole characters only."""
    if n <= 0:
        return ""
    if s.isascii() or len(s) == js_len(s):
        return s[len(s) - n:] if n < len(s) else s
    units = 0
    for i in range(len(s) - 1, -1, -1):
        units += 2 if ord(s[i]) > 0xFFFF else 1
        if units > n:
            return s[i + 1:]
    return s


def soft_trim(u: Unit, st: dict) -> tuple[Unit | None, str]:
    """OpenClaw's softTrimToolResultMessage; (new unit or None, what was done).

    Lengths are JavaScript's (UTF-16 code units): N in the note, the head and the tail.
    """
    parts, images = _result_parts(u.blocks[0])
    joined = "\n".join(parts)
    raw = js_len(joined)
    head_n, tail_n = max(0, st["headChars"]), max(0, st["tailChars"])
    if raw <= st["maxChars"] or head_n + tail_n >= raw:
        if images:
            return _with_text(u, joined), "images collapsed to text"
        return None, ""
    head = utf16_head(joined, head_n)
    tail = utf16_tail(joined, tail_n)
    text = f"{head}\n...\n{tail}" + SOFT_TRIM_NOTE.format(h=head_n, t=tail_n, n=raw)
    return _with_text(u, text), f"kept first {head_n} and last {tail_n} of {raw} chars"


def session_model(entries: list[Entry]) -> tuple[str | None, str | None]:
    """The session's current (provider, model): the last ``model_change``, ``model-snapshot``
    custom entry or assistant message (its provider and model) in the file."""
    provider = model = None
    for e in entries:
        if e.type == "model_change" or (e.type == "custom" and e.get("custom_type") == "model-snapshot"):
            p, m = e.get("provider"), e.get("model")
        elif e.kind == "message" and e.role == "assistant":
            msg = e.obj.get("message") if isinstance(e.obj, dict) else None
            p = msg.get("provider") if isinstance(msg, dict) else None
            m = e.model
        else:
            continue
        if isinstance(p, str) and p:
            provider = p
        if isinstance(m, str) and m:
            model = m
    return provider, model


def cache_touch(entries: list[Entry], provider: str | None = None, model: str | None = None) -> float | None:
    """Epoch seconds of OpenClaw's lastCacheTouchAt, or None (reference §5 step 1).

    The last ``openclaw.cache-ttl`` custom entry whose ``data.provider``/``data.modelId``
    match the session's provider and model (``session_model`` when not given; a part
    that is unknown is not checked); entries without a numeric ``data.timestamp`` are skipped.
    """
    if provider is None and model is None:
        provider, model = session_model(entries)
    for e in reversed(entries):
        if e.type != "custom" or e.get("custom_type") != CACHE_TTL_TYPE:
            continue
        if provider is not None and e.get("provider") != provider:
            continue
        if model is not None and e.get("model") != model:
            continue
        ts = ms_to_seconds(e.get("data_ts"))
        if ts is not None and ts > 0:
            return ts
    return None


def openclaw_prune(units: list[Unit], s: dict, window: int) -> tuple[list[Unit], list[dict], dict]:
    """OpenClaw's pruneContextMessages (reference §5 steps 2-7) on agent messages."""
    details: dict = {}
    char_window = window * OC_CHARS_PER_TOKEN
    keep = s["keepLastAssistants"]
    if keep <= 0:
        cutoff = len(units)
    else:
        cutoff, remaining = None, keep
        for i in range(len(units) - 1, -1, -1):
            if units[i].role == "assistant":
                remaining -= 1
                if remaining == 0:
                    cutoff = i
                    break
    first_user = next((i for i, u in enumerate(units) if u.src == "user"), None)
    start = len(units) if first_user is None else first_user
    details.update(protected_head=start, cutoff=cutoff, char_window=char_window)
    if cutoff is None:
        return units, [], {**details, "stopped": f"fewer than keepLastAssistants={keep} assistant messages: nothing is pruned"}
    total = sum(openclaw_chars(u) for u in units)
    ratio = total / char_window if char_window > 0 else 0.0
    details.update(chars_before=total, ratio_before=round(ratio, 6))
    if char_window <= 0 or ratio < s["softTrimRatio"]:
        return units, [], {**details, "stopped": f"ratio {ratio:.3f} below softTrimRatio {s['softTrimRatio']}"}
    prunable = tool_predicate(s["tools"])
    out = list(units)
    actions: list[dict] = []
    idxs: list[int] = []
    for i in range(start, cutoff):
        u = out[i]
        if u.role != "toolResult" or not prunable(u.tool_name):
            continue
        idxs.append(i)
        new, what = soft_trim(u, s["softTrim"])
        if new is None:
            continue
        b, a = openclaw_chars(u), openclaw_chars(new)
        total += a - b
        out[i] = new
        actions.append(_action("trimmed", new, what, _unit_chars(u), _unit_chars(new)))
    ratio = total / char_window
    details.update(prunable_results=len(idxs), ratio_after_soft_trim=round(ratio, 6))
    hc = s["hardClear"]
    if ratio < s["hardClearRatio"] or not hc["enabled"]:
        details.update(chars_after=total, stopped="ratio below hardClearRatio" if hc["enabled"] else "hardClear disabled")
        return out, actions, details
    prunable_chars = sum(openclaw_chars(out[i]) for i in idxs)
    details["prunable_tool_chars"] = prunable_chars
    if prunable_chars < s["minPrunableToolChars"]:
        details.update(chars_after=total, stopped=f"prunable tool chars {prunable_chars} below minPrunableToolChars {s['minPrunableToolChars']}")
        return out, actions, details
    for i in idxs:
        if ratio < s["hardClearRatio"]:
            break
        u = out[i]
        new = _with_text(u, hc["placeholder"])
        total += openclaw_chars(new) - openclaw_chars(u)
        ratio = total / char_window
        out[i] = new
        actions = [a for a in actions if not (a["tool_use_id"] == u.tool_id and a["lines"] == u.lines)]
        actions.append(_action("cleared", new, "replaced by the hard-clear placeholder", _unit_chars(units[i]), _unit_chars(new)))
    details.update(chars_after=total, ratio_after=round(ratio, 6))
    return out, actions, details


# ----------------------------------------------------------------- aceclaw


def aceclaw_prune(units: list[Unit], s: dict) -> tuple[list[Unit], list[dict], dict]:
    """AceClaw pruneForRequest phase 1: older tool results stubbed, older thinking removed."""
    users = [i for i, u in enumerate(units) if u.src == "user"]
    n = int(s["protectTurns"])
    if n <= 0:
        boundary = len(units)
    elif len(users) <= n:
        return units, [], {"protected_from": 0, "stopped": f"{len(users)} user turns, all protected (protectTurns={n})"}
    else:
        boundary = users[-n]
    out: list[Unit] = []
    actions: list[dict] = []
    stub_n = int(s["stubChars"])
    for i, u in enumerate(units):
        if i >= boundary:
            out.append(u)
            continue
        if u.role == "toolResult":
            parts, images = _result_parts(u.blocks[0])
            text = "\n".join(parts)
            if js_len(text) > stub_n or images:
                new = _with_text(u, text[:stub_n] + "\n" + s["marker"])
                out.append(new)
                actions.append(_action("stubbed", new, f"{stub_n}-char stub of {js_len(text)} chars", _unit_chars(u), _unit_chars(new)))
                continue
        elif u.role == "assistant" and any(isinstance(b, dict) and b.get("type") in THINKING_TYPES for b in u.blocks):
            kept = without_thinking(u.blocks)
            new = Unit(u.role, u.src, kept, list(u.lines), list(u.entries), u.errored, u.tool_id, u.tool_name, True, u.merges)
            if kept:
                out.append(new)
                actions.append(_action("thinking-removed", new, "thinking blocks removed", _unit_chars(u), _unit_chars(new)))
            else:
                actions.append(_action("dropped", u, "assistant turn held only thinking", _unit_chars(u), 0))
            continue
        out.append(u)
    return out, actions, {"protected_from_line": units[boundary].line if boundary < len(units) else None}


# ----------------------------------------------------------------- history limits


def limit_history_turns(units: list[Unit], limit: int) -> tuple[list[Unit], list[dict], dict]:
    """OpenClaw's limitHistoryTurns, then the pairing repair with errored-turn results dropped."""
    if not limit or limit <= 0 or not units:
        return units, [], {"stopped": "no limit"}
    count = 0
    last_user = len(units)
    cut = 0
    for i in range(len(units) - 1, -1, -1):
        if units[i].src == "user":
            count += 1
            if count > limit:
                cut = last_user
                break
            last_user = i
    if cut == 0:
        return units, [], {"user_turns": count, "stopped": f"{count} user turns, limit {limit}"}
    actions = [_action("dropped", u, f"before the last {limit} user turns", _unit_chars(u), 0) for u in units[:cut]]
    kept, fixes = repair_pairing(units[cut:])
    return kept, actions + fixes, {"cut_before_line": units[cut].line, "dropped_messages": cut}


def split_by_token_share(units: list[Unit], parts: int, tok: Callable[[Unit], int]) -> list[list[Unit]]:
    """OpenClaw's splitMessagesByTokenShare: never splits a call from its results (reference §4.2).

    Each assistant message replaces the pending set with its own tool calls (none when
    it errored or was aborted); its results remove their ids. A chunk ends only while
    nothing is pending, so a call that never got a result blocks splits only until the
    next assistant message.
    """
    if not units:
        return []
    parts = min(max(1, parts), len(units))
    if parts <= 1:
        return [units]
    target = sum(tok(u) for u in units) / parts
    chunks: list[list[Unit]] = []
    cur: list[Unit] = []
    cur_tokens = 0
    pending: set[str] = set()
    pending_start: int | None = None
    for u in units:
        t = tok(u)
        if len(chunks) < parts - 1 and not pending and cur and cur_tokens + t > target:
            chunks.append(cur)
            cur, cur_tokens, pending_start = [], 0, None
        cur.append(u)
        cur_tokens += t
        if u.role == "assistant":
            calls = [] if u.errored else u.calls
            pending = {cid for cid, _ in calls}
            pending_start = len(cur) - 1 if calls else None
        elif u.role == "toolResult" and u.tool_id in pending:
            pending.discard(u.tool_id)
            if not pending and len(chunks) < parts - 1 and pending_start is not None and cur_tokens > target and pending_start > 0:
                chunks.append(cur[:pending_start])
                cur = cur[pending_start:]
                cur_tokens = sum(tok(x) for x in cur)
                pending_start = None
    if cur:
        chunks.append(cur)
    return chunks


def history_share_prune(units: list[Unit], s: dict, window: int, counter: Counter) -> tuple[list[Unit], list[dict], dict]:
    """OpenClaw's pruneHistoryForContextShare: drop the oldest token-share chunk until within budget."""
    budget = int(window * float(s["maxHistoryShare"]))

    def tok(u: Unit) -> int:
        return count_units([u], counter) if _sent(u) else 0

    kept = units
    actions: list[dict] = []
    rounds = 0
    total = sum(tok(u) for u in kept)
    while kept and total > budget:
        chunks = split_by_token_share(kept, int(s.get("parts", 2)), tok)
        if len(chunks) <= 1:
            break
        rounds += 1
        for u in chunks[0]:
            actions.append(_action("dropped", u, f"oldest token-share chunk (round {rounds})", _unit_chars(u), 0))
        rest = [u for c in chunks[1:] for u in c]
        kept, fixes = repair_pairing(rest)
        actions.extend(fixes)
        total = sum(tok(u) for u in kept)
    return kept, actions, {"budget_tokens": budget, "rounds": rounds, "kept_tokens": total}


# ----------------------------------------------------------------- spacebot


SPACEBOT_SUMMARY_PREFIX = "[Compaction Summary]: "
SPACEBOT_SYSTEM = ("You are a compaction worker. Condense the conversation transcript below into a summary that "
                   "preserves key decisions, active topics, commitments, emotional context and active workers or tasks. "
                   "Discard greetings, small talk, tool call mechanics (keep results, not mechanics), intermediate "
                   "reasoning and repeated information. Answer with the summary only.")
SPACEBOT_SUMMARY_MAX_TOKENS = 2_048
SPACEBOT_TOML_KEYS = {"background_threshold": "background", "aggressive_threshold": "aggressive",
                      "emergency_threshold": "emergency"}


def spacebot_settings(cfg: dict | None, agent_id: str | None = None) -> dict:
    """Spacebot's ``config.toml``: ``[defaults.compaction]``, then ``[agents.compaction]`` of the agent ``agent_id``."""
    out: dict = {}
    layers = [((cfg or {}).get("defaults") or {}).get("compaction") or {}]
    if agent_id is not None:
        agent = next((a for a in as_list((cfg or {}).get("agents")) if isinstance(a, dict) and a.get("id") == agent_id), None)
        if agent is None:
            raise ConfigError(f"no [[agents]] entry with id {agent_id!r}")
        layers.append(agent.get("compaction") or {})
    for layer in layers:
        for key, name in SPACEBOT_TOML_KEYS.items():
            if key in layer:
                out[name] = _clamp01(layer[key], key)
    return out


def _spacebot_transcript(units: list[Unit]) -> str:
    """The drained messages as readable text, for an LLM compaction worker."""
    out = []
    for u in units:
        for b in u.blocks:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text" and str(b.get("text") or "").strip():
                out.append(f"[{'Assistant' if u.role == 'assistant' else 'User'}]: {b['text']}")
            elif t == "tool_use":
                out.append(f"[Tool call {b.get('name')}]: {orjson.dumps(b.get('input')).decode('utf-8')[:2000]}")
            elif t == "tool_result":
                text, _ = message_text({"content": [b]})
                out.append(f"[Tool result{' (error)' if b.get('is_error') else ''}]: {text[:2000]}")
    return "\n\n".join(out)


def spacebot_extractive(units: list[Unit]) -> str:
    """An offline, deterministic stand-in for the compaction worker: what was asked, decided, changed and failed."""
    from .summarize import _DECISION_RE, _clip, _sentences

    asks, said, files, tools, errors = [], [], [], {}, []
    for u in units:
        for b in u.blocks:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text" and u.role != "assistant" and str(b.get("text") or "").strip():
                asks.append(_clip(b["text"], 160))
            elif t == "text" and u.role == "assistant":
                said.append(str(b.get("text") or ""))
            elif t == "tool_use":
                name = str(b.get("name") or "tool")
                tools[name] = tools.get(name, 0) + 1
                args = b.get("input") if isinstance(b.get("input"), dict) else {}
                p = next((args[k] for k in ("path", "file_path", "filePath") if isinstance(args.get(k), str)), None)
                if p and name.lower() in ("edit", "write", "multiedit", "apply_patch", "edit_file", "write_file") and p not in files:
                    files.append(p)
            elif t == "tool_result" and b.get("is_error"):
                errors.append(_clip(message_text({"content": [b]})[0], 120))
    parts = [f"{len(units)} earlier messages."]
    if asks:
        parts.append("The user asked: " + "; ".join(f'"{a}"' for a in asks[-5:]) + ".")
    decisions = _sentences(said, _DECISION_RE, 160, 4)
    if decisions:
        parts.append("Decisions: " + " ".join(decisions))
    if files:
        parts.append("Files changed: " + ", ".join(files[-10:]) + ".")
    if tools:
        parts.append("Tools used: " + ", ".join(f"{k} x{v}" for k, v in sorted(tools.items())) + ".")
    if errors:
        parts.append("Errors: " + "; ".join(errors[-3:]) + ".")
    return " ".join(parts)


def _spacebot_groups(units: list[Unit]) -> list[list[Unit]]:
    live = [u for u in units if not (u.role == "assistant" and u.errored) and u.blocks]
    groups: list[list[Unit]] = []
    for u in live:
        if groups and groups[-1][0].api_role == u.api_role:
            groups[-1].append(u)
        else:
            groups.append([u])
    return groups


def _drain_count(groups: list[list[Unit]], frac: float) -> int:
    """Spacebot drains the oldest ``frac`` of the messages; results answering a drained call go with it."""
    k = int(len(groups) * frac)
    if 0 < k < len(groups) and groups[k][0].api_role == "user" and any(u.role == "toolResult" for u in groups[k]):
        drained = {cid for g in groups[:k] for u in g for cid, _ in u.calls}
        if any(u.tool_id in drained for u in groups[k] if u.role == "toolResult"):
            k += 1
    return k


def spacebot_prune(units: list[Unit], s: dict, window: int, tokens: int, *, counter: Counter = None,
                   summarizer=None) -> tuple[list[Unit], list[dict], dict]:
    """Spacebot's compactor: the background tier (oldest 30% at 80%) and the aggressive tier (50% at 85%)
    drain the oldest messages into a summary put in their place; the emergency tier (50% at 95%) drops them
    behind a marker. The tier the usage reaches is applied; the tokens after every tier are reported."""
    counter = counter or heuristic_messages
    usage = tokens / window if window else 0.0
    groups = _spacebot_groups(units)
    top = 0  # earlier Spacebot summaries stay at the top: summaries stack, they are not drained again
    while top < len(groups) and all(_is_spacebot_summary(u) for u in groups[top]):
        top += 1
    head, body = [u for g in groups[:top] for u in g], groups[top:]
    tiers, outcomes = [], {}
    fired = next((n for n in ("emergency", "aggressive", "background") if usage >= s[n]), None)
    for name in ("background", "aggressive", "emergency"):
        k = _drain_count(body, s[f"{name}Fraction"])
        drained = [u for g in body[:k] for u in g]
        rest = [u for g in body[k:] for u in g]
        tier = {"tier": name, "threshold": s[name], "crossed": usage >= s[name], "fraction": s[f"{name}Fraction"],
                "messages": k, "lines": sorted({ln for u in drained for ln in u.lines})}
        if not drained:
            tier["tokens_after"] = tokens
            tiers.append(tier)
            outcomes[name] = (units, [], None)
            continue
        if name == "emergency":
            new = Unit("user", "marker", [{"type": "text", "text": SPACEBOT_MARKER.format(n=k)}], changed=True)
            acts = [_action("dropped", u, "emergency truncation (oldest 50%)", _unit_chars(u), 0) for u in drained]
            acts.append(_action("added", new, "emergency truncation marker"))
            summary_by = None
        else:
            live = summarizer is not None and not getattr(summarizer, "offline", True) and name == fired
            text = None
            summary_by = "extractive"
            if live:
                try:
                    text = summarizer.call(SPACEBOT_SYSTEM, _spacebot_transcript(drained),
                                           max_tokens=SPACEBOT_SUMMARY_MAX_TOKENS).strip() or None
                    summary_by = getattr(summarizer, "name", "llm")
                except SummarizerError as e:
                    tier["summarizer_error"] = str(e)
            if text is None:
                text = spacebot_extractive(drained)
            new = Unit("user", "summary", [{"type": "text", "text": SPACEBOT_SUMMARY_PREFIX + text}], changed=True)
            acts = [_action("summarized", u, f"{name} compaction drained it into the summary", _unit_chars(u), 0) for u in drained]
            acts.append(_action("added", new, f"Spacebot compaction summary of {k} messages ({summary_by})"))
        kept, fixes = repair_pairing(head + [new] + rest)
        tier["tokens_after"] = count_units(kept, counter)
        if summary_by:
            tier["summary_by"] = summary_by
        tiers.append(tier)
        outcomes[name] = (kept, acts + fixes, k)
    details = {"usage": round(usage, 6), "tiers": tiers, "fires": fired}
    if fired is None:
        return units, [], details
    kept, acts, k = outcomes[fired]
    details["drained_messages" if fired != "emergency" else "truncated_messages"] = k or 0
    return kept, acts, details


def _is_spacebot_summary(u: Unit) -> bool:
    return (u.role == "user" and len(u.blocks) == 1 and isinstance(u.blocks[0], dict)
            and str(u.blocks[0].get("text") or "").startswith(SPACEBOT_SUMMARY_PREFIX))


# ----------------------------------------------------------------- driver


def simulate(
    fmt_name: str,
    entries: list[Entry],
    strategy: str,
    *,
    window: int = DEFAULT_WINDOW,
    pruning: dict | None = None,
    aceclaw: dict | None = None,
    history_turns: int = 10,
    history_share: dict | None = None,
    spacebot: dict | None = None,
    now: float | None = None,
    ignore_ttl: bool = False,
    counter: Counter = heuristic_messages,
    summarizer=None,
    transcript=None,
) -> PruneResult:
    """Run one strategy on the context of ``entries`` (with blocks) and report what it does. ``transcript``: the scan
    they come from (Claude Code: the messages the client leaves out are left out, ``load_units``)."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})")
    if window <= 0:
        raise ConfigError("the context window must be positive")
    units = load_units(fmt_name, entries, transcript)
    before_msgs = finalize(units)[0]
    tokens_before = count_units(units, counter)
    fired, reason = True, ""
    details: dict = {}
    settings: dict
    new, actions = units, []
    usage = tokens_before / window
    if strategy == "openclaw":
        s = openclaw_settings(pruning)
        settings = {k: v for k, v in s.items()}
        touch = cache_touch(entries)
        now = now if now is not None else datetime.now(timezone.utc).timestamp()
        details["cache_touch"] = touch
        if s.get("mode") != "cache-ttl":
            details["note"] = f"contextPruning.mode is {s.get('mode')!r}: OpenClaw would not prune; simulated as cache-ttl"
        details["now"] = now
        gate = None
        if ignore_ttl:
            details["ttl_gate"] = "ignored"
        elif fmt_name != "pi":
            details["ttl_gate"] = "n/a (no cache-ttl entries in this format)"
        elif touch is None:
            gate = "no openclaw.cache-ttl entry in the session: OpenClaw would not prune (use --ignore-ttl to simulate anyway)"
        elif (now - touch) * 1000 < s["ttlMs"]:
            left = s["ttlMs"] / 1000 - (now - touch)
            gate = f"cache TTL not expired: last cache touch {now - touch:.0f}s ago, ttl {s['ttlMs'] // 1000}s ({left:.0f}s left)"
        else:
            details["ttl_gate"] = f"expired ({now - touch:.0f}s since the last cache touch, ttl {s['ttlMs'] // 1000}s)"
        if gate:
            details["ttl_gate"] = "closed"
            fired, reason = False, gate
        else:
            new, actions, d = openclaw_prune(units, s, window)
            details.update(d)
            fired = bool(actions)
            reason = d.get("stopped", "") if not actions else "pruned"
    elif strategy == "aceclaw":
        s = {**ACECLAW_DEFAULTS, **(aceclaw or {})}
        settings = s
        details["trigger_tokens"] = int(window * s["triggerRatio"])
        details["target_tokens"] = int(window * s["targetRatio"])
        if usage < s["triggerRatio"]:
            fired, reason = False, f"usage {usage:.1%} below the trigger {s['triggerRatio']:.0%}: messages sent unchanged"
        else:
            new, actions, d = aceclaw_prune(units, s)
            details.update(d)
            reason = d.get("stopped", "pruned")
    elif strategy == "history-turns":
        settings = {"historyLimit": history_turns}
        new, actions, d = limit_history_turns(units, history_turns)
        details.update(d)
        fired = bool(actions)
        reason = d.get("stopped", "history limited")
    elif strategy == "history-share":
        s = {**HISTORY_SHARE_DEFAULTS, **(history_share or {})}
        share = s["maxHistoryShare"] = max_history_share(s["maxHistoryShare"])
        settings = s
        new, actions, d = history_share_prune(units, s, window, counter)
        details.update(d)
        fired = d["rounds"] > 0
        reason = "history pruned to its share of the window" if fired else f"history within {share:.0%} of the window"
    else:
        s = {**SPACEBOT_DEFAULTS, **(spacebot or {})}
        settings = s
        for key in ("background", "aggressive", "emergency", "backgroundFraction", "aggressiveFraction", "emergencyFraction"):
            s[key] = _clamp01(s[key], key)
        new, actions, d = spacebot_prune(units, s, window, tokens_before, counter=counter, summarizer=summarizer)
        details.update(d)
        fired = d["fires"] is not None
        reason = f"{d['fires']} tier fires" if fired else f"usage {usage:.1%} below the background tier {s['background']:.0%}"
    actions.sort(key=lambda a: a["line"] if a["line"] is not None else -1)
    r = PruneResult(strategy, settings, window, tokens_before, 0, fired, reason, new, actions, len(before_msgs), details, before_msgs)
    r.tokens_after = count_units(new, counter) if new is not units else tokens_before
    if strategy == "aceclaw" and fired:
        details["target_met"] = r.tokens_after <= details["target_tokens"]
        if not details["target_met"]:
            details["note"] = "phase 1 does not reach the 60% target: AceClaw would go on to LLM compaction (phase 2)"
    return r


# ----------------------------------------------------------------- writing


def messages_chunks(messages: list[dict], eol: bytes = b"\n") -> Iterable[bytes]:
    for m in messages:
        yield orjson.dumps({"role": m["role"], "content": m["content"]}) + eol


def _pi_block(b: dict) -> dict:
    t = b.get("type")
    if t == "tool_use":
        out = {"type": "toolCall", "id": b.get("id"), "name": b.get("name"), "arguments": b.get("input") if b.get("input") is not None else {}}
        return out
    if t == "thinking":
        out = {"type": "thinking", "thinking": b.get("thinking", "")}
        if b.get("signature"):
            out["thinkingSignature"] = b["signature"]
        return out
    if t == "image":
        src = b.get("source") or {}
        return {"type": "image", "data": src.get("data"), "mimeType": src.get("media_type")}
    return b


def _rng_for(path_bytes_hint: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(path_bytes_hint.encode()).digest()[:8], "big"))


def session_chunks(fmt_name: str, source_path: str, header_obj: dict | None, result: PruneResult, *,
                   load: Callable[[Entry], dict], eol: bytes = b"\n", seed: str | None = None,
                   now: float | None = None) -> Iterable[bytes]:
    """The pruned history as a new session file in the input's format (fresh ids, linear parent chain)."""
    units = [u for u in result.units if u.blocks and not (u.role == "assistant" and u.errored)]
    if fmt_name == "messages":
        yield from messages_chunks(result.messages, eol)
        return
    import os

    source_path = os.path.abspath(source_path)
    rng = _rng_for(seed or source_path)
    ts_now = now if now is not None else datetime.now(timezone.utc).timestamp()
    iso_now = datetime.fromtimestamp(ts_now, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    sid = new_uuid(rng)
    if fmt_name == "codex":
        yield from _codex_session(units, header_obj, sid, iso_now, load, eol)
        return
    if fmt_name == "pi":
        from .formats import pi

        header = {"type": "session", "version": 3, "id": sid, "timestamp": iso_now,
                  "cwd": (header_obj or {}).get("cwd") or "", "parentSession": source_path}
        yield orjson.dumps(header) + eol
        taken: set = set()
        parent = None
        for u in units:
            nid = pi.new_id(taken, rng)
            src = u.entries[0] if u.entries else None
            obj = copy.deepcopy(load(src)) if src is not None else None
            if obj is not None and obj.get("type") == "compaction":
                obj["firstKeptEntryId"] = nid  # keep nothing from before: the summary, then what follows
                obj.pop("firstKeptEntryIndex", None)
            elif obj is None or u.changed:
                obj = _pi_entry(u, obj, iso_now, ts_now)
            obj["id"] = nid
            obj["parentId"] = parent
            obj = {"type": obj.pop("type"), "id": obj.pop("id"), "parentId": obj.pop("parentId"), **obj}
            parent = nid
            yield orjson.dumps(obj) + eol
        return
    # Claude Code: one line per agent message, chained by parentUuid.
    taken = set()
    parent = None
    for u in units:
        src = u.entries[0] if u.entries else None
        obj = copy.deepcopy(load(src)) if src is not None else None
        if obj is None:
            obj = {"type": "user" if u.api_role == "user" else "assistant", "message": {"role": u.api_role, "content": []},
                   "timestamp": iso_now, "isSidechain": False, "userType": "external"}
        if u.changed or len(u.entries) != 1 or (src is not None and len(src.blocks or []) != len(u.blocks)):
            obj.pop("toolUseResult", None)
        obj.setdefault("message", {})["content"] = u.blocks
        uid = new_uuid(rng)
        taken.add(uid)
        obj["parentUuid"] = parent
        obj["uuid"] = uid
        obj["sessionId"] = sid
        parent = uid
        yield orjson.dumps(obj) + eol


def _codex_session(units: list, header_obj: dict | None, sid: str, iso_now: str, load, eol: bytes):
    """A new Codex rollout: its ``session_meta`` (the source's, a new id, no fork lineage, not
    paginated), then one ``response_item`` per item sent: the recorded item where the strategy
    left it alone, its output (tool results) or text replaced where it changed it."""
    from .codex_rules import INTERNAL_FIELDS

    meta = dict((header_obj or {}).get("payload") or {})
    for k in ("forked_from_id", "forked_from_ordinal_exclusive", "history_base", "history_mode", "context_window",
              "session_id"):
        meta.pop(k, None)
    meta.update(id=sid, timestamp=iso_now)
    yield orjson.dumps({"timestamp": iso_now, "type": "session_meta", "payload": meta}) + eol
    for u in units:
        e = u.entries[0] if u.entries else None
        item = None
        if e is not None and e.kind == "message":
            obj = load(e)
            p = obj.get("payload") or {}
            sub = e.get("sub")
            item = dict(p["replacement_history"][sub] if sub is not None else p)
            for k in INTERNAL_FIELDS:
                item.pop(k, None)
        elif e is not None and e.kind == "header":
            continue  # the base instructions: in the new session_meta
        if item is None or u.changed:
            item = _codex_item(u, item)
            if item is None:
                continue
        yield orjson.dumps({"timestamp": iso_now, "type": "response_item", "payload": item}) + eol


def _codex_item(u: Unit, item: dict | None) -> dict | None:
    """The Codex item for a unit a strategy changed or made (a trimmed or cleared output, a
    reasoning item without its thinking: dropped, a marker text)."""
    texts = [b.get("text") for b in u.blocks if isinstance(b, dict) and b.get("type") == "text"]
    if u.role == "toolResult":
        b = u.blocks[0]
        c = b.get("content")
        out = c if isinstance(c, str) else "\n".join(str(x.get("text") or "") for x in as_list(c) if isinstance(x, dict))
        base = item or {"type": "function_call_output", "call_id": b.get("tool_use_id")}
        return dict(base, output=out)
    if item is not None and item.get("type") == "reasoning":
        return None if not any(isinstance(b, dict) and b.get("type") == "thinking" for b in u.blocks) else item
    if item is not None and item.get("type") != "message":
        return item
    role = (item or {}).get("role") or ("assistant" if u.role == "assistant" else "user")
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts if isinstance(t, str)]}


def _pi_entry(u: Unit, obj: dict | None, iso_now: str, ts_now: float) -> dict:
    ms = int(ts_now * 1000)
    if u.role == "toolResult":
        b = u.blocks[0]
        c = b.get("content")
        content = [{"type": "text", "text": c}] if isinstance(c, str) else [_pi_block(x) for x in as_list(c) if isinstance(x, dict)]
        if obj is not None and obj.get("type") == "message":
            obj["message"]["content"] = content
            return obj
        return {"type": "message", "timestamp": iso_now,
                "message": {"role": "toolResult", "toolCallId": u.tool_id, "toolName": u.tool_name or "unknown",
                            "content": content, "isError": bool(b.get("is_error")), "timestamp": ms}}
    content = [_pi_block(x) for x in u.blocks if isinstance(x, dict)]
    if obj is not None and obj.get("type") == "message" and isinstance(obj.get("message"), dict):
        obj["message"]["content"] = content
        return obj
    if obj is not None and obj.get("type") == "custom_message":
        obj["content"] = content
        return obj
    return {"type": "message", "timestamp": iso_now, "message": {"role": "user", "content": content, "timestamp": ms}}


def parse_now(value) -> float:
    """--now: ISO 8601 (Z or offset; naive means UTC) or epoch seconds/milliseconds."""
    if value is None:
        return datetime.now(timezone.utc).timestamp()
    s = str(value).strip()
    try:
        f = float(s)
    except ValueError:
        pass
    else:
        f = f / 1000.0 if f > 1e11 else f
        if not -62135596800.0 <= f <= 253402300799.0:  # years 1 to 9999, as an ISO time can say (nan is neither)
            raise ConfigError(f"invalid time {value!r} (epoch seconds or milliseconds of the years 1 to 9999)")
        return f
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"invalid time {value!r} (expected ISO 8601 or epoch seconds)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def ensure_distinct(input_path: str, output_path: str) -> None:
    import os

    try:
        if os.path.exists(output_path) and os.path.samefile(input_path, output_path):
            raise InputError("refusing to write over the input session (prune never modifies it)", path=output_path)
    except OSError:
        return


def new_violations(result: PruneResult, baseline_errors: list | None = None) -> list:
    """API errors of the pruned view that the unpruned view does not already have (same kind and ids)."""
    from .validate import validate_messages

    if baseline_errors is None:
        baseline_errors = validate_messages(result.baseline)
    known = {(v.kind, tuple(v.ids)) for v in baseline_errors}
    return [v for v in validate_messages(result.messages) if (v.kind, tuple(v.ids)) not in known]
