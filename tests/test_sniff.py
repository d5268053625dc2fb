"""The C part's sniff (``_scan.sniff``, ``ctxtool/_scan_sniff.c``) against the formats' own (``formats.line_scores``):
the same four scores for every line it takes, from every fixture and from random lines written to catch it out
(keys written twice, escapes, other types, nesting, white space); where it declines, the Python's sniff decides."""

import glob
import json
import os
import random

import pytest

from ctxtool import formats
from ctxtool.jsonl import loads
from ctxtool.scanloop import native

ROOT = os.path.join(os.path.dirname(__file__), "..", "fixtures")
c = native()
pytestmark = pytest.mark.skipif(c is None, reason="the C part is not built")


def c_scores(line: bytes):
    return c.sniff(line, formats.SNIFF_TYPES, formats.SNIFF_ROLES)


def test_every_fixture_line_scores_as_the_formats_score_it():
    taken = seen = 0
    for path in glob.glob(os.path.join(ROOT, "**", "*.jsonl"), recursive=True):
        with open(path, "rb") as f:
            for line in f:
                try:  # as the scan reads it: orjson, then the fallback (numbers beyond double range, lone surrogates)
                    obj = loads(line.removeprefix(b"\xef\xbb\xbf"))
                except ValueError:
                    assert c_scores(line) is None, (path, line[:200])
                    continue
                seen += 1
                got = c_scores(line.removeprefix(b"\xef\xbb\xbf"))
                if got is None:
                    continue
                taken += 1
                assert type(obj) is dict and got == formats.line_scores(obj), (path, line[:300])
    assert seen > 3000 and taken > seen * 0.97, (taken, seen)


@pytest.mark.parametrize("fmt", ["pi", "pi-v1", "claude", "messages", "codex"])
def test_every_generated_line_scores_as_the_formats_score_it(fmt, tmp_path):
    from ctxtool import synth

    path = tmp_path / "session.jsonl"
    synth.write_session(path, fmt, seed=7, target_bytes=300_000, **({} if fmt in ("messages", "codex") else {"compactions": 1}))
    lines = path.read_bytes().splitlines(keepends=True)
    for line in lines:
        got = c_scores(line)
        assert got is not None and got == formats.line_scores(loads(line)), line[:300]
    assert len(lines) > 60


WORDS = ["user", "assistant", "session", "message", "system", "progress", "session_meta", "response_item",
         "event_msg", "compacted", "toolResult", "custom", "hookMessage", "developer", "summary", "x", "", "User"]
KEYS = ["type", "uuid", "sessionId", "leafUuid", "messageId", "message", "payload", "role", "content", "other", "id"]


def _value(rng, depth=0):
    r = rng.random()
    if r < 0.35:
        return json.dumps(rng.choice(WORDS))
    if r < 0.45:
        return rng.choice(["1", "-2.5e3", "true", "false", "null", "0"])
    if r < 0.6 and depth < 3:
        return "[" + ",".join(_value(rng, depth + 1) for _ in range(rng.randrange(3))) + "]"
    if depth < 3:
        return _object(rng, depth + 1)
    return '"leaf"'


def _object(rng, depth=0):
    parts = []
    for _ in range(rng.randrange(6)):
        key = rng.choice(KEYS + ["role"] * 2)
        if rng.random() < 0.05:
            key_text = json.dumps(key).replace(key[:1], "\\u%04x" % ord(key[:1]), 1) if key else '""'
        else:
            key_text = json.dumps(key)
        value = _value(rng, depth)
        if key == "message" and rng.random() < 0.6:
            value = _object(rng, depth + 1)
        if rng.random() < 0.05 and value.startswith('"') and len(value) > 2:
            value = '"\\u%04x' % ord(value[1]) + value[2:]
        ws = rng.choice(["", " ", "\t", "\n "])
        parts.append(f"{key_text}{ws}:{ws}{value}")
    return "{" + ",".join(parts) + "}"


@pytest.mark.parametrize("seed", range(4))
def test_random_lines_score_as_the_formats_score_them(seed):
    rng = random.Random(seed)
    taken = 0
    for _ in range(3000):
        text = _object(rng)
        if rng.random() < 0.1:
            text = rng.choice(["[", " ", '"x"', "{}", "[]"]) + text if rng.random() < 0.5 else text[: rng.randrange(len(text) + 1)]
        line = text.encode() + rng.choice([b"\n", b"\r\n", b"", b"  \n"])
        got = c_scores(line)
        try:
            obj = json.loads(line)
        except ValueError:
            assert got is None, line
            continue
        if got is None:
            assert type(obj) is not dict or b"\\u" in line, line
            continue
        taken += 1
        assert type(obj) is dict and got == formats.line_scores(obj), line
    assert taken > 2000


