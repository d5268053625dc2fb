"""repair's tool pairing and final entries in the C part (``_scan.Rows.pair`` and ``Rows.finals``,
``ctxtool/_scan_pair.c``) against the Python loops they stand in for (``Pairing.pair`` and ``plan_repair``'s loop with
``index_passes`` gone): the planner's whole state after pairing (changes, edits, drops, moves, renames), the final
entries and the repaired bytes are the same each way, on every fixture, on generated corrupted sessions, on sessions
of reused ids, and with entries given odd field values one at a time (the C part stops at that turn and the Python
goes on from it; an entry it does not read is left to the Python)."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest

from ctxtool import repair, repair_pairing
from ctxtool.errors import CtxError
from ctxtool.model import MESSAGE, Call, Result
from ctxtool.repair import Change, plan_repair
from ctxtool.scanloop import index_passes
from ctxtool.transcript import scan
from ctxtool.view import UNSENT_STOPS
from tests.support.pi_sessions import asst, pi_session, user
from tests.support.variants import corrupted_session

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(str(p) for p in (ROOT / "fixtures").glob("**/*.jsonl") if "codex" not in str(p))
PASSES = index_passes()
native_only = pytest.mark.skipif(PASSES is None, reason="ctxtool._scan is not built here")


def _state(p) -> dict:
    """What pairing leaves in a planner, as plain data."""
    return {
        "changes": [(c.kind, c.action, c.line, c.id, c.detail) for c in p.changes],
        "edits": {k: {n: sorted(v) if isinstance(v, set) else v for n, v in ed.items()} for k, ed in p.edits.items()},
        "edit_order": [(k, list(ed)) for k, ed in p.edits.items()],
        "dropped": sorted(p.dropped, key=repr),
        "keys": dict(p.keys),
        "live_results": {k: [(r.idx, r.id) for r in v.values()] for k, v in p.live_results.items()},
        "rename_counter": dict(p.rename_counter),
        "synthetic": sorted(p.synthetic, key=repr),
    }


def _plan_state(plan) -> dict:
    """The planner's state, the final entries and the repaired file's bytes."""
    final = [(e.index, e.id, e.parent, [(c.idx, c.id) for c in getattr(e, "calls", ())],
              [(r.idx, r.id) for r in getattr(e, "results", ())]) for e in plan.final_entries]
    return {**_state(plan.planner), "final": final, "bytes": b"".join(plan.chunks())}


def _planned(path: str, native: bool, monkeypatch, trim: bool = False):
    with monkeypatch.context() as m:
        if not native:
            m.setattr(repair_pairing, "index_passes", lambda: None)
            m.setattr(repair, "index_passes", lambda: None)
        try:
            t = scan(path, None, stats=False)
        except CtxError:
            pytest.skip("not readable")
        try:
            return _plan_state(plan_repair(t, trim_trailing=trim))
        except CtxError as e:  # a file the planner refuses: refused the same way
            return ("refused", type(e).__name__, str(e))


def _same_both_ways(path: str, monkeypatch, trim: bool = False) -> dict:
    c = _planned(path, True, monkeypatch, trim)
    py = _planned(path, False, monkeypatch, trim)
    assert c == py
    return c


@pytest.mark.parametrize("trim", [False, True], ids=["", "trim"])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.split("fixtures/")[-1])
def test_the_plan_is_the_python_loops_on_every_fixture(path, trim, monkeypatch):
    _same_both_ways(path, monkeypatch, trim)


@pytest.mark.parametrize("seed", range(12))
def test_the_plan_is_the_python_loops_on_generated_corrupted_sessions(seed, tmp_path, monkeypatch):
    _same_both_ways(corrupted_session(tmp_path / "s.jsonl", seed, 120_000, 6), monkeypatch)


def _call(cid: str, name: str = "bash") -> dict:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": {"command": "ls"}}


def _calling(*ids: str) -> dict:
    m = asst("calling")
    m["content"] += [_call(i) for i in ids]
    m["stopReason"] = "toolUse"
    return m


def _result(cid: str, name: str | None = "bash", text: str = "ok") -> dict:
    m = {"role": "toolResult", "toolCallId": cid, "content": [{"type": "text", "text": text}], "isError": False,
         "timestamp": 0}
    if name is not None:
        m["toolName"] = name
    return m


def _reused_session(tmp_path, rng: random.Random, turns: int = 40) -> str:
    """A pi session whose calls take their ids from a small pool (as providers with indexed ids do: "exec_0"), with an
    id that looks like a rename already ("a_2"), results in and out of order, missing, doubled, nameless, errored
    turns, empty assistant messages, and plain text between."""
    pool = ["a", "b", "a_2", "exec_0", "b-2"]
    msgs = [user("start")]
    for t in range(turns):
        k = rng.choice([1, 1, 1, 2, 3])
        ids = [rng.choice(pool) for _ in range(k)]
        turn = _calling(*ids)
        shape = rng.random()
        if shape < 0.08:
            turn["stopReason"] = "error"
            turn["errorMessage"] = "overloaded"
        msgs.append(turn)
        results = [_result(i) for i in ids]
        if shape < 0.15:
            rng.shuffle(results)
        elif shape < 0.2 and results:
            results.pop()
        elif shape < 0.25:
            results.append(_result(ids[0]))
        elif shape < 0.3 and results:
            results[0] = _result(ids[0], name=rng.choice([None, " ", ""]))
        elif shape < 0.33:
            results.insert(0, _result("zz-orphan"))
        if rng.random() < 0.1:  # an empty assistant message among the results: never sent, its calls skipped
            empty = asst("")
            empty["content"] = []
            results.insert(rng.randrange(len(results) + 1), empty)
        msgs += results
        if rng.random() < 0.3:
            msgs.append(user(f"next {t}"))
    msgs.append(asst("done"))
    return pi_session(tmp_path / f"r{rng.random():.6f}.jsonl", msgs)


@pytest.mark.parametrize("seed", range(16))
def test_reused_ids_are_renamed_as_the_python_renames_them(seed, tmp_path, monkeypatch):
    got = _same_both_ways(_reused_session(tmp_path, random.Random(seed)), monkeypatch)
    assert any(kind == "reused-id" for kind, *_ in got["changes"])


@native_only
def test_the_simple_turns_and_their_renames_are_made_in_c(tmp_path, monkeypatch):
    """A session of answered turns whose ids repeat: no turn reaches the Python, and every rename is made (a call and
    its result, the id taken by an earlier rename skipped: a, a_2 given, then a_3)."""
    msgs = [user("go")]
    for ids in (["a"], ["a_2"], ["a"], ["a", "b"], ["b"]):
        msgs += [_calling(*ids)] + [_result(i) for i in ids]
    msgs.append(asst("done"))
    path = pi_session(tmp_path / "s.jsonl", msgs)
    handed = []
    real = repair._Planner._pair_turn
    monkeypatch.setattr(repair._Planner, "_pair_turn", lambda self, *a: handed.append(a) or real(self, *a))
    got = _planned(path, True, monkeypatch)
    assert handed == []
    renames = [(line, ident, detail) for kind, _, line, ident, detail in got["changes"] if kind == "reused-id"]
    assert renames == [
        (7, "a", "tool call id a was already used earlier in the request; renamed a_3"),
        (8, "a", "result renamed a_3 with its tool call"),
        (9, "a", "tool call id a was already used earlier in the request; renamed a_4"),
        (10, "a", "result renamed a_4 with its tool call"),
        (12, "b", "tool call id b was already used earlier in the request; renamed b_2"),
        (13, "b", "result renamed b_2 with its tool call"),
    ]
    assert got["rename_counter"] == {"a": 4, "b": 2}
    assert got == _planned(path, False, monkeypatch)


def test_claude_code_renames_with_a_hyphen(tmp_path, monkeypatch):
    """A recorded Claude Code session whose later turn reuses an earlier call's id (the client bug around 2.1.19):
    renamed id-N (Claude Code takes an id_N for one of its own), the same both ways."""
    lines = (ROOT / "fixtures" / "claude-recorded" / "parallel.jsonl").read_bytes().split(b"\n")[:-1]
    reused = [x.replace(b"toolu_rec_p4", b"toolu_rec_p1") if b'"type":"user"' in x or b'"type":"assistant"' in x else x
              for x in lines]
    path = tmp_path / "reused.jsonl"
    path.write_bytes(b"\n".join(reused) + b"\n")
    got = _same_both_ways(str(path), monkeypatch)
    details = [d for kind, _, _, _, d in got["changes"] if kind == "reused-id"]
    assert details and all("toolu_rec_p1-2" in d for d in details), details


# ----------------------------------------------------------------------------- odd entries


ODD = {
    "role": [5, b"assistant"],
    "stop": [7],
    "empty": [1, None],
    "calls": [[], None],
    "results": [[], None, (1.5,)],
    "nblocks": ["1", 1.0, None, 2, 0],
    "index": [None, "3", [2], 2**70],
    "lineno": [0, None, "unset"],
    "call id": [None, 7, "", "unset"],
    "call idx": [None, "0"],
    "result id": [None, 7],
    "result name": [None, " ", "", 9],
    "result idx": [None, "0"],
}


def _set(o, name: str, value) -> None:
    if value == "unset":  # the slot left unset (found by review: a line number the C part read as None)
        delattr(o, name)
    else:
        setattr(o, name, value)


def _poke(e, field: str, value) -> None:
    if field.startswith("call "):
        if e.calls:
            c = copy.copy(e.calls[0])
            _set(c, field[5:], value)
            e.calls = (c,) + tuple(e.calls[1:])
    elif field.startswith("result "):
        if e.results:
            r = copy.copy(e.results[0])
            _set(r, field[7:], value)
            e.results = (r,) + tuple(e.results[1:])
    else:
        _set(e, field, value)


def _paired(path: str, native: bool, poke, monkeypatch):
    t = scan(path, None, stats=False)
    with monkeypatch.context() as m:
        if not native:
            m.setattr(repair_pairing, "index_passes", lambda: None)
        p = repair._Planner(t)
        p.file_level()
        p.fix_header()
        p.fix_structure()
        p.remember_first_kept()
        p.hygiene()
        poke(t.entries)
        try:
            p.pair()
        except Exception as e:
            return ("raised", type(e).__name__)
        return _state(p)


@native_only
@pytest.mark.parametrize("field", sorted(ODD))
def test_an_odd_field_anywhere_gives_the_same_pairing_both_ways(field, tmp_path, monkeypatch):
    path = _reused_session(tmp_path, random.Random(7), turns=12)
    n = len(scan(path, None, stats=False).entries)
    for k in range(1, n):
        for value in ODD[field]:
            def poke(entries, k=k, value=value):
                if entries[k].kind == MESSAGE:
                    _poke(entries[k], field, value)
            assert _paired(path, True, poke, monkeypatch) == _paired(path, False, poke, monkeypatch), (k, value)


@native_only
def test_it_stops_at_the_turn_of_an_odd_entry_and_the_python_goes_on(tmp_path, monkeypatch):
    msgs = [user("go")]
    for ids in (["a"], ["a"], ["b"], ["a"]):
        msgs += [_calling(*ids)] + [_result(i) for i in ids]
    path = pi_session(tmp_path / "s.jsonl", msgs)
    t = scan(path, None, stats=False)
    p = repair._Planner(t)
    seq = [e for e in p.segment() if e.kind == MESSAGE]
    seq[6].results = list(seq[6].results)  # the third turn's result: a list, which the C part does not read
    seen, skipped = set(), set()
    got = PASSES.pair(p, seq, False, UNSENT_STOPS, seen, skipped, Change, True, "_")
    assert got == 5  # the third turn starts at message 5: nothing of it done
    assert seen == {"a", "a_2"} and [c.detail for c in p.changes] == [
        "tool call id a was already used earlier in the request; renamed a_2", "result renamed a_2 with its tool call"]
    assert PASSES.pair(p, [], False, UNSENT_STOPS, set(), set(), Change, True, "_") == 0


@native_only
def test_a_planner_of_other_types_is_left_to_the_python(tmp_path):
    path = pi_session(tmp_path / "s.jsonl", [user("go"), _calling("a"), _result("a")])
    p = repair._Planner(scan(path, None, stats=False))
    seq = [e for e in p.segment() if e.kind == MESSAGE]
    args = (False, UNSENT_STOPS, set(), set(), Change, True, "_")
    p.dropped = list(p.dropped)
    assert PASSES.pair(p, seq, *args) is None
    p.dropped = set()
    p.changes = ()
    assert PASSES.pair(p, seq, *args) is None
    p.changes = []

    class Plain:  # no slots: not made in C
        pass

    assert PASSES.pair(p, seq, False, UNSENT_STOPS, set(), set(), Plain, True, "_") is None
    assert p.changes == [] and PASSES.pair(p, seq, *args) == len(seq)
    with pytest.raises(TypeError):
        PASSES.pair(p, seq, False, UNSENT_STOPS, set(), set(), Change, True)


def test_change_has_slots_and_round_trips():
    """The C part makes a Change by its slots; it still pickles (worker processes send reports back)."""
    import pickle

    c = Change("reused-id", "rewritten", 3, "a", "renamed")
    assert not hasattr(c, "__dict__")
    assert pickle.loads(pickle.dumps(c)) == c
    assert c.to_dict() == {"kind": "reused-id", "action": "rewritten", "line": 3, "id": "a", "detail": "renamed"}


# ----------------------------------------------------------------------------- the final entries


FINAL_POKES = {
    "calls a list": lambda e, ed: setattr(e, "calls", list(e.calls)),
    "results a list": lambda e, ed: setattr(e, "results", list(e.results)),
    "a call's idx a str": lambda e, ed: e.calls and setattr(e, "calls", (Call(str(e.calls[0].idx), *_rest(e.calls[0])),)
                                                            + tuple(e.calls[1:])),
    "a result of a subclass": lambda e, ed: e.results and setattr(e, "results", (_SubResult(*_fields(e.results[0])),)
                                                                  + tuple(e.results[1:])),
    "renames a list": lambda e, ed: "rename_calls" in ed and ed.__setitem__("rename_calls", list(ed["rename_calls"].items())),
    "renames empty": lambda e, ed: ed.__setitem__("rename_results", {}),
    "an edit of the content": lambda e, ed: ed.__setitem__("fill_result_name", "bash"),
    "an edit that is no dict": lambda e, ed: None,  # (set below: the planner's edits hold it)
    "an index of another type": lambda e, ed: setattr(e, "index", float(e.index)),
    "a set id and parent": lambda e, ed: ed.update(set_id="new-id", set_parent=None),
    "a call's slot unset": lambda e, ed: e.calls and _unset_chars(e),  # (found by review: copied unset)
}


def _unset_chars(e) -> None:
    c = copy.copy(e.calls[0])
    del c.chars
    e.calls = (c,) + tuple(e.calls[1:])


class _SubResult(Result):
    __slots__ = ()


def _rest(c):
    return c.id, c.name, c.problem, c.chars


def _fields(r):
    return r.idx, r.id, r.name, r.is_error, r.chars


def _finals(path: str, native: bool, poke, monkeypatch):
    real = repair._refuse_unreadable

    def poked(t, p, order):  # just before the final entries are made: each edited entry poked
        real(t, p, order)
        for e in order:
            ed = p.edits.get(e.index)
            if ed:
                poke(e, ed)
                if poke is FINAL_POKES["an edit that is no dict"]:
                    p.edits[e.index] = list(ed.items())

    with monkeypatch.context() as m:
        m.setattr(repair, "_refuse_unreadable", poked)
        if not native:
            m.setattr(repair, "index_passes", lambda: None)
        try:
            plan = plan_repair(scan(path, None, stats=False))
        except Exception as e:
            return ("raised", type(e).__name__)
        return [(type(e).__name__, e.index, e.id, e.parent, [(c.idx, c.id) for c in getattr(e, "calls", ()) or ()],
                 [(type(r).__name__, r.idx, r.id) for r in getattr(e, "results", ()) or ()]) for e in plan.final_entries]


@native_only
@pytest.mark.parametrize("poke", sorted(FINAL_POKES))
def test_the_final_entries_are_the_python_loops_with_odd_fields(poke, tmp_path, monkeypatch):
    path = _reused_session(tmp_path, random.Random(3), turns=20)
    got = _finals(path, True, FINAL_POKES[poke], monkeypatch)
    assert got == _finals(path, False, FINAL_POKES[poke], monkeypatch)
    assert got[0] != "raised" or poke in ("an edit that is no dict", "renames a list", "an index of another type",
                                          "a call's slot unset")


@native_only
def test_finals_updates_renamed_entries_in_place_and_leaves_the_rest(tmp_path):
    path = _reused_session(tmp_path, random.Random(5), turns=20)
    t = scan(path, None, stats=False)
    p = repair._Planner(t)
    e = next(x for x in t.entries if x.kind == MESSAGE and x.calls)
    c0 = e.calls[0]
    edits = {e.index: {"rename_calls": {c0.idx: "new"}, "set_parent": "p"}, -1: {}}
    synthetic = copy.copy(e)
    synthetic.index = -1
    final, todo = PASSES.finals([t.entries[0], e, synthetic], edits, p.SLIM_EDITS)
    assert final[1] is e and e.parent == "p" and e.calls[0].id == "new" and e.calls[0] is not c0
    assert (e.calls[0].idx, e.calls[0].name, e.calls[0].chars) == (c0.idx, c0.name, c0.chars) and c0.id != "new"
    assert todo == [2]  # a synthetic line: the Python materializes it
    with pytest.raises(TypeError):
        PASSES.finals([], {}, [])


# ----------------------------------------------------------------------------- found by review


@native_only
def test_finals_leaves_a_plain_entry_with_renames_to_the_python():
    """A plain Entry has no calls or results slot: the C part read past its end (a crash) before it checked."""
    from ctxtool.model import small_entry

    es = [small_entry(i, i + 1, 0, 10, b"\n", "meta", "x", None, None, None) for i in range(200)]
    edits = {i: {"rename_calls": {0: "new"}} if i % 2 else {"rename_results": {0: "new"}} for i in range(200)}
    final, todo = PASSES.finals(es, edits, repair._Planner.SLIM_EDITS)
    assert todo == list(range(200)) and final == es


@native_only
def test_a_claude_turn_without_calls_reads_no_index_the_python_does_not(tmp_path, monkeypatch):
    """Claude Code: the Python's _drop_unmatched returns at once (the client heals pairing); the C part hashed the
    index of each message after a turn without calls, and raised on an unhashable one."""
    import json

    def line(t, u, par, **kw):
        return {"parentUuid": par, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "S",
                "version": "2.1.39", "type": t, "uuid": u, "timestamp": "2026-01-01T00:00:00.000Z", **kw}

    lines = [line("user", "u1", None, message={"role": "user", "content": "hi"}),
             line("assistant", "a1", "u1", requestId="r", message={
                 "model": "m", "id": "m1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}],
                 "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}),
             line("user", "u2", "a1", message={"role": "user", "content": "more"})]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))

    def paired(native: bool):
        with monkeypatch.context() as m:
            if not native:
                m.setattr(repair_pairing, "index_passes", lambda: None)
            p = repair._Planner(scan(str(path), None, stats=False))
            seg = p.segment

            def poked():
                s = seg()
                s[-1].index = [2]
                return s

            p.segment = poked
            p.pair()
            return _state(p)

    assert paired(True) == paired(False)


@native_only
def test_odd_sets_and_counts_are_left_to_the_python(tmp_path, monkeypatch):
    """A frozenset for seen_calls leaves the whole pass to the Python; a rename counter that is no int of at least 1
    leaves the turn to it (the Python adds 1 to whatever it holds)."""
    path = pi_session(tmp_path / "s.jsonl", [user("go"), _calling("a"), _result("a"), _calling("a"), _result("a")])
    p = repair._Planner(scan(path, None, stats=False))
    seq = [e for e in p.segment() if e.kind == MESSAGE]
    assert PASSES.pair(p, seq, False, UNSENT_STOPS, frozenset(), set(), Change, True, "_") is None
    for count in (1.5, 0, -3, True):
        got = []
        for native in (True, False):
            with monkeypatch.context() as m:
                if not native:
                    m.setattr(repair_pairing, "index_passes", lambda: None)
                q = repair._Planner(scan(path, None, stats=False))
                q.rename_counter["a"] = count
                q.pair()
                got.append(_state(q))
        assert got[0] == got[1], count
