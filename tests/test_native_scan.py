"""The scan's C part (``ctxtool/_scan.c``) against the Python it stands in for: its JSON check accepts
no line Python's readers refuse, its metadata entries are the ones ``scanloop.meta_entry`` makes, its
timestamps are ``datetime.fromisoformat(...).timestamp()``, and its ``Reader`` gives the lines
``for chunk in f`` gives, bounds included. (The whole index, with and without it, is compared in
``test_lazy_decoding.py`` and ``test_parallel_scan.py``.) Skipped where the module is not built;
``CTXTOOL_REQUIRE_NATIVE=1`` (``make test``) makes that a failure."""

from __future__ import annotations

import copy
import glob
import io
import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import orjson
import pytest

from ctxtool import formats, scanloop
from ctxtool.jsonl import Line, parse
from ctxtool.formats.claude import USER_UNLESS_SYSTEM
from ctxtool.model import FIELDS
from tests.test_lazy_decoding import _mutations

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLAUDE_LINES = sorted({l for p in glob.glob(os.path.join(ROOT, "fixtures", "claude-*", "*.jsonl"))
                       for l in open(p, "rb") if l.strip()})

_scan = scanloop.native()
if _scan is None and os.environ.get("CTXTOOL_REQUIRE_NATIVE") == "1":
    raise RuntimeError("CTXTOOL_REQUIRE_NATIVE=1 but ctxtool._scan is not built (pip install -e . needs gcc and the Python headers)")
pytestmark = pytest.mark.skipif(_scan is None, reason="ctxtool._scan is not built here (no compiler at install)")


def python_accepts(raw: bytes) -> bool:
    obj, reason = parse(Line(1, 0, raw, b"\n"))
    return reason is None


def test_every_recorded_line_is_valid_json_to_it():
    assert CLAUDE_LINES
    for line in CLAUDE_LINES:
        assert _scan.valid(line), line[:200]


@pytest.mark.parametrize("seed", range(4))
def test_it_accepts_no_damaged_line_that_python_refuses(seed):
    rng = random.Random(seed)
    accepted = refused = 0
    for raw in _mutations(CLAUDE_LINES, rng, 3000):
        if _scan.valid(raw):
            accepted += 1
            assert python_accepts(raw), raw[:300]
            # and orjson reads it, or it is a number beyond double range (which JSON.parse reads too)
            try:
                orjson.loads(raw)
            except orjson.JSONDecodeError:
                assert b"e" in raw.lower() or b"E" in raw, raw[:300]
        else:
            refused += 1
    assert accepted > 300 and refused > 300  # both sides were really tried


ODD = [
    b"{}", b"[]", b"{\"a\":1}", b" {\"a\" : [1, 2.5e-3, -0, true, false, null]} ", b"{\"a\":\"\\u00e9\\ud83d\\ude00\"}",
    b"{\"a\":01}", b"{\"a\":1.}", b"{\"a\":.5}", b"{\"a\":-}", b"{\"a\":1e}", b"{\"a\":+1}", b"{\"a\":NaN}",
    b"{\"a\":Infinity}", b"{\"a\":tru}", b"{\"a\":nul}", b"{\"a\":1,}", b"{,}", b"[1,]", b"{\"a\"}", b"{\"a\":1 \"b\":2}",
    b"{\"a\":\"\x01\"}", b"{\"a\":\"\\x\"}", b"{\"a\":\"\\u12\"}", b"{\"a\":\"\\ud800\"}", b"{\"a\":\"\\udc00\"}",
    b"{\"a\":\"\\ud800\\u0041\"}", b"{'a':1}", b"{\"a\":1}}", b"{\"a\":1} x", b"\"\xff\"", b"\"\xc0\x80\"",
    b"\"\xed\xa0\x80\"", b"\"\xf4\x90\x80\x80\"", b"\"\xe2\x82\"", b"\"\xe2\x82\xac\"", b"\"\xf0\x9f\x98\x80\"",
    b"\"\x7f\"", b"1e400", b"[" * 199 + b"]" * 199, b"[" * 250 + b"]" * 250, b"", b" ", b"\"a\"\x00",
    # integers beyond a double (orjson refuses them) and beyond Python's int conversion limit (its json fallback does):
    # found in review, the C part took a line with a 5,000-digit one in a field nobody reads
    b"{\"a\":" + b"1" * 5000 + b"}", b"{\"a\":-" + b"9" * 4301 + b"}", b"{\"a\":" + b"1" * 641 + b"}",
    b"{\"a\":" + b"1" * 640 + b"}", b"{\"a\":" + b"1" * 5000 + b".5}", b"{\"a\":" + b"1" * 5000 + b"e2}",
]


@pytest.mark.parametrize("raw", ODD)
def test_edge_cases_are_accepted_only_as_python_accepts_them(raw):
    if _scan.valid(raw):
        assert python_accepts(raw + b"\n")
        assert json.loads(raw.decode("utf-8")) is not None or raw.strip() == b"null"


def test_it_refuses_what_it_must_leave_to_python():
    for raw in (b"{\"a\":\"\\ud800\"}", b"[" * 250 + b"]" * 250, b"{\"a\":NaN}", b"\"\xed\xa0\x80\"", b"{\"a\":1,}",
                b"{\"a\":" + b"1" * 5000 + b"}", b"{\"a\":" + b"1" * 641 + b"}"):
        assert not _scan.valid(raw)
    for raw in (b"{\"a\":\"\\ud83d\\ude00\"}", b"[" * 150 + b"]" * 150, b"1e400", b"\"\x7f\xe2\x82\xac\"", b"-0.0e+5"):
        assert _scan.valid(raw)


SPECIALS = [b"\\n", b"\\\"", b"\\\\", b"\\/", b"\\u00e9", b"\\ud83d\\ude00", b"\\ud800", b"\\udc00x", b"\\u12",
            b"\\x", b"\\", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xed\xa0\x80",
            b"\x01", b"\x1f", b"\x7f", b"\"", b"\\n\\t", b"\\\\\\\""]


def special_byte_cases() -> list[bytes]:
    """A long string with one special byte (an escape, a multi-byte character, a control byte, a quote) at every
    place around the C part's blocks of 16 and 32 bytes and in the tail after them."""
    out = []
    for special in SPECIALS:
        for before in range(0, 72):
            for after in (0, 1, 15, 31, 40):
                out.append(b'{"a":"' + b"x" * before + special + b"y" * after + b'","b":1}')
    return out


def special_byte_verdicts() -> str:
    """The C part's verdict on each case: "1" accepted, "0" left to Python."""
    from ctxtool import _scan as c
    return "".join("1" if c.valid(raw) else "0" for raw in special_byte_cases())


