"""Lines nested deeper than orjson (1,024 levels) and Python's own recursion (1,000) read: JavaScript's
JSON.parse reads them, so pi and Claude Code keep such a line, and repair must never drop it; serde_json
(Codex) refuses one nested 128 levels deep, and so does ctxtool past orjson's depth (CLI audit: repair
dropped a pi message nested 1,100 levels deep as invalid JSON)."""

from __future__ import annotations

import json
import os

import pytest

from ctxtool.jsonl import Line, dumps, loads, parse
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.validate import validate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _with_deep_value(src: str, dest, pick, put, depth: int) -> int:
    lines = open(src, encoding="utf-8").read().splitlines()
    k = next(k for k, x in enumerate(lines) if pick(json.loads(x)))
    obj = json.loads(lines[k])
    put(obj)
    lines[k] = json.dumps(obj).replace('"__DEEP__"', _nested(depth))
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return k + 1


def test_a_value_of_any_depth_is_read_and_written_again():
    for depth in (1_100, 50_000):
        raw = (_nested(depth) + "\n").encode()
        obj, reason = parse(Line(1, 0, raw, b"\n"))
        assert reason is None
        assert dumps(obj) == raw[:-1] and dumps(loads(raw)) == raw[:-1]  # (== of such values recurses itself)


def _pi_file(tmp_path, depth: int):
    src = os.path.join(ROOT, "fixtures", "pi-recorded", sorted(os.listdir(os.path.join(ROOT, "fixtures", "pi-recorded")))[0])
    path = tmp_path / "deep.jsonl"
    line = _with_deep_value(src, path, lambda o: o.get("type") == "message" and o["message"]["role"] == "user",
                            lambda o: o["message"].__setitem__("details", "__DEEP__"), depth)
    return path, line


def test_a_pi_line_nested_past_orjsons_depth_is_a_line_like_any_other(tmp_path):
    path, line = _pi_file(tmp_path, 1_100)
    t = scan(str(path))
    assert not t.bad and any(e.lineno == line and e.role == "user" for e in t.entries)
    assert validate_file(str(path))["bad_lines"] == []
    before = path.read_bytes()
    report = repair_file(str(path))
    assert not any(c.kind == "bad-line" for c in report.changes) and path.read_bytes() == before


@pytest.mark.pi
def test_pi_reads_it_and_so_does_ctxtool(tmp_path):
    from tests.support import judge_fuzz

    path, _ = _pi_file(tmp_path, 1_100)
    assert judge_fuzz.problems("pi", str(path), str(tmp_path / "work")) == []


def test_a_codex_line_nested_past_orjsons_depth_is_refused_as_codex_refuses_it(tmp_path):
    src = os.path.join(ROOT, "fixtures", "codex-recorded", "parallel.jsonl")
    path = tmp_path / "deep.jsonl"
    line = _with_deep_value(src, path, lambda o: o.get("payload", {}).get("type") == "function_call_output",
                            lambda o: o["payload"].__setitem__("extra", "__DEEP__"), 1_100)
    t = scan(str(path))
    bad = [b for b in t.bad if b.lineno == line]
    assert bad and "nested 1,102 levels deep" in bad[0].reason and "Codex cannot read" in bad[0].reason


@pytest.mark.codex
def test_codex_skips_it_and_ctxtool_reads_the_file_as_codex_sends_it(tmp_path):
    from tests.support.judge_fuzz import _codex_judge, _codex_view, _differ

    path = tmp_path / "deep.jsonl"
    _with_deep_value(os.path.join(ROOT, "fixtures", "codex-recorded", "parallel.jsonl"), path,
                     lambda o: o.get("payload", {}).get("type") == "function_call_output",
                     lambda o: o["payload"].__setitem__("extra", "__DEEP__"), 1_100)
    sent = _codex_judge(str(path))
    assert sent != judge_refused() and _differ("codex", _codex_view(str(path)), sent) == []


def judge_refused():
    from tests.support.judge_fuzz import REFUSED

    return REFUSED
