"""The C part's passes over what is sent (``_scan.Rows.sent``, ``Rows.tally`` and ``Rows.pi_path``,
``ctxtool/_scan_tally.c``) against the plain Python they stand in for: ``view_of`` flattened,
``Tally.add(e, *heuristic_detail(e))`` for each entry with heuristic_per_entry's figures, and pi's tree walk. Every
fixture, both ways (the C part, and the Python it falls back to), then entries given odd fields one at a time: the C
part reads them, hands them to the Python, or leaves the whole list to it, and the answer is the same each way."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest

from ctxtool import estimate as est
from ctxtool import synth, validate, view
from ctxtool.model import COMPACTION, EMPTY, HEADER, META, MESSAGE, Call, Entry, FullEntry, Kinds, Result
from ctxtool.tokens import heuristic_per_entry
from ctxtool.view import UNSENT_STOPS, context_entries
from tests.support.variants import corrupted_session

ROOT = Path(__file__).resolve().parent.parent
ALL_FIXTURES = sorted(str(p) for p in (ROOT / "fixtures").glob("**/*.jsonl"))
PASSES = est.index_passes()
native_only = pytest.mark.skipif(PASSES is None, reason="ctxtool._scan is not built here")


def reference(vis: list, split: dict, names: dict, top: int = 5) -> dict:
    """The breakdown the slow way: ``Tally.add`` per entry."""
    tally = est.Tally(top)
    for e, n in zip(vis, heuristic_per_entry(vis)):
        _, kinds, tools = est.heuristic_detail(e, split, names)
        tally.add(e, n, kinds, tools)
    return _result(tally)


def tallied(vis: list, split: dict, names: dict, top: int = 5) -> dict:
    tally = est.Tally(top)
    est._heuristic_tally(tally, vis, split, names)
    return _result(tally)


def _result(tally) -> dict:
    r = tally.result("heuristic")
    r["by_role_order"] = list(r["by_role"].items())  # ties keep the order roles were first met
    r["entries"] = tally.entries
    return r


def _sent_reference(ctx: list) -> tuple:
    view = est.view_of(ctx)
    vis = [e for m in view for e in m.entries]
    return vis, len(view), any(r.name is None for e in vis for r in e.results)


def _index(path: str):
    try:
        return est.read_index(path)
    except Exception:  # fixtures of files ctxtool refuses (tested elsewhere)
        pytest.skip("not readable")


@pytest.mark.parametrize("native", [True, False], ids=["C", "Python"])
@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.split("fixtures/")[-1])
def test_sent_and_tally_equal_the_plain_passes_on_every_fixture(path, native, monkeypatch):
    if native and PASSES is None:
        pytest.skip("ctxtool._scan is not built here")
    if not native:
        monkeypatch.setattr(est, "index_passes", lambda: None)
    ix = _index(path)
    ctx = context_entries(ix.t.format_name, ix.t.entries)
    vis, messages, unnamed = est.sent_of(ctx)
    want = _sent_reference(ctx)
    assert (vis, messages, unnamed) == want
    assert all(a is b for a, b in zip(vis, want[0]))
    names = ix.names if unnamed else {}
    assert tallied(vis, ix.split, names) == reference(vis, ix.split, names)


@native_only
def test_the_c_part_reads_a_recorded_session_itself():
    """On recorded files nothing but Claude Code's compact summaries (a line per compaction) is handed back to the
    Python: the loop is the C part's (a test that the fast path is taken, not only that it agrees)."""
    for path in ("pi-recorded", "claude-recorded", "codex-recorded"):
        files = sorted((ROOT / "fixtures" / path).glob("*.jsonl"))
        assert files, path
        handed = []
        for p in files:
            ix = est.read_index(str(p))
            ctx = context_entries(ix.t.format_name, ix.t.entries)
            got = PASSES.sent(ctx, UNSENT_STOPS)
            assert got is not None, p
            vis = got[0]
            toks = PASSES.tally(vis, ix.split, ix.names, {}, {}, {}, lambda e, n: handed.append(e),
                                lambda e: handed.append(e))
            assert toks is not None and list(toks[0]) == heuristic_per_entry(vis), p
        assert all(e.extra.get("compact_summary") for e in handed), path


# ----------------------------------------------------------------------------- odd entries


def _full(index: int, role: str | None = "assistant", **kw) -> FullEntry:
    return FullEntry(index, index + 1, index * 100, 99, b"\n", kw.pop("kind", MESSAGE), kw.pop("type", "message"),
                     f"id{index}", None, role, **kw)