def test_words_are_the_sniffs_words():
    """Every word the four sniffs compare is in the tables the C part reads (a word added to one of the sniffs' sets
    reaches it); the bits are those of _scan_sniff.c."""
    from ctxtool.formats import claude, codex, messages, pi

    assert {w for w, b in formats.SNIFF_TYPES.items() if b & 2} == {w.encode() for w in claude.KNOWN}
    assert {w for w, b in formats.SNIFF_TYPES.items() if b & 8} == {w.encode() for w in pi.ENTRY_TYPES}
    assert {w for w, b in formats.SNIFF_TYPES.items() if b & 32} == {w.encode() for w in codex.LINE_TYPES}
    assert {w for w, b in formats.SNIFF_ROLES.items() if b & 1} == {w.encode() for w in pi.SNIFF_ROLES}
    assert {w for w, b in formats.SNIFF_ROLES.items() if b & 2} == {w.encode() for w in messages.SNIFF_ROLES}


def _scanned(path, monkeypatch, native: str):
    from ctxtool import scanloop
    from ctxtool.transcript import scan

    monkeypatch.setenv(scanloop.ENV_NATIVE, native)
    t = scan(str(path), workers=1)
    return ([(b.lineno, b.reason) for b in t.bad], [(e.lineno, e.kind, e.type) for e in t.entries], t.fmt.NAME)


@pytest.mark.parametrize("keep", [3, 60])
def test_a_line_codex_refuses_among_the_first_is_a_bad_line_in_its_place(tmp_path, monkeypatch, keep):
    """Among a rollout's first lines (read before the format is known, scored by the C part's sniff), one that orjson
    refuses (a number beyond double range) and Codex too (nested 130 levels deep): a bad line in its place, as without
    the C part; the same in a file shorter than the lines read to tell its format (``keep`` lines in all)."""
    fix = os.path.join(ROOT, "codex-recorded", "parallel.jsonl")
    lines = open(fix, "rb").read().splitlines(keepends=True)
    lines = (lines * 10)[:keep] if keep > len(lines) else lines[:keep]
    obj = json.loads(lines[1])
    obj["deep"] = "@@"
    lines[1] = json.dumps(obj).replace('"@@"', "[" * 130 + "1e400" + "]" * 130).encode() + b"\n"
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines))
    assert c_scores(lines[1]) is not None  # (the C part scores it: the case this is about)
    bad, entries, fmt = _scanned(path, monkeypatch, "1")
    assert fmt == "codex" and [no for no, _ in bad] == [2] and "nested 131 levels deep" in bad[0][1]
    assert (bad, entries, fmt) == _scanned(path, monkeypatch, "0")


def test_lines_it_declines_are_sniffed_by_the_formats(tmp_path, monkeypatch):
    """A Claude Code file whose first lines the C part declines (a key written with an escape, a non-object line):
    the format is told the same, and the index is the same, with and without the C part."""
    fix = os.path.join(ROOT, "claude-recorded", "parallel.jsonl")
    lines = open(fix, "rb").read().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"sessionId"', b'"\\u0073essionId"', 1)
    lines.insert(1, b"[1, 2]\n")
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines))
    assert c_scores(lines[0]) is None and c_scores(lines[1]) is None
    got = _scanned(path, monkeypatch, "1")
    assert got[2] == "claude" and got == _scanned(path, monkeypatch, "0")


@pytest.mark.parametrize("line", [
    b'{"type":"message","message":{"role":"user","role":5}}', b'{"type":"message","message":{"role":5,"role":"user"}}',
    b'{"type":"message","message":{"role":"user"},"message":5}', b'{"type":"message","message":5,"message":{"role":"user"}}',
    b'{"type":"message","message":{"role":"user"},"message":{}}', b'{"type":"user","type":5,"uuid":1,"message":{}}',
    b'{"type":5,"type":"user","uuid":1,"message":{}}', b'{"type":"event_msg","payload":{},"payload":[]}',
    b'{"type":"event_msg","payload":[],"payload":{}}', b'{"role":"user","role":[],"content":1}',
    b'{"role":[],"role":"assistant","content":1}', b'{"type":null,"role":"user","content":1}',
    b'{"type":"session","type":"session_meta","payload":{}}', b'{"type":"progress","leafUuid":null}',
    b'{"type":"assistant","message":{"role":"x"},"sessionId":0}', b'{"type":"compaction"}', b'{}', b' { } \r\n'])
def test_a_key_written_twice_counts_as_its_last_value(line):
    got = c_scores(line)
    assert got is not None and got == formats.line_scores(json.loads(line))
