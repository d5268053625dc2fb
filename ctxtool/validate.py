"""Check a provider view against the Anthropic Messages API's rules.

Each violation carries the error text the API would answer with (HTTP 400,
``invalid_request_error``) and the file lines it comes from, so a user can see
which line breaks the session before the API does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import codex_rules, retained
from .formats import codex as codex_fmt
from .model import CONTENT_NOT_LIST, HEADER
from .transcript import scan
from .scanloop import index_passes
from .view import UNSENT_STOPS, ViewMessage, context_entries, merges, message_groups

ERROR = "error"
WARNING = "warning"


@dataclass
class Violation:
    kind: str
    severity: str
    message_index: int
    lines: list[int]
    api_error: str
    ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "severity": self.severity, "message_index": self.message_index,
                "lines": self.lines, "api_error": self.api_error, "ids": self.ids}


class _Summary:
    """Where the tool calls and results of one message sit in its merged content."""

    __slots__ = ("calls", "results", "first_other", "empty", "blank_lines")

    def __init__(self, calls, results, first_other, empty, blank_lines):
        self.calls = calls  # (position, entry, Call)
        self.results = results  # (position, entry, Result)
        self.first_other = first_other  # position of the first block that is not a result
        self.empty = empty
        self.blank_lines = blank_lines

    def call_ids(self) -> set:
        return {c.id for _, _, c in self.calls if not c.problem}


_NONE = ()


_PLAIN = _Summary(_NONE, _NONE, 0, False, _NONE)  # one entry, content, no tool blocks
_PLAIN_NO_BLOCKS = _Summary(_NONE, _NONE, None, False, _NONE)


def _summary(ents: list) -> _Summary:
    if len(ents) == 1:  # most messages are one entry: block positions are the entry's own
        e = ents[0]
        blank = [e.lineno] if e.blank_text else _NONE
        if not e.results:
            return _Summary([(c.idx, e, c) for c in e.calls] if e.calls else _NONE, _NONE,
                            0 if e.nblocks else None, e.empty, blank)
        if not e.calls and len(e.results) == e.nblocks:  # a tool result message (all pi ones)
            return _Summary(_NONE, [(r.idx, e, r) for r in e.results], None, e.empty, blank)
    calls: list = []
    results: list = []
    first_other = None
    pos = 0
    for e in ents:
        nb = e.nblocks
        if not e.results:  # no results: block 0 (if any) is "other"
            if e.calls:
                calls += [(pos + c.idx, e, c) for c in e.calls]
            if nb and first_other is None:
                first_other = pos
            pos += nb
            continue
        if not e.calls and len(e.results) == nb:  # nothing but results
            results += [(pos + r.idx, e, r) for r in e.results]
            pos += nb
            continue
        res = {r.idx: r for r in e.results}
        cs = {c.idx: c for c in e.calls}
        for i in range(e.nblocks):
            if i in res:
                results.append((pos + i, e, res[i]))
            else:
                if i in cs:
                    calls.append((pos + i, e, cs[i]))
                if first_other is None:
                    first_other = pos + i
        pos += e.nblocks
    return _Summary(calls, results, first_other, all(e.empty for e in ents), [e.lineno for e in ents if e.blank_text])


def validate_view(view: list[ViewMessage]) -> list[Violation]:
    return _validate((m.role, m.entries) for m in view)


def validate_entries(fmt_name: str, entries, *, context=None) -> list[Violation]:
    """Validate what the agent would send, in one pass without building the view.
    ``context``: the view's entries (``view.context_entries``) when the caller has them."""
    if fmt_name == "codex":
        return (codex_skipped_lines(entries) + codex_header(entries)
                + validate_codex(codex_rules.sent_entries(entries) if context is None else context))
    return as_sent(fmt_name, validate_context(fmt_name, context_entries(fmt_name, entries) if context is None else context)[0])


