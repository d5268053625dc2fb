"""Repair a transcript so the agent loads it again and the API accepts it.

The plan is made on the compact entry index (``transcript.scan``), so a large file
is never held in memory: entries that change are loaded again by offset, edited,
and re-serialized; every other line is copied byte for byte. Repairs, in order:

1. file level: unparseable lines, blank lines, a BOM, a missing final newline;
2. pi header: rebuilt or moved first, so pi does not wipe the file on load;
3. structure: duplicate ids renamed, parents that point nowhere, forward or to
   themselves (cycles) re-linked to the nearest earlier kept entry;
4. entry hygiene: unusable tool calls dropped (no id, no arguments, invalid name,
   ``partialJson``), assistants left empty dropped, empty error turns and blank user
   turns given OpenClaw's fallback texts;
5. tool pairing on what the model sees: orphan and duplicate results dropped,
   results of errored/aborted turns dropped, results separated from their call moved
   back, missing results synthesized, reused call ids renamed together with their result;
6. optionally, a trailing assistant message trimmed.

Every change is reported with its kind, line, id and action.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from . import claude_chain, codex_rules, commit, retained
from .errors import CtxError, FileChanged, InputError
from .formats import SNIFF_LINES
from .formats import pi as pi_fmt
from .formats.common import brief, is_blank_text
from .jsonl import TORN_LAST, atomic_write, open_binary
from .lock import DEFAULT_TIMEOUT, SessionLocks
from .model import CONTENT_NOT_LIST, HEADER, MESSAGE, PLAIN, Entry
from .scanloop import index_passes
from .paths import regular
from .transcript import Transcript, make_entry, no_gc, scan
from .validate import Violation, claude_errors_as_sent, validate_entries
from .view import context_entries, linear, message_groups, prompt_lines
from .repair_codex import CodexPairing
from .repair_order import Ordering
from .repair_pairing import Pairing
from .repair_rewrite import Rewriting, _content_ref

if TYPE_CHECKING:
    import random


_NOT_KEPT = object()  # Planner._loops: no earlier line keeps the id of the line walked from
_UNREAD = object()  # Planner._claude_last_row: not read yet


@dataclass(slots=True)
class Change:
    kind: str
    action: str  # dropped, inserted, rewritten, moved, relinked, removed, added
    line: int | None  # line in the input file (None for inserted lines)
    id: str | None = None
    detail: str = ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "action": self.action, "line": self.line, "id": self.id, "detail": self.detail}


@dataclass
class RepairReport:
    path: str
    format: str
    changes: list[Change] = field(default_factory=list)
    lines_in: int = 0
    entries_out: int = 0
    before: list[Violation] | None = field(default_factory=list)  # None: not computed
    after: list[Violation] = field(default_factory=list)
    output: str | None = None
    backup: str | None = None
    written: bool = False
    lock_broken: str | None = None
    carried: int = 0  # lines an agent appended during the rewrite, copied onto the new file
    notices: list[str] = field(default_factory=list)  # one line each: lock taken over, leftovers removed, late writes

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict:
        out: dict = {}
        for c in self.changes:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "changed": self.changed,
            "written": self.written,
            "output": self.output,
            "backup": self.backup,
            "lines_in": self.lines_in,
            "entries_out": self.entries_out,
            "counts": self.counts(),
            "changes": [c.to_dict() for c in self.changes],
            "violations_before": [v.to_dict() for v in self.before] if self.before is not None else None,
            "violations_after": [v.to_dict() for v in self.after],
            "lock_broken": self.lock_broken,
            "carried": self.carried,
            "notices": self.notices,
        }


class _Planner(Pairing, CodexPairing, Ordering, Rewriting):
    """One repair plan on the entry index. Here: the shared state and helpers, file level, the pi
    header, structure (ids and links) and entry hygiene; the later steps are mixins, each in its
    own module: tool pairing (``repair_pairing``, ``repair_codex``), output order and links
    (``repair_order``) and the rewritten lines (``repair_rewrite``)."""

    CHANGE = Change  # what a change is recorded as (the C part's pairing makes them too)

    def __init__(self, t: Transcript):
        self.t = t
        self.fmt = t.fmt
        self.name = t.fmt.NAME
        self.entries = t.entries
        self.changes: list[Change] = []
        self.dropped: set[int] = set()
        self.edits: dict[int, dict] = {}
        self.keys: dict[int, tuple] = {}  # sort keys of moved and inserted entries; others sort by (index, 0)
        self.synthetic: dict[int, tuple[Entry, dict]] = {}  # by (negative) index
        self._taken_ids: set | None = None
        # the tool calls and results still kept, for entries where some were dropped (others: e.calls, e.results)
        self.live_calls: dict[int, list] = {}
        self.live_results: dict[int, dict] = {}  # by block index: dropping one result is O(1)
        self._next_synth = -1
        self._rng: random.Random | None = None
        self.notices: list[str] = []
        self.rename_counter: dict[str, int] = {}
        self.active_path: list[Entry] = []  # pi: root-to-leaf path after the structure fixes
        self.structure_changed = False  # fix_structure found links or ids to look at
        self.copies: dict[int, Entry] = {}  # index of a dropped duplicate line -> its kept first copy
        self._last_row = _UNREAD  # Claude Code: the client's last row (_claude_last_row)
        self._kept_ids: dict | None = None  # pi pairing: id -> the kept line with it (Pairing._stand_in)
        self.renamed_from: dict[int, str] = {}  # index of a line whose duplicate id was renamed -> that id
        self.linear_path: list[Entry] | None = None  # pi: set when the entries form one chain in file order
        # Claude Code heals pairing itself when it resumes (claude_chain.heal): a call without a
        # result, an orphan or a second result are not damage it sends; repair leaves them as they
        # are (validate names them) and fixes only what the client would lose, reused call ids
        self.client_heals_pairing = self.name == "claude"
        self.forward_links = False  # pi: parents written after their children (read as they stand)
        self._parents: dict | None = None  # id -> parent, to tell a loop from a forward link
        self._progress: set | None = None  # (Claude Code: the uuids of progress lines, _progress_ids)
        self.walked_view: list[Entry] | None = None  # the view pairing walked (Claude Code, Codex): the final one when nothing changed
        # the view of the file as scanned (view.context_entries), when the caller built it already: pairing
        # walks it when nothing before pairing dropped or re-linked a line (Claude Code's and Codex's cost a pass)
        self.known_view: list[Entry] | None = None
        self.lone_prompts: set | None = None  # Claude Code: the user lines alone in their turn (_sent_as_written)
        # a subagent's own file (all sidechain), whose links may point into its parent session
        self.side_file = self.name == "claude" and (
            os.path.basename(t.path).startswith("agent-")
            or all(e.get("sidechain") for e in t.entries if e.kind == MESSAGE))

    # ------------------------------------------------------------ helpers
    @property
    def rng(self) -> random.Random:
        """The ids' generator, seeded from the file's first and last 64 KB on first need: most files need no new id,
        and the hash was 13% of a folder's ``repair --check``."""
        if self._rng is None:
            import random  # (here and in _seed: imported where a new id is first needed, not at every command's start)

            self._rng = random.Random(_seed(self.t.path))
        return self._rng

    @property
    def taken_ids(self) -> set:
        """Every id in the file (new ids must not collide), built on first need."""
        if self._taken_ids is None:
            self._taken_ids = {e.id for e in self.entries if e.id}
        return self._taken_ids

    def calls_of(self, e: Entry):
        live = self.live_calls.get(e.index)
        return e.calls if live is None else live

    def results_of(self, e: Entry):
        live = self.live_results.get(e.index)
        return e.results if live is None else tuple(live.values())

    def key(self, e: Entry) -> tuple:
        """Where ``e`` goes in the output file: its own place unless moved or inserted."""
        return self.keys.get(e.index) or (e.index, 0)

    def change(self, kind, action, e: Entry | None, ident=None, detail=""):
        self.changes.append(Change(kind, action, e.lineno if e is not None and e.lineno else None, ident, detail))

    def edit(self, e: Entry) -> dict:
        return self.edits.setdefault(e.index, {})

    def drop(self, e: Entry, kind: str, detail: str, ident=None):
        if e.index in self.dropped:
            return
        self.dropped.add(e.index)
        self.change(kind, "dropped", e, ident if ident is not None else e.id, detail)

    def alive(self, e: Entry) -> bool:
        return e.index not in self.dropped

    # ------------------------------------------------------------ file level
    def file_level(self):
        for b in self.t.bad:
            self.changes.append(Change("blank-line" if b.blank else "bad-line", "dropped", b.lineno, None, b.reason))
        if self.name == "pi" and self.t.bad:
            # a last line of JSON that is no object, pi's leaf (transcript._mark_value_leaf), goes with the bad lines:
            # the repaired file's leaf is the entry before it
            for e in reversed(self.entries):
                if e.extra and "value_after" in e.extra:
                    e.extra = {k: v for k, v in e.extra.items() if k != "value_after"} or None
                    break
        if self.t.bom:
            self.changes.append(Change("bom", "removed", 1, None, "UTF-8 byte order mark before the first line"))

    # ------------------------------------------------------------ pi header
    def fix_header(self):
        entries = self.entries
        if not entries:
            return
        first = entries[0]
        if first.kind == HEADER:
            if not first.id:
                new = pi_fmt.session_id_from_path(self.t.path) or pi_fmt.new_id(set(), self.rng)
                self.edit(first)["set_id"] = new
                first.id = new
                self.change("header", "rewritten", first, new, "session header had no id")
            self._restore_version(first)
            return
        header = next((e for e in entries if e.kind == HEADER and e.id), None)
        for e in entries:
            if e is header:
                break
            if e.kind != HEADER and e.type not in pi_fmt.ENTRY_TYPES:
                self.drop(e, "header", "JSON line before the session header that is not a pi entry")
            elif e.kind == HEADER:
                self.drop(e, "header", "session header without an id before the real header")
        if header is not None:
            self.keys[header.index] = (-1, 0)
            self.change("header", "moved", header, header.id, "session header moved to the first line")
            self._restore_version(header)
            return
        body = [e for e in entries if self.alive(e)]
        version = 3 if any(e.id for e in body) else 1
        ts = min((e.ts for e in body if e.ts is not None), default=None)
        salvage = self._salvage_header()
        if salvage.get("version", version) < 2 <= version:  # a version pi would read as 1 while the entries carry ids
            salvage.pop("version")
        obj = pi_fmt.make_header(self.t.path, version=salvage.get("version", version), first_ts=ts,
                                 cwd=salvage.get("cwd"), rng=self.rng, session_id=salvage.get("id"),
                                 timestamp=salvage.get("timestamp"))
        e = self._synth_entry(obj, key=(-1, 0))
        self.change("header", "inserted", None, obj["id"],
                    f"rebuilt missing/invalid session header (version {obj.get('version', 1)}, cwd {obj['cwd'] or '(unknown)'}"
                    + (", id and fields salvaged from the damaged first line)" if salvage else ")"))
        return e

    def _restore_version(self, header: Entry) -> None:
        """A header whose version pi reads as 1 (missing, or no number of 2 or more) in a file whose
        entries carry ids: pi would give every entry a new id and link them in file order, every
        branch in one line. The version the entries' shape says is written back, so that pi walks the
        tree they form."""
        if not header.get("v1") or not any(e.id for e in self.entries if e.kind != HEADER and self.alive(e)):
            return
        obj = self.t.load(header)
        was = brief(obj["version"]) if "version" in obj else "(none)"
        self.edit(header)["set_version"] = pi_fmt.CURRENT_VERSION
        header.extra = None  # read as the version written
        self.change("header", "rewritten", header, header.id,
                    f"session header version {was} is read by pi as version 1 (every entry re-linked in "
                    f"file order) while the entries carry ids and links: version {pi_fmt.CURRENT_VERSION}")

    def _salvage_header(self) -> dict:
        """Fields still readable in a torn or malformed first line that was a header."""
        bad = next((b for b in self.t.bad if b.lineno == 1 and not b.blank), None)
        if bad is None:
            return {}
        raw = self.t.raw_line(bad).decode("utf-8", "replace")
        if '"type":"session"' not in raw.replace(" ", ""):
            return {}
        found = {}
        for key in ("id", "cwd", "timestamp"):
            m = re.search(r'"%s"\s*:\s*"((?:[^"\\]|\\.)*)"' % key, raw)
            if m:
                found[key] = m.group(1)
        m = re.search(r'"version"\s*:\s*(\d+)', raw)
        if m:
            found["version"] = int(m.group(1))
        if "timestamp" in found and not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", found["timestamp"]):
            del found["timestamp"]
        return found

    # ------------------------------------------------------------ structure
    def fix_structure(self):
        if self.name == "pi" and all(e.id is None for e in self.entries if e.kind != HEADER):
            return  # version 1: linear, no links to fix
        if not self.dropped and self._links_sound():
            return
        self.structure_changed = True
        made = len(self.changes)
        resolve: dict[str, str] = {}
        first_line: dict[str, int] = {}
        first_entry: dict[str, Entry] = {}
        # Claude Code: a progress line is no row (the client reads it out of the links as it loads: claude_chain.chain);
        # its uuid is no row's to rename, and a row whose parent is one is re-linked only where the client then bridges
        skip = "progress" if self.name == "claude" else None
        all_ids = {e.id for e in self.entries if e.id and e.type != skip}
        prev: Entry | None = None
        passed: list[Entry] = []  # the entries before this one (pi: a re-link goes to the nearest that is not below it)
        deferred: list = []
        for e in self.entries:
            if e.type == skip:
                continue
            if e.id is None and e.kind != HEADER and self.alive(e):
                # a line with no id of its own (a Claude Code checkpoint; an id that is no string) still links to one
                if self.name == "claude" and e.type == "last-prompt":
                    self._follow_rename(e, resolve)
                elif e.parent in resolve:
                    self._follow_parent(e, resolve)
                continue
            if not self.alive(e) or e.kind == HEADER:
                continue
            p = e.parent
            if p is not None:
                if p in resolve:
                    self._follow_parent(e, resolve)
                else:
                    kind = "cycle" if (p == e.id or p in all_ids) else "dangling-parent"
                    # (a lost id above it is the dangling line's own repair, which comes when it is reached)
                    # (a line whose id an earlier line holds is renamed below: a link to its id then reaches that line)
                    kept = first_entry[e.id].parent if e.id in resolve else _NOT_KEPT
                    if kind == "cycle" and self.name == "pi" and not self._loops(e, lost=False, kept=kept):
                        # a parent written later in the file, with no loop: pi links by id and reads it
                        # as it stands (a rewrite puts the line after its parent: _repair plans again)
                        kind = None
                        self.forward_links = True
                    if kind == "dangling-parent" and self.name == "claude" and (prev is None or self.side_file):
                        # a link out of the file by design: a subagent or agent-acompact file points into
                        # the parent session, a file's first line may point into the session it came
                        # from. Only a lost line inside a main file cuts (or is bridged in) what the client sends.
                        kind = None
                    if kind is not None and self.name == "claude":
                        deferred.append((e, p, kind))  # decided once duplicate ids are resolved
                    elif kind is not None:
                        self._relink(e, p, kind, self._not_below(e, passed))
            # a line written twice; not when either copy was just re-linked (then they stand in different places)
            if (e.id in resolve and first_entry[e.id].index not in self.edits and e.index not in self.edits
                    and self._same_line(first_entry[e.id], e)):
                if self.name == "claude" and e is self._claude_last_row():
                    # the client's last row, where it resumes (at the first copy's place): left as written, as the
                    # line before it may stand on another branch (judge fuzz seed 1225, case 0134: a result line of an
                    # earlier branch written again above a silent last answer; dropped, the client resumed elsewhere)
                    prev = e
                    passed.append(e)
                    continue
                self.drop(e, "duplicate-line", f"the same line as line {first_line[e.id]}, written twice")
                self.copies[e.index] = first_entry[e.id]
                continue
            if e.id in resolve:
                new = self.fmt.new_id(self.taken_ids, self.rng)
                self.change("duplicate-id", "rewritten", e, e.id, f"id {e.id} already used on line {first_line[e.id]}; renamed {new}")
                self.edit(e)["set_id"] = new
                self.renamed_from[e.index] = e.id
                resolve[e.id] = new
                e.id = new
                resolve[new] = new
            else:
                resolve[e.id] = e.id
                first_line[e.id] = e.lineno
                first_entry[e.id] = e
            prev = e
            passed.append(e)
        if deferred:
            self._relink_claude(deferred)
        if self.forward_links and not self.dropped and len(self.changes) == made:
            self.structure_changed = False  # only parents written after their children: nothing to re-link

    def _progress_ids(self) -> set:
        """The uuids of the file's progress lines (Claude Code), made on first need."""
        if self._progress is None:
            self._progress = {e.id for e in self.entries if e.type == "progress" and e.id is not None}
        return self._progress

    def _follow_parent(self, e: Entry, resolve: dict) -> None:
        """A link to a duplicated id, written after the id's later line (which repair renames): to that line, the
        agent's entry for the id (pi's map keeps the last one; Claude Code's row is the last line). So for a line
        whose own id is no string too (judge fuzz seed 1009, case 0020: a pi tool result with a 39-digit id, whose
        call's entry repair renamed, was left under the prompt that first had the id, and dropped as an orphan)."""
        p = e.parent
        if resolve[p] != p:
            self._set_parent(e, resolve[p])
            self.change("duplicate-id", "relinked", e, e.id, f"parent {p} is a duplicated id; linked to its latest occurrence {resolve[p]}")

    def _follow_rename(self, e: Entry, resolve: dict) -> None:
        """A Claude Code checkpoint (``last-prompt``) written after a duplicated uuid's later line, which repair
        renames, names that line, as a link written after it does: the client's row for a uuid written twice is its
        later line, and it resumes there (judge fuzz seed 1005, case 0156: the last response's uuid written again on
        the first one; repair renamed the last and the client resumed at the first turn, its later turns lost)."""
        leaf = e.extra.get("leaf") if e.extra is not None else None
        new = resolve.get(leaf) if leaf is not None else None
        if new is not None and new != leaf:
            self.edit(e)["set_leaf"] = new
            e.extra = {**e.extra, "leaf": new}
            self.change("duplicate-id", "relinked", e, None,
                        f"checkpoint leafUuid {leaf} is a duplicated id; linked to its latest occurrence {new}")

    def _parent_map(self) -> dict:
        return {x.id: x.parent for x in self.entries if x.id is not None and x.kind != HEADER}

    def _loops(self, e: Entry, parents: dict | None = None, lost: bool = True, kept=_NOT_KEPT) -> bool:
        """Whether following parents from ``e`` never ends: it comes back to ``e``, or reaches a
        loop above it (pi's buildSessionContext would walk it forever), or (``lost``) an id the file
        lacks. ``parents``: the id -> parent map to follow (by default the one fix_structure builds
        on first need, as the links stand then). ``kept``: when ``e`` is a later line of an id that an earlier line
        keeps (``e`` is renamed), that line's parent: a link to the id reaches it, not ``e`` (judge fuzz seed 1045,
        case 0001 of pi's: a dangling link re-linked to the id of a line written again later read as a loop through
        the later line, which repair then cut from the history with its turns' results)."""
        if parents is None:
            if self._parents is None:
                self._parents = self._parent_map()
            parents = self._parents
        cur, steps = e.parent, 0
        while cur is not None:
            if cur not in parents:
                return lost
            if steps > len(parents):
                return True
            if cur == e.id:
                if kept is _NOT_KEPT:
                    return True
                cur, kept = kept, _NOT_KEPT  # (the kept line's own parent; e's id met again is a loop)
                steps += 1
                continue
            cur = parents[cur]
            steps += 1
        return False

    def _not_below(self, e: Entry, passed: list[Entry]):
        """The id of the nearest entry before ``e`` whose parents do not lead to ``e`` (one written
        before its parent ``e`` would close a loop), or None (the root)."""
        by_id = None
        for cand in reversed(passed):
            if cand.parent is None:
                return cand.id
            if by_id is None:
                by_id = {x.id: x for x in self.entries if x.id is not None and x.kind != HEADER and self.alive(x)}
            cur, steps = cand, 0
            while cur is not None and cur.id != e.id and steps <= len(by_id):
                cur = by_id.get(cur.parent) if cur.parent is not None else None
                steps += 1
            if cur is None:
                return cand.id
        return None

    def _relink(self, e: Entry, p: str, kind: str, new_parent) -> None:
        why = "points to itself" if p == e.id else ("points forward (cycle)" if kind == "cycle" else "points to no entry")
        if kind == "dangling-parent" and self.name == "claude" and p in self._progress_ids():
            why = "points to a progress line, which the client reads out of the links: past it, its parent is lost"
        self._set_parent(e, new_parent)
        self.change(kind, "relinked", e, e.id, f"parent {p} {why}; re-linked to {new_parent}")

    def _relink_claude(self, deferred: list) -> None:
        """Claude Code: only a link the client's walk from the leaf goes through is re-linked: where
        it bridges it by time, to its bridge; where it cuts, to the line before (and the walk goes on
        from there). A link it never follows (a row its compaction fold re-links or drops, a side
        branch) is left as it is: changing it would change nothing sent, or worse."""
        alive = [e for e in self.entries if self.alive(e)]
        before: dict[int, Entry] = {}  # a line -> the line with an id before it: where a cut is mended
        prev = None
        for e in alive:
            if e.id is not None and e.kind != HEADER:
                if prev is not None:
                    before[e.index] = prev
                prev = e
        bridges: dict = {}
        # (walked with the ids as written: a line whose id an earlier line holds is that row, at the earlier line's
        # place, where the client bridges a lost parent; its new id is what the re-link names: judge fuzz seed 1186,
        # case 0096, a call line given an attachment's uuid, whose result line's parent was lost)
        renamed = [(e, e.id) for e in alive if e.index in self.renamed_from]
        for e, _ in renamed:
            e.id = self.renamed_from[e.index]
        try:
            claude_chain.chain(alive, bridges=bridges, mend=lambda e: before.get(e.index))
        finally:
            for e, new in renamed:
                e.id = new
        if any(e.index in self.renamed_from and bridges.get(e.index) is None for e, _, _ in deferred):
            # a renamed line the client did not bridge: under its old uuid it was a row another line of that uuid hid,
            # and renamed it is a row of its own, which the client bridges (a fuzz case: two prompts of one uuid under
            # a lost parent, the first the file's first line); without it, a second repair re-linked what the first
            # left (a walk with the new uuids, for those lines only)
            after: dict = {}
            claude_chain.chain(alive, bridges=after, mend=lambda e: before.get(e.index))
            for e, _, _ in deferred:
                if e.index in self.renamed_from and bridges.get(e.index) is None and after.get(e.index) is not None:
                    bridges[e.index] = after[e.index]
        for e, p, kind in deferred:
            to = bridges.get(e.index)
            if to is None or claude_chain.side_of(to) != claude_chain.side_of(e):
                # (a bridge to a subagent's line from a main one, or back: the client walks it when it bridges, and a
                # link written to that line it does not, so it sent less; left to the bridge: a review's file, 2026-12-01,
                # fixtures/claude-lost-ids/side_then_lost_gap.jsonl)
                continue
            if not to.id:
                # the client bridged to a row whose uuid is no string (rule 23), or empty (a parent "" is none: judge
                # fuzz seed 864, case 0176, where repair wrote that): a link cannot reach it until it has one; the uuid
                # the line names as its lost parent, where free, else a new one
                taken = self.taken_ids
                to_id = to.id
                new = p if isinstance(p, str) and p and p not in taken else self.fmt.new_id(taken)
                taken.add(new)
                to.id = new
                self.edit(to)["set_id"] = new
                self.change("row-id", "fixed", to, new, f"uuid that is {'empty' if to_id == '' else 'no string'}, which no parent link reaches: set to {new}"
                            + (f", the lost parent line {e.lineno} names (the client bridges to this line)" if new == p else ""))
                self._own_link(to, bridges)
                if new == p:
                    continue
            self._relink(e, p, kind, to.id)

    def _own_link(self, row: Entry, bridges: dict) -> None:
        """A row just given a uuid (``row-id``) whose own parent is lost (none the file holds, or one that is no
        string): re-linked where the client bridges it, as any other line's (before it had a uuid the walk of dangling
        links passed it by, and a second repair re-linked it: a fuzz case of ``sibling_of_lost_cycle.jsonl``)."""
        p = row.parent
        to = bridges.get(row.index)
        if p is None or p in self.taken_ids or to is None or not to.id or to is row:
            return
        if claude_chain.side_of(to) != claude_chain.side_of(row):
            return
        self._relink(row, p, "dangling-parent", to.id)

    def _links_sound(self) -> bool:
        """One cheap pass for the common case: ids unique, every parent an earlier entry."""
        # only pi and Codex files have a header line
        body = self.entries if self.name == "claude" else [e for e in self.entries if e.kind != HEADER]
        if body and body[0].parent is None and linear(body):
            self.linear_path = body  # the leaf's path is the whole file: pairing reuses it
            return True  # one chain in file order (checked without a per-entry Python loop)
        passes = index_passes()
        if passes is not None and type(body) is list:  # the loop below, in C
            ok, forward = passes.sound(body, self.name == "pi")
            if not ok:
                return False
        else:
            seen: set = set()
            add = seen.add
            forward = []
            for e in body:
                i = e.id
                if i is None:
                    continue
                p = e.parent
                if i in seen:
                    return False
                if p is not None and p not in seen:
                    if self.name != "pi":
                        return False
                    forward.append(e)
                add(i)
        if not forward:
            return True
        # pi links by id: a parent written after its child is read as it stands, unless following
        # the parents never ends (a loop) or reaches an id the file lacks
        parents = self._parent_map()
        if any(self._loops(e, parents) for e in forward):
            return False
        self.forward_links = True
        return True

    def _sent_as_written(self, e: Entry) -> bool:
        """Claude Code: whether the client sends this prompt line as written, blank or empty: its content a string, and
        no other line in its turn (``claude_chain.heal``, judged; context it puts in the system prompt aside)."""
        if e.results or e.get("context") is not None:
            return False
        m = self.t.load(e).get("message")
        if not (isinstance(m, dict) and isinstance(m.get("content"), str)):
            return False
        if self.lone_prompts is None:  # (once per plan: a file may hold many such lines)
            self.lone_prompts = {id(own[0]) for role, group in message_groups(self.name, self.entries)
                                 if role == "user" and len(own := prompt_lines(group)) == 1}
        return id(e) in self.lone_prompts

    def _claude_last_row(self) -> Entry | None:
        """Claude Code: the last row as the client reads it from the end of the file (``claude_chain._leaf_marks``:
        beside a checkpoint, a silent response is none), read once."""
        if self._last_row is _UNREAD:
            marks = claude_chain._leaf_marks(claude_chain.main_entries(self.entries),
                                             any(e.type == "last-prompt" for e in self.entries))
            self._last_row = marks[1]
        return self._last_row

    def _same_line(self, a: Entry, b: Entry) -> bool:
        return a.length == b.length and self.t.raw(a) == self.t.raw(b)

    def _set_parent(self, e: Entry, parent):
        e.parent = parent
        self.edit(e)["set_parent"] = parent

    # ------------------------------------------------------------ hygiene
    def hygiene(self):
        dropped = self.dropped
        passes = index_passes()
        # only messages and lines marked malformed are looked at: in C where it is built, the others are left out
        # before the loop (most lines of a Claude Code file), and the messages none of the cases below touches
        looked = passes.looked(self.entries, self.name == "claude") if passes is not None and type(self.entries) is list \
            else self.entries
        for e in looked:
            if e._m is PLAIN and e.kind != MESSAGE:
                continue  # no extra, calls or text flags
            if e.index in dropped:
                continue
            if e.extra and e.extra.get("malformed"):
                self.drop(e, "malformed-entry", e.extra["malformed"])
                continue
            if e.kind != MESSAGE:
                continue
            blocks = e.extra.get("bad_blocks") if e.extra else None
            if blocks:  # Messages JSONL: blocks that are no content blocks (the API refuses them)
                if len(blocks) >= e.nblocks:
                    self.drop(e, "invalid-block", "message whose every content block lacks a string type")
                    continue
                self.edit(e).setdefault("drop_blocks", set()).update(blocks)
                self.change("invalid-block", "dropped", e, None, f"{len(blocks)} content block(s) without a string type removed")
            if self.name == "pi" and e.role == "assistant" and e.extra and e.extra.get(CONTENT_NOT_LIST):
                self.edit(e)["fix_content_list"] = True
                self.change("invalid-content", "rewritten", e, e.id, "assistant message whose content is no array (pi "
                            "cannot send a history holding it) given its text as an array, or an empty one")
            bad = [c for c in e.calls if c.problem] if e.calls else None
            if bad:
                if e.signed_thinking and self.name == "pi":
                    self.drop(e, "tool-call", "assistant turn with signed thinking and an unusable tool call dropped whole "
                              "(editing it would break the thinking signature)")
                    continue
                for c in bad:
                    self.change("tool-call", "dropped", e, c.id or None, f"tool call {c.name or '(no name)'}: {c.problem}")
                self.edit(e).setdefault("drop_blocks", set()).update(c.idx for c in bad)
                self.live_calls[e.index] = [c for c in e.calls if not c.problem]
                if len(bad) >= e.nblocks:
                    self.drop(e, "empty-assistant", "assistant message left with no content after dropping its tool calls")
                    continue
            if e.role == "assistant" and e.nblocks == 0 and e.stop == "error":
                self.edit(e)["fix_error_text"] = True
                self.change("error-turn", "rewritten", e, e.id, "empty errored assistant turn given the stream-error fallback text")
            elif e.role == "user" and self.name == "claude" and e.blank_text and self._sent_as_written(e):
                self.edit(e)["fix_blank_user"] = True
                self.change("blank-user", "rewritten", e, e.id, "a prompt of blank text alone in its turn, which Claude "
                            "Code sends as written (the API refuses it), given the fallback \"(continue)\"")
            elif e.role == "user" and (e.get("context") is not None or self.name == "claude"):
                pass  # Claude Code leaves out blank user text itself (judged), and renders its context itself
            elif e.role == "user" and e.blank_text:
                self.edit(e)["fix_blank_user"] = True
                self.change("blank-user", "rewritten", e, e.id, "blank user text replaced by the fallback \"(continue)\"")
            elif e.role == "user" and e.empty and not e.results:
                self.edit(e)["fix_blank_user"] = True
                self.change("blank-user", "rewritten", e, e.id, "user message with no content (none, or not text blocks) "
                            "given the fallback \"(continue)\"")
            elif e.role == "assistant" and e.blank_text and not e.empty:
                blank = {i for i, b in enumerate(_content_ref(self.name, self.t.load(e)))
                         if isinstance(b, dict) and is_blank_text(b)}
                self.edit(e).setdefault("drop_blocks", set()).update(blank)
                self.change("blank-text", "dropped", e, e.id, f"{len(blank)} empty text block(s) removed from the assistant message")

    # ------------------------------------------------------------ pairing

    # ------------------------------------------------------------ Codex pairing

    # ------------------------------------------------------------ materialize
    SLIM_EDITS = {"set_id", "set_parent", "rename_calls", "rename_results"}
    TOP_LEVEL_EDITS = {"set_id", "set_parent", "set_leaf", "set_first_kept", "set_first_kept_index", "set_version",
                       "set_timestamp", "set_ordinal"}


