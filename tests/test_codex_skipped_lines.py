"""Lines Codex's reader refuses and skips on resume (docs/codex-rules.md rules 4b-4n) are said by ``validate``: a
warning ``skipped-line`` that names the line and why, as a line refused for its envelope alone already was
(``unreadable-line``, which repair mends). Before, such a line was said only by its absence from the view, so a
rollout that loses a message, a reasoning item or a call's output on resume validated clean.

Which shapes Codex skips is what the real Codex 0.169 did with them (``test_codex_web_search_action.SHAPES``,
recorded; the typed fields of rule 4b, probed in ``test_codex_judge.py``)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.repair import repair_file
from ctxtool.validate import validate_file
from tests.support.codex_corrupt import FIX
from tests.test_codex_web_search_action import CALL_ID, SHAPES, SKIPPED, rollout


def skipped(path: str) -> list[tuple[str, list[int]]]:
    return [(v["severity"], v["lines"]) for v in validate_file(path)["violations"] if v["kind"] == "skipped-line"]


def line_of(path: str, needle: bytes) -> int:
    """The line of the response item that holds ``needle``."""
    with open(path, "rb") as f:
        return next(n for n, ln in enumerate(f, 1) if needle in ln and b'"type":"response_item"' in ln)


def recorded() -> list[str]:
    return sorted(p for p in os.listdir(FIX) if p.endswith(".jsonl"))


@pytest.mark.parametrize("name", recorded())
def test_no_line_codex_wrote_is_said_to_be_skipped(name):
    assert skipped(os.path.join(FIX, name)) == []


@pytest.mark.parametrize("name,action,sent", SHAPES, ids=[s[0] for s in SHAPES])
def test_a_web_search_line_codex_skips_is_a_warning_on_its_line(tmp_path, name, action, sent):
    path = rollout(tmp_path, action)
    where = line_of(path, CALL_ID.encode())
    assert skipped(path) == ([("warning", [where])] if sent is SKIPPED else [])


def _edited(tmp_path, needle: bytes, edit) -> tuple[str, int]:
    src = os.path.join(FIX, "parallel.jsonl")
    lines = open(src, "rb").read().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if needle in ln)
    o = json.loads(lines[k])
    edit(o["payload"])
    lines[k] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    path = str(tmp_path / "parallel.jsonl")
    with open(path, "wb") as f:
        f.writelines(lines)
    return path, k + 1


def test_a_call_output_codex_skips_is_said_with_the_call_it_leaves_unanswered(tmp_path):
    """An output that is a number (rule 4b: Codex refuses the line) is skipped, and Codex answers its call "aborted"
    (rule 10): both are said, each on its own line."""
    path, k = _edited(tmp_path, b'"type":"function_call_output"', lambda p: p.__setitem__("output", 5))
    found = validate_file(path)["violations"]
    [v] = [v for v in found if v["kind"] == "skipped-line"]
    assert v["lines"] == [k] and v["severity"] == "warning"
    assert "function_call_output whose output is no string" in v["api_error"] and "skipped on resume" in v["api_error"]
    [missing] = [v for v in found if v["kind"] == "missing-tool-result"]
    assert missing["lines"] != [k] and missing["severity"] == "warning"


def test_repair_leaves_a_skipped_line_as_written_and_says_nothing_would_change(tmp_path):
    path, k = _edited(tmp_path, b'"type":"reasoning"', lambda p: p.__setitem__("summary", "no array"))
    before = open(path, "rb").read()
    assert skipped(path) == [("warning", [k])]
    assert repair_file(path, check=True).changes == []
    repair_file(path, backup=False)
    assert open(path, "rb").read() == before


def test_a_line_refused_for_its_envelope_is_said_once_as_the_line_repair_mends(tmp_path):
    path, k = _edited(tmp_path, b'"type":"reasoning"', lambda p: None)
    lines = open(path, "rb").read().splitlines(keepends=True)
    o = json.loads(lines[k - 1])
    o["timestamp"] = 5
    lines[k - 1] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    open(path, "wb").writelines(lines)
    kinds = [(v["kind"], v["lines"]) for v in validate_file(path)["violations"]]
    assert ("unreadable-line", [k]) in kinds and ("skipped-line", [k]) not in kinds


def test_validate_prints_the_warning_and_exits_0(tmp_path):
    path, k = _edited(tmp_path, b'"type":"reasoning"', lambda p: p.__setitem__("summary", "no array"))
    r = CliRunner().invoke(cli, ["validate", path])
    assert r.exit_code == 0, r.output
    assert f"warning lines [{k}]: reasoning whose summary is no array" in r.output
    assert "1 warning(s)" in r.output
    r = CliRunner().invoke(cli, ["validate", "--json", path])
    [v] = [v for v in json.loads(r.output)["files"][0]["violations"] if v["kind"] == "skipped-line"]
    assert v["lines"] == [k]
