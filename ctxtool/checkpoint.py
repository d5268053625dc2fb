"""The context-management skill's pre-compaction checkpoint (``.context-checkpoint.md``).

Before compaction or ``/new`` the skill writes five sections into the workspace root
(the current task, key state, decisions with their reasons, files changed, next
steps) so that the agent can resume from them afterwards. ``build`` reads a session
and returns the checkpoint as plain data and text:

* ``extractive`` (default): offline and deterministic. Files changed come from
  edit/write/apply-patch tool calls and their results, commands from shell calls
  (and pi's ``!`` commands) with their failures, the task from the last user request,
  open questions from the last reply, decisions from the assistant's own sentences,
  and the previous checkpoint or compaction summary is carried forward. The time
  written is the session's last entry's, so the same session gives the same file.
* an LLM summarizer (``ctxtool.summarize``: anthropic, command) writes the prose
  checkpoint from the same facts plus the recent conversation; if it fails, the
  extractive checkpoint is written and the result says so.

``write`` replaces the file atomically (a temporary file renamed over it: a reader
sees the old checkpoint or the new one, never half of one).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import compact as cp
from . import jsonl
from . import window as window_rule
from .errors import InputError, SummarizerError
from .model import MESSAGE, text_of
from .summarize import _DECISION_RE, _clip, _sentences
from .transcript import scan
from .view import claude_main_thread, pi_path

NAME = ".context-checkpoint.md"
SKILL_PROACTIVE = 0.75  # the skill writes a checkpoint proactively at 75%
CARRY_MAX_CHARS = 4_000
REQUEST_MAX_CHARS = 1_500
CONVERSATION_MAX_CHARS = 120_000  # the recent conversation an LLM summarizer sees
MAX_COMMANDS = 15
MAX_DECISIONS = 8
HEADINGS = ("Current Task", "Key State", "Decisions Made This Session", "Files Changed", "Next Steps")
_EXIT = re.compile(r"(?:exit(?:ed)?(?: with)? (?:code|status)|exit code:?|exitcode:?)\s*(-?\d+)", re.I)
_REASON = re.compile(r"\b(because|since|so that|so we|to avoid|in order to|as it|as the|which means|otherwise)\b", re.I)
_QUESTION = re.compile(r"(?<![^.!?\n])[^.!?\n]{8,}\?")  # (from a run's start only: linear, where a scan from each place
# of a long run with no mark was quadratic: 7 s on 80 KB of hex, found by a review)
_NEXT = re.compile(r"\b(next|then I'll|then I will|remaining|still need|todo|to do|follow[- ]up|afterwards|left to)\b", re.I)

SYSTEM_PROMPT = ("You write pre-compaction checkpoints for a coding agent. The agent will read the checkpoint after "
                 "its context is compacted and must be able to resume the work from it alone. Be specific: file "
                 "paths, commands, identifiers and numbers exactly as written. No preamble.")
PROMPT = """Write the checkpoint in exactly this Markdown layout, keeping the first line as given:

{title}

