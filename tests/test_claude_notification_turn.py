"""A background task's notification delivered in a person's turn (rule 51): Claude Code records two renderings of such
a queued command, ``rendered`` and ``renderedInHumanTurn``, and sends the second when the rows before the attachment
reach a prompt a person typed (``origin.kind`` "human", as the interactive client writes a typed prompt) before any
response. Read in its code (2.1.330, ``xCe`` and ``$nr``) and judged: the shapes below are made of the recorded
``subagent.jsonl``, whose notification the client delivered after a tool result, moved into the first turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtool.estimate import Options, estimate_file
from ctxtool.formats.claude_origin import in_persons_turn, notification_in_turn
from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support.claude_agent import resume_payload

REC = Path(__file__).resolve().parent.parent / "fixtures" / "claude-recorded"
IN_TURN = "It is delivered in the same turn as a genuine message from the user"


def _user(uuid: str, parent: str, ts: str, content, **more) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/tmp/p", "sessionId": "S",
            "version": "2.1.330", "type": "user", "message": {"role": "user", "content": content}, "uuid": uuid,
            "timestamp": ts, **more}


def _shape(name: str) -> bytes:
    """``subagent.jsonl``'s first turn with its notification right after the prompt's attachments (and ``name``'s
    change), then the turn's first response, or nothing (``...-cut``)."""
    lines = (REC / "subagent.jsonl").read_bytes().split(b"\n")[:-1]
    objs = [json.loads(x) for x in lines]
    first = next(i for i, o in enumerate(objs) if o.get("type") == "user")
    snap = next(i for i, o in enumerate(objs) if (o.get("attachment") or {}).get("type") == "prompt_snapshot")
    resp = next(i for i, o in enumerate(objs) if o.get("type") == "assistant")
    q = json.loads(lines[next(i for i, o in enumerate(objs) if (o.get("attachment") or {}).get("type") == "queued_command")])
    prompt = objs[first]
    if "no-origin" not in name:
        prompt["origin"] = {"kind": "human"}
    if name == "slack-vouched":
        prompt["verifiedSlackHumanTurn"] = True
    if name == "scheduled":
        q["attachment"]["origin"]["subkind"] = "scheduled-trigger"
    if name == "command-mode-alone":
        del q["attachment"]["origin"]  # (its commandMode says task-notification)
    ts = objs[snap]["timestamp"]
    between = []
    if name == "meta-line-between":
        between = [_user("aaaaaaaa-0000-4000-8000-000000000001", "", ts, [{"type": "text", "text": "noted"}], isMeta=True)]
    elif name == "media-note-between":
        between = [_user("aaaaaaaa-0000-4000-8000-000000000001", "", ts, [{"type": "text", "text": "[Image: pasted.png]"}],
                         isMeta=True)]
    elif name == "interruption-note-between":
        between = [_user("aaaaaaaa-0000-4000-8000-000000000001", "", ts, "[Request interrupted by user]")]
    parent = objs[snap]["uuid"]
    for b in between:
        b["parentUuid"] = parent
        parent = b["uuid"]
    q["parentUuid"] = parent
    out = [json.dumps(o, separators=(",", ":"), ensure_ascii=False) for o in objs[:snap + 1]]
    out += [json.dumps(o, separators=(",", ":")) for o in between]
    out.append(json.dumps(q, separators=(",", ":"), ensure_ascii=False))
    if not name.endswith("-cut"):
        r = objs[resp]
        r["parentUuid"] = q["uuid"]
        out.append(json.dumps(r, separators=(",", ":"), ensure_ascii=False))
    return ("\n".join(out) + "\n").encode()


# shape -> whether the client sends the rendering for a person's turn (each judged below)
SHAPES = {
    "typed-prompt": True,
    "typed-prompt-cut": True,  # (the file ends at the notification: the turn is sent all the same, rule 38)
    "no-origin": False,  # (an SDK prompt, as every recording's: no person typed it)
    "slack-vouched": False,
    "scheduled": False,
    "command-mode-alone": True,
    "meta-line-between": False,
    "media-note-between": True,
    "interruption-note-between": False,
}


def _all_text(messages: list) -> list:
    """Every message with each text exactly as sent, system ones included (where this notification goes)."""
    out = []
    for m in messages:
        c = m["content"]
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else c
        out.append((m["role"], [b.get("text") for b in blocks if b.get("type") == "text"]))
    return out