def _entries() -> list:
    """A small session with every usual shape: a split response (one msg_key over two lines), calls, pi results
    with tool_chars, a Claude Code result without them (named through ``names``), errored and empty turns."""
    return [
        _full(0, "user", chars=40, kinds=Kinds(text=40)),
        _full(1, msg_key="m1", chars=9, kinds=Kinds(text=9)),
        _full(2, msg_key="m1", chars=30, kinds=Kinds(tool_call=30), calls=(Call(0, "c1", "bash", None, 30),)),
        _full(3, "toolResult", chars=5000, kinds=Kinds(tool_result=200, image=4800),
              results=(Result(0, "c1", "bash", False, 5000),), tool_chars={"bash": 5000}),
        _full(4, "user", chars=70, kinds=Kinds(tool_result=70), results=(Result(0, "c2", None, False, 70),)),
        _full(5, msg_key="m2", chars=50, kinds=Kinds(tool_call=50),
              calls=(Call(0, "c3", "read", None, 20), Call(1, "c4", "", None, 30))),
        _full(6, "user", chars=11, kinds=Kinds(tool_result=5, image=6),
              results=(Result(0, "c3", None, False, 5), Result(1, "c4", None, False, 6))),
        _full(7, stop="error", chars=3, kinds=Kinds(text=3)),
        _full(8, empty=True),
        _full(9, "custom", chars=-4),
        _full(10, None, chars=8, kinds=Kinds(summary=8)),
        _full(11, msg_key="m3", chars=2**20, kinds=Kinds(thinking=2**20)),
    ]


def _split_and_names(vis: list) -> tuple[dict, dict]:
    split, names = {}, {"c1": "bash", "c2": "grep", "c3": "read"}
    for e in vis:
        if len(e.calls) > 1:
            split[e.index] = [("call", c.name or "unknown", c.chars) for c in e.calls]
        if len(e.results) > 1:
            split.setdefault(e.index, []).extend(("result", r.id, r.chars) for r in e.results)
    return split, names


ODD = {
    # field: values an entry may hold that the C part does not read itself
    "extra": [{"compact_summary": True}, {"compact_summary": 0}, {"sidechain": True}, {}, "text", None],
    "kinds": [{"text": 3, "odd": 2}, {}, EMPTY, Kinds(text=-1), Kinds(text=2**60), Kinds(tool_call=True), None],
    "chars": [True, 2.5, -1, 2**53, 2**70, 0, None],
    "role": ["user", "assistant", None, 5],
    "msg_key": ["m1", None, 7],
    "stop": ["aborted", "error", "end", None, 3],
    "empty": [True, False, 1, None],
    "calls": [(), [Call(0, "x", "tool", None, 1)], (Call(0, "x", None, None, 1),), ("call",)],
    "results": [(), [Result(0, "r", "n")], (Result(0, "c1", None),), ("r",)],
    "tool_chars": [{}, {"a": 1, "b": 2}, {"a": -3}, {"a": 2.5}],
}


def _each_way(monkeypatch, modules: tuple, fn) -> tuple:
    """(``fn()`` with the C part's passes, ``fn()`` with them turned off in ``modules``)."""
    out = []
    for native in (True, False):
        with monkeypatch.context() as m:
            for module in () if native else modules:
                m.setattr(module, "index_passes", lambda: None)
            out.append(fn())
    return tuple(out)


def _both(entries: list, monkeypatch) -> tuple:
    """(C part's result, Python's result): each the breakdown, or the exception's type."""
    ctx = list(entries)

    def one_way():
        try:
            vis, messages, unnamed = est.sent_of(ctx)
            split, names = _split_and_names(vis)
            return messages, unnamed, [e.index for e in vis], tallied(vis, split, names if unnamed else {})
        except Exception as exc:  # the same exception either way (an entry the Python cannot read either)
            return type(exc).__name__

    return _each_way(monkeypatch, (est,), one_way)