_index = attrgetter("index")


@dataclass
class Plan:
    transcript: Transcript
    planner: _Planner
    order: list[Entry]
    final_entries: list[Entry]
    changes: list[Change]

    def chunks(self):
        """The repaired file, line by line: original bytes where nothing changed."""
        t = self.transcript
        eol = t.eol
        with open(t.path, "rb") as f:
            for e in self.order:
                line = self.planner.rewritten(e, f)
                if line is None:
                    yield t.raw(e, f) + (e.eol or eol)
                else:
                    yield line + eol


def plan_repair(t: Transcript, *, trim_trailing: bool = False, view: list[Entry] | None = None) -> Plan:
    """Plan the repair of a scanned transcript. The planner updates ids, parent links
    and tool ids of ``t.entries`` in place: validate the original before calling this.
    ``view``: ``view.context_entries`` of ``t`` as scanned, when the caller has it."""
    p = _Planner(t)
    p.known_view = view
    p.file_level()
    if p.name == "pi":
        p.fix_header()
    if p.name == "claude":
        p.restore_lost_ids()
    if p.name in ("pi", "claude"):
        p.fix_structure()
    if p.name == "pi":
        p.remember_first_kept()
    if p.name == "codex":
        p.drop_meta_copies()
        p.drop_item_copies()
        p.fix_envelopes()
        p.pair_codex()
    else:
        p.hygiene()
        if p.name == "pi":
            p.name_the_leaf()  # (after hygiene: a last line it drops needs no id)
        p.pair()
        if p.name == "pi":
            p.pair_again_if_path_gone()
    if trim_trailing and p.name != "codex":  # Codex sends a history that ends with its reply as it is
        p.trim()
    order = p.ordered()
    if p.name == "codex":
        p.paginated_tail(order)
    else:
        p.relink(order)
    if p.name == "pi":
        p.keep_leaf(order)
        p.fix_first_kept(order)
    if order and not order[-1].eol and order[-1].index >= 0 and not p.edits.get(order[-1].index):
        p.changes.append(Change("final-newline", "added", order[-1].lineno, None, "last line had no line ending"))
    _refuse_unreadable(t, p, order)
    edits = p.edits
    if not edits and (not p.synthetic or min(map(_index, order), default=0) >= 0):  # nothing to rewrite (no line made): the index as scanned
        return Plan(t, p, order, list(order), p.changes)
    passes = index_passes()
    got = passes.finals(order, edits, p.SLIM_EDITS) if passes is not None else None
    final, todo = got if got is not None else (list(order), range(len(order)))  # (todo: positions in final)
    if todo:
        with open(t.path, "rb") as f:
            for k in todo:
                final[k] = _final_entry(t, p, final[k], f)
    return Plan(t, p, order, final, p.changes)


