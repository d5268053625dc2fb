"""Small pi sessions built in code, for tests: a linear v3 file from a list of messages."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ctxtool.cli import cli

HEADER = {"type": "session", "version": 3, "id": "11111111-2222-4333-8444-555555555555",
          "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
T0 = 1767225600000  # 2026-01-01T00:00:00Z in ms


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def usage(context=1, total=None):
    return {"input": context, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total or context + 1,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def asst(text, model="claude-sonnet-4-5", context=1, total=None):
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
            "provider": "anthropic", "model": model, "usage": usage(context, total), "stopReason": "stop"}


def bash(output):
    return {"role": "bashExecution", "command": "make test", "output": output, "exitCode": 0, "cancelled": False,
            "truncated": False}


def pi_session(path, msgs):
    """A linear pi v3 session; items with a non-"message" ``type`` are written as entries (``id`` may be given)."""
    out = [HEADER]
    parent = None
    for i, m in enumerate(msgs):
        m = dict(m)
        eid = m.pop("id", None) or f"e{i:07d}"
        ts = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        if m.get("type") not in (None, "message"):
            e = {**m, "id": eid, "parentId": parent, "timestamp": ts}
        else:
            e = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts,
                 "message": {**m, "timestamp": T0 + i * 1000}}
        out.append(e)
        parent = eid
    with open(path, "w", encoding="utf-8", newline="") as f:
        for o in out:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    return str(path)
