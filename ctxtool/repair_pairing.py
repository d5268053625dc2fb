"""Repair: tool pairing on the provider view, turn by turn (a mixin of ``repair._Planner``)."""

from __future__ import annotations

from .formats.common import SYNTHETIC_RESULT_TEXTS, brief, is_blank_text
from .model import HEADER, MESSAGE, Entry
from .repair_rewrite import _content_ref
from .scanloop import index_passes
from .view import UNSENT_STOPS, claude_segment, merges, pi_segment, sendable

ORPHAN = ("orphan-result", "tool result with no matching tool call in the previous assistant message")
ERRORED = ("errored-turn-result", "result of a tool call in an errored/aborted assistant turn (pi never replays that turn)")
_TAIL = 4096  # lines below a call without a result that _answered_only_later reads before it builds its table


class Pairing:
    """Tool pairing on what the model sees (pi, Claude Code, Messages JSONL), turn by turn."""

    def segment(self) -> list[Entry]:
        if self.name == "pi":
            # walk through dropped entries too: their children are re-linked to the
            # nearest kept ancestor, which lies on this same path
            known = self.linear_path
            if self.dropped and known is None:
                kept = [e for e in self.entries if e.kind != HEADER and e.index not in self.dropped]
                if all(e.id is None for e in kept):
                    known = kept  # version 1 once the dropped lines (which had ids) are gone: a linear list
            path, start, _ = pi_segment(self.entries, known)
            if self.dropped:
                path = self._stood_in(path)
                if path and all(e.index in self.dropped for e in path):
                    # the leaf's whole path is dropped (a last line that is no pi entry, with no parent): the
                    # repaired file ends at the last kept line, and pi resumes there (keep_leaf has no branch to keep)
                    last = next((k for k in range(len(self.entries) - 1, -1, -1)
                                 if self.entries[k].kind != HEADER and self.entries[k].index not in self.dropped), None)
                    if last is not None:
                        path, start, _ = pi_segment(self.entries[:last + 1])
                        path = self._stood_in(path)
            self.active_path = path  # links do not change again before relink(): reused there
            dropped = self.dropped
            return [e for e in path[start:] if e.index not in dropped] if dropped else path[start:]
        dropped = self.dropped
        if self.name == "claude" and self.known_view is not None and not dropped and not self.structure_changed:
            self.walked_view = self.known_view  # nothing dropped or re-linked: the file's view as scanned
            return self.walked_view
        live = [e for e in self.entries if e.index not in dropped] if dropped else list(self.entries)
        if self.name == "claude":
            self.walked_view = claude_segment(live)
            return self.walked_view
        return live

    def _stood_in(self, path: list[Entry]) -> list[Entry]:
        """pi's path with each dropped line whose id a kept line holds (a line written twice, or a damaged
        copy of one) replaced by that kept line: in the repaired file the id is the kept line's, so pi's
        walk goes through it there; once (a copy that hangs off the line it copies would put that line on
        the path twice)."""
        on_path: set = set()
        stood = []
        for e in path:
            x = self._stand_in(e)
            if x is not e and x.index in on_path:
                continue
            on_path.add(x.index)
            stood.append(x)
        return stood

    def _stand_in(self, e: Entry) -> Entry:
        """``e``, or when it is dropped, the kept line with its id (the first copy of a duplicate line)."""
        if e.index not in self.dropped:
            return e
        copy = self.copies.get(e.index)
        if copy is not None:
            return copy
        if self._kept_ids is None:
            self._kept_ids = {}
            for x in self.entries:
                if x.id is not None and x.kind != HEADER and x.index not in self.dropped:
                    self._kept_ids[x.id] = x
        i = self.renamed_from.get(e.index, e.id)  # a dropped line renamed as a duplicate: the id it had
        return self._kept_ids.get(i, e) if i is not None else e

    def pair_again_if_path_gone(self) -> None:
        """pi: when pairing dropped every line of the path it paired (a last line that is a lone orphan
        result), the repaired file ends at another line, and pi resumes there: that line's path is paired
        too (``segment`` walks from the last kept line then)."""
        for _ in range(3):
            if not self.active_path or any(e.index not in self.dropped for e in self.active_path):
                return
            if not any(e.kind != HEADER and e.index not in self.dropped for e in self.entries):
                return
            self._kept_ids = None  # the kept line of an id, as the drops now stand
            self.pair()

    def pair(self):
        """One pass over what the model sees, turn by turn, grouped exactly as the view groups them (the C part's
        ``Rows.pair`` where it is built: the same loop, the simple turn settled there, every other turn here)."""
        seq = [e for e in self.segment() if e.kind == MESSAGE and not (e.extra and e.extra.get("exclude"))]
        seen_calls: set[str] = set()
        skipped: set[str] = set()  # call ids of assistant turns the agent never sends (errored/aborted)
        merge = merges(self.name, "assistant")
        passes = index_passes()
        i = passes.pair(self, seq, merge, UNSENT_STOPS, seen_calls, skipped, self.CHANGE, self.name == "pi",
                        self._id_sep()) if passes is not None else None
        i, n = i or 0, len(seq)  # from where the C part stopped (None: it did nothing)
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
            rs = s.results if s.index not in live else self.results_of(s)
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

    def _synthetic_beside_real(self, span: list[Entry], by_call_id: dict) -> set:
        """The results of ``span`` that a repair made (ctxtool's or OpenClaw's synthetic text) for a call that has more
        results than calls and a real one among them: {(index, result idx)}. Dropped first, so that the matching keeps
        the real output (a tool's result appended while a repair ran, after the synthetic one it wrote)."""
        if self.client_heals_pairing:
            return set()
        per_id: dict[str, list] = {}
        for s in span:
            for r in self.results_of(s):
                if r.id in by_call_id:
                    per_id.setdefault(r.id, []).append((s, r))
        out: set = set()
        loaded: dict[int, dict] = {}  # each line read once (one message may hold thousands of results)
        for cid, rs in per_id.items():
            extra = len(rs) - len(by_call_id[cid])
            if extra <= 0 or not any(r.is_error for _, r in rs):  # (a repair's result is an error result)
                continue
            made = []
            for s, r in rs:
                if r.is_error:
                    obj = loaded.get(s.index)
                    if obj is None:
                        obj = loaded[s.index] = self.t.load(s)
                    if _result_text(self.name, obj, r) in SYNTHETIC_RESULT_TEXTS:
                        made.append((s, r))
            if len(made) < len(rs):  # a real result is there
                out.update((s.index, r.idx) for s, r in made[:extra])
        return out

    def _final_call_id(self, u: Entry, c, seen_calls: set[str]) -> str:
        """The id call ``c`` is sent with: its own, or renamed when an earlier call of the request used it."""
        fid = c.id
        if fid in seen_calls:
            sep = self._id_sep()
            n = self.rename_counter.get(c.id, 1) + 1
            while f"{c.id}{sep}{n}" in seen_calls:
                n += 1
            self.rename_counter[c.id] = n
            fid = f"{c.id}{sep}{n}"
            self.edit(u).setdefault("rename_calls", {})[c.idx] = fid
            self.change("reused-id", "rewritten", u, c.id, f"tool call id {c.id} was already used earlier in the request; renamed {fid}")
        seen_calls.add(fid)
        return fid

    def _id_sep(self) -> str:
        """What a renamed call id puts before its number. pi-ai's own scheme is id_N; Claude Code takes an id_N
        for one of its own and does not pair it with its result (judged), so its calls get id-N."""
        return "-" if self.name == "claude" else "_"

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
        cursor: dict[str, int] = {}  # by call id: how many of its calls are taken
        first_remainder = None
        mixed_first = False  # the first remainder is a message with results of its own, and text after them
        moved_entries: dict[int, Entry] = {}  # by index, in the order found
        synthetic = self._synthetic_beside_real(span, by_call_id)
        for s in span:
            for r in list(self.results_of(s)):
                if synthetic and (s.index, r.idx) in synthetic:
                    self._drop_result(s, r, "duplicate-result", "a synthetic result (a repair's) for a call whose real "
                                      "result is in the file too: the real one is kept")
                    continue
                ks = by_call_id.get(r.id)
                k = None
                if ks is not None:  # calls of an id are taken in order: a cursor finds the first untaken one
                    j = cursor.get(r.id, 0)
                    if j < len(ks):
                        k = ks[j]
                        cursor[r.id] = j + 1
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
        # the remainder, once every drop of the turn is known: the first message with more than results
        # (a text line, or a line whose results were all dropped); the messages with results after it are
        # moved back to the calls
        answering = {s.index for s, _ in taken.values()}
        for pos, s in enumerate(span):
            if not self.alive(s):
                continue
            if first_remainder is not None:
                if s.index in answering:
                    moved_entries.setdefault(s.index, s)
                continue
            if not self.results_of(s):
                first_remainder = pos
            elif not self.client_heals_pairing and self._other_blocks_left(s):
                # results of later lines would come after its other blocks in the message the lines merge
                # into: they are moved before it (its own results are put first below), when they hold
                # results alone (two or more lines with more than results: _gather_results)
                later = [x for x in span[pos + 1:] if self.alive(x) and self.results_of(x)]
                if later and not any(self._other_blocks_left(x) for x in later):
                    first_remainder = pos
                    mixed_first = True
        order_ids = [final_id[k] for k in range(len(calls))]
        if self.name == "messages" and self._gather_results(unit[-1], span, order_ids, calls, final_id, taken):
            return
        # the anchor: the last span entry before the first remainder message (or the unit)
        anchor = unit[-1]
        limit = first_remainder if first_remainder is not None else len(span)
        for s in span[:limit]:
            if self.alive(s):
                anchor = s
        base = self.key(anchor)
        sub = base[1]
        missing = [k for k in range(len(calls)) if k not in taken]
        host = anchor if (missing and anchor is not unit[-1] and self.name != "pi" and self.results_of(anchor)
                          and anchor.nblocks > len(self.results_of(anchor))) else None
        synth_sub = None  # synthetic results go after the moved ones, unless a moved message holds more than results
        if missing and host is None and any(self.alive(s) and s.nblocks > len(self.results_of(s)) for s in moved_entries.values()):
            synth_sub = sub  # then right after the anchor, so that every result of the turn comes before that text
            sub += len(missing)
        # the messages holding only results first: the results of a message with more after them (put
        # first in it) are then followed by no other result in the message the lines merge into
        for s in sorted(moved_entries.values(), key=lambda x: x.nblocks > len(self.results_of(x))):
            if not self.alive(s):
                continue
            if s.nblocks > len(self.results_of(s)):
                # mixed content: keep the line where it is but put its results first
                self.edit(s)["results_first"] = order_ids
            sub += 1
            self.keys[s.index] = (base[0], sub)
            self.change("moved-result", "moved", s, ",".join(r.id for r in self.results_of(s)),
                        "tool result moved right after its tool call (it came after another message)")
        for s in span[:limit + 1] if mixed_first else span[:limit]:
            if self.alive(s) and s.nblocks > len(self.results_of(s)) and self._results_not_first(s):
                self.edit(s)["results_first"] = order_ids
                self.change("moved-result", "rewritten", s, None, "tool_result blocks moved before the other blocks of the message")
        if missing and self.client_heals_pairing:
            # the client keeps a call whose result stands anywhere in the file (with its "missing" result), and drops
            # one with none: a call whose results all stand after a later call of its id, which takes them and is
            # renamed with them, would be dropped after repair, its input with it; it gets a result of its own here
            # (judge fuzz seed 1011, case 0115: a call id of the first turn made the last turn's)
            missing = [k for k in missing if self._answered_only_later(*calls[k])]
            host = None
        if not missing:
            return
        if synth_sub is not None:
            sub = synth_sub
        loaded: dict[int, dict] = {}  # each calling line read once, however many of its calls lack a result
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
            call_obj = loaded.get(u.index)
            if call_obj is None:
                call_obj = loaded[u.index] = self.t.load(u)
                if u.id is None and self.name == "pi" and self._tree():
                    # its id is no string (a damaged line): the result could not follow it, and pi would
                    # resume at the result alone. It gets an id of its own
                    new = self.fmt.new_id(self.taken_ids, self.rng)
                    self.change("invalid-id", "rewritten", u, None, f"id {brief(call_obj.get('id'))} is not a string; "
                                f"renamed {new} so that the synthetic result can follow it")
                    self.edit(u)["set_id"] = new
                    u.id = new
                if u.id is not None:
                    self.fmt.set_id(call_obj, u.id)  # as planned: a renamed duplicate id is the result's parent
            obj = self.fmt.synthetic_result(call_obj, fid, c.name, ts=u.ts, with_ids=bool(u.id) or self.name == "claude", taken=self.taken_ids, rng=self.rng)
            sub += 1
            self._synth_entry(obj, key=(base[0], sub))
            self.change("missing-result", "inserted", None, fid,
                        f"synthetic error result for tool call {c.name} (line {u.lineno}) with no result")

    def _answered_only_later(self, u: Entry, c) -> bool:
        """Whether every result of call ``c``'s id (of line ``u``, which has none of its own) stands after a later call
        of that id, in file order."""
        table = getattr(self, "_id_lines", None)
        if table is None:
            # most calls without a result are in a turn cut at the end of the file: when no line in the few below
            # it, up to the end, makes a call of its id, no table is needed (building it walks every line)
            entries, k = self.entries, u.index
            tail = entries[k + 1:k + 1 + _TAIL] if k < len(entries) and entries[k] is u else None
            if tail is not None and k + 1 + _TAIL >= len(entries) and \
                    not any(c.id == x.id for e in tail if e.kind == MESSAGE and e.calls for x in e.calls):
                return False
        if table is None:  # id -> (the lines of its calls, the lines of its results), in file order
            table = self._id_lines = {}
            alive = self.alive
            for e in self.entries:
                if e.kind == MESSAGE and alive(e):  # (only a message holds calls or results: most lines are none)
                    for x in e.calls:
                        table.setdefault(x.id, ([], []))[0].append(e.index)
                    for r in e.results:
                        table.setdefault(r.id, ([], []))[1].append(e.index)
        calls, results = table.get(c.id, ((), ()))
        later = next((i for i in calls if i > u.index), None)
        return later is not None and bool(results) and min(results) > later

    def _tree(self) -> bool:
        """pi: the file links its entries by id (version 2 and later), not a linear version 1 list."""
        dropped = self.dropped
        return any(e.id is not None for e in self.entries if e.kind != HEADER and e.index not in dropped)

    def _gather_results(self, u: Entry, span: list[Entry], order_ids: list, calls: list, final_id: dict, taken: dict) -> bool:
        """Messages JSONL: when two or more of the turn's lines holding results hold other blocks too, no
        order of whole lines puts every result first in the message they merge into. The results of the
        later lines are then moved into the first (their blocks, as they are), put first there, and
        synthetic results for calls without one join them; a line left with nothing is dropped. The
        first is moved up to the calls when a line of other content stands before it. False: not needed."""
        holders = [s for s in span if self.alive(s) and self.results_of(s)]
        if sum(1 for s in holders if self._other_blocks_left(s)) < 2:
            return False
        host = holders[0]
        add = self.edit(host).setdefault("add_results", [])
        for s in holders[1:]:
            content = _content_ref(self.name, self.t.load(s))
            renamed = self.edits.get(s.index, {}).get("rename_results", {})
            moved = list(self.results_of(s))
            for r in moved:
                block = dict(content[r.idx])
                if r.idx in renamed:
                    block["tool_use_id"] = renamed[r.idx]
                add.append(block)
            gone = self.edit(s).setdefault("drop_blocks", set())
            gone.update(r.idx for r in moved)
            self.live_results[s.index] = {}
            detail = f"tool result moved into line {host.lineno}, with the turn's other results (they must come first)"
            if self._other_blocks_left(s):
                for r in moved:
                    self.change("moved-result", "rewritten", s, r.id, detail)
            else:
                self.drop(s, "moved-result", detail, ",".join(r.id for r in moved))
        for k in range(len(calls)):
            if k not in taken:
                c = calls[k][1]
                block = self.fmt.synthetic_result({}, final_id[k], c.name, ts=u.ts, with_ids=False, taken=self.taken_ids, rng=self.rng)
                add.extend(block["content"])
                self.change("missing-result", "inserted", host, final_id[k], f"synthetic error result for tool call {c.name} added to this message")
        self.edit(host)["results_first"] = order_ids
        up = any(self.alive(s) and self._other_blocks_left(s) for s in span[:span.index(host)])
        if up:
            base = self.key(u)
            self.keys[host.index] = (base[0], base[1] + 1)
        self.change("moved-result", "rewritten", host, None, "tool_result blocks of the turn gathered before the other blocks"
                    " of the message" + ("; the line moved up to its tool calls" if up else ""))
        return True

    def _other_blocks_left(self, s: Entry) -> bool:
        """Whether ``s`` keeps a block that is no tool result (one repair does not drop)."""
        res = {r.idx for r in s.results}
        dropped = self.edits.get(s.index, {}).get("drop_blocks", ())
        return any(i not in res and i not in dropped for i in range(s.nblocks))

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
            live = self.live_results[s.index] = {x.idx: x for x in s.results}
        live.pop(r.idx, None)
        gone = self.edits.get(s.index, {}).get("drop_blocks", set())
        remaining = s.nblocks - len(gone) - 1
        if remaining > 0 and not live and self.name != "pi":
            # its last result goes: is anything the API counts as content left (not a stray value, not blank text)?
            content = _content_ref(self.name, self.t.load(s))
            if not any(isinstance(b, dict) and not is_blank_text(b) for i, b in enumerate(content) if i != r.idx and i not in gone):
                remaining = 0
        if self.name == "pi" or remaining <= 0:
            self.drop(s, kind, detail, r.id)
        else:
            self.edit(s).setdefault("drop_blocks", set()).add(r.idx)
            self.change(kind, "dropped", s, r.id, detail + " (block removed from the message)")


def _result_text(name: str, obj: dict, r) -> str | None:
    """The text of result ``r`` of line ``obj`` (its text blocks joined), or None when it has none of text."""
    content = _content_ref(name, obj)
    if name != "pi":  # a tool_result block among the message's blocks
        b = content[r.idx] if 0 <= r.idx < len(content) else None
        content = b.get("content") if isinstance(b, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return None