def _left_to_python(raw: bytes) -> bool:
    """A lone surrogate escape, or bytes that are no UTF-8: Python reads the line (as the agents do), the C part
    leaves it to Python."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\\ud800" in raw or b"\\udc00" in raw


@pytest.mark.parametrize("way", ["default", "plain"])
def test_a_special_byte_anywhere_in_a_long_string_is_judged_as_python_judges_it(way):
    """Both ways the C part checks long strings (32 bytes at a time where the CPU has AVX2, else 16) accept exactly
    the strings Python's reader does, whichever block an escape or a multi-byte character falls in or across; what it
    leaves to Python (``_left_to_python``) it leaves wherever it is."""
    if way == "default":
        verdicts = special_byte_verdicts()
    else:
        env = {**os.environ, "CTXTOOL_NO_AVX2": "1"}
        code = ("from ctxtool import _scan; from tests.test_native_scan import special_byte_verdicts as v; "
                "assert _scan.LONG_STRINGS == 'plain', _scan.LONG_STRINGS; print(v())")
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        verdicts = out.stdout.strip()
    cases = special_byte_cases()
    assert len(verdicts) == len(cases)
    for raw, v in zip(cases, verdicts):
        assert (v == "1") == (python_accepts(raw + b"\n") and not _left_to_python(raw)), (way, raw)


def test_the_special_byte_cases_are_both_accepted_and_refused():
    ok = sum(python_accepts(raw + b"\n") for raw in special_byte_cases())
    assert 2000 < ok < len(special_byte_cases()) - 2000


# ----------------------------------------------------------------------------------- metadata entries

FMT = formats.get("claude")


def c_entries(lines: list[bytes], first: int = 1, stats: bool = True):
    """Each line as the C part reads it (its entry's fields, or None: declined), numbered from ``first``
    (its index one less, as in a file of good lines)."""
    into: list = [None] * (first - 1)
    meta = scanloop.meta_reader(_scan, FMT, into, {}, {}, stats=stats)
    out = []
    for no, raw in enumerate(lines, first):
        del into[no - 1:]
        into.extend([None] * (no - 1 - len(into)))
        took = meta.line(raw, no, 1000 + no, None)
        assert bool(took) == (len(into) == no)
        out.append(fields(into[-1]) if took else None)
    return out


def py_entry(raw: bytes, no: int, stats: bool = True):
    """The entry Python's loop makes of a line the C part may take (a metadata or attachment line), or None for a
    line it reads otherwise."""
    obj, reason = parse(Line(no, 0, raw, b"\n"))
    if reason is not None or type(obj) is not dict:
        return None
    ty = obj.get("type")
    if type(ty) is not str:
        return None
    if ty in FMT.FULL_TYPES:  # normalized, then released with its strings shared, as the index's entries are
        e = scanloop.released_entry(FMT, None, obj, no - 1, no, 1000 + no, len(raw) - 1, b"\n", stats, {})
        return fields(e)
    e = scanloop.meta_entry(no - 1, no, 1000 + no, len(raw) - 1, b"\n", ty, obj.get("uuid"), obj.get("parentUuid"),
                            obj.get("timestamp"), {})
    return fields(e)


def fields(e) -> tuple:
    return (type(e).__name__,) + tuple(getattr(e, k) for k in FIELDS)


def test_metadata_entries_are_the_ones_python_makes():
    took = 0
    for no, raw in enumerate(CLAUDE_LINES, 1):
        if not raw.endswith(b"\n"):
            raw += b"\n"
        (c,) = c_entries([raw], no)
        if c is not None:
            took += 1
            assert c == py_entry(raw, no), raw[:200]
    assert took > 100


@pytest.mark.parametrize("seed", range(3))
def test_damaged_metadata_lines_are_declined_or_read_as_python_reads_them(seed):
    rng = random.Random(100 + seed)
    meta_lines = [l for l in CLAUDE_LINES if py_entry(l if l.endswith(b"\n") else l + b"\n", 1) is not None]
    lines = _mutations(meta_lines, rng, 3000)
    took = 0
    for no, (raw, c) in enumerate(zip(lines, c_entries(lines)), 1):
        if c is not None:
            took += 1
            assert c == py_entry(raw, no), raw[:300]
    assert took > 100


def _meta_line(**fields) -> bytes:
    base = {"type": "progress", "uuid": "u1", "parentUuid": "p1", "timestamp": "2025-06-01T10:00:00.123Z", "data": {"x": 1}}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}, ensure_ascii=False).encode() + b"\n"


@pytest.mark.parametrize("line,taken", [
    (_meta_line(), True),
    (_meta_line(uuid=None, parentUuid=None, timestamp=None), True),
    (_meta_line(uuid=..., parentUuid=..., timestamp=...), True),
    (_meta_line(uuid=7), True),  # a uuid of another kind is no id
    (_meta_line(uuid={"a": [1]}), True),
    (_meta_line(parentUuid=""), True),
    (_meta_line(timestamp="2025-06-01T10:00:00Z"), True),
    (_meta_line(timestamp="2025-06-01T10:00:00.123456Z"), True),
    (_meta_line(timestamp="2025-06-01T10:00:00+02:00"), True),  # parse_ts reads it
    (_meta_line(timestamp="2024-02-30T10:00:00.000Z"), True),  # no such day: parse_ts says None
    (_meta_line(timestamp="yesterday"), True),
    (_meta_line(type="user", isSidechain=False), False),  # a prompt line without a message: the Python's (marked)
    (_meta_line(type="attachment", isSidechain=False), True),  # an attachment line (read below)
    (_meta_line(type=None), False),
    (_meta_line(type=...), False),
    (_meta_line(parentUuid=0), False),
    (_meta_line(parentUuid=True), False),
    (_meta_line(timestamp=1717236000123), False),
    (_meta_line(uuid="\u00e9\\"), False),  # an escape in one of the four values
    (_meta_line(uuid="\u00e9"), True),
    (_meta_line(type="pr\u00f6gress"), True),
    (b'{"type":"progress","type":"progress"}\n', False),  # a key written twice
    (b'{"typ\\u0065":"user"}\n', False),  # an escaped key
    (b'{"type":"progress"}\r\n', False),
    (b'{"type":"progress"}', False),
    (b'[{"type":"progress"}]\n', False),
])
def test_which_metadata_lines_it_takes(line, taken):
    (c,) = c_entries([line])
    assert (c is not None) == taken
    if taken:
        assert c == py_entry(line, 1)


# ----------------------------------------------------------------------------------------- timestamps


def test_timestamps_are_pythons():
    rng = random.Random(7)
    epoch = datetime(1, 1, 1, tzinfo=timezone.utc)
    for _ in range(20000):
        dt = epoch + timedelta(microseconds=rng.randrange(0, 315537897600 * 10 ** 6))
        if rng.random() < 0.5:  # most within the years the clients write
            dt = dt.replace(year=rng.randrange(1900, 2256), day=min(dt.day, 28))
        if rng.random() < 0.3:
            dt = dt.replace(year=rng.choice([1969, 1970, 2000, 2024, 2100]), day=min(dt.day, 28))
        for s in (dt.strftime("%Y-%m-%dT%H:%M:%S") + "Z", dt.strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z",
                  dt.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"):
            got = _scan.iso_ts(s)
            if got is None:  # beyond 2**53 microseconds from 1970 (before 1685, after 2255): left to parse_ts
                assert not 1686 <= dt.year <= 2254, s
            else:
                assert got == datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp(), s
    for s in ("2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00Z", "2025-13-01T00:00:00Z", "2025-01-01T24:00:00Z",
              "2025-01-01T00:00:60Z", "2025-01-01T00:00:00.1Z", "2025-01-01 00:00:00Z", "2025-01-01T00:00:00",
              "0000-01-01T00:00:00Z", "2025-01-01T00:00:00.12345Z", "2025-01-01T00:00:00+00:00"):
        want = None
        if s in ("2024-02-29T23:59:59.999Z",):
            want = datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
        assert _scan.iso_ts(s) == want, s
    # the date last read is kept (a file's lines mostly share one): a time that is wrong on that date is still refused,
    # and the date kept is no other's
    for s, ok in [("2025-01-01T00:00:00Z", True), ("2025-01-01T24:00:00Z", False), ("2025-01-01X00:00:00Z", False),
                  ("2025-01-01T00:00:01.5Z", False), ("2025-01-01T00:00:01.500Z", True), ("2025-01-02T00:00:00Z", True),
                  ("2025-02-30T00:00:00Z", False), ("2025-01-01T23:59:59.999999Z", True)]:
        want = datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() if ok else None
        assert _scan.iso_ts(s) == want, s


# --------------------------------------------------------------------------------------------- Reader


def py_lines(data: bytes, begin: int, end: int | None) -> list[tuple[int, int, bytes]]:
    """(number, offset, line) as the Python loop reads them."""
    out, no, offset, eol = [], 0, begin, b"\n"
    for chunk in io.BytesIO(data[begin:]):
        if end is not None and offset >= end or not eol:
            break
        if end is not None and offset + len(chunk) > end:
            chunk = chunk[: end - offset]
        no += 1
        out.append((no, offset, chunk))
        offset += len(chunk)
        eol = b"\n" if chunk.endswith(b"\n") else b""
    return out


def c_lines(data: bytes, begin: int, end: int | None, size: int) -> tuple[list, int]:
    f = io.BytesIO(data)
    f.seek(begin)
    r = _scan.Reader(f, begin, end, size)
    out = [(r.no, r.start, chunk) for chunk in r]
    return out, r.offset


@pytest.mark.parametrize("seed", range(6))
def test_the_reader_gives_the_lines_python_does(seed):
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randint(0, 60)):
        n = rng.choice([0, 1, 5, 80, 4095, 4096, 5000, 20000])
        parts.append(bytes(rng.choice(b"ab {}\r") for _ in range(n)) + rng.choice([b"\n", b"\r\n", b"\n\n"]))
    data = b"".join(parts) + rng.choice([b"", b"tail without newline", b"\r"])
    cuts = sorted(rng.sample(range(len(data) + 1), min(3, len(data) + 1)))
    # bounds at line starts, as parallel.plan makes them, and an end inside a line (a file that grew)
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    for begin, end in [(0, None), (rng.choice(starts), None), (0, cuts[0]), (rng.choice(starts), len(data) + 10)]:
        if end is not None and end < begin:
            begin, end = end, begin
            begin = max(s for s in starts if s <= begin)
        want = py_lines(data, begin, end)
        for size in (4096, 1 << 20):
            got, offset = c_lines(data, begin, end, size)
            assert got == want, (begin, end, size)
            assert offset == (want[-1][1] + len(want[-1][2]) if want else begin)


def test_lines_longer_than_one_read_are_given_whole():
    # the reader reads at most 64 KiB at a time (READ_CHUNK in _scan.c) into a buffer of 1 MiB: a line that crosses one
    # read's end, or several, or the buffer's size, is one line, and the lines around it keep their bytes and offsets
    chunk = 64 << 10
    lengths = [chunk - 2, chunk - 1, chunk, chunk + 1, 3, 2 * chunk + 5, 1, (1 << 20) + 7, 200_000, 17]
    data = b"".join(bytes([97 + i % 26]) * n + b"\n" for i, n in enumerate(lengths)) + b"tail"
    for size in (4096, 1 << 20):
        got, offset = c_lines(data, 0, None, size)
        assert got == py_lines(data, 0, None)
        assert [len(c) for _, _, c in got] == [n + 1 for n in lengths] + [4]
        assert offset == len(data)


class _Trickle(io.BytesIO):
    """A file whose reads give at most ``n`` bytes (a pipe, a slow disk): a line comes in many fills."""

    def __init__(self, data: bytes, n: int):
        super().__init__(data)
        self.n, self.reads = n, 0

    def readinto(self, b):
        self.reads += 1
        return super().readinto(memoryview(b)[:self.n])


def test_a_line_read_in_many_fills_is_searched_on_from_where_the_last_search_stopped():
    # each fill searched the line from its start again: a 100 MB line took 6.4 s (1.1 s now; 200 MB: 24-40 s). The
    # search goes on where it stopped, in ``next`` and in ``peek``: the same lines, whatever the fills
    data = b"{}\n" + b"x" * 300_000 + b"\n" + b"ab\r\n" + b"y" * 70_000 + b"\n" + b"tail"
    for n in (1, 7, 4096, 65_537):
        f = _Trickle(data, n)
        r = _scan.Reader(f, 0, None, 4096)
        assert [c for c in r] == [b"{}\n", b"x" * 300_000 + b"\n", b"ab\r\n", b"y" * 70_000 + b"\n", b"tail"]
        assert r.offset == len(data) and f.reads >= len(data) // n
        f = _Trickle(data, n)
        r = _scan.Reader(f, 0, None, 4096)
        scores = r.peek(4, {}, {})
        assert len(scores) >= 1 and next(iter(r)) == b"{}\n"  # a peek gives nothing out
        assert [c for c in r][0] == b"x" * 300_000 + b"\n"


def test_readers_one_after_another_give_their_own_lines():
    # a reader's buffer is kept for the next one (a folder's run makes hundreds): what the last one read (a line that
    # grew its buffer, stale bytes beyond the new file's end) must never show in the next one's lines
    big = b"x" * (3 << 20) + b"\n"
    for data, size in [(big + b"tail", 4096), (b"a\nbb\n", 1 << 20), (b"", 4096), (b"ccc", 4096), (big, 1 << 20),
                       (b"{}\n" * 5000, 4096)]:
        got, offset = c_lines(data, 0, None, size)
        assert got == py_lines(data, 0, None)
        assert offset == len(data)


_FAULTS = """
import resource, sys
from ctxtool import _scan
from ctxtool.jsonl import open_binary

def scan():
    with open_binary(sys.argv[1]) as f:
        first = next(iter(f))
        assert sum(1 for _ in _scan.Reader(f, len(first), None)) == 1099

scan()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    scan()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_readers_one_after_another_do_not_fault_in_a_fresh_buffer_each(tmp_path):
    # as a scan reads a file: its first line through Python's buffered file (1 MiB), the rest through a reader. A fresh
    # reader buffer was 256 page faults on its first fill, and the heap's top given back to the system when both
    # were freed (measured: 96K faults for these 200 files with a fresh buffer each, 0 with the kept one). In a fresh
    # process: the heap of this one (the whole suite's) has holes the buffers would come from
    import subprocess
    import sys

    path = tmp_path / "s.jsonl"
    path.write_bytes((b"y" * 1000 + b"\n") * 1100)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", _FAULTS, str(path)], capture_output=True, text=True, cwd=root, check=True)
    assert int(out.stdout) < 200 * 256 // 4, out.stdout


def test_the_reader_takes_metadata_lines_and_counts_them():
    # (a compact boundary is left to the Python)
    lines = [_meta_line(uuid=f"u{i}") if i % 3 else _meta_line(type="system", subtype="compact_boundary", uuid=f"u{i}")
             for i in range(30)]
    data = b"".join(lines)
    into: list = []
    r = _scan.Reader(io.BytesIO(data), 0, None)
    r.meta = scanloop.meta_reader(_scan, FMT, into, {}, {})
    given = [(r.no, r.start, chunk) for chunk in r]
    assert [c for _, _, c in given] == lines[0::3]
    assert [no for no, _, _ in given] == list(range(1, 31, 3))
    assert [e.lineno for e in into] == [i + 1 for i in range(30) if i % 3]
    assert [e.offset for e in into] == [sum(map(len, lines[:i])) for i in range(30) if i % 3]
    assert r.lf == 20 and r.meta_bytes == sum(len(l) for i, l in enumerate(lines) if i % 3)
    assert r.offset == len(data) and r.no == 30


def _fields(e) -> tuple:
    from ctxtool.model import entry_to_tuple

    return type(e), entry_to_tuple(e), e.eol, e._m is not None and e._m is getattr(__import__("ctxtool.model").model, "PLAIN")


@pytest.mark.parametrize("line_shift", [0, 1234])
def test_a_parts_entries_are_built_from_its_tuples_as_python_builds_them(monkeypatch, line_shift):
    """``_scan.Builder`` (the split scan's merge) against ``parallel._built`` in Python, on the index of every
    fixture: entries of every field (calls, results, kinds, usage, tool chars, extra), the helpers' 8-tuples of
    metadata lines ("\\n" and "\\r\\n" endings), index and line numbers moved, tuples freed as they are built,
    and the int objects shared as Python shares them."""
    from ctxtool import parallel
    from ctxtool.model import entry_to_tuple
    from ctxtool.transcript import scan

    tuples = []
    for p in sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*.jsonl")))[:120]:
        try:
            t = scan(p, workers=1)
        except Exception:
            continue
        for e in t.entries:
            tuples.append(entry_to_tuple(e))
            if e.kind == "meta":
                tuples.append((e.lineno, e.offset, e.length, e.eol, e.type, e.id, e.parent, e.ts))
    tuples.append((7, 100, 55, b"\r\n", "progress", "u1", None, 1.5))
    assert len(tuples) > 2000 and any(len(x) == 8 for x in tuples) and any(x[14] for x in tuples if len(x) == 25)
    frames = [tuples[k:k + 997] for k in range(0, len(tuples), 997)]

    def built(native: bool):
        monkeypatch.setattr(parallel, "_builder", parallel._builder if native else (lambda: None))
        parts = [list(f) for f in frames]
        sizes: dict = {}
        out: list = []
        parallel._merge(out, iter(parts), 5, line_shift, sizes)
        assert all(x is None for part in parts for x in part)  # every tuple freed
        streamed = list(parallel._built(iter([list(f) for f in frames]), 5, line_shift, {}))
        return out, streamed, sizes

    real = parallel._builder
    assert real() is not None
    c_out, c_streamed, c_sizes = built(True)
    py_out, py_streamed, py_sizes = built(False)
    assert [_fields(e) for e in c_out] == [_fields(e) for e in py_out]
    assert [_fields(e) for e in c_streamed] == [_fields(e) for e in py_out]
    assert c_sizes == py_sizes
    # one int object for a line number and the next index, one per metadata line length, as Python makes them
    assert [e.index is n.lineno for e, n in zip(c_out[1:], c_out)] == [e.index is n.lineno for e, n in zip(py_out[1:], py_out)]
    assert all(c_sizes[e.length] is e.length for e in c_out if len(entry_to_tuple(e)) and e._m is not None and e.kind == "meta"
               and type(e).__name__ == "Entry" and e.eol == b"\n")


def _claude_files(tmp_path, n: int = 240):
    from tests.support import judge_fuzz

    out = sorted(glob.glob(os.path.join(ROOT, "fixtures", "claude-*", "*.jsonl")))
    for name, source, data in judge_fuzz.cases("claude", 5, n):  # damaged files: lost parents, odd uuids, sidechains...
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(data)
        out.append(str(p))
    return out


def test_the_chains_passes_are_pythons(tmp_path, monkeypatch):
    """``_scan.Rows`` (``claude_chain.main_entries`` and ``chain``'s first loop in C) against the Python loops, on
    every Claude Code fixture and 240 damaged recorded files: the same main side, the same rows, the same chain
    and the same lines sent."""
    from ctxtool import claude_chain
    from ctxtool.errors import CtxError
    from ctxtool.transcript import scan

    assert claude_chain.index_passes() is not None
    seen = sides = 0
    for p in _claude_files(tmp_path):
        try:
            t = scan(p, "claude")
        except CtxError:
            continue
        got = []
        for native in (True, False):
            if not native:
                monkeypatch.setattr(claude_chain, "index_passes", lambda: None)
            main = claude_chain.main_entries(t.entries)
            rows: dict = {}
            counts: list = []
            seq = claude_chain.chain(t.entries, rows=rows, counts=counts)
            got.append(([e.index for e in main], {k: v.index for k, v in rows.items()}, counts, [e.index for e in seq],
                        [e.index for e in claude_chain.sent_entries(t.entries)]))
        monkeypatch.undo()
        assert got[0] == got[1], p
        seen += 1
        sides += len(got[0][0]) != len(t.entries)
    assert seen > 200 and sides  # files with a subagent's lines among them


def test_the_cut_sent_entries_goes_on_with_is_pythons():
    """``_scan.Rows.kept``: the lines from an index on, those of ``early``, each uuid's row only (given the rows), as
    the Python comprehension keeps them; an index that is no int is left to the Python."""
    from ctxtool.scanloop import index_passes
    from ctxtool.transcript import scan

    r = index_passes()
    entries = scan(os.path.join(ROOT, "fixtures", "claude-recorded", "auto_compacted.jsonl")).entries
    n = len(entries)
    rows = {e.id: e for e in entries if e.id is not None}
    rows[entries[-1].id] = entries[0]  # a uuid whose row is another line
    cases = 0
    for start in (0, 1, n // 2, n - 1, n, n + 5, -3):
        for early in (set(), {0, 3, n // 3}, frozenset({2})):
            for rw in (None, rows, {}):
                want = [e for e in entries if (e.index >= start or e.index in early)
                        and (rw is None or e.id is None or rw.get(e.id) is e)]
                got = r.kept(entries, start, early, rw)
                assert [e.index for e in got] == [e.index for e in want], (start, early, rw is None)
                cases += len(want) not in (0, n)
    assert cases > 20
    e = entries[3]
    index, e.index = e.index, "3"
    try:
        assert r.kept(entries, 0, set(), None) is None
    finally:
        e.index = index
    assert r.kept(entries, 2 ** 70, set(), None) is None
    with pytest.raises(TypeError):
        r.kept(entries + [object()], 0, set(), None)


def test_repairs_passes_are_pythons(tmp_path, monkeypatch):
    """``_scan.Rows.sound`` and ``looked`` (repair's links check and the entries its hygiene looks at) against the
    Python loops: the same plan (changes, their lines and ids) on every pi, Claude Code and Codex fixture and on
    damaged recorded files of each."""
    from ctxtool import claude_chain, repair, validate, view
    from ctxtool.errors import CtxError
    from tests.support import judge_fuzz

    files = sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*.jsonl")))
    for agent in ("claude", "pi", "codex"):
        for name, source, data in judge_fuzz.cases(agent, 9, 80):
            p = tmp_path / f"{name}.jsonl"
            p.write_bytes(data)
            files.append(str(p))
    planned = linked = 0
    for p in files:
        got = []
        for native in (True, False):
            if not native:
                for module in (repair, claude_chain, view, validate):  # (the links, the hygiene, the walk, the checks)
                    monkeypatch.setattr(module, "index_passes", lambda: None)
            try:
                r = repair.repair_file(p, check=True)
                got.append(([(c.kind, c.action, c.line, c.id, c.detail) for c in r.changes],
                            [v.to_dict() for v in r.before], [v.to_dict() for v in r.after]))
            except CtxError as e:
                got.append(str(e))
        monkeypatch.undo()
        assert got[0] == got[1], p
        planned += 1
        linked += any(c[0] in ("dangling-parent", "cycle", "duplicate-id", "malformed-entry") for c in got[0][0]
                      if isinstance(got[0], tuple))
    assert planned > 300 and linked > 10


@pytest.mark.parametrize("seed", range(40))
def test_facts_keeps_the_last_window_and_model_a_metadata_entry_says(seed, monkeypatch):
    """``_scan.Rows.facts`` hands ``add`` only the last metadata entries that say a valid window and a valid model
    (and entries with an object at once): the evidence is the Python loop's, whatever the values (valid or not:
    0, negative, booleans, huge, strings, empty models), their order, and entries it hands back to Python between
    them (an extra noting ignored values)."""
    from ctxtool import estimate as est
    from ctxtool.model import MESSAGE, Usage, full_entry
    from ctxtool.transcript import Transcript

    rng = random.Random(seed)
    windows = [None, 0, -1, 5, 200_000, True, False, 2**70, -(2**70), "9", 1.5]
    models = [None, "", "m1", "m2", 3, True]
    entries = []
    for i in range(rng.choice([5, 20, 60])):
        e = full_entry(i, i + 1, 0, 10, b"\n")
        r = rng.random()
        if r < 0.6:
            x = {}
            if rng.random() < 0.7:
                x["context_window"] = rng.choice(windows)
            if rng.random() < 0.7:
                x["model"] = rng.choice(models)
            if rng.random() < 0.05:
                x["ignored"] = ("payload.info.x",)
            e.extra = x or None
            if rng.random() < 0.05:
                e.obj = {"modelId": rng.choice(models), "contextWindow": rng.choice(windows)}
        elif r < 0.9:
            e.kind, e.role = MESSAGE, rng.choice(["assistant", "user"])
            e.model = rng.choice(models[:4] + ["<synthetic>"])
            if rng.random() < 0.7:  # recorded usage: the peak per model, read in C where its three counts are ints
                # (mostly a few small values: the same peak again, at a later line, keeps the first)
                odd = [2**40, 2**62, 2**70, -3, 1.5, True]
                counts = [rng.choice([0, 5, 100] * 6 + odd) for _ in range(3)]
                e.usage = Usage(input=counts[0], cache_read=counts[1], cache_write=counts[2])
            if rng.random() < 0.1:
                e.extra = rng.choice([{"sidechain": True}, {"api_error": True}, {"ignored": ("x",)}])
        entries.append(e)

    def facts(native):
        if not native:
            monkeypatch.setattr(est, "index_passes", lambda: None)
        t = Transcript("x.jsonl", None)
        t.entries = entries
        ix = est.Index(t)
        est._facts(ix, entries)
        monkeypatch.undo()
        ev = ix.evidence
        return (ev.recorded, ev.recorded_line, ev.model_hint, ev.last_model, ev.main.seen, ix.last_model, ix.ignored,
                ev.peaks)

    assert facts(True) == facts(False)


# ------------------------------------------------------------------------------- attachment lines

ATTACHMENTS = [l if l.endswith(b"\n") else l + b"\n" for l in CLAUDE_LINES if b'"type":"attachment"' in l]
NOTHING = object()
CONTENTS = ["", " ", "\t\n", "\u00a0", "\u3000 \u2028", "\x1c\x1f", "\u200b", "\u0085", "a", " a ", "é", "😀", "x😀é\n",
            "\u2009" * 9 + "z", " " * 17, "abcdefgh", " " * 8 + "abcdefgh" + " " * 8, "\\", "\"q\"", "\b", "\x7f", None, 5, 0, [], {}, True, ["a"], NOTHING]
RENDERED = [NOTHING, None, [], "text", 7, {"content": "a"}]
# every kind the client renders for the user unless its role says system (formats.claude.USER_UNLESS_SYSTEM: the C
# part has it as a literal, _scan_claude.c att_entry), so a kind added there is compared here too
# the kinds whose data the client checks when it loads a transcript (formats.claude.payload_sent, rule 44)
PAYLOAD_KINDS = ["already_read_file", "hook_success", "hook_additional_context", "task_reminder", "todo_reminder",
                 "invoked_skills", "skill_listing", "withheld_memory"]
KINDS = ["environment", "file", *sorted(USER_UNLESS_SYSTEM), *PAYLOAD_KINDS, "", "é", "a\"b", None, 5, {}, [], NOTHING]
PAYLOADS = [NOTHING, {}, {"type": "text"}, [], [{}], None, "x", "", 5, ["a", "b"], ["a", 5], [{}, {}], [[], {}],
            [{"a": 1}, None], ["\u00e9\"", "x\\"]]
NAMES = [NOTHING, [], ["a"], ["a" * 512], ["a" * 513], ["\U0001F600" * 256], ["\U0001F600" * 257], ["\u00e9" * 513],
         [5], "x", None, ["x"] * 4096, ["x"] * 4097, ["a\"b", "c\\d"]]
ROLES = ["system", "user", "assistant", "", None, 5, ["system"], "Syst\u00e9m", NOTHING]
SIDES = [True, False] * 3 + [None, NOTHING, 1, 0, "", "yes", []]  # (only true and false are the C part's: side_key)


def _attachment_line(rng: random.Random) -> bytes:
    obj = orjson.loads(rng.choice(ATTACHMENTS))
    def put(d, key, value):
        if value is NOTHING:
            d.pop(key, None)
        else:
            d[key] = value
    r = rng.random()
    if r < 0.6:
        items = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            item = {"type": "text"} if rng.random() < 0.3 else {}
            put(item, "content", rng.choice(CONTENTS))
            items.append(item if rng.random() < 0.9 else rng.choice([None, 3, "s", [item]]))
        obj["rendered"] = items
    elif r < 0.8:
        put(obj, "rendered", rng.choice(RENDERED))
    if rng.random() < 0.4:
        att = obj.get("attachment") if isinstance(obj.get("attachment"), dict) else {}
        put(att, "type", rng.choice(KINDS))
        if rng.random() < 0.5:  # (the client drops an attachment whose data fails its check of the kind: rule 44)
            put(att, "content", rng.choice(PAYLOADS))
        if rng.random() < 0.3:
            put(att, "names", rng.choice(NAMES))
        if rng.random() < 0.3:
            put(att, "skills", rng.choice(PAYLOADS))
        obj["attachment"] = att if rng.random() < 0.9 else rng.choice([None, "file", [att]])
    if rng.random() < 0.4:
        put(obj, "renderedRole", rng.choice(ROLES))
    if rng.random() < 0.4:
        put(obj, "isSidechain", rng.choice(SIDES))
    return json.dumps(obj, ensure_ascii=rng.random() < 0.3).encode("utf-8", "surrogatepass") + b"\n"


def _unrendered_file(raw: bytes) -> bool:
    """A file attachment written with no rendering (an @-mentioned picture's: the client renders it when it sends)."""
    obj = json.loads(raw)
    return obj["attachment"].get("type") == "file" and "rendered" not in obj


def test_recorded_attachment_lines_are_all_taken_and_read_as_python_reads_them():
    assert len(ATTACHMENTS) > 20
    declined = 0
    for stats in (True, False):
        for no, raw in enumerate(ATTACHMENTS, 1):
            (c,) = c_entries([raw], no, stats)
            if _unrendered_file(raw) or b'"type":"queued_command"' in raw:
                # the Python's: a picture it renders from its data, a queued prompt it may send as typed (formats.claude)
                assert c is None, raw[:200]
                declined += 1
                continue
            assert c is not None, raw[:200]  # every other line the client wrote is the C part's
            assert c == py_entry(raw, no, stats), raw[:200]
    assert declined >= 8  # (image_mention.jsonl, mention_kinds.jsonl: one a picture's mention; workday's queued prompts)
    kinds = {py_entry(raw, 1)[1 + FIELDS.index("kind")] for raw in ATTACHMENTS}
    assert kinds == {"message", "meta"}  # both kinds of attachment were there


@pytest.mark.parametrize("seed", range(3))
def test_attachment_variants_are_declined_or_read_as_python_reads_them(seed):
    rng = random.Random(300 + seed)
    lines = [_attachment_line(rng) for _ in range(1500)]
    taken = 0
    kinds = set()
    for stats in (True, False):
        for no, (raw, c) in enumerate(zip(lines, c_entries(lines, 1, stats)), 1):
            if c is not None:
                taken += 1
                want = py_entry(raw, no, stats)
                assert c == want, raw[:400]
                kinds.add((want[1 + FIELDS.index("kind")], want[1 + FIELDS.index("empty")], want[1 + FIELDS.index("blank_text")]))
    assert taken > 2000  # most are the C part's (declined: escapes in the role or kind, an isSidechain not true or false)
    assert {("message", False, False), ("message", True, True), ("message", False, True), ("meta", False, False)} <= kinds


@pytest.mark.parametrize("kind", sorted(USER_UNLESS_SYSTEM) + ["environment"])
@pytest.mark.parametrize("role", ["system", "user", "assistant", "", None])
def test_an_attachment_is_for_the_user_unless_its_role_says_system_as_python_reads_it(kind, role):
    """The kinds rendered for the user unless the role says system are a literal in the C part: each is read as the
    Python reads it, whatever the role (None: no renderedRole written)."""
    obj = {"type": "attachment", "uuid": "u", "attachment": {"type": kind}, "rendered": [{"content": "x"}],
           "isSidechain": False}
    if role is not None:
        obj["renderedRole"] = role
    line = json.dumps(obj).encode() + b"\n"
    (c,) = c_entries([line])
    assert c is not None and c == py_entry(line, 1)
    extra = c[1 + FIELDS.index("extra")]
    user = role == "user" or (kind in USER_UNLESS_SYSTEM and role != "system")
    assert extra["context"] == ("user" if user else "system")


@pytest.mark.parametrize("line", [
    b'{"type":"attachment","attachment":{"type":"a","type":"b"},"rendered":[{"content":"x"}]}\n',  # a key twice
    b'{"type":"attachment","attachment":{"typ\\u0065":"b"},"rendered":[{"content":"x"}]}\n',  # an escaped key
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[{"content":"x","content":""}]}\n',
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[{"c\\u006fntent":"x"}]}\n',
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[],"rendered":[{"content":"x"}]}\n',
    b'{"type":"attachment","attachment":{"type":"b\\u0041"},"rendered":[{"content":"x"}]}\n',  # an escaped kind
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[{"content":"x"}],"renderedRole":"syst\\u0065m"}\n',
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[{"content":"x"}],"isSidechain":1}\n',
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[{"content":"\\ud800"}]}\n',  # a lone surrogate
    b'{"type":"attachment","attachment":{"type":"b"},"rendered":[{"content":"x"}]}\r\n',
])
def test_attachment_lines_it_leaves_to_python(line):
    assert c_entries([line]) == [None]


