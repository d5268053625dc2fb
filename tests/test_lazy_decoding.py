"""Selective decoding (``scanloop``: msgspec builds only the fields ``normalize`` reads, and a
progress/snapshot/queue/api-request line becomes its entry from type, uuid, parent and timestamp)
gives exactly the index of whole-line decoding with orjson: on every fixture, on real-shape data,
and on damaged lines, which must be refused (or accepted) by both alike. ``normalize`` reads no
field that ``READS`` leaves out."""

from __future__ import annotations

import glob
import json
import os
import random

import pytest

from ctxtool import formats, scanloop
from ctxtool.formats import claude
from ctxtool.transcript import scan
from tests.bench import realshape
from tests.test_parallel_scan import index_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.jsonl"), recursive=True))

msgspec = pytest.importorskip("msgspec", reason="selective decoding needs msgspec (optional); orjson alone is the reference")


def both(path, monkeypatch, mode="1", native="1", **kw):
    """The reference index (every line whole, by orjson, in Python: no C part) and the one ``mode`` makes,
    with the C part (``native``) or without."""
    monkeypatch.setenv(scanloop.ENV_LAZY, "0")
    monkeypatch.setenv(scanloop.ENV_NATIVE, "0")
    full = scan(path, workers=1, **kw)
    monkeypatch.setenv(scanloop.ENV_LAZY, mode)
    monkeypatch.setenv(scanloop.ENV_NATIVE, native)
    lazy = scan(path, workers=1, **kw)
    return index_of(full), index_of(lazy)


NATIVE = ["1", "0"]  # CTXTOOL_NATIVE: the C part where built, or Python alone


@pytest.fixture(params=NATIVE, ids=["native", "python"])
def native(request):
    if request.param == "1" and scanloop.native() is None:
        pytest.skip("ctxtool._scan is not built here")
    return request.param


def _msgspec_spy(monkeypatch) -> list:
    """The sizes of the lines msgspec decodes from now on, in order."""
    chosen: list = []
    real = scanloop.msgspec_parts

    def spy(fmt):
        decode, to_dict, refused = real(fmt)
        return (lambda b: chosen.append(len(b)) or decode(b)), to_dict, refused
    monkeypatch.setattr(scanloop, "msgspec_parts", spy)
    return chosen


MODES = ["1", "msgspec", "orjson"]  # adaptive (the default), msgspec throughout, orjson throughout


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_fixture_indexes_the_same(path, monkeypatch, native):
    for mode in MODES:
        try:
            full, lazy = both(path, monkeypatch, mode, native)
        except Exception as e:  # a fixture no scan accepts: refused alike
            monkeypatch.setenv(scanloop.ENV_LAZY, mode)
            with pytest.raises(type(e)):
                scan(path, workers=1)
            continue
        assert lazy == full, mode
        full, lazy = both(path, monkeypatch, mode, native, stats=False)
        assert lazy == full, mode


@pytest.mark.parametrize("mode", MODES)
def test_real_shape_data_indexes_the_same_and_really_skips(tmp_path, monkeypatch, mode, native):
    path = str(tmp_path / "rs.jsonl")
    realshape.write_file(path, 2_000_000, seed=5)  # large enough that format detection's first lines are few
    full, lazy = both(path, monkeypatch, mode, native)
    assert lazy == full
    seen = []
    real = scanloop.small_entry
    monkeypatch.setattr(scanloop, "small_entry", lambda *a: seen.append(a[6]) or real(*a))
    readers = []
    real_reader = scanloop.meta_reader
    monkeypatch.setattr(scanloop, "meta_reader", lambda *a, **kw: readers.append(real_reader(*a, **kw)) or readers[-1])
    attachments = []
    real_attachment = claude._attachment
    monkeypatch.setattr(claude, "_attachment", lambda *a: attachments.append(1) or real_attachment(*a))
    t = scan(path, workers=1)
    progress = sum(1 for e in t.entries if e.type == "progress")
    assert progress > 0.6 * len(full["entries"])
    attached = sum(1 for e in t.entries if e.type == "attachment")
    assert attached > 50
    if native == "1":  # the C part took the progress and attachment lines (and made their entries), Python none of them
        assert readers and seen.count("progress") == 0
        assert sum(1 for _ in open(path, "rb")) - len(seen) > progress
        assert len(attachments) < 10  # (those of the first lines, read before the format is known)
    else:  # the progress lines took the short way in Python
        assert not readers and seen.count("progress") > 0.6 * len(full["entries"])
        assert len(attachments) == attached


