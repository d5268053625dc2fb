"""Repair: Codex rollouts' tool pairing by call_id, and a paginated file's last ordinal (a mixin of
``repair._Planner``)."""

from __future__ import annotations

import os
from collections import Counter
from itertools import chain

from . import commit
from .formats import codex as codex_fmt
from .formats.common import brief, parse_ts
from .model import HEADER, MESSAGE, Entry
from .scanloop import make_entry

def _ordinal(v) -> int | None:
    """A damaged ordinal as the number it says, where it says one (``"7"``, ``7.0``), else null."""
    if type(v) is float and v.is_integer():
        v = int(v)
    elif type(v) is str and v.isascii() and v.isdigit():
        v = int(v)
    return v if type(v) is int and 0 <= v <= codex_fmt.U64 else None


def _near_ts(entries: list[Entry], k: int) -> float | None:
    """The time of the nearest line before ``entries[k]`` that has one (after it, for none before)."""
    for j in chain(range(k - 1, -1, -1), range(k + 1, len(entries))):  # lazily: no copy of the index
        if entries[j].ts is not None:
            return entries[j].ts
    return None


def _near_ordinal(t, entries: list[Entry], k: int) -> int | None:
    """The ordinal of the nearest line before ``entries[k]`` that has one Codex reads (after it, for none
    before); None in a rollout whose lines carry none. Lines are read from the file until one is found."""
    with open(t.path, "rb") as f:
        for j in chain(range(k - 1, -1, -1), range(k + 1, len(entries))):
            e = entries[j]
            if e.extra is not None and "envelope" in e.extra:
                continue
            o = t.load(e, f).get("ordinal")
            if type(o) is int and 0 <= o <= codex_fmt.U64:
                return o
    return None


ORPHAN_OUTPUT = ("orphan-result", "output with no call in the history Codex sends (Codex drops it when it resumes)")


