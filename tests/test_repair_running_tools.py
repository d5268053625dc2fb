"""A session repaired while a tool call runs: pi writes the call, runs the tool, then appends its result. Repair reads
the call without a result and plans a synthetic one; the real result must never be lost to it (found by an adversarial
review: the carried result was re-linked under the synthetic one, and the next repair dropped the real one as the
second result of its call).

Two guards: the commit refuses to carry a result for a call the rewrite answers synthetically (the repair plans again,
with the real result in the file), and the pairing keeps a real result over a repair's synthetic one (ctxtool's or
OpenClaw's text) wherever a call has both."""

from __future__ import annotations

import json
import os

import pytest

from ctxtool import commit
from ctxtool.formats.common import OPENCLAW_MISSING_TEXT, REPAIR_TEXT
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.validate import validate_file

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "repair")


def _clean() -> list[bytes]:
    with open(os.path.join(FIXTURES, "pi-clean.jsonl"), "rb") as f:
        return f.read().splitlines(keepends=True)


LINES = _clean()
CALLING = b"".join(LINES[:6])  # ends with an assistant message of two calls (toolu_01A, toolu_01B)
RESULTS = b"".join(LINES[6:8])  # what pi appends once the tools are done


def _errors(path) -> list:
    return [v for v in validate_file(str(path))["violations"] if v["severity"] == "error"]


def _results_text(path) -> list[str]:
    out = []
    with open(path, "rb") as f:
        for raw in f:
            m = json.loads(raw).get("message") or {}
            if m.get("role") == "toolResult":
                out.append(m["content"][0]["text"])
    return out


@pytest.fixture
def hook():
    added = []

    def add(fn):
        commit.hooks.append(fn)
        added.append(fn)

    yield add
    for fn in added:
        commit.hooks.remove(fn)


@pytest.mark.parametrize("when", ["planned", "tmp-written", "before-rename"])
def test_results_appended_while_repair_runs_make_it_plan_again_and_change_nothing(tmp_path, hook, when):
    """The tool finishes while repair plans, writes its new file, or is about to rename it: the results are carried
    no more (they hung under the synthetic ones); the plan is made again with them, and nothing is left to change."""
    p = tmp_path / "live.jsonl"
    p.write_bytes(CALLING)
    fired = []

    def tool_done(phase, path):
        if phase == when and not fired:
            fired.append(phase)
            with open(path, "ab") as f:  # pi appends each line with its own open
                f.write(RESULTS)

    hook(tool_done)
    report = repair_file(str(p))
    assert fired
    assert p.read_bytes() == CALLING + RESULTS  # the agent's lines, byte for byte: no synthetic result
    assert not report.changes and not report.written
    assert REPAIR_TEXT not in _results_text(p) and not _errors(p)


def test_without_the_tool_finishing_the_call_gets_its_synthetic_result(tmp_path):
    """(The guard changes nothing for a session whose tool never answered: a crash mid-call.)"""
    p = tmp_path / "crashed.jsonl"
    p.write_bytes(CALLING)
    report = repair_file(str(p))
    assert [c.kind for c in report.changes] == ["missing-result", "missing-result"]
    assert _results_text(p) == [REPAIR_TEXT, REPAIR_TEXT]


def _with_results(first: list[str], second: list[str]) -> bytes:
    """The calling turn, then two results for each call (texts ``first``, then ``second``), each a child of the line
    before it: both on the path pi resumes."""
    out = [CALLING]
    parent = "a1000005"
    n = 0
    for texts in (first, second):
        for call, text in zip(("toolu_01A", "toolu_01B"), texts):
            n += 1
            i = f"r{n:07d}"
            out.append(json.dumps({"type": "message", "id": i, "parentId": parent, "timestamp": "2026-04-17T02:39:45.000Z",
                                   "message": {"role": "toolResult", "toolCallId": call, "toolName": "read",
                                               "content": [{"type": "text", "text": text}],
                                               "isError": text in (REPAIR_TEXT, OPENCLAW_MISSING_TEXT),
                                               "timestamp": 1776393585000}}, separators=(",", ":")).encode() + b"\n")
            parent = i
    return b"".join(out)


@pytest.mark.parametrize("made", [REPAIR_TEXT, OPENCLAW_MISSING_TEXT])
def test_a_real_result_is_kept_over_a_synthetic_one_written_before_it(tmp_path, made):
    p = tmp_path / "s.jsonl"
    p.write_bytes(_with_results([made, made], ["the log", "the Makefile"]))
    report = repair_file(str(p))
    assert _results_text(p) == ["the log", "the Makefile"]
    assert [c.kind for c in report.changes if c.action == "dropped"] == ["duplicate-result", "duplicate-result"]
    assert all("real one is kept" in c.detail for c in report.changes if c.action == "dropped")
    assert not _errors(p)


def test_a_synthetic_result_written_after_a_real_one_is_the_one_dropped(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(_with_results(["the log", "the Makefile"], [REPAIR_TEXT, REPAIR_TEXT]))
    repair_file(str(p))
    assert _results_text(p) == ["the log", "the Makefile"]


@pytest.mark.parametrize("texts", [(["a", "b"], ["c", "d"]), ([REPAIR_TEXT, REPAIR_TEXT], [REPAIR_TEXT, REPAIR_TEXT])])
def test_two_results_of_one_kind_keep_the_first_as_before(tmp_path, texts):
    p = tmp_path / "s.jsonl"
    p.write_bytes(_with_results(*texts))
    repair_file(str(p))
    assert _results_text(p) == texts[0]


def test_the_carried_line_check_reads_each_format_s_results():
    from ctxtool import formats

    assert formats.get("pi").result_ids(json.loads(LINES[6])) == ["toolu_01A"]
    assert formats.get("pi").result_ids(json.loads(LINES[5])) == []
    claude = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": "ok"}, {"type": "text", "text": "hi"}]}}
    assert formats.get("claude").result_ids(claude) == ["toolu_x"]
    assert formats.get("claude").result_ids({"type": "user", "message": {"role": "user", "content": "hi"}}) == []
    assert not hasattr(formats.get("codex"), "result_ids")  # (no parent links: its carried lines are never re-linked)
    assert scan(str(os.path.join(FIXTURES, "pi-clean.jsonl"))).format_name == "pi"
