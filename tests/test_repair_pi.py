"""The owning agent is the judge: repaired pi files load in the real pi coding agent
(SessionManager.open + buildSessionContext), unchanged, with their whole history."""

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtool import synth
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.view import context_entries
from tests.support.pi_agent import load_with_pi, turn_with_pi

pytestmark = pytest.mark.pi

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "repair")
PI_CASES = sorted(n[:-6] for n in os.listdir(FIXTURES) if n.startswith("pi-") and n.endswith(".jsonl") and ".expected" not in n)


def our_roles(path):
    t = scan(path)
    return [e.role for e in context_entries("pi", t.entries)]


def pi_roles(result):
    return [m["role"] for m in result["messages"]]


@pytest.mark.parametrize("case", PI_CASES)
def test_repaired_fixture_loads_in_pi_with_whole_history(tmp_path, case):
    path = str(tmp_path / f"{case}.jsonl")
    shutil.copy(os.path.join(FIXTURES, f"{case}.jsonl"), path)
    repair_file(path, backup=False)
    result = load_with_pi(path)
    assert result["ok"], result
    if case.startswith("pi-v1"):
        assert result["rewritten"]  # pi migrates every v1 file to v3 on open; nothing is lost
    else:
        assert not result["rewritten"], "pi rewrote (wiped or migrated) the repaired file"
    assert pi_roles(result) == our_roles(path)
    assert result["entryCount"] == sum(1 for e in scan(path).entries if e.kind != "header")


def test_unrepaired_torn_header_is_wiped_by_pi_but_repaired_one_is_not(tmp_path):
    path = str(tmp_path / "s.jsonl")
    shutil.copy(os.path.join(FIXTURES, "pi-torn-header.jsonl"), path)
    assert load_with_pi(path)["rewritten"] is True  # the failure repair exists for
    repair_file(path, backup=False)
    result = load_with_pi(path)
    assert not result["rewritten"] and len(result["messages"]) == 5
    assert result["header"]["id"] == "7d3f4c2a-5b1e-4e8f-9a6c-2d1b0e9f8a7c"  # salvaged, not invented


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(st.sampled_from(sorted(k for k, f in synth.CORRUPTIONS.items() if "pi" in f)), min_size=1, max_size=4, unique=True),
    seed=st.integers(0, 1000),
)
def test_generated_corruptions_load_in_pi_after_repair(tmp_path_factory, kinds, seed):
    if "missing_header" in kinds and "invalid_header" in kinds:
        kinds.remove("invalid_header")
    path = str(tmp_path_factory.mktemp("pi") / "s.jsonl")
    synth.write_session(path, "pi", seed=seed, turns=10, corruptions=kinds)
    repair_file(path, backup=False)
    result = load_with_pi(path)
    assert result["ok"] and not result["rewritten"], (kinds, result.get("error"))
    assert pi_roles(result) == our_roles(path)


def _branched(tmp_path, version: str) -> str:
    """pi-clean with a second branch off the first user message (a user message and an answer),
    its header's version written as ``version`` (raw JSON)."""
    lines = open(os.path.join(FIXTURES, "pi-clean.jsonl"), "rb").read().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"version":3', b'"version":' + version.encode())
    ts = '"timestamp":"2026-04-17T02:40:00.000Z"'
    lines.append(('{"type":"message","id":"b2000001","parentId":"a1000004",%s,"message":{"role":"user",'
                  '"content":[{"type":"text","text":"Another way, then."}],"timestamp":1776393600000}}\n' % ts).encode())
    lines.append(('{"type":"message","id":"b2000002","parentId":"b2000001",%s,"message":{"role":"assistant",'
                  '"content":[{"type":"text","text":"Sure."}],"stopReason":"stop","timestamp":1776393600100}}\n' % ts).encode())
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(b"".join(lines))
    return path


@pytest.mark.parametrize("version,linear", [("3", False), ('""', True), ("1", True), ("1.5", True), ("null", True),
                                            ('"3"', False), ("1e400", False), ("{}", False)])
def test_the_header_version_pi_reads_decides_tree_or_file_order(tmp_path, version, linear):
    """pi migrates a file whose header says version 1 (compared as JavaScript compares: "" and
    null are below 2, "3" is 3, an object is NaN) by linking every entry to the one before it in
    file order: both branches are then sent. The view is what pi sends either way."""
    path = _branched(tmp_path, version)
    roles = our_roles(path)
    assert pi_roles(load_with_pi(path)) == roles
    assert len(roles) == (7 if linear else 3)