def validate_context(fmt_name: str, ctx: list) -> tuple[list[Violation], int]:
    """(violations, messages) of what is sent, ``ctx`` the context entries (``view.context_entries``): ``_validate``
    over ``message_groups``, or the C part's loop (``_scan.Rows.validate``) where it is built, which hands ``_check``
    every message but the plain ones and the common answered turns."""
    passes = index_passes()
    if passes is not None and type(ctx) is list:
        out: list[Violation] = []
        seen_calls: dict = {}

        def check(n, prev, cur, nxt) -> None:
            _check(out, n, prev, cur, nxt, seen_calls)

        got = passes.validate(ctx, merges(fmt_name, "assistant"), UNSENT_STOPS, _PLAIN, _PLAIN_NO_BLOCKS, seen_calls, check)
        if got is not None:
            n, prev, cur = got
            return _end(out, n, prev, cur, seen_calls), n + 1
    groups = list(message_groups(fmt_name, ctx, context=ctx))
    return _validate(groups), len(groups)


# What Claude Code does with each pairing fault when it resumes a file (claude_chain.heal): the
# request it sends is well-paired, so the fault is a warning that says what the model loses.
CLAUDE_HEALS = {
    "missing-tool-result": "Claude Code drops these tool calls when it resumes (or sends an error result for them: "
                           "'interrupted' in the last message, 'missing' where their result stands elsewhere or the "
                           "session ended in their turn's tool runs): ",
    "unexpected-tool-result": "Claude Code drops this result when it resumes (no call before it): ",
    "duplicate-tool-result": "Claude Code sends only the first result for this call: ",
    "result-not-first": "Claude Code gathers the results of a response into one message: ",
    "duplicate-tool-use-id": "Claude Code replaces the later call with '[Tool use interrupted]' and loses its "
                             "result (repair renames the id): ",
    "empty-user-text": "Claude Code leaves out user text that is only whitespace when it resumes",
    "empty-user-message": "Claude Code leaves out a user message with no text but whitespace when it resumes",
    "empty-message": "Claude Code sends a response whose content is an empty list as \"(no content)\" when it resumes",
}
OLDER_CLIENTS = " [older Claude Code versions sent this as is and the API answered: {}]"


# pi-ai's transformMessages, which every pi provider runs on the history first (judged: tests/pi_harness reads the
# messages it returns): a call with no result before the next user or assistant message, or at the end, gets one
PI_HEALS = ("pi sends the error result \"No result provided\" for this call (pi-ai fills in a missing result; repair "
            "writes a synthetic one into the file): ")


def as_sent(fmt_name: str, violations: list[Violation]) -> list[Violation]:
    """Violations as the agent's own request would meet them. Claude Code heals pairing itself,
    so those are warnings that name what it does; it always appends the new prompt after a final
    assistant message, so that is no finding at all. pi answers a call left without a result itself
    (``PI_HEALS``): a warning too."""
    if fmt_name == "pi":
        return [Violation(v.kind, WARNING, v.message_index, v.lines, PI_HEALS + ", ".join(v.ids), v.ids)
                if v.kind == "missing-tool-result" and v.severity == ERROR else v for v in violations]
    if fmt_name != "claude":
        return violations
    out = []
    for v in violations:
        if v.kind == "trailing-assistant":
            continue
        heals = CLAUDE_HEALS.get(v.kind)
        if heals is not None and v.kind in ("empty-user-text", "empty-user-message", "empty-message"):
            v = Violation(v.kind, WARNING, v.message_index, v.lines, heals, v.ids)
        elif heals is not None:
            v = Violation(v.kind, WARNING, v.message_index, v.lines, heals + ", ".join(v.ids) + OLDER_CLIENTS.format(v.api_error), v.ids)
        out.append(v)
    return out


def validate_file(path: str, fmt: str | None = None) -> dict:
    """Scan and validate one file: what ``ctxtool validate`` reports for it."""
    t = scan(path, fmt, stats=False, lean=True)  # structure only (a Claude Code file's progress lines apart: chain)
    if t.format_name == "codex":
        seq = codex_rules.sent_entries(t.entries)
        found = codex_skipped_lines(t.entries) + codex_header(t.entries) + codex_lineage(t) + validate_codex(seq)
        return {"path": path, "format": "codex", "messages": len(seq), "bad_lines": [b.lineno for b in t.bad],
                "violations": [v.to_dict() for v in found]}
    ctx = context_entries(t.format_name, t.entries)
    found, messages = validate_context(t.format_name, ctx)
    found = claude_errors_as_sent(t, as_sent(t.format_name, found))
    if t.format_name == "pi":
        found = pi_unsendable(ctx) + found
    retained.keep(t)  # (a run over one file leaves the index for the process's end to drop)
    return {"path": path, "format": t.format_name, "messages": messages, "bad_lines": [b.lineno for b in t.bad],
            "violations": [v.to_dict() for v in found]}


