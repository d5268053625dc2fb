"""A local command's output lines (``system`` lines of subtype ``local_command``: what ``/usage``, ``/clear`` printed) at
the end of a history, judged with the real Claude Code client (judge fuzz seed 1166, case 0099: such a line alone,
its parent lost, which the client sends and does not close; ctxtool closed it with "No response requested.").

What the client does, as probed here on ``cleared_session_turns.jsonl``: it resumes at such a line as at a message
(the walk up from the last row stops there: after a response, the line is sent after it); the row it closes a turn
after is its last that is no system line, and the close goes right after that row, before the output lines (sent
then as a user message of their own); with no row before them, or a response, nothing is closed. A local command's
whole run at the end (its caveat, its name, its output) stays open, as before (rule 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtool.claude_chain import NO_RESPONSE
from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support import judge_fuzz
from tests.support.claude_agent import conversation, resume_payload

pytestmark = pytest.mark.claude

REC = Path(__file__).resolve().parent.parent / "fixtures" / "claude-recorded"
SRC = REC / "cleared_session_turns.jsonl"


def _shapes() -> dict:
    lines = SRC.read_text(encoding="utf-8").splitlines()
    objs = [json.loads(x) for x in lines]
    assert objs[3]["type"] == "system" and objs[3]["subtype"] == "local_command"
    assert objs[35]["message"]["content"][0]["text"] == "Fresh." and objs[9]["message"]["content"] == "First after clear."

    def out(parent: str, n: int, text: str = "<local-command-stdout>hi</local-command-stdout>", **more) -> str:
        o = dict(objs[3], parentUuid=parent, uuid=f"11111111-0000-4000-8000-{n:012d}", content=text,
                 timestamp="2026-11-30T04:40:00.000Z", **more)
        return json.dumps(o, separators=(",", ":"))

    def u(k: int) -> str:
        return objs[k]["uuid"]

    checkpoint = json.dumps({"type": "last-prompt", "lastPrompt": "x", "leafUuid": u(35), "sessionId": objs[0]["sessionId"]})
    again = [lines[1].replace("e5c704d9", "e5c704d0").replace('"parentUuid":null', f'"parentUuid":"{u(42)}"'),
             lines[2].replace("c939a13e", "c939a130").replace("e5c704d9", "e5c704d0")]
    # name: (lines, closed: whether "No response requested." is sent, and then before the output)
    return {
        "alone": ([lines[3]], False),
        "two alone": ([lines[3], out(u(3), 1)], False),
        "after a response": (lines[:36] + [out(u(35), 2)], False),
        "after the last response": (lines + [out(u(42), 3)], False),
        "two after a response": (lines[:36] + [out(u(35), 4), out("11111111-0000-4000-8000-000000000004", 5,
                                                                   "<local-command-stderr>x</local-command-stderr>")], False),
        "after a response, a checkpoint at it": (lines[:36] + [out(u(35), 6), checkpoint], False),
        "after a prompt": (lines[:10] + [out(u(9), 7)], True),
        "after a prompt's attachments": (lines[:20] + [out(u(19), 8)], True),
        "after results": (lines[:30] + [out(u(29), 9)], True),
        "display-only, after a prompt": (lines[:10] + [out(u(9), 10, isDisplayOnly=True)], True),
        "off an earlier call": (lines[:36] + [out(u(28), 11)], False),
        "a command's whole run at the end": (lines + again + [out("c939a130" + u(2)[8:], 12)], False),
    }


SHAPES = _shapes()


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_local_commands_output_at_the_end_is_sent_and_closed_as_the_client_does(tmp_path, name):
    lines, closed = SHAPES[name]
    path = tmp_path / "cleared_session_turns.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    judge = resume_payload(str(path))["messages"]
    ours = sent_messages(scan(str(path)))
    assert conversation(ours) == conversation(judge)
    texts = [json.dumps(m["content"]) for m in ours]
    at = next((k for k, m in enumerate(ours) if m["role"] == "assistant" and NO_RESPONSE in texts[k]), None)
    assert (at is not None) == closed
    if at is not None and "isDisplayOnly" not in lines[-1] and "<local-command" in lines[-1]:
        assert "local-command-stdout>hi<" in texts[at + 1]  # (the output after the close, a message of its own)


def test_the_fuzz_case_is_read_and_repaired_as_the_client_reads_it(tmp_path):
    path = tmp_path / "cleared_session_turns.jsonl"
    path.write_text(SRC.read_text(encoding="utf-8").splitlines()[3] + "\n", encoding="utf-8")
    assert judge_fuzz.problems("claude", str(path), str(tmp_path / "work"), source=str(SRC)) == []
