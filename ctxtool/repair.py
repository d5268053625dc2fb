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

import bisect
import hashlib
import os
import random
import re
from dataclasses import dataclass, field

from . import commit
from .errors import FileChanged, InputError
from .formats import pi as pi_fmt
from .jsonl import atomic_write, dumps
from .lock import DEFAULT_TIMEOUT, SessionLocks
from .model import COMPACTION, HEADER, MESSAGE, Entry
from .transcript import Transcript, make_entry, no_gc, scan
from .validate import Violation, validate_entries
from .view import UNSENT_STOPS, claude_segment, linear, merges, pi_segment, sendable


@dataclass
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


LEAF_MARKER = "ctxtool.repair-leaf"  # customType of the entry that keeps pi on the repaired branch
ORPHAN = ("orphan-result", "tool result with no matching tool call in the previous assistant message")
ERRORED = ("errored-turn-result", "result of a tool call in an errored/aborted assistant turn (pi never replays that turn)")


class _Planner:
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
        self.live_results: dict[int, list] = {}
        self._next_synth = -1
        self.rng = random.Random(_seed(t.path))
        self.rename_counter: dict[str, int] = {}
        self.active_path: list[Entry] = []  # pi: root-to-leaf path after the structure fixes
        self.structure_changed = False  # fix_structure found links or ids to look at
        self.linear_path: list[Entry] | None = None  # pi: set when the entries form one chain in file order
        # Claude Code heals pairing itself when it resumes (claude_chain.heal): a call without a
        # result, an orphan or a second result are not damage it sends; repair leaves them as they
        # are (validate names them) and fixes only what the client would lose, reused call ids
        self.client_heals_pairing = self.name == "claude"
        self.claude_view: list[Entry] | None = None  # what pairing walked: the view when nothing changed
        # a subagent's own file (all sidechain), whose links may point into its parent session
        self.side_file = self.name == "claude" and all(
            e.get("sidechain") for e in t.entries if e.kind == MESSAGE)

    # ------------------------------------------------------------ helpers
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
        return e.results if live is None else live

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
            return
        body = [e for e in entries if self.alive(e)]
        version = 3 if any(e.id for e in body) else 1
        ts = min((e.ts for e in body if e.ts is not None), default=None)
        salvage = self._salvage_header()
        obj = pi_fmt.make_header(self.t.path, version=salvage.get("version", version), first_ts=ts,
                                 cwd=salvage.get("cwd"), rng=self.rng, session_id=salvage.get("id"),
                                 timestamp=salvage.get("timestamp"))
        e = self._synth_entry(obj, key=(-1, 0))
        self.change("header", "inserted", None, obj["id"],
                    f"rebuilt missing/invalid session header (version {obj.get('version', 1)}, cwd {obj['cwd'] or '(unknown)'}"
                    + (", id and fields salvaged from the damaged first line)" if salvage else ")"))
        return e

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
        resolve: dict[str, str] = {}
        first_line: dict[str, int] = {}
        first_entry: dict[str, Entry] = {}
        all_ids = {e.id for e in self.entries if e.id}
        prev: Entry | None = None
        for e in self.entries:
            if not self.alive(e) or e.kind == HEADER or e.id is None:
                continue
            p = e.parent
            if p is not None:
                if p in resolve:
                    if resolve[p] != p:
                        self._set_parent(e, resolve[p])
                        self.change("duplicate-id", "relinked", e, e.id, f"parent {p} is a duplicated id; linked to its latest occurrence {resolve[p]}")
                else:
                    kind = "cycle" if (p == e.id or p in all_ids) else "dangling-parent"
                    if kind == "dangling-parent" and self.name == "claude" and (prev is None or self.side_file):
                        # a link out of the file by design: a subagent or agent-acompact file points into
                        # the parent session, a file's first line may point into the session it came
                        # from. Only a lost line inside a main file cuts what the client sends.
                        kind = None
                    if kind is not None:
                        new_parent = prev.id if prev is not None else None
                        why = "points to itself" if p == e.id else ("points forward (cycle)" if kind == "cycle" else "points to no entry")
                        self._set_parent(e, new_parent)
                        self.change(kind, "relinked", e, e.id, f"parent {p} {why}; re-linked to {new_parent}")
            if e.id in resolve and self._same_line(first_entry[e.id], e):
                self.drop(e, "duplicate-line", f"the same line as line {first_line[e.id]}, written twice")
                continue
            if e.id in resolve:
                new = self.fmt.new_id(self.taken_ids, self.rng)
                self.change("duplicate-id", "rewritten", e, e.id, f"id {e.id} already used on line {first_line[e.id]}; renamed {new}")
                self.edit(e)["set_id"] = new
                resolve[e.id] = new
                e.id = new
                resolve[new] = new
            else:
                resolve[e.id] = e.id
                first_line[e.id] = e.lineno
                first_entry[e.id] = e
            prev = e

    def _links_sound(self) -> bool:
        """One cheap pass for the common case: ids unique, every parent an earlier entry."""
        body = [e for e in self.entries if e.kind != HEADER]
        if body and body[0].parent is None and linear(body):
            self.linear_path = body  # the leaf's path is the whole file: pairing reuses it
            return True  # one chain in file order (checked without a per-entry Python loop)
        seen: set = set()
        add = seen.add
        for e in self.entries:
            i = e.id
            if i is None or e.kind == HEADER:
                continue
            p = e.parent
            if i in seen or (p is not None and p not in seen):
                return False
            add(i)
        return True

    def _same_line(self, a: Entry, b: Entry) -> bool:
        return a.length == b.length and self.t.raw(a) == self.t.raw(b)

    def _set_parent(self, e: Entry, parent):
        e.parent = parent
        self.edit(e)["set_parent"] = parent

    # ------------------------------------------------------------ hygiene
    def hygiene(self):
        dropped = self.dropped
        for e in self.entries:
            if e.index in dropped:
                continue
            if e.extra and e.extra.get("malformed"):
                self.drop(e, "malformed-entry", e.extra["malformed"])
                continue
            if e.kind != MESSAGE:
                continue
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
            elif e.role == "user" and e.blank_text:
                self.edit(e)["fix_blank_user"] = True
                self.change("blank-user", "rewritten", e, e.id, "blank user text replaced by the fallback \"(continue)\"")

    # ------------------------------------------------------------ pairing
    def segment(self) -> list[Entry]:
        if self.name == "pi":
            # walk through dropped entries too: their children are re-linked to the
            # nearest kept ancestor, which lies on this same path
            path, start, _ = pi_segment(self.entries, self.linear_path)
            self.active_path = path  # links do not change again before relink(): reused there
            dropped = self.dropped
            return [e for e in path[start:] if e.index not in dropped] if dropped else path[start:]
        dropped = self.dropped
        live = [e for e in self.entries if e.index not in dropped] if dropped else list(self.entries)
        if self.name == "claude":
            self.claude_view = claude_segment(live)
            return self.claude_view
        return live

    def remember_first_kept(self):
        """Which entry each pi compaction keeps from (before anything moves or is dropped)."""
        self.first_kept: dict[int, Entry] = {}
        if not any(e.kind == COMPACTION for e in self.entries):
            return
        by_id = {e.id: e for e in self.entries if e.id}
        shift = 0 if self.entries and self.entries[0].kind == HEADER else 1
        by_pos = {e.index + shift: e for e in self.entries}
        for e in self.entries:
            if e.kind != COMPACTION:
                continue
            target = by_id.get(e.get("first_kept")) if e.get("first_kept") else None
            if target is None and e.get("first_kept_index") is not None:
                target = by_pos.get(e.get("first_kept_index"))
            if target is not None:
                self.first_kept[e.index] = target

    def fix_first_kept(self, order: list[Entry]):
        """Re-point firstKeptEntryId (v1: firstKeptEntryIndex) at the first kept entry that is
        still there, so a dropped orphan does not make pi forget the whole kept segment."""
        if not self.first_kept:
            return
        pos = {e.index: k for k, e in enumerate(order)}
        keys = [self.key(e) for e in order]
        for comp_index, target in self.first_kept.items():
            comp = next((e for e in order if e.index == comp_index), None)
            if comp is None:
                continue
            if target.index in pos:
                new = target
            else:
                k = bisect.bisect_left(keys, self.key(target))
                new = order[k] if k < len(order) else None
                if new is None or new is comp:
                    continue
            if comp.get("first_kept") is not None and new.id != comp.get("first_kept"):
                self.edit(comp)["set_first_kept"] = new.id
                self.change("compaction", "relinked", comp, comp.id,
                            f"firstKeptEntryId {comp.get('first_kept')} was removed; now {new.id} (the next kept entry)")
            elif comp.get("first_kept_index") is not None:
                idx = pos[new.index] + (0 if order[0].kind == HEADER else 1)
                if idx != comp.get("first_kept_index"):
                    self.edit(comp)["set_first_kept_index"] = idx
                    self.change("compaction", "rewritten", comp, None,
                                f"firstKeptEntryIndex {comp.get('first_kept_index')} -> {idx} (entries before it were added or removed)")

    def pair(self):
        """One pass over what the model sees, turn by turn, grouped exactly as the view groups them."""
        seq = [e for e in self.segment() if e.kind == MESSAGE and not (e.extra and e.extra.get("exclude"))]
        seen_calls: set[str] = set()
        skipped: set[str] = set()  # call ids of assistant turns the agent never sends (errored/aborted)
        merge = merges(self.name, "assistant")
        i, n = 0, len(seq)
        while i < n:
            e = seq[i]
            if e.role != "assistant":
                if e.results:
                    self._drop_unmatched(e, skipped)
                i += 1
                continue
            if not sendable(e):
                skipped.update(c.id for c in e.calls if c.id)
                i += 1
                continue
            unit, span = [e], []
            j = i + 1
            while j < n and seq[j].role == "assistant":
                if not sendable(seq[j]):
                    skipped.update(c.id for c in seq[j].calls if c.id)
                elif merge:
                    unit.append(seq[j])
                else:
                    break
                j += 1
            while j < n:
                s2 = seq[j]
                if s2.role == "assistant":
                    if not (s2.empty or s2.stop in UNSENT_STOPS):  # sendable(s2), inlined: the hot loop
                        break
                    skipped.update(c.id for c in s2.calls if c.id)
                else:
                    span.append(s2)
                j += 1
            self._pair_turn(unit, span, seen_calls, skipped)
            i = j

    def _pair_simple_turn(self, u: Entry, span: list[Entry], seen_calls: set[str]) -> bool:
        """The common turn, settled without the general matching: one assistant whose calls are
        answered, in order, by the next messages, each a single result and nothing else, and no
        other results in the span. Only reused ids may need renaming. False (nothing done) otherwise."""
        calls = self.calls_of(u)
        n = len(calls)
        if not n or len(span) < n:
            return False
        dropped, pi, live = self.dropped, self.name == "pi", self.live_results
        ids = set()
        for k in range(n):
            c, s = calls[k], span[k]
            rs = live.get(s.index, s.results)
            if len(rs) != 1 or s.nblocks != 1 or s.index in dropped:
                return False
            r = rs[0]
            if r.id != c.id or c.id in ids or (pi and not (r.name and not r.name.isspace())):
                return False
            ids.add(c.id)
        for s in span[n:]:
            if live.get(s.index, s.results) and s.index not in dropped:
                return False
        if ids.isdisjoint(seen_calls):
            seen_calls.update(ids)
            return True
        final = []
        for c in calls:
            final.append(self._final_call_id(u, c, seen_calls))
        for k in range(n):
            if final[k] != calls[k].id:
                s = span[k]
                r = self.results_of(s)[0]
                self.edit(s).setdefault("rename_results", {})[r.idx] = final[k]
                self.change("reused-id", "rewritten", s, r.id, f"result renamed {final[k]} with its tool call")
        return True

    def _final_call_id(self, u: Entry, c, seen_calls: set[str]) -> str:
        """The id call ``c`` is sent with: its own, or renamed when an earlier call of the request used it."""
        fid = c.id
        if fid in seen_calls:
            # pi-ai's own scheme is id_N; Claude Code takes an id_N for one of its own and does not
            # pair it with its result (judged), so its calls get id-N
            sep = "-" if self.name == "claude" else "_"
            n = self.rename_counter.get(c.id, 1) + 1
            while f"{c.id}{sep}{n}" in seen_calls:
                n += 1
            self.rename_counter[c.id] = n
            fid = f"{c.id}{sep}{n}"
            self.edit(u).setdefault("rename_calls", {})[c.idx] = fid
            self.change("reused-id", "rewritten", u, c.id, f"tool call id {c.id} was already used earlier in the request; renamed {fid}")
        seen_calls.add(fid)
        return fid

    def _drop_unmatched(self, s: Entry, skipped: set):
        if self.client_heals_pairing:
            return
        for r in list(self.results_of(s)):
            self._drop_result(s, r, *(ERRORED if r.id in skipped else ORPHAN))

    def _pair_turn(self, unit: list[Entry], span: list[Entry], seen_calls: set[str], skipped: set[str]):
        if len(unit) == 1 and self._pair_simple_turn(unit[0], span, seen_calls):
            return
        calls = [(u, c) for u in unit for c in self.calls_of(u)]
        if not calls:
            for s in span:
                self._drop_unmatched(s, skipped)
            return
        # rename call ids already used by an earlier turn or earlier in this turn
        final_id: dict[int, str] = {}
        by_call_id: dict[str, list[int]] = {}
        for k, (u, c) in enumerate(calls):
            final_id[k] = self._final_call_id(u, c, seen_calls)
            by_call_id.setdefault(c.id, []).append(k)
        # match results to calls, first untaken call with the same original id
        taken: dict[int, tuple[Entry, object]] = {}
        first_remainder = None
        moved_entries = []
        for pos, s in enumerate(span):
            results = self.results_of(s)
            has_other = s.nblocks > len(results) or not results
            for r in list(results):
                k = next((k for k in by_call_id.get(r.id, ()) if k not in taken), None)
                if k is None:
                    if self.client_heals_pairing:
                        continue
                    if r.id in by_call_id:
                        self._drop_result(s, r, "duplicate-result", "second result for the same tool call in this turn")
                    else:
                        self._drop_result(s, r, *(ERRORED if r.id in skipped else ORPHAN))
                    continue
                taken[k] = (s, r)
                if self.name == "pi" and not (r.name or "").strip():
                    call_name = calls[k][1].name or "unknown"
                    self.edit(s)["fill_result_name"] = call_name
                    self.change("result-name", "rewritten", s, r.id, f"tool result without a toolName given its call's name {call_name}")
                if final_id[k] != r.id:
                    self.edit(s).setdefault("rename_results", {})[r.idx] = final_id[k]
                    self.change("reused-id", "rewritten", s, r.id, f"result renamed {final_id[k]} with its tool call")
                if first_remainder is not None and s not in moved_entries:
                    moved_entries.append(s)
            if first_remainder is None and has_other and self.alive(s) and not self.results_of(s):
                first_remainder = pos
        # the anchor: the last span entry before the first remainder message (or the unit)
        anchor = unit[-1]
        limit = first_remainder if first_remainder is not None else len(span)
        for s in span[:limit]:
            if self.alive(s):
                anchor = s
        base = self.key(anchor)
        sub = base[1]
        order_ids = [final_id[k] for k in range(len(calls))]
        for s in moved_entries:
            if not self.alive(s):
                continue
            if s.nblocks > len(self.results_of(s)):
                # mixed content: keep the line where it is but put its results first
                self.edit(s)["results_first"] = order_ids
            sub += 1
            self.keys[s.index] = (base[0], sub)
            self.change("moved-result", "moved", s, ",".join(r.id for r in self.results_of(s)),
                        "tool result moved right after its tool call (it came after another message)")
        for s in span[:limit]:
            if self.alive(s) and s.nblocks > len(self.results_of(s)) and self._results_not_first(s):
                self.edit(s)["results_first"] = order_ids
                self.change("moved-result", "rewritten", s, None, "tool_result blocks moved before the other blocks of the message")
        missing = [k for k in range(len(calls)) if k not in taken]
        if not missing or self.client_heals_pairing:
            return
        host = anchor if (anchor is not unit[-1] and self.name != "pi" and self.results_of(anchor)
                          and anchor.nblocks > len(self.results_of(anchor))) else None
        for k in missing:
            u, c = calls[k]
            fid = final_id[k]
            if host is not None:
                block = self.fmt.synthetic_result({}, fid, c.name, ts=u.ts, with_ids=False, taken=self.taken_ids, rng=self.rng)
                content = block["message"]["content"] if "message" in block else block["content"]
                self.edit(host).setdefault("add_results", []).extend(content)
                self.edit(host)["results_first"] = order_ids
                self.change("missing-result", "inserted", host, fid, f"synthetic error result for tool call {c.name} added to this message")
                continue
            obj = self.fmt.synthetic_result(self.t.load(u), fid, c.name, ts=u.ts, with_ids=u.id is not None or self.name == "claude", taken=self.taken_ids, rng=self.rng)
            sub += 1
            self._synth_entry(obj, key=(base[0], sub))
            self.change("missing-result", "inserted", None, fid,
                        f"synthetic error result for tool call {c.name} (line {u.lineno}) with no result")

    def _results_not_first(self, s: Entry) -> bool:
        res = {r.idx for r in self.results_of(s)}
        dropped = self.edits.get(s.index, {}).get("drop_blocks", set())
        seen_other = False
        for i in range(s.nblocks):
            if i in dropped:
                continue
            if i in res:
                if seen_other:
                    return True
            else:
                seen_other = True
        return False

    def _drop_result(self, s: Entry, r, kind, detail):
        live = self.live_results.get(s.index)
        if live is None:
            live = self.live_results[s.index] = list(s.results)
        if r in live:
            live.remove(r)
        remaining = s.nblocks - len(self.edits.get(s.index, {}).get("drop_blocks", set())) - 1
        if self.name == "pi" or remaining <= 0:
            self.drop(s, kind, detail, r.id)
        else:
            self.edit(s).setdefault("drop_blocks", set()).add(r.idx)
            self.change(kind, "dropped", s, r.id, detail + " (block removed from the message)")

    # ------------------------------------------------------------ synthetic entries
    def _synth_entry(self, obj: dict, key: tuple) -> Entry:
        e = make_entry(self.fmt, obj, self._next_synth, 0, 0, 0, self.t.eol)
        self._next_synth -= 1
        self.keys[e.index] = key
        self.synthetic[e.index] = (e, obj)
        return e

    # ------------------------------------------------------------ trailing assistant
    def trim(self):
        order = self.ordered()
        while len(order) > 1:
            last = order[-1]
            if last.kind == MESSAGE and last.role == "assistant":
                if last.index < 0:
                    break
                self.drop(last, "trailing-assistant", "trailing assistant message trimmed (avoids the prefill 400)")
                order.pop()
            else:
                break

    # ------------------------------------------------------------ ordering and links
    def ordered(self) -> list[Entry]:
        """The kept entries in output order: the file's order, with moved and inserted entries at their keys."""
        keys, dropped = self.keys, self.dropped
        if not keys:
            return [e for e in self.entries if e.index not in dropped] if dropped else list(self.entries)
        normal, special = [], []
        for e in self.entries:
            i = e.index
            if i in keys:
                if i not in dropped:
                    special.append(e)
            elif i not in dropped:
                normal.append(e)
        special += [e for e, _ in self.synthetic.values()]
        special.sort(key=self.key)
        # merge: a normal entry sorts as (index, 0), so (a, b) goes after index a when b > 0
        idx = [e.index for e in normal]
        out: list[Entry] = []
        start = 0
        for e in special:
            a, b = keys[e.index]
            pos = bisect.bisect_right(idx, a) if b > 0 else bisect.bisect_left(idx, a)
            out += normal[start:pos]
            start = max(start, pos)
            out.append(e)
        out += normal[start:]
        return out

    def relink(self, order: list[Entry]):
        """pi: every entry on the active path points at the entry before it; in pi and
        Claude Code files, an entry whose parent was removed points at its nearest kept ancestor."""
        if self.name == "messages" or all(e.id is None for e in order if e.kind != HEADER):
            return
        if not self.dropped and not self.keys and not self.structure_changed:
            return  # every entry is where it was and every parent is still there
        on_path: set[int] = set()
        if self.name == "pi":
            self._relink_path(order, on_path)
        # only a parent that was dropped can need a new link: look at those entries alone
        suspects = {e.id for e in self.entries if e.index in self.dropped and e.id} if self.dropped else set()
        if not suspects:
            return
        candidates, revived = [], set()
        for e in order:
            if e.id in suspects:
                revived.add(e.id)  # a dropped duplicate line whose first copy is kept
            if e.parent in suspects:
                candidates.append(e)
        gone = suspects - revived
        by_id = {e.id: e for e in self.entries if e.id}
        for e in candidates:
            if e.index in on_path or e.index < 0 or e.kind == HEADER or e.parent not in gone:
                continue
            p = by_id.get(e.parent)
            seen = set()
            while p is not None and p.id in gone and p.id not in seen:
                seen.add(p.id)
                p = by_id.get(p.parent) if p.parent else None
            want = p.id if p is not None and p.id not in gone else None
            old = e.parent
            e.parent = want
            self.edit(e)["set_parent"] = want
            self.change("parent", "relinked", e, e.id, f"parent {old} was removed; linked to its nearest kept ancestor {want}")

    def _relink_path(self, order: list[Entry], on_path: set[int]):
        on_path.update(e.index for e in self.active_path)
        path = [e for e in order if e.kind != HEADER and (e.index in on_path or e.index < 0)]
        for k, e in enumerate(path):
            want = path[k - 1].id if k > 0 else e.parent
            if k == 0 and e.parent is not None and e.parent not in {x.id for x in order}:
                want = None
            if e.parent != want:
                old = e.parent
                e.parent = want
                if e.index < 0:
                    self.synthetic_obj(e)["parentId"] = want
                else:
                    self.edit(e)["set_parent"] = want
                    self.change("parent", "relinked", e, e.id, f"parent {old} -> {want} (the entry before it on the active branch)")

    def keep_leaf(self, order: list[Entry]) -> None:
        """pi resumes at the last line of the file. When repair removed the old last line and
        the new one sits on another branch, append a ``custom`` entry (never sent to the model)
        under the repaired branch's leaf, so pi resumes the branch it was on."""
        if self.name != "pi" or not self.active_path or not order or order[-1].kind == HEADER:
            return
        on_path = {e.index for e in self.active_path}
        last = order[-1]
        if last.index in on_path or last.index < 0:
            return
        leaf = next((e for e in reversed(order) if e.kind != HEADER and (e.index in on_path or e.index < 0)), None)
        if leaf is None or leaf.id is None:
            return
        obj = {"type": "custom", "id": pi_fmt.new_id(self.taken_ids, self.rng), "parentId": leaf.id,
               "timestamp": pi_fmt.iso(max((e.ts for e in order if e.ts is not None), default=0.0)),
               "customType": LEAF_MARKER, "data": {"leaf": leaf.id, "replaces": last.id}}
        e = self._synth_entry(obj, key=(len(self.entries) + 1, 0))
        order.append(e)
        self.change("leaf", "inserted", None, obj["id"],
                    f"the last line is now on another branch (line {last.lineno}); marker under {leaf.id} keeps pi on the repaired branch")

    def synthetic_obj(self, e: Entry) -> dict:
        return self.synthetic[e.index][1]

    # ------------------------------------------------------------ materialize
    SLIM_EDITS = {"set_id", "set_parent", "rename_calls", "rename_results"}

    def slim_final(self, e: Entry) -> Entry | None:
        """The repaired index entry without reading the line again, when the edits only
        touch ids and links (the common case); None when the content must be re-read.
        Updated in place, as the planner already updates ids and parent links."""
        if e.index < 0:
            return None
        ed = self.edits.get(e.index)
        if not ed:
            return e
        if not ed.keys() <= self.SLIM_EDITS:
            return None
        if "set_id" in ed:
            e.id = ed["set_id"]
        if "set_parent" in ed:
            e.parent = ed["set_parent"]
        renames = ed.get("rename_calls")
        if renames:
            e.calls = tuple(c.renamed(renames[c.idx]) if c.idx in renames else c for c in e.calls)
        renames = ed.get("rename_results")
        if renames:
            e.results = tuple(r.renamed(renames[r.idx]) if r.idx in renames else r for r in e.results)
        return e

    def materialize(self, e: Entry, f=None) -> dict | None:
        """The edited object of ``e``, or None when its original bytes are kept."""
        if e.index < 0:
            return self.synthetic_obj(e)
        ed = self.edits.get(e.index)
        if not ed:
            return None
        obj = self.t.load(e, f)
        if "set_id" in ed:
            if e.kind == HEADER:
                obj["id"] = ed["set_id"]
            else:
                self.fmt.set_id(obj, ed["set_id"])
        content = _content_ref(self.name, obj)
        if ed.get("rename_calls"):
            for idx, new in ed["rename_calls"].items():
                content[idx]["id"] = new
        if ed.get("rename_results"):
            for idx, new in ed["rename_results"].items():
                if self.name == "pi":
                    obj["message"]["toolCallId"] = new
                else:
                    content[idx]["tool_use_id"] = new
        if ed.get("fill_result_name"):
            self.fmt.fill_result_name(obj, ed["fill_result_name"])
        if ed.get("drop_blocks"):
            self.fmt.drop_blocks(obj, ed["drop_blocks"])
        if ed.get("fix_error_text"):
            self.fmt.fix_empty_error_turn(obj)
        if ed.get("fix_blank_user"):
            self.fmt.fix_blank_user(obj)
        if ed.get("add_results"):
            self.fmt.add_result_blocks(obj, ed["add_results"])
        if ed.get("results_first"):
            _results_first(self.name, obj, ed["results_first"])
        if "set_parent" in ed:
            self.fmt.set_parent(obj, ed["set_parent"])
        if "set_first_kept" in ed:
            obj["firstKeptEntryId"] = ed["set_first_kept"]
        if "set_first_kept_index" in ed:
            obj["firstKeptEntryIndex"] = ed["set_first_kept_index"]
        return obj


