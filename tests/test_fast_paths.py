"""The fast paths of repair and validate give the answers of the general paths (and of the agent).

Differential tests: the same file is planned and validated once as shipped and once with every
fast path switched off (``general()``: no sound-links/linear-chain shortcut, no simple-turn
pairing, no slim final entries, no answered-turn shortcut in the validator), over generated
corruptions, randomly mutated sessions and hand-written edge cases. The repaired file's own
validation must equal the report's ``after`` (computed from the planner's final entries without
reading the output again). The parallel scan must equal the serial one on odd files and part
boundaries, and must not depend on the current directory or refuse less than the serial scan.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import random
import sys
from unittest import mock

import pytest

from ctxtool import parallel, repair, synth, validate, view
from ctxtool.errors import CtxError, InputError
from ctxtool.model import entry_to_tuple
from ctxtool.repair import plan_repair, repair_file
from ctxtool.transcript import scan
from ctxtool.validate import errors, validate_entries
from tests.support.pi_agent import load_with_pi

# ---------------------------------------------------------------- helpers


@contextlib.contextmanager
def general():
    """Every fast path of repair/validate off: the general code answers alone."""
    with mock.patch.object(repair._Planner, "_links_sound", lambda self: False), \
            mock.patch.object(view, "linear", lambda body: False), \
            mock.patch.object(repair, "linear", lambda body: False), \
            mock.patch.object(repair._Planner, "_pair_simple_turn", lambda self, u, span, seen: False), \
            mock.patch.object(repair._Planner, "slim_final", lambda self, e: None), \
            mock.patch.object(validate, "_answered_turn", lambda *a: False):
        yield


CLIENT_HEALED = {"missing_result", "orphan_result", "duplicate_result", "separated_result"}


def outcome(path, **scan_kw):
    """Everything repair decides about ``path``: changes, output bytes, violations before and after."""
    t = scan(path, stats=False, **scan_kw)
    before = [v.to_dict() for v in validate_entries(t.format_name, t.entries)]
    plan = plan_repair(t)
    data = b"".join(plan.chunks())
    after = [v.to_dict() for v in validate_entries(t.format_name, plan.final_entries)]
    return {"changes": [c.to_dict() for c in plan.changes], "bytes": data, "before": before, "after": after}


def assert_fast_equals_general(path, label=""):
    fast = outcome(path)
    with general():
        slow = outcome(path)
    for key in ("changes", "before", "after", "bytes"):
        assert fast[key] == slow[key], f"{label}: {key} differs between the fast and the general path"
    return fast


def _key(v):
    return (v.kind, v.severity, v.message_index, tuple(v.ids))


def assert_after_matches_output(path, tmp_path):
    """The report's ``after`` (from final entries) is what validating the written file says."""
    out = str(tmp_path / "out.jsonl")
    report = repair_file(path, output=out)
    again = scan(out, stats=False)
    on_disk = validate_entries(again.format_name, again.entries)
    assert [_key(v) for v in report.after] == [_key(v) for v in on_disk], path


def index_of(t):
    return {
        "entries": [entry_to_tuple(e) for e in t.entries],
        "bad": [(b.lineno, b.offset, b.length, b.reason, b.blank) for b in t.bad],
        "counts": (t.lines, t.lf, t.crlf, t.last_eol, t.size, t.bom, t.fmt.NAME),
    }


def scan_or_error(path, **kw):
    try:
        return index_of(scan(path, **kw))
    except CtxError as e:
        return ("error", type(e).__name__, str(e))


