"""Hand-made damage to a genuine Codex rollout (test support): each corruption is a function of
the recorded lines, so the damaged files are reproducible and small.

``CORRUPTIONS`` maps a name to ``(make, codex)``: ``make(lines) -> bytes`` writes the damaged
file from the recorded file's lines (bytes, each with its newline); ``codex`` says what Codex
0.169 does with the damaged file: ``HEALED`` (it sends the same ``input`` as for the repaired
file: it heals that damage itself), ``SENT`` (it sends the damage as is, which repair must
change) or ``REFUSED`` (it does not resume the file at all).
"""

from __future__ import annotations

import json
import os

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures", "codex-recorded")
SOURCE = os.path.join(FIX, "parallel.jsonl")


def read(path: str = SOURCE) -> list[bytes]:
    with open(path, "rb") as f:
        return f.readlines()


def _find(lines, item_type, call_id):
    for k, ln in enumerate(lines):
        o = json.loads(ln)
        p = o.get("payload") or {}
        if o.get("type") == "response_item" and p.get("type") == item_type and p.get("call_id") == call_id:
            return k
    raise KeyError((item_type, call_id))


def _edit(line: bytes, **payload) -> bytes:
    o = json.loads(line)
    o["payload"].update(payload)
    return json.dumps(o, separators=(",", ":")).encode() + b"\n"


def missing_output(lines):
    k = _find(lines, "function_call_output", "call_rec_p2")
    return b"".join(lines[:k] + lines[k + 1:])


def missing_custom_output(lines):
    k = _find(lines, "custom_tool_call_output", "call_rec_p4")
    return b"".join(lines[:k] + lines[k + 1:])


def lost_last_outputs(lines):
    """The last call's output lost (the last turn cut after its call)."""
    k = _find(lines, "function_call", "call_rec_p5")
    return b"".join(lines[:k + 1])


def orphan_output(lines):
    k = _find(lines, "function_call", "call_rec_p2")
    return b"".join(lines[:k] + lines[k + 1:])


def duplicate_output(lines):
    k = _find(lines, "function_call_output", "call_rec_p1")
    return b"".join(lines[:k + 1] + [lines[k]] + lines[k + 1:])


def second_output(lines):
    k = _find(lines, "function_call_output", "call_rec_p1")
    return b"".join(lines[:k + 1] + [_edit(lines[k], output="a second, different output")] + lines[k + 1:])


def reused_call_id(lines):
    """The second turn's call reuses the first turn's call_id (with its own output)."""
    k = _find(lines, "function_call", "call_rec_p5")
    j = _find(lines, "function_call_output", "call_rec_p5")
    out = list(lines)
    out[k] = _edit(lines[k], call_id="call_rec_p1")
    out[j] = _edit(lines[j], call_id="call_rec_p1")
    return b"".join(out)


def call_written_twice(lines):
    """One call line written twice (no output of its own for the copy)."""
    k = _find(lines, "function_call", "call_rec_p3")
    return b"".join(lines[:k + 1] + [lines[k]] + lines[k + 1:])


def output_before_call(lines):
    """An output line written before its call's line (found by fuzzing: Codex sends it there,
    and the API refuses an output before its call)."""
    k = _find(lines, "function_call_output", "call_rec_p1")
    c = _find(lines, "function_call", "call_rec_p1")
    out = lines[k]
    rest = lines[:k] + lines[k + 1:]
    return b"".join(rest[:c] + [out] + rest[c:])


def output_twice_before_call(lines):
    """An output line written twice, both copies before its call's line (fuzz seed 38: repair
    moved one and left the other, still before the call)."""
    k = _find(lines, "function_call_output", "call_rec_p1")
    c = _find(lines, "function_call", "call_rec_p1")
    out = lines[k]
    rest = lines[:k] + lines[k + 1:]
    return b"".join(rest[:c] + [out, out] + rest[c:])


def reused_call_id_outputs_before_calls(lines):
    """Two calls with one call_id, each output written before its call: the second output goes
    with the second call, renamed with it."""
    k = _find(lines, "function_call", "call_rec_p5")
    j = _find(lines, "function_call_output", "call_rec_p5")
    out = list(lines)
    out[k] = _edit(lines[k], call_id="call_rec_p1")
    moved = _edit(lines[j], call_id="call_rec_p1")
    del out[j]
    out.insert(k, moved)  # before the second call
    first = _find(out, "function_call_output", "call_rec_p1")
    c = _find(out, "function_call", "call_rec_p1")
    line = out.pop(first)
    out.insert(c, line)  # before the first call
    return b"".join(out)


def torn_last_line(lines):
    return b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2]


def bad_line_inside(lines):
    k = _find(lines, "function_call", "call_rec_p5")
    return b"".join(lines[:k] + [b'{"timestamp":"2026-11-23T18:27:01.000Z","type":"response_item","payl\n'] + lines[k:])


