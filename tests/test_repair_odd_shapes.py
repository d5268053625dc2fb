"""Repair on odd shapes found by fuzzing: the output is always a file ctxtool reads, valid and final.

Repair wrote a 0-byte file for a lone Claude Code tool result (every command then refused it
as "empty session file"); content that is an object (pi) or ``"message":{}`` (Claude Code)
left API errors and a second repair still wanted changes.
"""

import os

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.errors import InputError
from ctxtool.repair import plan_repair, repair_file
from ctxtool.transcript import scan
from ctxtool.validate import errors, validate_file

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
SESSION = "35a622be-d00c-4830-9238-851a6eff39f1"
ASK_ANSWER = {
    "parentUuid": "b76e9ebb-51d9-4595-8b26-97576cd45c05", "isSidechain": False, "userType": "external", "cwd": "/w",
    "sessionId": SESSION, "version": "2.1.39", "type": "user",
    "message": {"role": "user", "content": [{"tool_use_id": "toolu_01Ask", "type": "tool_result",
                                             "content": "User has answered your questions: \"Which database?\"=\"Postgres\""}]},
    "uuid": "0c5f2a7e-8f1b-4a53-9d7e-1d2c3b4a5f60", "timestamp": "2026-03-01T09:00:05.000Z",
    "toolUseResult": {"questions": [{"question": "Which database?"}], "answers": {"Which database?": "Postgres"}},
}


def write(tmp_path, objs, name="s.jsonl") -> str:
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    return str(path)


def repaired_and_final(tmp_path, path) -> str:
    """Repair to a new file; assert it validates and a second repair finds nothing."""
    out = str(tmp_path / "out.jsonl")
    report = repair_file(path, output=out)
    assert report.written and not errors(report.after)
    v = validate_file(out)
    assert not [x for x in v["violations"] if x["severity"] == "error"] and not v["bad_lines"]
    assert not repair_file(out, check=True).changes
    return out


def test_lone_tool_result_line_is_refused_not_written_empty(tmp_path):
    path = write(tmp_path, [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}]}])
    out = tmp_path / "out.jsonl"
    with pytest.raises(InputError) as e:
        repair_file(path, output=str(out))
    assert str(e.value) == (f"{path}: repair would remove every line (orphan-result): nothing would be left that ctxtool "
                            "or the agent can read; the file is left as it is")
    assert not out.exists()
    r = CliRunner().invoke(cli, ["repair", "-o", str(out), path])
    assert r.exit_code == 3 and r.stderr.strip() == f"Error: {e.value}"
    before = open(path, "rb").read()
    r = CliRunner().invoke(cli, ["repair", path])
    assert r.exit_code == 3 and open(path, "rb").read() == before


def test_lone_claude_tool_result_is_left_as_the_client_reads_it(tmp_path):
    """The real case (a lone AskUserQuestion answer): Claude Code drops the orphan result when it
    resumes, so repair leaves the line where it is and validate names it as a warning."""
    path = write(tmp_path, [ASK_ANSWER])
    assert repair_file(path, check=True).changes == []
    v = validate_file(path)["violations"]
    assert [(x["kind"], x["severity"]) for x in v] == [("unexpected-tool-result", "warning")]


def test_output_whose_first_lines_no_longer_show_the_format_is_refused(tmp_path):
    lines = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}]},
             {"note": "not a message"}]  # the kept line does not say "Messages"
    path = write(tmp_path, lines)
    with pytest.raises(InputError, match="none of the first lines would look like a messages transcript"):
        plan_repair(scan(path, stats=False))


