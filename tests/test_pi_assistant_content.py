"""An assistant message whose content is no array, on the path pi resumes: pi-ai reads every assistant message's
content as an array (``content.flatMap`` in its transformMessages), so pi cannot send such a history at all; repair
gives the message its text as an array, or an empty one (judge fuzz seed 1095, case 0094: pi-broken-links.jsonl's
self-looped assistant line given ``"content": null``, which pi resumed because the line was off its path, until
repair relinked it onto the path). Judged with the real pi (tests/pi_harness)."""

from __future__ import annotations

import json
import os

import pytest

from ctxtool.repair import repair_file
from ctxtool.validate import validate_file
from tests.support import judge_fuzz
from tests.support.pi_agent import load_with_pi

pytestmark = pytest.mark.pi

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
GONE = object()


@pytest.mark.parametrize("content,sent", [(None, None), ("Short answer.", "Short answer."), (5, None), ({}, None),
                                          (GONE, None)], ids=str)
def test_repair_gives_an_assistant_message_on_the_path_an_array_pi_can_send(tmp_path, content, sent):
    src = os.path.join(FIX, "pi-recorded", "branched.jsonl")
    lines = open(src, encoding="utf-8").read().splitlines()
    last = json.loads(lines[-1])
    assert last["message"]["role"] == "assistant"  # (the leaf: on the path pi resumes)
    if content is GONE:
        del last["message"]["content"]
    else:
        last["message"]["content"] = content
    lines[-1] = json.dumps(last, separators=(",", ":"))
    path = tmp_path / "branched.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = load_with_pi(path, check=False)
    assert not before["ok"] and "flatMap" in before["error"]
    checked = validate_file(str(path))
    found = [v for v in checked["violations"] if v["severity"] == "error"]
    assert [(v["kind"], v["lines"]) for v in found] == [("invalid-content", [len(lines)])]
    # (the message it is in, or, where it makes none, the one before it)
    assert found[0]["message_index"] == checked["messages"] - 1
    report = repair_file(str(path), backup=False)
    assert [c.kind for c in report.changes] == ["invalid-content"]
    after = load_with_pi(path)
    texts = [b.get("text") for m in after["llmMessages"] if m["role"] == "assistant" for b in m["content"]]
    assert (sent in texts) if sent is not None else "Short answer." not in texts
    assert judge_fuzz.problems("pi", str(path), str(tmp_path / "work")) == []
    assert repair_file(str(path), check=True).changes == []
    assert "invalid-content" not in {v["kind"] for v in validate_file(str(path))["violations"]}


def test_the_fuzz_case_loads_in_pi_after_repair(tmp_path):
    src = os.path.join(FIX, "repair", "pi-broken-links.jsonl")
    lines = open(src, encoding="utf-8").read().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if '"parentId":"b2000003"' in ln and '"id":"b2000003"' in ln)
    o = json.loads(lines[k])
    o["message"]["content"] = None
    lines[k] = json.dumps(o, separators=(",", ":")) + "\n"
    lines[-1] = lines[-1][:200]  # (and its last line torn, as the case had it: the path then runs through that line)
    path = tmp_path / "pi-broken-links.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    # off the path pi resumes, the line is never sent: pi loads the file, and validate finds nothing of it
    assert load_with_pi(path, check=False)["ok"]
    assert "invalid-content" not in {v["kind"] for v in validate_file(str(path))["violations"]}
    assert judge_fuzz.problems("pi", str(path), str(tmp_path / "work"), source=src) == []


def test_an_errored_message_whose_content_is_no_array_stops_pi_too(tmp_path):
    # pi-ai reads every assistant message's content before it skips the errored and aborted ones
    src = os.path.join(FIX, "pi-recorded", "branched.jsonl")
    lines = open(src, encoding="utf-8").read().splitlines()
    last = json.loads(lines[-1])
    last["message"].update(content="Partial answer.", stopReason="error")
    lines[-1] = json.dumps(last, separators=(",", ":"))
    path = tmp_path / "branched.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = load_with_pi(path, check=False)
    assert not before["ok"] and "flatMap" in before["error"]
    assert [v["kind"] for v in validate_file(str(path))["violations"] if v["severity"] == "error"] == ["invalid-content"]
    assert "invalid-content" in [c.kind for c in repair_file(str(path), backup=False).changes]
    assert load_with_pi(path)["ok"]
