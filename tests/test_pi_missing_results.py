"""A pi call left without a result (the agent killed while a tool ran, or a result line lost) is no API error as pi
sends it: pi-ai's transformMessages, which every provider runs on the history first, answers such a call with the
error result "No result provided". ``validate`` said the API would refuse the request (an error, exit 1); it is a
warning naming what pi sends, as for Claude Code and Codex. Judged: ``tests/pi_harness/load_session.mjs`` returns the
messages transformMessages gives for the session's model (``sentMessages``)."""

from __future__ import annotations

import glob
import os
import shutil

import pytest

from ctxtool.validate import PI_HEALS, validate_file
from tests.support.pi_agent import load_with_pi

pytestmark = pytest.mark.pi

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FILES = sorted(p for p in glob.glob(os.path.join(FIX, "repair", "pi-*.jsonl")) if ".expected" not in p) + \
    sorted(glob.glob(os.path.join(FIX, "pi-recorded", "*.jsonl")))


def _filled_by_pi(sent: list) -> list[str]:
    """The calls pi-ai answered itself."""
    return [m["toolCallId"] for m in sent if m.get("role") == "toolResult"
            and [b.get("text") for b in m.get("content") or []] == ["No result provided"]]


def _unanswered_in(sent: list) -> list[str]:
    """Calls of the request with no result before the next user or assistant message (what the API refuses)."""
    out, pending = [], []
    for m in sent + [{"role": "user"}]:
        if m["role"] == "toolResult":
            pending = [i for i in pending if i != m.get("toolCallId")]
            continue
        out += pending
        pending = [b.get("id") for b in m.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"] \
            if m["role"] == "assistant" and isinstance(m.get("content"), list) else []
    return out


def test_the_judged_cases_include_calls_pi_answers_itself():
    assert any("missing-result" in os.path.basename(p) for p in FILES) and len(FILES) >= 15


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_a_call_pi_answers_itself_is_a_warning_naming_it(tmp_path, path):
    copy = str(tmp_path / os.path.basename(path))
    shutil.copyfile(path, copy)
    pi = load_with_pi(copy, check=False)
    if not pi.get("ok") or pi.get("sentMessages") is None or (pi["rewritten"] and not pi["llmMessages"]):
        pytest.skip("pi does not load this file as it stands, or wipes it (a damaged header: repair's case)")
    sent = pi["sentMessages"]
    assert not _unanswered_in(sent)  # what pi sends pairs every call
    found = validate_file(path)["violations"]
    mine = [v for v in found if v["kind"] == "missing-tool-result"]
    assert all(v["severity"] == "warning" and v["api_error"].startswith(PI_HEALS) for v in mine)
    named, filled = {i for v in mine for i in v["ids"]}, set(_filled_by_pi(sent))
    assert named <= filled  # each call validate says pi answers itself, pi answers
    if filled - named:  # pi answered a call whose result stands elsewhere (after a prompt): the request is refused
        assert any(v["severity"] == "error" for v in found)  # for that (a result not first, a second result)


def _prefixes():
    for name in (os.path.join(FIX, "repair", "pi-clean.jsonl"), os.path.join(FIX, "pi-recorded", "branched.jsonl")):
        with open(name, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        for k in range(2, len(lines) + 1):
            yield pytest.param(b"".join(lines[:k]), id=f"{os.path.basename(name)}:{k}")


@pytest.mark.parametrize("data", list(_prefixes()))
def test_a_session_read_while_its_tool_runs_is_no_api_error(tmp_path, data):
    """Each session cut after each of its lines, as a read meets it while pi writes (a call's line written, its tool
    running): what validate names, pi answers itself, and nothing else is an error."""
    p = tmp_path / "s.jsonl"
    p.write_bytes(data)
    pi = load_with_pi(str(p), check=False)
    sent = pi["sentMessages"]
    found = validate_file(str(p))["violations"]
    named = {i for v in found if v["kind"] == "missing-tool-result" for i in v["ids"]}
    assert named == set(_filled_by_pi(sent)) and not _unanswered_in(sent)
    assert not [v for v in found if v["severity"] == "error"]