@pytest.mark.parametrize("content", [{}, {"a": 1}, 7, [], [1, "x", None], [{"type": "text", "text": [1, "x"]}]])
def test_pi_user_content_that_is_no_text_gets_the_fallback_once(tmp_path, content):
    lines = [orjson.loads(x) for x in open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read().splitlines()]
    k = next(i for i, o in enumerate(lines) if o.get("message", {}).get("role") == "user")
    lines[k]["message"]["content"] = content
    out = repaired_and_final(tmp_path, write(tmp_path, lines))
    fixed = orjson.loads(open(out, "rb").read().splitlines()[k])
    assert fixed["message"]["content"] == [{"type": "text", "text": "(continue)"}]


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_claude_line_with_an_empty_message_object(tmp_path, role):
    lines = [orjson.loads(x) for x in open(os.path.join(FIX, "claude-shapes", "interrupted.jsonl"), "rb").read().splitlines()]
    k = next(i for i, o in enumerate(lines) if o.get("type") == role and i > 0)
    lines[k]["message"] = {}
    repaired_and_final(tmp_path, write(tmp_path, lines))


def test_blank_text_block_in_an_assistant_message_is_removed(tmp_path):
    objs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "done"}]},
            {"role": "user", "content": "thanks"}]
    path = write(tmp_path, objs)
    report = repair_file(path, check=True)
    assert [(c.kind, c.action, c.line) for c in report.changes] == [("blank-text", "dropped", 2)]
    out = repaired_and_final(tmp_path, path)
    assert orjson.loads(open(out, "rb").read().splitlines()[1])["content"] == [{"type": "text", "text": "done"}]


def test_duplicate_last_line_keeps_pi_where_it_was(tmp_path):
    """The last line written twice: pi resumes at that entry (its first copy), so repair keeps it there."""
    lines = open(os.path.join(FIX, "repair", "pi-separated-orphan.jsonl"), "rb").read().splitlines()
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines + [lines[1]]) + b"\n")
    out = repaired_and_final(tmp_path, str(path))
    kinds = [c.kind for c in repair_file(str(path), check=True).changes]
    assert kinds.count("duplicate-line") == 1 and "leaf" in kinds
    last = orjson.loads(open(out, "rb").read().splitlines()[-1])
    assert last["customType"] == "ctxtool.repair-leaf" and last["parentId"] == orjson.loads(lines[1])["id"]


def test_claude_result_before_its_parent_is_gathered_not_moved(tmp_path):
    """Claude Code gathers a result to its call wherever the line is (judged): nothing to move."""
    from ctxtool.view import sent_messages

    src = os.path.join(FIX, "repair", "claude-orphan-after-boundary.jsonl")
    lines = open(src, "rb").read().splitlines()
    del lines[2]  # the boundary: the result now stands after its call's turn, under a lost parent
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    changes = repair_file(str(path), check=True).changes
    assert not any(c.kind == "moved-result" for c in changes)
    out = repaired_and_final(tmp_path, str(path))
    sent = sent_messages(scan(out))
    call = next(k for k, m in enumerate(sent) if m["role"] == "assistant" and any(
        b.get("type") == "tool_use" and b.get("id") == "toolu_01Grep" for b in m["content"]))
    assert sent[call + 1]["content"][0]["tool_use_id"] == "toolu_01Grep"