@native_only
def test_the_usual_session_is_read_by_the_c_part_and_equals_the_reference(monkeypatch):
    entries = _entries()
    c, py = _both(entries, monkeypatch)
    assert c == py
    vis, _, unnamed = est.sent_of(entries)
    assert [e.index for e in vis] == [0, 1, 2, 3, 4, 5, 6, 9, 10, 11]  # the errored and the empty turns are not sent
    split, names = _split_and_names(vis)
    assert tallied(vis, split, names) == reference(vis, split, names)
    handed = []
    toks, total = PASSES.tally(vis, split, names, {}, {}, {}, lambda e, n: handed.append(e), lambda e: handed.append(e))
    assert handed == [] and total == sum(toks) and list(toks) == heuristic_per_entry(vis)
    r = c[3]
    assert r["by_tool"][0]["tool"] == "bash" and r["by_tool"][0]["results"] == 1
    assert {x["tool"]: x["result_tokens"] for x in r["by_tool"]} == {"bash": 1250, "read": 1, "unknown": 2, "grep": 18}
    assert r["by_kind"]["image"] == 1202  # (4,800 + 6) / 4, rounded


@native_only
@pytest.mark.parametrize("field", sorted(ODD))
def test_an_odd_field_anywhere_gives_the_same_breakdown_both_ways(field, monkeypatch):
    base = _entries()
    for k in range(len(base)):
        for value in ODD[field]:
            entries = [copy.copy(e) for e in base]
            setattr(entries[k], field, value)
            c, py = _both(entries, monkeypatch)
            assert c == py, (field, k, value)


@native_only
def test_random_odd_values_give_the_same_breakdown_both_ways(monkeypatch):
    rng = random.Random(7)
    base = _entries()
    for _ in range(400):
        entries = [copy.copy(e) for e in base]
        for _ in range(rng.randint(1, 4)):
            field = rng.choice(sorted(ODD))
            setattr(rng.choice(entries), field, rng.choice(ODD[field]))
        rng.shuffle(entries)
        c, py = _both(entries, monkeypatch)
        assert c == py


@native_only
def test_another_entry_class_leaves_the_whole_list_to_the_python():
    entries = _entries()
    plain = Entry(20, 21, 0, 10, b"\n", META, "progress", "p", None)
    assert PASSES.sent(entries + [plain], UNSENT_STOPS) is None
    by_role: dict = {}
    assert PASSES.tally(entries + [plain], {}, {}, by_role, {}, {}, None, None) is None
    assert by_role == {}  # nothing changed before it declined
    huge = copy.copy(entries[0])
    huge.chars = 2**53
    assert PASSES.tally([huge], {}, {}, by_role, {}, {}, None, None) is None


@native_only
def test_the_breakdown_of_a_fixture_is_unchanged_by_a_split_of_unusual_parts(monkeypatch):
    """Split parts the C part does not read (not a list of 3-tuples) go to ``tools``, in order, as the Python reads
    them."""
    entries = _entries()
    vis, _, _ = est.sent_of(entries)
    split, names = _split_and_names(vis)
    odd = dict(split)
    key = next(iter(odd))
    odd[key] = tuple(odd[key])  # a tuple of parts: heuristic_tools reads it, the C part hands it over
    handed = []
    got = PASSES.tally(vis, odd, names, {}, {}, {}, lambda e, n: None, lambda e: handed.append(e.index))
    assert got is not None and handed == [key]
    assert tallied(vis, odd, names) == reference(vis, odd, names)


# ----------------------------------------------------------------------------- pi's tree walk


def _python_path(entries: list, monkeypatch) -> list:
    with monkeypatch.context() as m:
        m.setattr(view, "index_passes", lambda: None)
        return view.pi_path(entries)


@native_only
@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.split("fixtures/")[-1])
def test_pi_path_equals_the_python_walk_on_every_fixture(path, monkeypatch):
    """(The walk is read on any file's entries: the other formats' links are odd trees for it.)"""
    ix = _index(path)
    got = view.pi_path(ix.t.entries)
    assert [e.index for e in got] == [e.index for e in _python_path(ix.t.entries, monkeypatch)]
    body = [e for e in ix.t.entries if e.kind != HEADER]
    if body:
        with monkeypatch.context() as m:
            m.setattr(view, "index_passes", lambda: None)
            want = view.linear(body)
        assert PASSES.linear(body) == want


