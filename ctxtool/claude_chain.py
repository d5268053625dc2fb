"""What Claude Code sends for a transcript: its own rules, found with the real client as judge.

Each rule below was established by resuming recorded and edited transcripts in the pinned
client (``tests/claude_harness``) and reading the request it sent; ``docs/claude-code-rules.md``
has the table of rule, line pattern and what the client sends, with the fixture for each.

1. The conversation is the chain of ``parentUuid`` links from the leaf (``resume_leaf``: the
   last row, or the last ``last-prompt`` checkpoint when the last row does not go on from it; then
   up to a user or assistant line), so a branch left by a rewind (``--resume-session-at``), an edit
   or a second writer is not sent.
   A parent that is not in the file (a lost line), or one already on the chain (a cycle), is
   bridged by time: the chain goes on from the line of the same side (main or sidechain) with the
   latest timestamp not after this line's, if it is at most 5 seconds older; otherwise the history
   before the lost line is not sent (repair re-links such a line to the line before it). A chain that reaches a
   ``compact_boundary`` (``parentUuid: null``) starts there. When the last boundary lists the
   messages it kept, the client folds its rows at load (``_fold``): the kept messages follow the
   summary, and the rows before the boundary are gone.
2. Lines that share ``message.id`` are one assistant message: its first line on the chain, then
   every other line of that response, on the chain or off it, tool calls last; every tool
   result for one of its calls (from the chain's start on) is gathered into the user message
   after it, wherever the result line sits and whatever its ``parentUuid`` says (in chain order, those off the
   chain put in by file position as the response's own lines are);
   a result answers the call of its id made last before it (an id may be reused).
3. API error messages (``isApiErrorMessage``), ``progress``, snapshots, ``system`` lines and
   other metadata are never sent; attachments with a recorded rendering (``rendered``) are sent
   as context: the client's ``<system-reminder>`` text.
4. In a main file a subagent's lines (``isSidechain``) are another conversation: the last row is
   the main side's, a lost parent is bridged within the side of the line walked; but they are in
   the client's map, so a line so marked that the main chain links through is sent. A subagent
   file is all sidechain and is read as it is.
5. The client heals pairing on resume (``heal``): a call with no result is dropped, unless it
   is in the last message, where it gets an "interrupted" error result and the assistant reply
   "No response requested."; results with no call before them and second results for a call
   are dropped; user text that is only whitespace is dropped; a message left empty is dropped; a
   response of thinking alone (and blank text) is dropped; a history that ends with a user message (a turn
   with no reply) gets the reply "No response requested.". Calls of a renamed tool (``Task``) go
   under the new name (``Agent``); ``tool_reference`` blocks in a result to a tool the client does not have
   (``CLIENT_TOOLS`` and what the file's ``deferred_tools_record`` names) are left out (a result left with none gets
   the client's notice that those tools are gone), and a user message whose results keep one gets "Tool loaded.". A call whose id an earlier response already used is sent as
   "[Tool use interrupted]" and its result as "(no content)": its real result is lost (repair
   renames such ids).

The chain is built from the index (ids, links, message keys, tool ids): no second parse.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import cmp_to_key
from itertools import chain as chain_rows
from itertools import islice

from .formats.claude import REMINDER_CLOSE, REMINDER_OPEN  # (the client's wrapping of context)
from .formats.common import THINKING_TYPES, js_stringify
from .model import BAD_PARENT, BOUNDARY, COMPANION, FALSY_ID, FALSY_MESSAGE_ID, FALSY_PARENT, MESSAGE, SILENT_RESPONSE, UNREADABLE_CONTENT, Entry, as_list, lean_progress
from .scanloop import index_passes

INTERRUPTED_RESULT = ("[Tool call interrupted: the session ended before this call's result was recorded, "
                      "so its outcome is unknown. Check whether it took effect before relying on it or running it again.]")
NO_RESPONSE = "No response requested."
RENDERED = "_rendered"  # the mark of a block of rendered context among a user turn's blocks (view._claude_user_run)
SOURCE = "_src"  # the mark of a user turn's block: the index of the line it comes from (view._claude_user_run)
LAST = "last"  # its value on the last block of an attachment's rendering (True on the others)
TOOL_USE_INTERRUPTED = "[Tool use interrupted]"
TOOL_USE_REMOVED = "[Tool use removed]"
NO_CONTENT = "(no content)"
TOOL_REFERENCES_REMOVED = "[Tool references removed - tools no longer available]"
TOOL_NAME_MISSING = "tool_name_missing"  # the name the client gives a call written with none that is a string
MAX_TOOL_NAME = 200  # the characters of a call's name the client sends (2.1.332: a longer one is cut)
TOOL_LOADED = "Tool loaded."  # the text the client adds to a user message whose results keep a tool_reference
# the tools the pinned client (2.1.330) has when it resumes, its deferred ones (loaded by ToolSearch) included: a
# tool_reference in a result to a tool it has is sent, one to another tool is left out (read in the client's code;
# judged). A file's deferred_tools_record attachments add the tools they name (MCP tools too, server or not).
CLIENT_TOOLS = frozenset((
    "Agent", "Bash", "Edit", "ListAgents", "Read", "ReportFindings", "ScheduleWakeup", "Skill", "ToolSearch", "Workflow",
    "Write",
    "CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree", "Monitor", "NotebookEdit", "SendMessage",
    "TaskStop", "WebFetch", "WebSearch",
))
MISSING_RESULT = "[Tool result missing due to internal error]"
ORPHAN_REMOVED = "[Orphaned tool result removed due to conversation resume]"
# tools the client renamed: a call recorded under the old name is sent under the new one
RENAMED_TOOLS = {"Task": "Agent"}


def main_entries(entries: list[Entry]) -> list[Entry]:
    """Entries of the conversation the file is about: a main file without its subagents'
    sidechain lines; a file that is all sidechain (a subagent's own file) as it is."""
    r = index_passes()
    if r is not None and type(entries) is list:
        return r.main(entries)
    for first, e in enumerate(entries):
        x = e.extra
        if x is not None and x.get("sidechain"):
            break
    else:
        return entries  # no sidechain line: nothing to leave out (and no copy of a long list)
    keep: list[Entry] = entries[:first]
    append = keep.append
    main = any(e.kind == MESSAGE for e in keep)
    side = False
    for e in entries[first:]:
        x = e.extra
        if x is not None and x.get("sidechain"):
            side = True
            continue
        append(e)
        if not main and e.kind == MESSAGE:
            main = True
    return keep if main and side else entries


def chain(entries: list[Entry], bridges: dict | None = None, rows: dict | None = None, mend=None,
          counts: list | None = None, tail: list | None = None, spliced: dict | None = None) -> list[Entry]:
    """The leaf's chain, root first (rule 1): every linked line, messages or not. ``bridges``, when given, gets
    each line of the chain whose parent was lost (or a cycle) and the line it was bridged to:
    {index of the line: line, or None where the history is cut}. ``mend``, when given, is asked
    for the line a cut should go on from (repair's choice: the line before), and the walk goes on;
    a line the walk has passed already is skipped (``mend`` is asked again, for the one before it).
    ``rows``, when given (empty), gets the client's rows: {uuid: the last line with that uuid};
    ``counts``, when given, gets the number of lines with a uuid appended, then the number of distinct
    uuids among them (before a fold). The rows below an unanswered user leaf (``_turn_tail``) follow the
    chain, or go to ``tail`` when it is given (the client puts them after its recovery of parallel batches).
    ``spliced``, when given (empty), gets the rows the client re-links past progress lines: {uuid, or the row
    where its uuid is no string: the parent it reads}. The progress lines a lean index holds no entry of
    (``model.lean_progress``) are read among ``entries`` in file order."""
    by_id: dict[str, Entry] = {} if rows is None else rows
    spliced = {} if spliced is None else spliced
    progress = lean_progress(entries)
    n = 0
    checkpoints = False  # a last-prompt line
    last_b = listed = None  # the last boundary; the last that lists its kept messages (the client folds)
    # rows whose uuid is no string: in the client's map too (under that value), so a bridge and the
    # conversation's ends reach them (judged), a parent link cannot
    odd: list[Entry] = []
    # the client's map holds a subagent's rows too (a parent link reaches them, judged): every line is walked; the
    # last row, the checkpoints and the boundaries are the main side's (``main``, made after the map: the copy of the
    # index it may be and the map's growth are not held at once, which is a 500 MB file's peak)
    r = index_passes()
    if r is not None and type(entries) is list:  # the loop below, in C: the rows, and their boundaries in file order
        n, odd, bounds, checkpoints = r.rows(entries, _BRIDGED_TYPES, by_id, spliced, _NOT_LINKS) if not progress \
            else r.rows(entries, _BRIDGED_TYPES, by_id, spliced, _NOT_LINKS, progress.offsets, progress.ids, progress.parents)
    else:
        bounds = []
        links: dict = {}  # the client's map of progress lines read so far
        ahead = iter(progress.items()) if progress else iter(())
        nxt = next(ahead, None)  # the next progress line given apart (a lean index)
        for e in entries:
            while nxt is not None and nxt[0] < e.offset:
                if type(nxt[1]) is str:
                    _read_progress(links, nxt[1], nxt[2])
                nxt = next(ahead, None)
            i = e.id
            t = e.type
            if t == "progress":
                if type(i) is str:
                    _read_progress(links, i, e.parent)
                continue
            if t in _BRIDGED_TYPES:
                key = e if i is None else i
                if i is not None:
                    again = i in by_id
                    by_id[i] = e  # (a line of another type is not in the client's map: judged)
                    n += 1
                else:
                    again = False
                    odd.append(e)
                to = _past_progress(links, e.parent)
                if to is not _NONE:
                    spliced[key] = to
                elif again:
                    spliced.pop(key, None)
                # the client folds at a boundary whatever its uuid (judge fuzz seed 205)
                if e.kind == BOUNDARY:
                    bounds.append(e)
            elif t == "last-prompt":
                checkpoints = True
    main = main_entries(entries)
    sided = main is not entries
    bounds = [e for e in bounds if not (sided and _sidechain(e))]
    if bounds:
        last_b, listed = _last_boundaries(bounds, by_id, n != len(by_id))
    if counts is not None:
        counts += (n, len(by_id))  # lines with a uuid, and distinct uuids among them (before a fold)
    links, folded = _fold(by_id, last_b, listed, odd, spliced) if listed is not None else (spliced or None, False)
    leaf = resume_leaf(main, by_id, links, folded, checkpoints, sided, odd)
    out: list[Entry] = []
    seen: set[str] = set()
    bridge: dict = {}  # side key -> its _Bridge (the client bridges among the rows of the line walked's key)
    cur: Entry | None = leaf
    while cur is not None:
        seen.add(_row_key(cur))
        out.append(cur)
        if cur.kind == BOUNDARY:
            break
        # _parent, inline: the walk of every line (a row whose uuid is no string is re-linked under itself)
        p = links.get(cur.id if cur.id is not None else cur, cur.parent) if links else cur.parent
        if p is None or p == "" or p is FALSY_PARENT:  # a parent JavaScript takes for false ends the walk (judged)
            break
        nxt = by_id.get(p)
        if nxt is None or nxt.id in seen:  # a lost line or a cycle: the client bridges by time
            side = side_of(cur)
            b = bridge.get(side)
            if b is None:
                b = bridge[side] = _Bridge(by_id, odd, side)
            nxt = b.before(cur, seen)
            if nxt is None and mend is not None:
                nxt = mend(cur)
                # on the chain already, or a line whose parents lead back into it (linked to, it would
                # close a loop): the line before that
                while nxt is not None and (nxt.id in seen or _leads_into(nxt, seen, by_id, links)):
                    nxt = mend(nxt)
            if bridges is not None:
                bridges[cur.index] = nxt
        cur = nxt
    out.reverse()
    if leaf is not None and (leaf.type == "user" or leaf.get("api_error")):
        # (a turn whose answer was the client's API error line, which it does not send: the rows below that line are
        # the turn's, as below its prompt; judged, tests/test_claude_api_error_turn.py)
        below = _turn_tail(leaf, by_id, links, odd, seen)
        if tail is None:
            out += below
        else:
            tail += below
    return out


def _last_boundaries(bounds: list[Entry], by_id: dict, twice: bool) -> tuple:
    """The last compact boundary and the last that lists its kept messages (``preserved``/``segment``; None when none
    does), of ``bounds`` (in file order), as the client orders its rows: a uuid written twice keeps its first line's
    place and holds its last line (rule 18), so a boundary's line written again after a later boundary leaves that
    later one the last (judge fuzz seed 146, case 0049, probed). ``twice``: some uuid was written twice."""
    def lists(e: Entry) -> bool:
        return e.get("preserved") is not None or e.get("segment") is not None

    if twice and all(e.id is not None for e in bounds):
        place = {k: p for p, k in enumerate(by_id)}
        rows = {e.id: by_id[e.id] for e in bounds}  # (a uuid whose last line is no boundary is no boundary's row)
        bounds = sorted((e for e in rows.values() if e.kind == BOUNDARY), key=lambda e: place[e.id])
        if not bounds:
            return None, None
    listed = next((e for e in reversed(bounds) if lists(e)), None)
    return bounds[-1], listed


def side_of(e: Entry):
    """The key the client groups rows by to bridge a lost parent: the line's ``isSidechain`` as a JavaScript Map key
    (formats.claude.side_key; False for ``false``)."""
    x = e.extra
    k = _NO_SIDE if x is None else x.get("side", _NO_SIDE)
    return _sidechain(e) if k is _NO_SIDE else k


_NO_SIDE = object()


def _sidechain(e: Entry) -> bool:
    """A subagent's line (``isSidechain`` set, as JavaScript tests it)."""
    x = e.extra
    return x is not None and bool(x.get("sidechain"))


def _row_key(e: Entry):
    """What the walk's ``seen`` holds for a row: its uuid, or the row itself when its uuid is no string
    (only a bridge reaches such a row)."""
    return e.id if e.id is not None else e


def _leads_into(e: Entry, seen: set, by_id: dict, links: dict | None) -> bool:
    """Whether following the parents of ``e`` (as the walk would, re-links included) reaches a line
    of ``seen``; it stops at a root, a lost parent or a loop of its own."""
    passed: set = set()
    cur = e
    while cur is not None and cur.id not in passed:
        passed.add(cur.id)
        p = _parent(cur, links)
        if p is None:
            return False
        if p in seen:
            return True
        cur = by_id.get(p)
    return False


def _fold(by_id: dict, last_b: Entry, listed: Entry | None, odd: list | None = None, spliced: dict | None = None) -> tuple:
    """What the client does to its rows at load when a compact boundary lists the messages it
    kept (``preservedMessages``, or the older ``preservedSegment``): when the last boundary
    (``last_b``) is the last that lists them (``listed``), each kept message re-linked to the one
    before it (the first to the anchor, the summary) and what hung off the anchor re-linked to the
    last kept one; then every row before the last boundary that is not kept dropped (``by_id`` is
    pruned in place; a message that hung off a dropped row hangs off the last kept one). With a
    kept uuid missing, nothing changes. Returns the re-links {uuid: parent} (None when there are
    none), and whether kept messages were re-linked (the client then finds the leaf among the
    conversation's ends). ``spliced``: the rows re-linked past progress lines (``chain``), which the fold reads and
    whose re-links the returned ones hold too (the client folds the rows it loaded)."""
    keys = list(by_id)
    if last_b.id is not None:
        b_pos = keys.index(last_b.id)
    else:  # a boundary whose uuid is no string (an ``odd`` row): the rows written before it go
        b_pos = sum(1 for u in keys if by_id[u].index < last_b.index)
    kept: list = []
    links: dict = dict(spliced) if spliced else {}
    anchor = None
    if listed is last_b or (listed is not None and last_b.id is not None and listed.id == last_b.id):
        kept = _kept(listed, by_id, links)
        if kept is None or any(u not in by_id for u in kept):
            return links or None, False
        a = by_id.get(listed.get("anchor"))
        if kept and a is not None and a.type == "user" and a.extra is not None and a.extra.get(UNREADABLE_CONTENT):
            # the anchor (the compact summary) written with content that is no string and no list: the client keeps
            # none of the kept messages, and drops them with the rows before the boundary (judge fuzz seeds 531 and
            # 800; probed: a number, null, an object, none, a message that is no object; a list or a string keeps them)
            kept = []
        if kept:
            prev = anchor = listed.get("anchor")
            for u in kept:
                links[u] = prev
                prev = u
    keep = set(kept)
    if 2 * b_pos < len(keys):  # most rows stay: the dropped ones are deleted
        dropped = [u for u in islice(keys, b_pos) if u not in keep]
        for u in dropped:
            del by_id[u]
        gone = set(dropped)
        dropped_row = gone.__contains__
        survivors = by_id
    else:  # most rows go (a late boundary): the few that stay are copied, in their order
        survivors = {u: by_id[u] for u in filter(keep.__contains__, islice(keys, b_pos))}
        survivors.update(islice(by_id.items(), b_pos, None))

        def dropped_row(u, was=by_id, survivors=survivors):
            return u in was and u not in survivors
    del keys
    if odd:  # rows whose uuid is no string are in the client's map too: those before the boundary go as well
        odd[:] = [e for e in odd if e.index > last_b.index or e is last_b]
    if kept:
        first, tail = kept[0], kept[-1]
        # (such a row is re-linked too, under itself: judge fuzz, seed 88)
        for u, e in chain_rows(survivors.items(), ((e, e) for e in odd or ())):
            p = links.get(u, e.parent)
            if p is None:
                continue
            if p == anchor and u != first:  # what hung off the anchor (the summary) follows the kept ones
                links[u] = tail
            elif e.type in ("user", "assistant") and dropped_row(p):
                links[u] = tail
    if survivors is not by_id:
        by_id.clear()
        by_id.update(survivors)
    return (links or None), bool(kept)


def _kept(b: Entry, by_id: dict, links: dict | None) -> list | None:
    """A boundary's kept messages: its list, or the chain from the segment's tail up to its head
    (None when that walk breaks)."""
    listed = b.get("preserved")
    if listed is not None:
        return list(listed)
    head, tail = b.get("segment")
    out, seen = [], set()
    cur = by_id.get(tail)
    while cur is not None and cur.id not in seen:
        seen.add(cur.id)
        out.append(cur.id)
        if cur.id == head:
            out.reverse()
            return out
        p = _parent(cur, links)
        cur = by_id.get(p) if p is not None else None
    return None


def resume_leaf(main: list[Entry], by_id: dict, links: dict | None = None, folded: bool = False,
                checkpoints: bool = True, sided: bool = False, odd: list | tuple = ()) -> Entry | None:
    """The line the client resumes at (rule 1): the last ``last-prompt`` checkpoint since the last
    compact boundary, unless the last row (the last user, assistant, attachment or system line)
    goes on from it (then the last row; so a line written beside the conversation by a second
    writer or before a crash is not resumed); an explicit checkpoint always wins; with no
    checkpoint, the last row. From there up to the first user or assistant line (``_up_to_message``). After a
    fold, or when that finds none, the conversation's ends decide (``_end_leaf``; the main side's ends when
    ``sided``: ``by_id`` then holds a subagent's rows too). ``odd``: the rows whose uuid is no string
    (the last row may be one: the client resumes it all the same, judged)."""
    last, row, snapshots_after, cp, explicit, ever_explicit = _leaf_marks(main, checkpoints)
    if row is not None and row.id is not None and row.id not in by_id:
        row = None
    c = by_id.get(cp) if cp is not None else None
    if c is not None and row is not None and _silent(c) and not _silent(row):
        # a checkpoint naming a silent response (rule 42) is passed over: the client resumes at the last row (judge
        # fuzz seed 1225, case 0134: rewound_sdk.jsonl's last answer given a block type no string, a result line of
        # an earlier branch written again above it; a new row there too)
        c = None
    if not folded or (explicit and c is not None):
        lead = row
        if c is None and row is not None and not snapshots_after and not _leafed(main, checkpoints):
            lead = _latest_below(row, main, by_id, links, odd)
        chosen = c if c is not None else (None if snapshots_after else lead)
        if chosen is c and c is not None and not explicit and row is not None and row is not c \
                and not (row.role == "assistant" and _falsy_id(row)) \
                and _continues(row, c, by_id, not ever_explicit, links):
            # (a last row that is a response line with a falsy uuid never goes on from a checkpoint: probed)
            chosen = row
        m = _up_to_message(chosen, by_id, links, strict=True)
        if m is not None:
            return m
    if sided:  # the ends of the main side (a subagent's rows are in the map too)
        by_id = {u: e for u, e in by_id.items() if not _sidechain(e)}
        odd = [e for e in odd if not _sidechain(e)]
    # failing those, the last line with a uuid; with none, the last row (one whose uuid is no string)
    return _end_leaf(by_id, links, row, c, explicit, not ever_explicit, snapshots_after, odd) or last or row


def _turn_tail(m: Entry, by_id: dict, links: dict | None, odd: list, seen: set) -> list[Entry]:
    """The rows the client puts after the chain of an unanswered user line ``m``: every row that is no message
    hanging below it, through rows that are no messages, depth first, the children of a row in time order (the
    client's ``P_r`` after its chain walk, read in its code: ``win`` maps each parent to its children that are no
    user or assistant lines, sorted by ``timestamp``). So a prompt's attachments are its turn's, answered or not,
    whichever of them the last row is, on every branch (judge fuzz seed 712, case 0118: a line of them written
    again at the end; seed 701, case 0000: attachments marked as a subagent's, which the last row skips).
    Progress lines are no rows (their children hang off the rows the client re-links them to: ``_parent``); rows
    already on the chain are not taken again. A response's rows below it are the next turn's, which the new prompt
    takes: none here.
    Not imitated: the client compares the ``timestamp`` values as written (strings character by character), ctxtool
    their times (the same order for the client's own ISO times); where a row's uuid is no string, the rows are taken in
    the order of their lines (the client's map keeps a uuid written twice at its first line's place, ctxtool at its
    last's), and nothing hangs below such a row."""
    kids: dict = {}
    for e in sorted(chain_rows(by_id.values(), odd), key=_index) if odd else by_id.values():
        t = e.type
        if t == "user" or (t == "assistant" and not _silent(e)):
            continue
        p = _parent(e, links)
        if p is not None and p != "":
            kids.setdefault(p, []).append(e)
    if m.id not in kids:
        return []
    out: list[Entry] = []
    stack = [m]
    while stack:
        h = stack.pop()
        if h is not m:
            k = _row_key(h)
            if k in seen:
                continue
            seen.add(k)
            out.append(h)
        if h.id is None:
            continue
        cs = kids.get(h.id)
        if not cs:
            continue
        if len(cs) > 1:
            cs = sorted(cs, key=_TS_ORDER)
        for c in reversed(cs):
            if _row_key(c) not in seen:
                stack.append(c)
    return out


def _ts_cmp(a: Entry, b: Entry) -> int:
    """The client's order of a row's children: by ``timestamp`` (``<`` and ``>`` in JavaScript; a row without a
    time is equal to every other, the sort stable)."""
    x, y = a.ts, b.ts
    if x is None or y is None:
        return 0
    return -1 if x < y else (1 if x > y else 0)


_TS_ORDER = cmp_to_key(_ts_cmp)


def _leafed(main: list[Entry], checkpoints: bool) -> bool:
    """Whether a checkpoint line (``last-prompt``) with a ``leafUuid`` field, of any value, was written."""
    return checkpoints and any(e.type == "last-prompt" and e.extra is not None and "leaf" in e.extra for e in main)


def _latest_below(row: Entry, main: list[Entry], by_id: dict, links: dict | None, odd) -> Entry:
    """Where the client resumes a file in which no checkpoint was ever written (read in its code, judged):
    when the latest row by time (the first of equals) is not the last row, at the latest row (the last of
    equals) that hangs below the last row, if any; else at the last row. (A line the client wrote ahead of
    its parent, such as one call line of a parallel batch, is so resumed with it.)"""
    latest = None
    for e in main:
        if e.ts is not None and e.type in _BRIDGED_TYPES and not _file_snapshot(e) and not _sidechain(e) \
                and (latest is None or e.ts > latest.ts):
            latest = e
    if latest is None or latest is row or (row.id is not None and latest.id == row.id):
        return row
    marks: dict = {_row_key(row): True}

    def below(e: Entry) -> bool:
        path = []
        ok = False
        cur: Entry | None = e
        while cur is not None:
            k = _row_key(cur)
            v = marks.get(k)
            if v is not None:
                ok = v
                break
            marks[k] = False
            path.append(k)
            p = _parent(cur, links)
            cur = by_id.get(p) if p is not None else None
        for k in path:
            marks[k] = ok
        return ok

    best, best_ts = row, None
    for e in chain_rows(by_id.values(), odd):
        if e is row or e.ts is None or e.type not in _BRIDGED_TYPES or _sidechain(e):
            continue
        if (best_ts is None or e.ts >= best_ts) and below(e):
            best, best_ts = e, e.ts
    return best


def _leaf_marks(main: list[Entry], checkpoints: bool = True) -> tuple:
    """Read from the end: the last line with a uuid, the last row, whether file snapshots follow
    it, the last checkpoint's leaf since the last compact boundary, whether it is explicit (a row
    after it takes that back) and whether one of the run of checkpoints naming that leaf was.
    Where the file has a checkpoint, the last row is the last that is no silent response (``_silent``;
    the last silent one when every row is): the client resumes at the row before one, or at the
    checkpoint when that row does not go on from it (judged: judge fuzz seed 899, case 0080,
    ``interrupted.jsonl``'s last response given an object for its content after a row moved from the
    first turn); with no checkpoint, a silent last row is resumed and passed on the walk to its
    message (rule 42)."""
    last = row = None
    snapshots_after = False
    cp = None
    explicit = ever_explicit = False
    rows_after = False  # a row after the checkpoint being read
    for k in range(len(main) - 1 if checkpoints else -1, -1, -1):  # no last-prompt line: nothing to look for
        e = main[k]
        if e.id is not None or e.type in _BRIDGED_TYPES:  # a row whose uuid is no string is a row too (judged)
            if last is None and e.id is not None:
                last = e
            if e.kind == BOUNDARY and e.id is not None:
                break
            if e.type in _BRIDGED_TYPES:
                if _file_snapshot(e):
                    if row is None:
                        snapshots_after = True
                else:
                    if row is None and not _silent(e):  # (read beside a checkpoint, a silent response is no last row)
                        row = e
                    rows_after = True
        elif e.type == "last-prompt":
            x = e.extra
            lp = x.get("leaf") if x is not None else None
            if not lp:
                continue
            if cp is None:
                cp = lp
            elif lp != cp:
                break  # an earlier checkpoint of another leaf: the run is read
            if x.get("explicit"):
                ever_explicit = True
                if not rows_after:
                    explicit = True
        if cp is not None and row is not None and last is not None and ever_explicit:
            break
    if row is None or last is None:  # the loop stopped at a boundary or a checkpoint (or had none to read)
        snapshots_after = False
        quiet = None  # the last silent response: the last row when no other is (beside a checkpoint)
        for k in range(len(main) - 1, -1, -1):
            e = main[k]
            if e.id is None:
                if e.type not in _BRIDGED_TYPES:
                    continue
            elif last is None:
                last = e
            if e.type in _BRIDGED_TYPES:
                if _file_snapshot(e):
                    snapshots_after = True
                elif checkpoints and _silent(e):
                    if quiet is None:
                        quiet = (e, snapshots_after)
                else:
                    row = e
                    break
        if row is None and quiet is not None:
            row, snapshots_after = quiet
    return last, row, snapshots_after, cp, explicit, ever_explicit


def _end_leaf(by_id: dict, links: dict | None, row: Entry | None, cp: Entry | None, explicit: bool,
              through_batch: bool, snapshots_after: bool, odd: list | tuple = ()) -> Entry | None:
    """The client's leaf after a fold, or when neither checkpoint nor last row leads up to a user or
    assistant line: of the conversation's ends (each row nothing hangs off, up to
    its first user or assistant line, unless a message hangs off that), the only one; among
    several, the checkpoint's unless the last row goes on from it through a parallel batch, else
    the last row's; failing those, the latest. ``odd``: rows whose uuid is no string, ends of their own
    (no parent link reaches them), keyed by themselves."""
    parents: set = set()
    message_parents: set = set()
    rows = chain_rows(by_id.items(), ((e, e) for e in odd)) if odd else by_id.items()
    for u, e in rows:
        p = links.get(u, e.parent) if links else e.parent
        if p is not None:
            parents.add(p)
            if e.type in ("user", "assistant"):
                message_parents.add(p)
    ends: dict = {}  # end message key -> the message
    for u, e in (chain_rows(by_id.items(), ((e, e) for e in odd)) if odd else by_id.items()):
        if u in parents:
            continue
        m = _up_to_message(e, by_id, links, strict=True)
        if m is not None and m.id not in message_parents:
            ends[_row_key(m)] = m
    if len(ends) == 1:
        return next(iter(ends.values()))
    if len(ends) > 1:
        if cp is not None and cp.id in ends and (explicit or row is None
                                                 or not _continues(row, cp, by_id, through_batch, links, direct=False)):
            pick = cp
        else:
            pick = None if snapshots_after else row
        if pick is not None:
            m = _up_to_message(pick, by_id, links, strict=True)
            if m is not None:
                return m
    best = None
    for m in ends.values():
        if m.ts is not None and (best is None or best.ts is None or m.ts > best.ts):
            best = m
    return best


def _file_snapshot(e: Entry) -> bool:
    return e.type == "system" and e.get("subtype") == "file_snapshot"


def _up_to_message(e: Entry | None, by_id: dict, links: dict | None = None, strict: bool = False) -> Entry | None:
    """The first user or assistant line at or above ``e``, or a local command's output line the client sends (a system
    line it resumes at as at a message: judge fuzz seed 1166) (``e`` itself when there is none, or None when
    ``strict``). A response line whose content is white space alone, or no string and no list, is passed as the client
    passes it (judged: judge fuzz seed 882, case 0151, ``auto_compacted.jsonl``'s last response made " " below a lost
    parent: the client resumed at the compact summary above it, and sent the rows hanging below the summary, not those
    bridged to it)."""
    cur, seen = e, set()
    while cur is not None and _row_key(cur) not in seen:
        t = cur.type
        if t == "user" or (t == "assistant" and not _silent(cur)) or (t == "system" and cur.kind == MESSAGE):
            return cur
        seen.add(_row_key(cur))
        p = _parent(cur, links)
        cur = by_id.get(p) if p is not None else None
    return None if strict else e


def _silent(e: Entry) -> bool:
    """A response line the client's walk to a message passes (formats.claude: ``SILENT_RESPONSE``)."""
    return e.extra is not None and e.extra.get(SILENT_RESPONSE, False)


def _parent(e: Entry, links: dict | None) -> str | None:
    """``e``'s parent as the client links it: after its re-links past progress lines and a compaction fold's
    (``links``: chain's ``spliced``, or ``_fold``'s, which holds those too)."""
    return links.get(e.id if e.id is not None else e, e.parent) if links else e.parent


def _beside(e: Entry) -> bool:
    """A line the client reads as standing beside a response (attachments, system lines, meta
    prompts): not a turn of its own."""
    t = e.type
    if t == "attachment":
        return True
    if t == "system":
        return e.kind != BOUNDARY
    return t == "user" and bool(e.get("is_meta")) and not e.results


def _in_batch(e: Entry, key) -> bool:
    """A line of response ``key``'s batch: its own lines, results, meta prompts, attachments, system lines."""
    t = e.type
    if t == "assistant":
        return key is not None and e.msg_key == key
    if t == "user":
        return bool(e.get("is_meta")) or bool(e.results)
    if t == "attachment":
        return True
    return t == "system" and e.kind != BOUNDARY


def _continues(row: Entry, cp: Entry, by_id: dict, through_batch: bool, links: dict | None = None,
               direct: bool = True) -> bool:
    """Whether the last row goes on from the checkpoint: the checkpoint is above it, or (a batch of
    parallel calls) the row hangs off another line of the response whose results the checkpoint
    closed. The client's test, in the rows of the main side."""
    def above_of(e: Entry):
        p = _parent(e, links)
        return by_id.get(p) if p is not None else None

    y = None
    k: tuple = ()
    if through_batch:
        seen: set = set()
        q, walked = cp, None
        while q is not None and _beside(q) and q.id not in seen:
            seen.add(q.id)
            walked = q
            q = above_of(q)
        if q is not None and q.type == "user" and q.results:
            k = tuple(r.id for r in q.results)
            y = above_of(q)
        elif walked is None:
            y = q
    calls = tuple(c.id for c in y.calls) if y is not None and y.type == "assistant" else ()
    key = y.msg_key if calls else None
    above: set = set()
    if key is not None:  # the response's lines above y (and what sits between them)
        g = above_of(y)
        while g is not None and g.id not in above and g is not y and _in_batch(g, key):
            above.add(g.id)
            g = above_of(g)
    walked_ids: set = set()
    below = None  # the row walked just before (below) the current one
    sibling = False
    v = row.id
    first = row if v is None else None  # a row whose uuid is no string (in no map): walked from itself
    while first is not None or (v is not None and v not in walked_ids):
        if first is not None:
            o, first = first, None
        else:
            if direct and v == cp.id:
                return True
            walked_ids.add(v)
            o = by_id.get(v)
        if key is not None and o is not None:
            if sibling and o is y:
                return True
            if o.type == "assistant" and o is not y and o.msg_key == key and o.calls:
                if o.id in above:
                    return True
                sibling = True
            elif not _in_batch(o, key):
                sibling = False
        if y is not None and o is y and below is not None and any(x in calls for x in k):
            mine = [r.id for r in below.results] if below.type == "user" else []
            if any(x in calls and x not in k for x in mine):
                return True
        below = o
        v = _parent(o, links) if o is not None else None
    return False


# Progress lines (older clients wrote one per tool's progress, most of a long session's lines) are no rows: the client
# reads them out of the links as it loads the file, line by line (2.1.330, read in its code: its map of progress
# lines, uuid -> the parent the line names, or that parent's own where the line names a progress line read before it;
# a row read later whose parent, a string JavaScript takes for true, is in that map is re-linked to the parent it
# holds). So a row whose parent is a progress line written after it has lost its parent (bridged by time), and a
# progress line that shares a row's uuid takes that row's children read after it (judged:
# tests/test_claude_progress_lines.py). ``chain`` gives the rows it re-links (``spliced``), which every parent link
# of the client's rows is read through (``_parent``).
_NOT_LINKS = frozenset((FALSY_PARENT, BAD_PARENT))  # the marks of a parent that is no string: never in that map


_NONE = object()


def _past_progress(links: dict, p):
    """What the client's map of progress lines (``links``) holds for parent ``p`` (a string JavaScript takes for true;
    one that is no string, its mark, never is looked up), or ``_NONE``."""
    return links.get(p, _NONE) if links and type(p) is str and p and p not in _NOT_LINKS else _NONE


def _read_progress(links: dict, uuid: str, p) -> None:
    """A progress line read into the client's map of them (``links``): its uuid -> the parent it names, or what the map
    holds for that parent."""
    to = _past_progress(links, p)
    links[uuid] = p if to is _NONE else to

BRIDGE_MS = 5000  # how much older than a line with a lost parent the line it is bridged to may be
_BRIDGED_TYPES = frozenset(("user", "assistant", "attachment", "system"))  # the client's chain rows


class _Bridge:
    """The client's way across a lost parent: of the lines not yet on the chain (user, assistant,
    attachment and system lines, not file snapshots), the one with the latest timestamp not after
    the line's own; among lines of the same millisecond, the first in the file. Built once, on
    the first lost parent; each later one costs a bisection (passed-over lines are skipped for
    good, as the client does)."""

    def __init__(self, by_id: dict, odd: list | None = None, side=False):
        rows = []
        for pos, e in enumerate(chain_rows(by_id.values(), odd or ())):
            ts = e.ts
            if ts is None or e.type not in _BRIDGED_TYPES:
                continue
            if side_of(e) != side:  # the rows of the line's own key (judged: judge fuzz seed 287, case 0058)
                continue
            if e.type == "system" and e.get("subtype") == "file_snapshot":
                continue
            rows.append((round(ts * 1000), -pos, e))
        rows.sort(key=lambda r: (r[0], r[1]))
        self.times = [r[0] for r in rows]
        self.rows = [r[2] for r in rows]
        self.prev = list(range(len(rows)))  # skip pointers over lines already on the chain

    def before(self, e: Entry, seen: set) -> Entry | None:
        if e.ts is None:
            return None
        t = round(e.ts * 1000)
        k = bisect_right(self.times, t)
        h = k - 1
        prev, rows = self.prev, self.rows
        while h >= 0:
            q = prev[h]
            if q != h:
                h = q
            elif _row_key(rows[h]) in seen:
                prev[h] = h - 1
                h -= 1
            else:
                break
        z = k - 1
        while z > h:  # compress the path walked
            q = prev[z]
            prev[z] = h
            z = q
        if h < 0 or t - self.times[h] > BRIDGE_MS:
            return None
        return rows[h]


def sent_entries(entries: list[Entry], leaf: list | None = None, foreign=None) -> list[Entry]:
    """The message entries Claude Code sends, in its order (rules 1–4): chain order, each
    assistant message's lines together, its results gathered right after it. ``leaf``, when given, gets the row the
    client resumes at (the chain's last) appended, the function that tells a line's place in the client's rows, and
    whether the rows the client puts after an unanswered user leaf (``_turn_tail``) hold an attachment (its last row
    is then one, rendered or not). ``foreign(model)``, when given: whether the client drops the thinking of a line
    that model wrote (rule 57, where it talks to another host), which it does before it merges a response's lines
    (``merged_order``)."""
    rows: dict[str, Entry] = {}
    counts: list = []
    below: list[Entry] = []  # the rows below an unanswered leaf: after everything else, as the client puts them
    spliced: dict = {}  # the rows re-linked past progress lines: their parents as the client reads them (_parent)
    seq = chain(entries, rows=rows, counts=counts, tail=below, spliced=spliced)
    if not seq:
        return []
    # responses and results are gathered from every line, a subagent's too, as the client recovers a parallel batch
    # (judged: a call line marked as a subagent's is sent with its response); a subagent's own lines share no message
    # or tool id with the main side's
    main = entries
    # after a compact boundary, the lines from it on and the chain's lines before it (a boundary's kept
    # messages, lines bridged to); a chain that starts at its first prompt reads every line, wherever the
    # prompt was written (judged: a prompt line written after its turn's results still has them gathered)
    start = seq[0].index if seq[0].kind == BOUNDARY else 0
    early = {e.index for e in seq if e.index < start}
    place = _index  # where a line stands in the client's rows
    if len(rows) != counts[0]:
        # a line written twice (one uuid): the client holds one row per uuid, the last one, at the first
        # one's place (judged: a result line written again is gathered in its first place); rows before a
        # compact boundary that lists its kept messages are gone (_fold)
        if counts[1] != counts[0]:  # a uuid on two lines (not only rows a fold dropped)
            place = row_place(main)
        main = _cut(main, start, early, rows)
        if place is not _index:
            main.sort(key=place)
    elif start:
        main = _cut(main, start, early, None)
    groups: dict[str, list[Entry]] = {}
    holders: dict[int, list[Entry]] = {}  # call entry index -> entries holding results for its calls
    latest: dict[str, Entry] = {}  # call id -> the last entry that made a call with it, so far
    pending: list[Entry] = []  # results that came before any call of their id
    hanging: list[Entry] = []  # rendered attachments and meta lines (the client's recovery may put them in: _Hanging)
    for e in main:
        if e.kind != MESSAGE:
            continue
        if e.role == "assistant":
            if e.msg_key is not None:
                groups.setdefault(e.msg_key, []).append(e)
            for c in e.calls:
                latest[c.id] = e
        elif e.type == "attachment" or e.type == "system" or (not e.results and e.get("is_meta")):  # _hangs, inline
            hanging.append(e)
        if e.results:
            for r in e.results:
                owner = latest.get(r.id)  # a reused id: the result answers the call made last before it
                if owner is not None:
                    holders.setdefault(owner.index, []).append(e)
                else:
                    pending.append(e)
    if pending:  # a result written before its call (lines out of order): the first call of its id
        first: dict[str, Entry] = {}
        for g in main:
            if g.role == "assistant":
                for c in g.calls:
                    first.setdefault(c.id, g)
        for e in pending:
            for r in e.results:
                owner = first.get(r.id)
                if owner is not None:
                    holders.setdefault(owner.index, []).append(e)
    out: list[Entry] = []
    done: set[int] = set()
    chain_pos: dict = {}  # line -> its place in the chain (built by _group on first need)
    later_place = _LaterLines(seq, place)  # (_group's and _order_answers')
    # (chain place, place in the client's rows, lines): a response's results (or lines, _merge_stops) held until the
    # chain passes that place
    deferred: list = []
    chained = None  # the call ids the chain's own lines answer (built on first need)
    batched = None  # the uuids of the response lines of a truthy message.id (built on first need)
    hang = _Hanging(seq, rows, hanging, chain_pos, spliced) if hanging else None
    early = None  # result lines on the chain before their response, and what the client moves with them
    for pos, e in enumerate(seq):
        while deferred and deferred[0][0] < pos:
            out.extend(deferred.pop(0)[2])
        if hang is not None and pos and hang.anchored:
            out.extend(hang.after(seq[pos - 1], done))
        if e.kind != MESSAGE or e.index in done:
            continue
        if e.role != "assistant" or _silent(e):
            if e.results and e.type == "user" and _ahead(e, latest, done):
                if early is None:
                    early = _EarlyResults(seq, groups)
                if early.take(e, pos, done):
                    continue  # sent after its response (_EarlyResults)
            # (a silent response on the chain gathers none of its batch's other lines, nor their results: judged,
            # judge fuzz seed 908, case 0109, hooks.jsonl's first call line of two given the content ["a\udfffb"])
            done.add(e.index)
            out.append(e)
            if early is not None and e.role == "assistant" and e.msg_key in early.rows:
                out.extend(early.rows.pop(e.msg_key))
            continue
        cut: list = []
        group = _group(e, groups, done, chain_pos, seq, later_place, holders, cut, foreign)
        answers: list[Entry] = []
        for g in group:
            done.add(g.index)
            if g.calls and g.get(FALSY_MESSAGE_ID):
                # a line of calls whose message.id is falsy: sent as a line of an id of its own, but the client's
                # recovery of a parallel batch (D_r) passes over it, so a result of its calls off the chain is gathered
                # only under a line of a batch; with no result among the rows, heal leaves the line out (Jie), unless
                # it is the last response's (read in the client's code; judge fuzz seed 1025, case 0110, rule 34)
                out.append(g)
                if batched is None:
                    batched = {x.id for x in main if x.role == "assistant" and x.msg_key is not None and x.id is not None
                               and not x.get(FALSY_MESSAGE_ID)}
                for h in holders.get(g.index, ()):
                    if h.index not in done and _parent(h, spliced) in batched:
                        done.add(h.index)
                        answers.append(h)
                continue
            if g.calls and _falsy_id(g) and g is not seq[-1]:  # (the leaf is sent: seed 219)
                if chained is None:
                    chained = {r.id for x in seq for r in x.results}
                if not any(c.id in chained for c in g.calls):
                    continue  # the client leaves it out, and its results with it (rule 34)
            out.append(g)
            for h in holders.get(g.index, ()):
                if h.index not in done:
                    done.add(h.index)
                    answers.append(h)
        if hang is not None and not e.get(FALSY_MESSAGE_ID) and any(g.calls for g in group):
            for x in hang.recovered(e, group, answers, pos):
                if x.kind == MESSAGE and x.index not in done:
                    done.add(x.index)
                    answers.append(x)
        ahead = early.rows.pop(e.msg_key, None) if early is not None and e.msg_key is not None else None
        if ahead and cut:
            out.extend(ahead)
        elif ahead:
            _placed(chain_pos, seq)
            last = max(later_place.row(g, pos, chain_pos) for g in group)
            if len(answers) > 1:
                _order_answers(answers, pos, chain_pos, later_place)
            k = sum(1 for h in answers if later_place.row(h, pos, chain_pos) < last)
            answers[k:k] = ahead
        if cut:
            # the response's later lines make a message of their own after a prompt: its results stand where the
            # client's rows put them, each sent there (or, out of place, left out by the client's pairing: heal); later
            # lines all off the chain are that message at their place (a line on the chain makes it when it comes)
            first, left = cut[0]
            if not any(k[1] == 1 for k, _ in left):
                rest = merged_order([g for _, g in left], foreign)
                deferred.append((first[0] - 1, first, rest))
                for g in rest:
                    done.add(g.index)
                    for h in holders.get(g.index, ()):
                        if h.index not in done:
                            done.add(h.index)
                            answers.append(h)
            else:
                # the client's recovery of the batch, at its first line, takes the results off the chain of the calls
                # of its later lines too, by file position: one that comes before its call is then an orphan there
                # (judge fuzz seed 1146, case 0086)
                for k, g in left:
                    if k[1] != 1:
                        continue
                    for h in holders.get(g.index, ()):
                        if h.index not in done and h.index not in chain_pos:
                            done.add(h.index)
                            answers.append(h)
            _at_rows(answers, pos, chain_pos, later_place, deferred)
            continue
        if len(answers) > 1 and not ahead:
            _order_answers(answers, pos, chain_pos, later_place)
        if not _interrupted(group, pos, chain_pos, seq):
            out.extend(answers)
        else:
            # the client merges the response's later lines back into its first message, but each result stays at its
            # row: one before the other response's line is sent after the merged message, one after it is not (judge
            # fuzz seeds 146 and 1150, case 0097: block_order.jsonl's text line given the previous response's id)
            _at_rows(answers, pos, chain_pos, later_place, deferred)
    for _end, _at, answers in deferred:
        out.extend(answers)
    if hang is not None and hang.anchored:
        out.extend(hang.after(seq[-1], done))
    if early is not None:
        for ahead in early.rows.values():  # (a response passed over without its group being made: at the end)
            out.extend(ahead)
    if below:
        out += [e for e in below if e.kind == MESSAGE and e.index not in done]
    if leaf is not None:
        leaf.extend((seq[-1], place, any(e.type == "attachment" for e in below)))
    return out


def _ahead(e: Entry, latest: dict, done: set) -> bool:
    """Whether a result of ``e`` answers a call whose last line is not sent yet (cheap: ``_EarlyResults`` says more)."""
    for r in e.results:
        o = latest.get(r.id)
        if o is not None and o.index not in done:
            return True
    return False


_BLOCK, _RESULT, _DELIVERY, _FENCE = range(4)


def _response_key(e: Entry):
    """The response a line belongs to as the client's regrouping reads it (``UCe``): a response line's message.id when
    it is a string JavaScript reads as true (a falsy one is stamped with an id of the line's own)."""
    return e.msg_key if e.type == "assistant" and e.msg_key and not e.get(FALSY_MESSAGE_ID) else None


def _row_class(x: Entry, key) -> int:
    """What a row is to the response ``key`` in the client's regrouping (``yXt``): a line of it; a user line of
    results; a row it moves over (an attachment, a system line but a compact boundary or a local command's, a user
    line the client writes beside a turn: ``turnCompanion`` or a ``sourceToolUseID``); or a fence (another
    response's line, a prompt, any other user line)."""
    t = x.type
    if t == "assistant":
        return _BLOCK if key is not None and _response_key(x) == key else _FENCE
    if t == "user":
        if x.results:
            return _RESULT
        if x.kind != MESSAGE and x.get(UNREADABLE_CONTENT):
            return _DELIVERY  # (a line the client does not load: no row of its list)
        return _DELIVERY if x.get(COMPANION) else _FENCE
    if t == "system":
        return _FENCE if x.kind == BOUNDARY or x.get("subtype") == "local_command" else _DELIVERY
    return _DELIVERY


class _EarlyResults:
    """Result lines the chain puts before the response that made their calls, which the client moves after it (read
    in its code, 2.1.330: ``regroupSplitResponses``, run on the rows when it loads a transcript, after its chain walk
    and its recovery of parallel batches): a user line whose results all answer calls of one response (no call id
    in two responses) whose first line comes later, with no fence between them but other responses' lines (no
    prompt), and the rows it moves over right after it (rendered attachments, a turn's companion lines), go after
    the response's lines, before the results after its last line; not to a response a fence splits (rule 45). ctxtool
    sent each where the chain put it, so their calls got the client's "missing" result (judge fuzz seed 1013, case
    0173: a result line given an attachment's uuid, which the walk reached before the call). ``rows``: response key
    -> the rows to send after it."""

    def __init__(self, seq: list, groups: dict):
        self.seq = seq
        self.rows: dict = {}
        self.first: dict = {}
        self.last: dict = {}
        self.count: dict = {}
        owner: dict = {}
        for q, x in enumerate(seq):
            k = _response_key(x)
            if k is None:
                continue
            self.first.setdefault(k, q)
            self.last[k] = q
            self.count[k] = self.count.get(k, 0) + 1
        for k in self.first:  # every line of a response, off the chain too (the client's recovery puts them in)
            for g in groups.get(k, ()):
                if _response_key(g) != k:
                    continue
                for c in g.calls:
                    o = owner.get(c.id, k)
                    owner[c.id] = k if o == k else None
        self.owner = owner
        self.fenced: dict = {}

    def _fenced(self, key) -> bool:
        f = self.fenced.get(key)
        if f is None:
            first, last = self.first[key], self.last[key]
            f = last - first + 1 != self.count[key] and any(
                _row_class(self.seq[q], key) == _FENCE for q in range(first + 1, last))
            self.fenced[key] = f
        return f

    def take(self, e: Entry, pos: int, done: set) -> bool:
        """Whether ``e`` (at chain place ``pos``) goes after its response; if so it and the rows that go with it are
        held in ``rows`` and noted in ``done``."""
        keys = {self.owner.get(r.id) for r in e.results}
        if len(keys) != 1:
            return False
        key = keys.pop()
        first = self.first.get(key) if key is not None else None
        if first is None or pos >= first or self._fenced(key):
            return False
        seq = self.seq
        if any(seq[q].type != "assistant" and _row_class(seq[q], key) == _FENCE for q in range(pos + 1, first)):
            return False
        moved = [e]
        q = pos + 1
        while q < first and _row_class(seq[q], key) == _DELIVERY:
            moved.append(seq[q])
            q += 1
        held = self.rows.setdefault(key, [])
        for x in moved:
            done.add(x.index)
            if x.kind == MESSAGE:
                held.append(x)
        return True


class _Hanging:
    """The client's recovery of the rows that hang off a parallel batch (``D_r`` in 2.1.330, read in its code): for a
    response with calls, a run of rows off the chain (attachments, system lines but a compact boundary, meta user lines
    without results; each the only row off the chain below the one before, on the same side) that hangs below one of
    its lines, or below a result line under one of them, is put in with the response's results by file place; such a
    run below an attachment, system or meta line on the chain within the response's span (its lines, then results,
    meta lines, attachments and system lines) comes right after that line. A run that branches, or meets a row of
    another kind or one taken already, is not put in. Built when the file has such rows off the chain."""

    def __init__(self, seq: list, rows: dict, candidates: list, chain_pos: dict, spliced: dict | None = None):
        self.seq, self.rows, self.candidates, self.chain_pos = seq, rows, candidates, chain_pos
        self.spliced = spliced  # (the rows re-linked past progress lines: chain)
        self.live: bool | None = None  # (a candidate off the chain: found on first need)
        self.taken: set = set()
        self.children: dict | None = None
        self.anchored: dict = {}  # index of a chain line -> the rows put in right after it

    def _kids(self, uuid) -> list:
        if self.children is None:
            self.children = {}
            for r in self.rows.values():
                p = _parent(r, self.spliced)
                if p is not None and type(p) is str:
                    self.children.setdefault(p, []).append(r)
        return self.children.get(uuid, ())

    def _run(self, first: Entry, anchor: Entry) -> list:
        out, y, side, taken, seen = [], first, side_of(anchor), self.taken, set()
        while y is not None:
            if y.id in taken or y.id in seen or side_of(y) != side or not _hangs(y):
                return []
            seen.add(y.id)
            out.append(y)
            k = [c for c in self._kids(y.id) if c.id not in taken]
            if len(k) > 1:
                return []
            y = k[0] if k else None
        return out

    def _below(self, anchor: Entry) -> list:
        got = []
        if anchor.id is None:
            return got
        for c in list(self._kids(anchor.id)):
            run = self._run(c, anchor)
            self.taken.update(x.id for x in run)
            got += run
        return got

    def recovered(self, e: Entry, group: list, answers: list, pos: int) -> list:
        chain_pos, seq = self.chain_pos, self.seq
        if self.live is None:
            _placed(chain_pos, seq)
            self.live = any(x.index not in chain_pos for x in self.candidates)
            if self.live:
                self.taken = {x.id for x in seq}
        if not self.live:
            return []
        ids = {g.id for g in group}
        self.taken.update(x.id for x in group)
        self.taken.update(h.id for h in answers)  # (the results recovered before: rows of the client's chain now)
        got = []
        for x in group + [h for h in answers if _parent(h, self.spliced) in ids or self._by_call_id(h)]:
            got += self._below(x)
        # the chain's attachment, system and meta lines within the response's span: runs below them follow them
        end = max(chain_pos.get(g.index, pos) for g in group) + 1
        while end < len(seq) and _in_span(seq[end], e.msg_key):
            end += 1
        for x in seq[pos + 1:end]:
            if _hangs(x):
                run = self._below(x)
                if run:
                    self.anchored[x.index] = run
        return got

    def _by_call_id(self, h: Entry) -> bool:
        """A result line the client ties to the response by its call ids, not its parent (``D_r``: the row above it
        makes not all of its calls); a run below it is put in too (judged: a meta line below a result line that repair
        left off the chain, under the prompt's last attachment)."""
        p = _parent(h, self.spliced)
        p = self.rows.get(p) if type(p) is str else None
        made = {c.id for c in p.calls} if p is not None else ()
        return not all(r.id in made for r in h.results)

    def after(self, e: Entry, done: set) -> list:
        run = self.anchored.pop(e.index, None)
        if not run:
            return []
        out = [x for x in run if x.kind == MESSAGE and x.index not in done]
        done.update(x.index for x in out)
        return out


def _placed(chain_pos: dict, seq: list) -> dict:
    """``chain_pos`` (a line's index -> its place in the chain ``seq``), filled on first need: the functions of
    ``sent_entries`` that need it share one."""
    if not chain_pos:
        chain_pos.update((x.index, k) for k, x in enumerate(seq))
    return chain_pos


def _hangs(e: Entry) -> bool:
    """A row the client's recovery of a batch puts in below it (``zL``): an attachment, a system line but a compact
    boundary, a meta user line without results."""
    t = e.type
    return t == "attachment" or (t == "system" and e.kind != BOUNDARY) or (t == "user" and not e.results and bool(e.get("is_meta")))


def _in_span(e: Entry, key) -> bool:
    """A row the client's span of a batch goes on over (``xPe``): a line of the response, a user line of results or a
    meta one, an attachment, a system line but a compact boundary."""
    if e.type == "assistant":
        return key is not None and e.msg_key == key
    return bool(e.results) or _hangs(e)


def _order_answers(answers: list[Entry], pos: int, chain_pos: dict, later: _LaterLines) -> None:
    """The lines holding a response's results, in the order the client sends their results (judge fuzz seed 204, case
    0006; 15 probes): the lines on the chain in chain order, each line off it put in by file position before the first
    line of the chain after the response's first (``pos``) that comes after it in the file, as the client recovers a
    parallel batch's lines (``_group``), whatever that chain line is. Results written in file order after their calls,
    as the client writes them, come out in file order."""
    _placed(chain_pos, later.seq)
    answers.sort(key=lambda h: later.row(h, pos, chain_pos))


def _falsy_id(e: Entry) -> bool:
    """A response line whose uuid JavaScript reads as false (``""``, 0, false, null or none): the client leaves such a
    line of calls out unless a line on the chain answers one of them (rule 34, judge fuzz seed 199; probed, the rule
    behind it not read in the client's code)."""
    return e.id == "" or (e.extra is not None and bool(e.extra.get(FALSY_ID)))


def _at_rows(answers: list[Entry], pos: int, chain_pos: dict, later: _LaterLines, deferred: list) -> None:
    """Each of a response's result lines held in ``deferred`` (kept in order) until the chain passes the place the
    client's rows give it (``later.row``)."""
    for h in answers:
        at = later.row(h, pos, chain_pos)
        deferred.append((at[0] - 1, at, [h]))
    deferred.sort(key=lambda d: d[:2])


def _interrupted(group: list[Entry], pos: int, chain_pos: dict, seq: list) -> bool:
    """Whether a line of another response stands on the chain between a response's first and its last line (judge fuzz
    seed 146, probed): the client merges the later lines back into the response, but its results stay at their rows,
    so a result after that other line is not in the message after the response, and its call gets the client's
    "missing" result (``heal``)."""
    if len(group) < 2 or not chain_pos:
        return False
    key = group[0].msg_key
    last = max((chain_pos[g.index] for g in group if g.index in chain_pos), default=pos)
    for q in range(pos + 1, last):
        o = seq[q]
        if o.kind == MESSAGE and o.role == "assistant" and (o.msg_key is None or o.msg_key != key):
            return True
    return False


def _cut(main: list[Entry], start: int, early: set, rows: dict | None) -> list[Entry]:
    """The lines of ``main`` from index ``start`` on and those in ``early``; given ``rows``, only each uuid's row (and
    the lines without a uuid). In C where it is built (``_scan.Rows.kept``)."""
    r = index_passes()
    got = r.kept(main, start, early, rows) if r is not None and type(main) is list and type(start) is int else None
    if got is not None:
        return got
    if rows is None:
        return [e for e in main if e.index >= start or e.index in early]
    return [e for e in main if (e.index >= start or e.index in early) and (e.id is None or rows.get(e.id) is e)]


def _index(e: Entry) -> int:
    return e.index


def row_place(entries: list[Entry]):
    """The function that tells a line's place in the client's rows (an entry index): the first line with its uuid,
    where the client holds one row per uuid, the last line written with it. A user line whose content the client
    cannot read gives its uuid no place while a later line of that uuid can (judge fuzz seed 854, case 0185: a result
    line's first copy damaged, written again whole at the end, is gathered at the later line)."""
    first: dict = {}
    unread: dict = {}
    for e in entries:
        if e.id is not None and e.type in _BRIDGED_TYPES:  # (a line of another type, progress too, is no row)
            if e.extra is not None and e.extra.get(UNREADABLE_CONTENT):
                unread.setdefault(e.id, e.index)
            else:
                first.setdefault(e.id, e.index)
    for k, at in unread.items():
        first.setdefault(k, at)

    def place(e: Entry) -> int:
        return e.index if e.id is None else first.get(e.id, e.index)
    return place


def _group(e: Entry, groups: dict, done: set, chain_pos: dict, seq: list, later: _LaterLines, holders: dict,
           cut: list, foreign=None) -> list[Entry]:
    """The lines of ``e``'s response, as the client recovers a parallel batch: ``e`` (its first
    line on the chain), then its other lines on the chain in chain order, with the lines off the
    chain put in by file position before the first later chain line that comes after them in the
    file, whatever that chain line is (a probe with an attachment on the chain between the batch's
    call lines, 2026-11-28); tool calls last. File positions are rows' places (``later.where``): a line
    written twice stands where its uuid was first written (judge fuzz seed 842, case 0125).
    Lines after a prompt that stops the client's merge (``_merge_stops``) are left for a message of their own: ``cut``
    then gets the place, in ``_group``'s order, of the first of them, and their places and lines."""
    if e.msg_key is None:
        return [e]
    members = groups.get(e.msg_key) or [e]
    if len(members) == 1:
        return [e]
    pos = _placed(chain_pos, seq).get(e.index, -1)
    keyed = [(later.row(g, pos, chain_pos), g) for g in members if g is not e and g.index not in done]
    keyed.sort(key=lambda kg: kg[0])
    stop = _merge_stops(e, pos, keyed, seq, holders, done, later) if keyed else None
    if stop is not None:
        cut.append((keyed[stop][0], keyed[stop:]))
        keyed = keyed[:stop]
    return merged_order([e] + [g for _, g in keyed], foreign)


def _stops_a_merge(x: Entry) -> bool:
    """A row whose user message can stop the client's merge of a response's lines: a prompt or a meta line (with no
    results; an attachment's rendering does not, probed on six kinds)."""
    return x.kind == MESSAGE and x.role == "user" and not x.results and x.get("context") is None


# a response of more lines than this (one a block: a real one has a few dozen at most) is a damaged file's, whose
# lines share a message id by accident: its lines are gathered as before, without looking for a prompt between them,
# so that a file whose every response has one id is read in linear time, not in the square of its lines
MERGE_STOPS_LINES = 256


def _merge_stops(e: Entry, pos: int, keyed: list, seq: list, holders: dict, done: set, later: _LaterLines) -> int | None:
    """Where the client stops merging response ``e``'s later lines into its message (judge fuzz seed 1003, case 0174;
    read in the client's code and probed on 16 shapes): it merges a response's line into the last message of the same
    ``message.id``, over other responses and user messages that hold a tool result, but a user message with none (a
    prompt, a meta line) in between makes the line a message of its own. User lines that follow one another are one
    message, looked at once, when the next response comes. The rows are those of the batch's place: the chain's, and
    the lines off it (the response's, their results) put in by file position, up to the batch's end (``_in_batch``).
    The index in ``keyed`` of the first line not merged, or None (the first message takes every line)."""
    if len(keyed) > MERGE_STOPS_LINES:
        return None
    key = e.msg_key
    end = max((k[0] for k, _ in keyed if k[1] == 1), default=pos) + 1
    n = len(seq)
    while end < n and _in_batch(seq[end], key):
        end += 1
    if not any(_stops_a_merge(seq[q]) for q in range(pos + 1, min(end, n))):
        return None
    member = {g.index: i for i, (_, g) in enumerate(keyed)}
    rows = [((q, 1, 0), seq[q]) for q in range(pos + 1, min(end, n)) if seq[q].index not in member]
    rows += [(k if k[1] == 1 else (min(k[0], end), 0, k[2]), g) for k, g in keyed]
    on_chain = {x.index for _, x in rows if x.index not in member}
    for g in [e] + [g for _, g in keyed]:
        for h in holders.get(g.index, ()):
            if h.index not in done and h.index not in on_chain and h.index not in member:
                at = later.where(h)
                rows.append(((min(later.after(at, pos), end), 0, at), h))
    rows.sort(key=lambda kx: kx[0])
    keys = {key}  # the responses whose message the client may still merge into
    # the last message: a response, a user message not looked at yet ("open", ``held``: it holds a result), or one looked at
    tail, held = "assistant", False
    for _, x in rows:
        if x.kind != MESSAGE:
            continue
        if x.role == "assistant":
            if _silent(x):
                continue
            if tail == "open":
                if not held:
                    keys.clear()
                tail = "seen"
            if x.index in member:
                if key not in keys:
                    return member[x.index]
                continue
            if x.msg_key is None or x.msg_key not in keys:
                if x.msg_key is not None:
                    keys.add(x.msg_key)
                tail = "assistant"
        elif x.role == "user" and x.get("context") is None:
            if tail == "assistant":
                tail, held = "open", bool(x.results)
            elif tail == "open":
                held = held or bool(x.results)
    return None


class _LaterLines:
    """Where the client puts a response's line that is off the chain (``_group``), or a line holding its results
    (``_order_answers``): ``after(at, pos)`` is the chain place of the first line after chain place ``pos`` whose file
    position (``where``) is after ``at``, or the chain's length. A few lines are walked; past them a table of the
    positions' maxima over spans of 2**k lines (built once, on first need) answers in log time, so that many lines far
    from their response (a damaged file) do not each walk the rest of the chain."""

    WALK = 64

    def __init__(self, seq: list, where):
        self.seq, self.where, self.levels = seq, where, None

    def row(self, e: Entry, pos: int, chain_pos: dict) -> tuple:
        """Where ``e`` stands in the client's rows around a response whose first line is at chain place ``pos``:
        ``(its chain place, 1, 0)`` on the chain, else ``(the chain place it is put in before, 0, its file place)``."""
        q = chain_pos.get(e.index)
        if q is not None:
            return (q, 1, 0)
        at = self.where(e)
        return (self.after(at, pos), 0, at)

    def after(self, at: int, pos: int) -> int:
        seq, where = self.seq, self.where
        n, q = len(seq), pos + 1
        stop = min(n, q + self.WALK)
        while q < stop and where(seq[q]) < at:
            q += 1
        if q < stop or q == n:
            return q
        levels = self.levels or self._built()
        for k in range(len(levels) - 1, -1, -1):  # (blocks of 2**k lines that all come before ``at``, skipped)
            if q + (1 << k) <= n and levels[k][q] < at:
                q += 1 << k
        return q

    def _built(self) -> list:
        w = [self.where(e) for e in self.seq]
        levels = [w]
        k = 1
        while (1 << k) <= len(w):
            prev, half = levels[-1], 1 << (k - 1)
            levels.append([max(prev[i], prev[i + half]) for i in range(len(w) - (1 << k) + 1)])
            k += 1
        self.levels = levels
        return levels


def merged_order(lines: list[Entry], foreign=None) -> list[Entry]:
    """A response's lines in the order the client sends their blocks (rule 4): it merges the lines one at a time, and
    after each merge moves the calls after the other blocks when a block other than a call follows a call, unless a
    thinking block is followed by calls and then by another thinking block (interleaved thinking, whose signatures
    cover that order). Read in the client's code (2.1.330: its merge of one response's messages), judged on recorded
    responses (thinking, call, thinking, call is sent as written; thinking, call, text, call as thinking, text, call,
    call). Lines of one block each, as the client writes them; a line of several is taken as one block of its kind. A
    line of thinking written with no model (rule 43), or by a model ``foreign`` names (rule 57), gives no block: the
    client takes such thinking out of each line before it merges them (judge fuzz seed 1213, case 0090: with a
    response's first thinking line so written, its other thinking line goes before its first call)."""
    out: list[Entry] = []
    for g in lines:
        out.append(g)
        if len(out) > 1 and _calls_go_last(out, foreign):
            out = [x for x in out if not x.calls] + [x for x in out if x.calls]  # (the order kept within each kind)
    return out


def _calls_go_last(lines: list[Entry], foreign=None) -> bool:
    after = skip = prev_thinking = call_since = False
    seen_call = False
    for x in lines:
        if x.calls:
            seen_call = call_since = True
            continue
        thinking = _thinking_line(x)
        if thinking and (not x.model or (foreign is not None and foreign(x.model))):  # (taken out before the merge)
            continue
        after = after or seen_call
        if thinking and prev_thinking and call_since:
            skip = True
        prev_thinking, call_since = thinking, False
    return after and not skip


def _thinking_line(e: Entry) -> bool:
    """A response line of thinking (signed, or with text; the client's omitted display writes "" and a signature)."""
    if e.results or e.blank_text:
        return False
    k = e.kinds
    return bool(e.signed_thinking or k.get("thinking")) and not k.get("text")


SERVER_CALLS = ("server_tool_use", "mcp_tool_use")  # calls the API itself runs: their results stand in the response


def _server_answered(content: list) -> set:
    """The ids a response's own result blocks answer (a block with a string ``tool_use_id`` that is no
    ``tool_result``: a web search's, the advisor's, an MCP server's result)."""
    return {b["tool_use_id"] for b in content if type(b.get("tool_use_id")) is str and b.get("type") != "tool_result"}


def _misplaced(b: dict, answered: set) -> bool:
    """A block the client's pairing takes out of a response: a ``tool_result`` (a result belongs in a user message),
    or a server-side call no result block of the response answers (read in its code, 2.1.332:
    ``ensureToolResultPairing``; judged)."""
    t = b.get("type")
    return t == "tool_result" or (t in SERVER_CALLS and not (type(b.get("id")) is str and b["id"] in answered))


def _holds_misplaced(content: list) -> bool:
    if not any(b.get("type") in _PAIRED_OUT for b in content):  # (the common case: a type test per block)
        return False
    answered = _server_answered(content)
    return any(_misplaced(b, answered) for b in content)


_PAIRED_OUT = frozenset(("tool_result",) + SERVER_CALLS)


def _without_reused_calls(content: list, sent_ids: set) -> list:
    """A response's blocks as the client sends them when some of its calls reuse an id already sent, or it holds
    blocks the pairing takes out (``_misplaced``): those left out ("[Tool use removed]" in the place of one between
    two thinking blocks), "[Tool use interrupted]" for a response left with nothing."""
    seen = set(sent_ids)
    answered = _server_answered(content)
    out = []
    for i, b in enumerate(content):
        gone = _misplaced(b, answered)
        if b.get("type") == "tool_use":
            tid = _tid(b, "id")
            gone = tid in seen
            if not gone:
                seen.add(tid)
        if gone:
            near = (content[i - 1].get("type") if i else None,
                    content[i + 1].get("type") if i + 1 < len(content) else None)
            if near[0] in THINKING_TYPES and near[1] in THINKING_TYPES:
                out.append({"type": "text", "text": TOOL_USE_REMOVED})
            continue
        out.append(b)
    return out or [{"type": "text", "text": TOOL_USE_INTERRUPTED}]


AS_USER = "_as_user"  # a system message's text as the client renders it when it sends it in a user turn (heal)


def heal(messages: list[dict], close_turn: bool = True, lines: bool = False, tools: frozenset = CLIENT_TOOLS,
         turn: set | None = None) -> list[dict]:
    """Rule 5 on Messages-shaped dicts (``{"role", "content"}``): the pairing fixes the client
    makes before it sends. Returns new messages; the input is not changed. ``close_turn``: a
    history that ends with a user message gets the reply "No response requested." (rule 13;
    ``view._closes_turn`` says when). A user message may say how many lines it was made of (``parts``, 1 when
    missing) and whether it is one line whose content is a string (``string``): rule 19. ``lines``: each message's
    ``lines`` go with what is sent of it (joined where messages are joined; ``[]`` on the messages the client adds).
    ``turn``: the lines of the history's last turn (``last_turn``), when known; where the history ends in the last
    response's tool runs, a call of that turn's responses that no result answers anywhere keeps its place with the
    "missing" result, as the last response's open calls get the "interrupted" one (unknown: the last response's only)."""
    msgs: list[dict] = []
    # the history ended with a user message before healing (it may leave that one out: a prompt whose content
    # the client cannot read is still a turn to close), or held no message at all
    ended_user = next((m["role"] == "user" for m in reversed(messages) if m["role"] != "system"), True)
    lead: list[dict] = []  # system messages before any other
    after: dict[int, list] = {}  # id of a message -> the system messages that followed it
    unanswered, present = _unanswered(messages, turn)
    last_kept = None  # the place of the last message sent (found on first need)
    for k, m in enumerate(messages):  # consecutive user messages are one turn; each response stays on its own
        if m["role"] == "system":
            if msgs and msgs[-1]["role"] == "assistant" and last_kept is None:
                last_kept = max((q for q, x in enumerate(messages) if x["role"] != "system" and id(x) not in unanswered
                                 and kept_blocks(x["role"], _blocks(x["content"])) is not None), default=-1)
            if not (msgs and msgs[-1]["role"] == "assistant" and k < last_kept):
                # context the client renders: passed on as it is, after its turn
                kept = _lined({"role": "system", "content": m["content"]}, m, lines)
                if AS_USER in m:
                    kept[AS_USER] = m[AS_USER]
                (after.setdefault(id(msgs[-1]), []) if msgs else lead).append(kept)
                continue
            # between two responses: the client makes it a user message there, its text a reminder, before it pairs
            # the calls, so a call without a result gets the "missing" one in it (judged: a queued command's attachment
            # below a call line whose result line stands before the turn's prompt; responses it leaves out, Jie, are
            # not there)
            # (its text as the client renders it for a user turn where that differs: AS_USER, view._claude_user_run)
            m = dict(m, role="user", content=[{"type": "text", "text": REMINDER_OPEN + m.get(AS_USER, m["content"]) + REMINDER_CLOSE}])
        blocks = kept_blocks(m["role"], _blocks(m["content"], tools))
        if blocks is None or id(m) in unanswered:
            continue
        if m["role"] == "user":
            blocks = loaded(blocks)
        if m["role"] != "user":
            if not blocks:  # a response whose content is an empty list (judged)
                blocks = [{"type": "text", "text": NO_CONTENT}]
            else:  # empty text beside other blocks is left out; text of white space is sent (judged, judge fuzz seed 100)
                blocks = cited([b for b in blocks if not (b.get("type") == "text" and b.get("text") == "")])
        if msgs and msgs[-1]["role"] == m["role"] == "user":
            msgs[-1]["content"] = _bubbled(msgs[-1]["content"], blocks)
            msgs[-1]["_alone"] = False
            if lines:
                msgs[-1]["lines"] = sorted(msgs[-1]["lines"] + list(m.get("lines", ())))
        elif m["role"] == "user":
            msgs.append(_lined({"role": "user", "content": blocks, "_alone": m.get("parts", 1) == 1 and m.get("string", False)}, m, lines))
        else:
            msgs.append(_lined({"role": m["role"], "content": blocks}, m, lines))
    blank_turns: set[int] = set()  # ids of the turns sent as "(no content)" for want of anything else
    for m in msgs:
        # a turn's text that is only white space is left out, and a turn left with nothing is sent as "(no content)";
        # a turn of one line whose content is a string is sent as written, blank or empty (judged: judge fuzz seed 100)
        if m["role"] == "user" and not m.pop("_alone"):
            # (rendered context is kept, white space or not: judge fuzz seed 806, case 0032, a rendering of " ")
            m["content"] = _unblanked(m["content"])
            if not m["content"]:
                m["content"] = [{"type": "text", "text": NO_CONTENT}]
                blank_turns.add(id(m))
    last_assistant = max((k for k, m in enumerate(msgs) if m["role"] == "assistant"), default=-1)
    # the history ends in the last response's tool runs: the client resumes its turn, whose calls are all paired
    in_runs = last_assistant >= 0 and any(b.get("type") == "tool_use" for b in msgs[last_assistant]["content"]) and (
        last_assistant + 1 == len(msgs) or (last_assistant + 2 == len(msgs) and _tool_runs(msgs[-1]["content"])))
    # results present somewhere (``present``, from _unanswered): a call whose result stands elsewhere (not in the next
    # message) keeps its place with the client's "missing" result; a call with no result anywhere is dropped
    out: list[dict] = []
    tail: list[dict] = []
    inserted: dict[int, dict] = {}  # id of a response -> the user message of "missing" results after it
    sent_ids: set = set()
    for k, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        ids = [_tid(b, "id") for b in m["content"] if b.get("type") == "tool_use"]
        reused = {i for i in ids if i in sent_ids}
        if reused or len(set(ids)) < len(ids) or _holds_misplaced(m["content"]):
            # a call id an earlier response (or this one) already used: the client sends neither call nor result; the
            # call is left out, as "[Tool use removed]" between two thinking blocks, and a response left with nothing
            # is "[Tool use interrupted]" (read in its code, ensureToolResultPairing; judged: judge fuzz seed 1011)
            m["content"] = _without_reused_calls(m["content"], sent_ids)
        if reused:
            if k + 1 < len(msgs) and msgs[k + 1]["role"] == "user":
                nxt = msgs[k + 1]
                nxt["content"] = [b for b in nxt["content"]
                                  if not (b.get("type") == "tool_result" and _tid(b, "tool_use_id") in reused)] \
                    or [{"type": "text", "text": NO_CONTENT}]
        blocks = [b for b in m["content"] if b.get("type") == "tool_use"]
        calls = [_tid(b, "id") for b in blocks]
        sent_ids.update(calls)
        nxt = msgs[k + 1] if k + 1 < len(msgs) and msgs[k + 1]["role"] == "user" else None
        answered: set = set()
        emptied = False  # the next turn held only results this response does not answer
        if nxt is not None:
            kept = []
            for b in nxt["content"]:
                if b.get("type") == "tool_result":
                    tid = _tid(b, "tool_use_id")
                    if tid not in calls or tid in answered:
                        continue  # no call before it, or a second result
                    answered.add(tid)
                kept.append(b)
            emptied = not kept and bool(nxt["content"])
            nxt["content"] = kept
        missing = [c for c in calls if c not in answered]
        kept_open = in_runs and _in_turn(m, turn)  # (its calls with no result anywhere get the "missing" one)
        if emptied and (not missing or not (k == last_assistant and k + 2 == len(msgs))
                        and not kept_open and all(c not in present for c in missing)):
            # the client keeps the turn, emptied, unless a call of the response gets a result in it: one whose
            # result stands elsewhere, or any open call of the last response; a call with no result anywhere
            # is dropped before (judged: judge fuzz seed 524, case 0071, the Agent call's result id made [])
            nxt["content"] = [{"type": "text", "text": NO_CONTENT}]
        if not missing:
            continue
        if k == last_assistant and (nxt is None or (k + 2 == len(msgs) and _tool_runs(nxt["content"]))):
            # the session ended in the last response's tool runs (its results, and the client's "Tool loaded." where
            # one keeps a tool reference): its open calls get the client's "interrupted" result after the results
            # (the call's own id, not its key: an id written as an object is sent as that object, judge fuzz seed 720)
            results = [{"type": "tool_result", "content": INTERRUPTED_RESULT, "is_error": True, **_answering(b)}
                       for b, c in zip(blocks, calls) if c in missing]
            if nxt is None:
                tail = [_lined({"role": "user", "content": results}, {}, lines),
                        _lined({"role": "assistant", "content": [{"type": "text", "text": NO_RESPONSE}]}, {}, lines)]
            else:
                at = next((q for q in range(len(nxt["content"]), 0, -1)
                           if nxt["content"][q - 1].get("type") == "tool_result"), 0)
                nxt["content"] = nxt["content"][:at] + results + nxt["content"][at:]
        else:
            gone = set() if kept_open else {c for c in missing if c not in present}
            if gone:
                m["content"] = [b for b in m["content"] if not (b.get("type") == "tool_use" and _tid(b, "id") in gone)]
                if not m["content"] and k > 0 and msgs[k - 1]["role"] == "user" and nxt is not None:
                    # the response gone with its calls, the turn after it meets the turn before: one turn, so no
                    # "(no content)" for an emptied one (judge fuzz seed 800, case 0146: the only call's result id made
                    # 1e400), and its text of white space left out as in any joined turn, even where the line's
                    # content was a string (seed 832, case 0032: the Edit's result written "")
                    nxt["content"] = [] if emptied or id(nxt) in blank_turns else _unblanked(nxt["content"])
            lost = [{"type": "tool_result", **_answering(b), "content": MISSING_RESULT, "is_error": True}
                    for b, c in zip(blocks, calls) if c in missing and c not in gone]
            if lost:
                if nxt is not None:
                    nxt["content"] = lost + nxt["content"]
                else:
                    inserted[id(m)] = _lined({"role": "user", "content": lost}, {}, lines)
    # results in a user message that follows no assistant message
    for k, m in enumerate(msgs):
        if m["role"] == "user" and (k == 0 or msgs[k - 1]["role"] != "assistant"):
            kept = [b for b in m["content"] if b.get("type") != "tool_result"]
            if not kept and m["content"] and k == 0:  # the client's note where a resumed history began
                kept = [{"type": "text", "text": ORPHAN_REMOVED}]
            m["content"] = kept
    for m in lead:
        _add_system(out, m)
    last = None
    for m in msgs + tail:
        if m["content"]:
            out.append(m)
            last = m["role"]
        extra = inserted.get(id(m))
        if extra is not None:
            out.append(extra)
            last = "user"
        for x in after.get(id(m), ()):
            _add_system(out, x)
    # a turn that got no reply: the client closes it; so it does a history of context alone (attachments
    # it renders as system text, judged)
    if close_turn and (last == "user" or (last is None and (lead or ended_user))):
        out.append(_lined({"role": "assistant", "content": [{"type": "text", "text": NO_RESPONSE}]}, {}, lines))
    return out


def _tool_runs(blocks: list) -> bool:
    """Whether a user message's blocks are a response's tool runs: its results, and the client's "Tool loaded." where
    one keeps a tool reference."""
    return all(b.get("type") == "tool_result" or b.get("text") == TOOL_LOADED for b in blocks)


def _bubbled(prev: list, blocks: list) -> list:
    """Two user turns joined, a response between them left out (``_unanswered``; or one the client makes nothing of):
    the later one's renderings of context move up before the earlier one's typed text, to its last result or rendering,
    as the client moves attachments up its rows to the nearest row that is a response or begins with a tool result
    (its reordering of attachments, after it leaves such responses out; judge fuzz seed 1226, case 0121: a file
    attachment's picture below a call whose result line that attachment's uuid took, sent before the turn's prompt).
    A turn holding results keeps its renderings below them."""
    up = [b for b in blocks if type(b) is dict and b.get(RENDERED) is not None]
    if not up or any(type(b) is dict and b.get("type") == "tool_result" for b in blocks):
        return prev + blocks
    k = len(prev)
    while k and not (type(b := prev[k - 1]) is dict and (b.get("type") == "tool_result" or b.get(RENDERED) is not None
                                                         or b.get("text") == TOOL_LOADED)):
        k -= 1
    return prev[:k] + up + prev[k:] + [b for b in blocks if not (type(b) is dict and b.get(RENDERED) is not None)]


def _answering(call: dict) -> dict:
    """The ``tool_use_id`` of a result the client makes for a call (its "interrupted" and "missing" ones): the call's id
    as written, none where the call has none (JavaScript leaves an undefined key out: judge fuzz seed 1201, case 0049,
    a ToolSearch call written without its id, whose "interrupted" result was sent with none; ctxtool sent null)."""
    return {"tool_use_id": call["id"]} if "id" in call else {}


def _unanswered(messages: list[dict], turn: set | None = None) -> tuple[set[int], set]:
    """The ids of the responses that are only calls none of whose results is sent anywhere (and what the client leaves
    out of a response: thinking, blank text): the client leaves their lines out before it joins and pairs the rest
    (``Jie`` in 2.1.330, read in its code), so the turns around such a response are one, and a response it stood
    between and that response's results meet (judge fuzz seed 1025, case 0110). The last response, with only results
    after it, is not one: its open calls get the "interrupted" result; nor then is a response of the last turn
    (``turn``, heal's). And the ids of the results in the user messages (``heal``'s ``present``)."""
    present = set()
    last = None
    for k, m in enumerate(messages):
        if m["role"] == "assistant":
            last = k
        elif m["role"] == "user" and type(m["content"]) is list:
            present.update(_tid(b, "tool_use_id") for b in m["content"] if type(b) is dict and b.get("type") == "tool_result")
    out = set()
    in_runs = None  # (the history ends in the last response's tool runs: found on first need)
    for k, m in enumerate(messages):
        if m["role"] != "assistant" or type(m["content"]) is not list or not any(
                type(b) is dict and b.get("type") == "tool_use" and _tid(b, "id") not in present for b in m["content"]):
            continue
        blocks = kept_blocks("assistant", _blocks(m["content"]))
        if not blocks:
            continue
        rest = [b for b in blocks if b.get("type") != "tool_use" or _tid(b, "id") in present]
        if rest and kept_blocks("assistant", rest) is not None:
            continue  # (what the client's lines give without those calls: thinking alone gives nothing, judge fuzz
            # seed 1119, case 0089: a response's two calls each lost its result, its two thinking lines left)
        if k == last or _in_turn(m, turn):
            if in_runs is None:
                in_runs = any(type(b) is dict and b.get("type") == "tool_use" for b in messages[last]["content"]) and all(
                    x["role"] != "assistant" and (x["role"] == "system" or _only_results(x)) for x in messages[last + 1:])
            if in_runs:
                continue
        out.add(id(m))
    return out, present


def _in_turn(m: dict, turn: set | None) -> bool:
    """Whether message ``m`` (its ``lines``) stands in the history's last turn (``turn``: its lines; None: unknown)."""
    if turn is None:
        return False
    own = m.get("lines")
    return bool(own) and all(x in turn for x in own)


def last_turn(context: list[Entry]) -> list[Entry]:
    """The rows of the history's last turn, where they hold a result (a user row with a tool result, answering a call or
    not); else none. The turn: the rows after the last user row that holds no tool result (a prompt, a meta line, a
    summary), as the client walks its rows back from the end past responses, results and context (``Pzt`` in 2.1.330);
    all of them where there is no such row. Where the history ends in the last response's tool runs and the turn holds
    a result, the client resumes that turn, and each call of it that no result answers anywhere keeps its place with
    the "missing" result (judge fuzz seed 1212, case 0096: a result's ``tool_use_id`` made a date, the file cut in the
    turn's tool runs). ctxtool dropped such a call, as the client does in an earlier turn, where the turn got its
    answer, and where the turn holds no result (its responses' calls all open: the last response's get the
    "interrupted" result, the others' calls are dropped; judged, a result of another id put in makes the difference)."""
    k = len(context) - 1
    results = False
    while k >= 0:
        e = context[k]
        if e.type == "user" and e.role == "user":
            if not e.results:
                break
            results = True
        k -= 1
    return context[k + 1:] if results else []


def _only_results(m: dict) -> bool:
    blocks = kept_blocks("user", _blocks(m["content"]))
    return blocks is None or all(b.get("type") == "tool_result" for b in blocks)


def _add_system(out: list[dict], m: dict) -> None:
    """A system message appended to ``out``, joined by a blank line to a system message just before it: the client
    sends the context rendered for the system between two other messages as one message, also where it came from two
    turns the client joined (a response between them left out: judge fuzz seed 876, case 0124, a tool result's
    message made null, and seed 879, case 0044, a response's block type made an array; ctxtool sent the second as a
    user reminder, rule 39)."""
    if out and out[-1]["role"] == "system" == m["role"] and type(out[-1]["content"]) is str and type(m["content"]) is str:
        prev = out[-1]
        out[-1] = dict(prev, content=prev["content"] + "\n\n" + m["content"])
        if AS_USER in prev or AS_USER in m:
            out[-1][AS_USER] = prev.get(AS_USER, prev["content"]) + "\n\n" + m.get(AS_USER, m["content"])
        if "lines" in prev:
            out[-1]["lines"] = sorted(prev["lines"] + list(m.get("lines", ())))
        return
    out.append(m)


def kept_blocks(role: str, blocks: list[dict]) -> list[dict] | None:
    """The blocks the client keeps of one message (``heal``'s first step, on ``_blocks`` of its content); None when it
    leaves the message out."""
    # a block whose type is no string is left out, in a prompt as in a response (judged; an unknown name is
    # sent; the prompt's: judge fuzz, seed 88): a call written so goes with it, its result then an orphan,
    # and a message left with nothing is left out (judged)
    # so is a text block whose text is no string (null, a number, missing: judge fuzz, seed 100)
    typed = [b for b in blocks if type(b.get("type")) is str and not _unreadable_text(b)]
    if len(typed) < len(blocks):
        if not typed:
            return None
        blocks = typed
    if role == "user":
        return blocks or None  # a prompt whose content is an empty list: left out (judged)
    if blocks and all(_thought(b) for b in blocks):
        # a response of thinking alone (signed or not, redacted too) and blank text: the client
        # leaves it out, as a reply cut off after its thinking (judged)
        return None
    return blocks


def gives_nothing(role: str, content) -> bool:
    """Whether the client leaves out a message of this role and content (raw blocks, or a string) as a whole."""
    return kept_blocks(role, _blocks(content)) is None


def _lined(new: dict, m: dict, carry: bool) -> dict:
    """``new`` with the ``lines`` of the message ``m`` it was made of (none: one the client adds), when ``heal``
    carries them."""
    if carry:
        new["lines"] = list(m.get("lines", ()))
    return new


def _tid(b: dict, key: str):
    """A block's tool id as a set member: an object or array (a damaged line) stands for itself, as
    in the client's Set, and cannot be hashed by value."""
    v = b.get(key)
    return v if type(v) in (str, int, float, bool) or v is None else ("object", id(v))


def _thought(b: dict) -> bool:
    t = b.get("type")
    return t in THINKING_TYPES or _blank_text(b)


def _unreadable_text(b: dict) -> bool:
    """A text block whose text is no string (null, a number, an array, missing)."""
    return type(b) is dict and b.get("type") == "text" and type(b.get("text")) is not str


def _unblanked(blocks: list[dict]) -> list[dict]:
    """A joined turn's blocks less its text of white space alone, but for the renderings at its start that are not
    their attachment's last: the client sends an attachment's renderings as messages of their own and joins each
    attachment's last one with all that follows it in the turn, where it leaves out white space alone as it does in
    typed text; the renderings before the first such join stay messages of their own, a string content sent as
    written (judged, 17 shapes on three recordings: judge fuzz seed 806, case 0032, a rendering of " " before the file
    attachment's two, kept; seed 875, case 0033, the attribution's one rendering made " ", left out; " " as the first
    of the attribution's two after the file attachment's two, left out)."""
    out, lead = [], True
    for b in blocks:
        own = lead and type(b) is dict and b.get(RENDERED) is True
        lead = own
        if own or not _blank_text(b):
            out.append(b)
    return out


def _blank_text(b: dict) -> bool:
    if type(b) is not dict:  # (a block that is no object: 1, "x", null in a content list)
        return False
    t = b.get("text")
    return b.get("type") == "text" and isinstance(t, str) and not t.strip()


def _blocks(content, tools: frozenset = CLIENT_TOOLS) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [_as_sent(dict(b), tools) for b in as_list(content) if isinstance(b, dict)]


# the fields the client adds to a SendMessage call when it writes it, and takes off again when it sends the call
SEND_MESSAGE_ADDED = ("type", "recipient", "recipient_kind", "content", "request_id", "approve")
EDIT_ONE = ("old_string", "new_string", "replace_all")  # an Edit call of several edits is sent without these


def _input_as_sent(name: str, inp: dict) -> dict:
    """A call's input as the client sends it on resume (read in its code, 2.1.330: its normalization of a written
    call's input for the API): a SendMessage call that names its recipient (``to``) and a message without the fields
    it added when it wrote the call (judged); an Edit call with ``edits`` without the one-edit fields. (It also
    normalizes ExitPlanMode and another tool's inputs in ways not read here.)"""
    if name == "SendMessage" and "to" in inp and ("message" in inp or "notify_when_idle" in inp) \
            and any(k in inp for k in SEND_MESSAGE_ADDED):
        return {k: v for k, v in inp.items() if k not in SEND_MESSAGE_ADDED}
    if name == "Edit" and "edits" in inp:
        return {k: v for k, v in inp.items() if k not in EDIT_ONE}
    return inp


WEB_CITATION = "web_search_result_location"


def cited(blocks: list) -> list:
    """A response's blocks with each text block's citations as the client sends them on resume: those of web search
    results alone, the key kept when none is left (read in its code, 2.1.330, its normalization of a response for the
    API: a citation that is no object, or of another type, a document's ``char_location`` say, is left out; judged,
    R/citations_text). A ``citations`` that is no list is sent as written."""
    out = None
    for k, b in enumerate(blocks):
        c = b.get("citations")
        if b.get("type") == "text" and type(c) is list and not all(map(_web_citation, c)):
            out = out or list(blocks)
            out[k] = {**b, "citations": [x for x in c if _web_citation(x)]}
    return blocks if out is None else out


def _web_citation(x) -> bool:
    return type(x) is dict and x.get("type") == WEB_CITATION


def _reference(x) -> bool:
    return isinstance(x, dict) and x.get("type") == "tool_reference"


def _has(tools: frozenset, x: dict) -> bool:
    """The client has the tool a ``tool_reference`` names (one with no name is kept); an MCP tool by its name as it is,
    another by its name now (``Task`` is ``Agent``)."""
    name = x.get("tool_name")
    if not name or type(name) is not str:
        return True
    return (name if name.startswith("mcp__") else RENAMED_TOOLS.get(name, name)) in tools


def loaded(blocks: list) -> list:
    """A user message's blocks as the client sends them where a result keeps a ``tool_reference``: the client adds its
    text "Tool loaded." to each row (a line) that holds such a result, after the row's blocks, unless a text of that
    row already starts with it (rule 16; read in its code, 2.1.330), then joins the turn's rows in their order and puts
    the results first. So the text stands among the turn's other blocks where its row stands among theirs: before a
    prompt written below the result (judge fuzz seed 1193, case 0011), after a prompt the result was bridged below
    (seed 1203, case 0119). A block's row is its mark (``SOURCE``: the line's index, whose order stands for the rows'
    here); blocks with none are one row."""
    rows: dict = {}  # a row's mark -> whether it gets the text
    for b in blocks:
        src = b.get(SOURCE)
        if b.get("type") == "tool_result" and isinstance(b.get("content"), list) and any(map(_reference, b["content"])):
            rows.setdefault(src, True)
        elif b.get("type") == "text" and str(b.get("text", "")).startswith(TOOL_LOADED):
            rows[src] = False
    marks = [src for src, add in rows.items() if add]
    if not marks:
        return blocks
    out = list(blocks)
    for src in marks:
        at = len(out)
        if type(src) is int:  # before the first other block of a row below this one
            at = next((k for k, b in enumerate(out) if b.get("type") != "tool_result" and type(b.get(SOURCE)) is int
                       and b[SOURCE] > src), at)
        out.insert(at, {"type": "text", "text": TOOL_LOADED})
    return out


def _as_sent(b: dict, tools: frozenset = CLIENT_TOOLS) -> dict:
    """One block as the client sends it: renamed tools under their new name, and references to
    tools it does not have (``tool_reference`` in a result) left out; a result left with nothing gets its notice."""
    t = b.get("type")
    if t == "tool_use" and type(b.get("name")) is not str:
        # a call whose name is no string (or none): sent under the client's "tool_name_missing" (2.1.332, read in its
        # code: dropApiInvalidAssistantBlocks; judge fuzz seed 1263, case 0094, the name written [1,"x",null])
        b["name"] = TOOL_NAME_MISSING
    elif t == "tool_use":
        if len(b["name"]) > MAX_TOOL_NAME:
            # a name of more than 200 characters (code points, as JavaScript's for-of counts them) cut to its first 200
            # (2.1.332, read in its code: dropApiInvalidAssistantBlocks, the API's limit on a request's tool names)
            b["name"] = b["name"][:MAX_TOOL_NAME]
        if b["name"] in RENAMED_TOOLS:
            b["name"] = RENAMED_TOOLS[b["name"]]
        inp = b.get("input")
        if type(inp) is dict:
            b["input"] = _input_as_sent(b["name"], inp)
    elif t == "tool_result" and isinstance(b.get("content"), list) and any(
            _reference(x) and not _has(tools, x) for x in b["content"]):
        kept = [x for x in b["content"] if not _reference(x) or _has(tools, x)]
        b["content"] = kept if kept else [{"type": "text", "text": TOOL_REFERENCES_REMOVED}]
    elif t == "tool_result" and b.get("content") is not None and not isinstance(b["content"], (str, list)):
        b["content"] = js_stringify(b["content"])  # a number, a boolean or an object: sent as its JSON text (judged)
    return b