def write_lines(path, objs, eol="\n"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for o in objs:
            f.write((o if isinstance(o, str) else json.dumps(o, ensure_ascii=False)) + eol)
    return str(path)


# ---------------------------------------------------------------- a small session mutator


def _content(o):
    m = o.get("message")
    return m.get("content") if isinstance(m, dict) else o.get("content")


def _calls(o):
    c = _content(o)
    return [b for b in c if isinstance(b, dict) and b.get("type") in ("toolCall", "tool_use")] if isinstance(c, list) else []


def _results(o):
    m = o.get("message")
    if isinstance(m, dict) and m.get("role") == "toolResult":
        return [m]
    c = _content(o)
    return [b for b in c if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(c, list) else []


def _rkey(r):
    return "toolCallId" if r.get("role") == "toolResult" else "tool_use_id"


def _role(o):
    m = o.get("message")
    return m.get("role") if isinstance(m, dict) else o.get("role")


def _oid(o):
    return o.get("id") or o.get("uuid")


OPS = ("swap", "move", "dup", "del", "reuse", "swapres", "moveres", "dupres", "err", "extra", "blankname",
       "badcall", "emptyasst", "parent", "compaction", "noid", "msgid", "badline")


def mutate(lines: list[bytes], fmt: str, r: random.Random) -> list[str]:
    """Structural damage the corruption catalogue does not make: reused and swapped tool ids,
    moved and duplicated results, errored turns inside a span, extra blocks beside results,
    blank tool names, unusable calls, branches, compactions, missing ids."""
    objs: list = []
    for raw in lines:
        try:
            objs.append(json.loads(raw))
        except ValueError:
            objs.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
    for _ in range(r.randint(1, 6)):
        js = [i for i, o in enumerate(objs) if isinstance(o, dict)]
        if not js:
            break
        op = r.choice(OPS)
        i = r.choice(js)
        o = objs[i]
        if op == "swap" and i + 1 < len(objs):
            objs[i], objs[i + 1] = objs[i + 1], objs[i]
        elif op == "move":
            objs.insert(r.randrange(len(objs)), objs.pop(i))
        elif op == "dup":
            objs.insert(i + r.choice([1, 1, 2, 3]), json.loads(json.dumps(o)))
        elif op == "del" and len(objs) > 3:
            objs.pop(i)
        elif op in ("reuse", "swapres", "moveres", "dupres"):
            cs = [b for x in objs if isinstance(x, dict) for b in _calls(x)]
            rs = [(k, b) for k, x in enumerate(objs) if isinstance(x, dict) for b in _results(x)]
            if len(cs) < 2 or len(rs) < 2:
                continue
            if op == "reuse":  # a later call takes an earlier call's id (with its result, mostly)
                a, b = r.sample(cs, 2)
                old, b["id"] = b.get("id"), a.get("id")
                if r.random() < 0.8:
                    for _, x in rs:
                        if x.get(_rkey(x)) == old:
                            x[_rkey(x)] = a.get("id")
            elif op == "swapres":
                (_, a), (_, b) = r.sample(rs, 2)
                a[_rkey(a)], b[_rkey(b)] = b.get(_rkey(b)), a.get(_rkey(a))
            elif op == "moveres":
                k, _ = r.choice(rs)
                objs.insert(min(len(objs) - 1, k + r.randint(1, 4)), objs.pop(k))
            else:
                k, _ = r.choice(rs)
                objs.insert(k + r.randint(1, 3), json.loads(json.dumps(objs[k])))
        elif op == "err" and _role(o) == "assistant":
            if fmt.startswith("pi"):
                o["message"]["stopReason"] = r.choice(["error", "aborted"])
            elif fmt == "claude":
                o["isApiErrorMessage"] = True
            else:
                o["stop_reason"] = "error"
        elif op == "extra":
            c = _content(o)
            if isinstance(c, list) and _results(o) and _role(o) != "toolResult":
                c.insert(r.choice([0, len(c)]), {"type": "text", "text": r.choice(["note", "", " "])})
        elif op == "blankname":
            m = o.get("message")
            if isinstance(m, dict) and m.get("role") == "toolResult":
                choice = r.choice(["", "  ", None, "drop"])
                if choice == "drop":
                    m.pop("toolName", None)
                else:
                    m["toolName"] = choice
        elif op == "badcall":
            cs = _calls(o)
            if cs:
                b = r.choice(cs)
                what = r.choice(["id", "name", "partial", "args"])
                if what == "id":
                    b.pop("id", None)
                elif what == "name":
                    b["name"] = "bad name!"
                elif what == "partial":
                    b["partialJson"] = '{"pa'
                else:
                    b.pop("arguments", None)
                    b.pop("input", None)
        elif op == "emptyasst" and _role(o) == "assistant":
            if isinstance(o.get("message"), dict):
                o["message"]["content"] = []
            else:
                o["content"] = []
        elif op == "parent" and ("parentId" in o or "parentUuid" in o):
            key = "parentId" if "parentId" in o else "parentUuid"
            earlier = [_oid(x) for x in objs[:i] if isinstance(x, dict) and _oid(x)]
            everyone = [_oid(x) for x in objs if isinstance(x, dict) and _oid(x)]
            what = r.choice(["earlier", "earlier", "none", "ghost", "any", "self"])
            if what == "earlier" and earlier:
                o[key] = r.choice(earlier)  # a branch: the entries in between are abandoned
            elif what == "none":
                o[key] = None
            elif what == "ghost":
                o[key] = "deadbeef"
            elif what == "self":
                o[key] = _oid(o)
            elif what == "any" and everyone:
                o[key] = r.choice(everyone)
        elif op == "compaction" and fmt == "pi":
            earlier = [x.get("id") for x in objs[:i] if isinstance(x, dict) and x.get("id") and x.get("type") != "session"]
            prev = objs[i - 1].get("id") if i > 0 and isinstance(objs[i - 1], dict) else None
            comp = {"type": "compaction", "id": f"c{r.getrandbits(28):07x}", "parentId": prev,
                    "timestamp": "2026-03-01T10:00:00.000Z", "summary": "summary",
                    "firstKeptEntryId": r.choice(earlier + ["00ghost0"]) if earlier else None, "tokensBefore": 10}
            objs.insert(i, comp)
            nxt = objs[i + 1] if i + 1 < len(objs) else None
            if isinstance(nxt, dict) and "parentId" in nxt and r.random() < 0.7:
                nxt["parentId"] = comp["id"]
        elif op == "noid" and "id" in o and o.get("type") != "session":
            del o["id"]
        elif op == "msgid" and fmt == "claude" and o.get("type") == "assistant":
            nxt = objs[i + 1] if i + 1 < len(objs) else None
            if isinstance(nxt, dict) and nxt.get("type") == "assistant":
                nxt["message"]["id"] = o["message"].get("id")  # merged into one API response
        elif op == "badline":
            objs.insert(i, '{"type": "message", "id": "torn')
    return [o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objs]


def mutated_session(path, seed: int) -> str:
    r = random.Random(seed)
    fmt = r.choice(["pi", "pi", "pi", "pi-v1", "claude", "claude", "messages"])
    per_turn = sorted(k for k, fs in synth.CORRUPTIONS.items() if fmt in fs and k in (
        "partial_json_call", "missing_result", "orphan_result", "duplicate_result", "separated_result",
        "duplicate_id", "dangling_parent", "parent_cycle", "empty_error_turn", "blank_user_turn",
        "bad_tool_name", "no_id_call"))
    kinds = r.sample(per_turn, r.randint(0, 2))
    lines = list(synth.generate(fmt, seed=r.randint(0, 10**6), turns=r.randint(3, 7), corruptions=kinds,
                                compactions=r.randint(0, 1) if fmt != "messages" else 0,
                                parallel_calls=r.random() < 0.7))
    return write_lines(path, mutate(lines, fmt, r))


# ---------------------------------------------------------------- differential: repair and validate


SYNTH_CASES = [
    ("pi", ["missing_result", "orphan_result", "duplicate_result", "separated_result"], 2),
    ("pi", ["duplicate_id", "dangling_parent", "parent_cycle", "partial_json_call"], 1),
    ("pi", ["missing_header", "empty_error_turn", "blank_user_turn", "bad_tool_name", "no_id_call"], 1),
    ("pi", ["invalid_header", "torn_tail", "crlf", "bom", "blank_lines"], 2),
    ("pi-v1", ["missing_result", "separated_result", "partial_json_call", "missing_header"], 2),
    ("pi-v1", ["orphan_result", "duplicate_result", "empty_error_turn", "torn_tail"], 1),
    ("claude", ["missing_result", "orphan_result", "duplicate_result", "separated_result"], 1),
    ("claude", ["duplicate_id", "dangling_parent", "parent_cycle", "bad_tool_name", "no_id_call", "crlf"], 0),
    ("messages", ["missing_result", "orphan_result", "duplicate_result", "separated_result", "bom"], 0),
    ("messages", ["blank_user_turn", "bad_tool_name", "no_id_call", "nul_bytes", "invalid_utf8"], 0),
]


@pytest.mark.parametrize("fmt,kinds,compactions", SYNTH_CASES, ids=lambda v: "+".join(v) if isinstance(v, list) else str(v))
def test_fast_paths_equal_general_paths_on_generated_corruptions(tmp_path, fmt, kinds, compactions):
    for seed in range(3):
        path = str(tmp_path / f"{fmt}-{seed}.jsonl")
        synth.write_session(path, fmt, seed=seed, turns=10, corruptions=kinds, compactions=compactions)
        fast = assert_fast_equals_general(path, f"{fmt} {kinds} seed {seed}")
        if fmt == "claude" and set(kinds) <= CLIENT_HEALED:
            # Claude Code heals these pairing faults itself when it resumes: named, not rewritten
            assert not fast["changes"] and fast["before"]
            assert all(v["severity"] == "warning" for v in fast["before"])
            continue
        assert fast["changes"], "the corruptions were repaired"


def test_fast_paths_equal_general_paths_on_mutated_sessions(tmp_path):
    changed = 0
    for seed in range(250):
        path = mutated_session(tmp_path / f"m{seed}.jsonl", seed)
        fast = assert_fast_equals_general(path, f"mutation seed {seed}")
        changed += bool(fast["changes"])
    assert changed > 200  # the mutations really damaged the sessions


def test_report_after_is_the_validation_of_the_written_file(tmp_path):
    for seed in range(250, 400):
        path = mutated_session(tmp_path / f"m{seed}.jsonl", seed)
        assert_after_matches_output(path, tmp_path)


# ---------------------------------------------------------------- hand-written edge cases

HEADER = {"type": "session", "version": 3, "id": "5f0c7c1e-4b4c-4a36-9a63-2a4cbd3c9d11",
          "timestamp": "2026-03-01T09:00:00.000Z", "cwd": "/w"}
TS = "2026-03-01T09:00:00.000Z"


def pm(eid, parent, msg):
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": {"timestamp": 1, **msg}}


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(cid, name="read"):
    return {"type": "toolCall", "id": cid, "name": name, "arguments": {"path": "a"}}


def asst(*blocks, stop="toolUse"):
    return {"role": "assistant", "content": list(blocks), "stopReason": stop, "provider": "anthropic", "model": "m"}


def result(cid, name="read"):
    return {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": [{"type": "text", "text": "ok"}], "isError": False}


def chain(*msgs, ids=None):
    """pi entries, each the child of the one before."""
    out, prev = [], None
    for k, m in enumerate(msgs):
        eid = ids[k] if ids else f"e{k:07x}"
        out.append(m if "type" in m else pm(eid, prev, m))
        prev = out[-1].get("id", prev)
    return out


PI_EDGE = {
    "reused ids across turns": chain(user("a"), asst(call("t1")), result("t1"), asst(call("t1")), result("t1"), user("b")),
    "results in another order": chain(user("a"), asst(call("t1"), call("t2")), result("t2"), result("t1"), user("b")),
    "reused id inside one turn": chain(user("a"), asst(call("t1"), call("t1")), result("t1"), result("t1"), user("b")),
    "unusable call next to good ones": chain(user("a"), asst(call("t1"), {"type": "toolCall", "id": "t2", "name": "bad name!", "arguments": {}}, call("t3")),
                                              result("t1"), result("t2"), result("t3"), user("b")),
    "errored turn inside a span": chain(user("a"), asst(call("t1"), call("t2")), result("t1"),
                                         asst(call("t9"), stop="error"), result("t2"), result("t9"), user("b")),
    "aborted turn with the same id": chain(user("a"), asst(call("t1")), asst(call("t1"), stop="aborted"), result("t1"), result("t1"), user("b")),
    "blank tool names": chain(user("a"), asst(call("t1"), call("t2")), {**result("t1"), "toolName": " "},
                              {k: v for k, v in result("t2").items() if k != "toolName"}, user("b")),
    "empty assistant inside a span": chain(user("a"), asst(call("t1"), call("t2")), result("t1"), asst(stop="stop"), result("t2"), user("b")),
    "excluded bash between call and result": chain(user("a"), asst(call("t1")),
                                                   {"role": "bashExecution", "command": "ls", "output": "x", "excludeFromContext": True},
                                                   result("t1"), user("b")),
    "custom message between call and result": chain(user("a"), asst(call("t1")),
                                                    {"type": "custom_message", "id": "cm000001", "parentId": "e0000001", "timestamp": TS,
                                                     "customType": "x", "content": "note", "display": False},
                                                    result("t1"), user("b")),
    "result before its call": chain(user("a"), result("t1"), asst(call("t1")), user("b")),
    "more results than calls": chain(user("a"), asst(call("t1")), result("t1"), result("t1"), result("t7"), user("b")),
    "trailing call without result": chain(user("a"), asst(call("t1"), call("t2")), result("t1")),
}


def _with_header(entries):
    return [HEADER] + entries


def _branched():
    """An abandoned branch: the leaf (last line) continues from an earlier entry."""
    es = chain(user("a"), asst(call("t1")), result("t1"), asst(call("t2")), result("t2"), user("b"),
               ids=["a0000001", "a0000002", "a0000003", "a0000004", "a0000005", "a0000006"])
    es.append(pm("a0000007", "a0000003", asst(call("t2"))))  # retry from after the first result
    es.append(pm("a0000008", "a0000007", result("t2")))
    es.append(pm("a0000009", "a0000008", user("c")))
    return es


def _compacted(first_kept):
    es = chain(user("a"), asst(call("t1")), result("t1"), user("b"), asst(call("t2")), result("t2"),
               ids=["b0000001", "b0000002", "b0000003", "b0000004", "b0000005", "b0000006"])
    es.append({"type": "compaction", "id": "b0000007", "parentId": "b0000006", "timestamp": TS, "summary": "s",
               "firstKeptEntryId": first_kept, "tokensBefore": 100})
    es.append(pm("b0000008", "b0000007", asst(call("t1"))))
    es.append(pm("b0000009", "b0000008", result("t1")))
    es.append(pm("b000000a", "b0000009", user("c")))
    return es


PI_EDGE.update({
    "abandoned branch": _branched(),
    "compaction keeping from a tool result": _compacted("b0000003"),
    "compaction keeping from a user turn": _compacted("b0000004"),
    "compaction keeping a missing entry": _compacted("00000000"),
    "first parent dangling": [pm("c0000001", "ffffffff", user("a")), pm("c0000002", "c0000001", asst(call("t1"))),
                              pm("c0000003", "c0000002", result("t1"))],
    "first parent is a later entry": [pm("d0000001", "d0000003", user("a")), pm("d0000002", "d0000001", asst(call("t1"))),
                                       pm("d0000003", "d0000002", result("t1"))],
    "empty-string ids and parents": [pm("", None, user("a")), pm("e0000002", "", asst(call("t1"))), pm("e0000003", "e0000002", result("t1"))],
    "second root in the middle": chain(user("a"), asst(call("t1")), result("t1")) + [pm("f0000001", None, user("new root")),
                                                                                     pm("f0000002", "f0000001", asst(call("t1"))),
                                                                                     pm("f0000003", "f0000002", result("t1"))],
})


@pytest.mark.parametrize("name", sorted(PI_EDGE))
@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_pi_edge_cases_fast_equals_general(tmp_path, name, eol):
    path = write_lines(tmp_path / "s.jsonl", _with_header(PI_EDGE[name]), eol)
    assert_fast_equals_general(path, name)
    assert_after_matches_output(path, tmp_path)
    assert errors(repair_file(path, check=True).after) == [], name


def test_pi_edge_cases_with_a_bom_and_no_header(tmp_path):
    for name, entries in sorted(PI_EDGE.items()):
        path = str(tmp_path / "s.jsonl")
        write_lines(path, entries)
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(b"\xef\xbb\xbf" + data)
        assert_fast_equals_general(path, name)


def _claude(uuid, parent, kind, content, **kw):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "s1",
            "version": "2.1.0", "type": kind, "uuid": uuid, "timestamp": TS,
            "message": {"role": kind, "content": content, **kw}}


def _tool_use(cid):
    return {"type": "tool_use", "id": cid, "name": "Read", "input": {"file_path": "a"}}


def _tool_result(cid):
    return {"type": "tool_result", "tool_use_id": cid, "content": "ok"}


CLAUDE_EDGE = {
    "reused id": [
        _claude("u1", None, "user", "go"),
        _claude("a1", "u1", "assistant", [_tool_use("t1")], id="m1", stop_reason="tool_use"),
        _claude("u2", "a1", "user", [_tool_result("t1")]),
        _claude("a2", "u2", "assistant", [_tool_use("t1")], id="m2", stop_reason="tool_use"),
        _claude("u3", "a2", "user", [_tool_result("t1")]),
    ],
    "split response, results with text": [
        _claude("u1", None, "user", "go"),
        _claude("a1", "u1", "assistant", [{"type": "text", "text": "x"}], id="m1", stop_reason=None),
        _claude("a2", "a1", "assistant", [_tool_use("t1")], id="m1", stop_reason=None),
        _claude("a3", "a2", "assistant", [_tool_use("t2")], id="m1", stop_reason="tool_use"),
        _claude("u2", "a3", "user", [{"type": "text", "text": "before"}, _tool_result("t2")]),
        _claude("u3", "u2", "user", [_tool_result("t1"), {"type": "text", "text": "after"}]),
    ],
    "errored response between call and result": [
        _claude("u1", None, "user", "go"),
        _claude("a1", "u1", "assistant", [_tool_use("t1")], id="m1", stop_reason="tool_use"),
        {**_claude("a2", "a1", "assistant", [{"type": "text", "text": "API Error"}], id="m2", stop_reason="stop_sequence"),
         "isApiErrorMessage": True},
        _claude("u2", "a2", "user", [_tool_result("t1")]),
    ],
    "compact boundary": [
        _claude("u1", None, "user", "old"),
        _claude("a1", "u1", "assistant", [_tool_use("t0")], id="m0", stop_reason="tool_use"),
        {"parentUuid": None, "logicalParentUuid": "a1", "type": "system", "subtype": "compact_boundary", "uuid": "b1",
         "sessionId": "s1", "timestamp": TS, "compactMetadata": {"trigger": "auto", "preTokens": 10}},
        _claude("u2", "b1", "user", [_tool_result("t0")]),
        _claude("a2", "u2", "assistant", [_tool_use("t1")], id="m1", stop_reason="tool_use"),
        _claude("u3", "a2", "user", [_tool_result("t1")]),
    ],
}


@pytest.mark.parametrize("name", sorted(CLAUDE_EDGE))
def test_claude_edge_cases_fast_equals_general(tmp_path, name):
    path = write_lines(tmp_path / "c.jsonl", CLAUDE_EDGE[name])
    assert_fast_equals_general(path, name)
    assert_after_matches_output(path, tmp_path)


def test_messages_edge_cases_fast_equals_general(tmp_path):
    tu, tr = _tool_use, _tool_result
    cases = {
        "reused ids": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [tu("t1")]},
                       {"role": "user", "content": [tr("t1")]}, {"role": "assistant", "content": [tu("t1")]},
                       {"role": "user", "content": [tr("t1")]}],
        "results out of order with text": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [tu("t1"), tu("t2")]},
                                           {"role": "user", "content": [{"type": "text", "text": "x"}, tr("t2"), tr("t1")]}],
        "one result per line": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [tu("t1"), tu("t2")]},
                                {"role": "user", "content": [tr("t2")]}, {"role": "user", "content": [tr("t1")]}],
        "errored assistant between": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [tu("t1")]},
                                      {"role": "assistant", "content": [tu("t2")], "stop_reason": "error"},
                                      {"role": "user", "content": [tr("t1")]}, {"role": "user", "content": [tr("t2")]}],
    }
    for name, lines in cases.items():
        path = write_lines(tmp_path / "m.jsonl", lines)
        assert_fast_equals_general(path, name)
        assert_after_matches_output(path, tmp_path)