@pytest.mark.parametrize("content,chars,empty,blank", [
    ("abc", 3, False, False), ("\\n\\t ", 3, True, True), ("\\u00e9\\ud83d\\ude00", 3, False, False),
    ("\u00e9\U0001f600", 3, False, False), ("\\u3000\\u2028\\u001c", 3, True, True), ("\\u200b", 1, False, False),
    ("\\b", 1, False, False), ("\\f\\r", 2, True, True), ("\u0085\u00a0", 2, True, True),
    ("abcdefgh", 8, False, False), (" " * 8 + "abcdefgh", 16, False, False), (" " * 16, 16, True, True),
])
def test_attachment_text_lengths_and_white_space(content, chars, empty, blank):
    line = ('{"type":"attachment","uuid":"u","attachment":{"type":"k"},"rendered":[{"content":"%s"}],"isSidechain":false}\n'
            % content).encode()
    (c,) = c_entries([line])
    assert c == py_entry(line, 1)
    e = dict(zip(("cls",) + FIELDS, c))
    assert (e["chars"], e["empty"], e["blank_text"], e["kind"]) == (chars, empty, blank, "message")


# ----------------------------------------------------------- prompts, responses, system lines, checkpoints

WHOLE = [l if l.endswith(b"\n") else l + b"\n" for l in CLAUDE_LINES
         if any(b'"type":"%s"' % t.encode() in l for t in ("user", "assistant", "system", "last-prompt"))]