def test_synthetic_results_come_before_a_moved_message_with_text(tmp_path):
    objs = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}},
                                              {"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
            {"role": "user", "content": "interjection"},
            {"role": "user", "content": [{"type": "text", "text": "slow"}, {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    out = repaired_and_final(tmp_path, write(tmp_path, objs))
    got = [orjson.loads(x) for x in open(out, "rb").read().splitlines()]
    assert [b.get("tool_use_id") for m in got[1:3] for b in m["content"] if b["type"] == "tool_result"] == ["t2", "t1"]


def test_call_under_a_renamed_duplicate_id_keeps_its_link(tmp_path):
    env = {"isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": SESSION, "version": "2.1.39"}
    u1 = {**env, "parentUuid": None, "type": "user", "message": {"role": "user", "content": "go"},
          "uuid": "00000000-0000-4000-8000-000000000001", "timestamp": "2026-03-01T09:00:00.000Z"}
    a1 = {**env, "parentUuid": u1["uuid"], "type": "assistant", "uuid": "00000000-0000-4000-8000-000000000002",
          "timestamp": "2026-03-01T09:00:01.000Z", "requestId": "r1",
          "message": {"id": "m1", "role": "assistant", "model": "claude-opus-4-6", "stop_reason": "end_turn",
                      "content": [{"type": "text", "text": "sure"}]}}
    u2 = {**u1, "parentUuid": a1["uuid"], "uuid": "00000000-0000-4000-8000-000000000003", "message": {"role": "user", "content": "read it"}}
    a2 = {**a1, "parentUuid": u2["uuid"], "requestId": "r2",  # the same uuid as a1, written again
          "message": {**a1["message"], "id": "m2", "stop_reason": "tool_use",
                      "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}}]}}
    out = repaired_and_final(tmp_path, write(tmp_path, [u1, a1, u2, a2]))
    got = [orjson.loads(x) for x in open(out, "rb").read().splitlines()]
    assert len(got) == 4 and got[3]["uuid"] != a1["uuid"] and got[3]["parentUuid"] == u2["uuid"]
    # the unanswered call is the last message: the client sends its own 'interrupted' result (judged)
    from ctxtool.claude_chain import INTERRUPTED_RESULT
    from ctxtool.view import sent_messages

    assert sent_messages(scan(out))[-2]["content"][0]["content"] == INTERRUPTED_RESULT


def test_line_left_with_no_content_after_its_orphan_result_goes_is_dropped(tmp_path):
    objs = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": [True, {"type": "tool_result", "tool_use_id": "gone", "content": "x"}]},
            {"role": "user", "content": "more"}]
    path = write(tmp_path, objs)
    # the stray `true` is no content block (the API refuses it): removed too
    assert [(c.kind, c.action, c.line) for c in repair_file(path, check=True).changes] == [
        ("invalid-block", "dropped", 3), ("orphan-result", "dropped", 3)]
    out = repaired_and_final(tmp_path, path)
    assert [orjson.loads(x)["content"] for x in open(out, "rb").read().splitlines()] == ["hello", "hi", "more"]


def test_pi_parent_written_after_its_child_is_left_alone(tmp_path):
    """pi links by id: a toolResult line written before its assistant (its parent) is read whole,
    exactly as the file in order (checked with the pi harness), so repair leaves the file alone."""
    lines = open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read().splitlines()
    lines[5], lines[6] = lines[6], lines[5]  # the toolResult line before its assistant (its parent)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert repair_file(str(path), check=True).changes == []


@pytest.mark.pi
def test_pi_parent_written_after_its_child_in_a_damaged_file_keeps_what_pi_reads(tmp_path):
    """When the file is rewritten anyway (here: an orphan result to drop), a line written before its
    parent is moved after it; pi then reads the repaired file as it reads the in-order file repaired."""
    from tests.support.pi_agent import load_with_pi

    lines = open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read().splitlines()
    orphan = orjson.loads(lines[6])
    orphan.update(id="a10000ff", parentId="a1000009")
    orphan["message"]["toolCallId"] = "toolu_gone"
    damaged = lines + [orjson.dumps(orphan)]
    swapped = list(damaged)
    swapped[5], swapped[6] = swapped[6], swapped[5]
    ref, path = tmp_path / "ref.jsonl", tmp_path / "s.jsonl"
    ref.write_bytes(b"\n".join(damaged) + b"\n")
    path.write_bytes(b"\n".join(swapped) + b"\n")
    repair_file(str(ref), backup=False)
    report = repair_file(str(path), backup=False)
    assert [c.kind for c in report.changes][0] == "parent-order"
    assert load_with_pi(path)["llmMessages"] == load_with_pi(ref)["llmMessages"]
    assert repair_file(str(path), check=True).changes == []


def test_a_line_appended_before_the_parent_order_rescan_is_written_once(tmp_path, monkeypatch):
    """The parent-order re-plan reads the file again: a line an agent appended in between is in
    that read, so it is not carried over a second time (was: written twice), and it hangs where
    it was written."""
    import ctxtool.repair as repair_mod

    lines = open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read().splitlines()
    orphan = orjson.loads(lines[6])
    orphan.update(id="a10000ff", parentId="a1000009")
    orphan["message"]["toolCallId"] = "toolu_gone"
    swapped = lines + [orjson.dumps(orphan)]
    swapped[5], swapped[6] = swapped[6], swapped[5]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(swapped) + b"\n")
    late = {"type": "message", "id": "late0001", "parentId": orjson.loads(lines[-1])["id"], "timestamp": "2026-03-01T11:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "appended"}], "timestamp": 1}}
    real, reads = repair_mod.scan, []

    def scan_then_append(*a, **k):
        t = real(*a, **k)
        if not reads:
            with open(path, "ab") as f:
                f.write(orjson.dumps(late) + b"\n")
        reads.append(t.size)
        return t

    monkeypatch.setattr(repair_mod, "scan", scan_then_append)
    report = repair_file(str(path), backup=False)
    assert len(reads) == 2 and report.written
    ids = [orjson.loads(ln).get("id") for ln in path.read_bytes().splitlines()]
    assert ids.count("late0001") == 1


def _call_with_a_list_id(tmp_path):
    head = {"type": "session", "version": 3, "id": "3f1c2a4e-0000-4000-8000-0000000000bb", "timestamp": "2026-04-01T10:00:00.000Z",
            "cwd": "/w"}
    user = {"type": "message", "id": "c0000001", "parentId": None, "timestamp": "2026-04-01T10:00:01.000Z",
            "message": {"role": "user", "content": "read a.txt", "timestamp": 1}}
    call = {"type": "message", "id": [], "parentId": "c0000001", "timestamp": "2026-04-01T10:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "x", "name": "read", "arguments": {}}],
                        "stopReason": "toolUse", "timestamp": 2}}
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in (head, user, call)))
    return str(path)


def test_a_call_whose_id_is_no_string_gets_one_for_its_synthetic_result(tmp_path):
    """pi (version 3): the last assistant's id is a list, and its call has no result. The synthetic
    result had no parent to follow (its call's id was not a string), so pi resumed at the result alone,
    an orphan: a second repair dropped it (fuzz seed 909). The call gets an id of its own first."""
    path = _call_with_a_list_id(tmp_path)
    report = repair_file(path, backup=False)
    assert [(c.kind, c.action) for c in report.changes] == [("invalid-id", "rewritten"), ("missing-result", "inserted")]
    rows = [orjson.loads(x) for x in open(path, "rb")]
    assert isinstance(rows[2]["id"], str) and rows[3]["parentId"] == rows[2]["id"]
    assert repair_file(path, check=True).changes == []


@pytest.mark.pi
def test_pi_resumes_the_call_with_its_synthetic_result(tmp_path):
    from tests.support.pi_agent import load_with_pi

    path = _call_with_a_list_id(tmp_path)
    repair_file(path, backup=False)
    assert [m["role"] for m in load_with_pi(path)["llmMessages"]] == ["user", "assistant", "toolResult"]


def _turn(*user_lines):
    calls = [{"type": "tool_use", "id": f"t{k}", "name": "ls", "input": {}} for k in range(1, 4)]
    return ([{"role": "user", "content": "go"}, {"role": "assistant", "content": calls}] + list(user_lines)
            + [{"role": "assistant", "content": "done"}])


def _res(k, text=None):
    blocks = [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "x"}]
    return {"role": "user", "content": blocks + ([{"type": "text", "text": text}] if text else [])}


def test_results_after_a_line_with_text_are_moved_before_it(tmp_path):
    """Messages JSONL: consecutive user lines merge into one message, whose results must come first."""
    out = repaired_and_final(tmp_path, write(tmp_path, _turn(_res(1, "note"), _res(2), _res(3))))
    got = [orjson.loads(x) for x in open(out, "rb").read().splitlines()]
    assert [b.get("tool_use_id") or b["text"] for m in got[2:5] for b in m["content"]] == ["t2", "t3", "t1", "note"]


@pytest.mark.parametrize("lines", [
    [_res(1, "a"), _res(2, "b"), _res(3)],
    [_res(1, "a"), _res(2), _res(3, "b")],
    [{"role": "user", "content": "txt"}, _res(1, "a"), _res(2, "b"), _res(3)],
    [_res(1, "a"), _res(2, "b")],  # t3 has no result
], ids=["two-texts", "text-first-and-last", "text-line-first", "missing-result"])
def test_results_of_lines_with_text_are_gathered_into_the_first(tmp_path, lines):
    """No order of whole lines puts every result first when two of them hold text after their results:
    the later results move into the first such line (their blocks as they are), nothing else is lost."""
    path = write(tmp_path, _turn(*lines))
    out = repaired_and_final(tmp_path, path)
    got = [orjson.loads(x) for x in open(out, "rb").read().splitlines()]
    first = got[2]["content"]
    assert [b.get("tool_use_id") for b in first[:3]] == ["t1", "t2", "t3"]
    before = [orjson.dumps(b) for m in _turn(*lines) for b in (m["content"] if isinstance(m["content"], list) else [m["content"]])]
    after = [orjson.dumps(b) for m in got for b in (m["content"] if isinstance(m["content"], list) else [m["content"]])]
    synthetic = [b for b in after if b not in before]
    assert sorted(b for b in after if b in before) == sorted(before)  # every block kept, once
    assert len(synthetic) == (1 if len(lines) == 2 else 0)


def test_claude_lone_blank_prompts_are_fixed_with_one_look_at_the_context(tmp_path, monkeypatch):
    """A lone prompt of an empty string, which Claude Code sends as written (the API refuses it), gets the fallback;
    a blank prompt beside other user lines of its turn does not (the client leaves it out). However many such lines
    the file holds, the planner reads the context once (it read it once per line)."""
    from ctxtool import repair, view

    def line(k, parent, kind, content):
        return {"parentUuid": parent, "isSidechain": False, "type": kind, "sessionId": SESSION, "cwd": "/w",
                "uuid": f"00000000-0000-4000-8000-{k:012d}", "timestamp": f"2026-03-01T09:{k // 60 % 60:02d}:{k % 60:02d}.000Z",
                "message": {"role": kind, "content": content, **({"id": f"msg_{k}", "model": "claude-x",
                                                                 "stop_reason": "end_turn"} if kind == "assistant" else {})}}
    objs, parent = [], None
    for k in range(0, 600, 3):
        objs.append(line(k, parent, "user", ""))  # a lone empty prompt
        objs.append(line(k + 1, objs[-1]["uuid"], "assistant", [{"type": "text", "text": f"answer {k}"}]))
        parent = objs[-1]["uuid"]
    objs.append(line(900, parent, "user", "  "))  # blank, but beside another prompt line of its turn
    objs.append(line(901, objs[-1]["uuid"], "user", "go on"))
    objs.append(line(902, objs[-1]["uuid"], "assistant", [{"type": "text", "text": "done"}]))
    path = write(tmp_path, objs)
    looks = []
    real = view.context_entries
    for module in (repair, view):  # (the view's grouping reads it there)
        monkeypatch.setattr(module, "context_entries", lambda *a, **k: looks.append(1) or real(*a, **k))
    plan = plan_repair(scan(path, stats=False))
    fixed = [c.line for c in plan.changes if c.kind == "blank-user"]
    assert fixed == [1 + 2 * n for n in range(200)]  # every lone empty prompt, not the blank one beside "go on"
    assert len(looks) <= 2  # (the hygiene's one look; the view the caller may build)
