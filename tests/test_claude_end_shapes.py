"""How a Claude Code history ends, judged shape by shape: each recording cut at each of its rows (a user, assistant or
system line), then a tail of rows the client itself writes (an attachment it renders, one it renders nothing of, the
note of a stopped turn, a meta line, a system line, a queued notification), resumed by the client and read by ctxtool:
the same messages, and the same closing reply or none (``tests/support/claude_rows.py`` builds them).

CI runs ``SAMPLE`` shapes picked with a fixed seed; ``CTXTOOL_END_SHAPES=all`` runs every one (1,881 shapes from 18
recordings, 20 minutes on two cores split by recording with ``-k``). The rules of ``test_claude_interrupted_turn.py``
and ``test_claude_api_error_turn.py`` were found so (2026-11-29), and then all 1,881 were alike. Left out:
``auto_compacted.jsonl`` (its resumes are the client's compaction requests, which carry no closing reply) and the
subagents' files (not resumable).
"""

from __future__ import annotations

import json
import os
import random
import re

import pytest

from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support.claude_agent import conversation, resume_payload
from tests.support.claude_rows import REC, build, closes

TAILS = [(), ("date",), ("note", "date"), ("meta",), ("prompt_snapshot",), ("note",), ("system",),
         ("note", "prompt_snapshot"), ("queued_command",)]
SAMPLE = 12
SEED = 20261129


def _recordings() -> list[str]:
    return sorted(p.name for p in REC.glob("*.jsonl") if ".agent-" not in p.name and p.name != "auto_compacted.jsonl")


def _shapes() -> list[tuple[str, int, tuple]]:
    out = []
    for name in _recordings():
        objs = [json.loads(x) for x in (REC / name).read_bytes().split(b"\n") if x]
        cuts = [k + 1 for k, o in enumerate(objs) if o.get("type") in ("user", "assistant", "system") and o.get("uuid")]
        out += [(name, cut, tail) for cut in cuts for tail in TAILS]
    return out


def _chosen() -> list[tuple[str, int, tuple]]:
    shapes = _shapes()
    if os.environ.get("CTXTOOL_END_SHAPES") == "all":
        return shapes
    return random.Random(SEED).sample(shapes, SAMPLE)


_GLUED = re.compile(r"\s*<system-reminder>.*</system-reminder>\s*$", re.S)


def _without_new_turns_reminder(messages: list) -> list:
    """``messages`` with the tool results of the last user message as the file has them: where the history is left
    open, the client puts the new turn's reminder (instructions re-read at its start, which the judge's sandbox
    changes) in the last result: glued to its text after its trailing white space, or as a text block after its
    blocks. Results' text is compared less trailing white space in that message."""
    out = json.loads(json.dumps(messages))
    users = [m for m in out if m["role"] == "user"]
    if users and isinstance(users[-1]["content"], list):
        for b in users[-1]["content"]:
            if not (isinstance(b, dict) and b.get("type") == "tool_result"):
                continue
            c = b.get("content")
            if isinstance(c, str):
                b["content"] = _GLUED.sub("", c).rstrip()
            elif isinstance(c, list):
                while c and isinstance(c[-1], dict) and c[-1].get("type") == "text" and _GLUED.fullmatch(c[-1].get("text", "")):
                    c.pop()
    return out


def _id(shape) -> str:
    name, cut, tail = shape
    return f"{name.split('.')[0]}:{cut}:{','.join(tail) or '-'}"


def test_the_sample_covers_every_recording_and_tail():
    shapes = _shapes()
    assert {s[0] for s in shapes} == set(_recordings()) and len(_recordings()) >= 15
    assert len(shapes) == len(set(shapes)) > 1000
    assert len(_chosen()) == SAMPLE or os.environ.get("CTXTOOL_END_SHAPES") == "all"


@pytest.mark.claude
@pytest.mark.parametrize("shape", _chosen(), ids=_id)
def test_a_history_ends_as_the_client_ends_it(tmp_path, shape):
    name, cut, tail = shape
    path = tmp_path / name
    path.write_bytes(build(name, cut, list(tail)))
    got = resume_payload(str(path))
    if got["compacting"]:
        pytest.skip("the client's first request is a compaction (past its threshold)")
    sent = _without_new_turns_reminder(got["messages"])
    mine = _without_new_turns_reminder([{"role": m["role"], "content": m["content"]}
                                        for m in sent_messages(scan(str(path)))])
    assert closes(mine) is closes(sent)
    assert conversation(mine) == conversation(sent)