@native_only
@pytest.mark.parametrize("seed", range(6))
def test_pi_path_equals_the_python_walk_on_generated_corrupted_sessions(seed, tmp_path, monkeypatch):
    p = tmp_path / "s.jsonl"
    kinds = [("dangling_parent", "missing_result"), ("parent_cycle",), ("duplicate_id", "dangling_parent")][seed % 3]
    synth.write_session(str(p), "pi", seed=seed, target_bytes=200_000, corruptions=kinds)
    entries = est.read_index(str(p)).t.entries
    taken = PASSES.pi_path(entries, HEADER)
    # a cycle is left to the Python (a reused id can close one: the later entry of an id wins)
    assert (taken is None) == ("parent_cycle" in kinds) or "duplicate_id" in kinds
    assert [e.index for e in view.pi_path(entries)] == [e.index for e in _python_path(entries, monkeypatch)]


def _pi(index: int, id, parent, kind=MESSAGE) -> FullEntry:
    return FullEntry(index, index + 1, 0, 10, b"\n", kind, "message", id, parent, "user")


@native_only
def test_pi_path_on_odd_links(monkeypatch):
    h = _pi(0, None, None, HEADER)
    cases = {
        "linear": [h, _pi(1, "a", None), _pi(2, "b", "a"), _pi(3, "c", "b")],
        "branch": [h, _pi(1, "a", None), _pi(2, "b", "a"), _pi(3, "c", "a")],
        "later id wins": [h, _pi(1, "a", None), _pi(2, "b", "a"), _pi(3, "a", None), _pi(4, "c", "a")],
        "lost parent": [h, _pi(1, "a", None), _pi(2, "b", "zz")],
        "no ids": [h, _pi(1, None, None), _pi(2, None, None)],
        "a header between": [h, _pi(1, "a", None), _pi(2, None, None, HEADER), _pi(3, "b", "a")],
        "header only": [h],
        "empty": [],
        "self parent": [h, _pi(1, "a", "a")],
        "cycle": [h, _pi(1, "a", "b"), _pi(2, "b", "a")],
        "compaction": [h, _pi(1, "a", None), _pi(2, "b", "a", COMPACTION), _pi(3, "c", "b")],
        "odd id": [h, _pi(1, 5, None), _pi(2, "b", 5)],
    }
    for name, entries in cases.items():
        want = [e.index for e in _python_path(entries, monkeypatch)]
        assert [e.index for e in view.pi_path(entries)] == want, name
    cases["first parent is an id"] = [_pi(1, "a", "c"), _pi(2, "b", "a"), _pi(3, "c", "b")]
    cases["reused id in a chain"] = [_pi(1, "a", None), _pi(2, "b", "a"), _pi(3, "a", "b")]
    cases["a None id in a chain"] = [_pi(1, "a", None), _pi(2, None, "a"), _pi(3, "c", None)]
    for name, entries in cases.items():
        body = [e for e in entries if e.kind != HEADER]
        if not body:
            continue
        with monkeypatch.context() as m:
            m.setattr(view, "index_passes", lambda: None)
            want = view.linear(body)
        assert view.linear(body) == want, name
        assert PASSES.linear(body) == (None if name == "odd id" else want), name
    assert PASSES.linear([]) is None
    assert PASSES.linear(cases["linear"][1:]) is True and PASSES.linear(cases["reused id in a chain"]) is False
    assert PASSES.pi_path(cases["cycle"], HEADER) is None  # the Python finds where it closes
    assert PASSES.pi_path(cases["self parent"], HEADER) is None
    assert PASSES.pi_path(cases["odd id"], HEADER) is None
    assert [e.index for e in PASSES.pi_path(cases["later id wins"], HEADER)] == [3, 4]


# ----------------------------------------------------------------------------- validate's loop


def _python_validate(fmt: str, ctx: list, monkeypatch) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(validate, "index_passes", lambda: None)
        return validate.validate_context(fmt, ctx)


def _as_data(found: tuple) -> tuple:
    violations, messages = found
    return [v.to_dict() for v in violations], messages


@pytest.mark.parametrize("path", [p for p in ALL_FIXTURES if "codex" not in p], ids=lambda p: p.split("fixtures/")[-1])
def test_validate_equals_the_python_loop_on_every_fixture(path, monkeypatch):
    ix = _index(path)
    fmt = ix.t.format_name
    if fmt == "codex":
        pytest.skip("Codex is validated by its own rules")
    ctx = context_entries(fmt, ix.t.entries)
    want = _as_data(_python_validate(fmt, ctx, monkeypatch))
    assert _as_data(validate.validate_context(fmt, ctx)) == want
    if PASSES is not None:
        assert PASSES.validate(ctx, view.merges(fmt, "assistant"), UNSENT_STOPS, validate._PLAIN,
                               validate._PLAIN_NO_BLOCKS, {}, lambda *a: None) is not None