def _content_ref(name: str, obj: dict) -> list:
    if name == "messages":
        c = obj.get("content")
    else:
        m = obj.get("message") or {}
        c = m.get("content")
    return c if isinstance(c, list) else []


def _results_first(name: str, obj: dict, order: list[str]) -> None:
    holder = obj if name == "messages" else obj["message"]
    content = holder.get("content")
    if not isinstance(content, list):
        return
    rank = {cid: i for i, cid in enumerate(order)}
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    results.sort(key=lambda b: rank.get(b.get("tool_use_id"), len(rank)))
    holder["content"] = results + [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]


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
                obj = self.planner.materialize(e, f)
                if obj is None:
                    yield t.raw(e, f) + (e.eol or eol)
                else:
                    yield dumps(obj) + eol


def plan_repair(t: Transcript, *, trim_trailing: bool = False) -> Plan:
    """Plan the repair of a scanned transcript. The planner updates ids, parent links
    and tool ids of ``t.entries`` in place: validate the original before calling this."""
    p = _Planner(t)
    p.file_level()
    if p.name == "pi":
        p.fix_header()
    if p.name in ("pi", "claude"):
        p.fix_structure()
    if p.name == "pi":
        p.remember_first_kept()
    p.hygiene()
    p.pair()
    if trim_trailing:
        p.trim()
    order = p.ordered()
    p.relink(order)
    if p.name == "pi":
        p.keep_leaf(order)
        p.fix_first_kept(order)
    if order and not order[-1].eol and order[-1].index >= 0 and not p.edits.get(order[-1].index):
        p.changes.append(Change("final-newline", "added", order[-1].lineno, None, "last line had no line ending"))
    edits = p.edits
    if not edits and all(e.index >= 0 for e in order):  # nothing to rewrite: the index as scanned
        return Plan(t, p, order, list(order), p.changes)
    final = []
    with open(t.path, "rb") as f:
        for e in order:
            if e.index >= 0 and e.index not in edits:
                final.append(e)  # untouched: the index entry as scanned
                continue
            slim = p.slim_final(e)
            if slim is not None:
                final.append(slim)
                continue
            obj = p.materialize(e, f)
            if obj is None:
                final.append(e)
            else:
                final.append(make_entry(t.fmt, obj, e.index, e.lineno, e.offset, e.length, e.eol))
    return Plan(t, p, order, final, p.changes)