PI_CANNOT_SEND = ("pi cannot send this history: pi-ai reads every assistant message's content as an array "
                  "(content.flatMap), and this one's is no array; repair gives it its text as an array, or an empty one")


def pi_unsendable(ctx: list) -> list[Violation]:
    """pi: an assistant message on the path it sends whose content is no array. pi-ai's transformMessages reads every
    assistant message's content as an array before it skips any (errored, aborted), so pi sends nothing at all: an
    error of the whole request, which ``repair`` mends (``invalid-content``; judged, tests/test_pi_assistant_content.py).
    ``ctx``: the context entries (``view.context_entries``)."""
    bad = {e.index for e in ctx if e.role == "assistant" and e.extra and e.extra.get(CONTENT_NOT_LIST)}
    if not bad:
        return []
    # the message each is in, or the one it follows where it makes none (an empty one is not sent)
    at = {e.index: k for k, (_, group) in enumerate(message_groups("pi", [], context=ctx)) for e in group}
    out: list[Violation] = []
    k = 0
    for e in ctx:
        k = at.get(e.index, k)
        if e.index in bad:
            out.append(Violation("invalid-content", ERROR, k, [e.lineno], PI_CANNOT_SEND, [e.id] if e.id else []))
    return out


# warnings of faults Claude Code mends, but not in every case: a lone prompt whose content is a string it sends as
# written, blank or empty (judged)
CLAUDE_SENDS_AS_WRITTEN = ("empty-user-text", "empty-user-message")
CLAUDE_MENDS = ("Claude Code leaves this out when it resumes, and the request it sends has no such error "
                "[sent as it is written, the API would answer: {}]")


def claude_errors_as_sent(t, found: list[Violation]) -> list[Violation]:
    """Claude Code: the errors of the request the client sends (``view.sent_messages``, the client's own fixes applied:
    judged) in place of those the index finds. An error the client mends (a response of thinking alone, empty text or
    a block of no string type beside other blocks: ``claude_chain.heal``) becomes a warning that says so; one the
    request has too stays an error (a warning that it has becomes one); one only the request has is reported with the
    lines of its message there. ``found``: ``as_sent``'s; as it is for the other formats, and when it has no error or
    warning of a fault the client sends as written (the request is read only then)."""
    from .view import sent_messages

    if t.format_name != "claude" or not any(v.severity == ERROR or v.kind in CLAUDE_SENDS_AS_WRITTEN for v in found):
        return found
    sent = [m for m in sent_messages(t) if m["role"] != "system"]  # (context the client puts in its system prompt)
    real = [(v, sent[v.message_index]["lines"] if v.message_index < len(sent) else []) for v in validate_messages(sent)]
    at: dict = {}  # (kind, line) -> the request's errors of that kind whose message holds the line
    for k, (r, lines) in enumerate(real):
        for ln in lines:
            at.setdefault((r.kind, ln), []).append(k)
    out, confirmed = [], set()
    for v in found:
        same = sorted({k for ln in v.lines for k in at.get((v.kind, ln), ())})
        if same and v.severity != ERROR:
            v = Violation(v.kind, ERROR, v.message_index, v.lines, real[same[0]][0].api_error, v.ids)
        elif not same and v.severity == ERROR:
            v = Violation(v.kind, WARNING, v.message_index, v.lines, CLAUDE_MENDS.format(v.api_error), v.ids)
        confirmed.update(same)
        out.append(v)
    return out + [Violation(r.kind, ERROR, r.message_index, lines, r.api_error, r.ids)
                  for k, (r, lines) in enumerate(real) if k not in confirmed]


def validate_messages(messages: list[dict]) -> list[Violation]:
    """API errors (this module's rules) of a list of plain ``{"role", "content"}`` messages; warnings left out."""
    from .formats import messages as messages_fmt
    from .transcript import make_entry

    entries = [make_entry(messages_fmt, {"role": m["role"], "content": m["content"]}, i, i + 1, 0, 0, b"\n")
               for i, m in enumerate(messages)]
    return errors(validate_entries("messages", entries))