## Current Task
(what is being worked on: quote the user's latest request)

## Key State
(bullets: what is done, what is in progress, what failed)

## Decisions Made This Session
(numbered list; each decision with its reason)

## Files Changed
(bullets: every file modified in this session)

## Next Steps
(what to do after resuming, open questions first)

The facts extracted from the whole session (complete and reliable: keep every file and failure they list):
<extracted-facts>
{facts}
</extracted-facts>

The most recent part of the conversation:
<conversation>
{conversation}
</conversation>
"""


@dataclass
class FileChange:
    path: str
    tools: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    failed: int = 0
    ok: int = 0
    error: str | None = None


@dataclass
class Command:
    command: str
    line: int | None
    tool: str
    exit_code: int | None = None
    failed: bool = False
    output: str = ""


@dataclass
class Facts:
    path: str
    format: str
    cwd: str | None
    when: float | None
    task: str | None = None
    task_line: int | None = None
    files: list[FileChange] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    next_hints: list[str] = field(default_factory=list)
    in_progress: str | None = None
    previous: str | None = None
    previous_source: str | None = None
    messages: int = 0
    tool_calls: int = 0

    def to_dict(self) -> dict:
        return {
            "cwd": self.cwd, "task": self.task, "task_line": self.task_line,
            "files_changed": [{"path": f.path, "tools": f.tools, "lines": f.lines, "ok": f.ok, "failed": f.failed,
                               "error": f.error} for f in self.files],
            "commands": [{"command": c.command, "line": c.line, "tool": c.tool, "exit_code": c.exit_code,
                          "failed": c.failed} for c in self.commands],
            "decisions": self.decisions, "open_questions": self.questions, "in_progress": self.in_progress,
            "carried_forward": self.previous_source, "messages": self.messages, "tool_calls": self.tool_calls,
        }


# ------------------------------------------------------------------ reading the session


def _session_cwd(t) -> str | None:
    with open(t.path, "rb") as f:
        if t.format_name == "pi":
            for e in t.entries[:1]:
                if e.kind != MESSAGE:
                    obj = t.load(e, f) if hasattr(t, "load") else None
                    if isinstance(obj, dict) and isinstance(obj.get("cwd"), str) and obj["cwd"].strip():
                        return obj["cwd"]
            return None
        if t.format_name == "claude":
            for e in reversed(t.entries):
                obj = t.load(e, f)
                if isinstance(obj, dict) and isinstance(obj.get("cwd"), str) and obj["cwd"].strip():
                    return obj["cwd"]
    return None


def _messages(t) -> tuple[list, list]:
    """(every message entry of the conversation in file order, the current branch's). Files changed and
    commands come from all of them (an abandoned pi branch changed the disk too); the task from the branch."""
    if t.format_name == "pi":
        every, branch = t.entries, pi_path(t.entries)
    elif t.format_name == "claude":
        every = branch = claude_main_thread(t.entries)
    else:
        every = branch = t.entries
    loaded: dict[int, object] = {}
    with open(t.path, "rb") as f:
        for e in every:
            if e.kind == MESSAGE and not e.get("exclude"):
                loaded[e.index] = t.reload(e, f) if (e.obj is None or e.blocks is None) else e
    return list(loaded.values()), [loaded[e.index] for e in branch if e.index in loaded]


def _exit_code(text: str) -> int | None:
    m = _EXIT.search(text or "")
    return int(m.group(1)) if m else None


def extract_facts(path: str, fmt: str | None = None, *, t=None, ctx=None) -> Facts:
    """What the extractive checkpoint is made of, from the session at ``path``."""
    t = t if t is not None else scan(path, fmt)
    ctx = ctx if ctx is not None else cp.load_context(t)
    every, branch = _messages(t)
    units = cp.build_units(every)
    facts = Facts(t.path, t.format_name, _session_cwd(t), next((e.ts for e in reversed(t.entries) if e.ts), None))
    facts.messages = len(units)
    if ctx.previous_summary:
        facts.previous, facts.previous_source = cp.strip_summary_suffix(ctx.previous_summary), "compaction summary"
    calls: dict[str, tuple[str, object]] = {}  # id -> ("file", [FileChange]) | ("cmd", Command)
    files: dict[str, FileChange] = {}
    assistant_texts: list[str] = []
    for u in units:
        e = u.first
        if u.role == "user" and not u.result_ids:
            continue
        if e.role == "bashExecution":
            obj = (e.obj or {}).get("message") or {}
            cmd = str(obj.get("command") or "").strip()
            if cmd:
                code = obj.get("exitCode") if isinstance(obj.get("exitCode"), int) else None
                facts.commands.append(Command(cmd, e.lineno, "!", code, bool(code) or bool(obj.get("cancelled")),
                                              _clip(str(obj.get("output") or ""), 240)))
            continue
        for b in u.blocks():
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "tool_use" and u.role == "assistant":
                facts.tool_calls += 1
                name = cp._norm_tool(b.get("name"))
                args = b.get("input")
                line = next((x.lineno for x in u.entries if any(c.id == b.get("id") for c in x.calls)), e.lineno)
                if name in cp.WRITE_TOOLS | cp.EDIT_TOOLS:
                    paths = [p for p in [cp._path_of(args)] if p]
                    if isinstance(args, dict):
                        for k in ("patch", "input", "diff"):
                            if isinstance(args.get(k), str):
                                paths += [p.strip() for p in cp.PATCH_FILE_RE.findall(args[k])]
                    changes = []
                    for p in paths:
                        fc = files.setdefault(p, FileChange(p))
                        tool = b.get("name") or name
                        if tool not in fc.tools:
                            fc.tools.append(tool)
                        fc.lines.append(line)
                        changes.append(fc)
                    calls[_id(b.get("id"))] = ("file", changes)
                elif name in cp.SHELL_TOOLS:
                    cmd = cp._command_of(args)
                    if cmd:
                        c = Command(cmd, line, b.get("name") or name)
                        facts.commands.append(c)
                        calls[_id(b.get("id"))] = ("cmd", c)
            elif kind == "text" and u.role == "assistant":
                txt = str(b.get("text") or "").strip()
                if txt:
                    assistant_texts.append(txt)
            elif kind == "tool_result":
                what = calls.get(_id(b.get("tool_use_id")))
                if what is None:
                    continue
                out = text_of(b.get("content"))
                err = bool(b.get("is_error"))
                if what[0] == "file":
                    for fc in what[1]:
                        if err:
                            fc.failed += 1
                            fc.error = _clip(out, 200)
                        else:
                            fc.ok += 1
                else:
                    c = what[1]
                    c.exit_code = _exit_code(out) if c.exit_code is None else c.exit_code
                    c.failed = err or bool(c.exit_code)
                    c.output = _clip(out, 240)
    # a file counts as changed when a call to change it did not fail (or its result is not in the file)
    facts.files = [fc for fc in files.values()]
    facts.decisions = _decisions(assistant_texts)
    units = cp.build_units(branch)
    last_user_idx = -1
    for i, u in enumerate(units):
        if u.role == "user" and not u.result_ids:
            text = text_of(u.blocks()).strip()
            if text and not (u.first.get("compact_summary") or text.startswith(cp._CONTINUATION_START)):
                facts.task, facts.task_line, last_user_idx = text, u.first.lineno, i
    tail = units[last_user_idx + 1:] if last_user_idx >= 0 else units
    last_text = next((text_of([b for b in u.blocks() if isinstance(b, dict) and b.get("type") == "text"])
                      for u in reversed(tail) if u.role == "assistant" and not u.errored), "")
    facts.questions = _questions(last_text)
    facts.next_hints = _sentences([last_text], _NEXT, 200, 5) if last_text else []
    last = units[-1] if units else None
    if last is not None:
        if last.role == "user" and not last.result_ids and last_user_idx == len(units) - 1:
            facts.in_progress = "the last user request has no reply yet"
        elif last.role == "assistant" and last.errored:
            facts.in_progress = f"the last assistant turn ended with {last.stop}: the work was interrupted"
        elif last.role == "assistant" and last.call_ids:
            facts.in_progress = "the last assistant turn called tools whose results are not in the session yet"
        elif last.role == "toolResult":
            facts.in_progress = "tool results came back and the agent has not answered yet"
    return facts


def _decisions(texts: list[str]) -> list[str]:
    picked = [x for x in _sentences(texts, _DECISION_RE, 220, 40) if not _NEXT.search(x)]  # next steps go below
    with_reason = [s for s in picked if _REASON.search(s)]
    rest = [s for s in picked if s not in with_reason]
    return (with_reason + rest)[-MAX_DECISIONS:] if with_reason else rest[-MAX_DECISIONS:]


def _questions(text: str) -> list[str]:
    out = []
    for m in _QUESTION.finditer(text or ""):
        q = _clip(m.group(0).strip(" -*#>\t"), 200)
        if q not in out:
            out.append(q)
    return out[-5:]


# ------------------------------------------------------------------ rendering


def title(when: float | None) -> str:
    stamp = datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if when else "(time unknown)"
    return f"# Context Checkpoint — {stamp}"


def _quote(text: str) -> str:
    text = text.strip()
    if len(text) > REQUEST_MAX_CHARS:
        text = text[: REQUEST_MAX_CHARS - 1].rstrip() + "…"
    return "\n".join("> " + line if line.strip() else ">" for line in text.splitlines())


def _code(s: str) -> str:
    s = " ".join(s.split())
    s = s if len(s) <= 160 else s[:159] + "…"
    fence = "``" if "`" in s else "`"
    return f"{fence}{s}{fence}" if fence == "`" else f"`` {s} ``"


def render_extractive(f: Facts, *, pressure: dict | None = None) -> str:
    changed = [x for x in f.files if x.ok or not x.failed]
    failed_files = [x for x in f.files if x.failed and not x.ok]
    failed_cmds = [c for c in f.commands if c.failed]
    out = [title(f.when), ""]
    meta = f"Session: `{f.path}` ({f.format}), {f.messages} messages, {f.tool_calls} tool calls"
    if pressure:
        meta += f"; context {pressure['tokens']:,} of {pressure['window']:,} tokens ({pressure['ratio']:.0%})"
    out += [meta + ". Written by `ctxtool checkpoint` (extractive).", ""]
    out += ["## Current Task", ""]
    if f.task:
        out += [f"Latest user request (line {f.task_line}):", "", _quote(f.task), ""]
    else:
        out += ["(no user request in the session)", ""]
    out += ["## Key State", ""]
    out.append(f"- Done: {len(changed)} file(s) changed, {len(f.commands)} command(s) run"
               + (f", {len(failed_cmds)} failed" if failed_cmds else "") + ".")
    if f.in_progress:
        out.append(f"- In progress: {f.in_progress}.")
    for c in failed_cmds[-5:]:
        code = f"exit {c.exit_code}" if c.exit_code is not None else "error"
        out.append(f"- Failed: {_code(c.command)} ({code}, line {c.line})" + (f": {_clip(c.output, 160)}" if c.output else ""))
    for x in failed_files:
        out.append(f"- Failed edit: `{x.path}`" + (f": {x.error}" if x.error else ""))
    if f.commands:
        out += ["", "Commands run (most recent last):", ""]
        for c in f.commands[-MAX_COMMANDS:]:
            mark = "failed" if c.failed else "ok"
            code = f", exit {c.exit_code}" if c.exit_code is not None else ""
            out.append(f"- {_code(c.command)} ({mark}{code}, line {c.line})")
        if len(f.commands) > MAX_COMMANDS:
            out.append(f"- … and {len(f.commands) - MAX_COMMANDS} earlier command(s)")
    if f.previous:
        prev = f.previous.strip()
        if len(prev) > CARRY_MAX_CHARS:
            prev = prev[: CARRY_MAX_CHARS - 1].rstrip() + "…"
        out += ["", f"Carried forward from the {f.previous_source}:", ""]
        out += [("> " + line) if line.strip() else ">" for line in prev.splitlines()]
    out += ["", "## Decisions Made This Session", ""]
    if f.decisions:
        out += [f"{i}. {d}" for i, d in enumerate(f.decisions, 1)]
    else:
        out.append("(none stated in the transcript)")
    out += ["", "## Files Changed", ""]
    if changed:
        for x in sorted(changed, key=lambda x: x.path):
            how = ", ".join(x.tools)
            note = f"; {x.failed} failed attempt(s)" if x.failed else ""
            out.append(f"- `{x.path}` ({how}, line{'s' if len(x.lines) > 1 else ''} {', '.join(map(str, x.lines[:8]))}"
                       f"{'…' if len(x.lines) > 8 else ''}{note})")
    else:
        out.append("(no file changed by an edit or write tool call)")
    out += ["", "## Next Steps", ""]
    steps = []
    for q in f.questions:
        steps.append(f"- Open question: {q}")
    for h in f.next_hints:
        steps.append(f"- {h}")
    for c in failed_cmds[-3:]:
        steps.append(f"- Fix what made {_code(c.command)} fail, then run it again.")
    if f.task:
        steps.append(f"- Resume the current task: {_clip(f.task, 200)}")
    out += steps or ["- (nothing pending found in the transcript)"]
    out.append("")
    return "\n".join(out)


def has_sections(text: str) -> bool:
    return all(re.search(rf"^##\s+{re.escape(h)}\s*$", text, re.M) for h in HEADINGS)


# ------------------------------------------------------------------ building and writing


@dataclass
class Result:
    path: str
    target: str | None = None
    status: str = "written"  # written | skipped | failed | dry-run
    reason: str = ""
    format: str | None = None
    tokens: int | None = None
    window: int | None = None
    ratio: float | None = None
    summarizer: str = "extractive"
    fallback: str | None = None
    bytes: int = 0
    text: str | None = None
    facts: dict | None = None

    def to_dict(self, *, text: bool = False) -> dict:
        d = {k: getattr(self, k) for k in ("path", "target", "status", "reason", "format", "tokens", "window", "ratio",
                                           "summarizer", "fallback", "bytes", "facts")}
        if text:
            d["text"] = self.text
        return d


def target_for(path: str, output: str | None, cwd: str | None) -> str:
    if output:
        return output
    if not cwd:
        raise InputError("the session records no working directory: name the checkpoint file with -o", path=path)
    if not os.path.isdir(cwd):
        raise InputError(f"the session's workspace {cwd} does not exist here: name the checkpoint file with -o", path=path)
    return os.path.join(cwd, NAME)


def build(path: str, summarizer=None, *, fmt: str | None = None, output: str | None = None, if_over: float | None = None,
          window: int | None = None, dry_run: bool = False) -> Result:
    """Read the session, decide, and (unless ``dry_run``) write its checkpoint atomically."""
    res = Result(path)
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    t = scan(path, fmt)
    res.format = t.format_name
    ctx = cp.load_context(t)
    win = window_rule.resolve_window(window_rule.Evidence.of(t.entries), override=window)
    res.tokens, res.window = ctx.tokens_before, win.tokens
    res.ratio = round(ctx.tokens_before / win.tokens, 6) if win.tokens else None
    if if_over is not None and (res.ratio or 0) <= if_over:
        res.status = "skipped"
        res.reason = f"context {res.tokens:,} tokens, {res.ratio:.0%} of {res.window:,}: not over {if_over:g}"
        return res
    facts = extract_facts(path, fmt, t=t, ctx=ctx)
    try:
        res.target = target_for(path, output, facts.cwd)
    except InputError as e:
        if not dry_run:
            raise
        # a dry run prints the checkpoint: it needs no place to write it (nor a previous one to carry forward)
        res.target, res.reason = None, e.reason
    if res.target is not None:
        why = not_a_checkpoint(res.target, path)
        if why is not None:  # (before anything is summarized, and in a dry run too)
            raise InputError(f"refusing to write the checkpoint over it: {why}", path=res.target)
    prev = read(res.target) if res.target is not None else None
    if prev and has_sections(prev):
        facts.previous, facts.previous_source = _strip_carried(prev), "previous checkpoint"
    res.facts = facts.to_dict()
    pressure = {"tokens": res.tokens, "window": res.window, "ratio": res.ratio or 0.0}
    text = render_extractive(facts, pressure=pressure)
    if summarizer is not None and not getattr(summarizer, "offline", True):
        res.summarizer = getattr(summarizer, "name", "llm")
        try:
            text = _llm(summarizer, facts, text, t, ctx)
        except SummarizerError as e:
            res.fallback, res.reason = "extractive", f"summarizer failed ({e}); the extractive checkpoint was written"
    res.text = text
    if dry_run:
        res.status = "dry-run"
        return res
    res.bytes = write(res.target, text, session=path)
    return res


def _strip_carried(prev: str) -> str:
    """A previous checkpoint without its own carried-forward block (no nesting from one to the next)."""
    return re.sub(r"\nCarried forward from the [^\n]*:\n\n(?:>[^\n]*\n?)*", "\n", prev).strip()


def _llm(summarizer, facts: Facts, extractive: str, t, ctx) -> str:
    conversation = cp.serialize(ctx.units)
    if len(conversation) > CONVERSATION_MAX_CHARS:
        conversation = "…" + conversation[-CONVERSATION_MAX_CHARS:]
    prompt = PROMPT.format(title=title(facts.when), facts=extractive, conversation=conversation)
    out = summarizer.call(SYSTEM_PROMPT, prompt, max_tokens=4096).strip()
    if not has_sections(out):
        raise SummarizerError("the summarizer's checkpoint lacks the five sections")
    if not out.startswith("# "):
        out = title(facts.when) + "\n\n" + out
    return out + "\n"


def not_a_checkpoint(target: str, session: str | None = None) -> str | None:
    """Why ``target`` must not be written over or removed as a checkpoint, or None: it is the session
    itself, or an existing file that holds no Markdown (binary, or JSON such as another session's lines)."""
    if session is not None and os.path.exists(target) and os.path.exists(session):
        try:
            if os.path.samefile(target, session):
                return "is the session itself, not its checkpoint"
        except OSError:
            pass
    try:
        with open(target, "rb") as f:
            head = f.read(1 << 16)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    if b"\0" in head:
        return "a binary file, not a checkpoint"
    if head.lstrip()[:1] in (b"{", b"["):
        return "holds JSON (a session's lines?), not a checkpoint"
    return None


def write(target: str, text: str, session: str | None = None) -> int:
    """Replace ``target`` atomically (temp file in the same directory, fsync, rename); never the session
    itself, nor a file that is no checkpoint (``not_a_checkpoint``)."""
    why = not_a_checkpoint(target, session)
    if why is not None:
        raise InputError(f"refusing to write the checkpoint over it: {why}", path=target)
    mode = None if os.path.exists(target) else 0o644
    return jsonl.atomic_write(target, [text.encode("utf-8")], mode=mode)


def read(target: str) -> str | None:
    try:
        with open(target, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InputError("is a directory, not a checkpoint file", path=target) from None


def clear(target: str, session: str | None = None) -> bool:
    """Remove the checkpoint; False when there was none. A file that is no checkpoint is refused
    (``not_a_checkpoint``)."""
    why = not_a_checkpoint(target, session)
    if why is not None:
        raise InputError(f"refusing to remove it: {why}", path=target)
    if os.path.exists(target) and not os.path.isfile(target):
        raise InputError("not a regular file, not a checkpoint", path=target)
    try:
        os.remove(target)
        return True
    except FileNotFoundError:
        return False


def locate(path: str, fmt: str | None = None, output: str | None = None) -> str:
    """Where the checkpoint of the session at ``path`` lives (for --read and --clear)."""
    if output:
        return output
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    t = scan(path, fmt)
    return target_for(path, None, _session_cwd(t))


def _id(value):
    """A tool id as a key: a string as it is; anything else (a damaged line's object or list, which no key can be) as
    its text, so that a call and its result written alike still meet."""
    return value if isinstance(value, str) or value is None else repr(value)