REPLANS = 3  # plans made again when lines appended meanwhile point at entries the repair removes


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
        lock = SessionLocks(path, timeout=lock_timeout, break_stale=break_stale_lock)
        lock.acquire()
        notices = lock.notices + commit.clean_leftovers(real)
    try:
        with no_gc():
            for attempt in range(REPLANS):
                try:
                    report = _repair(real if in_place else path, fmt, check, None if in_place else output,
                                     backup, trim_trailing, in_place, violations_before)
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
    finally:
        if lock is not None:
            lock.release()


def _repair(path, fmt, check, output, backup, trim_trailing, in_place, with_before) -> RepairReport:
    """Scan, plan, validate before and after, and write (unless checking)."""
    ident = commit.identity(path) if in_place else None
    commit.phase("before-read", path)
    t = scan(path, fmt, stats=False)  # structure only: no character counts
    snap = commit.snapshot(path, t.size, expect=ident) if in_place else None
    old_leaf = _last_id(t.entries)  # before planning: the planner renames ids in place
    # before planning: the planner re-links entries in place
    before = validate_entries(t.format_name, t.entries) if with_before else None
    plan = plan_repair(t, trim_trailing=trim_trailing)
    report = RepairReport(path, t.format_name, plan.changes, t.lines, len(plan.order))
    report.before = before
    # nothing changed: the view pairing walked is the final one (Claude Code's costs a pass to build)
    same = plan.planner.claude_view if not plan.changes else None
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

        relink = commit.relink_for(t.format_name, old_leaf, _last_id(plan.final_entries), gone if dropped else frozenset())
        done = commit.commit(snap, plan.chunks(), relink=relink, backup=backup)
        report.backup, report.carried = done.backup, done.carried + done.carried_late
        report.notices += done.notices
    else:
        atomic_write(dest, plan.chunks(), mode=os.stat(path).st_mode & 0o7777)
    report.output = dest
    report.written = True
    return report


def _last_id(entries: list[Entry]) -> str | None:
    """The id of the last entry that has one (not a header): the leaf an agent appends under."""
    return next((e.id for e in reversed(entries) if e.id and e.kind != HEADER), None)


def _seed(path: str) -> int:
    """Reproducible ids: the same input bytes always get the same repair."""
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