def validate_report(path: str, fmt: str | None = None) -> dict:
    """What ``ctxtool validate`` reports for one file: ``validate_file`` with the notices of lines written after the
    scan. A worker process of a folder's validation runs it by name (here, not in the CLI: a worker imports no click)."""
    from .commit import late_writes

    result = validate_file(path, fmt)
    result["notices"] = late_writes(path)
    return result


def _validate(groups) -> list[Violation]:
    """Check (role, entries) messages in order. Each message is checked once the next one
    is known (a tool_use needs the next message's results; only the last may be an empty assistant).
    Messages are [role, entries, summary or None (computed on demand), verified]."""
    out: list[Violation] = []
    seen_calls: dict[str, int] = {}
    prev = cur = None
    n = -1
    for role, ents in groups:
        sm = None
        if len(ents) == 1:
            e = ents[0]
            if not e.calls and not e.results and not e.empty and not e.blank_text and (
                    e.extra is None or "bad_blocks" not in e.extra):
                sm = _PLAIN if e.nblocks else _PLAIN_NO_BLOCKS  # shared: most messages allocate nothing
        nxt = [role, ents, sm, False]
        if cur is not None and not cur[3] and cur[2] is not _PLAIN:
            if _answered_turn(n, cur, nxt, seen_calls):
                nxt[3] = True  # its results were just checked against these calls
            else:
                _check(out, n, prev, cur, nxt, seen_calls)
        prev, cur = cur, nxt
        n += 1
    return _end(out, n, prev, cur, seen_calls)


def _end(out: list, n: int, prev, cur, seen_calls: dict) -> list[Violation]:
    """``_validate``'s end, ``cur`` the last message (None: there were none), ``n`` its number."""
    if cur is None:
        # a session with no messages yet is normal (OpenClaw writes the header first); the
        # API would only object if it were sent as is, which the agent never does
        out.append(Violation("no-messages", WARNING, 0, [], "messages: at least one message is required"))
        return out
    if not cur[3]:
        _check(out, n, prev, cur, None, seen_calls)
    if cur[0] == "assistant":
        out.append(Violation("trailing-assistant", WARNING, n, [e.lineno for e in cur[1]],
                             "The final message is an assistant turn: sent as is it is an assistant prefill, which Claude 4.6+ "
                             "rejects (\"does not support assistant message prefill\"); the agent normally appends a user turn first."))
    return out


def _answered_turn(n: int, cur: list, nxt: list, seen_calls: dict) -> bool:
    """The common turn, checked without summaries: one assistant entry with valid calls of
    new, distinct ids, answered in order by the next message made only of one-result entries.
    Neither message has anything to report then; True records the ids as seen."""
    ents = cur[1]
    if cur[0] != "assistant" or nxt[0] != "user" or len(ents) != 1:
        return False
    e = ents[0]
    if e.results or e.blank_text or not e.calls or (e.extra is not None and "bad_blocks" in e.extra):
        return False
    ids = [c.id for c in e.calls if not c.problem]
    answers = nxt[1]
    if len(ids) != len(e.calls) or len(answers) != len(ids):
        return False
    for k, x in enumerate(answers):
        rs = x.results
        if len(rs) != 1 or x.nblocks != 1 or x.calls or x.blank_text or rs[0].id != ids[k]:
            return False
    if len(ids) > 1 and len(set(ids)) != len(ids):
        return False
    if not seen_calls.keys().isdisjoint(ids):
        return False
    for i in ids:
        seen_calls[i] = n
    return True


def _sm(msg: list) -> _Summary:
    if msg[2] is None:
        msg[2] = _summary(msg[1])
    return msg[2]


