"""A background task's notification (a user line with ``origin.kind == "task-notification"``) is framed as
Claude Code frames it when it sends the line (``ctxtool.formats.claude_origin``, rule 36). The live client
judges the same shapes in ``tests/test_claude_judge.py``; these are the pure function's cases."""

from __future__ import annotations

import os

from ctxtool.formats.claude_origin import CLOSE, NOTICE, OPEN, SCHEDULED, framed

NOTE = {"kind": "task-notification", "producer": "session-task"}


def test_a_string_is_put_in_a_reminder_behind_the_notice():
    assert framed({"origin": NOTE}, "<task-notification>x</task-notification>") == \
        OPEN + NOTICE + "<task-notification>x</task-notification>" + CLOSE


def test_a_line_without_that_origin_is_sent_as_written():
    for obj in ({}, {"origin": None}, {"origin": "task-notification"}, {"origin": ["task-notification"]},
                {"origin": {"kind": "human"}}, {"origin": {"producer": "session-task"}}):
        assert framed(obj, "hi") == "hi"
        assert framed(obj, [{"type": "text", "text": "hi"}]) == [{"type": "text", "text": "hi"}]


def test_a_list_becomes_one_text_block_of_its_texts_then_its_other_blocks():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
    got = framed({"origin": NOTE}, [{"type": "text", "text": "A"}, image, {"type": "text", "text": "B"}])
    assert got == [{"type": "text", "text": OPEN + NOTICE + "A\nB" + CLOSE}, image]


def test_texts_that_are_no_string_are_joined_as_javascript_writes_them():
    got = framed({"origin": NOTE}, [{"type": "text", "text": None}, {"type": "text", "text": 5},
                                    {"type": "text", "text": True}, {"type": "text"}, {"type": "text", "text": [1, None, "x"]},
                                    {"type": "text", "text": {}}, {"type": "text", "text": 10 ** 400}])
    assert got[0]["text"] == OPEN + NOTICE + "\n5\ntrue\n\n1,,x\n[object Object]\nInfinity" + CLOSE


def test_a_closing_tag_inside_is_escaped_and_a_framed_text_is_left_as_it_is():
    got = framed({"origin": NOTE}, "a </system-reminder> b < / SYSTEM-REMINDER > c </system-reminderx>")
    assert got == OPEN + NOTICE + "a &lt;/system-reminder&gt; b &lt;/system-reminder&gt; c </system-reminderx>" + CLOSE
    done = OPEN + NOTICE + "x" + CLOSE
    assert framed({"origin": NOTE}, done) == done
    assert framed({"origin": NOTE}, NOTICE + "y") == OPEN + NOTICE + "y" + CLOSE  # the notice is not written twice


def test_case_is_folded_in_ascii_only_as_javascript_does():
    text = "</\u017fystem-reminder>"  # (a long s: Python's re folds it to s, JavaScript's /i does not)
    assert framed({"origin": NOTE}, text) == OPEN + NOTICE + text + CLOSE
    assert framed({"origin": NOTE}, "</System-Reminder>") == OPEN + NOTICE + "&lt;/system-reminder&gt;" + CLOSE


def test_a_scheduled_prompt_gets_its_own_notice_and_no_reminder():
    origin = {"kind": "task-notification", "subkind": "scheduled-trigger"}
    assert framed({"origin": origin}, "run the report") == SCHEDULED + "run the report"
    assert framed({"origin": origin}, [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == \
        [{"type": "text", "text": SCHEDULED + "a\n\nb"}]
    assert framed({"origin": origin}, NOTICE + "z") == NOTICE + "z"


def test_a_relay_with_its_thread_is_left_as_written():
    origin = {"kind": "task-notification", "subkind": "projects-relay"}
    assert framed({"origin": origin, "hearthRelayThreadTs": "1"}, "hi") == "hi"
    assert framed({"origin": origin}, "hi") == OPEN + NOTICE + "hi" + CLOSE


def test_content_that_is_neither_a_string_nor_a_list_is_left_as_it_is():
    for content in (None, 5, {"a": 1}):
        assert framed({"origin": NOTE}, content) == content


def test_the_c_part_leaves_a_notification_to_the_python_and_reads_other_origins_itself(tmp_path, monkeypatch):
    """The C part reads prompt lines from their bytes; one whose ``origin`` may be a task notification's (its kind's
    name in it, or an escape that could spell it) it leaves to ``normalize``, which frames it; another origin (a typed
    prompt's) it reads itself. The index is the Python's either way."""
    from ctxtool import transcript
    from ctxtool.view import sent_messages
    from tests.support.native_reads import count_normalized, index_digest

    rec = os.path.join(os.path.dirname(__file__), "..", "fixtures", "claude-recorded", "task_notification.jsonl")
    lines = open(rec, "rb").read().splitlines(keepends=True)
    k = next(i for i, x in enumerate(lines) if b'"type":"user"' in x and b'"origin":{"kind":"task-notification"' in x)
    variants = {
        "as-recorded": lines[k],
        "escaped-kind": lines[k].replace(b'"kind":"task-notification"', b'"kind":"task\\u002dnotification"'),
        "another-kind": lines[k].replace(b'"kind":"task-notification"', b'"kind":"human"'),
        "no-object": lines[k].replace(b'"origin":{"kind":"task-notification"', b'"origin":"task-notification","o":{"k":1'),
    }
    seen = count_normalized(monkeypatch)
    for name, line in variants.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(b"".join(lines[:k] + [line] + lines[k + 1:]))
        no = k + 1
        monkeypatch.delenv("CTXTOOL_NATIVE", raising=False)
        seen.clear()
        got = index_digest(path)
        assert (no in seen) is (name in ("as-recorded", "escaped-kind")), name
        monkeypatch.setenv("CTXTOOL_NATIVE", "0")
        assert index_digest(path) == got, name
        sent = str(sent_messages(transcript.scan(str(path), workers=1)))
        assert ("[SYSTEM NOTIFICATION - NOT USER INPUT]" in sent) is (name in ("as-recorded", "escaped-kind")), name
