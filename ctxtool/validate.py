"""Check a provider view against the Anthropic Messages API's rules.

Each violation carries the error text the API would answer with (HTTP 400,
``invalid_request_error``) and the file lines it comes from, so a user can see
which line breaks the session before the API does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .view import ViewMessage, provider_view

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

    def __init__(self, msg: ViewMessage):
        self.calls: list = []  # (position, entry, Call)
        self.results: list = []  # (position, entry, Result)
        self.first_other: int | None = None  # position of the first block that is not a result
        self.blank_lines = [e.lineno for e in msg.entries if e.blank_text]
        self.empty = all(e.empty for e in msg.entries)
        pos = 0
        for e in msg.entries:
            if not e.calls and not e.results:
                if e.nblocks and self.first_other is None:
                    self.first_other = pos
                pos += e.nblocks
                continue
            res = {r.idx: r for r in e.results}
            calls = {c.idx: c for c in e.calls}
            for i in range(e.nblocks):
                if i in res:
                    self.results.append((pos + i, e, res[i]))
                else:
                    if i in calls:
                        self.calls.append((pos + i, e, calls[i]))
                    if self.first_other is None:
                        self.first_other = pos + i
            pos += e.nblocks

    def call_ids(self) -> set:
        return {c.id for _, _, c in self.calls if not c.problem}


def validate_view(view: list[ViewMessage]) -> list[Violation]:
    out: list[Violation] = []
    if not view:
        # a session with no messages yet is normal (OpenClaw writes the header first); the
        # API would only object if it were sent as is, which the agent never does
        out.append(Violation("no-messages", WARNING, 0, [], "messages: at least one message is required"))
        return out
    summaries = [_Summary(m) for m in view]
    seen_calls: dict[str, int] = {}
    for n, msg in enumerate(view):
        sm = summaries[n]
        is_last = n == len(view) - 1
        if sm.empty and not (is_last and msg.role == "assistant"):
            out.append(Violation("empty-message", ERROR, n, msg.lines,
                                 f"messages.{n}: all messages must have non-empty content except for the optional final assistant message"))
        if sm.blank_lines:
            out.append(Violation("empty-text", ERROR, n, sm.blank_lines, "messages: text content blocks must be non-empty"))
        if msg.role == "assistant":
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
                continue
            nxt = summaries[n + 1] if n + 1 < len(view) and view[n + 1].role == "user" else None
            present = {r.id for _, _, r in nxt.results} if nxt is not None else set()
            missing = [i for i in ids if i not in present]
            if missing:
                lines = sorted({e.lineno for _, e, c in sm.calls if c.id in missing})
                out.append(Violation("missing-tool-result", ERROR, n, lines,
                                     f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                                     f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                                     missing))
            if nxt is not None and nxt.first_other is not None:
                leading = {r.id for pos, _, r in nxt.results if pos < nxt.first_other}
                late = [i for i in ids if i in present and i not in leading]
                if late:
                    out.append(Violation("result-not-first", ERROR, n + 1, view[n + 1].lines,
                                         f"messages.{n + 1}: Did not find {len(late)} tool_result block(s) at the beginning of this message. "
                                         "Messages following tool_use blocks must begin with a matching number of tool_result blocks.", late))
        elif sm.results:
            prev_ids = summaries[n - 1].call_ids() if n > 0 and view[n - 1].role == "assistant" else set()
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
    last = view[-1]
    if last.role == "assistant":
        out.append(Violation("trailing-assistant", WARNING, len(view) - 1, last.lines,
                             "The final message is an assistant turn: sent as is it is an assistant prefill, which Claude 4.6+ "
                             "rejects (\"does not support assistant message prefill\"); the agent normally appends a user turn first."))
    return out


def _call_error(n: int, pos: int, problem: str) -> str:
    if problem == "no id":
        return f"messages.{n}.content.{pos}.tool_use.id: Field required"
    if problem == "invalid name":
        return f"messages.{n}.content.{pos}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
    if problem == "no arguments":
        return f"messages.{n}.content.{pos}.tool_use.input: Field required"
    return f"messages.{n}.content.{pos}.tool_use.input: Input should be a valid dictionary (interrupted stream left a partialJson fragment)"


def validate_entries(fmt_name: str, entries) -> list[Violation]:
    return validate_view(provider_view(fmt_name, entries))


def errors(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == ERROR]