VALUES = [None, True, False, 0, 1, -1, 7.5, 1e300, 2 ** 53, 2 ** 70, "", " ", "\u3000", "text", "tool_use", "tool_result",
          "thinking", "redacted_thinking", "image", "toolCall", "end_turn", "tool_use", "<synthetic>", "é😀", "[Request interrupted by user]",
          "compact_boundary", [], {}, [1], {"a": 1}, [{"type": "text", "text": "x"}], [{"type": "image"}],
          [{"type": "text", "text": 5}], {"type": "text", "text": ""}, {"type": "tool_use", "id": "t", "name": "Bash",
          "input": {"x": 1.5, "y": [2 ** 60, "é"]}}, {"type": "tool_result", "tool_use_id": "t", "content": 3}]
KEYS = ["content", "type", "text", "thinking", "signature", "input", "arguments", "name", "id", "tool_use_id", "is_error",
        "stop_reason", "model", "usage", "input_tokens", "cache_read_input_tokens", "isSidechain", "isMeta",
        "isCompactSummary", "isApiErrorMessage", "requestId", "sourceToolUseID", "subtype", "leafUuid", "explicit", "message"]


def _containers(v, out):
    if isinstance(v, dict):
        out.append(v)
        for x in v.values():
            _containers(x, out)
    elif isinstance(v, list):
        out.append(v)
        for x in v:
            _containers(x, out)
    return out


