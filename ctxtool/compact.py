"""Compaction planning: pure functions, no LLM, no I/O beyond reading the transcript.

What pi's ``prepareCompaction`` and OpenClaw's ``compaction.ts`` decide before any
summarizer runs, on the normalized entries of any format:

* the context to work on: pi's branch path from the previous compaction's
  ``firstKeptEntryId``, Claude Code's lines after the last ``compact_boundary``, a whole
  Messages JSONL file; a previous summary found there is carried forward;
* the cut point (``find_cut``): keep the newest ``keep_recent_tokens`` (pi's
  ``estimateTokens``), never cut at a tool result, split-turn handling as pi does;
* what to summarize, the turn prefix of a split turn, tokens before, read and
  modified files (pi's file operations plus the previous compaction's), and AceClaw's
  Phase 0 extraction (modified files, shell commands, tool errors) plus identifiers;
* OpenClaw's chunking: ``split_by_token_share``, ``chunk_by_max_tokens`` (1.2 margin),
  ``adaptive_chunk_ratio`` (0.4 down to 0.15), ``is_oversized``;
* the text a summarizer sees (``serialize``) and the final summary assembly
  (``finalize_summary``: file lists, tool failures, the 16,000-character cap).

Work happens on *units*: one model message each (a Claude Code assistant response
split over several lines is one unit).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import orjson

from . import window as window_rule
from .errors import InputError
from .model import COMPACTION, HEADER, MESSAGE, META, Entry, as_list, as_text, text_of
from .tokens import heuristic_entries, heuristic_entry
from .transcript import Transcript
from .view import claude_segment, pi_segment, sendable

# pi defaults (core/compaction/compaction.ts)
DEFAULT_KEEP_RECENT_TOKENS = 20_000
DEFAULT_RESERVE_TOKENS = 16_384
DEFAULT_WINDOW = window_rule.DEFAULT_WINDOW  # 200,000: the one default (ctxtool.window)
# OpenClaw compaction.ts
BASE_CHUNK_RATIO = 0.4
MIN_CHUNK_RATIO = 0.15
SAFETY_MARGIN = 1.2
DEFAULT_PARTS = 2
MIN_MESSAGES_FOR_SPLIT = 4
SUMMARIZATION_OVERHEAD_TOKENS = 4096
MAX_SUMMARY_CHARS = 16_000
TRUNCATION_NOTE = "\n\n[Compaction summary truncated to fit budget]"
TOOL_RESULT_MAX_CHARS = 2000  # pi serializeConversation
NO_HISTORY = "No prior history."

# Claude Code's summary line text (and what ctxtool writes for Messages JSONL).
CONTINUATION_PREFIX = ("This session is being continued from a previous conversation that ran out of context. "
                       "The conversation is summarized below:\n")
_CONTINUATION_START = "This session is being continued from a previous conversation that ran out of context."

USER_TURN_ROLES = {"user", "bashExecution", "custom", "branchSummary"}
CUT_ROLES = USER_TURN_ROLES | {"assistant", "compactionSummary"}

# Tool names (pi, OpenClaw, Claude Code, common MCP/agent tools).
READ_TOOLS = {"read", "read_file", "view", "cat", "open_file", "readfile", "notebookread"}
WRITE_TOOLS = {"write", "write_file", "create_file", "create", "writefile"}
EDIT_TOOLS = {"edit", "edit_file", "multiedit", "multi_edit", "str_replace", "str_replace_editor",
              "str_replace_based_edit_tool", "apply_patch", "notebookedit", "replace", "patch"}
SHELL_TOOLS = {"bash", "exec", "shell", "run_command", "execute_command", "run_shell_command",
               "terminal", "sh", "command", "process", "run"}
PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "notebook_path", "target_file")
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)


# ---------------------------------------------------------------- units


@dataclass
class Unit:
    """One model message: its entries (several for a split Claude Code response)."""

    entries: list[Entry]
    role: str
    tokens: int
    call_ids: tuple = ()
    result_ids: tuple = ()
    stop: str | None = None

    @property
    def first(self) -> Entry:
        return self.entries[0]

    @property
    def errored(self) -> bool:
        return self.role == "assistant" and self.stop in ("error", "aborted")

    def blocks(self) -> list:
        out: list = []
        for e in self.entries:
            out.extend(e.blocks or [])
        return out


def _unit_role(e: Entry) -> str:
    if e.role == "toolResult" or (e.results and e.role != "assistant"):
        return "toolResult"
    return e.role or "user"


def build_units(entries: list[Entry]) -> list[Unit]:
    units: list[Unit] = []
    for e in entries:
        role = _unit_role(e)
        if (role == "assistant" and units and units[-1].role == "assistant" and e.msg_key
                and units[-1].first.msg_key == e.msg_key):
            u = units[-1]
            u.entries.append(e)
            u.tokens += heuristic_entry(e)
            u.call_ids += tuple(c.id for c in e.calls if not c.problem)
            u.stop = e.stop or u.stop
            continue
        units.append(Unit([e], role, heuristic_entry(e), tuple(c.id for c in e.calls if not c.problem),
                          tuple(r.id for r in e.results), e.stop))
    return units


def units_tokens(units) -> int:
    return sum(u.tokens for u in units)


# ---------------------------------------------------------------- context


@dataclass
class Context:
    """The part of a transcript the model currently sees, ready to compact."""

    format: str
    units: list[Unit]
    previous_summary: str | None = None
    previous_read: list[str] = field(default_factory=list)
    previous_modified: list[str] = field(default_factory=list)
    path: list[Entry] = field(default_factory=list)  # pi: root..leaf
    leaf: Entry | None = None
    tokens_before: int = 0
    compacted_at_leaf: bool = False
    summary_entry: Entry | None = None  # the entry holding the previous summary


def strip_continuation(text: str) -> str:
    if text.startswith(CONTINUATION_PREFIX):
        return text[len(CONTINUATION_PREFIX):]
    if text.startswith(_CONTINUATION_START):
        return text[len(_CONTINUATION_START):].lstrip()
    return text


def load_context(t: Transcript) -> Context:
    """Find the current context of ``t``; entries involved are loaded (blocks/obj) again."""
    name = t.format_name
    with open(t.path, "rb") as f:
        def load(e: Entry) -> Entry:
            return t.reload(e, f) if (e.obj is None or e.blocks is None) else e

        if name == "pi":
            entries = t.entries
            body = [e for e in entries if e.kind != HEADER]
            if body and all(e.id is None for e in body):
                raise InputError("pi version 1 session (entries have no ids): open it once in pi to migrate it, "
                                 "then compact", path=t.path)
            path, start, comp = pi_segment(entries)
            path = [load(e) if e.kind in (MESSAGE, COMPACTION) else e for e in path]
            ctx = Context(name, [], path=path, leaf=path[-1] if path else None)
            if comp is not None:
                comp = next(e for e in path if e.index == comp.index)
                obj = comp.obj or {}
                ctx.previous_summary = obj.get("summary") if isinstance(obj.get("summary"), str) else None
                det = obj.get("details") if isinstance(obj.get("details"), dict) else {}
                if not obj.get("fromHook"):
                    ctx.previous_read = [x for x in as_list(det.get("readFiles")) if isinstance(x, str)]
                    ctx.previous_modified = [x for x in as_list(det.get("modifiedFiles")) if isinstance(x, str)]
                ctx.summary_entry = comp
            ctx.compacted_at_leaf = bool(path) and path[-1].kind == COMPACTION
            msgs = [e for e in path[start:] if e.kind == MESSAGE and not e.get("exclude")]
            ctx.units = build_units(msgs)
            view_entries = ([ctx.summary_entry] if ctx.summary_entry is not None else []) + msgs
        elif name == "codex":
            ctx = _codex_context(t, load)
            view_entries = ([ctx.summary_entry] if ctx.summary_entry is not None else []) + \
                [e for u in ctx.units for e in u.entries]
        else:
            if name == "claude":
                # the same selection as the provider view: no subagent (sidechain) lines
                msgs = [load(e) for e in claude_segment(t.entries) if e.kind == MESSAGE]
            else:
                msgs = [load(e) for e in t.entries if e.kind == MESSAGE]
            ctx = Context(name, [])
            ctx.leaf = t.entries[-1] if t.entries else None
            first = msgs[0] if msgs else None
            if first is not None and first.role == "user" and not first.results and (
                    first.get("compact_summary") or text_of(first.blocks).startswith(_CONTINUATION_START)):
                ctx.summary_entry = first
                ctx.previous_summary = strip_continuation(text_of(first.blocks))
                ctx.previous_read, ctx.previous_modified = parse_file_tags(ctx.previous_summary)
                msgs = msgs[1:]
                ctx.compacted_at_leaf = not msgs
            ctx.units = build_units(msgs)
            view_entries = ([ctx.summary_entry] if ctx.summary_entry is not None else []) + msgs
    ctx.tokens_before = heuristic_entries([e for e in view_entries if sendable(e)])
    return ctx


def _codex_context(t: Transcript, load) -> Context:
    """Codex: the items it sends after the latest compaction (``codex_rules.sent_entries``) less
    its base instructions and the context it renders itself (developer messages, the environment
    context), which Codex injects again after a compaction. The items of one response
    (reasoning, text, calls) are one unit, so a cut never separates a call from the response
    its outputs answer. A previous summary (Codex's prefix) is the summary to update."""
    from .codex_rules import SUMMARY_PREFIX, sent_entries

    msgs = []
    ctx = Context("codex", [])
    ctx.leaf = t.entries[-1] if t.entries else None
    key = None
    for e in sent_entries(t.entries):
        if e.kind == HEADER or (e.extra and e.extra.get("context")):
            continue
        e = load(e)
        if e.role == "user" and not e.results and text_of(e.blocks).startswith(SUMMARY_PREFIX):
            ctx.summary_entry = e
            text = text_of(e.blocks)
            ctx.previous_summary = text[text.find("\n") + 1:] if "\n" in text else ""
            ctx.previous_read, ctx.previous_modified = parse_file_tags(ctx.previous_summary)
            continue
        if e.role == "assistant":
            key = key or f"codex-response-{e.lineno}-{e.index}"
            e.msg_key = key
        else:
            key = None
        msgs.append(e)
    last = next((e for e in reversed(t.entries) if e.kind != META), None)
    ctx.compacted_at_leaf = last is not None and last.kind == COMPACTION
    ctx.units = build_units(msgs)
    return ctx


# ---------------------------------------------------------------- cut point


@dataclass
class Cut:
    first_kept: int  # unit index of the first kept unit (len(units) when nothing is kept)
    turn_start: int  # unit index of the split turn's start, -1 when not split
    split_turn: bool
    budget_at: int = -1  # unit index where the newest units reached keep_recent_tokens, -1 when never
    recent_tokens: int = 0  # tokens of units[budget_at:] (all units when the budget was never reached)


def is_cut_point(u: Unit) -> bool:
    """pi's valid cut points: never a tool result, so a call is never separated from its results."""
    return u.role in CUT_ROLES


def starts_turn(u: Unit) -> bool:
    """pi's findTurnStartIndex: a user or bashExecution message, a branch_summary or custom_message entry."""
    if u.role in ("user", "bashExecution"):
        return True
    return u.role in ("custom", "branchSummary") and u.first.type in ("custom_message", "branch_summary")


def find_cut(units: list[Unit], keep_recent_tokens: int) -> Cut:
    """pi's findCutPoint on units: the newest ``keep_recent_tokens`` are kept."""
    points = [i for i, u in enumerate(units) if is_cut_point(u)]
    if not points:
        return Cut(0, -1, False, -1, units_tokens(units))
    acc = 0
    cut = points[0]
    budget_at = -1
    for i in range(len(units) - 1, -1, -1):
        acc += units[i].tokens
        if acc >= keep_recent_tokens:
            budget_at = i
            for c in points:
                if c >= i:
                    cut = c
                    break
            break
    turn_start = -1
    if units[cut].role != "user":
        # pi searches from the cut entry itself: a cut at a bashExecution (or custom message)
        # starts its own turn, so nothing before it is a turn prefix
        for j in range(cut, -1, -1):
            if starts_turn(units[j]):
                turn_start = j
                break
    split = turn_start != -1 and turn_start < cut
    return Cut(cut, turn_start if split else -1, split, budget_at, acc)


def nothing_to_summarize(units: list[Unit], cut: Cut, keep_recent_tokens: int) -> str:
    """Why a plan with nothing before the cut is skipped, from the facts of the cut (never a guess)."""
    n = len(units)
    total = units_tokens(units)
    msgs = f"{n:,} message{'s' if n != 1 else ''}"
    if cut.budget_at < 0:
        if not any(is_cut_point(u) for u in units):
            return (f"nothing to summarize: no valid cut point (the context holds only tool results, {msgs}, "
                    f"{total:,} tokens; a tool result is never a cut point)")
        return (f"nothing to summarize: the whole context ({msgs}, {total:,} tokens) is within "
                f"--keep-recent-tokens {keep_recent_tokens:,}")
    if n == 1:
        return (f"nothing to summarize: the context is a single message of {total:,} tokens "
                f"(over --keep-recent-tokens {keep_recent_tokens:,}); pi cuts only between messages")
    u = units[cut.budget_at]
    at = (f"message {cut.budget_at + 1} of {n:,} ({u.role}, line {u.first.lineno}, {u.tokens:,} tokens; "
          f"the newest {n - cut.budget_at:,} hold {cut.recent_tokens:,})")
    if not any(is_cut_point(x) for x in units[cut.budget_at:]):
        return (f"nothing to summarize: keeping the newest --keep-recent-tokens {keep_recent_tokens:,} reaches back to "
                f"{at}, and no user or assistant message follows it; a tool result is never a cut point, so pi's "
                f"findCutPoint falls back to the first message and keeps the whole context ({total:,} tokens)")
    turns = sum(1 for x in units if starts_turn(x))
    one_turn = ", a single turn" if turns <= 1 else ""
    return (f"nothing to summarize: keeping the newest --keep-recent-tokens {keep_recent_tokens:,} reaches back to "
            f"{at}; the nearest cut point at or after it is the first message, so the whole context "
            f"({total:,} tokens{one_turn}) is kept and nothing lies before the cut")


# ---------------------------------------------------------------- chunking (OpenClaw)


def split_by_token_share(msgs: list, parts: int = DEFAULT_PARTS) -> list[list]:
    """OpenClaw's splitMessagesByTokenShare: at most ``parts`` chunks of about equal tokens;
    never between a tool call and its results."""
    if not msgs:
        return []
    parts = min(max(1, int(parts)), max(1, len(msgs)))
    if parts <= 1:
        return [list(msgs)]
    target = units_tokens(msgs) / parts
    chunks: list[list] = []
    cur: list = []
    cur_tokens = 0
    pending: set = set()
    pending_start: int | None = None
    for m in msgs:
        if len(chunks) < parts - 1 and cur and not pending and cur_tokens + m.tokens > target:
            chunks.append(cur)
            cur, cur_tokens, pending_start = [], 0, None
        cur.append(m)
        cur_tokens += m.tokens
        if m.role == "assistant":
            pending = set(m.call_ids) if not m.errored else set()
            pending_start = len(cur) - 1 if pending else None
        elif m.role == "toolResult" and pending:
            pending.difference_update(m.result_ids)
            if not pending and len(chunks) < parts - 1 and pending_start and cur_tokens > target:
                chunks.append(cur[:pending_start])
                cur = cur[pending_start:]
                cur_tokens = units_tokens(cur)
                pending_start = None
    if cur:
        chunks.append(cur)
    return chunks


def chunk_by_max_tokens(msgs: list, max_tokens: int) -> list[list]:
    """OpenClaw's chunkMessagesByMaxTokens with the 1.2 safety margin; an oversized
    message gets a chunk of its own."""
    effective = max(1, math.floor(max_tokens / SAFETY_MARGIN))
    chunks: list[list] = []
    cur: list = []
    cur_tokens = 0
    for m in msgs:
        if cur and cur_tokens + m.tokens > effective:
            chunks.append(cur)
            cur, cur_tokens = [], 0
        cur.append(m)
        cur_tokens += m.tokens
        if m.tokens > effective:
            chunks.append(cur)
            cur, cur_tokens = [], 0
    if cur:
        chunks.append(cur)
    return chunks


def adaptive_chunk_ratio(msgs: list, window: int) -> float:
    """OpenClaw's computeAdaptiveChunkRatio: smaller chunks when messages are large."""
    if not msgs or window <= 0:
        return BASE_CHUNK_RATIO
    avg = units_tokens(msgs) / len(msgs)
    avg_ratio = avg * SAFETY_MARGIN / window
    if avg_ratio > 0.1:
        return max(MIN_CHUNK_RATIO, BASE_CHUNK_RATIO - min(avg_ratio * 2, BASE_CHUNK_RATIO - MIN_CHUNK_RATIO))
    return BASE_CHUNK_RATIO


def max_chunk_tokens(msgs: list, window: int) -> int:
    return max(1, math.floor(window * adaptive_chunk_ratio(msgs, window)) - SUMMARIZATION_OVERHEAD_TOKENS)


def is_oversized(m, window: int) -> bool:
    """OpenClaw's isOversizedForSummary: tokens x 1.2 > half the window."""
    return m.tokens * SAFETY_MARGIN > 0.5 * window


# ---------------------------------------------------------------- extraction


@dataclass
class ToolError:
    name: str
    text: str


@dataclass
class Extraction:
    """AceClaw's Phase 0 plus pi's file operations and what the extractive summary needs."""

    user_requests: list[str] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)  # pi: read and not modified, sorted
    modified_files: list[str] = field(default_factory=list)  # written + edited, sorted
    modified_counts: dict = field(default_factory=dict)  # this span only, in first-seen order
    commands: list[str] = field(default_factory=list)
    errors: list[ToolError] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0

    def to_dict(self) -> dict:
        return {
            "messages": self.messages, "tool_calls": self.tool_calls, "tool_results": self.tool_results,
            "read_files": self.read_files, "modified_files": self.modified_files, "commands": self.commands,
            "errors": [{"tool": e.name, "text": e.text} for e in self.errors], "identifiers": self.identifiers,
        }