def test_adaptive_mode_switches_decoders_and_indexes_the_same(tmp_path, monkeypatch):
    """Content-heavy stretches (lines read whole: orjson is cheaper) then progress-heavy ones
    (msgspec skips them): the adaptive scan changes decoder at window ends, and the index is the
    same as whole-line decoding's."""
    recorded = os.path.join(ROOT, "fixtures", "claude-recorded", "parallel.jsonl")
    heavy = [l for l in open(recorded, "rb") if b'"type":"assistant"' in l or b'"type":"user"' in l]
    path = str(tmp_path / "mix.jsonl")
    realshape.write_file(path, 400_000, seed=3)
    with open(path, "ab") as f:
        f.write(b"".join(heavy * 6))
    realshape.write_file(str(tmp_path / "more.jsonl"), 400_000, seed=4)
    with open(path, "ab") as f, open(tmp_path / "more.jsonl", "rb") as g:
        f.write(g.read())
    monkeypatch.setattr(scanloop, "WINDOW", 16)
    chosen = _msgspec_spy(monkeypatch)
    monkeypatch.setenv(scanloop.ENV_NATIVE, "0")  # (the C part would take the progress lines msgspec is chosen for)
    full, lazy = both(path, monkeypatch, "1", native="0")
    assert lazy == full
    lines = sum(1 for _ in open(path, "rb"))
    assert len(heavy) * 6 > 16 * 4
    assert 0 < len(chosen) < lines - 16 * 4  # msgspec for some windows, orjson for several others


def _mutations(lines: list[bytes], rng: random.Random, n: int) -> list[bytes]:
    """Damaged copies of real lines: flipped, inserted and deleted bytes, invalid UTF-8, cut lines."""
    specials = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\t", b"\\", b"\"", b"{", b"}", b"[", b",", b":", b"NaN",
                b"\\ud800", b"\\u12", b"1e999", b"-", b"\x7f", b"\xc2\xa0", b" ", b"01", b"\"type\":\"user\","]
    out = []
    for _ in range(n):
        line = bytearray(rng.choice(lines).rstrip(b"\n"))
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(line) + 1)
            r = rng.random()
            if r < 0.5:
                line[k:k] = rng.choice(specials)
            elif r < 0.8 and k < len(line):
                del line[k:k + rng.randint(1, 8)]
            else:
                line[k:k + 1] = bytes([rng.randrange(256)])
        out.append(bytes(line).replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")
    return out


@pytest.mark.parametrize("mode", MODES)
def test_damaged_lines_are_refused_or_read_alike(tmp_path, monkeypatch, mode, native):
    source = [l for p in FIXTURES if "claude" in p for l in open(p, "rb") if l.strip()]
    rng = random.Random(13)
    head = [l for l in open(os.path.join(ROOT, "fixtures", "claude-shapes", "split_parallel.jsonl"), "rb")]
    for batch in range(4):
        path = tmp_path / f"m{batch}.jsonl"
        path.write_bytes(b"".join(head + _mutations(source, rng, 600)))
        full, lazy = both(str(path), monkeypatch, mode, native)
        assert lazy == full, f"batch {batch}"
        assert full["bad"]  # the damage was real


class Recorder(dict):
    """A line that notes which of its keys ``normalize`` reads."""

    def __init__(self, data, log, where):
        super().__init__(data)
        self.log, self.where = log, where

    def get(self, key, default=None):
        self.log.add((self.where, key))
        return super().get(key, default)

    def __getitem__(self, key):
        self.log.add((self.where, key))
        return super().__getitem__(key)

    def __contains__(self, key):
        self.log.add((self.where, key))
        return super().__contains__(key)


def test_normalize_reads_only_the_declared_fields():
    log: set = set()
    for p in FIXTURES:
        for raw in open(p, "rb"):
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):  # a fuzz-made fixture nests 1,000 deep
                continue
            if not isinstance(obj, dict) or "claude" not in p:
                continue
            top = Recorder(obj, log, "top")
            if isinstance(obj.get("attachment"), dict):
                top["attachment"] = Recorder(obj["attachment"], log, "attachment")
            e = scanloop.make_entry(claude, top, 0, 1, 0, 0, b"\n")
            assert e is not None
    top_keys = {k for w, k in log if w == "top"}
    assert top_keys <= set(claude.READS), top_keys - set(claude.READS)
    assert {k for w, k in log if w == "attachment"} <= set(claude.NESTED["attachment"])
    skipped_types = {json.loads(l).get("type") for p in FIXTURES
                     if os.path.basename(os.path.dirname(p)).startswith("claude-") for l in open(p, "rb") if l.strip()}
    assert {"progress", "queue-operation", "file-history-snapshot", "api-request"} <= skipped_types - claude.FULL_TYPES


