"""Load hand-made session files with the REAL pi coding agent and pin what it does.

These tests document pi's load semantics (SessionManager.open + buildSessionContext)
that ctxtool's repair has to respect. They need node and the harness install:

    npm ci --prefix tests/pi_harness --ignore-scripts --no-audit --no-fund
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path

import pytest

try:
    from tests.support.pi_agent import load_with_pi, pi_available, pi_unavailable_reason
except ImportError:  # tests/ is not a package: import support/ from beside this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from support.pi_agent import load_with_pi, pi_available, pi_unavailable_reason

pytestmark = [
    pytest.mark.pi,
    pytest.mark.skipif(not pi_available(), reason=f"pi harness unavailable: {pi_unavailable_reason()}"),
]

PI_VERSION = "0.73.1"
SESSION_ID = "1b975ccf-9dbe-4f4e-9d2b-8abe12178979"
HEADER = {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": "2026-01-31T11:07:47.906Z", "cwd": "/home/u/clawd"}
USAGE = {
    "input": 23624,
    "output": 74,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 23698,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
COMPACTION_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
COMPACTION_SUFFIX = "\n</summary>"
HEX8 = re.compile(r"^[0-9a-f]{8}$")


# ---------------------------------------------------------------- builders


def ts(i: int) -> str:
    return f"2026-01-31T11:08:{i:02d}.000Z"


def user(eid, parent, text, i=0):
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts(i),
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1769857667910 + i}}


def assistant(eid, parent, text, i=0, tool_call=None):
    content = [{"type": "text", "text": text}]
    if tool_call:
        content.append({"type": "toolCall", "id": tool_call, "name": "exec", "arguments": {"command": "ls -la"}})
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts(i),
            "message": {"role": "assistant", "content": content, "api": "openai-completions", "provider": "vllm",
                        "model": "qwen3.5-9b", "usage": USAGE, "stopReason": "toolUse" if tool_call else "stop",
                        "timestamp": 1769857667910 + i, "responseId": f"chatcmpl-{i}"}}


def tool_result(eid, parent, call_id, text, i=0):
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts(i),
            "message": {"role": "toolResult", "toolCallId": call_id, "toolName": "exec",
                        "content": [{"type": "text", "text": text}], "isError": False,
                        "timestamp": 1769857667910 + i}}


def write_lines(path: Path, lines) -> Path:
    """Write JSONL; str items are written verbatim (for torn/invalid lines)."""
    text = "".join((ln if isinstance(ln, str) else json.dumps(ln, separators=(",", ":"))) + "\n" for ln in lines)
    path.write_text(text, encoding="utf-8")
    return path


def roles(result):
    return [m["role"] for m in result["messages"]]


def texts(result):
    out = []
    for m in result["messages"]:
        c = m.get("content", m.get("summary"))
        out.append(c if isinstance(c, str) else c[0]["text"])
    return out


def valid_session_lines():
    return [
        HEADER,
        {"type": "model_change", "id": "e93205c2", "parentId": None, "timestamp": ts(0), "provider": "vllm", "modelId": "qwen3.5-9b"},
        {"type": "thinking_level_change", "id": "ef0056ac", "parentId": "e93205c2", "timestamp": ts(0), "thinkingLevel": "low"},
        user("185cc7a2", "ef0056ac", "list the files", 1),
        assistant("1221b2a3", "185cc7a2", "Checking.", 2, tool_call="call_557e"),
        tool_result("d300e455", "1221b2a3", "call_557e", "total 68\nREADME.md", 3),
        assistant("a1b2c3d4", "d300e455", "There is a README.", 4),
    ]


# ---------------------------------------------------------------- (a) valid v3


def test_valid_v3_session_loads_unchanged_with_full_history(tmp_path):
    lines = valid_session_lines()
    path = write_lines(tmp_path / "s.jsonl", lines)
    original = path.read_bytes()

    r = load_with_pi(path)

    assert r["ok"] is True
    assert r["version"] == PI_VERSION
    assert r["rewritten"] is False
    assert r["fileSha256Before"] == r["fileSha256After"]
    assert r["header"] == HEADER
    assert r["entryCount"] == 6
    assert r["entryIds"] == [e["id"] for e in lines[1:]]
    assert r["leafId"] == "a1b2c3d4"
    assert r["treeRoots"] == ["e93205c2"]
    assert r["thinkingLevel"] == "low"
    assert r["model"] == {"provider": "vllm", "modelId": "qwen3.5-9b"}
    assert roles(r) == ["user", "assistant", "toolResult", "assistant"]
    # Messages are the persisted message objects, byte-for-byte.
    assert r["messages"] == [e["message"] for e in lines[3:]]
    assert r["messages"][1]["content"][1] == {"type": "toolCall", "id": "call_557e", "name": "exec", "arguments": {"command": "ls -la"}}
    assert r["messages"][2]["toolCallId"] == "call_557e"
    assert r["llmMessages"] == r["messages"]
    # The caller's file is never handed to pi.
    assert path.read_bytes() == original


# ---------------------------------------------------------------- (b) bad header -> wipe

TORN_HEADER = '{"type":"session","version":3,"id":"1b975ccf-9dbe-4f4e-9d2b-8ab'


@pytest.mark.parametrize(
    "first_line",
    [
        pytest.param(TORN_HEADER, id="torn-header"),
        pytest.param(None, id="missing-header"),
        pytest.param({"type": "session", "version": 3, "id": 12345, "timestamp": ts(0), "cwd": "/w"}, id="non-string-id"),
        pytest.param({"type": "custom", "id": "x", "parentId": None, "timestamp": ts(0), "customType": "t"}, id="not-a-header"),
    ],
)
def test_invalid_first_entry_makes_pi_wipe_the_file(tmp_path, first_line):
    lines = valid_session_lines()[1:]
    if first_line is not None:
        lines = [first_line, *lines]
    path = write_lines(tmp_path / "s.jsonl", lines)
    original = path.read_bytes()

    r = load_with_pi(path)

    assert r["ok"] is True
    assert r["rewritten"] is True
    assert r["messages"] == []
    assert r["entryIds"] == [] and r["entryCount"] == 0 and r["leafId"] is None
    # Whole history gone: the file is now a single brand-new v3 header.
    after = r["fileAfter"].splitlines()
    assert len(after) == 1
    new_header = json.loads(after[0])
    assert new_header["type"] == "session" and new_header["version"] == 3
    assert new_header["id"] != SESSION_ID
    assert r["header"] == new_header
    assert path.read_bytes() == original


def test_torn_line_before_a_valid_header_is_only_skipped(tmp_path):
    # pi checks the first *parsed* entry: an unparseable line ahead of a good header is harmless.
    path = write_lines(tmp_path / "s.jsonl", ['{"type":"sess', *valid_session_lines()])
    r = load_with_pi(path)
    assert r["rewritten"] is False
    assert r["header"] == HEADER
    assert roles(r) == ["user", "assistant", "toolResult", "assistant"]


def test_empty_file_is_rewritten_to_a_bare_header(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("", encoding="utf-8")
    r = load_with_pi(path)
    assert r["rewritten"] is True
    assert r["messages"] == []
    assert json.loads(r["fileAfter"])["type"] == "session"


# ---------------------------------------------------------------- (c) compaction


def test_compaction_summary_then_kept_entries_then_tail(tmp_path):
    summary = "## Decisions\n- use ripgrep"
    lines = [
        HEADER,
        user("u0000001", None, "old question", 1),
        assistant("a0000001", "u0000001", "old answer", 2),
        user("u0000002", "a0000001", "kept question", 3),
        assistant("a0000002", "u0000002", "kept answer", 4),
        {"type": "compaction", "id": "c0000001", "parentId": "a0000002", "timestamp": "2026-04-01T10:00:00.000Z",
         "summary": summary, "firstKeptEntryId": "u0000002", "tokensBefore": 150000,
         "details": {"readFiles": ["a.ts"], "modifiedFiles": ["b.ts"]}, "fromHook": True},
        user("u0000003", "c0000001", "after compaction", 5),
        assistant("a0000003", "u0000003", "final", 6),
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)

    r = load_with_pi(path)

    assert r["rewritten"] is False
    assert roles(r) == ["compactionSummary", "user", "assistant", "user", "assistant"]
    assert texts(r)[1:] == ["kept question", "kept answer", "after compaction", "final"]
    ts_ms = int(datetime.fromisoformat("2026-04-01T10:00:00+00:00").timestamp() * 1000)
    # In-memory role only: no content, just summary/tokensBefore/timestamp (ms of the compaction entry).
    assert r["messages"][0] == {"role": "compactionSummary", "summary": summary, "tokensBefore": 150000, "timestamp": ts_ms}
    # What the LLM receives: a user message wrapping the summary.
    assert r["llmMessages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": COMPACTION_PREFIX + summary + COMPACTION_SUFFIX}],
        "timestamp": ts_ms,
    }
    assert [m["role"] for m in r["llmMessages"]] == ["user", "user", "assistant", "user", "assistant"]


def test_compaction_with_first_kept_id_off_path_keeps_nothing_before_it(tmp_path):
    lines = [
        HEADER,
        user("u0000001", None, "old", 1),
        assistant("a0000001", "u0000001", "old answer", 2),
        {"type": "compaction", "id": "c0000001", "parentId": "a0000001", "timestamp": ts(3),
         "summary": "S", "firstKeptEntryId": "deadbeef", "tokensBefore": 10},
        user("u0000002", "c0000001", "after", 4),
    ]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines))
    assert roles(r) == ["compactionSummary", "user"]
    assert texts(r) == ["S", "after"]


# ---------------------------------------------------------------- (d) v1 / v2 migration


def test_v1_file_is_migrated_and_rewritten_in_place(tmp_path):
    v1 = [
        {"type": "session", "id": "v1sess", "timestamp": "2025-11-01T10:00:00.000Z", "cwd": "/w",
         "provider": "anthropic", "modelId": "claude-sonnet-4-5", "thinkingLevel": "off"},
        {"type": "message", "timestamp": ts(1), "message": {"role": "user", "content": "old question", "timestamp": 1}},
        {"type": "message", "timestamp": ts(2), "message": {"role": "assistant", "content": [{"type": "text", "text": "old answer"}],
         "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": USAGE,
         "stopReason": "stop", "timestamp": 2}},
        {"type": "message", "timestamp": ts(3), "message": {"role": "user", "content": "kept question", "timestamp": 3}},
        # v1 compaction points at a line index (header = index 0).
        {"type": "compaction", "timestamp": ts(4), "summary": "S", "firstKeptEntryIndex": 3, "tokensBefore": 100},
        {"type": "message", "timestamp": ts(5), "message": {"role": "assistant", "content": [{"type": "text", "text": "after"}],
         "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": USAGE,
         "stopReason": "stop", "timestamp": 5}},
    ]
    path = write_lines(tmp_path / "s.jsonl", ["{torn", *v1])  # malformed lines do not survive the rewrite

    r = load_with_pi(path)

    assert r["rewritten"] is True
    assert r["header"] == {**v1[0], "version": 3}  # v1 extras kept, version added
    ids = r["entryIds"]
    assert len(ids) == 5 and all(HEX8.match(i) for i in ids) and len(set(ids)) == 5
    assert r["treeRoots"] == [ids[0]] and r["leafId"] == ids[-1]
    after = [json.loads(ln) for ln in r["fileAfter"].splitlines()]
    assert len(after) == 6  # "{torn" dropped
    assert after[0]["version"] == 3
    assert [e["id"] for e in after[1:]] == ids
    assert [e["parentId"] for e in after[1:]] == [None, *ids[:-1]]  # linear chain
    comp = after[4]
    assert "firstKeptEntryIndex" not in comp and comp["firstKeptEntryId"] == ids[2]
    assert roles(r) == ["compactionSummary", "user", "assistant"]
    assert texts(r) == ["S", "kept question", "after"]


def test_v2_file_is_migrated_hook_message_becomes_custom(tmp_path):
    lines = [
        {**HEADER, "version": 2},
        user("aaaa0001", None, "q", 1),
        {"type": "message", "id": "aaaa0002", "parentId": "aaaa0001", "timestamp": ts(2),
         "message": {"role": "hookMessage", "customType": "h", "content": "injected", "display": True, "timestamp": 2}},
        assistant("aaaa0003", "aaaa0002", "a", 3),
    ]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines))
    assert r["rewritten"] is True
    assert r["header"]["version"] == 3
    assert r["entryIds"] == ["aaaa0001", "aaaa0002", "aaaa0003"]  # ids kept
    assert roles(r) == ["user", "custom", "assistant"]
    assert [m["role"] for m in r["llmMessages"]] == ["user", "user", "assistant"]
    assert '"hookMessage"' not in r["fileAfter"]


# ---------------------------------------------------------------- other damage pi tolerates (or not)


def test_malformed_middle_lines_are_skipped_without_rewrite(tmp_path):
    lines = valid_session_lines()
    path = write_lines(tmp_path / "s.jsonl", [*lines[:4], '{"type":"message","id":"torn', *lines[4:], "garbage"])
    r = load_with_pi(path)
    assert r["rewritten"] is False  # bad lines stay in the file
    assert r["entryIds"] == [e["id"] for e in lines[1:]]
    assert roles(r) == ["user", "assistant", "toolResult", "assistant"]


def test_dangling_parent_id_silently_cuts_off_earlier_history(tmp_path):
    lines = [
        HEADER,
        user("u0000001", None, "first", 1),
        assistant("a0000001", "u0000001", "first answer", 2),
        user("u0000002", "ffffffff", "dangling", 3),
        assistant("a0000002", "u0000002", "second answer", 4),
    ]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines))
    assert r["rewritten"] is False
    assert r["entryCount"] == 4
    assert r["treeRoots"] == ["u0000001", "u0000002"]  # orphan becomes a second root
    assert texts(r) == ["dangling", "second answer"]  # history before the break is lost


def test_consecutive_users_and_unmatched_tool_results_are_kept(tmp_path):
    lines = [
        HEADER,
        user("u0000001", None, "hi", 1),
        user("u0000002", "u0000001", "again", 2),
        tool_result("t0000001", "u0000002", "call_nowhere", "orphan result", 3),
        assistant("a0000001", "t0000001", "ok", 4, tool_call="call_unanswered"),
    ]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines))
    # buildSessionContext/convertToLlm do no pairing or merging repair.
    assert roles(r) == ["user", "user", "toolResult", "assistant"]
    assert [m["role"] for m in r["llmMessages"]] == ["user", "user", "toolResult", "assistant"]
    assert r["messages"][2]["toolCallId"] == "call_nowhere"


def test_duplicate_id_later_entry_shadows_earlier(tmp_path):
    lines = [
        HEADER,
        user("x", None, "first", 1),
        user("y", "x", "second", 2),
        user("x", None, "third", 3),
        user("z", "x", "fourth", 4),
    ]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines))
    assert r["entryIds"] == ["x", "y", "x", "z"]
    assert texts(r) == ["third", "fourth"]  # byId is last-wins: "first"/"second" drop out


def test_duplicate_id_forming_a_parent_cycle_would_hang_pi(tmp_path):
    lines = [HEADER, user("x", None, "a", 1), user("y", "x", "b", 2), user("x", "y", "c", 3)]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines), check=False)
    assert r["ok"] is False and r["hang"] is True  # the harness refuses to enter pi's endless walk
    assert "cycle" in r["error"]


def test_an_id_written_twice_whose_tree_loops_off_the_resumed_branch_is_loaded(tmp_path):
    """An id written again below its first entry, off the branch pi resumes: pi resumes the branch; only its /tree
    view (``getTree``) would loop forever, so the harness reports ``treeLoops`` in place of the roots (judge fuzz seed
    1001, case 0002: the harness timed out, and the case went unjudged)."""
    lines = [HEADER, user("x", None, "a", 1), user("y", "x", "b", 2), user("x", "y", "c", 3),
             user("z", "gone", "d", 4)]
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", lines), timeout=30)
    assert r["ok"] is True and r["treeLoops"] is True and r["treeRoots"] is None
    assert texts(r) == ["d"]

    healthy = load_with_pi(write_lines(tmp_path / "h.jsonl", [HEADER, user("x", None, "a", 1), user("y", "x", "b", 2),
                                                                 user("x", None, "c", 3)]))
    assert healthy["treeLoops"] is False and healthy["treeRoots"] == ["x", "x"]


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        pytest.param("null", "_buildIndex", id="null-line"),
        pytest.param('{"type":"message","id":"q0000001","parentId":null,"timestamp":"x"}', "buildSessionContext", id="message-without-message"),
    ],
)
def test_json_valid_but_wrong_shaped_lines_crash_pi(tmp_path, bad, where):
    r = load_with_pi(write_lines(tmp_path / "s.jsonl", [HEADER, user("u0000001", None, "hi", 1), bad]), check=False)
    assert r["ok"] is False
    assert "TypeError" in r["error"] and where in r["error"]
