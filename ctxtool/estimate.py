"""How full is a session's context, and what is eating it: ``ctxtool estimate``.

Four estimators of the tokens the model sees on the next request:

* ``heuristic`` - pi's ``estimateTokens`` (ceil(chars/4) per message, ``Entry.chars``),
  with an optional safety margin (OpenClaw: 1.2) and AceClaw's per-message overheads;
* ``tiktoken`` - cl100k_base / o200k_base, offline (``ctxtool.tokenizers``), counting
  the same blocks the heuristic counts, as the model receives them;
* ``usage`` - what the provider recorded: pi/OpenClaw ``estimateContextTokens`` (the
  last valid assistant usage plus the heuristic for the messages after it); Claude Code
  the same way: input + cache_creation + cache_read of the last response (deduplicated
  by ``message.id`` + ``requestId``, the final record rather than a streaming
  placeholder) plus its output_tokens plus the heuristic for the view's messages after
  it. When only streaming records of that response were written, its output_tokens is
  a placeholder: the heuristic of the response's own content stands in for it;
* ``anthropic`` - the Messages ``count_tokens`` endpoint (needs ANTHROPIC_API_KEY).

Only what the model sees is counted (``view.provider_view``: after the last compaction,
no ``details``/``toolUseResult``/progress/snapshots). The file is read in a streaming
pass that keeps a small index (``transcript.scan``); tiktoken and count_tokens re-read
the lines in context by offset in a second pass.

Library code: plain data in and out, ``CtxError`` on failure, nothing printed.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import math
import os
import re
from dataclasses import dataclass, field
from typing import Iterable

import orjson

from . import codex_rules, pool, retained, skill, tokenizers
from .errors import ApiError, CtxError, EXIT_FAILED
from .formats.common import CALL_TYPES, ignored_notes
from .model import BOUNDARY, COMPACTION, HEADER, IMAGE_CHARS, MESSAGE, META, PLAIN, as_list, as_text
from .tokens import (
    HeuristicSum,
    heuristic_per_entry,
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    TOOL_RESULT_OVERHEAD,
    TOOL_USE_OVERHEAD,
    heuristic_chars_tokens,
    overhead_entry,
    with_margin,
)
from .scanloop import index_passes
from .transcript import scan
from .window import Evidence
from .window import resolve_window as window_rule
from .claude_chain import NO_CONTENT
from .view import UNSENT_STOPS, ViewMessage, claude_main_thread, claude_media_capped, context_entries, pi_path, sendable, sent_as_no_content, sent_assistant, sent_context

TOKENIZERS = ("heuristic", "tiktoken", "usage", "anthropic")
PI_RESERVE_TOKENS = 16_384
OPENCLAW_RESERVE_FLOOR = 20_000
SPACEBOT_TIERS = (("background", 0.80), ("aggressive", 0.85), ("emergency", 0.95))
ACECLAW_TRIGGER = 0.85
IMAGE_TOKENS = IMAGE_CHARS // CHARS_PER_TOKEN  # an image in a tool result, as pi counts it
BATCH_CHARS = 1_000_000  # characters per encode_ordinary_batch call (the next batch is read meanwhile)
MIN_DELTA_TOKENS = 50  # calibration: ignore turn pairs that added less than this
MAX_TRUSTED_ERROR = 0.25  # calibration: an estimator is recommended only with a p90 error at most this
MIN_EVALUATED_TURNS = 2  # calibration: turns an estimator must be judged on before it is recommended
CPT_PLAUSIBLE = (1.0, 10.0)  # calibration: chars per token outside this range is flagged

KINDS = ("text", "thinking", "tool_call", "tool_result", "image", "summary")
TOOL_OUTPUT_ROLES = {"toolResult", "bashExecution"}
SUMMARY_ROLES = {"compactionSummary", "branchSummary"}


class EstimatorUnavailable(CtxError):
    """The chosen estimator cannot say anything about this file (e.g. no recorded usage)."""

    exit_code = EXIT_FAILED


@dataclass
class Options:
    tokenizer: str = "heuristic"
    encoding: str | None = None  # None: o200k_base for OpenAI models (Codex), else tokenizers.DEFAULT_ENCODING
    safety_margin: float = 1.0
    overheads: bool = False
    window: int | None = None
    model: str | None = None
    reserve_tokens: int = PI_RESERVE_TOKENS
    top: int = 10
    calibrate: bool = False
    fmt: str | None = None
    api_timeout: float = 60.0
    api_retries: int = 1
    num_threads: int = 2
    auto_compact_limit: int | None = None  # Codex: model_auto_compact_token_limit, when the config sets one


# ----------------------------------------------------------------------------- reading


@dataclass
class Index:
    """The transcript index plus what the breakdowns need that ``Entry`` does not keep, gathered in
    one pass after the scan (``_facts``)."""

    t: object
    split: dict = field(default_factory=dict)  # entry index -> [(kind, key, chars)] for multi-call/result entries
    evidence: Evidence = field(default_factory=Evidence)  # what the file says about its window
    names: dict = field(default_factory=dict)  # tool_use id -> tool name (``tool_names``)
    compactions: int = 0  # compaction records and compact boundaries
    ignored: list = field(default_factory=list)  # (line, field) of the absurd values read as missing
    last_model: str | None = None  # the model of the last assistant line that names one

    @property
    def window_hint(self) -> int | None:
        return self.evidence.recorded

    @property
    def model_hint(self) -> str | None:
        return self.evidence.model_hint


def read_index(path: str, fmt: str | None = None) -> Index:
    """One pass over ``path`` into the entry index (objects are released as it goes; a large
    file is scanned by helper processes, see ``transcript.scan``)."""
    # (lean: a Claude Code file's progress lines are kept apart, no entry each: nothing here reads them but the chain)
    t = scan(path, fmt, lean=True)  # the scan pauses the cyclic GC itself
    # the index lives until the estimate is done: keep later collections from re-walking it
    # (frozen objects are still freed by reference counting)
    gc.freeze()
    ix = Index(t)
    _facts(ix, t.entries)
    return ix


def _facts(ix: Index, entries: list) -> None:
    """Fill ``ix`` in one pass over the index: what ``Evidence.of``, ``tool_names``,
    ``ignored_notes`` and the per-call split would each read in a pass of their own. A metadata
    line whose optional fields are all unset (``PLAIN``: most lines of a Claude Code file) is
    passed over at the cost of one field read. The C part's loop (``_scan.Rows.facts``) reads the
    entries whose fields are slots and hands the others to ``one``, the loop's body in Python; given the
    evidence, it does what ``Evidence.add`` does for a plain assistant message itself (its model and peak)."""
    split, names, ignored = ix.split, ix.names, ix.ignored
    add, main = ix.evidence.add, ix.evidence.main
    state = [0, None, -1]  # compactions, the last model, its entry's index

    def one(e) -> None:
        kind = e.kind
        x = e.extra
        if x is not None:
            found = x.get("ignored")
            if found:
                ignored.extend((e.lineno, f) for f in found)
        calls = e.calls
        if calls:
            for c in calls:
                if c.id:
                    names[c.id] = c.name or "unknown"
            if len(calls) > 1:
                split[e.index] = [("call", c.name or "unknown", c.chars) for c in calls]
        if len(e.results) > 1:
            split.setdefault(e.index, []).extend(("result", r.id, r.chars) for r in e.results)
        m = e.model
        named = m and m != "<synthetic>"
        if kind == MESSAGE:
            if e.role == "assistant":
                if named:
                    state[1:] = m, e.index
                if x is None and not m and e.usage is None:
                    main.seen = True  # all add(e) would do (Codex: reasoning, calls)
                else:
                    add(e)
            elif x is not None:
                add(e)
            else:
                main.seen = True  # MainThread.keeps for a plain line (Evidence.add_messages)
            return
        if kind == META:
            # what the last meta line that says it says (Evidence.of, read forward); a line whose extra says
            # neither (Codex's events) and whose object is released says nothing (window._meta_values)
            if (x and ("context_window" in x or "model" in x)) or e.obj is not None:
                add(e)
        elif kind == COMPACTION or kind == BOUNDARY:
            state[0] += 1
        if named and e.role == "assistant":
            state[1:] = m, e.index

    passes = index_passes()
    if passes is not None:
        n, model, at = passes.facts(entries, add, main, names, one, ix.evidence)
        ix.compactions = n + state[0]
        ix.last_model = model if at is not None and at > state[2] else state[1]
        return
    for e in entries:
        if e._m is PLAIN and e.kind == META:  # (obj is None there: it lives in PLAIN too)
            continue
        one(e)
    ix.compactions, ix.last_model = state[0], state[1]


def file_model(ix: Index) -> str | None:
    """The model the session last used, as the file names it."""
    return ix.last_model or ix.model_hint


# ----------------------------------------------------------------------------- labels


def role_label(e) -> str:
    if e.get("compact_summary"):
        return "compactionSummary"
    if e.role == "user" and e.results:
        return "toolResult"
    return e.role or "?"


def _entry_kinds(e) -> dict:
    """Characters by block kind; Claude's compact summary counts as a summary."""
    if e.get("compact_summary"):
        return {"summary": sum(e.kinds.values())}
    return e.kinds