def test_validator_fast_turn_matches_general_on_every_turn_shape(tmp_path):
    """_answered_turn settles a turn only when the general check would find nothing in it or its answer."""
    shapes = [
        [asst(call("a"), call("b")), result("a"), result("b")],
        [asst(call("a"), call("b")), result("b"), result("a")],
        [asst(call("a"), call("a")), result("a"), result("a")],
        [asst(call("a")), result("a"), result("a")],
        [asst(call("a")), result("zz")],
        [asst(call("a"), {"type": "toolCall", "id": "b", "name": "x", "partialJson": "{"}), result("a"), result("b")],
        [asst({"type": "text", "text": " "}, call("a")), result("a")],
        [asst(call("a")), result("a"), user("then")],
        [asst(call("a")), user(" "), result("a")],
    ]
    for k, shape in enumerate(shapes):
        for repeat in (1, 2):  # the second copy reuses every id
            path = write_lines(tmp_path / f"v{k}.jsonl", _with_header(chain(user("go"), *(shape * repeat), user("end"))))
            t = scan(path, stats=False)
            fast = [v.to_dict() for v in validate_entries("pi", t.entries)]
            with general():
                slow = [v.to_dict() for v in validate_entries("pi", t.entries)]
            assert fast == slow, (k, repeat)