@pytest.mark.parametrize("version", ['""', "1", "null"])
def test_repair_writes_back_the_version_of_a_file_whose_entries_carry_ids(tmp_path, version):
    path = _branched(tmp_path, version)
    r = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in r.changes] == [("header", "rewritten", 1)]
    assert open(path, "rb").readline().startswith(b'{"type":"session","version":3,"id":"7d3f4c2a')
    result = load_with_pi(path)
    assert not result["rewritten"] and pi_roles(result) == our_roles(path) == ["user", "user", "assistant"]
    assert not repair_file(path, check=True).changed


def test_compact_asks_for_repair_first_when_pi_would_read_the_file_as_version_1(tmp_path):
    from click.testing import CliRunner

    from ctxtool.cli import cli

    path = _branched(tmp_path, '""')
    before = open(path, "rb").read()
    r = CliRunner().invoke(cli, ["compact", "--summarizer", "extractive", path])
    assert r.exit_code == 3 and "broken structure (header 1); run `ctxtool repair` first" in r.output
    assert open(path, "rb").read() == before


def test_bytes_that_are_not_utf8_are_read_as_pi_reads_them_and_the_line_is_kept(tmp_path):
    """Node reads the file as text with U+FFFD for each bad sequence: pi keeps the line (here a tool
    result), so the view keeps it and repair leaves the file alone (it dropped the line, a real tool
    output, as a bad line)."""
    lines = open(os.path.join(FIXTURES, "pi-clean.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if b'"toolCallId":"toolu_01A"' in ln)
    i = lines[k].index(b'"text":"') + 10
    lines[k] = lines[k][:i] + b"\xff" + lines[k][i + 1:]
    path = str(tmp_path / "s.jsonl")
    open(path, "wb").write(b"".join(lines))
    result = load_with_pi(path)
    assert pi_roles(result) == our_roles(path) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert "\ufffd" in json.dumps(result["llmMessages"][2]["content"], ensure_ascii=False)
    assert scan(path).bad == []
    assert not repair_file(path, check=True).changed


RECORDED = os.path.join(os.path.dirname(__file__), "..", "fixtures", "pi-recorded", "branched.jsonl")


@pytest.mark.parametrize("number", [b"1" + b"0" * 4300, b"9" * 5000, b"-" + b"7" * 4301, b"1" + b"0" * 400])
def test_an_integer_longer_than_python_reads_is_read_as_pi_reads_it_and_the_line_is_kept(tmp_path, number):
    """JSON.parse reads an integer of any length (beyond double range: Infinity); Python's int refuses more than
    4,300 digits, and repair dropped such a line (a tool call's) as invalid JSON (found by an adversarial review)."""
    lines = open(RECORDED, "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if b'"arguments":{"path":"a.txt"}' in ln)
    lines[k] = lines[k].replace(b'"arguments":{"path":"a.txt"}', b'"arguments":{"path":"a.txt","n":' + number + b"}")
    path = str(tmp_path / "s.jsonl")
    open(path, "wb").write(b"".join(lines))
    result = load_with_pi(path)
    assert pi_roles(result) == our_roles(path)
    assert scan(path).bad == []
    assert not repair_file(path, check=True).changed


@pytest.mark.parametrize("version,linear", [("3", False), ('""', True), ("null", True), ("1.5", True), ('"3"', False),
                                            ("1e400", False)])
def test_a_session_pi_wrote_is_read_by_its_header_version_as_pi_reads_it(tmp_path, version, linear):
    """The same check as above on a session written by pi's own SessionManager
    (``tests/pi_harness/record_session.mjs``: a tool turn, then a branch back to the first prompt)."""
    data = open(RECORDED, "rb").read()
    head, rest = data.split(b"\n", 1)
    head = head.replace(b'"version":3', b'"version":' + version.encode())
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(head + b"\n" + rest)
    roles = our_roles(path)
    assert pi_roles(load_with_pi(path)) == roles
    assert len(roles) == (6 if linear else 3)
    if linear:
        r = repair_file(path, backup=False)
        assert [(c.kind, c.line) for c in r.changes] == [("header", 1)]
        result = load_with_pi(path)
        assert not result["rewritten"] and pi_roles(result) == our_roles(path) == ["user", "user", "assistant"]


def _recorded_with_last_id(tmp_path, value: bytes | None) -> str:
    """pi's own branched session with the last line's id written as ``value`` (None: no id at all)."""
    lines = open(RECORDED, "rb").read().splitlines(keepends=True)
    k = lines[-1].index(b'"id":"')
    end = lines[-1].index(b'",', k) + 2
    lines[-1] = lines[-1][:k] + (b'"id":' + value + b"," if value is not None else b"") + lines[-1][end:]
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(b"".join(lines))
    return path


def test_a_last_line_whose_id_is_null_makes_pi_resume_with_no_message_and_repair_names_it(tmp_path):
    """pi resumes at the last line's id (``leafId``); written null, that is no entry and ``buildSessionContext``
    returns no message at all (judge fuzz seed 234, case 0066). The view sends nothing too; repair gives the line an
    id, and pi then sends its branch and keeps it across a turn."""
    path = _recorded_with_last_id(tmp_path, b"null")
    assert pi_roles(load_with_pi(path)) == our_roles(path) == []
    r = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in r.changes] == [("invalid-id", "rewritten", 7)]
    assert "would resume with no message" in r.changes[0].detail
    result = load_with_pi(path)
    assert not result["rewritten"] and pi_roles(result) == our_roles(path) == ["user", "user", "assistant"]
    assert turn_with_pi(path) == {"before": 3, "after": 5}
    assert not repair_file(path, check=True).changed


@pytest.mark.parametrize("value", [None, b'""', b"0", b"false", b"{}", b"[1]", b"1e400"])
def test_a_last_line_with_an_id_of_no_string_keeps_its_history_only_until_the_next_turn(tmp_path, value):
    """With the last line's id absent, empty or of another type pi resumes at that line all the same (as the view
    does), but links the next line it writes to that id: the session opened again after a turn is that turn alone.
    Repair gives the line an id; the history then outlives the turn."""
    path = _recorded_with_last_id(tmp_path, value)
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ["user", "user", "assistant"]
    assert turn_with_pi(path) == {"before": 3, "after": 2}  # the harm
    r = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in r.changes] == [("invalid-id", "rewritten", 7)]
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ["user", "user", "assistant"]
    assert turn_with_pi(path) == {"before": 3, "after": 5}


@pytest.mark.parametrize("value", [b"7", b"true", b"-2.5"])
def test_a_last_line_whose_id_is_a_number_or_true_keeps_its_history_and_is_left_alone(tmp_path, value):
    """pi's map finds the next line's parent by a number or true as by a string: the history outlives a turn, and
    repair does not touch the file."""
    path = _recorded_with_last_id(tmp_path, value)
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ["user", "user", "assistant"]
    assert turn_with_pi(path) == {"before": 3, "after": 5}
    assert not repair_file(path, check=True).changed


@pytest.mark.parametrize("leaf", [b"absent", b"null"])
def test_a_tree_whose_entries_lost_their_ids_is_read_as_pi_reads_it_and_repaired_to_file_order(tmp_path, leaf):
    """A header of version 3 over entries with no id: pi walks the links from the last line and finds no parent,
    so it sends the last line alone (or nothing, its id written null); the view did so in file order. Repair writes
    version 1 back: pi links the lines in file order then (every line sent, both branches), as for any version 1 file."""
    lines = open(RECORDED, "rb").read().splitlines(keepends=True)
    body = []
    for n, ln in enumerate(lines[1:], 2):
        k = ln.index(b'"id":"')
        gone = b'"id":null,' if leaf == b"null" and n == len(lines) else b""
        body.append(ln[:k] + gone + ln[ln.index(b'",', k) + 2:])
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(lines[0] + b"".join(body))
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ([] if leaf == b"null" else ["assistant"])
    r = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in r.changes] == [("header", "rewritten", 1)]
    assert open(path, "rb").readline().startswith(b'{"type":"session","version":1,')
    result = load_with_pi(path)
    assert result["rewritten"]  # pi migrates a version 1 file on open
    assert pi_roles(result) == our_roles(path) == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert turn_with_pi(path) == {"before": 6, "after": 8}


