"""Files made of a recorded Claude Code transcript cut at a line, with rows of the client's own kinds written below it
(test support): what the judged tables of ``test_claude_interrupted_turn.py`` and ``test_claude_api_error_turn.py``, and
the end shapes of ``test_claude_end_shapes.py``, are made of. The recording's lines are written again as JSON (the
client reads them alike)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

REC = Path(__file__).resolve().parent.parent.parent / "fixtures" / "claude-recorded"
NOTE = "[Request interrupted by user]"
CLOSING = {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}


def closes(messages: list) -> bool:
    """Whether a history sent ends with the client's closing reply (system messages left aside)."""
    return [m for m in messages if m["role"] != "system"][-1:] == [CLOSING]


@functools.lru_cache(maxsize=1)
def _recorded_attachments() -> dict:
    """One recorded attachment line of each kind, from every recording."""
    out: dict = {}
    for f in sorted(REC.glob("*.jsonl")):
        for raw in f.read_bytes().split(b"\n"):
            if b'"attachment"' not in raw:
                continue
            try:
                o = json.loads(raw)
            except ValueError:
                continue
            if isinstance(o, dict) and o.get("type") == "attachment":
                out.setdefault(o["attachment"].get("type"), o)
    return out


def build(name: str, cut: int, rows: list[str]) -> bytes:
    """The recording ``name``'s first ``cut`` lines, then ``rows``, each below the one before: "note" (the client's
    note, as it writes it: one text block), "note-string" (its text as a string), "prompt=TEXT" (a typed prompt),
    "meta" (a meta line), "progress", "system" (a system line), or an attachment kind (a recorded one)."""
    atts = _recorded_attachments()
    objs = [json.loads(x) for x in (REC / name).read_bytes().split(b"\n") if x]
    out = objs[:cut]
    last = [o for o in out if o.get("uuid")][-1]
    common = {"isSidechain": False, "timestamp": last["timestamp"], "sessionId": last["sessionId"]}
    user = {"userType": "external", "cwd": last.get("cwd"), "version": "2.1.330"}
    for k, row in enumerate(rows):
        uuid = f"dddddddd-0000-4000-8000-{k:012d}"
        if row in ("note", "note-string") or row.startswith("prompt="):
            text = row[len("prompt="):] if row.startswith("prompt=") else NOTE
            content = [{"type": "text", "text": text}] if row == "note" else text
            o = {"type": "user", "message": {"role": "user", "content": content}, **user}
        elif row == "meta":
            o = {"type": "user", "isMeta": True, "message": {"role": "user", "content": [{"type": "text", "text": "noted"}]},
                 **user}
        elif row == "progress":
            o = {"type": "progress", "data": {"type": "hook_progress"}}
        elif row == "system":
            o = {"type": "system", "subtype": "turn_duration", "durationMs": 5, "isMeta": False}
        else:
            o = json.loads(json.dumps(atts[row]))
        o.update(common, parentUuid=last["uuid"], uuid=uuid)
        out.append(o)
        last = o
    return ("\n".join(json.dumps(o, separators=(",", ":"), ensure_ascii=False) for o in out) + "\n").encode()