def tool_names(entries) -> dict:
    """tool_use id -> tool name, from the calls the entries hold."""
    names: dict = {}
    for e in entries:
        for c in e.calls:
            if c.id:
                names[c.id] = c.name or "unknown"
    return names


def _result_name(r, names: dict) -> str:
    return r.name or names.get(r.id) or "unknown"


# ----------------------------------------------------------------------------- breakdown


class Tally:
    """Aggregates per-entry token figures into the breakdowns."""

    def __init__(self, top: int):
        self.by_role: dict = {}
        self.by_kind: dict = {}
        self.by_tool: dict = {}
        self.top_n = top
        self.heap: list = []
        self.total = 0
        self.entries = 0

    def tool(self, name: str, which: str, tokens: float) -> None:
        d = self.by_tool.get(name)
        if d is None:
            d = self.by_tool[name] = {"calls": 0, "results": 0, "call_tokens": 0.0, "result_tokens": 0.0}
        if which == "result+":  # more of a result already counted (its images)
            d["result_tokens"] += tokens
            return
        d[which + "s"] += 1
        d[which + "_tokens"] += tokens

    def add(self, e, tokens: int, kinds: dict, tools: list) -> None:
        self.entries += 1
        self.total += tokens
        role = role_label(e)
        self.by_role[role] = self.by_role.get(role, 0) + tokens
        for k, v in kinds.items():
            self.by_kind[k] = self.by_kind.get(k, 0.0) + v
        for name, which, tok in tools:
            self.tool(name, which, tok)
        if self.top_n > 0:
            item = (tokens, -e.index, e.lineno, role, tuple(n for n, _, _ in tools))
            if len(self.heap) < self.top_n:
                heapq.heappush(self.heap, item)
            elif item > self.heap[0]:
                heapq.heapreplace(self.heap, item)

    def result(self, basis: str) -> dict:
        total = self.total or 0
        tools = []
        for name, d in self.by_tool.items():
            ct, rt = round(d["call_tokens"]), round(d["result_tokens"])
            tools.append({"tool": name, "calls": d["calls"], "results": d["results"], "call_tokens": ct,
                          "result_tokens": rt, "tokens": ct + rt})
        tools.sort(key=lambda x: (-x["tokens"], x["tool"]))
        top = [{"line": ln, "role": role, "tokens": tok, "tools": list(dict.fromkeys(names))}
               for tok, _, ln, role, names in sorted(self.heap, reverse=True)]
        tool_out = sum(v for r, v in self.by_role.items() if r in TOOL_OUTPUT_ROLES)
        summ = sum(v for r, v in self.by_role.items() if r in SUMMARY_ROLES)
        conv = total - tool_out - summ

        def share(x):
            return round(x / total, 4) if total else 0.0

        return {
            "basis": basis,
            "tokens": total,
            "by_role": dict(sorted(self.by_role.items(), key=lambda kv: -kv[1])),
            "by_kind": {k: round(self.by_kind[k]) for k in KINDS if self.by_kind.get(k)},
            "by_tool": tools,
            "top": top,
            "shares": {
                "tool_output": share(tool_out),
                "conversation": share(conv),
                "summaries": share(summ),
                "tool_output_tokens": tool_out,
                "conversation_tokens": conv,
                "summary_tokens": summ,
            },
        }


def view_of(ctx: list) -> list:
    """``view.provider_view`` from already computed ``context_entries`` (the pi path is walked once):
    ``sendable`` and ``Entry.api_role`` inline (one pass over every message of a large file)."""
    msgs: list = []
    last = cur = None
    for e in ctx:
        role = e.role
        if role == "assistant":
            if not sent_assistant(e):
                continue
        elif role is not None:
            role = "user"
        if cur is not None and last == role:
            cur.append(e)
        else:
            m = ViewMessage(role, [e])
            msgs.append(m)
            cur, last = m.entries, role
    return msgs


def sent_of(ctx: list) -> tuple[list, int, bool]:
    """(the entries ``view_of(ctx)`` keeps, in order; how many messages they make; whether a result among them has
    no name), without its objects: the C part's ``Rows.sent`` where it is built."""
    passes = index_passes()
    got = passes.sent(ctx, UNSENT_STOPS) if passes is not None else None
    if got is not None:
        return got
    view = view_of(ctx)
    vis = [e for m in view for e in m.entries]
    return vis, len(view), any(r.name is None for e in vis for r in e.results)