# ---------------------------------------------------------------- regression: v1 compaction after repair


def test_v1_first_kept_index_is_resolved_by_position_in_the_repaired_entries(tmp_path):
    """Found by this review: the report's ``after`` resolved a v1 ``firstKeptEntryIndex`` with the
    entries' input indexes, so once repair removed an entry before it, the kept segment began one
    entry early: here at a tool result, reported as "unexpected tool_use_id" (exit 1) although the
    written file is valid."""
    v1_header = {"type": "session", "id": HEADER["id"], "timestamp": TS, "cwd": "/w"}

    def v1(msg):
        return {"type": "message", "timestamp": TS, "message": {"timestamp": 1, **msg}}

    path = write_lines(tmp_path / "v1.jsonl", [
        v1_header,
        {"type": "message", "timestamp": TS, "message": "not a message object"},  # dropped by repair
        v1(asst(call("c"))),
        v1(result("c")),
        v1(user("kept")),  # firstKeptEntryIndex 4, 3 once the line above is gone
        v1(asst({"type": "text", "text": "done"}, stop="stop")),
        {"type": "compaction", "timestamp": TS, "summary": "s", "firstKeptEntryIndex": 4, "tokensBefore": 5},
        v1(user("more")),
    ])
    report = repair_file(path, check=True)
    assert any(c.kind == "compaction" for c in report.changes)
    assert errors(report.after) == []
    assert_after_matches_output(path, tmp_path)


