"""A turn the user stopped, then attachments (docs/claude-code-rules.md, rule 13): when the client's rows end with
attachments below its note ``[Request interrupted by user]`` (or ``... for tool use``), Claude Code leaves the turn
open: no "No response requested.", the new prompt joins the note's message and the attachments' context goes with the
new turn's. With nothing after the note, or a meta line, or with attachments after a prompt or results (no note), it
closes the turn. Judged on the recorded ``interrupted_by_user.jsonl`` (a turn stopped during its calls, then one
stopped before its answer) and ``subagent.jsonl`` (a first turn), cut and given the rows each shape names; ctxtool
closed every one of them until 2026-11-29."""

from __future__ import annotations

import pytest

from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support.claude_agent import conversation, resume_payload
from tests.support.claude_rows import NOTE, build, closes

IBU = "interrupted_by_user.jsonl"  # line 33: the note of calls stopped; 42: "Take your time."; 44: its note
# (recording, cut, rows after) -> whether the client closes the turn (each judged below)
SHAPES = {
    (IBU, 44, ()): True,  # the file ends at the note
    (IBU, 44, ("date",)): False,
    (IBU, 44, ("prompt_snapshot",)): False,  # (an attachment the client renders nothing of)
    (IBU, 44, ("nested_memory",)): False,
    (IBU, 44, ("queued_command",)): False,
    (IBU, 44, ("date", "date")): False,
    (IBU, 44, ("progress", "date")): False,
    (IBU, 44, ("date", "system")): False,
    (IBU, 44, ("environment", "deferred_tools_delta", "skill_listing")): False,
    (IBU, 44, ("system",)): True,
    (IBU, 44, ("meta",)): True,
    (IBU, 44, ("date", "meta")): True,
    (IBU, 33, ("date",)): False,  # the note of calls stopped, after their results
    (IBU, 32, ("date",)): True,  # results, no note
    (IBU, 42, ("date",)): True,  # a prompt, no note
    (IBU, 20, ("note-string", "date")): False,  # the note written as a string, after an answered turn
    (IBU, 20, ("prompt=[Request interrupted by user] ", "date")): True,  # not the note's text
    ("subagent.jsonl", 14, ("note", "date")): False,  # a first turn, no response before
}


def _id(shape) -> str:
    name, cut, rows = shape
    return f"{name.split('.')[0]}:{cut}:{','.join(rows) or '-'}"


@pytest.mark.parametrize("shape", sorted(SHAPES), ids=_id)
def test_ctxtool_closes_the_turn_where_the_client_does(tmp_path, shape):
    name, cut, rows = shape
    path = tmp_path / name
    path.write_bytes(build(name, cut, list(rows)))
    mine = [{"role": m["role"], "content": m["content"]} for m in sent_messages(scan(str(path)))]
    assert closes(mine) is SHAPES[shape]
    if not SHAPES[shape]:  # the note is the last message sent (the attachments' context, when rendered, after it)
        last = [m for m in mine if m["role"] != "system"][-1]["content"][-1]
        assert last in ({"type": "text", "text": NOTE}, {"type": "text", "text": NOTE[:-1] + " for tool use]"})


@pytest.mark.claude
@pytest.mark.parametrize("shape", sorted(SHAPES), ids=_id)
def test_the_client_closes_a_stopped_turn_as_the_table_says(tmp_path, shape):
    name, cut, rows = shape
    path = tmp_path / name
    path.write_bytes(build(name, cut, list(rows)))
    sent = resume_payload(str(path))["messages"]
    assert closes(sent) is SHAPES[shape]
    assert conversation(sent_messages(scan(str(path)))) == conversation(sent)