def _final_entry(t: Transcript, p: _Planner, e: Entry, f) -> Entry:
    """The repaired index entry of ``e``: as scanned when untouched, updated in place when only ids, links and
    tool ids change (``slim_final``), else made from its edited object (the C part's ``Rows.finals`` does the first
    two for most entries)."""
    if e.index >= 0 and e.index not in p.edits:
        return e
    slim = p.slim_final(e)
    if slim is not None:
        return slim
    obj = p.materialize(e, f)
    return e if obj is None else make_entry(t.fmt, obj, e.index, e.lineno, e.offset, e.length, e.eol)


REPLANS = 3  # plans made again when lines appended meanwhile point at entries the repair removes


def _refuse_unreadable(t: Transcript, p: _Planner, order: list[Entry]) -> None:
    """Repair never writes a file that ctxtool (or the agent) would refuse: none at all when every
    line goes, and none whose first lines no longer look like the file's format (how it is detected)."""
    if not order:
        why = sorted({c.kind for c in p.changes if c.action == "dropped"})
        raise InputError(f"repair would remove every line ({', '.join(why)}): nothing would be left that ctxtool "
                         "or the agent can read; the file is left as it is", path=t.path)
    head = order[:SNIFF_LINES]
    if all(e.index == k and k not in p.edits for k, e in enumerate(head)) and len(head) == min(len(t.entries), SNIFF_LINES):
        return  # the first lines are the input's own, untouched: detected as before
    with open(t.path, "rb") as f:
        objs = [p.materialize(e, f) or t.load(e, f) for e in head]
    if sum(t.fmt.sniff(o) for o in objs) <= 0:
        raise InputError(f"after repair, none of the first lines would look like a {t.format_name} transcript, so the "
                         "repaired file could not be read; the file is left as it is", path=t.path)