def _check(out: list, n: int, prev, cur, nxt, seen_calls: dict) -> None:
    role, ents = cur[0], cur[1]
    for e in ents:
        bad = e.extra.get("bad_blocks") if e.extra is not None else None
        if bad:  # Messages JSONL: a block that is no content block
            out.append(Violation("invalid-block", ERROR, n, [e.lineno],
                                 f"messages.{n}.content: {len(bad)} block(s) without a string `type` (at block "
                                 f"{', '.join(map(str, bad))} of line {e.lineno}): the API accepts none"))
    sm = _sm(cur)
    if not sm.calls and not sm.results and not sm.empty and not sm.blank_lines:
        return  # nothing a plain message can get wrong
    if sm.empty and not (nxt is None and role == "assistant"):
        out.append(Violation("empty-user-message" if role == "user" else "empty-message", ERROR, n, [e.lineno for e in ents],
                             f"messages.{n}: all messages must have non-empty content except for the optional final assistant message"))
    if sm.blank_lines:
        out.append(Violation("empty-user-text" if role == "user" else "empty-text", ERROR, n, list(sm.blank_lines),
                             "messages: text content blocks must be non-empty"))
    if role == "assistant":
        ids = []
        for pos, e, c in sm.calls:
            if c.problem:
                out.append(Violation("invalid-tool-call", ERROR, n, [e.lineno], _call_error(n, pos, c.problem), [c.id] if c.id else []))
                continue
            if c.id in seen_calls:
                out.append(Violation("duplicate-tool-use-id", ERROR, n, [e.lineno],
                                     f"messages.{n}.content.{pos}: `tool_use` ids must be unique", [c.id]))
            seen_calls[c.id] = n
            ids.append(c.id)
        if not ids:
            return
        nsm = _sm(nxt) if nxt is not None and nxt[0] == "user" else None
        present = {r.id for _, _, r in nsm.results} if nsm is not None else set()
        missing = [i for i in ids if i not in present]
        if missing:
            unanswered = set(missing)
            lines = sorted({e.lineno for _, e, c in sm.calls if c.id in unanswered})
            out.append(Violation("missing-tool-result", ERROR, n, lines,
                                 f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                                 f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                                 missing))
        if nsm is not None and nsm.first_other is not None:
            leading = {r.id for pos, _, r in nsm.results if pos < nsm.first_other}
            late = [i for i in ids if i in present and i not in leading]
            if late:
                out.append(Violation("result-not-first", ERROR, n + 1, [e.lineno for e in nxt[1]],
                                     f"messages.{n + 1}: Did not find {len(late)} tool_result block(s) at the beginning of this message. "
                                     "Messages following tool_use blocks must begin with a matching number of tool_result blocks.", late))
    elif sm.results:
        prev_ids = _sm(prev).call_ids() if prev is not None and prev[0] == "assistant" else set()
        counted: set[str] = set()
        for pos, e, r in sm.results:
            if r.id not in prev_ids:
                out.append(Violation("unexpected-tool-result", ERROR, n, [e.lineno],
                                     f"messages.{n}.content.{pos}: unexpected `tool_use_id` found in `tool_result` blocks: {r.id}. "
                                     "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", [r.id]))
            elif r.id in counted:
                out.append(Violation("duplicate-tool-result", ERROR, n, [e.lineno],
                                     f"messages.{n}.content.{pos}: more than one `tool_result` block for `tool_use_id` {r.id}", [r.id]))
            counted.add(r.id)


def _call_error(n: int, pos: int, problem: str) -> str:
    if problem == "no id":
        return f"messages.{n}.content.{pos}.tool_use.id: Field required"
    if problem == "invalid name":
        return f"messages.{n}.content.{pos}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
    if problem == "no arguments":
        return f"messages.{n}.content.{pos}.tool_use.input: Field required"
    return f"messages.{n}.content.{pos}.tool_use.input: Input should be a valid dictionary (interrupted stream left a partialJson fragment)"


def errors(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == ERROR]


# The Responses API's answers to a request whose calls and outputs do not pair (openai/codex#93;
# the reverse case as clients report it)
NO_OUTPUT = "No tool output found for function call {}."
NO_CALL = "No tool call found for function call output with call_id {}."
CODEX_HEALS = {
    "missing-tool-result": "Codex 0.169 sends the output \"aborted\" right after this call when it resumes: ",
    "unexpected-tool-result": "Codex 0.169 drops this output when it resumes (its call is not in the history): ",
}
OLDER_CODEX = " [older Codex versions sent it as is and the API answered: {}]"