def test_a_last_line_repair_drops_gets_no_id_first(tmp_path):
    """A last line with no id that repair drops anyway (a message entry without a message: pi's buildSessionContext
    throws on it) is only dropped; the line before it is the leaf then, and has its id."""
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(open(RECORDED, "rb").read() + b'{"type":"message"}\n')
    r = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in r.changes] == [("malformed-entry", "dropped", 8)]
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ["user", "user", "assistant"]


@pytest.mark.parametrize("tail", [b"5\n", b'"x"\n', b"[]\n", b"true\n", b"[1, 2]\n", b"7\n\n  \n", b'9\n{"type": "mess\n',
                                  b'3\n{"type":"custom","id":"c0000001","parentId":"c5d5e0a9","customType":"x","data":{}}\n'])
def test_a_last_line_of_json_that_is_no_object_is_where_pi_resumes(tmp_path, tail):
    """pi keeps every line JSON.parse reads: when the last of them is a number, a string, an array or true, pi resumes
    at it and sends no message (blank and torn lines after it are skipped; an object after it is the leaf again). The
    view does the same; repair drops the line, and pi then resumes the branch before it."""
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(open(RECORDED, "rb").read() + tail)
    ends_at_value = not tail.rstrip().endswith(b"}")
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ([] if ends_at_value else ["user", "user", "assistant"])
    repair_file(path, backup=False)
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ["user", "user", "assistant"]


