"""Builders shared by the compaction tests (hand-made sessions with known sizes)."""

from __future__ import annotations

import json
import os


from ctxtool.transcript import scan
from ctxtool.validate import errors, validate_entries
from ctxtool.view import provider_view

def _ts(i: int) -> str:
    return f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}.000Z"


def turns(n: int, *, size: int = 400, tag: str = "t") -> list[dict]:
    """n coding turns as neutral dicts: user request, assistant tool call, result, assistant text."""
    out = []
    for k in range(n):
        out.append({"role": "user", "text": f"Request {tag}{k}: please fix src/mod_{k}.py, do not touch tests/. " + "x" * size})
        if k % 3 == 0:
            call = {"name": "edit", "input": {"path": f"src/mod_{k}.py", "oldText": "a", "newText": "b"}}
        elif k % 3 == 1:
            call = {"name": "bash", "input": {"command": f"pytest -q tests/test_mod_{k}.py"}}
        else:
            call = {"name": "read", "input": {"path": f"docs/guide_{k}.md"}}
        out.append({"role": "assistant", "call": call, "id": f"call_{tag}{k}", "text": f"I'll use the helper in src/mod_{k}.py."})
        err = k % 4 == 1
        out.append({"role": "result", "id": f"call_{tag}{k}", "name": call["name"], "error": err,
                    "text": (f"Error: assertion failed in test_mod_{k}" if err else "ok ") + "y" * size})
        out.append({"role": "assistant", "text": f"Done with step {k}. " + "z" * (size // 2)})
    return out


def pi_lines(items: list[dict], *, header: bool = True, start: int = 0, parent: str | None = None) -> list[dict]:
    lines = []
    if header:
        lines.append({"type": "session", "version": 3, "id": "11111111-2222-4333-8444-555555555555",
                      "timestamp": _ts(0), "cwd": "/w/app"})
        lines.append({"type": "model_change", "id": "m0000000", "parentId": None, "timestamp": _ts(0),
                      "provider": "anthropic", "modelId": "claude-x"})
        parent = "m0000000"
    for i, it in enumerate(items, start=start):
        eid = f"{i + 1:08x}"
        if it["role"] == "user":
            msg = {"role": "user", "content": [{"type": "text", "text": it["text"]}], "timestamp": 1}
        elif it["role"] == "assistant":
            content = [{"type": "text", "text": it["text"]}]
            if "call" in it:
                content.append({"type": "toolCall", "id": it["id"], "name": it["call"]["name"], "arguments": it["call"]["input"]})
            msg = {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
                   "model": "claude-x", "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
                   "stopReason": "toolUse" if "call" in it else "stop", "timestamp": 1}
        else:
            msg = {"role": "toolResult", "toolCallId": it["id"], "toolName": it["name"],
                   "content": [{"type": "text", "text": it["text"]}], "isError": it["error"], "timestamp": 1}
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": _ts(i), "message": msg})
        parent = eid
    return lines


def claude_lines(items: list[dict]) -> list[dict]:
    lines = []
    parent = None
    env = {"isSidechain": False, "userType": "external", "cwd": "/w/app", "sessionId": "S1", "version": "2.1.39"}
    call_line = {}
    for i, it in enumerate(items):
        uid = f"00000000-0000-4000-8000-{i:012d}"
        if it["role"] == "user":
            line = {"parentUuid": parent, **env, "type": "user", "message": {"role": "user", "content": it["text"]}}
        elif it["role"] == "assistant":
            content = [{"type": "text", "text": it["text"]}]
            if "call" in it:
                content.append({"type": "tool_use", "id": it["id"], "name": it["call"]["name"], "input": it["call"]["input"]})
                call_line[it["id"]] = uid
            line = {"parentUuid": parent, **env, "type": "assistant", "requestId": f"req_{i}",
                    "message": {"model": "claude-x", "id": f"msg_{i}", "type": "message", "role": "assistant", "content": content,
                                "stop_reason": "tool_use" if "call" in it else "end_turn",
                                "usage": {"input_tokens": 3, "output_tokens": 5}}}
        else:
            line = {"parentUuid": call_line.get(it["id"], parent), **env, "type": "user",
                    "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": it["id"], "content": it["text"],
                                                             "is_error": it["error"]}]}}
        line["uuid"] = uid
        line["timestamp"] = _ts(i)
        lines.append(line)
        parent = uid
    return lines


def messages_lines(items: list[dict]) -> list[dict]:
    lines = []
    for it in items:
        if it["role"] == "user":
            lines.append({"role": "user", "content": it["text"]})
        elif it["role"] == "assistant":
            content = [{"type": "text", "text": it["text"]}]
            if "call" in it:
                content.append({"type": "tool_use", "id": it["id"], "name": it["call"]["name"], "input": it["call"]["input"]})
            lines.append({"role": "assistant", "content": content})
        else:
            lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": it["id"], "content": it["text"],
                                                       "is_error": it["error"]}]})
    return lines


BUILDERS = {"pi": pi_lines, "claude": claude_lines, "messages": messages_lines}


def write_jsonl(path, lines) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for obj in lines:
            f.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return str(path)


def make_session(tmp_path, fmt: str, n: int = 12, *, size: int = 400, name: str | None = None) -> str:
    return write_jsonl(os.path.join(tmp_path, name or f"{fmt}.jsonl"), BUILDERS[fmt](turns(n, size=size)))


def view_entries(path: str):
    t = scan(path, keep=True)
    view = provider_view(t.format_name, t.entries)
    return t, [e for m in view for e in m.entries]


def api_errors(path: str):
    t = scan(path, keep=True)
    return errors(validate_entries(t.format_name, t.entries))