def repair_file(
    path: str,
    *,
    fmt: str | None = None,
    check: bool = False,
    output: str | None = None,
    backup: bool = True,
    trim_trailing: bool = False,
    lock_timeout: float = DEFAULT_TIMEOUT,
    break_stale_lock: bool = False,
    violations_before: bool = True,
) -> RepairReport:
    """Plan and (unless ``check``) write the repair of one file.

    In place, a symlinked session is repaired at its real path (the link stays a link),
    under the real file's lock, as the agent that writes it would see it, through the
    commit protocol (``ctxtool.commit``: lines an agent appends meanwhile are carried over;
    a file replaced or shrunk meanwhile is refused). The backup is made only when the file
    is written. ``violations_before=False`` skips validating the input (``report.before``
    is then None): a whole pass over the view that only the JSON report shows."""
    in_place = not check and (output is None or os.path.realpath(output) == os.path.realpath(path))
    lock = None
    notices = []
    if in_place:
        if not os.path.exists(path):
            raise InputError("no such file", path=path)
        real = os.path.realpath(path)
        if regular(real):  # (a FIFO is refused by the scan, without opening it: the open could wait forever)
            open_binary(path).close()  # a file that cannot be read says so, not that its lock cannot be made beside it
        lock = SessionLocks(path, timeout=lock_timeout, break_stale=break_stale_lock)
        lock.acquire()
        notices = lock.notices + commit.clean_leftovers(real)
    try:
        with no_gc():
            for attempt in range(REPLANS):
                try:
                    report = _repair(real if in_place else path, fmt, check, None if in_place else output,
                                     backup, trim_trailing, in_place, violations_before, lock_timeout)
                    break
                except FileChanged as e:
                    if not e.retry or attempt == REPLANS - 1:
                        raise
        if in_place and report.path != path:
            report.path = path
        if lock is not None and lock.broken is not None:
            report.lock_broken = lock.notices[0]
        report.notices[:0] = notices + commit.late_writes(path)
        return report
    except CtxError as e:  # read at its real path: said of the name the user gave
        if in_place and e.path == real != path:
            e.naming(path)
        raise
    finally:
        if lock is not None:
            lock.release()