def _whole_line(rng: random.Random) -> bytes:
    """A recorded prompt, response, system or checkpoint line with one to three of its values (at any depth) given
    another value or removed, or a key the reading looks at added."""
    obj = orjson.loads(rng.choice(WHOLE))
    for _ in range(rng.randint(1, 3)):
        place = rng.choice(_containers(obj, []))
        value = copy.deepcopy(rng.choice(VALUES))
        if isinstance(place, list):
            if place and rng.random() < 0.8:
                place[rng.randrange(len(place))] = value
            else:
                place.append(value)
        elif place and rng.random() < 0.6:
            key = rng.choice(list(place))
            if rng.random() < 0.2:
                del place[key]
            else:
                place[key] = value
        else:
            place[rng.choice(KEYS)] = value
    return json.dumps(obj, ensure_ascii=rng.random() < 0.3, separators=(",", ":")).encode() + b"\n"


def test_recorded_prompts_and_responses_are_taken_and_read_as_python_reads_them():
    assert len(WHOLE) > 100
    for stats in (True, False):
        taken = 0
        for no, raw in enumerate(WHOLE, 1):
            (c,) = c_entries([raw], no, stats)
            if c is not None:
                taken += 1
                assert c == py_entry(raw, no, stats), raw[:300]
            else:  # what it leaves: compact boundaries, local commands' output, meta prompt lines (the client's notes
                # and hook text: formats.claude.meta_text), and lines with escapes in the fields it reads as bytes
                assert (b'"compact_boundary"' in raw or b'"local_command"' in raw or b'"isMeta":true' in raw
                        or b"\\" in raw), raw[:300]
        assert taken > 0.9 * len(WHOLE)


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": "), (" \t ,\t", "\t:  \r "), ("\r,", " :")])
def test_white_space_between_tokens_is_read_as_python_reads_it(separators):
    """Every recorded line written again with white space of each kind (and runs of it) around commas and colons:
    taken and read as the Python reads it (the walks between tokens look for compact JSON first)."""
    taken = 0
    for no, raw in enumerate(CLAUDE_LINES, 1):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        line = (" \t" if separators[0] != "," else "") + json.dumps(obj, separators=separators, ensure_ascii=False) + "\n"
        (c,) = c_entries([line.encode()], no)
        if c is not None:
            taken += 1
            assert c == py_entry(line.encode(), no), line[:300]
    assert taken > 0.9 * len(CLAUDE_LINES)


