"""pi resumes at the last line of the file: a repair that removes the last line must not
move the session onto another branch."""

import orjson
import pytest

from ctxtool.repair import repair_file
from ctxtool.repair_order import LEAF_MARKER
from ctxtool.validate import errors, validate_file
from tests.support.pi_agent import load_with_pi

H = {"type": "session", "version": 3, "id": "3f1c2a4e-0000-4000-8000-000000000001", "timestamp": "2026-04-01T10:00:00.000Z", "cwd": "/w"}


def msg(i, parent, m, ts):
    return {"type": "message", "id": i, "parentId": parent, "timestamp": f"2026-04-01T10:00:{ts:02d}.000Z", "message": m}


def branched(tmp_path):
    """An assistant whose call x has no result, a sibling branch off it, and a last line holding
    an orphan result (call y) under the assistant: repair drops that last line."""
    lines = [
        H,
        msg("a0000001", None, {"role": "user", "content": "list files", "timestamp": 1}, 1),
        msg("a0000002", "a0000001", {"role": "assistant", "content": [{"type": "toolCall", "id": "x", "name": "ls", "arguments": {}}],
                                     "stopReason": "toolUse", "timestamp": 2}, 2),
        msg("a0000003", "a0000002", {"role": "assistant", "content": [{"type": "text", "text": "abandoned branch"}],
                                     "stopReason": "stop", "timestamp": 3}, 3),
        msg("a0000004", "a0000002", {"role": "toolResult", "toolCallId": "y", "toolName": "ls",
                                     "content": [{"type": "text", "text": "a.txt"}], "isError": False, "timestamp": 4}, 4),
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in lines))
    return str(path)


def test_repair_keeps_the_branch_when_the_last_line_goes(tmp_path):
    path = branched(tmp_path)
    rep = repair_file(path, backup=False)
    kinds = [c.kind for c in rep.changes]
    assert "orphan-result" in kinds and "missing-result" in kinds and "leaf" in kinds
    rows = [orjson.loads(x) for x in open(path, "rb")]
    last = rows[-1]
    assert last["type"] == "custom" and last["customType"] == LEAF_MARKER
    synthetic = next(r for r in rows if r.get("message", {}).get("toolCallId") == "x")
    assert last["parentId"] == synthetic["id"]  # under the repaired branch's leaf
    assert not errors(rep.after)
    assert not [v for v in validate_file(path)["violations"] if v["severity"] == "error"]
    again = repair_file(path, check=True)
    assert again.changes == []


def test_no_marker_when_the_last_line_stays_on_the_branch(tmp_path):
    path = branched(tmp_path)
    rows = [orjson.loads(x) for x in open(path, "rb")]
    rows[-1]["message"]["toolCallId"] = "x"  # now the answer to x: nothing to drop
    open(path, "wb").write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    rep = repair_file(path, check=True)
    assert "leaf" not in [c.kind for c in rep.changes]


@pytest.mark.pi
def test_pi_resumes_the_repaired_branch(tmp_path):
    path = branched(tmp_path)
    repair_file(path, backup=False)
    result = load_with_pi(path)
    assert result["rewritten"] is False
    texts = orjson.dumps(result["messages"]).decode()
    assert "abandoned branch" not in texts
    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "toolResult"]


def damaged_copy(tmp_path, header=True):
    """The last line is a damaged copy of the one before it (its type is not a string), with the
    same id; the line before holds a call with no result. Found by the fuzz test (seed 2026, with
    no header: the copy is then dropped as a line before the header)."""
    call = msg("a0000002", "a0000001", {"role": "assistant", "content": [{"type": "toolCall", "id": "x", "name": "ls",
                                                                          "arguments": {}}],
                                        "stopReason": "toolUse", "timestamp": 2}, 2)
    lines = [H] if header else []
    lines += [msg("a0000001", None, {"role": "user", "content": "list files", "timestamp": 1}, 1), call,
              {**call, "type": {"type": {}}}]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in lines))
    return str(path)


@pytest.mark.parametrize("header", [True, False])
def test_a_dropped_copy_of_the_last_line_leaves_its_first_copy_repaired(tmp_path, header):
    """The kept line with the dropped one's id stands on the path in its place (in the repaired file
    the id is its own): its open call gets its result in the same repair, which a second repair then
    leaves alone. Before, the path ended at the dropped copy, nothing was paired and the repaired file
    still drew an API error."""
    path = damaged_copy(tmp_path, header)
    rep = repair_file(path, backup=False)
    assert "missing-result" in [c.kind for c in rep.changes]
    assert not errors(rep.after)
    assert not [v for v in validate_file(path)["violations"] if v["severity"] == "error"]
    assert repair_file(path, check=True).changes == []


@pytest.mark.pi
@pytest.mark.parametrize("header", [True, False])
def test_pi_loads_the_repaired_copy_with_its_call_answered(tmp_path, header):
    path = damaged_copy(tmp_path, header)
    repair_file(path, backup=False)
    result = load_with_pi(path)
    assert result["rewritten"] is False
    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "toolResult"]