@native_only
@pytest.mark.parametrize("seed", range(8))
def test_validate_equals_the_python_loop_on_generated_corrupted_sessions(seed, tmp_path, monkeypatch):
    p = corrupted_session(tmp_path / "s.jsonl", seed, 150_000, 5)
    try:
        ix = est.read_index(p)
    except Exception:
        pytest.skip("refused")
    ctx = context_entries(ix.t.format_name, ix.t.entries)
    found = validate.validate_context(ix.t.format_name, ctx)
    assert _as_data(found) == _as_data(_python_validate(ix.t.format_name, ctx, monkeypatch))


def _turn(index: int, role: str, **kw) -> FullEntry:
    kw.setdefault("nblocks", 1)
    return _full(index, role, **kw)


def _validate_cases() -> dict:
    call = lambda i, cid, problem=None: Call(i, cid, "bash", problem, 3)  # noqa: E731
    res = lambda cid: (Result(0, cid, "bash"),)  # noqa: E731
    return {
        "answered": [_turn(0, "user"), _turn(1, "assistant", calls=(call(0, "a"),)), _turn(2, "toolResult", results=res("a"))],
        "two answered in order": [_turn(1, "assistant", calls=(call(0, "a"), call(1, "b")), nblocks=2),
                                  _turn(2, "toolResult", results=res("a")), _turn(3, "toolResult", results=res("b"))],
        "answered out of order": [_turn(1, "assistant", calls=(call(0, "a"), call(1, "b")), nblocks=2),
                                  _turn(2, "toolResult", results=res("b")), _turn(3, "toolResult", results=res("a"))],
        "reused id": [_turn(1, "assistant", calls=(call(0, "a"),)), _turn(2, "toolResult", results=res("a")),
                      _turn(3, "assistant", calls=(call(0, "a"),)), _turn(4, "toolResult", results=res("a"))],
        "same id twice in a turn": [_turn(1, "assistant", calls=(call(0, "a"), call(1, "a")), nblocks=2),
                                    _turn(2, "toolResult", results=res("a")), _turn(3, "toolResult", results=res("a"))],
        "missing result": [_turn(1, "assistant", calls=(call(0, "a"),)), _turn(2, "user")],
        "orphan result": [_turn(0, "user"), _turn(2, "toolResult", results=res("zz"))],
        "problem call": [_turn(1, "assistant", calls=(call(0, "a", "no arguments"),)), _turn(2, "toolResult", results=res("a"))],
        "blank text": [_turn(0, "user", blank_text=True), _turn(1, "assistant")],
        "empty assistant kept": [_turn(0, "user"), _turn(1, "assistant", empty=True, extra={"no_content": True})],
        "empty assistant dropped": [_turn(0, "user"), _turn(1, "assistant", empty=True), _turn(2, "user")],
        "errored turn": [_turn(0, "user"), _turn(1, "assistant", stop="error", calls=(call(0, "a"),)),
                         _turn(2, "toolResult", results=res("a"))],
        "result with two blocks": [_turn(1, "assistant", calls=(call(0, "a"),)),
                                   _turn(2, "toolResult", results=res("a"), nblocks=2)],
        "bad blocks": [_turn(0, "user", extra={"bad_blocks": [0]}), _turn(1, "assistant")],
        "no blocks": [_turn(0, "user", nblocks=0), _turn(1, "assistant", nblocks=0)],
        "no role": [_turn(0, None), _turn(1, None), _turn(2, "assistant")],
        "trailing assistant": [_turn(0, "user"), _turn(1, "assistant")],
        "nothing": [],
    }


@native_only
@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("name", sorted(_validate_cases()))
def test_validate_on_odd_turns(name, merge, monkeypatch):
    ctx = _validate_cases()[name]
    fmt = "claude" if merge else "pi"
    assert _as_data(validate.validate_context(fmt, ctx)) == _as_data(_python_validate(fmt, ctx, monkeypatch))


@native_only
def test_the_common_turn_is_checked_in_c():
    handed = []
    ctx = _validate_cases()["two answered in order"]
    seen: dict = {}
    n, prev, cur = PASSES.validate(ctx, False, UNSENT_STOPS, validate._PLAIN, validate._PLAIN_NO_BLOCKS, seen,
                                   lambda *a: handed.append(a))
    assert handed == [] and seen == {"a": 0, "b": 0} and n == 1 and cur[3] is True  # (the two results: one message)
    seen = {}
    PASSES.validate(_validate_cases()["reused id"], False, UNSENT_STOPS, validate._PLAIN, validate._PLAIN_NO_BLOCKS,
                    seen, lambda *a: handed.append(a[0]))
    assert handed == [2]  # the second turn's reused id: the Python's _check reports it