def codex_skipped_lines(entries) -> list[Violation]:
    """Lines Codex's reader refuses and skips on resume, each a warning that names its line and why (what it held is
    not sent). For its envelope alone (a timestamp that is no string, an ordinal that is no unsigned integer), repair
    mends the line: the ``session_meta`` line's makes the rollout one Codex cannot resume (an error). For a field of
    an item or a compaction that Codex types otherwise (rules 4b-4n), repair leaves the line as written: what it held
    is not known to be what the agent meant."""
    out: list[Violation] = []
    header = True
    for e in entries:
        x = e.extra
        if x is not None and x.get("envelope"):
            if header and e.type == "session_meta":
                out.append(Violation("unreadable-header", ERROR, 0, [e.lineno],
                                     f"{x['unsent'].split(':')[0]}: Codex cannot resume this rollout (repair mends the line)"))
            else:
                out.append(Violation("unreadable-line", WARNING, 0, [e.lineno],
                                     f"{x['unsent']}; repair mends the line"))
        elif x is not None and x.get("refused"):
            out.append(Violation("skipped-line", WARNING, 0, [e.lineno],
                                 f"{x['unsent']}; what the line holds is not sent (repair leaves it as written)"))
        if e.type == "session_meta":
            header = False
    return out


# errors repair cannot mend: what Codex needs is not in the file (its header, a fork's parent)
UNREPAIRABLE = frozenset(("missing-header", "unreadable-header-fields", "missing-fork-parent", "fork-past-parent"))


def codex_header(entries) -> list[Violation]:
    """Codex resumes a rollout only when its first record is a ``session_meta`` whose payload its reader takes
    (``formats.codex.meta_refusal``, judged field by field); otherwise it refuses the whole file ("does not start with
    session metadata"), and repair cannot rebuild the line: an error either way."""
    first = entries[0] if entries else None
    if first is None or (first.extra is not None and first.extra.get("envelope")):  # (codex_skipped_lines says that)
        return []
    refuse = "Codex refuses to resume this rollout (\"does not start with session metadata\"); repair cannot rebuild it"
    if first.type != "session_meta":
        return [Violation("missing-header", ERROR, 0, [first.lineno],
                          f"no session_meta line before line {first.lineno} (a {first.type} line): {refuse}")]
    why = "its payload is missing or no object" if first.kind != HEADER else (first.get("meta_refused"))
    if why is None:
        return []
    return [Violation("unreadable-header-fields", ERROR, 0, [first.lineno], f"session_meta: {why}: {refuse}")]


def codex_lineage(t) -> list[Violation]:
    """A fork (``history_base``) Codex resumes only with its parent rollout, read up to the fork point: a parent not
    found (beside the fork, in its ``sessions`` tree or in ``archived_sessions/``) or shorter than the fork point makes
    it refuse the fork (judged: "invalid paginated history lineage", "cutoff byte offset is past the source
    rollout"). Each fork of the chain is looked at."""
    out: list[Violation] = []
    cur, seen = t.path, {os.path.abspath(t.path)}
    header = next((e for e in t.entries if e.kind == HEADER), None)
    while header is not None:
        base = header.get("history_base")
        if not base:
            break
        parent = codex_rules.find_rollout(cur, base["thread_id"])
        where = "" if cur == t.path else f" (the parent {os.path.basename(cur)})"
        if parent is None:
            out.append(Violation("missing-fork-parent", ERROR, 0, [header.lineno],
                                 f"a fork of {base['thread_id']}{where} whose parent rollout is not beside it, in its "
                                 "sessions tree or in archived_sessions/: Codex refuses to resume it (invalid paginated "
                                 "history lineage: missing source rollout)"))
            break
        end = base.get("end_byte_offset")
        if end is not None and end > os.path.getsize(parent):
            out.append(Violation("fork-past-parent", ERROR, 0, [header.lineno],
                                 f"a fork of {base['thread_id']}{where} that reads its parent to byte {end:,}, past its "
                                 f"end ({os.path.getsize(parent):,} bytes, {parent}): Codex refuses to resume it"))
            break
        if os.path.abspath(parent) in seen:
            break
        seen.add(os.path.abspath(parent))
        cur = parent
        header = _codex_header_of(parent)
    return out