# ---------------------------------------------------------------- parallel scan


def _big_session(tmp_path, fmt="pi", turns=60, kinds=()):
    path = str(tmp_path / f"{fmt}.jsonl")
    synth.write_session(path, fmt, seed=11, turns=turns, corruptions=list(kinds))
    return path


def test_bad_lines_are_listed_in_line_order_by_both_scans(tmp_path):
    """Found by this review: a non-object JSON line among the first lines (read before the format
    is known) was listed after later bad lines by the serial scan, in line order by the parallel one."""
    lines = list(synth.generate("pi", seed=2, turns=40))
    lines.insert(3, b"[1, 2]\n")
    lines.insert(6, b'{"type": "message", "id": "torn\n')
    lines.insert(9, b"null\n")
    path = str(tmp_path / "s.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    serial = scan(path, workers=1)
    assert [b.lineno for b in serial.bad] == [4, 7, 10]
    par = scan(path, workers=2, split_min_bytes=1)
    assert par.parts == 2
    assert index_of(par) == index_of(serial)
    a = plan_repair(scan(path, workers=1, stats=False))
    b = plan_repair(scan(path, workers=3, split_min_bytes=1, stats=False))
    assert [c.to_dict() for c in a.changes] == [c.to_dict() for c in b.changes]


@pytest.mark.parametrize("content", [b"\n" * 40, b"\r\n  \n" * 20, b'{"torn\n' * 40, b'{"a": 1\n{"b"\n' * 20])
@pytest.mark.parametrize("fmt", ["pi", "claude", "messages"])
def test_forced_format_file_with_no_parseable_line_is_refused_by_both_scans(tmp_path, content, fmt):
    """Found by this review: with --format, the parallel scan accepted a file with no parseable
    line (the serial scan refuses it), and repair then rewrote the file as an empty one."""
    path = str(tmp_path / "g.jsonl")
    with open(path, "wb") as f:
        f.write(content)
    with pytest.raises(InputError) as serial:
        scan(path, fmt, workers=1)
    with pytest.raises(InputError) as par:
        scan(path, fmt, workers=2, split_min_bytes=1)
    assert str(par.value) == str(serial.value)
    with mock.patch.object(parallel, "MIN_BYTES", 1), pytest.raises(InputError):
        repair_file(path, fmt=fmt, backup=False)
    with open(path, "rb") as f:
        assert f.read() == content  # left alone


def test_helpers_scan_with_this_ctxtool_not_one_in_the_current_directory(tmp_path, monkeypatch):
    """Found by this review: ``python -c`` puts the current directory first on sys.path, so a
    helper started in a directory holding another ``ctxtool`` (a checkout, an older version)
    scanned its part with that code."""
    path = _big_session(tmp_path)
    expected = index_of(scan(path, workers=1))
    decoy = tmp_path / "cwd" / "ctxtool"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "parallel.py").write_text(
        "import marshal, sys\n"
        "def part_main():\n"
        "    sys.stdout.buffer.write(marshal.dumps(([], [], 0, 0, 0, b'\\n')))\n")
    monkeypatch.chdir(decoy.parent)
    t = scan(path, workers=3, split_min_bytes=1)
    assert t.parts == 3
    assert index_of(t) == expected