def _heuristic_tally(tally: Tally, vis: list, split: dict, names: dict) -> None:
    """``Tally.add(e, *heuristic_detail(e))`` for every entry, in one loop (the same figures): the C part's
    ``Rows.tally`` where it is built. It hands ``one`` an entry whose fields it does not expect (a compact summary,
    kinds in a dict) and ``tools`` the tools of an entry whose figures are split or whose results carry no
    tool_chars, in order; without it, ``one`` reads every entry."""
    by_role = tally.by_role
    kind_chars: dict = {}  # characters by kind; turned into tokens once at the end

    def tools(e) -> None:
        for name, which, tok in heuristic_tools(e, split, names):
            tally.tool(name, which, tok)

    def one(e, n: int) -> None:
        role, extra, kinds = e.role, e.extra, e.kinds
        if extra is not None and extra.get("compact_summary"):
            role = "compactionSummary"
            kind_chars["summary"] = kind_chars.get("summary", 0) + sum(kinds.values())
        else:
            role = "toolResult" if role == "user" and e.results else role or "?"  # (role_label)
            for k, v in kinds.items():
                kind_chars[k] = kind_chars.get(k, 0) + v
        by_role[role] = by_role.get(role, 0) + n
        calls, results = e.calls, e.results
        if not (calls or results):
            return
        if (results and not e.tool_chars) or split.get(e.index) is not None:
            tools(e)
            return
        # heuristic_tools for the common entry (no split parts; a result with its tool's name, as pi's)
        if calls:
            tally.tool(calls[0].name or "unknown", "call", kinds.get("tool_call", 0) / CHARS_PER_TOKEN)
        for name, chars in e.tool_chars.items() if results else ():
            tally.tool(name, "result", chars / CHARS_PER_TOKEN)

    passes = index_passes()
    got = None
    if passes is not None:
        got = passes.tally(vis, split, names, by_role, tally.by_tool, kind_chars, one, tools)
    if got is None:
        toks = heuristic_per_entry(vis)  # one ceil per message; split Claude lines share theirs
        for e, n in zip(vis, toks):
            one(e, n)
        total = sum(toks)
    else:
        toks, total = got
    tally.total += total
    tally.entries += len(vis)
    for k, v in kind_chars.items():
        tally.by_kind[k] = tally.by_kind.get(k, 0.0) + v / CHARS_PER_TOKEN
    if tally.top_n > 0 and toks:
        # the largest (tokens, -index, position): only entries with at least the n-th largest figure can be among them
        cut = heapq.nlargest(tally.top_n, toks)[-1]
        pick = [(n, -vis[i].index, i) for i, n in enumerate(toks) if n >= cut]
        for _, _, i in heapq.nlargest(tally.top_n, pick):
            e = vis[i]
            names_ = tuple(n for n, _, _ in heuristic_tools(e, split, names))
            tally.heap.append((toks[i], -e.index, e.lineno, role_label(e), names_))


def heuristic_detail(e, split: dict, names: dict) -> tuple[int, dict, list]:
    """(tokens, tokens by kind, [(tool, 'call'|'result', tokens)]) of one entry by pi's rules."""
    tokens = heuristic_chars_tokens(e.chars)
    kinds = {k: v / CHARS_PER_TOKEN for k, v in _entry_kinds(e).items() if v}
    return tokens, kinds, heuristic_tools(e, split, names)


def heuristic_tools(e, split: dict, names: dict) -> list:
    """[(tool, 'call'|'result', tokens)] of one entry by pi's rules (``heuristic_detail``'s third part)."""
    tools = []
    parts = split.get(e.index)
    multi_calls = multi_results = False
    if parts:
        for which, key, chars in parts:
            if which == "call":
                multi_calls = True
                tools.append((key, "call", chars / CHARS_PER_TOKEN))
            else:
                multi_results = True
                tools.append((names.get(key) or "unknown", "result", chars / CHARS_PER_TOKEN))
    if e.calls and not multi_calls:
        c = e.calls[0]
        tools.append((c.name or "unknown", "call", e.kinds.get("tool_call", 0) / CHARS_PER_TOKEN))
    if e.results and not multi_results:
        if e.tool_chars:  # pi toolResult
            for name, chars in e.tool_chars.items():
                tools.append((name, "result", chars / CHARS_PER_TOKEN))
        else:
            r = e.results[0]
            chars = e.kinds.get("tool_result", 0) + e.kinds.get("image", 0)
            tools.append((_result_name(r, names), "result", chars / CHARS_PER_TOKEN))
    return tools


# ----------------------------------------------------------------------------- tiktoken


def entry_pieces(e, names: dict) -> list[tuple[str, str | None, str, int]]:
    """What the model reads of a fresh entry (blocks loaded): [(kind, tool, text, images)].

    The same blocks the heuristic counts: user text (not images), assistant text,
    thinking and tool calls (name + JSON arguments), tool-result text plus images
    (1,200 tokens each, pi's 4,800 chars / 4), summaries with their wrapper.
    """
    if e.kind == COMPACTION or e.role == "branchSummary":
        return [("summary", None, _block_text(e.blocks), 0)]
    if e.role == "bashExecution":
        if e.get("exclude"):
            return []
        return [("text", None, _block_text(e.blocks), 0)]
    summary = bool(e.get("compact_summary"))
    role = "assistant" if e.role == "assistant" else ("toolResult" if (e.results or e.role == "toolResult") else e.role)
    out = []
    for b in e.blocks or []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            text = b.get("text")
            if isinstance(text, str) and text:
                out.append(("summary" if summary else "text", None, text, 0))
        elif t == "thinking":
            if role == "assistant":
                out.append(("thinking", None, as_text(b.get("thinking")), 0))
        elif t in CALL_TYPES:
            key = "input" if "input" in b else "arguments"
            name = b.get("name") if isinstance(b.get("name"), str) else ""
            args = b.get(key)
            if args is None:
                js = ""
            elif isinstance(args, str):
                js = args
            else:
                try:
                    js = orjson.dumps(args).decode("utf-8")
                except TypeError:
                    js = ""
            out.append(("tool_call", name or "unknown", name + js, 0))
        elif t == "tool_result":
            rid = b.get("tool_use_id")
            name = None
            for r in e.results:
                if r.id == rid:
                    name = _result_name(r, names)
                    break
            name = name or names.get(rid) or "unknown"
            text, images = _result_text(b.get("content"))
            out.append(("tool_result", name, text, images))
        elif t == "image":
            if role in ("toolResult", "custom"):
                out.append(("image", None, "", 1))
    return out


def _block_text(blocks) -> str:
    return "\n".join(as_text(b.get("text")) for b in as_list(blocks) if isinstance(b, dict) and b.get("type") == "text")


def _result_text(content) -> tuple[str, int]:
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    parts, images = [], 0
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict):
                t = b.get("type")
                if t == "text":
                    parts.append(as_text(b.get("text")))
                elif t == "image":
                    images += 1
    return "\n".join(parts), images


def _fork_notes(t) -> list[str]:
    """A Codex fork sends its parent's history up to the fork point before its own items (``codex_rules.fork_chain``,
    what ``view`` shows); the estimate's figures are of the fork's own items only: said, with how many it inherits."""
    header = next((e for e in t.entries if e.kind == HEADER), None)
    base = header.get("history_base") if header is not None else None
    if not base:
        return []
    parent = codex_rules.find_rollout(t.path, base["thread_id"])  # (fork_chain's first step: sent_items scans it)
    if parent is None:
        return [f"a fork of {base['thread_id']} whose parent rollout is not found: Codex refuses to resume it "
                "(ctxtool validate says so)"]
    inherited = len(codex_rules.sent_items(t)) - len(codex_rules.sent_items(t, t.entries, chain=False))
    return [f"a fork of {base['thread_id']} ({os.path.basename(parent)}): the {inherited} item(s) it inherits "
            "from its parent up to the fork point are not counted in these figures (ctxtool view shows them; -t usage "
            "counts them once the fork has made a request of its own)"]