def _codex_header_of(path: str):
    from .jsonl import loads
    from .model import full_entry

    try:
        with open(path, "rb") as f:
            obj = loads(f.readline(1 << 24))
    except (OSError, ValueError):
        return None
    if type(obj) is not dict or obj.get("type") != "session_meta":
        return None
    e = full_entry(0, 1, 0, 0, b"\n", obj)
    codex_fmt.normalize(obj, e, False, False)
    return e if e.kind == HEADER else None


def validate_codex(seq: list) -> list[Violation]:
    """The Responses API's pairing rules on the items Codex replays (``codex_rules.sent_entries``,
    before its healing): every call has an output after it, every output a call before it, a
    call_id is used by one call and answered once. Outputs answer the calls of their call_id in
    order. What the current Codex heals on resume is a warning naming what it does (and what
    older clients met); the rest are errors."""
    out: list[Violation] = []
    first: dict[str, tuple[int, object]] = {}
    pending: dict[str, list] = {}
    later_calls = {c.id for e in seq for c in e.calls}
    answered: dict[str, int] = {}
    item_at: dict[str, tuple[int, int]] = {}  # item id -> (input index, line) of the first item sent with it
    dups: list[Violation] = []  # (said unless the pairing rules below say something of that line already)
    for n, e in enumerate(seq):
        if e.id is not None and e.kind != HEADER:
            at = item_at.get(e.id)
            if at is None:
                item_at[e.id] = (n, e.lineno)
            else:  # a line written twice (a copy, a sync tool): Codex sends both
                dups.append(Violation("duplicate-item-id", ERROR, n, [at[1], e.lineno],
                                     f"input[{n}]: item id {e.id} is already sent at input[{at[0]}]: Codex sends both, "
                                     f"and the Responses API refuses an input with one item id twice (\"Duplicate item "
                                     f"found with id {e.id}\")", [e.id]))
        odd = e.extra.get("odd_role") if e.extra is not None else None
        if odd is not None:
            out.append(Violation("invalid-role", ERROR, n, [e.lineno],
                                 f"input[{n}]: a message with role {odd!r}: Codex sends it as written, and the API takes only "
                                 "user, assistant, system and developer"))
        if e.extra is not None and codex_fmt.NO_CALL_ID in e.extra:
            out.append(Violation("missing-call-id", ERROR, n, [e.lineno],
                                 f"input[{n}]: a function_call_output without a call_id: Codex sends it so, and the API "
                                 "requires one (repair gives it the call it answers, or drops it when it answers "
                                 "none)"))
        for c in e.calls:
            if c.id in first:
                out.append(Violation("duplicate-tool-use-id", ERROR, n, [first[c.id][1].lineno, e.lineno],
                                     f"input[{n}]: call_id {c.id} is already used by the call at input[{first[c.id][0]}]; "
                                     "Codex sends both and the API cannot tell which call an output answers", [c.id]))
            else:
                first[c.id] = (n, e)
            pending.setdefault(c.id, []).append((n, e))
        for r in e.results:
            if pending.get(r.id):
                pending[r.id].pop(0)
                answered[r.id] = n
            elif r.id in answered:
                out.append(Violation("duplicate-tool-result", ERROR, n, [e.lineno],
                                     f"input[{n}]: a second output for call_id {r.id} (the first is input[{answered[r.id]}]); "
                                     "Codex sends both", [r.id]))
            elif r.id in later_calls:
                out.append(Violation("result-before-call", ERROR, n, [e.lineno], NO_CALL.format(r.id)
                                     + " (the output comes before its call, which Codex sends as it is)", [r.id]))
            else:
                out.append(Violation("unexpected-tool-result", WARNING, n, [e.lineno],
                                     CODEX_HEALS["unexpected-tool-result"] + r.id + OLDER_CODEX.format(NO_CALL.format(r.id)), [r.id]))
    for cid, calls in pending.items():
        for n, e in calls:
            out.append(Violation("missing-tool-result", WARNING, n, [e.lineno],
                                 CODEX_HEALS["missing-tool-result"] + cid + OLDER_CODEX.format(NO_OUTPUT.format(cid)), [cid]))
    said = {ln for v in out for ln in v.lines}
    out += [v for v in dups if v.lines[-1] not in said]
    out.sort(key=lambda v: v.message_index)
    return out
