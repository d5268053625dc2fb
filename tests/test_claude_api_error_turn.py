"""A turn whose answer was an API error, then rows below the error (docs/claude-code-rules.md, rules 1 and 13): the
client does not send its own error line (``isApiErrorMessage``, model ``<synthetic>``), and the rows below that line
are the turn's as if they hung below its prompt: attachments below it are sent (their context after the prompt) and the
turn is closed with "No response requested.", an attachment it renders nothing of too. With nothing below the error, or
a system line alone, the turn is left open, as before. Judged on the recorded ``api_error.jsonl`` (line 28 "Try
again.", line 37 the client's error line for it), cut there and given the rows each shape names; ctxtool left out the
attachments and left every such turn open until 2026-11-29."""

from __future__ import annotations

import pytest

from ctxtool.estimate import Options, estimate_file
from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support.claude_agent import conversation, resume_payload
from tests.support.claude_rows import build, closes

AE = "api_error.jsonl"
# rows below the error line -> (whether the client closes the turn, the system texts it sends after the prompt)
SHAPES = {
    (): (False, 0),
    ("date",): (True, 1),
    ("date", "date"): (True, 1),  # (two renderings, one system message)
    ("progress", "date"): (True, 1),
    ("date", "system"): (True, 1),
    ("prompt_snapshot",): (True, 0),  # (rendered as nothing, still closed)
    ("nested_memory",): (True, 0),  # (rendered for the user: joined to the prompt's message)
    ("queued_command",): (True, 1),
    ("system",): (False, 0),
    ("meta",): (True, 0),
    ("note", "date"): (False, 1),  # (the note of a stopped turn, then attachments: left open, test_claude_interrupted_turn)
    ("date", "note"): (True, 1),
    ("prompt=Next",): (True, 0),
    ("prompt=Next", "date"): (True, 1),
}


def _id(rows) -> str:
    return ",".join(rows) or "-"


def _after_prompt(messages: list) -> int:
    """The system messages sent after the turn's prompt ("Try again.", the last user message of text)."""
    at = max(k for k, m in enumerate(messages) if m["role"] == "user")
    return sum(1 for m in messages[at + 1:] if m["role"] == "system")


@pytest.mark.parametrize("rows", sorted(SHAPES), ids=_id)
def test_the_rows_below_an_api_error_are_the_turns(tmp_path, rows):
    path = tmp_path / AE
    path.write_bytes(build(AE, 37, list(rows)))
    mine = [{"role": m["role"], "content": m["content"]} for m in sent_messages(scan(str(path)))]
    close, system = SHAPES[rows]
    assert closes(mine) is close
    assert _after_prompt(mine) == system


def test_estimate_counts_an_attachment_below_an_api_error(tmp_path):
    counts = {}
    for rows in ((), ("nested_memory",)):
        path = tmp_path / f"{len(rows)}.jsonl"
        path.write_bytes(build(AE, 37, list(rows)))
        counts[rows] = estimate_file(str(path), Options(tokenizer="heuristic"))["raw_tokens"]
    assert counts[("nested_memory",)] - counts[()] >= 30  # the CLAUDE.md text the rendering holds (150 characters)


@pytest.mark.claude
@pytest.mark.parametrize("rows", sorted(SHAPES), ids=_id)
def test_the_client_sends_a_turn_that_ended_in_an_api_error_as_the_table_says(tmp_path, rows):
    path = tmp_path / AE
    path.write_bytes(build(AE, 37, list(rows)))
    sent = resume_payload(str(path))["messages"]
    assert closes(sent) is SHAPES[rows][0]
    assert conversation(sent_messages(scan(str(path)))) == conversation(sent)