@native_only
def test_validate_leaves_an_odd_list_to_the_python(monkeypatch):
    ctx = _validate_cases()["answered"]
    odd = copy.copy(ctx[1])
    odd.calls = [Call(0, "a", "bash", None, 3)]  # a list: the Python reads it
    seen: dict = {}
    args = (False, UNSENT_STOPS, validate._PLAIN, validate._PLAIN_NO_BLOCKS, seen, None)
    assert PASSES.validate([ctx[0], odd, ctx[2]], *args) is None and seen == {}
    plain = Entry(20, 21, 0, 10, b"\n", MESSAGE, "message", "p", None)
    assert PASSES.validate(ctx + [plain], *args) is None
    assert _as_data(validate.validate_context("pi", [ctx[0], odd, ctx[2]])) == \
        _as_data(_python_validate("pi", [ctx[0], odd, ctx[2]], monkeypatch))


# ----------------------------------------------------------------------------- repair's hygiene


def _hygiene_session(tmp_path) -> str:
    """A pi session with each case repair's hygiene mends among plain messages: a tool call with no arguments, an
    empty errored turn, blank user text, an empty user message, blank text beside text in an assistant turn."""
    from tests.support.pi_sessions import asst, pi_session, user

    blank_beside = asst("answer")
    blank_beside["content"] = [{"type": "text", "text": "  "}, {"type": "text", "text": "answer"}]
    errored = asst("x")
    errored.update(content=[], stopReason="error", errorMessage="overloaded")
    bad_call = asst("calling")
    bad_call["content"].append({"type": "toolCall", "id": "t1", "name": "read"})  # no arguments
    empty_user = user("x")
    empty_user["content"] = []
    msgs = [user("hi"), blank_beside, user("  "), errored, user("go"), bad_call, user("more"), asst("ok"), empty_user,
            asst("done")]
    return pi_session(tmp_path / "h.jsonl", msgs)


@native_only
def test_hygiene_looks_at_every_message_it_mends(tmp_path, monkeypatch):
    """``Rows.looked(entries, claude)`` leaves out only the messages hygiene does nothing to: the plan is the Python
    loop's, and each case is mended."""
    from ctxtool import repair

    p = _hygiene_session(tmp_path)
    got = _each_way(monkeypatch, (repair,),
                    lambda: [(c.kind, c.action, c.line) for c in repair.repair_file(p, check=True).changes])
    assert got[0] == got[1]
    kinds = {k for k, _, _ in got[0]}
    assert {"blank-text", "blank-user", "error-turn", "tool-call"} <= kinds, kinds
    entries = est.read_index(p).t.entries
    looked = PASSES.looked(entries, False)
    assert [e.lineno for e in looked] == [3, 4, 5, 7, 10]  # the mended ones; the plain ones are left out
    assert len(PASSES.looked(entries)) == len([e for e in entries if e.kind == MESSAGE])


@native_only
def test_the_tally_on_sums_past_a_64_bit_integer_and_floats_in_between(monkeypatch):
    """Found by review: characters by kind summed past 2**63 (each entry's below 2**53), and float values a dict of
    kinds brings (the Python adds them in order, so must the C part); an entry whose index is unset (the Python's
    AttributeError, not a crash)."""
    big = [_full(i, "user", chars=1, kinds=Kinds(text=2**53 - 1)) for i in range(1100)]
    c, py = _both(big, monkeypatch)
    assert c == py and c[3]["by_kind"]["text"] == round(1100 * (2**53 - 1) / 4)
    floats = [_full(0, "user", chars=1, kinds={"text": 1e16}), _full(1, "user", chars=1, kinds=Kinds(text=1)),
              _full(2, "user", chars=1, kinds=Kinds(text=1)), _full(3, "user", chars=1, kinds={"text": -1e16})]
    c, py = _both(floats, monkeypatch)
    assert c == py
    unset = _full(0, "assistant", chars=5, kinds=Kinds(tool_call=5), calls=(Call(0, "x", "A", None, 5),))
    del unset.index
    assert _both([unset], monkeypatch) == ("AttributeError", "AttributeError")
