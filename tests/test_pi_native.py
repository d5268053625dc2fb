"""The C part's reading of pi session lines (``_scan.Whole`` given ``pi=``, ``ctxtool/_scan_pi.c``) against the Python
it stands in for: every entry it makes is the one ``make_entry(pi, obj, ..., blocks=False, stats)`` then
``share_strings`` and ``release()`` make, on every pi line of the fixtures and of generated sessions (versions 3 and
1), and on variants of them with each field, at any depth, given a value of another type or an edge value,
or removed. A line it is not sure of it declines (None), having changed nothing. (The whole index, with and without
it, serial and split, is compared at the end, and in ``test_parallel_scan.py``.)"""

from __future__ import annotations

import copy
import glob
import hashlib
import os
import pickle
import random

import orjson
import pytest

from ctxtool import scanloop
from ctxtool.formats import pi
from ctxtool.model import entry_to_tuple
from ctxtool.scanloop import make_entry, share_strings
from tests.support.variants import streamed, tally

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_entry = scanloop.native_entries(pi)
if _entry is None and os.environ.get("CTXTOOL_REQUIRE_NATIVE") == "1":
    raise RuntimeError("CTXTOOL_REQUIRE_NATIVE=1 but ctxtool._scan is not built")
pytestmark = pytest.mark.skipif(_entry is None, reason="ctxtool._scan is not built here (no compiler at install)")


def _fixture_lines() -> list[dict]:
    out = []
    for p in sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.jsonl"), recursive=True)):
        with open(p, "rb") as f:
            for raw in f:
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if type(obj) is dict and pi.sniff(obj):
                    out.append(obj)
    return out


def _generated_lines() -> list[dict]:
    import tempfile

    from ctxtool import synth

    out = []
    with tempfile.TemporaryDirectory() as d:
        for fmt, seed in (("pi", 3), ("pi-v1", 4), ("pi", 5)):
            p = os.path.join(d, f"{fmt}-{seed}.jsonl")
            synth.write_session(p, fmt, seed=seed, target_bytes=300_000)
            with open(p, "rb") as f:
                out += [orjson.loads(raw) for raw in f]
    return out


LINES = _fixture_lines()
GENERATED = _generated_lines()

# values a field is given in place of its own: every JSON type, and the edges the reading tells apart
ODD = [None, True, False, 0, 1, -1, 1.5, 2**53, 2**64, -(2**63) - 1, 2**200, 1e300, float("nan"), "", " ", "x",
       "\u00a0\u2003", "\U0001f600", "\ud800", "a" * 65, "read", "unknown", "openclaw", "assistant", "user",
       "toolResult", "custom", "bashExecution", "hookMessage", "branchSummary", "message", "text", "image", "thinking",
       "toolCall", "tool_result", "session", "compaction", "model_change", [], [1], [{}], {}, {"type": "text", "text": "t"},
       {"type": "image"}, "2026-03-01T09:00:02.377Z", "2026-03-01T09:00:02Z", "2026-03-01T09:00:02.377+00:00",
       "2026-02-30T09:00:02Z", 1772355602377, 253402300799999, 253402300800000, -62135596800001, 1772355602377.5]


def python_entry(obj, stats: bool, shared: dict):
    e = make_entry(pi, obj, 5, 6, 7, 8, b"\n", False, stats)
    share_strings(e, shared)
    e.release()
    return e


def same(obj, stats: bool) -> bool:
    """Whether the C part declines the line or makes the Python's entry of it; True when it made one."""
    shared_c: dict = {}
    try:
        before = pickle.dumps(obj)
    except RecursionError:  # (a fixture line nested thousands of levels deep)
        before = None
    c = _entry(obj, 5, 6, 7, 8, b"\n", stats, shared_c)
    assert before is None or pickle.dumps(obj) == before  # the object is not changed
    if c is None:
        return False
    shared_py: dict = {}
    py = python_entry(obj, stats, shared_py)
    assert type(c) is type(py)
    assert repr(entry_to_tuple(c)) == repr(entry_to_tuple(py)), obj
    assert type(c.ts) is type(py.ts) and c.kind is py.kind
    assert [type(x) for x in entry_to_tuple(c)] == [type(x) for x in entry_to_tuple(py)], obj
    assert c.obj is None and c.blocks is None
    # every string goes through the table, as share_strings puts it there
    assert shared_c == shared_py, obj
    for v in (c.type, c.id, c.parent, c.role, c.stop, c.model):
        if v is not None:
            assert shared_c[v] is v
    for x in (*c.calls, *c.results):
        assert shared_c[x.id] is x.id
        if x.name is not None:
            assert shared_c[x.name] is x.name
    for k in c.tool_chars:
        assert shared_c[k] is k
    return True