def test_no_interpreter_path_falls_back_to_scanning_here(tmp_path, monkeypatch):
    path = _big_session(tmp_path, "claude")
    expected = index_of(scan(path, workers=1))
    monkeypatch.setattr(sys, "executable", None)  # some embedded interpreters
    t = scan(path, workers=2, split_min_bytes=1)
    assert index_of(t) == expected


def _line_starts(path):
    with open(path, "rb") as f:
        data = f.read()
    starts, pos = [], 0
    for line in data.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts, len(data)


@pytest.mark.parametrize("fmt", ["pi", "claude", "messages"])
def test_any_part_boundaries_give_the_serial_index(tmp_path, fmt):
    """Parts of any size: one right after the header, one per line, bad lines on both sides of a
    boundary, a torn last line alone in its part; forced and detected format."""
    lines = list(synth.generate(fmt if fmt != "pi" else "pi", seed=4, turns=6))
    odd = [b"\n", b"[1]\n", b'{"torn\n', b"\x00\n", b'{"x": "\xff"}\n']
    for k, extra in enumerate(odd):
        lines.insert(2 + 3 * k, extra)
    lines[-1] = lines[-1].rstrip(b"\n")[:-5]  # torn, no newline
    path = str(tmp_path / "s.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    starts, size = _line_starts(path)
    r = random.Random(fmt)
    layouts = [[0, starts[1], size], [0] + starts[1:] + [size], [0, starts[-1], size]]
    layouts += [[0] + sorted(r.sample(starts[1:], r.randint(1, 6))) + [size] for _ in range(8)]
    real_part = parallel.scan_part

    def part_here(*args):  # what a helper sends back, without starting one per part
        return marshal.loads(marshal.dumps(real_part(*args)))

    for forced in (fmt, None):
        expected = scan_or_error(path, fmt=forced, workers=1)
        for k, bounds in enumerate(layouts):
            with mock.patch.object(parallel, "plan", lambda *a, _b=bounds, **kw: _b), \
                    mock.patch.object(parallel, "_start", parallel._start if k == 0 else (lambda *a: None)), \
                    mock.patch.object(parallel, "scan_part", part_here):
                got = scan_or_error(path, fmt=forced)
            assert got == expected, (forced, bounds)


def test_first_part_too_short_to_detect_stays_serial(tmp_path):
    path = _big_session(tmp_path, "messages", turns=30)
    starts, size = _line_starts(path)
    bounds = [0, starts[3], starts[len(starts) // 2], size]  # three lines: too few to tell the format
    expected = index_of(scan(path, workers=1))
    with mock.patch.object(parallel, "plan", lambda *a, **k: bounds):
        t = scan(path)
    assert t.parts == 1
    assert index_of(t) == expected
    with mock.patch.object(parallel, "plan", lambda *a, **k: bounds):
        t = scan(path, "messages")  # forced: checked on the same lines as serially, so serial too
    assert t.parts == 1
    assert index_of(t) == expected


def test_repair_of_mutated_sessions_is_the_same_from_a_parallel_scan(tmp_path):
    for seed in range(400, 440):
        path = mutated_session(tmp_path / f"p{seed}.jsonl", seed)
        a = outcome(path, workers=1)
        b = outcome(path, workers=2, split_min_bytes=1)
        assert a == b, seed


# ---------------------------------------------------------------- the agent agrees


@pytest.mark.pi
def test_pi_loads_repaired_edge_cases_as_ctxtool_sees_them(tmp_path):
    """What pi's buildSessionContext sends after repair is what ctxtool's view of the output says."""
    for name in ("abandoned branch", "compaction keeping from a tool result", "errored turn inside a span",
                 "reused ids across turns", "results in another order", "blank tool names", "first parent is a later entry"):
        path = write_lines(tmp_path / "s.jsonl", _with_header(PI_EDGE[name]))
        out = str(tmp_path / "out.jsonl")
        repair_file(path, output=out)
        pi = load_with_pi(out)
        t = scan(out)
        mine = [(e.role, [c.id for c in e.calls], [r.id for r in e.results]) for e in view.context_entries("pi", t.entries)]
        theirs = []
        for m in pi["messages"]:
            content = m.get("content") if isinstance(m.get("content"), list) else []
            theirs.append((m["role"], [b["id"] for b in content if b.get("type") == "toolCall"],
                           [m["toolCallId"]] if m["role"] == "toolResult" else []))
        assert mine == theirs, name


def test_fast_paths_equal_general_paths_on_real_shape_data(tmp_path):
    """Real-shape Claude Code data, small (tests/bench/realshape.py): recorded lines, progress lines."""
    from tests.bench import realshape

    for seed in (1, 2):
        path = str(tmp_path / f"rs{seed}.jsonl")
        realshape.write_file(path, 300_000, seed=seed)
        assert_fast_equals_general(path, f"real shape seed {seed}")
        assert_after_matches_output(path, tmp_path)