def test_without_msgspec_metadata_lines_still_take_the_short_way(tmp_path, monkeypatch):
    monkeypatch.setenv(scanloop.ENV_NATIVE, "0")  # Python's short way (the C part needs no msgspec either)
    monkeypatch.setattr(scanloop, "_DECODERS", {})
    monkeypatch.setitem(__import__("sys").modules, "msgspec", None)
    assert scanloop.msgspec_parts(formats.get("claude")) is None
    assert scanloop.decoder(formats.get("claude"))[0] == "1"
    assert scanloop.decoder(formats.get("pi")) is None  # pi declares nothing
    path = str(tmp_path / "rs.jsonl")
    realshape.write_file(path, 2_000_000, seed=5)
    monkeypatch.setattr(scanloop, "WINDOW", 16)  # a choice is made, and finds no msgspec
    full, lazy = both(path, monkeypatch, "1", native="0")
    assert lazy == full
    seen = []
    real = scanloop.small_entry
    monkeypatch.setattr(scanloop, "small_entry", lambda *a: seen.append(a[6]) or real(*a))
    scan(path, workers=1)
    assert seen.count("progress") > 0.6 * len(full["entries"])


def test_streaming_consumers_see_the_same_entries(tmp_path, monkeypatch):
    """profile streams (on_entry, no index) with selective decoding: the same profile either way."""
    from ctxtool.profile import profile_session

    path = str(tmp_path / "rs.jsonl")
    realshape.write_file(path, 300_000, seed=9)
    for p in [path] + [f for f in FIXTURES if os.path.basename(os.path.dirname(f)) == "claude-recorded"]:
        monkeypatch.setenv(scanloop.ENV_LAZY, "0")
        full = profile_session(p)
        monkeypatch.setenv(scanloop.ENV_LAZY, "1")
        assert profile_session(p) == full, p


@pytest.mark.parametrize("split", [False, True], ids=["serial", "split"])
def test_a_streaming_pass_sees_the_entries_of_the_reference_in_file_order(tmp_path, monkeypatch, native, split):
    """A streaming pass (``on_entry``, no index: profile) gets every entry, the C part's among them,
    numbered and in file order as the reference scan (every line whole, Python only) gives them."""
    from ctxtool.model import entry_to_tuple as entry_fields

    path = str(tmp_path / "rs.jsonl")
    realshape.write_file(path, 1_500_000, seed=11)
    kw = dict(keep_index=False, blocks=False, lazy=True, workers=2 if split else 1, split_min_bytes=100_000 if split else None)

    def seen():
        out = []
        scan(path, on_entry=lambda e: out.append(entry_fields(e)), **kw)
        return out
    monkeypatch.setenv(scanloop.ENV_LAZY, "0")
    monkeypatch.setenv(scanloop.ENV_NATIVE, "0")
    want = seen()
    monkeypatch.setenv(scanloop.ENV_LAZY, "1")
    monkeypatch.setenv(scanloop.ENV_NATIVE, native)
    assert seen() == want
    assert [f[0] for f in want] == list(range(len(want)))  # (index first: numbered in order)


