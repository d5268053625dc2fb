"""The real Codex CLI as judge of Codex rollouts: what it sends when it resumes a file
(``tests/support/codex_agent.py``) against ctxtool's view of the file, on the recorded
rollouts and on hand-made damage before and after ``repair``.

Needs the pinned client (``make codex-harness``); runs offline against a loopback server.
"""

import os
import shutil

import pytest

from tests.support import judge_fuzz

from ctxtool import codex_rules
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.validate import validate_file
from tests.support.codex_agent import compare, resume_payload, well_paired
from tests.support.codex_corrupt import CORRUPTIONS, FIX, HEALED, REFUSED, write

pytestmark = pytest.mark.codex

RECORDED = sorted(n for n in os.listdir(FIX) if n.endswith(".jsonl"))


def view(path):
    return [it for it, _ in codex_rules.sent_items(scan(path))]


def judge(path):
    # a fork's parents beside it (NAME.parent-<id>.jsonl); a parent that is a fork itself, with the file's other parents
    stem = os.path.basename(path)[:-6].split(".parent-")[0]
    parents = [os.path.join(os.path.dirname(path), n) for n in os.listdir(os.path.dirname(path))
               if n.startswith(stem + ".parent-") and n.endswith(".jsonl") and n != os.path.basename(path)]
    return resume_payload(path, also=parents)["history"]


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_rollouts_view_equals_live_judge(name):
    assert compare(view(os.path.join(FIX, name)), judge(os.path.join(FIX, name))) == []


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_damage_is_seen_as_codex_sees_it_and_repaired(tmp_path, name):
    path = write(tmp_path, name)
    what = CORRUPTIONS[name][1]
    if what == REFUSED:
        with pytest.raises(AssertionError, match="Codex sent no request"):
            judge(path)
        damaged = None
    else:
        damaged = judge(path)
        # the view of the damaged file is what this Codex sends for it, healing included
        assert compare(view(path), damaged) == []
    original = open(path, "rb").read()
    report = repair_file(path)
    assert report.changed and report.backup and open(report.backup, "rb").read() == original
    repaired = judge(path)
    assert well_paired(repaired) == []
    assert compare(view(path), repaired) == []
    assert validate_file(path)["violations"] == []
    if what == REFUSED:
        assert compare(repaired, judge(os.path.join(FIX, "parallel.jsonl"))) == []
    elif what == HEALED:
        # damage Codex heals itself: after repair the file says on disk what Codex sent anyway
        assert compare(repaired, damaged) == []
    else:
        # damage Codex sends as is: the request was not well paired; now it is, and every
        # output the damaged file held is still sent unless it repeated an output already sent
        assert well_paired(damaged) != [] or name == "call_written_twice"
        outputs = {it["output"] for it in repaired if it["type"] == "function_call_output"}
        lost = [it["output"] for it in damaged if it["type"] == "function_call_output" and it["output"] not in outputs]
        assert lost in ([], ["a second, different output"])


def test_repaired_lost_outputs_are_codex_own_items(tmp_path):
    """The inserted output is byte for byte the item Codex sends for a lost output (id included)."""
    path = write(tmp_path, "missing_output")
    damaged = resume_payload(path)["history"]
    repair_file(path)
    repaired = resume_payload(path)["history"]
    pick = [it for it in damaged if it.get("output") == "aborted"]
    assert len(pick) == 1 and [it for it in repaired if it.get("output") == "aborted"] == pick


def test_codex_resumes_a_compaction_with_the_summary_in_place_of_the_history(tmp_path):
    from ctxtool.compact_writer import Options, compact_file
    from ctxtool.summarize import ExtractiveSummarizer

    path = str(tmp_path / "parallel.jsonl")
    shutil.copyfile(os.path.join(FIX, "parallel.jsonl"), path)
    r = compact_file(path, ExtractiveSummarizer(), Options(keep_recent_tokens=50))
    assert r.status == "compacted"
    sent = judge(path)
    assert compare(view(path), sent) == [] and well_paired(sent) == []
    texts = [c.get("text", "") for it in sent for c in it.get("content") or []]
    assert texts[1].startswith(codex_rules.SUMMARY_TEXT) and "Look around the project." not in texts
    assert [it["call_id"] for it in sent if it["type"] == "function_call"] == ["call_rec_p5"]


def test_codex_resumes_a_pruned_session(tmp_path):
    from click.testing import CliRunner

    from ctxtool.cli import cli

    out = str(tmp_path / "pruned.jsonl")
    r = CliRunner().invoke(cli, ["prune", "-s", "openclaw", "--ignore-ttl", "--window", "30000", "--keep-last-assistants", "0",
                                 "--min-prunable-tool-chars", "1000", os.path.join(FIX, "long_output.jsonl"),
                                 "-o", out, "--as-session"])
    assert r.exit_code == 0, r.output
    sent = judge(out)
    assert compare(view(out), sent) == [] and well_paired(sent) == []
    assert all(len(it["output"]) < 4000 for it in sent if it["type"] == "function_call_output")


def test_older_rollouts_are_sent_as_codex_rebuilds_them(tmp_path):
    """0.40 shapes: no base_instructions (Codex sends its own, left out here), and a compaction
    without replacement_history: the user messages (not the environment context), then the summary."""
    from tests.support.codex_corrupt import legacy_rollout

    for compacted in (False, True):
        path = legacy_rollout(str(tmp_path / f"legacy-{compacted}.jsonl"), compacted=compacted)
        sent = judge(path)
        assert sent[0]["role"] == "developer"
        assert compare(view(path), sent[1:]) == []
        if compacted:
            texts = [c["text"] for it in sent[1:] for c in it["content"]]
            assert texts == ["<user_instructions>\nbe brief\n</user_instructions>", "list files", "now summarize",
                             "THE SUMMARY TEXT", "after compaction", "ok after"]


PROFILE = os.path.join(FIX, "..", "profile")


@pytest.mark.parametrize("style", ["tool_heavy", "conversational", "mixed", "bursty"])
def test_generated_profile_rollouts_are_resumed_as_ctxtool_reads_them(tmp_path, style):
    """The Codex work-style fixtures behind the golden advice (fixtures/profile/build.py) are
    rollouts the real client resumes, whole and well paired, as ctxtool's view has them."""
    path = str(tmp_path / f"codex_{style}.jsonl")
    shutil.copyfile(os.path.join(PROFILE, f"codex_{style}.jsonl"), path)
    sent = judge(path)
    assert well_paired(sent) == []
    assert compare(view(path), sent) == []
    calls = sum(1 for it in sent if it["type"] == "function_call")
    assert calls == sum(1 for line in open(path) if '"function_call"' in line) and calls > 0


def _typed(lines, item_type, role, where, key, value):
    """``lines`` with the first ``item_type`` item (of ``role``) given ``value`` for ``key`` (in its
    payload, or on the line itself)."""
    import json

    for k, ln in enumerate(lines):
        o = json.loads(ln)
        p = o.get("payload") or {}
        if o.get("type") == "response_item" and p.get("type") == item_type and (role is None or p.get("role") == role):
            if value == MISSING:
                del (p if where == "payload" else o)[key]
            else:
                (p if where == "payload" else o)[key] = value
            return lines[:k] + [json.dumps(o, separators=(",", ":")).encode() + b"\n"] + lines[k + 1:]
    raise KeyError(item_type)


MISSING = "<missing>"
# (item, role, where, key, value): Codex's reader refuses the line (skipped on resume), or reads it
TYPED = [
    ("function_call", None, "payload", "name", MISSING), ("function_call_output", None, "payload", "output", MISSING),
    ("reasoning", None, "payload", "summary", MISSING),
    ("message", "user", "payload", "id", 1), ("message", "assistant", "payload", "status", []),
    ("reasoning", None, "payload", "summary", None), ("reasoning", None, "payload", "encrypted_content", 1),
    ("function_call", None, "payload", "arguments", None), ("function_call", None, "payload", "name", None),
    ("function_call_output", None, "payload", "output", None), ("custom_tool_call", None, "payload", "input", 1),
    ("custom_tool_call_output", None, "payload", "output", {}),
    ("message", "assistant", "payload", "internal_chat_message_metadata_passthrough", "x"),
    ("function_call", None, "line", "timestamp", 1),
    ("message", "developer", "line", "metadata", " "), ("function_call_output", None, "line", "metadata", 7),
    ("message", "user", "payload", "content", [{"type": "input_text", "text": []}]),
    ("message", "user", "payload", "content", [{"type": "input_image"}]),
    ("message", "user", "payload", "content", [{"type": "weird", "text": "a"}]),
    ("message", "user", "payload", "content", ["a"]),
    # read: an optional field null, an empty list, a passthrough that is an array
    ("message", "user", "payload", "id", None), ("function_call_output", None, "payload", "output", []),
    ("reasoning", None, "payload", "internal_chat_message_metadata_passthrough", []),
    ("message", "assistant", "line", "metadata", None),
]