def check_file(path: str, fmt: str | None, trim_trailing: bool, with_before: bool) -> RepairReport:
    """``repair --check`` of one file. A worker process of a folder's check runs it by name: it lives here, not in
    the CLI, so that a worker does not import click (~25 ms a worker)."""
    return repair_file(path, fmt=fmt, check=True, trim_trailing=trim_trailing, violations_before=with_before)


def _repair(path, fmt, check, output, backup, trim_trailing, in_place, with_before,
            lock_timeout: float = DEFAULT_TIMEOUT) -> RepairReport:
    """Scan, plan, validate before and after, and write (unless checking)."""
    ident = commit.identity(path) if in_place else None
    commit.phase("before-read", path)
    t = scan(path, fmt, stats=False)  # structure only: no character counts
    snap = commit.snapshot(path, t.size, expect=ident) if in_place else None
    old_leaf = _last_id(t.entries)  # before planning: the planner renames ids in place
    # before planning: the planner re-links entries in place. Claude Code's and Codex's view costs a
    # pass over the index: built once, for this validation and for the planner's pairing
    view = context_entries(t.format_name, t.entries) if t.format_name in ("claude", "codex") else None
    # (Claude Code: the errors of the request the client sends, read before the planner re-links entries in place)
    before = claude_errors_as_sent(t, validate_entries(t.format_name, t.entries, context=view)) if with_before else None
    plan = plan_repair(t, trim_trailing=trim_trailing, view=view)
    del view
    if plan.planner.forward_links and plan.changes:
        # a pi file with parents written after their children, which pi reads as it stands, is being
        # rewritten anyway: plan again with each such line after its parent, so repair's moves and
        # links (which go by file order) keep what pi reads
        t = scan(path, fmt, stats=False)
        if in_place:  # what an agent appended since the first read is in this one: carry only what follows it
            snap = commit.snapshot(path, t.size, expect=ident)
        old_leaf = _last_id(t.entries)
        moved = parents_first(t.entries)
        plan = plan_repair(t, trim_trailing=trim_trailing)
        plan.changes[:0] = [Change("parent-order", "moved", e.lineno, e.id, "written before its parent; moved after it")
                            for e in moved]
    retained.keep((t, plan))  # (a run over one file leaves them for the process's end to drop)
    report = RepairReport(path, t.format_name, plan.changes, t.lines, len(plan.order))
    report.notices += plan.planner.notices
    report.before = before
    if before is not None and not plan.changes and not plan.planner.edits and len(plan.final_entries) == len(t.entries):
        report.after = before  # nothing changed: the file as validated before planning (the same entries, in order)
    else:
        # nothing changed: the view pairing walked is the final one (Claude Code's and Codex's cost a pass to build)
        same = plan.planner.walked_view if not plan.changes else None
        report.after = validate_entries(t.format_name, plan.final_entries, context=same)
    commit.phase("planned", path)
    if check:
        return report
    dest = output or path
    if not plan.changes and os.path.abspath(dest) == os.path.abspath(path):
        return report
    if in_place:
        dropped = plan.planner.dropped

        def gone() -> set:
            return {e.id for e in t.entries if e.index in dropped and e.id} - {e.id for e in plan.final_entries if e.id}

        synthesized = {c.id for c in plan.changes if c.kind == "missing-result" and c.action == "inserted" and c.id}
        relink = commit.relink_for(t.format_name, old_leaf, _last_id(plan.final_entries), gone if dropped else frozenset(),
                                   synthesized, getattr(t.fmt, "result_ids", None))
        # an agent that keeps the file open (Codex) would write on into the replaced file: waited for (up to the lock's
        # timeout), and looked for again just before the rename
        commit.wait_unheld(path, lock_timeout)
        done = commit.commit(snap, plan.chunks(), relink=relink, backup=backup, keep=_forks_keep(t))
        report.backup, report.carried = done.backup, done.carried + done.carried_late
        report.notices += done.notices
        if done.completed:  # the torn last line was finished meanwhile and carried whole: not dropped after all
            report.changes = [c for c in report.changes if not (c.kind == "bad-line" and c.detail.startswith(TORN_LAST))]
    else:
        atomic_write(dest, plan.chunks(), mode=os.stat(path).st_mode & 0o7777)
    report.output = dest
    report.written = True
    return report