def test_a_short_session_switches_to_msgspec_after_its_first_lines(tmp_path, monkeypatch):
    """Most sessions in a folder have fewer lines than a window: the first choice comes after
    FIRST_WINDOW lines, so a short real-shape file (progress lines carry its bytes) is not read
    whole by orjson to its end; and its index is whole-line decoding's."""
    path = str(tmp_path / "short.jsonl")
    realshape.write_file(path, 600_000, seed=5)
    lines = sum(1 for _ in open(path, "rb"))
    assert scanloop.FIRST_WINDOW * 4 < lines < scanloop.WINDOW  # shorter than one window
    chosen = _msgspec_spy(monkeypatch)
    full, lazy = both(path, monkeypatch, "1", native="0")  # (with the C part, msgspec sees no progress line)
    assert lazy == full
    assert len(chosen) > lines - formats.SNIFF_LINES - scanloop.FIRST_WINDOW - 1  # every line after the first choice


def _odd_lines() -> list[bytes]:
    """Lines whose values the two decoders read differently unless the scan evens them out: nesting
    msgspec refuses (it stops at ~1,000 levels, orjson at ~1,024), nesting both refuse (read on a stack of its own), and integers
    beyond 64 bits (orjson reads them as floats, msgspec whole) in a tool call's input and a text block."""
    def line(obj, raw=None):
        data = json.dumps(obj)
        return (data.replace('"@DEEP@"', raw) if raw else data).encode() + b"\n"

    base = {"sessionId": "s", "timestamp": "2025-01-01T00:00:01.000Z", "isSidechain": False}
    deep = "[" * 1000 + "]" * 1000
    deeper = "[" * 1100 + "]" * 1100
    big = 10 ** 40
    return [
        line({**base, "type": "progress", "uuid": "d1", "parentUuid": "u0", "data": "@DEEP@"}, deep),
        line({**base, "type": "progress", "uuid": "d2", "parentUuid": "u0", "data": "@DEEP@"}, deeper),
        line({**base, "type": "assistant", "uuid": "a1", "parentUuid": "u0", "message": {
            "id": "m1", "role": "assistant", "model": "claude-sonnet-4", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": big}, {"type": "tool_use", "id": "t1", "name": "Calc",
                                                       "input": {"n": big, "m": -big, "k": [big, 2 ** 64, 2 ** 64 - 1]}}],
            "usage": {"input_tokens": big, "output_tokens": 5}}}),
        line({**base, "type": "user", "uuid": "u2", "parentUuid": "a1", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": -big}]}]}}),
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("at", ["start", "late"])
def test_deep_nesting_and_integers_beyond_64_bits_index_the_same(tmp_path, monkeypatch, mode, at, native):
    """A line msgspec refuses for its depth goes the whole way (it was an internal error: msgspec's
    RecursionError), and an integer beyond 64 bits reads the same through either decoder: the call's
    characters, the text, the absurd usage note. ``late``: after the decoder's first choice, where a
    short session now reaches msgspec."""
    path = tmp_path / "odd.jsonl"
    realshape.write_file(str(path), 300_000, seed=6)
    lines = open(path, "rb").readlines()
    k = 1 if at == "start" else min(len(lines) - 1, formats.SNIFF_LINES + scanloop.FIRST_WINDOW + 20)
    path.write_bytes(b"".join(lines[:k] + _odd_lines() + lines[k:]))
    full, lazy = both(str(path), monkeypatch, mode, native)
    assert lazy == full
    full, lazy = both(str(path), monkeypatch, mode, native, stats=False)
    assert lazy == full
    monkeypatch.setenv(scanloop.ENV_LAZY, mode)
    t = scan(str(path), workers=1)
    # nested past what both decoders read: read again with a stack of its own, as JSON.parse reads it (test_deep_lines)
    assert t.bad == [] and any(e.id == "d2" and e.type == "progress" for e in t.entries)
    a1 = next(e for e in t.entries if e.id == "a1")
    assert a1.calls[0].chars == len("Calc") + len('{"n":1e+40,"m":-1e+40,"k":[1e+40,18446744073709552000,18446744073709551615]}')


def test_a_later_part_of_a_split_scan_chooses_its_decoder_from_its_own_lines(tmp_path, monkeypatch):
    """A helper's part starts mid-file: its first window is measured from the part's start (it was
    measured from the file's start, so the first choice always fell to orjson)."""
    from ctxtool import parallel

    path = str(tmp_path / "rs.jsonl")
    realshape.write_file(path, 1_500_000, seed=7)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(size // 2)
        f.readline()
        begin = f.tell()
    chosen = _msgspec_spy(monkeypatch)
    monkeypatch.setenv(scanloop.ENV_LAZY, "1")
    monkeypatch.setenv(scanloop.ENV_NATIVE, "0")  # Python's choice (the C part takes the progress lines msgspec would see)
    out, bad, lines, *_ = parallel.scan_part(path, "claude", begin, size)
    assert lines > scanloop.FIRST_WINDOW * 4
    assert len(chosen) == lines - scanloop.FIRST_WINDOW + 1  # every line from the first choice on


def test_a_pass_that_reads_objects_gets_every_message_lines_object(tmp_path):
    """The C part makes entries without objects: a pass that keeps them (``keep``) or reads blocks is not handed any."""
    recorded = [l for l in open(os.path.join(ROOT, "fixtures", "claude-recorded", "parallel.jsonl"), "rb")]
    path = str(tmp_path / "long.jsonl")
    with open(path, "wb") as f:  # long enough that the C part's reader takes over after the format is known
        f.write(b"".join(recorded * 8))
    for kw in ({"keep": True}, {"blocks": True}):
        seen = []  # what on_entry was handed (the scan lets the object go after it, unless kept)
        scan(path, lazy=True, keep_index=False, on_entry=lambda e: seen.append((e.kind, e.obj, e.blocks)), **kw)
        messages = [(obj, blocks) for kind, obj, blocks in seen if kind == "message"]
        assert len(messages) > 20 and all(obj is not None for obj, _ in messages), kw
        if "blocks" in kw:
            assert all(blocks is not None for _, blocks in messages)


def test_a_format_told_ahead_indexes_every_fixture_as_the_lines_read_first_do(monkeypatch):
    """The C part's reader tells most files' format from its sniff of their first lines (``_told_ahead``) and then
    takes every line, those first ones too; the index is the one the Python loop makes when it reads those lines
    first (sniffed, parsed where needed, then handed on), on every fixture, streaming passes too."""
    if scanloop.native() is None:
        pytest.skip("ctxtool._scan is not built here")
    real = scanloop._told_ahead
    told = []
    monkeypatch.setattr(scanloop, "_told_ahead", lambda *a: told.append(real(*a)) or told[-1])
    ahead = 0
    for path in FIXTURES:
        for kw in ({}, {"stats": False}):
            told.clear()
            try:
                got = index_of(scan(path, workers=1, **kw))
            except Exception as e:
                monkeypatch.setattr(scanloop, "_told_ahead", lambda *a: None)
                with pytest.raises(type(e)):
                    scan(path, workers=1, **kw)
                monkeypatch.setattr(scanloop, "_told_ahead", lambda *a: told.append(real(*a)) or told[-1])
                continue
            ahead += any(x is not None for x in told)
            monkeypatch.setattr(scanloop, "_told_ahead", lambda *a: None)
            assert index_of(scan(path, workers=1, **kw)) == got, path
            seen_ahead, seen_first = [], []
            scan(path, workers=1, on_entry=lambda e: seen_first.append((e.lineno, e.kind, e.type, e.id)), keep_index=False)
            monkeypatch.setattr(scanloop, "_told_ahead", lambda *a: told.append(real(*a)) or told[-1])
            scan(path, workers=1, on_entry=lambda e: seen_ahead.append((e.lineno, e.kind, e.type, e.id)), keep_index=False)
            assert seen_ahead == seen_first, path
    assert ahead > len(FIXTURES), (ahead, len(FIXTURES))  # (most fixtures, both ways)