@pytest.mark.parametrize("item,role,where,key,value", TYPED, ids=lambda v: str(v))
def test_a_field_of_a_type_codex_refuses_leaves_the_line_out_as_codex_does(tmp_path, item, role, where, key, value):
    """Codex reads a rollout line with serde: a known field of another type (an id that is a
    number, arguments that are null) makes it skip the whole line. The view leaves it out too, and
    what repair writes is resumed well paired (found by running mutated rollouts against Codex)."""
    from tests.support.codex_corrupt import read

    path = str(tmp_path / "parallel.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(_typed(read(), item, role, where, key, value)))
    sent = judge(path)
    assert compare(view(path), sent) == []
    repair_file(path)
    after = judge(path)
    assert well_paired(after) == [] and compare(view(path), after) == []


def test_a_session_meta_line_written_again_restarts_the_history_and_repair_drops_the_copy(tmp_path):
    """Codex starts the history over from a second copy of the session's ``session_meta`` line:
    what came before it is not sent (judged). The view says so; repair drops the copy, and Codex
    sends the whole history again (found by the judge fuzz)."""
    from tests.support.codex_corrupt import read

    lines = read()
    k = next(n for n, ln in enumerate(lines) if b'"content":[{"type":"input_text","text":"Look around the project."' in ln)
    path = str(tmp_path / "parallel.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines[:k + 1] + [lines[0]] + lines[k + 1:]))
    sent = judge(path)
    assert compare(view(path), sent) == []
    assert "Look around the project." not in str(sent)
    report = repair_file(path)
    assert [(c.kind, c.line) for c in report.changes] == [("duplicate-line", k + 2)]
    after = judge(path)
    assert compare(view(path), after) == [] and well_paired(after) == []
    assert compare(after, judge(os.path.join(FIX, "parallel.jsonl"))) == []


@pytest.mark.parametrize("value", [None, 7])
def test_a_compacted_line_with_an_item_codex_refuses_is_skipped_whole(tmp_path, value):
    """One item of a replacement history that Codex's reader refuses (a content text that is null)
    makes it skip the whole ``compacted`` line: the history before it is sent as it was (judged;
    found by the judge fuzz)."""
    import json

    lines = open(os.path.join(FIX, "compacted.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if b'"type":"compacted"' in ln and b"replacement_history" in ln)
    o = json.loads(lines[k])
    it = next(x for x in o["payload"]["replacement_history"] if x.get("type") == "message" and len(x.get("content") or []) > 0)
    it["content"][0]["text"] = value
    lines[k] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    path = str(tmp_path / "compacted.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    sent = judge(path)
    assert compare(view(path), sent) == []
    # the replacement is not applied: the turns before the compaction are sent as written
    assert len(sent) > len(judge(os.path.join(FIX, "compacted.jsonl")))


def _edited(tmp_path, fixture: str, marker: bytes, edit) -> tuple:
    """A copy of a recorded rollout with the first line holding ``marker`` changed by ``edit(obj)``:
    (its path, the line's index)."""
    import json

    lines = open(os.path.join(FIX, fixture), "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if marker in ln)
    o = json.loads(lines[k])
    edit(o)
    lines[k] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    path = str(tmp_path / fixture)
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    return path, k


PASSTHROUGH = "internal_chat_message_metadata_passthrough"
_SOURCE = {"id": {"message_id": "m", "turn_id": "t", "role": "user"}, "revision": "r", "complete": True}
# (key path in the line, value, whether Codex still reads the line): the first prompt of a recorded
# rollout, its line's metadata typed field by field (a probe of each field with null, a string, an
# integer, a negative one, a float, a boolean, an array, an object and the field left out, against
# Codex 0.169, found the types; these are the telling ones)
METADATA = [
    (("metadata", "history_sequence"), None, True), (("metadata", "history_sequence"), -1, False),
    (("metadata", "history_sequence"), 1.5, False), (("metadata", "history_sequence"), 2 ** 64, False),
    (("metadata", "user_input_order"), "1", False), (("metadata", "fallback_token_limit_override"), 0, True),
    (("metadata", "client_authored"), None, False), (("metadata", "compaction_output"), 0, False),
    (("metadata", "mcp_attribution"), 7, True), (("metadata", "zzz"), [1], True),
    (("metadata", "retained_source"), None, True), (("metadata", "retained_source"), [], False),
    (("metadata", "retained_source"), [_SOURCE["id"], "r", True], True),
    (("metadata", "retained_source", "id"), [], False), (("metadata", "retained_source", "id"), ["m", "t", "user"], True),
    (("metadata", "retained_source", "id", "role"), "developer", False),
    (("metadata", "retained_source", "id", "role"), "assistant", True),
    (("metadata", "retained_source", "revision"), None, False), (("metadata", "retained_source", "complete"), 1, False),
    (("ordinal",), "7", False), (("ordinal",), -1, False), (("ordinal",), None, True), (("ordinal",), 2 ** 64 - 1, True),
    # the passthrough's typed fields (the others, content_item_kinds and content_item_metadata, take anything)
    (("payload", PASSTHROUGH, "turn_id"), -1, False), (("payload", PASSTHROUGH, "turn_id"), None, True),
    (("payload", PASSTHROUGH, "create_time"), "1", False), (("payload", PASSTHROUGH, "create_time"), -3, True),
    (("payload", PASSTHROUGH, "create_time"), True, False), (("payload", PASSTHROUGH, "content_item_kinds"), 7, True),
]


@pytest.mark.parametrize("where,value,read", METADATA, ids=lambda v: str(v))
def test_an_item_lines_metadata_and_ordinal_are_typed_as_codex_reads_them(tmp_path, where, value, read):
    """Codex's reader types an item line's ``metadata`` (sequence numbers are unsigned integers, the
    retained source a struct of required fields, which an array of all of them in order also gives)
    and every line's ``ordinal``: a field of another type makes it skip the line (judged; found by
    the judge fuzz, a ``retained_source.id`` that was an empty array)."""
    import json

    def edit(o):
        o.setdefault("metadata", {})["retained_source"] = o["metadata"].get("retained_source") or _SOURCE
        cur = o
        for key in where[:-1]:
            cur = cur[key]
        cur[where[-1]] = value

    path, _ = _edited(tmp_path, "interrupted_resumed.jsonl", b'"text":"Say hi."}],"internal', edit)
    sent = judge(path)
    assert ("Say hi." in json.dumps(sent)) is read
    assert compare(view(path), sent) == []


@pytest.mark.parametrize("key,value,read", [("ordinal", "x", False), ("timestamp", None, False),
                                           ("metadata", {"client_authored": None}, True),
                                           ("message", None, False), ("message", 5, False), ("message", "", True)])
def test_a_compacted_line_whose_envelope_codex_refuses_is_skipped(tmp_path, key, value, read):
    """A ``compacted`` line's ``ordinal`` and ``timestamp`` are typed as every line's, and its payload's
    ``message`` is a required string: another type makes Codex skip the line, so the replacement is
    not applied (judged; found by the judge fuzz, a misspelt ``message``). Its ``metadata`` is not read."""
    def edit(o):
        (o["payload"] if key == "message" else o)[key] = value

    path, _ = _edited(tmp_path, "compacted.jsonl", b'"type":"compacted"', edit)
    sent = judge(path)
    assert compare(view(path), sent) == []
    assert (len(sent) == len(judge(os.path.join(FIX, "compacted.jsonl")))) is read


GONE = "(left out)"  # a COMPACTED value: the field is removed


# (key path in the compacted line's payload, value, whether Codex applies the replacement): its other fields
# typed as Codex's reader types them (the same nine-value probe of each field against Codex 0.169; found by the
# judge fuzz: a retained source's turn_id, a message's content and role in the replacement history)
COMPACTED = [
    (("replacement_history_metadata",), None, True), (("replacement_history_metadata",), {}, False),
    (("replacement_history_metadata",), [], False),  # one entry per replacement item
    (("replacement_history_metadata", 0), None, False), (("replacement_history_metadata", 0), [], True),
    (("replacement_history_metadata", 0, "history_sequence"), -1, False),
    (("replacement_history_metadata", 0, "client_authored"), None, False),
    (("replacement_history_metadata", 0, "retained_source", "id", "turn_id"), True, False),
    (("retained_context",), None, True), (("retained_context",), [], False), (("retained_context", "incomplete"), 1, False),
    (("window_number",), 3, True), (("window_number",), 1.5, False), (("window_id",), 7, True), (("window_id",), -7, False),
    (("first_window_id",), 4, False), (("compaction_response_id",), None, True),
    (("latest_token_usage_record",), "x", False), (("resume_metadata",), {}, True), (("resume_metadata",), [], False),
    (("replacement_history", 1, "role"), None, False), (("replacement_history", 1, "role"), "s", True),
    (("replacement_history", 1, "content"), {}, False), (("replacement_history", 1, "type"), True, False),
    (("replacement_history", 1, "id"), None, True),
    # retained_context and latest_token_usage_record: their required fields and types (each left out and given other
    # values, judged 2026-11-27: ctxtool had taken any object)
    (("retained_context",), {}, False), (("retained_context", "verified_answers"), GONE, False),
    (("retained_context", "incomplete"), GONE, False), (("retained_context", "user_messages"), GONE, True),
    (("retained_context", "next_order"), GONE, True), (("retained_context", "verified_answers"), {}, False),
    (("retained_context", "verified_answers"), None, False), (("retained_context", "verified_answers"), [5], False),
    (("retained_context", "verified_answers"), ["x"], False),
    (("latest_token_usage_record",), {}, False), (("latest_token_usage_record", "extra"), 5, True),
    (("latest_token_usage_record", "thread_id"), GONE, False), (("latest_token_usage_record", "response_id"), GONE, False),
    (("latest_token_usage_record", "usage"), GONE, False), (("latest_token_usage_record", "thread_id"), "x", False),
    (("latest_token_usage_record", "thread_id"), "01A209AA-3B55-7A21-A6E6-36F03448AC59", True),
    (("latest_token_usage_record", "thread_id"), "01a209aa3b557a21a6e636f03448ac59", True),
    (("latest_token_usage_record", "thread_id"), "{01a209aa-3b55-7a21-a6e6-36f03448ac59}", True),
    (("latest_token_usage_record", "session_id"), "urn:uuid:01a209aa-3b55-7a21-a6e6-36f03448ac59", True),
    (("latest_token_usage_record", "session_id"), "01a209aa-3b55-7a21-a6e6-36f03448ac5g", False),
    (("latest_token_usage_record", "turn_id"), "x", True), (("latest_token_usage_record", "turn_id"), 5, False),
    (("latest_token_usage_record", "root_turn_id"), None, False), (("latest_token_usage_record", "usage"), {}, False),
    (("latest_token_usage_record", "thread_token_usage"), None, False),
    (("latest_token_usage_record", "usage", "input_tokens"), -1, True),
    (("latest_token_usage_record", "usage", "input_tokens"), 1.5, False),
    (("latest_token_usage_record", "usage", "input_tokens"), 2 ** 63, False),
    (("latest_token_usage_record", "turn_token_usage", "total_tokens"), None, False),
    (("latest_token_usage_record", "usage", "cached_input_tokens"), GONE, False),
    (("latest_token_usage_record", "usage", "cache_write_input_tokens"), GONE, True),
    # retained_context's retained messages and counters (judge fuzz seed 189, case 0044: a retained user message's text
    # written as null, which ctxtool took; 90 cases probed with Codex 0.169, these kept): missing is read, null is not
    (("retained_context", "user_messages"), None, False), (("retained_context", "user_messages"), [], True),
    (("retained_context", "user_messages"), [{}], False), (("retained_context", "user_messages"), ["x"], False),
    (("retained_context", "user_messages"), [["t", "x", True]], False),
    (("retained_context", "user_messages"), [{"turn_id": "t", "text": "x", "complete": True}], True),
    (("retained_context", "user_messages", 1, "text"), None, False), (("retained_context", "user_messages", 1, "text"), GONE, False),
    (("retained_context", "user_messages", 1, "text"), "", True), (("retained_context", "user_messages", 1, "turn_id"), 5, False),
    (("retained_context", "user_messages", 1, "complete"), GONE, False),
    (("retained_context", "user_messages", 1, "complete"), "x", False),
    (("retained_context", "user_messages", 1, "revision"), None, True), (("retained_context", "user_messages", 1, "revision"), 5, False),
    (("retained_context", "user_messages", 1, "message_id"), GONE, True),
    (("retained_context", "user_messages", 1, "message_id"), {}, False), (("retained_context", "user_messages", 1, "order"), GONE, True),
    (("retained_context", "user_messages", 1, "order"), None, False), (("retained_context", "user_messages", 1, "order"), -1, False),
    (("retained_context", "user_messages", 1, "order"), 2 ** 64, False), (("retained_context", "user_messages", 1, "extra"), 5, True),
    (("retained_context", "user_messages_incomplete"), None, False), (("retained_context", "user_messages_incomplete"), GONE, True),
    (("retained_context", "assistant_messages"), {}, False), (("retained_context", "assistant_messages", 0, "text"), 5, False),
    (("retained_context", "assistant_messages_incomplete"), 5, False), (("retained_context", "next_order"), None, False),
    (("retained_context", "next_order"), 1.5, False), (("retained_context", "next_order"), 0, True),
    (("retained_context", "verified_answers"), [{}], False), (("retained_context", "verified_answers"), [[]], False),
]


@pytest.mark.parametrize("where,value,read", COMPACTED, ids=lambda v: str(v))
def test_a_compacted_lines_payload_is_typed_as_codex_reads_it(tmp_path, where, value, read):
    _judged_compaction(tmp_path, where, value, read)


def _judged_compaction(tmp_path, where: tuple, value, read: bool) -> None:
    """The recorded compacted line with the payload field at the key path ``where`` set to ``value`` (left out:
    ``GONE``): ctxtool's view is what Codex sends, and Codex applies the compaction (``read``) or skips the line."""
    def edit(o):
        cur = o["payload"]
        for key in where[:-1]:
            cur = cur[key]
        if value == GONE:
            del cur[where[-1]]
        else:
            cur[where[-1]] = value

    path, _ = _edited(tmp_path, "compacted.jsonl", b'"type":"compacted"', edit)
    sent = judge(path)
    assert compare(view(path), sent) == []
    assert (len(sent) == len(judge(os.path.join(FIX, "compacted.jsonl")))) is read


@pytest.mark.parametrize("where,raw,read", [
    (("replacement_history_metadata", 0), b"1.0e39", True), (("replacement_history_metadata", 0), b"1e39", False),
    (("replacement_history_metadata", 0), b"5.00", True), (("resume_metadata",), b"5.00", True),
    (("resume_metadata",), b"5.0", False), (("retained_context",), b"1.0e39", False),
    (("latest_token_usage_record",), b"1e-05", False), (("latest_token_usage_record",), b"0.00001", False),
    (("replacement_history", 1, PASSTHROUGH), b"1.0e39", True), (("replacement_history", 1, PASSTHROUGH), b"1e39", False),
    (("window_number",), b"3.0", False)], ids=str)
def test_a_number_where_a_compacted_line_holds_a_struct_is_read_by_its_spelling(tmp_path, where, raw, read):
    """A number written where Codex's reader reads a struct in a compacted line: no value (an empty struct) unless
    Rust writes the double so (rule 4h); a struct with required fields (retained_context, latest_token_usage_record)
    refuses the empty one, and with it the line (judged)."""
    def edit(o):
        cur = o["payload"]
        for key in where[:-1]:
            cur = cur[key]
        cur[where[-1]] = "@@number@@"

    path, k = _edited(tmp_path, "compacted.jsonl", b'"type":"compacted"', edit)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data.replace(b'"@@number@@"', raw))
    sent = judge(path)
    assert compare(view(path), sent) == []
    assert (len(sent) == len(judge(os.path.join(FIX, "compacted.jsonl")))) is read


@pytest.mark.parametrize("fixture,marker,key,value", [
    ("parallel.jsonl", b'"type":"session_meta"', "timestamp", 5),
    ("compacted.jsonl", b'"type":"compacted"', "ordinal", "33"),
    ("parallel.jsonl", b'"text":"Look around the project."}]', "timestamp", None),
    ("parallel.jsonl", b'"type":"function_call"', "ordinal", -4),
])
def test_repair_mends_a_line_envelope_codex_refuses_and_codex_resumes_it_whole(tmp_path, fixture, marker, key, value):
    """A line Codex skips for its envelope alone (a timestamp that is no string, an ordinal that is
    no unsigned integer; on the ``session_meta`` line Codex cannot resume the rollout at all) is
    reported by validate and mended by repair: the timestamp from the line's own payload or the
    nearest line, an ordinal from the number it wrote; Codex then sends what it sends for the
    undamaged recording (judged), and nothing else in the file changes."""
    original = open(os.path.join(FIX, fixture), "rb").read().splitlines(keepends=True)
    path, k = _edited(tmp_path, fixture, marker, lambda o: o.__setitem__(key, value))
    found = validate_file(path)["violations"]
    assert [(v["kind"], v["lines"]) for v in found if v["kind"].startswith("unreadable")] == [
        ("unreadable-header" if b"session_meta" in marker else "unreadable-line", [k + 1])]
    report = repair_file(path, backup=False)
    assert [(c.kind, c.line) for c in report.changes] == [("line-envelope", k + 1)]
    after = open(path, "rb").read().splitlines(keepends=True)
    assert after[:k] == original[:k] and after[k + 1:] == original[k + 1:]
    if key == "ordinal" and value == "33":
        assert after[k] == original[k]  # the number it wrote, as it was
    sent = judge(path)
    assert compare(view(path), sent) == [] and well_paired(sent) == []
    assert compare(sent, judge(os.path.join(FIX, fixture))) == []
    assert repair_file(path, check=True).changes == []


def test_a_mended_compaction_leaves_the_history_before_it_to_its_summary(tmp_path):
    """A compacted line whose ordinal is no number (``[]``, judge fuzz seed 1015, case 0009): Codex skips it and
    sends the whole history; repair mends the envelope and Codex sends the compaction's summary in place of that
    history again, as for the recording. The fuzz's check that no result is lost by repair leaves those results out:
    their lines stay in the file."""
    path, k = _edited(tmp_path, "compacted.jsonl", b'"type":"compacted"', lambda o: o.__setitem__("ordinal", []))
    before = judge(path)
    assert compare(view(path), before) == []
    assert len(before) > len(judge(os.path.join(FIX, "compacted.jsonl")))  # (the compaction skipped)
    assert judge_fuzz.problems("codex", path, str(tmp_path / "work")) == []
    report = repair_file(path, backup=False)
    assert [(c.kind, c.line) for c in report.changes] == [("line-envelope", k + 1)]
    assert compare(judge(path), judge(os.path.join(FIX, "compacted.jsonl"))) == []


def test_an_ordinal_that_says_no_number_takes_its_neighbours_so_the_rollout_still_resumes(tmp_path):
    """An ordinal repair cannot read a number from (``" "``) took null: on the last line Codex reads,
    Codex then refused the rollout ("final paginated rollout record is missing an ordinal"). It takes
    the nearest line's ordinal now (found by the judge fuzz at seed 63: the file cut after that line)."""
    import json

    lines = open(os.path.join(FIX, "interrupted.jsonl"), "rb").read().splitlines(keepends=True)
    o = json.loads(lines[1])
    o["ordinal"] = " "
    path = str(tmp_path / "interrupted.jsonl")
    open(path, "wb").write(lines[0] + json.dumps(o, separators=(",", ":")).encode() + b"\n" + lines[2][:40])  # torn third line
    # the fuzz's own checks: the view of the damaged and the repaired file is what Codex sends, and Codex
    # resumes the repaired file (it refused it with null)
    assert judge_fuzz.problems("codex", path, str(tmp_path / "work")) == []
    report = repair_file(path, backup=False)
    assert sorted(c.kind for c in report.changes) == ["bad-line", "line-envelope"]
    assert json.loads(open(path, "rb").read().splitlines()[1])["ordinal"] == json.loads(lines[0])["ordinal"]
    assert judge(path) is not None
    assert repair_file(path, check=True).changes == []


def test_outputs_repair_inserts_carry_their_calls_ordinal_so_a_paginated_rollout_still_resumes(tmp_path):
    """Codex cannot resume a paginated rollout whose last line it can read has no ordinal. The
    outputs repair inserts for lost ones carry their call's ordinal (Codex takes one written twice),
    so a file whose later lines Codex cannot read (here nested past serde_json's limit, which ctxtool
    does not tell) still resumes after repair (found by the judge fuzz: it did not)."""
    import json

    lines = open(os.path.join(FIX, "interrupted.jsonl"), "rb").read().splitlines(keepends=True)
    k = max(n for n, ln in enumerate(lines) if b'"type":"function_call"' in ln)
    deep = 1
    for _ in range(130):
        deep = {"a": deep}
    for n in range(k + 1, len(lines)):
        o = json.loads(lines[n])
        o["zzz"] = deep
        lines[n] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    path = str(tmp_path / "interrupted.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    report = repair_file(path, backup=False)
    assert [c.kind for c in report.changes] == ["missing-result", "missing-result"]
    written = [json.loads(x) for x in open(path, "rb")]
    assert all(type(o.get("ordinal")) is int for o in written if o.get("payload", {}).get("type") == "function_call_output")
    sent = judge(path)
    assert well_paired(sent) == [] and compare(view(path), sent) == []


@pytest.mark.parametrize("role,sent_as", [("", ""), ("tool", "tool"), ("System", "System"), ("system", None), (None, None),
                                          ("developer", "developer")])
def test_a_message_of_another_role_is_sent_as_written_and_validate_says_the_api_refuses_it(tmp_path, role, sent_as):
    """Codex reads a message's role as any string: it leaves out a ``system`` message (and one
    without a string role) and sends every other as written (judged), so the view does; validate
    reports a role the API does not take (found by the judge fuzz: a developer message's role
    emptied)."""
    import json

    path, k = _edited(tmp_path, "interrupted_resumed.jsonl", b'"text":"Say hi."}],"internal',
                      lambda o: o["payload"].__setitem__("role", role))
    sent = judge(path)
    assert [it.get("role") for it in sent if "Say hi." in json.dumps(it)] == ([] if sent_as is None else [sent_as])
    assert compare(view(path), sent) == []
    odd = [v for v in validate_file(path)["violations"] if v["kind"] == "invalid-role"]
    assert [v["lines"] for v in odd] == ([[k + 1]] if sent_as not in (None, "developer") else [])


@pytest.mark.parametrize("key,value", [("zzz_unknown", 1), ("end_turn", True), ("namespace", "ns"), ("phase", "commentary")])
def test_an_item_is_sent_with_the_fields_codex_knows_of_its_type(tmp_path, key, value):
    """Codex reads an item into its own type and writes that again: a field it does not know is left
    out (``end_turn`` too), ``namespace`` is kept on calls and function outputs, ``phase`` on
    messages (judged on every item of a recording; found by the judge fuzz: a misspelt passthrough
    key was sent in the view)."""
    import json

    lines = []
    for ln in open(os.path.join(FIX, "parallel.jsonl"), "rb"):
        o = json.loads(ln)
        if o.get("type") == "response_item":
            o["payload"][key] = value
        lines.append(json.dumps(o, separators=(",", ":")).encode() + b"\n")
    path = str(tmp_path / "parallel.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    sent = judge(path)
    assert len(sent) == len(judge(os.path.join(FIX, "parallel.jsonl")))
    assert compare(view(path), sent) == []


@pytest.mark.parametrize("marker,role", [(b'"text":"Say hi."}],"internal', "user"), (b'"text":"Hi.","annotations"', "assistant")])
def test_repair_gives_a_message_of_a_refused_role_the_role_its_content_says(tmp_path, marker, role):
    """A message whose role the API does not take is sent by Codex as written; repair gives it the
    role its content says (output text: assistant, else user), and Codex then sends what it sends for
    the recording (judged)."""
    path, k = _edited(tmp_path, "interrupted_resumed.jsonl", marker, lambda o: o["payload"].__setitem__("role", "x"))
    assert [v["lines"] for v in validate_file(path)["violations"] if v["kind"] == "invalid-role"] == [[k + 1]]
    report = repair_file(path, backup=False)
    assert ("invalid-role", k + 1) in [(c.kind, c.line) for c in report.changes]
    assert json_line(path, k)["payload"]["role"] == role
    assert [v for v in validate_file(path)["violations"] if v["kind"] == "invalid-role"] == []
    fixed, recorded = judge(path), judge(os.path.join(FIX, "interrupted_resumed.jsonl"))
    assert compare(view(path), fixed) == [] and compare(fixed, recorded) == []


def json_line(path: str, k: int) -> dict:
    import json

    with open(path, "rb") as f:
        return json.loads(f.read().splitlines()[k])


def _judged_with_line_metadata(tmp_path, raw: bytes, read: bool) -> None:
    """The recorded item line whose user message holds the environment context given the ``metadata`` ``raw``
    (JSON text): Codex sends that item (``read``) or skips the line, and ctxtool's view is what it sends."""
    import json
    import re

    lines = open(os.path.join(FIX, "long_output.jsonl"), "rb").read().split(b"\n")
    k = 3
    mut = re.sub(rb'"metadata":\{[^{}]*\}\}$', b'"metadata":' + raw + b"}", lines[k])
    assert mut != lines[k]
    path = tmp_path / "long_output.jsonl"
    path.write_bytes(b"\n".join(lines[:k] + [mut] + lines[k + 1:]))
    sent = judge(str(path))
    assert ("environment_context" in json.dumps(sent)) is read
    assert compare(view(str(path)), sent) == []


# numbers as Codex's reader takes them where it reads a struct (``formats.codex_numbers``): no value (the line read)
# for an integer from 2**128 on or below -2**127 and for a double not written as Rust writes it; a number there
# otherwise (the line skipped). orjson reads an integer of 20 digits or more as a float, and 1e39 and 1.0e39 as one
# float: the spelling is read again (judge fuzz seeds 88 and 144; the spellings judged on 2026-11-27)
BOUNDS = [(b"1e400", True), (b"-1e400", True), (b"1" + b"0" * 400, True), (b"1e300", False), (b"5", False),
          (b"340282366920938463463374607431768211456", True), (b"340282366920938463463374607431768211455", False),
          (b"-170141183460469231731687303715884105729", True), (b"-170141183460469231731687303715884105728", False),
          (b"999999999999999999999999999999999999999", True), (b"1e39", False), (b"3.402823669209385e38", False),
          (b"18446744073709551616", False), (b"1.2345678901234567e20", False),
          # the double as ryu writes it (a number) or otherwise (no value), an exponent's E and + read as e and none
          (b"1.0000000000000000e39", True), (b"3.4028236692093846e38", True), (b"1.0e39", True), (b"1E39", False),
          (b"1e+39", False), (b"1e039", True), (b"5.0", False), (b"5.0000000000000000", True), (b"-0.0", False),
          (b"1000000000000000.0", False), (b"1e15", True), (b"1e16", False), (b"10000000000000000.0", True),
          (b"0.00001", False), (b"1e-5", True), (b"2.5e-3", True), (b"0.0025", False), (b"1.50", True),
          # as Rust's Display writes it (a number): no exponent, no ".0"
          (b"1e-7", False), (b"0.0000001", False), (b"1e-07", True), (b"1" + b"0" * 39, False),
          (b"340282366920938500000000000000000000000", False), (b"10000000000000000000000.0", True)]


@pytest.mark.parametrize("raw,read", BOUNDS)
def test_a_line_metadata_beyond_double_range_is_read_as_none(tmp_path, raw, read):
    """An item line's ``metadata`` that is a number beyond what serde holds (``1e400``, 400 digits): Codex reads
    the line as if it had none and sends its item; a number it holds is refused there (judged; judge fuzz,
    seed 88, where ctxtool left the item out)."""
    _judged_with_line_metadata(tmp_path, raw, read)


@pytest.mark.parametrize("raw,read", [
    (b"[]", True), (b"[5]", True), (b"[null]", True), (b'["x"]', False), (b'[{"type":[]}]', False), (b"[-1]", False),
    (b"[1.5]", False), (b"[true]", False), (b"[5,null]", True), (b"[5,3,[]]", True), (b"[5,3,null]", False),
    (b"[5,3,{}]", False), (b"[5,3,[5]]", False), (b'[5,3,[[[1],null,"x"]]]', True), (b"[5,3,[],[]]", True),
    (b'[5,3,[],["x"]]', False), (b'[5,3,[],[],["x"]]', True), (b"[5,3,[],[],[5]]", False), (b"[5,3,[],[],[],true]", True),
    (b"[5,3,[],[],[],null]", False), (b"[5,3,[],[],true]", False), (b"[5,3,[],[],[],true,null]", True),
    (b"[5,3,[],[],[],true,[true,false]]", True), (b'[5,3,[],[],[],true,"x"]', False)])
def test_a_line_metadata_written_as_an_array_is_read_field_by_field(tmp_path, raw, read):
    """An item line's ``metadata`` that is an array is read as the struct's fields in order: Codex refuses the line
    (and sends the history without its item) when one of the first seven is of another type (judged; judge fuzz,
    seed 106, where ctxtool took any array as read; Codex 0.171 put a list of picture sources third, so the 0.169
    shape ``[5,3,[],[],true]`` is refused now)."""
    _judged_with_line_metadata(tmp_path, raw, read)


_SENDER = '{"receiver_turn_id":"a","receiver_message_id":"b","text":"c"}'
_SOURCE = '{"prepared_url_digest":[1,2],"original_data_url":"data:image/png;base64,AA"%s}'
_TYPED_METADATA = [
    *((k, v, r) for k in ("guardian_source_order_guidance", "additional_context_tool_output",
                          "harness_authored_configuration", "compaction_without_file_error_sources",
                          "inherited_user_message", "native_search_fallback_used", "tool_audio_budget_applied")
      for v, r in (("true", True), ("null", False))),
    ("inherited_user_message", "5", False), ("native_search_fallback_used", '"x"', False),
    ("retain_across_windows", "null", True), ("retain_across_windows", "true", True), ("retain_across_windows", "5", False),
    *((k, v, r) for k in ("delivered_assistant_message", "compaction_model_hash")
      for v, r in (('"x"', True), ("null", True), ("5", False))),
    ("guardian_review_ids", "[]", True), ("guardian_review_ids", '["x"]', True), ("guardian_review_ids", "[5]", False),
    ("guardian_review_ids", "null", False),
    ("sender_user_messages", "null", True), ("sender_user_messages", _SENDER, True),
    ("sender_user_messages", '["a","b","c"]', True), ("sender_user_messages", '["a","b"]', False),
    ("sender_user_messages", "{}", False), ("sender_user_messages", _SENDER.replace('"c"', "5"), False),
    ("guardian_retained_omissions", '{"user_instructions":true,"assistant_context":false}', True),
    ("guardian_retained_omissions", "[true,true]", True), ("guardian_retained_omissions", "[true]", False),
    ("guardian_retained_omissions", '{"user_instructions":true}', False),
    ("image_replay_sources", "[]", True), ("image_replay_sources", "[%s]" % (_SOURCE % ""), True),
    ("image_replay_sources", "[%s]" % (_SOURCE % ',"detail":"high"'), True),
    ("image_replay_sources", "[%s]" % (_SOURCE % ',"detail":{"low":null}'), True),
    ("image_replay_sources", "[%s]" % (_SOURCE % ',"detail":"zz"'), False),
    ("image_replay_sources", "[%s]" % (_SOURCE % "").replace("[1,2]", "[1,256]"), False),
    ("image_replay_sources", '[[[1],"high","x"]]', True), ("image_replay_sources", '[[[1],"high"]]', False),
    ("image_replay_sources", "null", False),
    ("model_search_state", '"unused"', True), ("model_search_state", '{"standalone":null}', True),
    ("model_search_state", '{"search_mcp":{}}', True), ("model_search_state", '"x"', False),
    ("model_search_state", '{"unused":5}', False),
    ("ordinal", '"x"', True), ("mcp_attribution", "[5]", True)]


@pytest.mark.parametrize("key,value,read", _TYPED_METADATA)
def test_a_line_metadata_field_is_typed_as_codex_reads_it(tmp_path, key, value, read):
    """Each field of an item line's ``metadata`` that Codex's reader types (its booleans, optional strings, id list,
    sender messages, retained omissions, picture sources, search state): another type makes it skip the line; keys it
    does not read are taken as anything. ctxtool typed four of them and took the rest as read (probed with 0.169 and
    0.171; the structs' fields found in the reader's own messages)."""
    _judged_with_line_metadata(tmp_path, ('{"%s":%s}' % (key, value)).encode(), read)


@pytest.mark.parametrize("text", ["", " ", "x"])
def test_empty_base_instructions_are_not_sent(tmp_path, text):
    """A ``session_meta`` whose ``base_instructions.text`` is empty: Codex sends no item for it (the history's own
    first item comes first); any other text, white space too, is its first item (judged; judge fuzz seed 113,
    where ctxtool sent an empty developer message)."""
    import json

    lines = open(os.path.join(FIX, "parallel.jsonl"), encoding="utf-8").read().split("\n")
    head = json.loads(lines[0])
    head["payload"]["base_instructions"]["text"] = text
    path = tmp_path / "parallel.jsonl"
    path.write_text("\n".join([json.dumps(head)] + lines[1:]), encoding="utf-8")
    sent = judge(str(path))
    assert compare(view(str(path)), sent) == []
    assert (sent[0]["content"][0]["text"] == text) is (text != "")


@pytest.mark.parametrize("raw,read", BOUNDS)
def test_a_passthrough_beyond_what_serde_holds_is_read_as_none(tmp_path, raw, read):
    """An item's ``internal_chat_message_metadata_passthrough`` that is a number beyond what Codex's reader holds is
    read as no passthrough, and the item sent; a number inside makes it skip the line (judged at each bound)."""
    import json

    lines = open(os.path.join(FIX, "long_output.jsonl"), encoding="utf-8").read().split("\n")
    k = 3
    o = json.loads(lines[k])
    o["payload"]["internal_chat_message_metadata_passthrough"] = "@@passthrough@@"
    path = tmp_path / "long_output.jsonl"
    mut = json.dumps(o).replace('"@@passthrough@@"', raw.decode())
    path.write_text("\n".join(lines[:k] + [mut] + lines[k + 1:]), encoding="utf-8")
    sent = judge(str(path))
    assert ("environment_context" in json.dumps(sent)) is read
    assert compare(view(str(path)), sent) == []


@pytest.mark.parametrize("raw,read", [
    ("[]", True), ("[null]", True), ('["t"]', True), ("[5]", False), ("[[]]", False), ('[{"type":[]}]', False),
    ('["t",null]', True), ('["t",5]', True), ('["t",1.5]', True), ('["t",[]]', False), ('["t","x"]', False),
    ('["t",5,"x"]', True)])
def test_a_passthrough_written_as_an_array_is_read_field_by_field(tmp_path, raw, read):
    """An item's ``internal_chat_message_metadata_passthrough`` that is an array is read as the struct's fields in
    order: ``turn_id`` a string or null, ``create_time`` a number or null, the rest not typed; Codex skips the line
    when one of the two is of another type (judged; judge fuzz seed 116, where ctxtool took any array as read)."""
    import json

    lines = open(os.path.join(FIX, "long_output.jsonl"), encoding="utf-8").read().split("\n")
    k = 3
    o = json.loads(lines[k])
    o["payload"]["internal_chat_message_metadata_passthrough"] = json.loads(raw)
    path = tmp_path / "long_output.jsonl"
    path.write_text("\n".join(lines[:k] + [json.dumps(o)] + lines[k + 1:]), encoding="utf-8")
    sent = judge(str(path))
    assert ("environment_context" in json.dumps(sent)) is read
    assert compare(view(str(path)), sent) == []


@pytest.mark.parametrize("field,value,sent", [
    ("summary", [{"type": "summary_text", "text": {}}], False), ("summary", [{"type": "summary_text"}], False),
    ("summary", [{"type": "summary_text", "text": None}], False), ("summary", [{"type": "x", "text": "a"}], False),
    ("summary", [{"text": "a"}], False), ("summary", ["x"], False), ("summary", [[]], False),
    ("summary", [["summary_text", "a"]], True), ("summary", [["summary_text", "a", "x"]], False),
    ("summary", [{"type": "summary_text", "text": "a", "extra": 1}], True), ("summary", [], True),
    ("summary", [{"type": "reasoning_text", "text": "a"}], False),
    ("content", [{"type": "reasoning_text", "text": "a", "extra": 2}], True), ("content", [{"type": "text", "text": "a"}], True),
    ("content", [{"type": "text", "text": "a"}, {"type": "reasoning_text", "text": "b"}], True), ("content", [], True),
    ("content", [["reasoning_text", "a"]], True), ("content", [{"type": "x", "text": "a"}], False),
    ("content", [{"type": "reasoning_text", "text": {}}], False), ("content", [{"type": "summary_text", "text": "a"}], False),
    ("content", GONE, True), ("encrypted_content", GONE, True), ("id", GONE, True), ("id", None, True)], ids=str)
def test_a_reasoning_item_is_read_and_sent_as_codex_reads_and_sends_it(tmp_path, field, value, sent):
    """A reasoning item's summary and content entries are tagged texts: another tag, a text that is no string, a
    missing one make Codex skip the line (judge fuzz seed 174, case 0013: a summary text written as an object, which
    ctxtool sent). What it sends is the item written again: each entry as its tag and text, the content left out when
    no entry of it is a reasoning_text, null fields where they are missing (judged)."""
    def edit(o):
        if value == GONE:
            del o["payload"][field]
        else:
            o["payload"][field] = value

    path, _ = _edited(tmp_path, "parallel.jsonl", b'"type":"reasoning"', edit)
    got = judge(path)
    assert any(i.get("type") == "reasoning" for i in got) is sent
    assert compare(view(path), got) == []


@pytest.mark.parametrize("marker,field", [(b'"type":"function_call"', "namespace"), (b'"type":"function_call_output"', "namespace"),
                                          (b'"type":"custom_tool_call"', "namespace"),
                                          (b'"text":"Look around the project."}]', "phase")], ids=str)
def test_a_null_namespace_or_phase_is_left_out_as_codex_leaves_it_out(tmp_path, marker, field):
    """An item's ``namespace`` or a message's ``phase`` written as null: Codex sends the item without it (judged;
    ctxtool sent the null)."""
    path, _ = _edited(tmp_path, "parallel.jsonl", marker, lambda o: o["payload"].__setitem__(field, None))
    got = judge(path)
    assert compare(view(path), got) == []
    assert not any(field in i for i in got if i.get("type") != "message" or field == "phase")


_ASSISTANT_TEXT = b'"text":"Let me look at the project.","annotations":[]'
_USER_TEXT = b'"text":"Look around the project."}]'


@pytest.mark.parametrize("marker,field,value", [
    (_ASSISTANT_TEXT, "annotations", None), (_ASSISTANT_TEXT, "extra", 5), (_ASSISTANT_TEXT, "logprobs", None),
    (_ASSISTANT_TEXT, "logprobs", [{"a": 1}]), (_ASSISTANT_TEXT, "annotations", GONE), (_ASSISTANT_TEXT, "annotations", [5]),
    (_USER_TEXT, "extra", 5), (_USER_TEXT, "annotations", [])], ids=str)
def test_a_text_item_is_sent_as_codex_writes_it_again(tmp_path, marker, field, value):
    """A message's input_text or output_text item: Codex writes it again, so a field it does not know of the item's type
    is left out, and a null annotations or logprobs (judged; ctxtool sent them as written)."""
    def edit(o):
        c = o["payload"]["content"][0]
        if value == GONE:
            del c[field]
        else:
            c[field] = value

    path, _ = _edited(tmp_path, "parallel.jsonl", marker, edit)
    assert compare(view(path), judge(path)) == []


_IMAGE = "data:image/png;base64,iVBORw0KGgo="


@pytest.mark.parametrize("marker,output,read", [
    (b'"type":"function_call_output"', [{"type": "input_text", "text": "a"}], True),
    (b'"type":"function_call_output"', [{"type": "input_text", "text": "a", "extra": 1}], True),
    (b'"type":"function_call_output"', [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b", "x": None}], True),
    (b'"type":"function_call_output"', [["input_text", "a"]], True), (b'"type":"function_call_output"', [], True),
    (b'"type":"function_call_output"', [{"type": "x", "text": "a"}], False),
    (b'"type":"function_call_output"', [{"type": "input_text", "text": 5}], False),
    (b'"type":"function_call_output"', [{"type": "output_text", "text": "a"}], False),
    (b'"type":"function_call_output"', ["a"], False), (b'"type":"function_call_output"', [{"type": "input_text"}], False),
    (b'"type":"function_call_output"', [{"type": "input_image", "image_url": 5}], False),
    (b'"type":"function_call_output"', [{"type": "input_image"}], False),
    (b'"type":"custom_tool_call_output"', [{"type": "x", "text": "a"}], False),
    (b'"type":"custom_tool_call_output"', [{"type": "input_text", "text": "a", "e": 1}], True)], ids=str)
def test_a_call_output_array_is_read_and_sent_as_codex_reads_and_sends_it(tmp_path, marker, output, read):
    """A call output written as an array: each item an input_text with a string text (or ``["input_text", text]``)
    or an input_image with a string image_url; any other makes Codex skip the line, and send "aborted" for the call in
    its place; what it sends is each item written again (its other fields left out; judged, ctxtool had taken any
    array and sent it as written)."""
    path, k = _edited(tmp_path, "parallel.jsonl", marker, lambda o: o["payload"].__setitem__("output", output))
    got = judge(path)
    assert compare(view(path), got) == []
    call_id = json_line(path, k)["payload"]["call_id"]
    assert [i["output"] != "aborted" for i in got if i.get("call_id") == call_id and "output" in i] == [read]


_CALL, _CUSTOM, _OUTPUT, _CUSTOM_OUTPUT = (b'"type":"function_call"', b'"type":"custom_tool_call"',
                                           b'"type":"function_call_output"', b'"type":"custom_tool_call_output"')


@pytest.mark.parametrize("marker,field,value", [
    (_CALL, "namespace", 5), (_CALL, "namespace", {}), (_CALL, "namespace", "x"), (_CUSTOM, "namespace", 5),
    (_CUSTOM, "namespace", {}), (_OUTPUT, "namespace", 5), (_OUTPUT, "namespace", "x"), (_CUSTOM, "status", 5),
    (_CUSTOM, "status", {}), (_CUSTOM, "status", "x"), (_CUSTOM_OUTPUT, "name", 5), (_CUSTOM_OUTPUT, "name", {}),
    (_CUSTOM_OUTPUT, "name", "x"), (_ASSISTANT_TEXT, "phase", 5), (_ASSISTANT_TEXT, "phase", "x"),
    (_ASSISTANT_TEXT, "phase", "final"), (_ASSISTANT_TEXT, "phase", "final_answer"), (_ASSISTANT_TEXT, "phase", "commentary")],
    ids=str)
def test_an_items_typed_fields_are_read_as_codex_reads_them(tmp_path, marker, field, value):
    """Fields Codex's reader types that ctxtool took as anything (a probe of each known item's fields with 5, {} and
    null, 2026-11-27): a namespace that is no string, a custom call's status that is no string, a custom call output's
    name that is no string, a message's phase other than commentary or final_answer make Codex skip the line; a custom
    call output's name it sends (judged)."""
    path, _ = _edited(tmp_path, "parallel.jsonl", marker, lambda o: o["payload"].__setitem__(field, value))
    assert compare(view(path), judge(path)) == []


@pytest.mark.parametrize("where,value,read", [
    (("dynamic_tools",), None, True), (("dynamic_tools",), {}, False), (("dynamic_tools",), "x", False),
    (("dynamic_tools", "thread_id"), "x", False), (("dynamic_tools", "thread_id"), GONE, False),
    (("dynamic_tools", "tools"), None, False), (("dynamic_tools", "tools"), {}, False), (("multi_agent_version",), "x", False),
    (("multi_agent_version",), None, True), (("last_started_turn_id",), "x", True), (("last_started_turn_id",), 5, False),
    (("turn_attribution",), {}, False), (("turn_attribution", "turn_id"), None, False), (("turn_attribution", "turn_id"), "x", True),
    (("turn_attribution", "turn_trigger"), {}, False), (("turn_attribution", "parent_turn_id"), 5, False),
    (("turn_attribution", "initiating_agent_path"), "x", False), (("turn_attribution", "root_turn_id"), GONE, True),
    (("previous_turn_settings",), {}, False), (("previous_turn_settings", "model"), -1, False),
    (("previous_turn_settings", "model"), GONE, False), (("previous_turn_settings", "model"), "x", True),
    (("previous_turn_settings", "comp_hash"), 5, False), (("previous_turn_settings", "realtime_active"), "x", False),
    (("previous_turn_settings", "realtime_active"), None, True)], ids=str)
def test_a_compacted_lines_resume_metadata_is_typed_as_codex_reads_it(tmp_path, where, value, read):
    """A compacted line's resume_metadata is typed field by field (judge fuzz seed 183, case 0016: a previous turn's
    model written as -1, which ctxtool took; each field given 5, "x", null and {} and left out, judged): another type
    makes Codex skip the line, and the compaction is not applied."""
    _judged_compaction(tmp_path, ("resume_metadata", *where), value, read)


@pytest.mark.parametrize("field,value", [("annotations", v) for v in (1.5, "x", {}, ["x"], [{}])]
                         + [("logprobs", v) for v in (1.5, "x", {}, [5])], ids=str)
def test_an_output_texts_annotations_and_logprobs_are_arrays_or_null(tmp_path, field, value):
    """An output_text's annotations or logprobs that is no array makes Codex skip the line (judge fuzz seed 183, case
    0004: annotations written as 1.5, which ctxtool sent); what an array holds is not read (judged)."""
    path, _ = _edited(tmp_path, "parallel.jsonl", _ASSISTANT_TEXT,
                      lambda o: o["payload"]["content"][0].__setitem__(field, value))
    assert compare(view(path), judge(path)) == []


@pytest.mark.parametrize("call_id", [None, GONE], ids=str)
def test_an_output_without_a_call_id_is_sent_so_and_repair_gives_it_its_call(tmp_path, call_id):
    """A function_call_output whose call_id is null or missing: Codex reads it and sends it without one, in its place,
    and sends "aborted" for the call it answered (judged; ctxtool left the output out). The API requires a call_id:
    validate says so, and repair gives the output the call before it that has no output of its own, after which Codex
    sends the recording's items (judged)."""
    def edit(o):
        if call_id == GONE:
            del o["payload"]["call_id"]
        else:
            o["payload"]["call_id"] = None

    path, k = _edited(tmp_path, "parallel.jsonl", _OUTPUT, edit)
    got = judge(path)
    assert compare(view(path), got) == []
    assert [i for i in got if i.get("type") == "function_call_output" and "call_id" not in i] != []
    assert [v["lines"] for v in validate_file(path)["violations"] if v["kind"] == "missing-call-id"] == [[k + 1]]
    report = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in report.changes] == [("missing-call-id", "fixed", k + 1)]
    assert [v for v in validate_file(path)["violations"] if v["severity"] == "error"] == []
    fixed, recorded = judge(path), judge(os.path.join(FIX, "parallel.jsonl"))
    assert compare(view(path), fixed) == [] and compare(fixed, recorded) == []


def test_an_output_without_a_call_id_that_answers_no_call_is_dropped_by_repair(tmp_path):
    """A function_call_output without a call_id written after every call before it has its output (here: a copy of an
    output, its call_id null): Codex sends it (judged); repair drops it, as it answers nothing, and Codex then sends the
    recording's items."""
    lines = open(os.path.join(FIX, "parallel.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if _OUTPUT in ln)
    import json

    o = json.loads(lines[k])
    o["payload"]["call_id"] = None
    lines.insert(k + 1, json.dumps(o, separators=(",", ":")).encode() + b"\n")
    path = str(tmp_path / "parallel.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    assert compare(view(path), judge(path)) == []
    report = repair_file(path, backup=False)
    assert [(c.kind, c.action, c.line) for c in report.changes] == [("missing-call-id", "dropped", k + 2)]
    fixed, recorded = judge(path), judge(os.path.join(FIX, "parallel.jsonl"))
    assert compare(view(path), fixed) == [] and compare(fixed, recorded) == []


@pytest.mark.parametrize("agents_md", [b"1.5", b"null", b"[]", b'"x"', b'{"x":1}'])
def test_a_world_state_naming_agents_md_the_new_turn_does_not_find(tmp_path, agents_md):
    """A recorded ``world_state`` whose ``agents_md`` is not the empty object the client wrote: the resumed turn adds its
    own context saying the AGENTS.md instructions "no longer apply" (or renders them afresh), after the history and
    before the prompt, as it adds its ``<environment_context>``; the history sent is the file's all the same. Judge fuzz
    seed 274, case 0068, where the judge took that turn context for history."""
    lines = open(os.path.join(FIX, "long_output.jsonl"), "rb").read().split(b"\n")
    k = next(i for i, x in enumerate(lines) if b'"type":"world_state"' in x)
    assert b'"agents_md":{}' in lines[k]
    lines[k] = lines[k].replace(b'"agents_md":{}', b'"agents_md":' + agents_md)
    path = tmp_path / "long_output.jsonl"
    path.write_bytes(b"\n".join(lines))
    r = resume_payload(str(path))
    assert compare(view(str(path)), r["history"]) == []
    assert len(r["history"]) == len(view(str(path)))


def test_a_fork_whose_parent_was_archived_is_read_with_the_parents_history():
    """``codex archive`` moves a rollout to ``archived_sessions/``: Codex still resumes a fork of it with the parent's
    history (found by a review, 2026-11-30: ctxtool looked only under ``sessions/``)."""
    from tests.support.codex_agent import PROMPT, CodexSandbox, strip_turn

    parent = os.path.join(FIX, "fork_compact.parent-01a22a95-7bd0-7391-bc66-34b5cf1950a9.jsonl")
    with CodexSandbox() as box:
        box.install(parent)
        sid = box.install(os.path.join(FIX, "fork_compact.jsonl"))
        moved = next(p for p in box.sessions() if "01a22a95-7bd0" in p)
        archived = os.path.join(box.codex_home, "archived_sessions")
        os.makedirs(archived)
        shutil.move(moved, os.path.join(archived, os.path.basename(moved)))
        fork = box.sessions()[0]
        seen = view(fork)  # (before the run: Codex appends its new turn to the file)
        run = box.run(PROMPT, resume=sid, script=[("status", 400, "ctxtool judge: recorded")])
        assert run.bodies, run.stderr[-500:]
        sent = strip_turn(run.bodies[0]["input"])
        assert compare(seen, sent) == []
        assert len(seen) == 13  # the parent's 10 items and the fork's own 3


def test_a_fork_cut_inside_a_parent_line_leaves_that_line_out_as_codex_does(tmp_path):
    """A fork's ``end_byte_offset`` that falls inside a line of its parent (an edited or repaired parent): Codex reads
    only the lines that end by the cut (found by a review, 2026-11-30: ctxtool kept the cut line, and healed it)."""
    import json

    from ctxtool.transcript import scan as scan_file

    name = "fork_compact.parent-01a22a95-7bd0-7391-bc66-34b5cf1950a9.jsonl"
    shutil.copy(os.path.join(FIX, name), tmp_path / name)
    lines = open(os.path.join(FIX, "fork_compact.jsonl"), "rb").read().splitlines(keepends=True)
    meta = json.loads(lines[0])
    end = meta["payload"]["history_base"]["end_byte_offset"]
    parent = scan_file(str(tmp_path / name))
    cut = next(e for e in reversed(parent.entries) if e.offset + e.length + 1 <= end and e.kind == "message" and e.length > 200)
    meta["payload"]["history_base"]["end_byte_offset"] = cut.offset + 100  # inside that line
    lines[0] = json.dumps(meta, separators=(",", ":")).encode() + b"\n"
    fork = tmp_path / "fork_compact.jsonl"
    fork.write_bytes(b"".join(lines))
    sent = judge(str(fork))
    assert compare(view(str(fork)), sent) == []


def test_repairing_a_forks_parent_never_changes_what_the_fork_reads(tmp_path):
    """A fork reads its parent up to a byte offset (``history_base.end_byte_offset``). Repairing the parent in place
    moved that byte: Codex then resumed the fork with the parent's later turn in it, or refused it (found by a review,
    2026-11-30). Damage before the fork point: refused, nothing written. Damage after it: repaired, and Codex resumes the
    fork exactly as before."""
    import json

    from ctxtool.errors import ForkedError

    pname = "fork_long.parent-01a22a95-aadd-7871-96e0-4a3a56cc91d5.jsonl"
    plines = open(os.path.join(FIX, pname), "rb").read().splitlines(keepends=True)
    flines = open(os.path.join(FIX, "fork_long.jsonl"), "rb").read().splitlines(keepends=True)
    meta = json.loads(flines[0])
    end = meta["payload"]["history_base"]["end_byte_offset"]
    torn = b'{"timestamp":"2026-11-30T03:47:31.000Z","type":"response_item","payload":{"type":"message","role":"assi\n'

    # before the fork point: a torn line the parent had when it was forked (the fork's offset counts it)
    at = next(k for k, ln in enumerate(plines) if b'"response_item"' in ln)
    parent, fork = tmp_path / pname, tmp_path / "fork_long.jsonl"
    parent.write_bytes(b"".join(plines[:at + 1] + [torn] + plines[at + 1:]))
    meta["payload"]["history_base"]["end_byte_offset"] = end + len(torn)
    fork.write_bytes(json.dumps(meta, separators=(",", ":")).encode() + b"\n" + b"".join(flines[1:]))
    before = parent.read_bytes()
    sent = judge(str(fork))
    assert compare(view(str(fork)), sent) == []
    with pytest.raises(ForkedError, match="1 fork\\(s\\) read this rollout up to a byte offset"):
        repair_file(str(parent))
    assert parent.read_bytes() == before and not [n for n in os.listdir(tmp_path) if ".bak-" in n or ".ctxtool-" in n]
    out = tmp_path / "elsewhere.jsonl"
    assert repair_file(str(parent), output=str(out)).written  # what it says to do instead

    # after the fork point only: repaired in place, the fork reads the same
    parent.write_bytes(b"".join(plines) + torn[:40])
    fork.write_bytes(b"".join(flines))
    codex_rules._FORKS.clear()  # (the fork's offset was edited here: a tree's forks are indexed for FORKS_TTL seconds)
    sent = judge(str(fork))
    report = repair_file(str(parent))
    assert report.written and parent.read_bytes() == b"".join(plines)
    assert judge(str(fork)) == sent and compare(view(str(fork)), sent) == []


_DEL = "(deleted)"
# one field of the session_meta payload changed: whether Codex 0.169 still resumes the rollout (True) or refuses it
# whole ("does not start with session metadata"); found by a review (2026-11-30: validate said ok to every one)
META_FIELDS = [
    ("id", "not-a-uuid", False), ("id", _DEL, False), ("session_id", _DEL, True), ("cwd", 5, False), ("cwd", _DEL, False),
    ("timestamp", 5, False), ("timestamp", _DEL, False), ("originator", _DEL, False), ("cli_version", _DEL, False),
    ("source", "zzz", True), ("source", 5, False), ("model_provider", 5, False), ("model_provider", None, True),
    ("base_instructions", "text", False), ("base_instructions", {"text": 5}, False), ("base_instructions", None, True),
    ("history_mode", "zzz", False), ("history_mode", "legacy", True), ("context_window", 5, False),
    ("runtime_workspace_roots", 5, False), ("thread_source", "zzz", True), ("account_scoped", "yes", False),
    ("account_scoped", None, False), ("account_scoped", _DEL, True), ("history_mode", None, False),
    ("history_mode", _DEL, True), ("context_window", None, True), ("context_window", {}, False),
    ("runtime_workspace_roots", None, True), ("runtime_workspace_roots", [5], False), ("source", None, False),
    ("source", _DEL, True), ("source", {"x": 1}, False), ("cwd", None, False), ("base_instructions", {}, False),
    ("id", None, False), ("payload", _DEL, False),
]


@pytest.mark.parametrize("key, value, resumes", META_FIELDS)
def test_a_session_meta_codex_refuses_is_an_error_and_one_it_reads_is_not(tmp_path, key, value, resumes):
    import json

    from tests.support.codex_agent import PROMPT, CodexSandbox

    lines = open(os.path.join(FIX, "parallel.jsonl"), "rb").read().splitlines(keepends=True)
    meta = json.loads(lines[0])
    sid = meta["payload"]["id"]
    if key == "payload":
        del meta["payload"]
    elif value == _DEL:
        del meta["payload"][key]
    else:
        meta["payload"][key] = value
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(json.dumps(meta, separators=(",", ":")).encode() + b"\n" + b"".join(lines[1:]))
    with CodexSandbox() as box:
        box.install(str(path), session_id=sid)
        run = box.run(PROMPT, resume=sid, script=[("status", 400, "ctxtool judge: recorded")])
    assert bool(run.bodies) == resumes, run.stderr[-400:]
    errors = [v for v in validate_file(str(path))["violations"] if v["severity"] == "error"]
    assert [v["kind"] for v in errors] == ([] if resumes else ["unreadable-header-fields"])
    if not resumes:
        assert "Codex refuses to resume this rollout" in errors[0]["api_error"] and errors[0]["lines"] == [1]


def test_a_rollout_without_its_session_meta_line_is_an_error_repair_cannot_mend(tmp_path):
    from tests.support.codex_agent import PROMPT, CodexSandbox

    lines = open(os.path.join(FIX, "parallel.jsonl"), "rb").read().splitlines(keepends=True)
    sid = __import__("json").loads(lines[0])["payload"]["id"]
    for name, data in (("lost", b"".join(lines[1:])), ("torn", lines[0][:500] + b"\n" + b"".join(lines[1:]))):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        with CodexSandbox() as box:
            box.install(str(path), session_id=sid)
            assert not box.run(PROMPT, resume=sid, script=[("status", 400, "j")]).bodies  # refused
        assert [v["kind"] for v in validate_file(str(path))["violations"] if v["severity"] == "error"] == ["missing-header"]
        report = repair_file(str(path), output=str(tmp_path / f"{name}.out.jsonl"))
        assert [v.kind for v in report.after if v.severity == "error"] == ["missing-header"]  # said, not "0 errors left"


def test_a_fork_without_its_parent_or_past_its_end_is_an_error(tmp_path):
    """Codex refuses a fork whose parent rollout it cannot find, or that reads it past its end (judged)."""
    name = "fork_compact.parent-01a22a95-7bd0-7391-bc66-34b5cf1950a9.jsonl"
    fork = tmp_path / "fork_compact.jsonl"
    shutil.copy(os.path.join(FIX, "fork_compact.jsonl"), fork)
    with pytest.raises(AssertionError, match="missing source rollout"):
        judge(str(fork))
    assert [v["kind"] for v in validate_file(str(fork))["violations"] if v["severity"] == "error"] == ["missing-fork-parent"]
    data = open(os.path.join(FIX, name), "rb").read()
    (tmp_path / name).write_bytes(data[:len(data) // 3])  # the parent cut short
    with pytest.raises(AssertionError, match="past the source rollout"):
        judge(str(fork))
    assert [v["kind"] for v in validate_file(str(fork))["violations"] if v["severity"] == "error"] == ["fork-past-parent"]
    (tmp_path / name).write_bytes(data)
    assert validate_file(str(fork))["violations"] == []


@pytest.mark.parametrize("kind", [b'"type":"reasoning"', b'"role":"user","content":[{"type":"input_text","text":"Look',
                                  b'"role":"assistant"'])
def test_an_item_line_written_twice_sends_its_id_twice_which_validate_says_the_api_refuses(tmp_path, kind):
    """Codex sends an item line written twice as two items with one id; the Responses API refuses such an input
    ("Duplicate item found with id": OpenRouterTeam/ai-sdk-provider#254, microsoft/vscode#321977; the loopback server
    takes anything). Found by a review, 2026-11-30: validate said ok."""
    lines = open(os.path.join(FIX, "parallel.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if b'"response_item"' in ln and kind in ln)
    path = tmp_path / "parallel.jsonl"
    path.write_bytes(b"".join(lines[:k + 1] + [lines[k]] + lines[k + 1:]))
    sent = judge(str(path))
    ids = [it.get("id") for it in sent if it.get("id")]
    twice = {i for i in ids if ids.count(i) > 1}
    assert len(twice) == 1
    errors = [v for v in validate_file(str(path))["violations"] if v["severity"] == "error"]
    assert [(v["kind"], v["ids"], v["lines"]) for v in errors] == [("duplicate-item-id", list(twice), [k + 1, k + 2])]
    report = repair_file(str(path))  # the copy dropped: Codex sends the history of the undamaged file
    assert [(c.kind, c.action) for c in report.changes] == [("duplicate-line", "dropped")]
    assert path.read_bytes() == b"".join(lines) and validate_file(str(path))["violations"] == []


def test_a_call_and_its_output_written_twice_are_repaired_to_the_one_call_and_output(tmp_path):
    """The copies carry the same item ids: repair's rename of a reused call_id left them twice (found by a review,
    2026-11-30). Now the copies are dropped; Codex sends the undamaged history."""
    lines = open(os.path.join(FIX, "parallel.jsonl"), "rb").read().splitlines(keepends=True)
    call = next(i for i, ln in enumerate(lines) if b'"function_call"' in ln and b'"call_rec_p5"' in ln)
    out = next(i for i, ln in enumerate(lines) if b'"function_call_output"' in ln and b'"call_rec_p5"' in ln)
    path = tmp_path / "parallel.jsonl"
    path.write_bytes(b"".join(lines[:out + 1] + [lines[call], lines[out]] + lines[out + 1:]))
    assert [v["kind"] for v in validate_file(str(path))["violations"] if v["severity"] == "error"]
    repair_file(str(path))
    assert path.read_bytes() == b"".join(lines)
    assert compare(view(str(path)), judge(os.path.join(FIX, "parallel.jsonl"))) == []


_LOCAL_SHELL = b'"type":"local_shell_call"'
# (a field of the recorded local shell call, its value, whether Codex still reads the line): a probe of each field with
# 5, {}, null, "x" and the field left out against Codex 0.169 (judge fuzz seed 1085, case 0037: a working_directory
# of 0, which ctxtool sent); these are the telling ones
LOCAL_SHELL = [
    (("id",), 5, False), (("id",), None, True), (("call_id",), 5, False), (("call_id",), GONE, True),
    (("call_id",), "", True), (("status",), "x", False), (("status",), "Completed", False), (("status",), GONE, False),
    (("status",), "incomplete", True), (("action",), None, False), (("action",), {}, False),
    (("action", "type"), "Exec", False), (("action", "command"), "x", False), (("action", "command"), ["a", None], False),
    (("action", "command"), GONE, False), (("action", "command"), [], True), (("action", "timeout_ms"), -1, False),
    (("action", "timeout_ms"), 5.0, False), (("action", "timeout_ms"), 2 ** 64, False),
    (("action", "timeout_ms"), 2 ** 64 - 1, True), (("action", "timeout_ms"), GONE, True),
    (("action", "working_directory"), 0, False), (("action", "working_directory"), "", True),
    (("action", "working_directory"), GONE, True), (("action", "env"), {"a": 5}, False), (("action", "env"), [], False),
    (("action", "env"), {"a": "b"}, True), (("action", "env"), GONE, True), (("action", "user"), 5, False),
    (("action", "user"), GONE, True), (("action", "zzz"), 5, True), (("zzz",), 5, True),
    ((PASSTHROUGH, "turn_id"), -1, False),
]


@pytest.mark.parametrize("where,value,read", LOCAL_SHELL, ids=str)
def test_a_local_shell_call_is_read_and_sent_as_codex_reads_and_sends_it(tmp_path, where, value, read):
    """A local shell call's status and action are typed by Codex's reader: a field of another type makes it skip the
    line (the call and the "aborted" output rule 10 would give it are not sent); a call it reads it writes again with
    its action's fields alone, each null when missing, and its call_id null when missing (judged)."""
    def edit(o):
        d = o["payload"]
        for k in where[:-1]:
            d = d[k]
        if value is GONE:
            del d[where[-1]]
        else:
            d[where[-1]] = value

    path, k = _edited(tmp_path, "local_shell.jsonl", _LOCAL_SHELL, edit)
    sent = judge(path)
    assert any(it.get("type") == "local_shell_call" for it in sent) is read
    assert compare(view(path), sent) == []
    skipped = [v["lines"] for v in validate_file(path)["violations"] if v["kind"] == "skipped-line"]
    assert skipped == ([] if read else [[k + 1]])


_TOOL_SEARCH = {"type": "tool_search_call", "id": "ts_1", "call_id": "call_ts1", "status": "completed",
                "execution": "client", "arguments": {"query": "x"}}
_TOOL_SEARCH_OUTPUT = {"type": "tool_search_output", "id": "tso_1", "call_id": "call_ts1", "status": "completed",
                       "execution": "client", "tools": [{"type": "function", "name": "f", "parameters": {}}]}
# (which item, a field of it, its value, whether Codex still reads the line): a probe of each field with 5, "x", null
# and the field left out against Codex 0.169 (found beside judge fuzz seed 1085's local shell call: ctxtool read both
# items whatever their fields held); these are the telling ones
TOOL_SEARCH = [
    ("call", ("id",), 5, False), ("call", ("id",), None, True), ("call", ("call_id",), 5, False),
    ("call", ("call_id",), GONE, True), ("call", ("status",), 5, False), ("call", ("status",), GONE, True),
    ("call", ("status",), "x", True), ("call", ("execution",), GONE, False), ("call", ("execution",), 5, False),
    ("call", ("execution",), "x", True), ("call", ("arguments",), GONE, False), ("call", ("arguments",), None, True),
    ("call", ("arguments",), "s", True), ("call", ("zzz",), 5, True), ("call", (PASSTHROUGH,), {"turn_id": -1}, False),
    ("output", ("id",), 5, False), ("output", ("call_id",), 5, False), ("output", ("call_id",), GONE, True),
    ("output", ("status",), GONE, False), ("output", ("status",), None, False), ("output", ("status",), "x", True),
    ("output", ("execution",), None, False), ("output", ("tools",), GONE, False), ("output", ("tools",), "s", False),
    ("output", ("tools",), [5], True), ("output", ("zzz",), 5, True), ("output", (PASSTHROUGH,), {"turn_id": -1}, False),
]


@pytest.mark.parametrize("which,where,value,read", TOOL_SEARCH, ids=str)
def test_a_tool_search_call_and_its_output_are_read_and_sent_as_codex_reads_and_sends_them(tmp_path, which, where,
                                                                                             value, read):
    """A tool search call and its output (written in place of R/local_shell's call) are typed by Codex's reader: a
    field of another type, or a required one missing, makes it skip the line (a call's output it then makes itself,
    rule 10); a line it reads it writes again with the fields it knows, an id or status that is null or missing left
    out, a call_id null or missing sent as null (judged)."""
    import json

    lines = open(os.path.join(FIX, "local_shell.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if _LOCAL_SHELL in ln)
    call, out = json.loads(lines[k]), json.loads(lines[k])
    call["payload"], out["payload"] = dict(_TOOL_SEARCH), dict(_TOOL_SEARCH_OUTPUT)
    d = (call if which == "call" else out)["payload"]
    if value is GONE:
        del d[where[0]]
    else:
        d[where[0]] = value
    lines[k:k + 1] = [json.dumps(o, separators=(",", ":")).encode() + b"\n" for o in (call, out)]
    path = str(tmp_path / "local_shell.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    sent = judge(path)
    mine = "ts_1" if which == "call" else "tso_1"  # (an output Codex makes for the call has an id of its own)
    assert any(it.get("id") == mine for it in sent) is (read and where != ("id",))
    assert compare(view(path), sent) == []
    skipped = [v["lines"] for v in validate_file(path)["violations"] if v["kind"] == "skipped-line"]
    assert skipped == ([] if read else [[k + 1 + (which == "output")]])


@pytest.mark.parametrize("where,value,read", [
    (("id",), 5, False), (("id",), None, True), (("status",), 5, False), (("status",), None, True), (("status",), "x", True),
    ((PASSTHROUGH,), {"turn_id": -1}, False), (("zzz",), 5, True)], ids=str)
def test_a_web_search_calls_id_status_and_passthrough_are_typed_as_codex_reads_them(tmp_path, where, value, read):
    """A web search call's id and status are strings or null and its passthrough is typed as a known item's: another
    type makes Codex skip the line (judged with 0.169; found beside judge fuzz seed 1085's local shell call)."""
    path, k = _edited(tmp_path, "web_search.jsonl", b'"type":"web_search_call"',
                      lambda o: o["payload"].__setitem__(where[0], value))
    sent = judge(path)
    assert any(it.get("action") == {"type": "search", "query": "codex rollout"} for it in sent) is read
    assert compare(view(path), sent) == []


_SERVER_ITEMS = {"image_generation_call": {"type": "image_generation_call", "id": "ig_1", "status": "completed",
                                           "revised_prompt": "p", "result": "aGk="},
                 "compaction": {"type": "compaction", "encrypted_content": "enc"},
                 "compaction_summary": {"type": "compaction_summary", "encrypted_content": "enc"}}


@pytest.mark.parametrize("item,key,value,read", [
    ("image_generation_call", None, None, True), ("image_generation_call", "id", 5, False),
    ("image_generation_call", "id", None, True), ("image_generation_call", "status", GONE, False),
    ("image_generation_call", "status", None, False), ("image_generation_call", "revised_prompt", 5, False),
    ("image_generation_call", "revised_prompt", None, True), ("image_generation_call", "result", GONE, False),
    ("image_generation_call", "result", None, False), ("image_generation_call", "zzz", 5, True),
    ("image_generation_call", PASSTHROUGH, {"turn_id": -1}, False), ("compaction", None, None, True),
    ("compaction", "encrypted_content", 5, False), ("compaction", "encrypted_content", GONE, False),
    ("compaction", "encrypted_content", None, False), ("compaction", "id", 5, False), ("compaction", "id", "c1", True),
    ("compaction", "zzz", 5, True), ("compaction", PASSTHROUGH, {"turn_id": -1}, False),
    ("compaction_summary", None, None, True), ("compaction_summary", "encrypted_content", 5, False)], ids=str)
def test_an_image_generation_call_and_a_compaction_item_are_read_and_sent_as_codex_reads_and_sends_them(
        tmp_path, item, key, value, read):
    """An image generation call and a compaction item (written by hand in place of R/web_search's first call: no
    recording has one) are typed by Codex's reader: a field of another type, or a required one missing, makes it skip
    the line; a line it reads it writes again with the fields it knows (a compaction_summary as a compaction). A
    compaction whose encrypted_content was no string made every command stop with an internal error (judged with
    0.169)."""
    def edit(o):
        o["payload"] = dict(_SERVER_ITEMS[item])
        if key is not None:
            if value is GONE:
                del o["payload"][key]
            else:
                o["payload"][key] = value

    path, _ = _edited(tmp_path, "web_search.jsonl", b'"type":"web_search_call"', edit)
    sent = judge(path)
    assert any(it.get("type") in (item, "compaction") for it in sent) is read
    assert compare(view(path), sent) == []


def _rolled_back(tmp_path, num_turns, before: list | None = None) -> tuple:
    """multi_resume.jsonl (five turns) with ``before`` (``[(role, text)]``) written right before its last prompt and a
    ``thread_rolled_back`` event of ``num_turns`` at the end: (the view, the history Codex sends: the items of its
    request up to the first its new turn adds, which are the ones whose id the file does not hold)."""
    import json

    lines = open(os.path.join(FIX, "multi_resume.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if b'"text":"Fifth.' in ln)
    for j, (role, text) in enumerate(before or ()):
        o = json.loads(lines[k])
        o["payload"] = {"type": "message", "id": f"msg_probe_{j}", "role": role,
                        "content": [{"type": "input_text", "text": x} for x in ([text] if type(text) is str else text)]}
        lines.insert(k + j, json.dumps(o, separators=(",", ":")).encode() + b"\n")
    last = json.loads(lines[-1])
    event = {"timestamp": last["timestamp"], "ordinal": last["ordinal"] + 1, "type": "event_msg",
             "payload": {"type": "thread_rolled_back", "num_turns": num_turns}}
    lines.append(json.dumps(event, separators=(",", ":")).encode() + b"\n")
    data = b"".join(lines)
    path = tmp_path / "multi_resume.jsonl"
    path.write_bytes(data)
    sent = resume_payload(str(path))["input"]
    end = next((i for i, it in enumerate(sent) if i and not (it.get("id") and str(it["id"]).encode() in data)), len(sent))
    return view(str(path)), sent[:end], str(path)


@pytest.mark.parametrize("num_turns,items", [(0, 31), (1, 27), (2, 24), (3, 16), (4, 9), (5, 3), (6, 3),
                                             (2 ** 32 - 1, 3), (2 ** 32, 31), (-1, 31), (1.0, 31), ("1", 31), (None, 31)],
                         ids=str)
def test_a_rollback_drops_the_context_updates_above_its_first_turn_as_codex_does(tmp_path, num_turns, items):
    """A rollback of n turns drops them and the context updates right above the first of them (the environment, the
    model switch, the skills and tools lists before a turn's prompt), back to the first turn (Codex's
    trim_pre_turn_context_updates); a num_turns that is no 32-bit unsigned integer makes Codex skip the line, which
    validate says. ctxtool kept the updates, and rolled the whole history back for 2**32 (judged with 0.169: 2 of
    these 13 differed before, and a third, all five turns, was not seen by the judge's own cut)."""
    ours, sent, path = _rolled_back(tmp_path, num_turns)
    assert len(sent) == items
    assert compare(ours, sent) == []
    skipped = [v["lines"] for v in validate_file(path)["violations"] if v["kind"] == "skipped-line"]
    assert skipped == ([] if type(num_turns) is int and 0 <= num_turns < 2 ** 32 else [[94]])


@pytest.mark.parametrize("role,text,trimmed", [
    ("developer", "<permissions instructions>\nx", True), ("developer", "<model_switch>\nx", True),
    ("developer", "<tools>x", True), ("developer", "<skills_instructions>x", True),
    ("developer", "<context_window>x", True), ("developer", "<rollout_budget>x", True),
    ("developer", "Approved command prefix saved: x", True), ("developer", "<MODEL_SWITCH>x", True),
    ("developer", "  \n<model_switch>x", True), ("developer", "<git_attribution>x", True),
    ("developer", "<model_switchx", False), ("developer", "Hello", False), ("developer", "x <model_switch>", False),
    ("developer", "<environment_context>x", False), ("developer", "<context_window_reminder>x", False),
    ("user", "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>", True), ("user", "hello", False),
    ("user", "<ENVIRONMENT_CONTEXT>x</ENVIRONMENT_CONTEXT>", True), ("user", "  <turn_aborted>x</turn_aborted>\n", True),
    ("user", "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>", True),
    ("user", "<goal_context>x</goal_context>", True), ("user", "<recommended_plugins>x</recommended_plugins>", True),
    ("user", ["hello", "<environment_context>x</environment_context>"], True),
    ("user", "<environment_context>x", False), ("user", "<user_instructions>x</user_instructions>", False),
    ("user", "<startup_context>x</startup_context>", False)],
    ids=str)
def test_a_message_right_above_a_rolled_back_turn_is_trimmed_as_codex_trims_it(tmp_path, role, text, trimmed):
    """A developer message one of whose texts starts with one of Codex's context tags (formats.codex.TRIMMED_DEVELOPER,
    in any ASCII case, after white space), or context the user did not type, written right above a rolled-back
    turn's prompt goes with the turn (judged with 0.169, each of 19 tags and 10 other texts). Context is a user message
    one of whose texts Codex takes for it (formats.codex.CONTEXT_MARKERS: a tag of its list and its closing tag, in any
    ASCII case, white space around; judged on 22 texts): ctxtool took a message whose every text started with a tag
    of its own list, so an environment without its closing tag and an old "<user_instructions>" message were context
    to it, and a text followed by context was not."""
    ours, sent, _ = _rolled_back(tmp_path, 1, [(role, text)])
    assert any(it.get("id") == "msg_probe_0" for it in sent) is not trimmed
    assert compare(ours, sent) == []