def tiktoken_counts(ix: Index, entries: list, encoding: str, names: dict, *, num_threads: int = 2,
                    detail: bool = True) -> dict:
    """Second pass: token counts of ``entries`` (re-read by offset, batched).

    Returns {entry index: (tokens, kinds, tools)} (kinds/tools empty when not ``detail``).
    """
    enc = tokenizers.get_encoding(encoding)
    t = ix.t
    out: dict = {}
    texts: list[str] = []
    tags: list[tuple] = []
    size = 0
    pending: list = []  # (future, tags): batches being encoded while the next one is read

    def collect(fut, tags_) -> None:
        for (idx, kind, tool, images), n in zip(tags_, fut.result()):
            n += images * IMAGE_TOKENS
            rec = out[idx]
            rec[0] += n
            if detail:
                rec[1][kind] = rec[1].get(kind, 0) + n
                if tool is not None:
                    rec[2].append((tool, "call" if kind == "tool_call" else "result", n))

    def flush() -> None:
        nonlocal texts, tags, size
        pending.append((pool.submit(tokenizers.count_batch, enc, texts, num_threads), tags))
        texts, tags, size = [], [], 0
        while len(pending) > 1:
            collect(*pending.pop(0))

    ordered = sorted(entries, key=lambda e: e.offset)
    from concurrent.futures import ThreadPoolExecutor  # (here: ~10 ms of imports only tiktoken needs)

    with open(t.path, "rb") as f, ThreadPoolExecutor(max_workers=1) as pool:
        for e in ordered:
            rec = out[e.index] = [0, {}, []]
            fresh = e if e.blocks is not None else t.reload(e, f)
            for kind, tool, text, images in entry_pieces(fresh, names):
                if images and kind == "tool_result" and detail:
                    # images in a tool result: counted under the image kind, still the tool's result
                    rec[1]["image"] = rec[1].get("image", 0) + images * IMAGE_TOKENS
                    rec[0] += images * IMAGE_TOKENS
                    if tool is not None:
                        rec[2].append((tool, "result+", images * IMAGE_TOKENS))
                    images = 0
                texts.append(text)
                tags.append((e.index, kind, tool, images))
                size += len(text)
            if size >= BATCH_CHARS:
                flush()
        if texts:
            flush()
        while pending:
            collect(*pending.pop(0))
    return {k: tuple(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- usage


def _valid_usage(e) -> bool:
    return e.role == "assistant" and e.usage is not None and not e.errored


def claude_final_usage(entries) -> dict:
    """message.id(+requestId) -> (usage, last line, placeholder only?), keeping the final record."""
    best: dict = {}
    for e in entries:
        if not _valid_usage(e) or e.msg_key is None:
            continue
        if e.usage.context <= 0 and e.usage.output <= 0:
            continue
        prev = best.get(e.msg_key)
        if prev is None or not e.usage.placeholder or prev[0].placeholder:
            best[e.msg_key] = (e.usage, e.lineno, e.usage.placeholder)
        else:
            best[e.msg_key] = (prev[0], e.lineno, prev[2])
    return best


def usage_estimate(fmt_name: str, entries: list, ctx: list, sent: list | None = None) -> dict:
    """The ``usage`` estimator (see the module docstring). Raises EstimatorUnavailable. ``sent``: Claude Code, the
    entries of ``ctx`` the client sends (``sent_context``): a response it leaves out adds no output, nor do later lines
    it leaves out."""
    if fmt_name == "messages":
        raise EstimatorUnavailable("Messages JSONL records no usage; use --tokenizer heuristic or tiktoken")
    if fmt_name == "pi":
        comp = ctx[0] if ctx and ctx[0].kind == COMPACTION else None
        last = None
        for i in range(len(ctx) - 1, -1, -1):
            e = ctx[i]
            if e.role == "assistant" and e.usage is not None and e.stop not in ("error", "aborted"):
                if comp is not None and e.index < comp.index:
                    continue  # before the compaction: pi skips it
                if e.usage.context_after <= 0:
                    continue
                last = i
                break
        if last is None:
            tokens = sum(heuristic_chars_tokens(e.chars) for e in ctx)
            return {"tokens": tokens, "recorded": None, "after": tokens, "line": None,
                    "basis": "no valid assistant usage after the last compaction: heuristic for all messages (as pi does)"}
        e = ctx[last]
        after = sum(heuristic_chars_tokens(x.chars) for x in ctx[last + 1:])
        rec = e.usage.context_after
        return {"tokens": rec + after, "recorded": rec, "after": after, "line": e.lineno,
                "input": e.usage.input, "output": e.usage.output, "cache_read": e.usage.cache_read,
                "cache_write": e.usage.cache_write, "total_tokens": e.usage.total,
                "basis": f"usage of the assistant at line {e.lineno} (totalTokens or the sum) + heuristic for {len(ctx) - last - 1} later message(s)"}
    if fmt_name == "codex":
        return codex_usage(entries, ctx)
    # Claude Code: what the next request carries, as pi's estimateContextTokens counts it
    finals = claude_final_usage(ctx)
    key = None
    for e in reversed(ctx):
        if e.msg_key in finals:
            key = e.msg_key
            break
    if key is None:
        raise EstimatorUnavailable("no recorded assistant usage after the last compact boundary")
    usage, line, placeholder = finals[key]
    lines = sorted(e.lineno for e in ctx if e.msg_key == key)
    first = next(i for i, e in enumerate(ctx) if e.msg_key == key)
    left = {e.index for e in ctx} - {e.index for e in sent} if sent is not None and sent is not ctx else set()
    own = [e for e in ctx[first:] if e.msg_key == key and sendable(e)]
    # (a response the client leaves out, a reply of thinking alone: its input side was sent, its output is not)
    dropped = bool(own) and all(e.index in left for e in own)
    # what the view holds after the response started, the response aside (results of its calls, later
    # prompts and responses): the recorded input side does not hold it. API error and empty lines are not sent
    rest = [e for e in ctx[first + 1:] if e.msg_key != key and sendable(e) and e.index not in left]
    after = HeuristicSum(rest).tokens
    n_after = len(view_of(rest))
    rec = usage.context
    where = f"lines {lines[0]}-{lines[-1]}, {len(lines)} record(s) deduplicated"
    if dropped:
        response = output_added = 0
        basis = (f"input + cache_creation + cache_read of the last response {rec:,} ({where}; the client leaves that "
                 f"response out when it resumes, so its output is not counted)")
    elif placeholder:
        # a streaming record: the input side is exact, its output_tokens is a placeholder; the
        # response's own characters stand in for the output
        response = HeuristicSum(own).tokens
        output_added = 0
        basis = (f"input + cache_creation + cache_read of the last response {rec:,} ({where}; only streaming "
                 f"records were written, no final usage) + heuristic {response:,} for the response's own content "
                 f"(instead of the placeholder output_tokens {usage.output:,})")
    else:
        response = 0
        output_added = usage.output
        basis = (f"input + cache_creation + cache_read of the last response {rec:,} ({where}) "
                 f"+ its output_tokens {usage.output:,}")
    basis += f" + heuristic {after:,} for {n_after} later message(s)"
    return {"tokens": rec + output_added + response + after, "recorded": rec, "output_added": output_added,
            "response_heuristic": response, "after": after, "after_messages": n_after,
            "line": lines[-1], "lines": lines, "message_key": key, "input": usage.input, "output": usage.output,
            "cache_read": usage.cache_read, "cache_write": usage.cache_write, "placeholder": placeholder,
            "basis": basis}


def codex_usage(entries: list, ctx: list) -> dict:
    """Codex: the ``last_token_usage`` of the last ``token_count`` after the latest compaction
    (its total_tokens: the request's input, cached included, plus its output, which the history
    now holds) plus the heuristic for the items after that response (its tool outputs, later
    prompts). The response is the last item Codex received before the count (an assistant
    message, reasoning or a call): the outputs of its calls are written before the count but are
    not in it."""
    comp = next((e.index for e in reversed(entries) if e.kind == COMPACTION), -1)  # the latest (indexes rise)
    own = [e for e in ctx if e.index > comp and e.kind == MESSAGE and e.get("sub") is None]
    for tc in reversed(entries):
        if tc.index <= comp:
            break
        if tc.usage is None or tc.get("event") != "token_count":
            continue
        k = bisect.bisect_left([e.index for e in own], tc.index) - 1
        while k >= 0 and own[k].role != "assistant":
            k -= 1
        if k < 0:
            continue  # a count before any response of this history (the compaction's own request)
        u = tc.usage
        rec = u.total or (u.input + u.cache_read + u.output)
        anchor = own[k]
        pos = next(i for i, e in enumerate(ctx) if e is anchor)
        rest = ctx[pos + 1:]
        after = HeuristicSum(rest).tokens
        return {"tokens": rec + after, "recorded": rec, "after": after, "after_messages": len(view_of(rest)),
                "line": tc.lineno, "response_line": anchor.lineno, "input": u.input + u.cache_read,
                "cached_input": u.cache_read, "output": u.output, "total_tokens": u.total,
                "basis": f"last_token_usage of the token_count at line {tc.lineno} (total_tokens {rec:,}: input "
                         f"{u.input + u.cache_read:,} incl. {u.cache_read:,} cached + output {u.output:,}) + heuristic "
                         f"{after:,} for {len(rest)} item(s) after the response it counts (line {anchor.lineno})"}
    tokens = HeuristicSum(ctx).tokens
    return {"tokens": tokens, "recorded": None, "after": tokens, "line": None,
            "basis": "no token_count after the last compaction: heuristic for all items"}


# ----------------------------------------------------------------------------- anthropic


def _api_block(b, role: str):
    if not isinstance(b, dict):
        return None
    t = b.get("type")
    if t == "text":
        text = b.get("text")
        return {"type": "text", "text": text} if isinstance(text, str) and text.strip() else None
    if t == "thinking":
        if role == "assistant" and b.get("signature") and b.get("thinking"):
            return {"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]}
        return None
    if t == "redacted_thinking":
        return {"type": "redacted_thinking", "data": b.get("data", "")} if role == "assistant" else None
    if t in CALL_TYPES:
        args = b.get("input", b.get("arguments"))
        if isinstance(args, str):
            try:
                args = orjson.loads(args)
            except orjson.JSONDecodeError:
                args = {"_raw": args}
        if not isinstance(args, dict):
            args = {}
        return {"type": "tool_use", "id": b.get("id") or "toolu_unknown", "name": b.get("name") or "unknown", "input": args}
    if t == "tool_result":
        content = b.get("content")
        if isinstance(content, list):
            content = [x for x in (_api_block(c, "user") for c in content) if x is not None and x["type"] in ("text", "image")]
        elif not isinstance(content, str):
            content = ""
        out = {"type": "tool_result", "tool_use_id": b.get("tool_use_id") or "toolu_unknown", "content": content}
        if b.get("is_error"):
            out["is_error"] = True
        return out
    if t == "image":
        src = b.get("source")
        return {"type": "image", "source": src} if isinstance(src, dict) else None
    return None


def api_messages(ix: Index, view) -> tuple[list, list]:
    """(messages, tools) for count_tokens: the provider view, re-read, in the Messages shape."""
    t = ix.t
    msgs: list = []
    tools: dict = {}
    with open(t.path, "rb") as f:
        for m in view:
            content = []
            for e in m.entries:
                if e.empty and sent_as_no_content(e):
                    content.append({"type": "text", "text": NO_CONTENT})
                    continue
                fresh = e if e.blocks is not None else t.reload(e, f)
                for b in fresh.blocks or []:
                    ab = _api_block(b, m.role)
                    if ab is None:
                        continue
                    if ab["type"] == "tool_use":
                        tools.setdefault(ab["name"], {"name": ab["name"], "description": "", "input_schema": {"type": "object"}})
                    content.append(ab)
            if not content:
                continue
            if msgs and msgs[-1]["role"] == m.role:
                msgs[-1]["content"].extend(content)
            else:
                msgs.append({"role": m.role, "content": content})
    return msgs, list(tools.values())


def anthropic_count(messages: list, tools: list, model: str, *, timeout: float = 60.0, retries: int = 1) -> int:
    """count_tokens through the anthropic SDK; ApiError (one line) on any failure."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ApiError("the anthropic estimator calls the count_tokens API and needs ANTHROPIC_API_KEY; "
                       "offline, use --tokenizer heuristic, tiktoken or usage")
    if not messages:
        return 0
    base = os.environ.get("ANTHROPIC_BASE_URL") or None
    try:
        import anthropic
    except ImportError:
        raise ApiError("the anthropic package is not installed: pip install anthropic") from None
    where = base or "api.anthropic.com"
    try:
        client = anthropic.Anthropic(api_key=key, base_url=base, timeout=timeout, max_retries=retries)
        kw = {"model": model, "messages": messages}
        if tools:
            kw["tools"] = tools
        res = client.messages.count_tokens(**kw)
        return int(res.input_tokens)
    except anthropic.APITimeoutError:
        raise ApiError(f"count_tokens timed out after {timeout:g}s ({where})") from None
    except anthropic.APIConnectionError as e:
        cause = e.__cause__ or e.__context__
        raise ApiError(f"count_tokens: cannot reach {where}: {_one_line(cause or e)}") from None
    except anthropic.APIStatusError as e:
        msg = _one_line(_api_error_message(e))
        raise ApiError(f"count_tokens failed: HTTP {e.status_code}: {msg}") from None
    except Exception as e:  # noqa: BLE001 - never a traceback for a network estimate
        raise ApiError(f"count_tokens failed: {type(e).__name__}: {_one_line(e)}") from None


def _api_error_message(e) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return f"{err.get('type', 'error')}: {err['message']}"
    return str(getattr(e, "message", e))


def _one_line(x) -> str:
    s = " ".join(str(x).split())
    return s[:300] + ("..." if len(s) > 300 else "")


# ----------------------------------------------------------------------------- window and triggers


CODEX_AUTO_COMPACT = 0.9  # Codex compacts at 90% of the model's context window (judged: 244,800 of 272,000)
CODEX_EFFECTIVE_WINDOW = 0.95  # the model_context_window Codex records is 95% of the model's window


def codex_auto_compact(window: int, window_basis: str, configured: int | None = None) -> tuple[int, str]:
    """Codex's auto-compaction threshold: ``model_auto_compact_token_limit`` when configured, else
    90% of the model's context window; the window a rollout records is Codex's effective window
    (95% of the model's), so the model's is recovered from it."""
    if configured:
        return configured, "model_auto_compact_token_limit (configured)"
    if window_basis == "recorded":
        full = round(window / CODEX_EFFECTIVE_WINDOW)
        return math.floor(full * CODEX_AUTO_COMPACT), (f"90% of the model's window {full:,} "
                                                       f"(the recorded model_context_window {window:,} is 95% of it)")
    return math.floor(window * CODEX_AUTO_COMPACT), "90% of the window (Codex's default)"


def default_encoding(fmt_name: str, model: str | None) -> str:
    """o200k_base for OpenAI models (Codex rollouts, gpt-*/o-series names), else cl100k_base."""
    if fmt_name == "codex" or (model and re.search(r"(^|/)(gpt-|o[134]\b|codex)", model, re.I)):
        return "o200k_base"
    return tokenizers.DEFAULT_ENCODING


def pressure(fraction: float) -> str:
    """The context-management skill's levels: <50% low, 50-70 medium, 70-85 high, >85 critical."""
    if fraction < 0.50:
        return "low"
    if fraction < 0.70:
        return "medium"
    if fraction <= 0.85:
        return "high"
    return "critical"


def triggers(tokens: int, window: int, reserve: int = PI_RESERVE_TOKENS,
             codex_limit: tuple[int, str] | None = None) -> list[dict]:
    rows = [
        ("pi", window - reserve, f"window - reserveTokens {reserve:,}"),
        ("openclaw", window - max(reserve, OPENCLAW_RESERVE_FLOOR), f"window - max(reserveTokens, floor {OPENCLAW_RESERVE_FLOOR:,})"),
    ]
    for name, frac in SPACEBOT_TIERS:
        rows.append((f"spacebot-{name}", math.floor(window * frac), f"{int(frac * 100)}% of the window"))
    rows.append(("aceclaw", math.floor(window * ACECLAW_TRIGGER), f"{int(ACECLAW_TRIGGER * 100)}% of the window"))
    if codex_limit is not None:
        rows.append(("codex-auto-compact", codex_limit[0], codex_limit[1]))
    return [{"name": n, "threshold": th, "rule": rule, "crossed": tokens > th, "distance": th - tokens} for n, th, rule in rows]


# ----------------------------------------------------------------------------- calibration


def _pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = max(0, min(len(s) - 1, math.ceil(p * len(s)) - 1))
    return s[k]


def _median(xs):
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _median_without(sorted_xs: list, x) -> float:
    """The median of ``sorted_xs`` with one occurrence of ``x`` removed (O(log n))."""
    k = bisect.bisect_left(sorted_xs, x)
    n = len(sorted_xs) - 1

    def at(i):  # the i-th element of the list without position k
        return sorted_xs[i if i < k else i + 1]

    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2


def calibration(ix: Index, opts: Options, names: dict) -> dict:
    """Compare each offline estimator with the usage recorded at every assistant turn."""
    t = ix.t
    fmt = t.format_name
    if fmt == "messages":
        return {"available": False, "reason": "Messages JSONL records no usage"}
    if fmt == "pi":
        seq = pi_path(t.entries)
    else:  # a subagent's lines in a main file are another context: left out as the view and Evidence do
        seq = claude_main_thread([e for e in t.entries if e.kind != "header"])
    msgs = [e for e in seq if e.kind in (MESSAGE, COMPACTION)]
    notes = []
    per: dict[str, callable] = {
        "heuristic": lambda e: heuristic_chars_tokens(e.chars),
        "heuristic+overheads": None,  # handled in the walk (split Claude lines)
    }
    tk: dict = {}
    for encname in tokenizers.ENCODINGS:
        try:
            counts = tiktoken_counts(ix, msgs, encname, names, num_threads=opts.num_threads, detail=False)
        except CtxError as err:
            notes.append(f"tiktoken:{encname} skipped: {err.reason}")
            continue
        tk[encname] = counts
        per[f"tiktoken:{encname}"] = (lambda c: (lambda e: c[e.index][0]))(counts)
    names_est = list(per) + ["usage"]
    finals = claude_final_usage(seq) if fmt == "claude" else {}

    running = {k: 0 for k in names_est if k != "usage"}
    chars = 0
    seg = 0
    usage_base: int | None = None
    since = HeuristicSum()  # the heuristic for what came after the last recorded usage
    points = []  # (segment, {est: value}, chars, recorded)
    pos = {e.id: i for i, e in enumerate(seq) if e.id is not None} if fmt == "pi" else {}
    prev_key = None
    seen_keys: set = set()
    streamed: set = set()  # Claude Code responses with only streaming (placeholder) records

    def cost(e, name):
        if name == "heuristic+overheads":
            return heuristic_chars_tokens(e.chars) + overhead_entry(e, new_message=e.msg_key is None or e.msg_key != prev_key)
        return per[name](e)

    for i, e in enumerate(seq):
        if e.kind == BOUNDARY:
            seg += 1
            running = {k: 0 for k in running}
            chars = 0
            usage_base = None
            prev_key = None
            continue
        if e.kind == COMPACTION:
            seg += 1
            kept = []
            first = e.get("first_kept")
            if first is not None and first in pos and pos[first] < i:
                kept = [x for x in seq[pos[first]:i] if x.kind == MESSAGE and sendable(x) and not x.get("exclude")]
            prev_key = None
            running = {k: cost(e, k) + sum(cost(x, k) for x in kept) for k in running}
            chars = e.chars + sum(x.chars for x in kept)
            usage_base = None
            continue
        if e.kind != MESSAGE or not sendable(e) or e.get("exclude"):
            continue
        rec = None
        placeholder = False
        if e.role == "assistant" and e.usage is not None and not e.errored:
            if fmt == "claude":
                if e.msg_key in finals and e.msg_key not in seen_keys:
                    seen_keys.add(e.msg_key)
                    rec, _, placeholder = finals[e.msg_key]  # the final record of the response
                    if placeholder:
                        streamed.add(e.msg_key)
            elif e.usage.context > 0:
                rec = e.usage
        if rec is not None and rec.context > 0:
            est = dict(running)
            if usage_base is not None:
                est["usage"] = usage_base + since.tokens
            points.append((seg, est, chars, rec.context))
        for k in running:
            running[k] += cost(e, k)
        chars += e.chars
        prev_key = e.msg_key
        if rec is not None and rec.context > 0:
            since = HeuristicSum()
            if placeholder:
                # only streaming records (as -t usage): the input side is exact, output_tokens is a
                # placeholder; the response's own content stands in for its output
                usage_base = rec.context
                since.add(e)
            else:
                usage_base = rec.context_after  # context after this response (pi's totalTokens)
        elif usage_base is not None and not (fmt == "claude" and e.role == "assistant" and e.msg_key is not None
                                             and e.msg_key in seen_keys and e.msg_key not in streamed):
            since.add(e)

    if not points:
        return {"available": False, "reason": "no assistant turn with recorded usage", "notes": notes}
    results = {}
    for name in names_est:
        pts = [(s, est[name], rec) for s, est, _, rec in points if name in est]
        if not pts:
            continue
        ratios = []
        pair_at = []  # index in pts of each ratio's first turn
        for j, ((s0, e0, r0), (s1, e1, r1)) in enumerate(zip(pts, pts[1:])):
            if s0 == s1 and e1 - e0 >= MIN_DELTA_TOKENS and r1 - r0 > 0:
                ratios.append((r1 - r0) / (e1 - e0))
                pair_at.append(j)
        # fit recorded ~= scale * estimate + baseline (system prompt and tools are not in the file).
        # Each recorded usage is compared with what the model saw at that request: the context
        # segment (between compactions/boundaries) in effect then. The baseline is fitted per
        # segment, never pooled across a compaction, and each turn is judged by a fit of the
        # *other* turns (leave one out: the ratio pairs and the baseline without it), so a turn
        # never validates itself.
        scale = 1.0 if name == "usage" else (_median(ratios) or 1.0)
        by_seg: dict = {}
        for s_, e_, r_ in pts:
            by_seg.setdefault(s_, []).append(r_ - scale * e_)
        seg_base = {s_: _median(v) for s_, v in by_seg.items()}
        sorted_seg = {s_: sorted(v) for s_, v in by_seg.items()}
        seg_members: dict = {}
        for i, (s_, _, _) in enumerate(pts):
            seg_members.setdefault(s_, []).append(i)
        touching: dict = {}
        for k, j in enumerate(pair_at):
            touching.setdefault(j, []).append(k)
            touching.setdefault(j + 1, []).append(k)
        errs = []
        for i, (s_, e_, r_) in enumerate(pts):
            if name == "usage":  # nothing fitted: the previous recorded usage + chars/4 predicts this one
                errs.append(abs(e_ - r_) / r_)
                continue
            if len(seg_members[s_]) < 2:
                continue  # the only turn of its segment: nothing else to fit its baseline from
            if i in touching:
                drop = set(touching[i])
                sc = _median([x for k, x in enumerate(ratios) if k not in drop]) or 1.0
                base = _median([pts[m][2] - sc * pts[m][1] for m in seg_members[s_] if m != i])
            else:
                sc = scale
                base = _median_without(sorted_seg[s_], r_ - scale * e_)
            errs.append(abs(sc * e_ + base - r_) / r_)
        last_seg = pts[-1][0]
        baseline = 0 if name == "usage" else seg_base[last_seg]
        raw_errs = [abs(est - rec) / rec for _, est, rec in pts]
        results[name] = {
            "turns": len(pts), "evaluated": len(errs),
            "ratio_median": _round(_median(ratios)), "ratio_p90": _round(_pct(ratios, 0.9)), "pairs": len(ratios),
            "baseline": round(baseline) if baseline is not None else None,
            "segment_baselines": None if name == "usage" else [
                {"segment": s_, "turns": len(v), "baseline": round(seg_base[s_])} for s_, v in by_seg.items()],
            "error_median": _round(_median(errs)), "error_p90": _round(_pct(errs, 0.9)),
            "raw_error_median": _round(_median(raw_errs)), "raw_error_p90": _round(_pct(raw_errs, 0.9)),
        }
    # chars per token from the growth between turns of one segment, only where it is measurable
    dchars = drec = 0
    for (s0, e0, c0, r0), (s1, e1, c1, r1) in zip(points, points[1:]):
        if s0 == s1 and r1 > r0 and c1 > c0 and e1["heuristic"] - e0["heuristic"] >= MIN_DELTA_TOKENS:
            dchars += c1 - c0
            drec += r1 - r0
    cpt = round(dchars / drec, 3) if drec else None
    if cpt is None:
        notes.append(f"chars/token not measured: no two turns of one context segment grew by >= {MIN_DELTA_TOKENS} tokens")
    elif not CPT_PLAUSIBLE[0] <= cpt <= CPT_PLAUSIBLE[1]:
        notes.append(f"chars/token {cpt} is outside the plausible {CPT_PLAUSIBLE[0]:g}..{CPT_PLAUSIBLE[1]:g}: "
                     "the recorded usage grew by more (or less) than the messages between the turns")
    judged = {n: r for n, r in results.items() if r["evaluated"] >= MIN_EVALUATED_TURNS and r["error_p90"] is not None}
    offline = [n for n in judged if n != "usage"]
    best = min(offline, key=lambda n: (judged[n]["error_p90"], n)) if offline else None
    # the fixed baseline (system prompt, tools) does not change at a compaction: when the segments'
    # baselines disagree, the recorded usage and the file disagree about what was sent
    typical = _median([rec for *_, rec in points]) or 1
    unstable = set()
    for n in offline:
        bs = [x["baseline"] for x in results[n]["segment_baselines"]]
        spread = max(bs) - min(bs)
        results[n]["baseline_spread"] = spread
        if len(bs) > 1 and spread > MAX_TRUSTED_ERROR * typical:
            unstable.add(n)
    if unstable:
        b0 = results[best if best in unstable else sorted(unstable)[0]]["segment_baselines"]
        notes.append("the fixed baseline moves across compactions (" + ", ".join(
            f"segment {x['segment'] + 1}: {x['baseline']:,}" for x in b0) + "): the recorded usage before and after a "
            "compaction does not fit one system prompt + tools, so no offline formula holds for the whole file")
    sane = [n for n in judged if judged[n]["error_p90"] <= MAX_TRUSTED_ERROR and n not in unstable]
    trust = None
    u = judged.get("usage")
    if "usage" in sane and (best is None or u["error_p90"] <= judged[best]["error_p90"]):
        trust = "usage"
        advice = "recorded usage (plus the heuristic for later messages) tracks the provider best"
    elif best in sane:
        trust = best
        advice = (f"{best} has the smallest p90 error once scaled and the fixed baseline (system prompt, tools) "
                  f"of the current context segment is added")
    elif not judged:
        per_seg: dict = {}
        for s_, _, _, _ in points:
            per_seg[s_] = per_seg.get(s_, 0) + 1
        advice = (f"not enough recorded turns to judge any estimator: each turn is compared with the other turns of "
                  f"its context segment (between compactions), and at least {MIN_EVALUATED_TURNS} such comparisons are "
                  f"needed; recorded turns per segment: {', '.join(str(v) for v in per_seg.values())}")
    elif best is not None and best in unstable and judged[best]["error_p90"] <= MAX_TRUSTED_ERROR:
        advice = (f"no estimator is recommended: {best} tracks the turns within each context segment (p90 error "
                  f"{judged[best]['error_p90']:.0%}) but its fixed baseline moves by "
                  f"{results[best]['baseline_spread']:,} tokens across compactions (see the note)")
    else:
        b = best or min(judged, key=lambda n: (judged[n]["error_p90"], n))
        advice = (f"no estimator is within {MAX_TRUSTED_ERROR:.0%} (p90) of the recorded usage (best: {b}, p90 error "
                  f"{judged[b]['error_p90']:.0%}): do not rely on an offline estimate for this file; use the recorded usage")
    if trust and trust != "usage" and results[trust]["ratio_median"]:
        advice += (f"; offline, use {trust} x {results[trust]['ratio_median']:.2f} + "
                   f"{results[trust]['baseline']:,} baseline")
    return {"available": True, "turns": len(points), "chars_per_token": cpt, "estimators": results,
            "best_offline": best, "trust": trust, "advice": advice, "max_trusted_error": MAX_TRUSTED_ERROR,
            "notes": notes}


def _round(x, n=4):
    return round(x, n) if x is not None else None


# ----------------------------------------------------------------------------- the estimate


def estimate_file(path: str, opts: Options | None = None) -> dict:
    """Estimate one session file. Raises CtxError subclasses (one-line reasons)."""
    opts = opts or Options()
    if opts.tokenizer not in TOKENIZERS:
        raise CtxError(f"unknown tokenizer {opts.tokenizer!r} (choose from {', '.join(TOKENIZERS)})")
    if opts.tokenizer == "tiktoken" and opts.encoding:
        tokenizers.get_encoding(opts.encoding)  # fail fast, before reading the file
    if opts.tokenizer == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise ApiError("the anthropic estimator calls the count_tokens API and needs ANTHROPIC_API_KEY; "
                       "offline, use --tokenizer heuristic, tiktoken or usage", path=path)
    ix = read_index(path, opts.fmt)
    t = ix.t
    fmt = t.format_name
    ctx = context_entries(fmt, t.entries)
    sent = sent_context(t, ctx)  # (the usage estimate reads every line)
    model = opts.model or file_model(ix)
    if fmt == "claude":  # (the images the client's cap on a request takes out of it)
        sent = claude_media_capped(t, sent, model)
    vis, messages, unnamed = sent_of(sent)
    # the view's message objects: only the overheads and the count_tokens request read them
    view = view_of(sent) if opts.overheads or opts.tokenizer == "anthropic" else None
    # tool names for results that do not carry one (Claude Code, Messages JSONL)
    names = ix.names if unnamed else {}
    win = window_rule(ix.evidence, override=opts.window, model=model)
    window, window_source = win.tokens, win.source
    notes: list[str] = []
    encoding = opts.encoding or default_encoding(fmt, model)

    # breakdown (and the offline totals)
    tally = Tally(opts.top)
    if opts.tokenizer == "tiktoken":
        counts = tiktoken_counts(ix, vis, encoding, names, num_threads=opts.num_threads)
        for e in vis:
            tokens, kinds, tools = counts[e.index]
            tally.add(e, tokens, kinds, tools)
        basis = f"tiktoken:{encoding}"
    else:
        _heuristic_tally(tally, vis, ix.split, names)
        basis = "heuristic"
    breakdown = tally.result(basis)
    raw = tally.total
    over = 0
    if opts.overheads:
        over = _view_overheads(view)
    res: dict = {"path": path, "format": fmt, "estimator": opts.tokenizer, "model": model}
    if opts.tokenizer in ("heuristic", "tiktoken"):
        if opts.tokenizer == "tiktoken":
            res["encoding"] = encoding
        tokens = with_margin(raw + over, opts.safety_margin)
        res.update({"raw_tokens": raw, "overhead_tokens": over, "safety_margin": opts.safety_margin})
    elif opts.tokenizer == "usage":
        u = usage_estimate(fmt, t.entries, ctx, sent)
        tokens = u["tokens"]
        res["usage"] = u
    else:
        if not model:
            raise ApiError("no model named in the file; pass --model for count_tokens", path=path)
        msgs, tools = api_messages(ix, view)
        try:
            tokens = anthropic_count(msgs, tools, model, timeout=opts.api_timeout, retries=opts.api_retries)
        except ApiError as e:
            raise ApiError(e.reason, path=path) from None
        res["api"] = {"model": model, "messages": len(msgs), "tools": len(tools)}
        if tools:
            notes.append(f"count_tokens includes {len(tools)} minimal tool definition(s) the API requires for tool blocks")
    fraction = tokens / window if window else 0.0
    n_comp = ix.compactions
    res.update({
        "tokens": tokens,
        "window": window,
        "window_source": window_source,
        "window_basis": win.basis,
        "percent": round(fraction * 100, 2),
        "pressure": pressure(fraction),
        "triggers": triggers(tokens, window, opts.reserve_tokens,
                             codex_auto_compact(window, win.basis, opts.auto_compact_limit) if fmt == "codex" else None),
        "messages": messages,
        "entries_in_context": len(vis),
        "entries": len(t.entries) + (len(t.progress) if t.progress is not None else 0),
        "lines": t.lines,
        "bad_lines": len(t.bad),
        "compactions": n_comp,
        "breakdown": breakdown,
    })
    calls = sum(x["calls"] for x in breakdown["by_tool"])
    res["skill"] = skill.advise(tokens, window, tool_calls=calls,
                                tool_tokens=sum(x["tokens"] for x in breakdown["by_tool"]) if calls else 0)
    if n_comp >= 3:
        notes.append(f"{n_comp} compactions in the file: summaries stack (each cycle raises the floor)")
    notes += ignored_notes(found=ix.ignored)
    if fmt == "codex":
        notes += _fork_notes(t)
    if opts.calibrate:
        res["calibration"] = calibration(ix, opts, names)
    res["notes"] = notes
    retained.keep(ix)  # (a run over one file leaves the index for the process's end to drop)
    return res


def _view_overheads(view) -> int:
    total = 0
    for m in view:
        total += MESSAGE_OVERHEAD
        for e in m.entries:
            total += TOOL_USE_OVERHEAD * len(e.calls) + TOOL_RESULT_OVERHEAD * len(e.results)
    return total


def estimate_many(paths: Iterable[str], opts: Options | None = None, *, wrap=None, workers: int | None = None) -> dict:
    """Estimate several files: {files, failures, totals}, in the order of ``paths``. Many files are
    estimated by worker processes (``pool.each``); ``wrap`` sees the ``(path, result, error)`` stream
    (the CLI's progress bar)."""
    opts = opts or Options()
    files, failures = [], []
    done = pool.each(estimate_file, paths, opts, workers=workers)
    for p, res, e in (wrap(done) if wrap is not None else done):
        if e is None:
            files.append(res)
        else:
            failures.append({"path": p, "error": e.reason, "line": e.line, "message": str(e) if e.path else f"{p}: {e.reason}",
                             "exit_code": e.exit_code})
    return {"files": files, "failures": failures, "totals": totals(files)}


def totals(files: list[dict]) -> dict:
    levels: dict = {}
    for f in files:
        levels[f["pressure"]] = levels.get(f["pressure"], 0) + 1
    return {
        "files": len(files),
        "tokens": sum(f["tokens"] for f in files),
        "max_percent": max((f["percent"] for f in files), default=0.0),
        "pressure": levels,
        "crossed_any_trigger": sum(1 for f in files if any(tr["crossed"] for tr in f["triggers"])),
    }