@pytest.mark.parametrize("stats", [True, False])
def test_every_fixture_and_generated_line(stats):
    assert len(LINES) > 100 and len(GENERATED) > 100
    made = sum(same(o, stats) for o in LINES + GENERATED)
    # it takes most of them (what a session is mostly made of), not only the easy ones
    assert made >= 0.95 * len(GENERATED), (made, len(LINES), len(GENERATED))


def _kinds_of_lines(lines):
    """One line of each shape (line type, role, block types, content type), as many as there are."""
    seen = {}
    for o in lines:
        m = o.get("message") if type(o.get("message")) is dict else {}
        content = m.get("content")
        blocks = tuple(sorted({b.get("type") for b in content if type(b) is dict})) if type(content) is list else ()
        key = (o.get("type"), m.get("role"), type(content).__name__, blocks, "usage" in m, m.get("isError"))
        seen.setdefault(key, o)
    return list(seen.values())


@pytest.mark.parametrize("stats", [True, False])
def test_every_field_given_another_value(stats):
    shapes = _kinds_of_lines(LINES + GENERATED)
    assert len(shapes) >= 12
    made, declined = tally(shapes, ODD, lambda v: same(v, stats))
    assert made > 3000 and declined > 1000, (made, declined)


@pytest.mark.parametrize("seed", range(3))
def test_random_texts_and_blocks(seed):
    """Texts of every kind of character (white space, astral, surrogates), blocks of every kind and order, in every
    role, results with names or none, images, thinking with and without signatures."""
    rng = random.Random(seed)
    alphabet = [" ", "\t", "\n", "\u00a0", "\u3000", "\u200b", "a", "<", "é", "\U0001f600", "\ud83d", "\x00"]

    def text():
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))

    def block():
        k = rng.randrange(7)
        if k == 0:
            return {"type": "text", "text": rng.choice([text(), None, 3, 0])}
        if k == 1:
            return {"type": "thinking", "thinking": text(), **({"thinkingSignature": rng.choice(["", "s"])} if rng.random() < 0.5 else {})}
        if k == 2:
            return {"type": "toolCall", "id": rng.choice(["call_1", "", " ", 5]), "name": rng.choice(["read", "bad name", "", "x" * 70]),
                    "arguments": rng.choice([{}, {"path": text()}, {"n": 1.0, "m": [1.5, 2]}, None, "raw"])}
        if k == 3:
            return {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        if k == 4:
            return {"type": "redacted_thinking", "data": "x"}
        if k == 5:
            return rng.choice(["loose", 1, None, []])
        return {"type": rng.choice(["tool_result", "other", 7]), "tool_use_id": "t", "content": text()}

    for _ in range(500):
        role = rng.choice(["user", "assistant", "toolResult", "custom", "branchSummary"])
        m = {"role": role, "timestamp": rng.choice([1772355602377, 1772355602377.25, None, "x"])}
        if role == "toolResult":
            m.update(toolCallId=rng.choice(["call_1", 5, None]), toolName=rng.choice(["read", "", None, 3]),
                     isError=rng.choice([True, False, 0, 1, "", None]))
            if rng.random() < 0.3:
                m["toolUseId"] = rng.choice(["u1", 2])
            m["content"] = rng.choice([text(), [rng.choice([{"type": "text", "text": text()}, {"type": "image"}, 4])
                                                for _ in range(rng.randint(0, 3))], None, {}])
        else:
            m["content"] = rng.choice([text(), [block() for _ in range(rng.randint(0, 4))], None, 5])
            if role == "assistant":
                m.update(stopReason=rng.choice(["stop", "toolUse", None, 3]), model=rng.choice(["m1", "", None]),
                         provider=rng.choice(["openclaw", "anthropic", None]),
                         usage=rng.choice([None, {"input": rng.randint(0, 9), "output": 2.5, "cacheRead": True,
                                                  "totalTokens": rng.randint(0, 99)}, {}]))
        obj = {"type": "message", "id": rng.choice(["abcd1234", "", None, 7]), "parentId": rng.choice(["p1", "", None]),
               "timestamp": rng.choice(["2026-03-01T09:00:02.377Z", None, 5, "nope"]), "message": m}
        for stats in (True, False):
            same(obj, stats)


def test_the_lines_it_declines_are_the_rare_ones():
    """What it leaves to the Python in generated sessions: the header, compactions, summaries, bash executions."""
    def kind(o):
        return o.get("type") if o.get("type") != "message" else o["message"].get("role")

    declined = {kind(o) for o in GENERATED if _entry(o, 0, 1, 0, 1, b"\n", True, {}) is None}
    assert "session" in declined
    assert declined <= {"session", "compaction", "branch_summary", "custom_message", "bashExecution", "hookMessage"}, declined


def _index_md5(path, **kw) -> str:
    from ctxtool import transcript

    h = hashlib.md5()
    for e in transcript.scan(str(path), **kw).entries:
        h.update(repr(entry_to_tuple(e)).encode())
    return h.hexdigest()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_whole_index_is_the_same_with_and_without_it(tmp_path, monkeypatch, workers):
    """A session with damaged lines among the generated ones: the index, serial and split, as the Python makes it."""
    path = tmp_path / "s.jsonl"
    lines = [orjson.dumps(o) for o in GENERATED if o.get("type") == "session"][:1]
    lines += [orjson.dumps(o) for o in GENERATED if o.get("type") != "session"][:400]
    lines.insert(50, b'{"type":"message","id":"zz","parentId":7,"message":{"role":"user","content":"x"}}')
    lines.insert(60, b'{"type":"message","id":"zy","message":{"role":"assistant","content":[],"usage":{"input":-4}}}')
    lines.insert(70, b'{"type":"message","id":"zx","message":{"role":"toolResult","toolCallId":"c","content":"torn')
    lines.insert(80, b'[1,2]')
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setenv("CTXTOOL_NATIVE", "0")
    want = _index_md5(path, workers=workers, split_min_bytes=0)
    monkeypatch.setenv("CTXTOOL_NATIVE", "1")
    assert _index_md5(path, workers=workers, split_min_bytes=0) == want


@pytest.mark.parametrize("workers", [1, 2])
def test_a_streaming_pass_gets_the_same_entries_with_and_without_it(tmp_path, monkeypatch, workers):
    """A streaming pass (profile) is handed entries without their object, whichever part made them (the C part, the
    Python, a helper)."""

    path = tmp_path / "s.jsonl"
    lines = [orjson.dumps(o) for o in GENERATED[:300]]
    path.write_bytes(b"\n".join(lines) + b"\n")

    got = streamed(path, monkeypatch, True, workers)
    assert got == streamed(path, monkeypatch, False, workers)
    assert len(got) == len(lines)


# ----------------------------------------------------------------------------- tool results read as bytes


def _line_maker():
    from ctxtool import _scan
    from ctxtool.model import EMPTY, MESSAGE, META, Call, FullEntry, Kinds, Result, Usage

    def make(stats: bool, shared: dict):
        return _scan.Whole(FullEntry, Call, Result, Kinds, Usage, EMPTY, META, MESSAGE, into=[], shared=shared,
                           loads=orjson.loads, eol=b"\n", stats=stats, pi=scanloop._pi_parts("pi"))

    return make


def same_bytes(raw: bytes, stats: bool) -> bool:
    """Whether the C part declines the line read as bytes or makes the entry the Python makes of what ``jsonl.parse``
    reads of it (orjson, or the strict fallback); a line neither reads it never takes. True when it made one."""
    from ctxtool.jsonl import loads

    shared_c: dict = {}
    c = _line_maker()(stats, shared_c).line(raw, 5, 6, 7, 8)
    try:
        obj = loads(raw)
    except ValueError:
        assert c is None, raw
        return False
    if c is None:
        return False
    assert type(obj) is dict
    shared_py: dict = {}
    py = python_entry(obj, stats, shared_py)
    assert repr(entry_to_tuple(c)) == repr(entry_to_tuple(py)), raw
    assert [type(x) for x in entry_to_tuple(c)] == [type(x) for x in entry_to_tuple(py)], raw
    assert shared_c == shared_py, raw
    for v in (c.type, c.id, c.parent, c.role, *(r.id for r in c.results), *c.tool_chars):
        if v is not None:
            assert shared_c[v] is v
    return True


def _results():
    return [o for o in LINES + GENERATED if type(o.get("message")) is dict and o["message"].get("role") == "toolResult"]


@pytest.mark.parametrize("stats", [True, False])
def test_tool_results_as_bytes_every_line(stats):
    import json

    results = _results()
    assert len(results) > 50
    made = 0
    for o in results:
        made += same_bytes(orjson.dumps(o) + b"\n", stats)
        # white space around every token, escapes for every character beyond ASCII, keys in another order
        same_bytes(json.dumps(o, separators=(" , ", " : ")).encode() + b" \n", stats)
        same_bytes(json.dumps(dict(reversed(list(o.items())))).encode() + b"\n", stats)
    assert made >= 0.9 * len(results), (made, len(results))


@pytest.mark.parametrize("stats", [True, False])
def test_tool_results_as_bytes_every_field_given_another_value(stats):
    shapes = _kinds_of_lines(_results())

    def check(v) -> bool:
        try:
            raw = orjson.dumps(v) + b"\n"
        except TypeError:  # (a lone surrogate: orjson writes none)
            return False
        return same_bytes(raw, stats)

    made, declined = tally(shapes, [x for x in ODD if x == x], check)  # (NaN: orjson writes null)
    assert made > 300 and declined > 100, (made, declined)


@pytest.mark.parametrize("seed", range(3))
def test_tool_results_as_bytes_damaged(seed):
    """Bytes changed, cut, doubled, escaped: a line neither parser reads is never taken; one they read is read alike."""
    rng = random.Random(seed)
    results = [orjson.dumps(o) for o in _results()]
    odd = [b'"', b"\\", b"\\u0041", b"\\ud800", b"\\ud83d\\ude00", b"\xff", b"\xc3", b"\xe2\x80\xa8", b"\x01", b"}", b"]",
           b"{", b",", b":", b" ", b"1e400", b"-", b"\t", b'"type":"image",', b'"id":"x",', b'"role":"toolResult",']
    made = 0
    for _ in range(3000):
        raw = bytearray(rng.choice(results))
        k = rng.randrange(4)
        at = rng.randrange(len(raw))
        if k == 0:
            raw[at:at + rng.randint(1, 3)] = rng.choice(odd)
        elif k == 1:
            raw = raw[:at]
        elif k == 2:
            raw[at:at] = rng.choice(odd)
        else:  # a key written twice, or a key escaped
            raw = bytearray(bytes(raw).replace(rng.choice([b'"toolName":', b'"id":', b'"text":', b'"timestamp":']),
                                               rng.choice([b'"toolName":"a","toolName":', b'"i\\u0064":', b'"text":3,"text":',
                                                           b'"timestamp":1,"timestamp":']), 1))
        for stats in (True, False):
            made += same_bytes(bytes(raw) + b"\n", stats)
    assert made > 500, made


def test_tool_results_as_bytes_times_and_flags():
    """The times (message's milliseconds before the line's string), isError, toolUseId in place of toolCallId."""
    base = {"type": "message", "id": "a1b2c3d4", "parentId": "00ff00ff", "timestamp": "2026-03-01T09:00:02.377Z",
            "message": {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
                        "content": [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 1772355602377}}
    made = 0
    for mts in (1772355602377, -1, 0, 253402300799999, 253402300800000, 1772355602377.5, 1e3, "x", None, True, "absent"):
        for ts in ("2026-03-01T09:00:02.377Z", "2026-03-01T09:00:02Z", "2026-03-01 09:00:02", 17, None, "absent"):
            for err in (True, False, None, 0, 1, "", "absent"):
                for ids in ({"toolCallId": "c"}, {"toolCallId": 5, "toolUseId": "u"}, {"toolUseId": "u"}, {},
                            {"toolCallId": None, "toolUseId": 3}):
                    o = copy.deepcopy(base)
                    m = o["message"]
                    del m["toolCallId"]
                    m.update(ids)
                    for key, v, d in (("timestamp", mts, m), ("timestamp", ts, o), ("isError", err, m)):
                        if v == "absent":
                            del d[key]
                        else:
                            d[key] = v
                    made += same_bytes(orjson.dumps(o) + b"\n", True)
    assert made > 300, made


def test_tool_results_as_bytes_odd_forms():
    """Forms a byte reader could get wrong: values after the object, keys written twice (Python keeps the last),
    content and message written twice, escaped keys and values, nesting."""
    ok = (b'{"type":"message","id":"a1","parentId":"p1","timestamp":"2026-03-01T09:00:02.377Z","message":{"role":"toolResult",'
          b'"toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"hello"}],"isError":false}}')
    assert same_bytes(ok + b"\n", True)
    forms = [
        ok + b"x", ok + b"{}", ok + b",", ok + b" \t", b" " + ok,
        ok.replace(b'"content":', b'"content":"twice","content":'),
        ok.replace(b'"message":{', b'"message":{"role":"toolResult","content":"first"},"message":{'),
        ok.replace(b'"text":"hello"', b'"text":"hello","text":"bye!!"'),
        ok.replace(b'"text":"hello"', b'"text":"hello","type":"image"'),
        ok.replace(b'"type":"text"', b'"type":"te\\u0078t"'),
        ok.replace(b'"role"', b'"r\\u006fle"'),
        ok.replace(b'"toolResult"', b'"tool\\u0052esult"'),
        ok.replace(b'"c1"', b'"c\\u0031"'),
        ok.replace(b'"read"', b'"re\\nad"'),
        ok.replace(b'"a1"', b'"a\\"1"'),
        ok.replace(b'"p1"', b'"p\\u00e91"'),
        ok.replace(b'"hello"', b'"h\\u00e9llo \\ud83d\\ude00 \\t"'),
        ok.replace(b'"hello"', b'"\\ud83d"'),
        ok.replace(b'[{"type":"text","text":"hello"}]', b'[{"type":"text","text":"a"},{"type":"image","data":"x"},3,null,[]]'),
        ok.replace(b'[{"type":"text","text":"hello"}]', b'[' * 300 + b']' * 300),
        ok.replace(b'[{"type":"text","text":"hello"}]', b'{"type":"text","text":"hello"}'),
        ok.replace(b'"hello"', b'{"a":"hello"}'),
        ok.replace(b'"hello"', b'0'),
        ok.replace(b'"hello"', b'-0.0'),
        ok.replace(b'"type":"message",', b''),
        ok.replace(b'"type":"message",', b'') [:-1] + b',"type":"message"}',
        # an integer nobody reads, beyond Python's int conversion limit (orjson and the json fallback refuse the line;
        # found in review) or just under the C part's bound, and a float as long
        ok[:-2] + b',"details":' + b"1" * 5000 + b"}}", ok[:-2] + b',"details":' + b"1" * 640 + b"}}",
        ok[:-2] + b',"details":' + b"1" * 5000 + b".5}}",
    ]
    made = 0
    for raw in forms:
        for stats in (True, False):
            made += same_bytes(raw + b"\n", stats)
    assert made >= 10, made


@pytest.mark.parametrize("seed", range(4))
def test_texts_of_every_length_and_special_byte_place(seed):
    """The string scan looks at 16 and 8 bytes at once: texts of every length up to 80, with a special byte (quote,
    backslash escape, control, non-ASCII, invalid UTF-8) at every place, measured and checked as Python reads them."""
    from ctxtool import _scan

    rng = random.Random(seed)
    head = (b'{"type":"message","id":"a1","parentId":null,"timestamp":"2026-03-01T09:00:02.377Z","message":{"role":'
            b'"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"')
    tail = b'"}],"isError":false}}\n'
    specials = [b'\\"', b"\\\\", b"\\n", b"\\u00e9", b"\\ud83d\\ude00", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"\xe2\x80\x83",
                b"\x01", b"\x1f", b"\x7f", b"\xff", b"\xc3", b"\xed\xa0\x80", b'"', b"\\x", b"\t"]
    made = 0
    for n in range(81):
        for _ in range(6):
            body = bytearray(rng.choice([b" ", b"a"]) * n)
            for _ in range(rng.randint(0, 2)):
                at = rng.randint(0, len(body))
                body[at:at] = rng.choice(specials)
            raw = head + bytes(body) + tail
            if _scan.valid(raw):  # (what it refuses the Python may still read: bytes that are not UTF-8, as U+FFFD)
                assert python_reads(raw), raw
            made += same_bytes(raw, True)
    assert made > 200, made


def python_reads(raw: bytes) -> bool:
    from ctxtool.jsonl import loads

    try:
        loads(raw)
    except ValueError:
        return False
    return True