@pytest.mark.parametrize("seed", range(4))
def test_prompt_and_response_variants_are_declined_or_read_as_python_reads_them(seed):
    rng = random.Random(500 + seed)
    lines = []
    for _ in range(1500):
        lines.append(_whole_line(rng))
    taken = 0
    for stats in (True, False):
        for no, (raw, c) in enumerate(zip(lines, c_entries(lines, 1, stats)), 1):
            if c is not None:
                taken += 1
                assert c == py_entry(raw, no, stats), raw[:400]
    assert taken > 1500


def test_a_helpers_tuples_and_a_streaming_pass_entries_are_pythons():
    from ctxtool.model import entry_to_tuple
    rng = random.Random(9)
    lines = ATTACHMENTS + WHOLE + [_attachment_line(rng) for _ in range(300)] + [_whole_line(rng) for _ in range(300)]
    tuples: list = []
    meta = scanloop.meta_reader(_scan, FMT, tuples, {}, {}, tuples=True)
    streamed: list = []
    stream = scanloop.meta_reader(_scan, FMT, streamed, None, {})
    compared = 0
    for no, raw in enumerate(lines, 1):
        obj, reason = parse(Line(no, 0, raw, b"\n"))
        if reason is not None or type(obj) is not dict or type(obj.get("type")) is not str or obj["type"] not in FMT.FULL_TYPES:
            continue  # (a metadata line's tuple is another: test_which_metadata_lines_it_takes)
        tuples.clear()
        streamed.clear()
        if not meta.line(raw, no, 1000 + no, None):
            assert not stream.line(raw, no, 1000 + no, None)
            continue
        assert stream.line(raw, no, 1000 + no, None)
        want = scanloop.released_entry(FMT, None, obj, 0, no, 1000 + no, len(raw) - 1, b"\n", True, {})
        assert tuples[0][1:] == entry_to_tuple(want)[1:], raw[:300]  # (a helper's index is its parent's to set)
        streamed[0].index = 0
        assert fields(streamed[0]) == fields(want)
        compared += 1
    assert compared > 700


def _message_line(ty: str, content, **top) -> bytes:
    line = {"parentUuid": "p", "isSidechain": False, "type": ty, "uuid": "u", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": ty, "content": content, **({"id": "m", "model": "claude-x", "stop_reason": "end_turn",
                                                             "usage": {"input_tokens": 3, "output_tokens": 2}}
                                                            if ty == "assistant" else {})}, **top}
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


RESULT = [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}, {"type": "image"}]}]


@pytest.mark.parametrize("line", [
    _message_line("user", [{"type": "thinking", "thinking": "hmm", "signature": ""}]),  # a prompt's thinking: not counted
    _message_line("assistant", [{"type": "thinking", "thinking": "hmm", "signature": ""}]),
    _message_line("assistant", [{"type": "thinking", "thinking": "hmm", "thinkingSignature": "s"}]),
    _message_line("assistant", [{"type": "thinking", "thinking": 0}, {"type": "redacted_thinking", "data": "x"}]),
    _message_line("user", RESULT, sourceToolUseID="t1"),
    _message_line("user", RESULT, sourceToolUseID=7),
    _message_line("user", RESULT + [{"type": "image"}]),  # an image beside a result: 4,800 characters
    _message_line("user", [{"type": "image"}]),  # in a prompt: none
    _message_line("user", "[Request interrupted by user]"),
    _message_line("user", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
    _message_line("assistant", [], isApiErrorMessage=True),
    _message_line("assistant", [{"type": "tool_use", "id": " ", "name": "b@d", "input": {"x": [1.5, 2e-7, 10 ** 21]}}]),
    _message_line("assistant", [{"type": "tool_use", "id": "t", "name": "Bash", "arguments": "{}", "partialJson": "{"}]),
])
def test_prompt_and_response_fields_as_python_reads_them(line):
    for stats in (True, False):
        (c,) = c_entries([line], 1, stats)
        assert c is not None and c == py_entry(line, 1, stats)


def _result(**fields) -> list:
    return [{"type": "tool_result", "tool_use_id": "t1", "content": "hello\nworld", "is_error": False, **fields}]


# a prompt's or results' message is read from its bytes; the shapes the bytes do not tell (a text that is a number, a
# truth of Python's, a key written twice, an escape in a marker or id, thinking or calls) go the dict way
@pytest.mark.parametrize("line", [
    _message_line("user", _result()),
    _message_line("user", _result(big=1e300, huge=10 ** 30)),
    _message_line("user", _result()).replace(b'"is_error": false', b'"is_error": false, "x": 1e999'),
    _message_line("user", _result()).replace(b'"role": "user"', b'"role": "user", "x": -1e400'),
    _message_line("user", _result(is_error=1)),
    _message_line("user", _result(is_error="yes")),
    _message_line("user", _result(is_error=None, tool_use_id=5)),
    _message_line("user", _result(tool_use_id="t\u00e9")),
    _message_line("user", _result(tool_use_id="tX")).replace(b'"tX"', b'"t\\u00e9"'),  # an escaped id
    _message_line("user", _result(content=[{"type": "text", "text": "a\u00e9b"}, {"type": "image", "source": {}}])),
    _message_line("user", _result(content=[{"type": "text", "text": 0}, {"type": "text", "text": None}, 3, "x"])),
    _message_line("user", _result(content=[{"type": "text", "text": "E"}, 7, None, {"type": "T"}]))
    .replace(b'"E"', b'"\\ud83d\\ude00"').replace(b'"T"', b'"t\\u0065xt"'),  # a pair, an escaped type
    _message_line("user", _result(content={"type": "text", "text": "not a list"})),
    _message_line("user", _result()).replace(b'"content": "hello', b'"content": 1, "content": "hello'),
    _message_line("user", "[Request interrupted by user]").replace(b'user]"', b'user\\u005d"'),  # an escaped marker
    _message_line("user", [{"type": "text", "text": "   "}, {"type": "image"}, {"type": 5}, {"text": "x"}, "s", 1]),
    _message_line("user", [{"type": "text", "text": "\u2003\u00a0 "}]),
    _message_line("user", [{"type": "text", "text": "[Request interrupted by user]"}, {"type": "text", "text": "x"}]),
    _message_line("user", [{"type": "image"}] + _result() + [{"type": "image"}]),
    _message_line("user", [{"type": "redacted_thinking", "data": "x"}] + _result()),
    _message_line("user", [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]),
    _message_line("user", []),
    _message_line("user", "x", isSidechain=True, isCompactSummary=True, isMeta=False),
], ids=lambda line: line[line.index(b'"message"'):][:60].decode())
def test_a_prompts_message_read_from_its_bytes_is_pythons(line):
    for stats in (True, False):
        (c,) = c_entries([line], 1, stats)
        assert c is not None and c == py_entry(line, 1, stats)


@pytest.mark.parametrize("line", [
    _message_line("user", None),
    _message_line("user", 5),
    _message_line("user", {"type": "text", "text": "x"}),
    _message_line("user", "x").replace(b', "content": "x"', b""),
    _message_line("user", "x", isCompactSummary=True).replace(b'"message": {"role": "user", "content": "x"}', b'"message": {}'),
    _message_line("user", "x").replace(b'"message": {"role": "user", "content": "x"}', b'"message": 5'),
    _meta_line(type="user", isSidechain=False),  # no message at all
], ids=lambda line: line[line.index(b'"type"'):][:70].decode())
def test_a_prompt_whose_content_is_no_string_or_list_is_left_to_python(line):
    """A prompt line whose content is no string and no list, or whose message is no object: the C part leaves it to the
    Python, which marks it (``UNREADABLE_CONTENT``: as the anchor of a compaction's kept messages, the client keeps
    none of them: claude_chain._fold); and no other prompt line is so marked."""
    for stats in (True, False):
        (c,) = c_entries([line], 1, stats)
        assert c is None
        extra = py_entry(line, 1, stats)[1 + FIELDS.index("extra")]
        assert extra is not None and extra.get("unreadable_content") is True
    for ok in (_message_line("user", "x"), _message_line("user", []), _message_line("user", [{"type": "text", "text": "x"}])):
        extra = py_entry(ok, 1, True)[1 + FIELDS.index("extra")]
        assert not (extra or {}).get("unreadable_content")


def _call(**fields) -> list:
    return [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}, **fields}]