@pytest.mark.claude
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_notification_in_a_persons_turn_is_sent_as_the_client_sends_it_there(tmp_path, name):
    path = tmp_path / "subagent.jsonl"
    path.write_bytes(_shape(name))
    sent = resume_payload(str(path))["messages"]
    assert (IN_TURN in json.dumps(sent)) is SHAPES[name]  # (the shape does what it is meant to)
    assert _all_text(sent_messages(scan(str(path)))) == _all_text(sent)


def test_estimate_counts_the_rendering_sent(tmp_path):
    counts = {}
    for name in ("typed-prompt", "no-origin"):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(_shape(name))
        counts[name] = estimate_file(str(path), Options(tokenizer="heuristic"))["raw_tokens"]
    obj = json.loads(next(x for x in (REC / "subagent.jsonl").read_bytes().split(b"\n") if b'"queued_command"' in x))
    longer = len(obj["renderedInHumanTurn"][0]["content"]) - len(obj["rendered"][0]["content"])
    assert longer > 100
    # pi's heuristic: a character count over 4 (the typed prompt's origin adds nothing that is sent)
    assert counts["typed-prompt"] - counts["no-origin"] == pytest.approx(longer / 4, abs=2)


def _row(type_: str, **more) -> dict:
    return {"type": type_, **more}


@pytest.mark.parametrize("rows, want", [
    ([_row("user", origin={"kind": "human"})], True),
    ([_row("attachment"), _row("system"), _row("user", origin={"kind": "human"})], True),
    ([_row("assistant"), _row("user", origin={"kind": "human"})], False),
    ([_row("user", origin={"kind": "human"}, verifiedSlackHumanTurn=True)], False),
    ([_row("user", origin={"kind": "human"}, verifiedSlackHumanTurn="yes")], True),
    ([_row("user")], False),
    ([_row("user", origin={"kind": "peer"})], False),
    ([_row("user", origin="human")], False),
    ([_row("user", toolUseResult=None, origin={"kind": "human"})], False),
    ([_row("user", isCompactSummary=True, origin={"kind": "human"})], False),
    ([_row("user", isCompactSummary=1, origin={"kind": "human"})], True),
    ([_row("user", isVisibleInTranscriptOnly=True), _row("user", origin={"kind": "human"})], True),
    ([_row("user", isMeta=True, message={"content": [{"type": "text", "text": "[Image: a.png]"}]}),
      _row("user", origin={"kind": "human"})], True),
    ([_row("user", isMeta=True, message={"content": [{"type": "text", "text": "[Image: a\nb.png]"}]}),
      _row("user", origin={"kind": "human"})], False),
    ([_row("user", isMeta=True, origin=None, message={"content": [{"type": "text", "text": "[Image: a.png]"}]}),
      _row("user", origin={"kind": "human"})], False),
    ([_row("user", isMeta=True, message={"content": "[Image: a.png]"}), _row("user", origin={"kind": "human"})], False),
    ([_row("user", origin={"kind": "human"}, message={"content": "[Request interrupted by user] and more"})], False),
    ([_row("user", origin={"kind": "human"}, message={"content": [
        {"type": "tool_result", "is_error": True, "content": "[Request interrupted by user for tool use]"}]})], False),
    ([_row("user", origin={"kind": "human"}, message={"content": [
        {"type": "tool_result", "is_error": False, "content": "[Request interrupted by user for tool use]"}]})], True),
    ([], None),
    ([_row("attachment")], None),
])
def test_the_walk_back_to_a_persons_prompt(rows, want):
    assert in_persons_turn(rows) is want


@pytest.mark.parametrize("att, want", [
    ({"type": "queued_command", "origin": {"kind": "task-notification"}}, True),
    ({"type": "queued_command", "origin": {"kind": "task-notification", "subkind": "scheduled-trigger"}}, False),
    ({"type": "queued_command", "origin": {"kind": "task-notification", "subkind": "projects-relay"}}, False),
    ({"type": "queued_command", "origin": {"kind": "human"}, "commandMode": "task-notification"}, False),
    ({"type": "queued_command", "commandMode": "task-notification"}, True),
    ({"type": "queued_command", "origin": None, "commandMode": "task-notification"}, True),
    ({"type": "queued_command", "origin": 5, "commandMode": "task-notification"}, False),
    ({"type": "queued_command", "commandMode": "prompt"}, False),
    ({"type": "file", "origin": {"kind": "task-notification"}}, False),
    (None, False),
])
def test_which_attachments_are_a_notification_within_a_turn(att, want):
    assert notification_in_turn(att) is want