def _norm_tool(name) -> str:
    return (name if isinstance(name, str) else "").strip().lower().replace("-", "_").split("__")[-1]


def _path_of(args) -> str | None:
    if not isinstance(args, dict):
        return None
    for k in PATH_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _command_of(args) -> str | None:
    if not isinstance(args, dict):
        return None
    for k in ("command", "cmd", "script"):
        v = args.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return " ".join(v)
    return None


def keep_command(cmd: str) -> bool:
    """AceClaw: commands longer than 10 characters, except cd and ls."""
    cmd = cmd.strip()
    if len(cmd) <= 10:
        return False
    first = cmd.split(None, 1)[0] if cmd.split() else ""
    return first not in ("cd", "ls")


_ID_PATTERNS = [
    re.compile(r"`([^`\n]{2,80})`"),
    re.compile(r"\bhttps?://[^\s)>\]\"']+"),
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
    re.compile(r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b"),
    re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    re.compile(r"\b[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*\([^)\n]{0,40}\)|\b[a-z_][a-z0-9]*(?:_[a-z0-9]+)+\(\)", re.I),
]
MAX_IDENTIFIERS = 40


def find_identifiers(text: str, out: list, seen: set) -> None:
    for pat in _ID_PATTERNS:
        for m in pat.finditer(text):
            s = (m.group(1) if pat.groups else m.group(0)).strip().rstrip(".,;:")
            if len(s) < 3 or s in seen:
                continue
            seen.add(s)
            out.append(s)


def _first_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def extract(units: list[Unit], *, previous_read=(), previous_modified=()) -> Extraction:
    ex = Extraction()
    read: set = set(previous_read)
    modified: set = set(previous_modified)
    call_names: dict = {}
    seen_ids: set = set()
    id_texts: list[str] = []
    for u in units:
        ex.messages += 1
        if u.role in USER_TURN_ROLES:
            if u.first.role == "bashExecution":
                obj = (u.first.obj or {}).get("message") or {}
                cmd = as_text(obj.get("command"))
                if keep_command(cmd):
                    ex.commands.append(cmd.strip())
                continue
            text = text_of(u.blocks()).strip()
            if text and u.role == "user":
                ex.user_requests.append(text)
                id_texts.append(text)
            continue
        for b in u.blocks():
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "tool_use":
                ex.tool_calls += 1
                name = _norm_tool(b.get("name"))
                if isinstance(b.get("id"), str):
                    call_names[b["id"]] = b.get("name") if isinstance(b.get("name"), str) and b["name"] else "tool"
                args = b.get("input")
                p = _path_of(args)
                if name in READ_TOOLS and p:
                    read.add(p)
                elif name in WRITE_TOOLS | EDIT_TOOLS:
                    paths = [p] if p else []
                    if isinstance(args, dict):
                        for k in ("patch", "input", "diff"):
                            if isinstance(args.get(k), str):
                                paths += PATCH_FILE_RE.findall(args[k])
                    for q in paths:
                        q = q.strip()
                        modified.add(q)
                        ex.modified_counts[q] = ex.modified_counts.get(q, 0) + 1
                elif name in SHELL_TOOLS:
                    cmd = _command_of(args)
                    if cmd and keep_command(cmd):
                        ex.commands.append(cmd)
            elif t == "text" and u.role == "assistant":
                txt = as_text(b.get("text")).strip()
                if txt:
                    ex.assistant_texts.append(txt)
                    id_texts.append(txt)
            elif t == "tool_result":
                ex.tool_results += 1
                if b.get("is_error"):
                    name = None
                    for r in u.first.results:
                        if r.id == b.get("tool_use_id"):
                            name = r.name
                    tid = b.get("tool_use_id")
                    name = name or (call_names.get(tid) if isinstance(tid, str) else None) or "tool"
                    ex.errors.append(ToolError(name, _first_line(text_of(b.get("content")), 240)))
    ex.modified_files = sorted(modified)
    ex.read_files = sorted(read - modified)
    for q in list(ex.modified_counts) + ex.read_files:
        if q not in seen_ids:
            seen_ids.add(q)
            ex.identifiers.append(q)
    for cmd in ex.commands:
        id_texts.append(f"`{cmd}`" if len(cmd) <= 80 else cmd)
    for e in ex.errors:
        id_texts.append(e.text)
    for text in id_texts:
        if len(ex.identifiers) >= MAX_IDENTIFIERS:
            break
        find_identifiers(text, ex.identifiers, seen_ids)
    del ex.identifiers[MAX_IDENTIFIERS:]
    return ex


# ---------------------------------------------------------------- serialization (pi)


def _fmt_args(args) -> str:
    if isinstance(args, dict):
        return ", ".join(f"{k}={orjson.dumps(v).decode()}" for k, v in args.items())
    if args is None:
        return ""
    return orjson.dumps(args).decode() if not isinstance(args, str) else args


def serialize(units: list[Unit]) -> str:
    """pi's serializeConversation: the transcript as labelled text blocks."""
    parts: list[str] = []
    for u in units:
        if u.role == "assistant":
            thinking, texts, calls = [], [], []
            for b in u.blocks():
                if not isinstance(b, dict):
                    continue
                t = b.get("type")
                if t == "thinking" and b.get("thinking"):
                    thinking.append(as_text(b["thinking"]))
                elif t == "text" and b.get("text"):
                    texts.append(as_text(b["text"]))
                elif t == "tool_use":
                    calls.append(f"{b.get('name')}({_fmt_args(b.get('input'))})")
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif u.role == "toolResult":
            for b in u.blocks():
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    text = text_of(b.get("content"))
                    if len(text) > TOOL_RESULT_MAX_CHARS:
                        text = text[:TOOL_RESULT_MAX_CHARS] + f"\n\n[... {len(text) - TOOL_RESULT_MAX_CHARS} more characters truncated]"
                    if text:
                        parts.append("[Tool result]: " + text)
                elif isinstance(b, dict) and b.get("type") == "text" and b.get("text"):
                    parts.append("[User]: " + as_text(b["text"]))
        else:
            text = text_of(u.blocks())
            if text:
                parts.append("[User]: " + text)
    return "\n\n".join(parts)


# ---------------------------------------------------------------- summary assembly


def parse_file_tags(summary: str | None) -> tuple[list[str], list[str]]:
    if not summary:
        return [], []
    out = []
    for tag in ("read-files", "modified-files"):
        m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", summary, re.S)
        items = [x.strip() for x in m.group(1).splitlines()] if m else []
        out.append([x for x in items if x and not x.startswith("...and ")])
    return out[0], out[1]


# the sections, each with the newlines before it (``_cut``: a pattern starting with ``\n*`` is tried from every newline
# of a run, quadratic on a long run of them)
_SUFFIX_RES = [
    re.compile(r"<read-files>.*?</read-files>", re.S),
    re.compile(r"<modified-files>.*?</modified-files>", re.S),
    re.compile(r"## Tool Failures\n.*?(?=\n## |\Z)", re.S),
]
_TRUNCATION_RE = re.compile(re.escape(TRUNCATION_NOTE.strip()))


def _cut(pattern: re.Pattern, text: str) -> str:
    """``text`` without the matches of ``pattern`` and the newlines just before each (not those a match before took):
    what ``re.sub("\\n*" + pattern, "", text)`` gives, in linear time."""
    out, last = [], 0
    for m in pattern.finditer(text):
        at = m.start()
        while at > last and text[at - 1] == "\n":
            at -= 1
        out.append(text[last:at])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def strip_summary_suffix(summary: str) -> str:
    """The previous summary without the sections ``finalize_summary`` appends (rebuilt each time)."""
    for r in _SUFFIX_RES:
        summary = _cut(r, summary)
    return _TRUNCATION_RE.sub("", summary).strip()


def _capped_list(items: list[str], limit: int) -> str:
    out: list[str] = []
    used = 0
    for i, x in enumerate(items):
        if used + len(x) + 1 > limit:
            out.append(f"...and {len(items) - i} more")
            break
        out.append(x)
        used += len(x) + 1
    return "\n".join(out)


def file_section(read: list[str], modified: list[str]) -> str:
    parts = []
    if read:
        parts.append(f"<read-files>\n{_capped_list(read, 900)}\n</read-files>")
    if modified:
        parts.append(f"<modified-files>\n{_capped_list(modified, 900)}\n</modified-files>")
    return "\n\n".join(parts)[:2000]


def failures_section(errors: list[ToolError]) -> str:
    if not errors:
        return ""
    lines = [f"- {e.name}: {_first_line(e.text, 240)}" for e in errors[-8:]]
    more = f"\n- ...and {len(errors) - 8} more" if len(errors) > 8 else ""
    return "## Tool Failures\n" + "\n".join(lines) + more


def finalize_summary(body: str, *, read: list[str], modified: list[str], errors: list[ToolError] | None = None,
                     limit: int = MAX_SUMMARY_CHARS) -> str:
    """Body capped so the whole (with tool failures and file lists) fits ``limit`` characters."""
    suffix = "\n\n".join(s for s in (failures_section(errors or []), file_section(read, modified)) if s)
    budget = limit - (len(suffix) + 2 if suffix else 0)
    body = body.strip()
    if len(body) > budget:
        body = body[: max(0, budget - len(TRUNCATION_NOTE))].rstrip() + TRUNCATION_NOTE
    return f"{body}\n\n{suffix}" if suffix else body


# ---------------------------------------------------------------- the plan


@dataclass
class Plan:
    path: str
    format: str
    context: Context
    cut: Cut | None
    to_summarize: list[Unit]
    turn_prefix: list[Unit]
    kept: list[Unit]
    extraction: Extraction
    tokens_before: int
    first_kept_entry: Entry | None = None  # pi: the entry firstKeptEntryId names
    skip: str | None = None
    window: int = DEFAULT_WINDOW  # the session's context window (ctxtool.window's rule)
    window_source: str = "default"

    @property
    def previous_summary(self) -> str | None:
        return self.context.previous_summary

    @property
    def tokens_to_summarize(self) -> int:
        return units_tokens(self.to_summarize) + units_tokens(self.turn_prefix)

    @property
    def tokens_kept(self) -> int:
        return units_tokens(self.kept)

    @property
    def messages_to_summarize(self) -> int:
        return len(self.to_summarize) + len(self.turn_prefix)


def plan_compaction(t: Transcript, *, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
                    window: int | None = None) -> Plan:
    """What pi's prepareCompaction decides; ``plan.window`` is the session's window by the rule
    every command shares (``window`` forces it, as --window does)."""
    win = window_rule.resolve_window(window_rule.Evidence.of(t.entries), override=window)
    plan = _plan(t, keep_recent_tokens)
    plan.window, plan.window_source = win.tokens, win.source
    return plan


def _plan(t: Transcript, keep_recent_tokens: int) -> Plan:
    ctx = load_context(t)
    empty = Extraction()
    if ctx.compacted_at_leaf:
        return Plan(t.path, ctx.format, ctx, None, [], [], ctx.units, empty, ctx.tokens_before,
                    skip="already compacted at its leaf")
    units = ctx.units
    if not units:
        return Plan(t.path, ctx.format, ctx, None, [], [], [], empty, ctx.tokens_before, skip="no messages to compact")
    cut = find_cut(units, keep_recent_tokens)
    history_end = cut.turn_start if cut.split_turn else cut.first_kept
    to_sum = units[:history_end]
    prefix = units[cut.turn_start:cut.first_kept] if cut.split_turn else []
    kept = units[cut.first_kept:]
    ex = extract(to_sum + prefix, previous_read=ctx.previous_read, previous_modified=ctx.previous_modified)
    plan = Plan(t.path, ctx.format, ctx, cut, to_sum, prefix, kept, ex, ctx.tokens_before)
    if not to_sum and not prefix:
        plan.skip = nothing_to_summarize(units, cut, keep_recent_tokens)
        return plan
    if not kept:
        plan.skip = "no valid cut point"
        return plan
    first = kept[0].first
    if ctx.format == "pi":
        pos = {id(e): i for i, e in enumerate(ctx.path)}
        i = pos.get(id(first))
        if i is not None:
            while i > 0 and ctx.path[i - 1].kind == META:
                i -= 1
            first = ctx.path[i]
        if not first.id:
            plan.skip = "first kept entry has no id"
            return plan
    plan.first_kept_entry = first
    return plan


# ---------------------------------------------------------------- staging (which calls a summarizer will make)


def staging(units: list[Unit], *, window: int, parts: int = DEFAULT_PARTS,
            min_messages: int = MIN_MESSAGES_FOR_SPLIT) -> tuple[list[list[list[Unit]]], bool]:
    """OpenClaw's summarizeInStages layout: ([parts][chunks][units], merge needed)."""
    if not units:
        return [], False
    max_chunk = max_chunk_tokens(units, window)
    min_messages = max(2, min_messages)
    if parts > 1 and len(units) >= min_messages and units_tokens(units) > max_chunk:
        split = split_by_token_share(units, parts)
        if len(split) > 1:
            return [chunk_by_max_tokens(p, max_chunk) for p in split], True
    return [chunk_by_max_tokens(units, max_chunk)], False


def planned_calls(plan: Plan, *, window: int, parts: int = DEFAULT_PARTS,
                  min_messages: int = MIN_MESSAGES_FOR_SPLIT) -> tuple[int, int]:
    """(calls, prompt tokens) an LLM summarizer would make for ``plan`` (estimate, chars/4)."""
    layout, merge = staging(plan.to_summarize, window=window, parts=parts, min_messages=min_messages)
    calls = 0
    chars = 0
    overhead = 2400  # system prompt + instructions
    prev = len(plan.previous_summary or "")
    for p in layout:
        for k, chunk in enumerate(p):
            calls += 1
            chars += overhead + len(serialize(chunk)) + (prev if (not merge and k == 0) else 0) + (3000 if k else 0)
    if merge:
        calls += 1
        chars += overhead + prev + 3000 * len(layout)
    if plan.turn_prefix:
        calls += 1
        chars += overhead + len(serialize(plan.turn_prefix))
    return calls, math.ceil(chars / 4)