def _with(line: bytes, old: str, new: str) -> bytes:
    assert old.encode() in line, (old, line)
    return line.replace(old.encode(), new.encode(), 1)


# a response's message is read from its bytes too; its call's characters are JSON.stringify's length of the arguments
# counted from the bytes, and the shapes the bytes do not tell (a float or a big integer in the arguments, a key written
# twice or escaped, a lone surrogate, a call with a problem, a tool result) go the dict way
@pytest.mark.parametrize("line", [
    _message_line("assistant", [{"type": "text", "text": "hi"}] + _call()),
    _message_line("assistant", _call(input={"a": [1, -2, 0, True, False, None, {}, []], "b": {"c": {"d": "e"}}})),
    _message_line("assistant", _call(input={"s": "a\n\t\b\f\r\"\\/\u0001\u001f\u007f\u2028\u00e9\U0001f600"})),
    _with(_message_line("assistant", _call(input={"s": "X"})), '"X"', '"\\u0041\\u00e9\\ud83d\\ude00\\/\\u0022\\u005c\\u000b\\u0008"'),
    _with(_message_line("assistant", _call(input={"s": "X"})), '"X"', '"\\ud800"'),  # a lone surrogate
    _with(_message_line("assistant", _call(input={"s": "X"})), '{"s": "X"}', '{"s": 1, "s": 2}'),  # a key twice
    _with(_message_line("assistant", _call(input={"s": "X"})), '{"s": "X"}', '{"\\u0073": 1, "s": 2}'),  # escaped
    _with(_message_line("assistant", _call(input={"s": "X"})), '"X"', '-0'),
    _message_line("assistant", _call(input={"n": 1.5, "m": 1.0, "e": 1e21, "big": 10 ** 20, "int": 10 ** 18 - 1})),
    _message_line("assistant", _call(input={"big": 10 ** 20})),  # (read as a float, written as JavaScript writes it)
    _message_line("assistant", _call(input={"e21": 10 ** 21, "e23": 123456789012345678901234})),
    _message_line("assistant", _call(input={"u64": 2 ** 64 - 1, "i64": -(2 ** 63), "d18": -(10 ** 18 - 1)})),
    _message_line("assistant", _call(input={f"k{i}": i for i in range(40)})),
    _message_line("assistant", _call(input=json.loads("[" * 70 + "]" * 70))),
    _message_line("assistant", _call(input="raw \u00e9 text")),
    _message_line("assistant", _call(input=5)),
    _message_line("assistant", _call(input=None, arguments={"x": 1})),
    _message_line("assistant", [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}]),
    _message_line("assistant", [{"type": "function_call", "id": "c1", "name": "read", "arguments": "{}"}]),
    _message_line("assistant", _call(partialJson=None)),
    _message_line("assistant", _call(partialJson="{")),
    _message_line("assistant", _call(id="")),
    _message_line("assistant", _call(id=" x")),
    _message_line("assistant", _call(id="t\u00e9")),
    _message_line("assistant", _call(id=5)),
    _message_line("assistant", _call(name="bad name")),
    _message_line("assistant", _call(name="x" * 64)),
    _message_line("assistant", _call(name="x" * 65)),
    _message_line("assistant", _call() + _call(id="toolu_2", input={"é": "ü \U0001f600"})),
    _message_line("assistant", [{"type": "thinking", "thinking": "hmm", "signature": "sig"}, {"type": "text", "text": " "}]),
    _message_line("assistant", [{"type": "thinking", "thinking": None, "signature": 0}]),
    _message_line("assistant", [{"type": "thinking", "thinking": "x", "signature": {}}]),
    _message_line("assistant", [{"type": "redacted_thinking", "data": "x"}, {"type": "image"}, {"type": 5}, {"text": "x"}, "s", 1]),
    _with(_message_line("assistant", [{"type": "T"}]), '"T"', '"t\\u0065xt"'),  # an escaped type
    _message_line("assistant", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
    _message_line("assistant", []),
    _message_line("assistant", None),
    _message_line("assistant", "plain text"),
    _message_line("assistant", "   "),
    _with(_message_line("assistant", "x"), '"stop_reason": "end_turn"', '"stop_reason": null'),
    _with(_message_line("assistant", "x"), '"stop_reason": "end_turn"', '"stop_reason": "tool_use"'),
    _with(_message_line("assistant", "x"), '"stop_reason": "end_turn"', '"stop_reason": "end\\u005fturn"'),
    _with(_message_line("assistant", "x"), '"stop_reason": "end_turn", ', ''),
    _with(_message_line("assistant", "x"), '"model": "claude-x"', '"model": "<synthetic>"'),
    _with(_message_line("assistant", "x", isApiErrorMessage=True), '"model": "claude-x"', '"model": "<synthetic>"'),
    _with(_message_line("assistant", "x"), '"id": "m", ', ''),
    _message_line("assistant", "x", requestId="req_1"),
    _with(_message_line("assistant", "x"), '"input_tokens": 3', '"input_tokens": 3.5'),
    _with(_message_line("assistant", "x"), '"input_tokens": 3', '"input_tokens": "3"'),
    _with(_message_line("assistant", "x"), '"input_tokens": 3', '"input_tokens": true'),
    _with(_message_line("assistant", "x"), '"input_tokens": 3', '"input_tokens": 1e999'),
    _with(_message_line("assistant", "x"), '"input_tokens": 3', '"input_tokens": 3, "cache_read_input_tokens": 7, '
          '"cache_creation_input_tokens": 11, "cache_creation": {"ephemeral_5m_input_tokens": 11}'),
    _with(_message_line("assistant", "x"), '{"input_tokens": 3, "output_tokens": 2}', 'null'),
    _with(_message_line("assistant", "x"), '{"input_tokens": 3, "output_tokens": 2}', '[1]'),
    _with(_message_line("assistant", "x"), '"content": "x"', '"content": "x", "content": "y"'),
], ids=lambda line: line[line.index(b'"message"'):][:70].decode(errors="replace"))
def test_a_responses_message_read_from_its_bytes_is_pythons(line):
    for stats in (True, False):
        (c,) = c_entries([line], 1, stats)
        assert c is None or c == py_entry(line, 1, stats)  # (declined: the Python reads the line)


def test_the_common_responses_are_taken():
    lines = [_message_line("assistant", [{"type": "text", "text": "hi"}] + _call()),
             _message_line("assistant", [{"type": "thinking", "thinking": "x", "signature": "s"}] + _call(input={"n": 1.5})),
             _message_line("assistant", _call(input={"s": "é \U0001f600 \n"}) + _call(id="toolu_2", input=[])),
             _message_line("assistant", [{"type": "text", "text": "x"}], requestId="req_1")]
    got = c_entries(lines)
    assert None not in got and got == [py_entry(line, k) for k, line in enumerate(lines, 1)]


def test_what_a_prompt_or_response_line_it_declines_holds():
    for line in (_message_line("user", RESULT, sourceToolUseID="t\\u0031"),  # an escape in a field read as bytes
                 _message_line("user", "x", isMeta=1),  # a truth of Python's
                 _message_line("assistant", [{"type": "thinking", "thinking": 5}]),  # str() of a number
                 _message_line("user", _result(content=[{"type": "text", "text": 5}])),  # so in a result
                 _message_line("user", _result(content=[{"type": "text", "text": "L"}])).replace(b'"L"', b'"\\ud800"'),
                 _message_line("assistant", [{"type": "text", "text": "x"}]).replace(b'"input_tokens": 3', b'"input_tokens": -3'),  # noted absurd
                 # a response whose content is no list (the client writes one): the Python tells white space as
                 # JavaScript trims it (SILENT_RESPONSE)
                 _message_line("assistant", "x"), _message_line("assistant", " "), _message_line("assistant", "\ufeff"),
                 _message_line("assistant", None), _message_line("assistant", {"a": 1})):
        assert c_entries([line]) == [None], line


def test_a_responses_request_id_is_not_read():
    """A response is keyed by its message.id alone (the client merges its lines whatever their requestId): an escape,
    or a value of another type, in the requestId is no reason to leave the line to the Python."""
    for rid in ("r\\u0031", 7, None, [1]):
        line = _message_line("assistant", [], requestId=rid)
        (c,) = c_entries([line])
        assert c is not None and c == py_entry(line, 1)


def test_the_message_lines_can_be_left_to_python(monkeypatch):
    line = _message_line("assistant", [{"type": "text", "text": "hi"}])
    assert c_entries([line]) != [None]
    monkeypatch.setenv(scanloop.ENV_NATIVE_MESSAGES, "0")  # (for A/B measures: the metadata lines only)
    assert c_entries([line]) == [None]
    assert c_entries([_meta_line()]) != [None]


