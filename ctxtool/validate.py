"""Check a provider view against the Anthropic Messages API's rules.

Each violation carries the error text the API would answer with (HTTP 400,
``invalid_request_error``) and the file lines it comes from, so a user can see
which line breaks the session before the API does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

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
        return asdict(self)


def _positions(msg: ViewMessage):
    """Yield (position in merged content, entry, block idx, kind, id) for every block."""
    pos = 0
    for e in msg.entries:
        result_idx = {r.idx: r for r in e.results}
        call_idx = {c.idx: c for c in e.calls}
        for i in range(e.nblocks):
            if i in result_idx:
                yield pos, e, "result", result_idx[i]
            elif i in call_idx:
                yield pos, e, "call", call_idx[i]
            else:
                yield pos, e, "other", None
            pos += 1


def validate_view(view: list[ViewMessage]) -> list[Violation]:
    out: list[Violation] = []
    if not view:
        out.append(Violation("no-messages", ERROR, 0, [], "messages: at least one message is required"))
        return out
    seen_calls: dict[str, int] = {}
    for n, msg in enumerate(view):
        blocks = list(_positions(msg))
        is_last = n == len(view) - 1
        if all(kind == "other" and e.empty for _, e, kind, _ in blocks) and all(e.empty for e in msg.entries):
            if not (is_last and msg.role == "assistant"):
                out.append(Violation("empty-message", ERROR, n, msg.lines,
                                     f"messages.{n}: all messages must have non-empty content except for the optional final assistant message"))
        if any(e.blank_text for e in msg.entries):
            lines = [e.lineno for e in msg.entries if e.blank_text]
            out.append(Violation("empty-text", ERROR, n, lines, "messages: text content blocks must be non-empty"))
        if msg.role == "assistant":
            calls = [(pos, e, c) for pos, e, kind, c in blocks if kind == "call"]
            for pos, e, c in calls:
                if c.problem:
                    out.append(Violation("invalid-tool-call", ERROR, n, [e.lineno],
                                         _call_error(n, pos, c.problem), [c.id] if c.id else []))
                    continue
                if c.id in seen_calls:
                    out.append(Violation("duplicate-tool-use-id", ERROR, n, [e.lineno],
                                         f"messages.{n}.content.{pos}: `tool_use` ids must be unique", [c.id]))
                seen_calls[c.id] = n
            ids = [c.id for _, _, c in calls if not c.problem]
            if not ids:
                continue
            nxt = view[n + 1] if n + 1 < len(view) else None
            nxt_blocks = list(_positions(nxt)) if nxt is not None and nxt.role == "user" else []
            present = {r.id for _, _, kind, r in nxt_blocks if kind == "result"}
            missing = [i for i in ids if i not in present]
            if missing:
                lines = sorted({e.lineno for _, e, c in calls if c.id in missing})
                out.append(Violation("missing-tool-result", ERROR, n, lines,
                                     f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                                     f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                                     missing))
            leading = set()
            for _, _, kind, r in nxt_blocks:
                if kind != "result":
                    break
                leading.add(r.id)
            late = [i for i in ids if i in present and i not in leading]
            if late:
                out.append(Violation("result-not-first", ERROR, n + 1, nxt.lines,
                                     f"messages.{n + 1}: Did not find {len(late)} tool_result block(s) at the beginning of this message. "
                                     "Messages following tool_use blocks must begin with a matching number of tool_result blocks.", late))
        else:
            prev = view[n - 1] if n > 0 else None
            prev_ids = set()
            if prev is not None and prev.role == "assistant":
                prev_ids = {c.id for _, _, kind, c in _positions(prev) if kind == "call" and not c.problem}
            counted: set[str] = set()
            for pos, e, kind, r in blocks:
                if kind != "result":
                    continue
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