def _forks_keep(t) -> tuple[int, str] | None:
    """A Codex rollout other rollouts fork (``codex fork``): each reads it up to a byte offset, so a rewrite must leave
    the bytes before the last such offset as they are (``commit``'s ``keep``), with the reason it refuses otherwise."""
    if t.format_name != "codex":
        return None
    header = next((e for e in t.entries if e.kind == HEADER), None)
    forks = codex_rules.forks_of(t.path, header.id if header is not None else None)
    if not forks:
        return None
    end = max(n for _, n in forks)
    names = ", ".join(f"{os.path.basename(p)} (to byte {n:,})" for p, n in forks[:3]) + (" ..." if len(forks) > 3 else "")
    return end, (f"{len(forks)} fork(s) read this rollout up to a byte offset ({names}), and the repair changes it before "
                 "that: Codex would resume them with another history, or refuse them; nothing was written. Write the "
                 "repaired file elsewhere with -o")


def parents_first(entries: list[Entry]) -> list[Entry]:
    """Reorder ``entries`` in place so each comes after its parent (otherwise in file order) and
    renumber their index; returns the entries that moved. Lines in a loop stay where they were."""
    ids = {e.id for e in entries if e.id is not None}
    placed: set = set()
    waiting: dict = {}
    out: list[Entry] = []
    moved: list[Entry] = []
    for e in entries:
        p = e.parent
        if e.kind != HEADER and p is not None and p in ids and p not in placed:
            waiting.setdefault(p, []).append(e)
            moved.append(e)
            continue
        stack = [e]
        while stack:
            x = stack.pop()
            out.append(x)
            if x.id is not None:
                placed.add(x.id)
                stack.extend(reversed(waiting.pop(x.id, ())))
    for rest in waiting.values():  # a loop: never placed after its parent
        out += rest
    for k, e in enumerate(out):
        e.index = k
    entries[:] = out
    return [e for e in moved if e.id in placed]


def _last_id(entries: list[Entry]) -> str | None:
    """The id of the last entry that has one (not a header): the leaf an agent appends under."""
    return next((e.id for e in reversed(entries) if e.id and e.kind != HEADER), None)


def _seed(path: str) -> int:
    """Reproducible ids: the same input bytes always get the same repair."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(1 << 16))
        try:
            f.seek(-(1 << 16), os.SEEK_END)
        except OSError:
            pass
        h.update(f.read(1 << 16))
    h.update(str(os.path.getsize(path)).encode())
    return int.from_bytes(h.digest()[:8], "big")