def lone_surrogate(lines):
    """A call whose id holds a lone UTF-16 surrogate escape: valid JSON for JavaScript and Python,
    refused by Codex's parser, which skips the line."""
    k = _find(lines, "function_call", "call_rec_p5")
    return b"".join(lines[:k] + [_edit(lines[k], id="fc_\udfff")] + lines[k + 1:])


def invalid_utf8(lines):
    """A byte that is not UTF-8 inside an output's text: Codex skips the line (and sends its own
    "aborted" output for the call); Node-based agents read it as U+FFFD."""
    k = _find(lines, "function_call_output", "call_rec_p1")
    ln = lines[k]
    i = ln.index(b'"output":"') + 12
    return b"".join(lines[:k] + [ln[:i] + b"\xff" + ln[i + 1:]] + lines[k + 1:])


def bom_and_no_final_newline(lines):
    return b"\xef\xbb\xbf" + b"".join(lines).rstrip(b"\n")


HEALED, SENT, REFUSED = "healed", "sent", "refused"
CORRUPTIONS = {
    "missing_output": (missing_output, HEALED),
    "missing_custom_output": (missing_custom_output, HEALED),
    "lost_last_outputs": (lost_last_outputs, HEALED),
    "orphan_output": (orphan_output, HEALED),
    "duplicate_output": (duplicate_output, SENT),
    "second_output": (second_output, SENT),
    "reused_call_id": (reused_call_id, SENT),
    "call_written_twice": (call_written_twice, SENT),
    "output_before_call": (output_before_call, SENT),
    "output_twice_before_call": (output_twice_before_call, SENT),
    "reused_call_id_outputs_before_calls": (reused_call_id_outputs_before_calls, SENT),
    "torn_last_line": (torn_last_line, HEALED),
    "bad_line_inside": (bad_line_inside, HEALED),
    "lone_surrogate": (lone_surrogate, HEALED),
    "invalid_utf8": (invalid_utf8, HEALED),
    "bom_and_no_final_newline": (bom_and_no_final_newline, REFUSED),  # "does not start with session metadata"
}


def write(tmp_path, name: str) -> str:
    path = os.path.join(str(tmp_path), f"{name}.jsonl")
    with open(path, "wb") as f:
        f.write(CORRUPTIONS[name][0](read()))
    return path


def legacy_rollout(path: str, *, compacted: bool = False) -> str:
    """An older rollout, hand-written in the 0.40 shapes (no ordinals, ``instructions`` instead of
    ``base_instructions``, shell calls whose output is a JSON string), optionally with a
    ``compacted`` line without ``replacement_history``."""
    ts = "2025-09-25T21:12:14.126Z"

    def ln(kind, payload):
        return {"timestamp": ts, "type": kind, "payload": payload}

    def msg(role, text, kind="input_text"):
        return ln("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    ctx = {"cwd": "/repo", "approval_policy": "on-request", "sandbox_policy": {"mode": "read-only"},
           "model": "gpt-5-codex", "effort": "high", "summary": "auto"}
    lines = [
        ln("session_meta", {"id": "0199a213-81c0-7800-8aa1-bbab2a035a55", "timestamp": ts, "cwd": "/repo",
                            "originator": "codex_cli_rs", "cli_version": "0.40.0", "instructions": None,
                            "git": {"branch": "main"}}),
        msg("user", "<user_instructions>\nbe brief\n</user_instructions>"),
        msg("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        ln("turn_context", ctx),
        msg("user", "list files"),
        ln("event_msg", {"type": "user_message", "message": "list files", "kind": "plain"}),
        ln("response_item", {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "**Listing**"}],
                             "content": None, "encrypted_content": "gAAAAB"}),
        ln("response_item", {"type": "function_call", "id": "fc_1", "name": "shell",
                             "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls\"]}", "call_id": "call_A"}),
        ln("response_item", {"type": "function_call_output", "call_id": "call_A",
                             "output": "{\"output\":\"README.md\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}),
        ln("event_msg", {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 2899, "cached_input_tokens": 2560, "output_tokens": 100,
                                  "reasoning_output_tokens": 64, "total_tokens": 2999},
            "last_token_usage": {"input_tokens": 2899, "cached_input_tokens": 2560, "output_tokens": 100,
                                 "reasoning_output_tokens": 64, "total_tokens": 2999},
            "model_context_window": 272000}}),
        msg("assistant", "There is README.md.", "output_text"),
        msg("user", "now summarize"),
        msg("assistant", "Summary done.", "output_text"),
    ]
    if compacted:
        lines += [ln("compacted", {"message": "THE SUMMARY TEXT"}), ln("event_msg", {"type": "context_compacted"}),
                  ln("turn_context", ctx), msg("user", "after compaction"), msg("assistant", "ok after", "output_text")]
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(o) + "\n" for o in lines))
    return path