def test_repair_pairs_the_branch_before_a_last_line_of_json_that_is_no_object(tmp_path):
    """The line goes, and the branch before it is what pi resumes in the repaired file: its call with no result gets
    one (repair read that branch, not the empty one the damaged file gives)."""
    lines = open(RECORDED, "rb").read().splitlines(keepends=True)
    call = json.loads(lines[2])
    call.update(id="zz000001", parentId="aae95485")
    call["message"]["content"][1]["id"] = "toolu_zz"
    path = str(tmp_path / "branched.jsonl")
    open(path, "wb").write(b"".join(lines[:6]) + json.dumps(call).encode() + b"\n5\n")
    assert pi_roles(load_with_pi(path)) == our_roles(path) == []
    r = repair_file(path, backup=False)
    assert [(c.kind, c.action) for c in r.changes] == [("bad-line", "dropped"), ("missing-result", "inserted")]
    assert pi_roles(load_with_pi(path)) == our_roles(path) == ["user", "user", "assistant", "toolResult"]


@pytest.mark.parametrize("value", [b"9" * 39, b"7", b"[]", None, b'"r0000004"'])
def test_a_line_under_a_duplicated_id_follows_the_entry_repair_renames_whatever_its_own_id(tmp_path, value):
    """The prompt's id written again as its call entry's, the file cut after the first result (judge fuzz seed 1009,
    case 0020): pi's map keeps the later entry, so the result below the id is the call's. repair renames the later
    entry and links the lines written after it to the new id; a line whose own id is no string (39 digits, 7, [],
    none) was passed over, left under the prompt and dropped as an orphan, and pi no longer sent the result."""
    src = os.path.join(FIXTURES, "pi-number-id-before-synthetic-result.jsonl")
    lines = open(src, "rb").read().splitlines(keepends=True)[:5]
    lines[2] = lines[2].replace(b'"id":"00000002"', b'"id":"00000003"')
    k = lines[4].index(b'"id":')
    end = lines[4].index(b',"parentId"')
    lines[4] = lines[4][:k] + (b'"id":' + value + b"," if value is not None else b"") + lines[4][end + 1:]
    path = str(tmp_path / "s.jsonl")
    open(path, "wb").write(b"".join(lines))

    def results(result):
        return [m["toolCallId"] for m in result["messages"] if m["role"] == "toolResult"]

    before = load_with_pi(path)
    assert "toolu_01" in results(before) and pi_roles(before) == our_roles(path)
    r = repair_file(path, backup=False)
    assert any(c.kind == "duplicate-id" and c.action == "relinked" and c.line == 5 for c in r.changes)
    after = load_with_pi(path)
    assert "toolu_01" in results(after) and pi_roles(after) == our_roles(path)
    assert not repair_file(path, check=True).changed


@pytest.mark.parametrize("swapped", [True, False], ids=["results written last", "in order"])
def test_a_dangling_link_relinked_to_an_id_written_again_later_is_no_loop(tmp_path, swapped):
    """Judge fuzz seed 1045, case 0001: the thinking-level line given the id of a later user line (and, in the case
    found, a tool result moved to the end). Repair re-links the custom line whose parent was lost to the thinking-level
    line's id, and renames the later user line; its loop check read that id as the later line's (pi's map holds the
    last one), so the later line looked like a loop through itself and was cut from the history, with the results of
    the turn before it. The id is the earlier line's once the later one is renamed: no loop, every result kept."""
    from tests.support import judge_fuzz

    lines = open(os.path.join(FIXTURES, "pi-aborted-turn.expected.jsonl"), "rb").read().split(b"\n")
    assert b'"id":"a1000002"' in lines[2] and b'"id":"a1000014"' in lines[13]
    lines[2] = lines[2].replace(b'"id":"a1000002"', b'"id":"a1000014"')
    if swapped:
        lines[7], lines[13] = lines[13], lines[7]
    path = tmp_path / "pi-aborted-turn.jsonl"
    path.write_bytes(b"\n".join(lines))
    assert judge_fuzz.problems("pi", str(path), str(tmp_path / "work")) == []
