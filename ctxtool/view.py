"""What the model sees: the provider view of a transcript.

pi/OpenClaw: walk from the leaf (the last entry) to the root, take the latest
compaction on that path, emit its summary first, then the kept entries from
``firstKeptEntryId`` and everything after the compaction, as ``buildSessionContext``
does; then, as pi-ai does before calling a provider, skip assistant turns that
ended in ``error``/``aborted`` and turn tool results into user messages.
Claude Code: everything after the last ``compact_boundary``, assistant lines
merged by ``message.id``, no metadata lines. Messages JSONL: every line.
Consecutive messages of the same role are combined, as the Messages API does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import BOUNDARY, COMPACTION, HEADER, MESSAGE, Entry


@dataclass
class ViewMessage:
    role: str  # "user" or "assistant"
    entries: list[Entry] = field(default_factory=list)

    @property
    def lines(self) -> list[int]:
        return [e.lineno for e in self.entries]

    def blocks(self) -> list:
        out: list = []
        for e in self.entries:
            out.extend(e.blocks or [])
        return out

    @property
    def chars(self) -> int:
        return sum(e.chars for e in self.entries)


def pi_path(entries: list[Entry]) -> list[Entry]:
    """Entries from the root to the leaf (the last entry), as pi's tree walk finds them."""
    body = [e for e in entries if e.kind != HEADER]
    if not body:
        return []
    if all(e.id is None for e in body):
        return body  # version 1: a linear list
    by_id: dict[str, Entry] = {}
    for e in body:
        if e.id is not None:
            by_id[e.id] = e  # later duplicates win, as in pi's Map
    path = []
    seen = set()
    cur: Entry | None = body[-1]
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        path.append(cur)
        cur = by_id.get(cur.parent) if cur.parent is not None else None
    path.reverse()
    return path


def pi_segment(entries: list[Entry]) -> tuple[list[Entry], int, Entry | None]:
    """(path, index where the kept segment starts, latest compaction on the path or None)."""
    path = pi_path(entries)
    comp_i = None
    for i in range(len(path) - 1, -1, -1):
        if path[i].kind == COMPACTION:
            comp_i = i
            break
    if comp_i is None:
        return path, 0, None
    comp = path[comp_i]
    first = comp.get("first_kept")
    start = comp_i
    if first is not None:
        for i in range(comp_i):
            if path[i].id == first:
                start = i
                break
    elif comp.get("first_kept_index") is not None:
        # version 1: pi counts the header as index 0 (a header repair is about to rebuild counts too)
        target = comp.get("first_kept_index")
        shift = 0 if entries and entries[0].kind == HEADER else 1
        for i in range(comp_i):
            if path[i].index + shift == target:
                start = i
                break
    return path, start, comp


def claude_segment(entries: list[Entry]) -> list[Entry]:
    """Claude Code: the entries after the last compact_boundary, without sidechain lines
    when the file also holds the main conversation (a subagent file is all sidechain)."""
    last = -1
    for i, e in enumerate(entries):
        if e.kind == BOUNDARY:
            last = i
    seq = entries[last + 1:]
    if any(e.kind == MESSAGE and not e.get("sidechain") for e in seq):
        seq = [e for e in seq if not e.get("sidechain")]
    return seq


def merges(fmt_name: str, role: str) -> bool:
    """Whether two consecutive messages of ``role`` become one turn.

    The Messages API combines consecutive same-role turns. pi-ai does not let two
    assistant messages meet: it answers pending tool calls with "No result provided"
    first, so in pi files every assistant message is a turn of its own.
    """
    return not (fmt_name == "pi" and role == "assistant")


def context_entries(fmt_name: str, entries: list[Entry]) -> list[Entry]:
    """The entries that become model messages, in order (summary first for pi)."""
    if fmt_name == "pi":
        path, start, comp = pi_segment(entries)
        seq = path[start:]
        out = [comp] if comp is not None else []
        out += [e for e in seq if e.kind == MESSAGE and not e.get("exclude")]
        return out
    if fmt_name == "claude":
        return [e for e in claude_segment(entries) if e.kind == MESSAGE]
    return [e for e in entries if e.kind == MESSAGE]


def sendable(e: Entry) -> bool:
    """pi-ai skips errored/aborted assistant turns and empty assistant messages."""
    if e.role == "assistant" and (e.errored or e.empty):
        return False
    return True


def provider_view(fmt_name: str, entries: list[Entry]) -> list[ViewMessage]:
    msgs: list[ViewMessage] = []
    for e in context_entries(fmt_name, entries):
        if not sendable(e):
            continue
        role = e.api_role
        if msgs and msgs[-1].role == role and merges(fmt_name, role):
            msgs[-1].entries.append(e)
        else:
            msgs.append(ViewMessage(role, [e]))
    return msgs