def test_the_lines_read_to_tell_the_format_are_taken_too(tmp_path, monkeypatch):
    """The first lines of a Claude Code file (read whole to tell its format) go into the index through the C part as
    the rest of the file does: normalize reads only those it declines, and the index is the Python's."""
    from tests.support.native_reads import count_normalized, index_digest

    lines = [l for p in sorted(glob.glob(os.path.join(ROOT, "fixtures", "claude-recorded", "*.jsonl")))
             for l in open(p, "rb") if l.strip()]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:120]))
    seen = count_normalized(monkeypatch)
    got = index_digest(path)
    first = [n for n in seen if n <= formats.SNIFF_LINES]
    assert len(first) < formats.SNIFF_LINES // 5, first  # (the compact boundaries and lines with escapes)
    seen.clear()
    monkeypatch.setenv("CTXTOOL_NATIVE", "0")
    assert index_digest(path) == got
    assert len([n for n in seen if n <= formats.SNIFF_LINES]) == formats.SNIFF_LINES


def test_the_reader_reads_the_raw_file_where_it_can_seek(tmp_path):
    # the C reader reads a file's rest from the raw file (each byte copied once, not through the buffered file's
    # buffer too); a pipe cannot seek: it reads through the buffered file, from where that one is
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 3)
    with open(path, "rb") as f:
        next(f)
        raw = scanloop._unbuffered(f, 9)
        assert raw is f.raw and raw.tell() == 9
        assert [c for c in _scan.Reader(raw, 9, None)] == [b'{"a": 1}\n'] * 2
    r, w = os.pipe()
    os.write(w, b'{"a": 1}\n' * 3)
    os.close(w)
    with open(r, "rb") as f:
        next(f)
        assert scanloop._unbuffered(f, 9) is f
        assert [c for c in _scan.Reader(f, 9, None)] == [b'{"a": 1}\n'] * 2


def test_strings_met_lately_are_the_tables_own_and_the_right_ones():
    # the C part finds a string it met lately by its bytes (a slot per hash of its length, first and last eight
    # bytes): parents that differ only in the middle, or only in length, or only past ASCII, must each get the table's
    # object of their own value; a type and parent seen before, the very object the table holds
    parents = ["aaaaaaaa-0000-bbbbbbbb", "aaaaaaaa-1111-bbbbbbbb", "aaaaaaaa-bbbbbbbb", "aaaaaaaa-0000-bbbbbbbb",
               "aaaaaaaa-é000-bbbbbbbb", "aaaaaaaa-e000-bbbbbbbb", "", "p", "p", "x" * 200, "x" * 200, "q" * 128]
    lines = [_meta_line(uuid=f"u{i}", parentUuid=p) for i, p in enumerate(parents)]
    into: list = []
    shared: dict = {}
    r = _scan.Reader(io.BytesIO(b"".join(lines)), 0, None)
    r.meta = scanloop.meta_reader(_scan, FMT, into, shared, {})
    assert list(r) == []
    assert [e.parent for e in into] == parents
    for e in into:
        assert e.parent is shared[e.parent] and e.type is shared["progress"]


@pytest.mark.parametrize("seed", range(4))
def test_peek_scores_the_first_lines_and_gives_them_out_after(seed):
    """``Reader.peek``: the sniff's scores of the next lines (at most n), as ``sniff`` scores each, up to and with the
    first it is not sure of (None, the last), or one with no newline; the lines are then still given out, as the
    Python loop reads them, whatever the buffer's size (a line longer than it grows it)."""
    rng = random.Random(seed)
    objects = [b'{"type":"progress","uuid":"u%d","parentUuid":null}' % k for k in range(80)]
    lines = [rng.choice(objects) + b" " * rng.choice([0, 5000, 9000]) + rng.choice([b"\n", b"\r\n"]) for _ in range(60)]
    if seed % 2:
        lines[rng.randrange(60)] = b"[1]\n"  # not an object: not sure
    data = b"".join(lines) + rng.choice([b"", b'{"type":"progress"'])
    for n in (1, 20, 50, 100):
        for size in (4096, 1 << 20):
            f = io.BytesIO(data)
            r = _scan.Reader(f, 0, None, size)
            got = r.peek(n, formats.SNIFF_TYPES, formats.SNIFF_ROLES)
            want = []
            for no, offset, line in py_lines(data, 0, None)[:n]:
                s = _scan.sniff(line, formats.SNIFF_TYPES, formats.SNIFF_ROLES) if line.endswith(b"\n") else None
                want.append(s)
                if s is None:
                    break
            assert got == want, (n, size)
            assert [(r.no, r.start, chunk) for chunk in r] == py_lines(data, 0, None)


def test_nontext_counts_the_bytes_the_binary_check_counts():
    """``_scan.nontext`` (transcript._check_binary's count, in C) against the Python's ``translate`` on every byte
    value and on random heads."""
    from ctxtool.transcript import _NONTEXT

    rng = random.Random(5)
    heads = [b"", b"{}\n", bytes(range(256)), b"\x7f\x00\t\n\r\x0b\x0c\x0e\x1f "]
    heads += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9000))) for _ in range(20)]
    for h in heads:
        assert _scan.nontext(h) == len(h) - len(h.translate(None, _NONTEXT))
    assert _scan.nontext(bytes(range(256))) == 9 + 18 + 1


# ------------------------------------------------------------- isSidechain: the key a lost parent is bridged by

_SIDE_LINES = [_message_line("user", "x"), _message_line("assistant", [{"type": "text", "text": "hi"}]),
               _meta_line(type="system", subtype="informational", isSidechain=False),
               b'{"type":"attachment","uuid":"u","attachment":{"type":"k"},"rendered":[{"content":"x"}],"isSidechain":false}\n',
               b'{"type":"attachment","uuid":"u","attachment":{"type":"k"},"isSidechain":false}\n']  # not rendered


@pytest.mark.parametrize("k", range(len(_SIDE_LINES)))
@pytest.mark.parametrize("raw", [b"true", b"null", None, b'""', b'"x"', b"0", b"1", b"{}", b"[]"],
                         ids=lambda r: "left out" if r is None else r.decode())
def test_a_row_whose_side_is_no_boolean_is_left_to_python(k, raw):
    """``isSidechain`` true is the C part's on every row (a subagent's message, or ``side`` on a row that is no message,
    as the Python keys it); null, a value of another type, or none are the Python's (formats.claude.side_key)."""
    line = _SIDE_LINES[k]
    assert b'"isSidechain": false' in line or b'"isSidechain":false' in line
    other = line.replace(b'"isSidechain": false, ', b"").replace(b', "isSidechain": false', b"").replace(
        b',"isSidechain":false', b"") if raw is None else \
        line.replace(b'"isSidechain": false', b'"isSidechain": ' + raw).replace(b'"isSidechain":false', b'"isSidechain":' + raw)
    assert other != line
    for stats in (True, False):
        (c,) = c_entries([line], 1, stats)
        assert c is not None and c == py_entry(line, 1, stats)  # false: the C part's
        (c,) = c_entries([other], 1, stats)
        if raw == b"true":
            assert c is not None and c == py_entry(other, 1, stats)
        else:
            assert c is None


def test_side_keys_are_javascript_map_keys():
    from ctxtool.formats.claude import _ABSENT, side_key

    same = [(None, None), ("", ""), (0, -0.0), (0, 0.0), (1, 1.0), (2 ** 70, float(2 ** 70)), (10 ** 400, 10 ** 401),
            (True, True), (_ABSENT, _ABSENT)]
    for a, b in same:
        assert side_key(a, 1) == side_key(b, 2), (a, b)
    differ = [(None, _ABSENT), (True, 1), (False, 0), ("", 0), ("0", 0), ("1", True), ({}, {}), ([], []), (None, False),
              ("absent", _ABSENT)]
    for a, b in differ:
        assert side_key(a, 1) != side_key(b, 2), (a, b)
    assert side_key({}, 7) == side_key([], 7)  # (one line holds one value: its offset is its own)


@pytest.mark.parametrize("mid", ['""', "0", "null", "false", None, "0.0", '"m"', "1", "[]", "{}"],
                         ids=lambda m: "left out" if m is None else m)
def test_a_response_whose_message_id_is_falsy_is_left_to_python(mid):
    """A response's ``message.id`` that JavaScript reads as false is marked by the Python (``FALSY_MESSAGE_ID``:
    claude_chain.sent_entries leaves such a line of calls out); the C part leaves the line to it and takes the rest."""
    from ctxtool.model import FALSY_MESSAGE_ID

    line = _message_line("assistant", _call())
    line = line.replace(b'"id": "m", ', b"") if mid is None else line.replace(b'"id": "m"', b'"id": ' + mid.encode())
    falsy = mid in ('""', "0", "null", "false", None, "0.0")
    for stats in (True, False):
        (c,) = c_entries([line], 1, stats)
        assert (c is None) == falsy
        if c is not None:
            assert c == py_entry(line, 1, stats)
    e = dict(zip(("cls",) + FIELDS, py_entry(line, 1)))
    assert bool((e["extra"] or {}).get(FALSY_MESSAGE_ID)) == falsy