class CodexPairing:
    """Tool pairing of Codex rollouts (the Responses API pairs by call_id), and the ordinal of a paginated file."""

    def drop_meta_copies(self):
        """A rollout's ``session_meta`` line written again later, byte for byte: Codex starts the
        history over from it, so everything before it is no longer sent (judged). The copy is dropped."""
        first = None
        for e in self.entries:
            if e.kind != HEADER or e.index in self.dropped:
                continue
            if first is None:
                first = e
            elif e.id is not None and e.id == first.id and self._same_line(first, e):
                self.drop(e, "duplicate-line", f"the session_meta line again (line {first.lineno}): Codex would "
                          "start the history over from it")

    def drop_item_copies(self):
        """An item line written again with the same item id and the same item (a copy, a sync tool, a writer's retry):
        Codex sends both with one id, which the Responses API refuses ("Duplicate item found with id"). The copy is
        dropped (before pairing: a call and its output written twice are then the one call and output they were)."""
        first: dict = {}
        for e in self.entries:
            if e.kind != MESSAGE or e.id is None or e.index in self.dropped:
                continue
            x = e.extra
            if x is not None and x.get("sub") is not None:  # an item inside a compacted line
                continue
            was = first.get(e.id)
            if was is None:
                first[e.id] = e
            elif self.t.load(e).get("payload") == self.t.load(was).get("payload"):
                self.drop(e, "duplicate-line", f"the same item again (line {was.lineno}): Codex would send its id twice, "
                          "which the API refuses")

    def fix_envelopes(self):
        """Lines Codex's reader skips for their envelope alone: a ``timestamp`` that is no string, an
        ``ordinal`` that is no unsigned integer (judged; a ``session_meta`` line so damaged makes the
        whole rollout one Codex cannot resume). The timestamp is set from the line's own
        ``payload.timestamp`` where it has one, else from the nearest line before it (after it, for
        the first); an ordinal written as a number's text or an integral float becomes that integer,
        another one the nearest line's (null in a rollout without ordinals): the line is read again, as it was written."""
        entries = self.entries
        for e in [e for e in entries if e.extra is not None and "envelope" in e.extra]:  # one quick pass
            if e.index in self.dropped:
                continue
            k = e.index if e.index < len(entries) and entries[e.index] is e else entries.index(e)
            bad = e.extra["envelope"]  # the fields the scan found Codex's reader refuses
            obj = self.t.load(e)
            ed = self.edit(e)
            if "timestamp" in bad:
                own = obj.get("payload", {}).get("timestamp") if e.type == "session_meta" else None
                ed["set_timestamp"] = own if type(own) is str and parse_ts(own) is not None else codex_fmt.iso(_near_ts(entries, k))
            if "ordinal" in bad:
                # one that says no number takes its neighbour's: Codex takes an ordinal written twice, but cannot
                # resume a paginated rollout whose last line it reads has none (judge fuzz, seed 63)
                o = _ordinal(obj.get("ordinal"))
                ed["set_ordinal"] = o if o is not None else _near_ordinal(self.t, entries, k)
            self.change("line-envelope", "fixed", e, e.id,
                        f"{e.type} line whose {' and '.join(bad)} Codex's reader refuses (it skipped the line): set to "
                        + ", ".join(brief(ed["set_" + key]) for key in bad))
            # the steps after this one (pairing) see the line as Codex will read it
            fresh = make_entry(self.t.fmt, self._top_level(e, ed, obj), e.index, e.lineno, e.offset, e.length, e.eol,
                               blocks=False, stats=False)
            fresh.obj = fresh.blocks = None
            entries[k] = fresh
            self.known_view = None

    def pair_codex(self):
        """Codex rollouts: the items Codex replays (after the latest compaction) paired as the
        Responses API pairs them, by call_id. A lost output gets the output Codex itself sends
        for it ("aborted", its id), right after the call; an orphan output is dropped (Codex
        drops it too): the file then says on disk what Codex sends. A call_id reused by another
        call is renamed with the outputs that answer it; a second output for a call and an
        identical call written twice with no output of its own are dropped. Items inside a
        ``compacted`` line's replacement history are left as they are (Codex heals them on send)."""
        from . import codex_rules

        dropped = self.dropped
        if dropped:
            seq = codex_rules.sent_entries([e for e in self.entries if e.index not in dropped])
        else:  # the file's view as scanned, when the caller built it
            seq = self.known_view if self.known_view is not None else codex_rules.sent_entries(self.entries)
        self.walked_view = seq  # the final view when nothing changes
        own = [e for e in seq if e.get("sub") is None and e.kind == MESSAGE]
        all_calls = {c.id for e in seq for c in e.calls}
        pending: dict[str, list] = {}  # call_id -> calls not answered yet (entry, final id), oldest first
        used: set[str] = set()
        answered: set[int] = set()
        early: dict[str, list] = {}  # call_id -> outputs written before their call, oldest first
        took: set[str] = set()  # call_ids whose call took one of them
        calls_left = Counter(c.id for e in seq if e.get("sub") is None for c in e.calls)  # calls not reached yet
        outs_of: dict[str, list] = {}  # call_id -> the outputs already given to its calls
        outs_left = Counter(r.id for e in seq if e.get("sub") is None for r in e.results)  # outputs not reached yet
        for e in seq:
            inside = e.get("sub") is not None
            if not inside and e.extra is not None:
                if "odd_role" in e.extra:
                    self._fix_role(e)
                if codex_fmt.NO_CALL_ID in e.extra:
                    self._give_call_id(e, pending, outs_left, answered)
            if not inside:
                outs_left.subtract(r.id for r in e.results)
            for c in e.calls:
                fid = c.id
                if not inside:
                    calls_left[c.id] -= 1
                if c.id in used and not inside:
                    fid = self._codex_rename(e, c.id, used)
                used.add(fid)
                if early.get(c.id) and not inside:
                    # its output was written before it (Codex would send it there, and the API refuses
                    # an output before its call): the output moves to right after the call
                    out = early[c.id].pop(0)
                    took.add(c.id)
                    outs_of.setdefault(c.id, []).append(out)
                    base = self.keys.get(e.index, (e.index, 0))
                    self.keys[out.index] = (base[0], base[1] + 1)
                    answered.add(id(e))
                    self.change("moved-result", "moved", out, c.id,
                                f"output written before its call (line {e.lineno}) moved right after the call")
                    if fid != c.id:  # the call was renamed as a reused id: so is the output it takes
                        self.edit(out)["set_call_id"] = fid
                        self.change("reused-id", "rewritten", out, c.id, f"output renamed {fid} with its call")
                    continue
                pending.setdefault(c.id, []).append((e, fid))
            for r in e.results:
                queue = pending.get(r.id)
                if not queue and not inside and len(e.results) == 1 and calls_left.get(r.id, 0) > 0 and (
                        r.id not in used or not self._repeats(e, outs_of.get(r.id, ()))):
                    # before its call: the first call with this id not reached yet, or a later call reusing
                    # the id (an output that only repeats one already given is a duplicate instead)
                    early.setdefault(r.id, []).append(e)
                    continue
                if queue:
                    call, fid = queue.pop(0)
                    outs_of.setdefault(r.id, []).append(e)
                    answered.add(id(call))
                    if fid != r.id and not inside:
                        self.edit(e)["set_call_id"] = fid
                        self.change("reused-id", "rewritten", e, r.id, f"output renamed {fid} with its call")
                    continue
                if inside:
                    continue
                if r.id in used:
                    self.drop(e, "duplicate-result", "a second output for the same call (Codex would send both)", r.id)
                elif r.id not in all_calls:
                    self.drop(e, *ORPHAN_OUTPUT, r.id)
        for cid, outs in early.items():  # written before their call, which an earlier one already answers
            for e in outs if cid in took else ():
                self.drop(e, "duplicate-result", "a second output for the same call, both written before it "
                          "(Codex would send both)", cid)
        live = None
        for e in own:
            for c in e.calls:
                if id(e) in answered or not c.id:
                    continue
                if e.index in self.dropped:
                    continue
                ed = self.edits.get(e.index, {})
                if "set_call_id" in ed and self._same_call_earlier(e):
                    self.edits.pop(e.index)
                    self.changes = [x for x in self.changes if not (x.line == e.lineno and x.kind == "reused-id")]
                    self.drop(e, "duplicate-line", "the same call written twice, with no output of its own", c.id)
                    continue
                if live is None:
                    live = self._in_flight(own)
                if e.index in live:
                    continue
                obj = self.t.load(e)
                call = dict(obj["payload"], call_id=ed.get("set_call_id", c.id))
                out = codex_rules.aborted_output(call)
                if out is None:
                    continue
                line = {"timestamp": ed.get("set_timestamp", obj.get("timestamp"))}
                ordinal = ed.get("set_ordinal", obj.get("ordinal"))
                if type(ordinal) is int:
                    # the call's own: a paginated rollout whose last line Codex can read has none is one it
                    # cannot resume (judged), and it takes an ordinal written twice
                    line["ordinal"] = ordinal
                line.update(type="response_item", payload=out)
                sub = self.keys.get(e.index, (e.index, 0))
                self._synth_entry(line, key=(sub[0], sub[1] + 1))
                self.change("missing-result", "inserted", None, call["call_id"],
                            f"the output Codex sends for call {c.name} (line {e.lineno}) whose output was lost: \"aborted\"")

    def _give_call_id(self, e: Entry, pending: dict, outs_left: Counter, answered: set) -> None:
        """A function_call_output without a call_id (Codex sends it so, and the API refuses it): the call_id of the call
        it answers, the oldest call before it with no output and none coming after it (its output's id was lost); with
        no such call, the output answers nothing Codex sends and is dropped."""
        for cid, queue in pending.items():
            if queue and outs_left[cid] <= 0:
                call, fid = queue.pop(0)
                answered.add(id(call))
                self.edit(e)["set_call_id"] = fid
                self.change("missing-call-id", "fixed", e, fid,
                            f"output without a call_id, which the API refuses: given {fid}, the call before it "
                            f"(line {call.lineno}) with no output of its own")
                return
        self.drop(e, "missing-call-id", "output without a call_id, and no call before it lacks one: it answers "
                  "nothing Codex sends, and the API refuses it")

    def _fix_role(self, e: Entry) -> None:
        """A message whose role the API does not take (Codex sends it as written): the role its content
        says, ``assistant`` for output text, else ``user``."""
        content = self.t.load(e).get("payload", {}).get("content")
        role = "assistant" if any(isinstance(c, dict) and c.get("type") == "output_text" for c in content or ()) else "user"
        self.edit(e)["set_role"] = role
        self.change("invalid-role", "fixed", e, e.id,
                    f"message with role {e.extra['odd_role']!r}, which the API refuses: set to {role!r} (its content's)")

    def _codex_rename(self, e: Entry, cid: str, used: set) -> str:
        n = self.rename_counter.get(cid, 1) + 1
        while f"{cid}_{n}" in used:
            n += 1
        self.rename_counter[cid] = n
        fid = f"{cid}_{n}"
        self.edit(e)["set_call_id"] = fid
        self.change("reused-id", "rewritten", e, cid, f"call_id {cid} was already used by an earlier call; renamed {fid}")
        return fid

    def _repeats(self, e: Entry, outs) -> bool:
        """The output item of ``e`` is the very same as one of ``outs`` (a line written twice)."""
        mine = self.t.load(e).get("payload")
        return any(self.t.load(x).get("payload") == mine for x in outs)

    def _same_call_earlier(self, e: Entry) -> bool:
        """An earlier line holds the very same call item (a line written twice)."""
        mine = self.t.load(e).get("payload")
        cid = e.calls[0].id
        for x in self.entries:
            if x.index >= e.index:
                return False
            if x.kind == MESSAGE and x.calls and x.calls[0].id == cid and self.t.load(x).get("payload") == mine:
                return True
        return False

    def _in_flight(self, own: list) -> set:
        """Calls of a turn Codex may still be running: after the last turn-ending event, in a file
        some process (the agent) still has open for writing. Their outputs are not lost yet."""
        last_end = max((e.index for e in self.entries if e.get("event") in ("task_complete", "turn_aborted")), default=-1)
        tail = {e.index for e in own if e.index > last_end and e.calls}
        if not tail:
            return set()
        try:
            with open(self.t.path, "rb") as f:
                writers = commit.writers_of(f.fileno(), os.fstat(f.fileno()), os.path.basename(self.t.path))
        except OSError:
            writers = None
        if writers:
            self.notices.append(f"{len(tail)} call(s) of the last turn have no output yet and the file is open for "
                                "writing: left as they are (the agent may still be running them)")
            return tail
        return set()

    def paginated_tail(self, order: list[Entry]) -> None:
        """Codex refuses a paginated rollout whose last record has no ``ordinal``: a line repair
        appends at the end gets the next one."""
        if not order or order[-1].index >= 0:
            return
        head = next((e for e in self.entries if e.kind == HEADER), None)
        if head is None or not head.get("paginated"):
            return
        last = max((e for e in self.entries if e.index not in self.dropped), key=lambda e: e.index, default=None)
        ordinal = None
        if last is not None:
            ed = self.edits.get(last.index, {})
            ordinal = ed["set_ordinal"] if "set_ordinal" in ed else self.t.load(last).get("ordinal")
        if isinstance(ordinal, int):
            obj = self.synthetic_obj(order[-1])
            obj_new = {"timestamp": obj["timestamp"], "ordinal": ordinal + 1}
            obj_new.update((k, v) for k, v in obj.items() if k not in obj_new)
            obj.clear()
            obj.update(obj_new)
