"""Claude Code merges a turn's rendered context into a tool result's content (``ctxtool/claude_merge.py``): the cases in
``fixtures/claude-merge`` (each file beside what the real client sent for it), the rules one by one, and one case resumed
in the client again."""

from __future__ import annotations

import json
import os

import pytest

from ctxtool import claude_merge
from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support.claude_agent import conversation, reminder_texts

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "claude-merge")
CASES = sorted(n[:-6] for n in os.listdir(HERE) if n.endswith(".jsonl"))
REMINDER = "<system-reminder>\nInstruction files were re-read.\n</system-reminder>"


def test_the_cases_are_there():
    assert len(CASES) == 8 and all(os.path.exists(os.path.join(HERE, n + ".payload.json")) for n in CASES)


@pytest.mark.parametrize("name", CASES)
def test_the_view_sends_what_the_client_sent(name):
    ours = sent_messages(scan(os.path.join(HERE, name + ".jsonl")))
    theirs = json.load(open(os.path.join(HERE, name + ".payload.json"), encoding="utf-8"))
    assert conversation(ours) == conversation(theirs)
    assert reminder_texts(ours) == reminder_texts(theirs)


def test_the_cases_are_built_by_their_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("claude_merge_build", os.path.join(HERE, "build.py"))
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    for name, lines in build.cases().items():
        want = "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for o in lines)
        assert open(os.path.join(HERE, name + ".jsonl"), encoding="utf-8").read() == want


# ---------------------------------------------------------------------------------------------- the rules, one by one

def result(content=claude_merge._MISSING, **kw) -> dict:
    r = {"type": "tool_result", "tool_use_id": "toolu_1"}
    if content is not claude_merge._MISSING:
        r["content"] = content
    return {**r, **kw}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


@pytest.mark.parametrize("content,want", [
    ("out\t", "out\n\n" + REMINDER),
    ("  \n ", REMINDER),
    (claude_merge._MISSING, REMINDER),
    ([text("a\t")], [text("a\t\n"), text(REMINDER)]),
    ([{"type": "text"}], [text("undefined\n"), text(REMINDER)]),  # (JavaScript's undefined + "\n": judged, a review)
    ([{"type": "text", "text": None}], [text("null\n"), text(REMINDER)]),
    ([], [text(REMINDER)]),
    ([{"type": "image", "source": {}}], [{"type": "image", "source": {}}, text(REMINDER)]),
])
def test_a_rendering_goes_into_the_result(content, want):
    got = claude_merge.merged(result(content), [text(REMINDER + "\n")] if isinstance(content, str) else [text(REMINDER)],
                              True)
    assert got["content"] == want


@pytest.mark.parametrize("res,blocks", [
    (result(None), [text(REMINDER)]),  # null content
    (result(5), [text(REMINDER)]),
    (result([{"type": "search_result"}]), [text(REMINDER)]),
    (result([{"type": "tool_reference", "tool_name": "x"}]), [text(REMINDER)]),
    (result("x", tool_use_id="poll_1"), [text(REMINDER)]),
    (result("x", tool_use_id="toolu_pdfread_1"), [text(REMINDER)]),
    (result("x"), [text(REMINDER), {"type": "image", "source": {}}]),
    (result("x"), [text("<system-reminder>\nAttribution for git commits and pull requests you create from here on: x\n"
                        "</system-reminder>")]),
    (result("x"), [text("<system-reminder>\nDisk space is low: 1 GB\n</system-reminder>")]),
    (result("x"), [text("<system-reminder>\n<event kind=\"x\"/>\n</system-reminder>")]),
])
def test_what_the_client_keeps_beside_the_result(res, blocks):
    assert claude_merge.merged(res, blocks, True) is None


def test_an_error_result_takes_it_too():
    assert claude_merge.merged(result("x", is_error=True), [text(REMINDER)], True) == {
        **result("x\n\n" + REMINDER), "is_error": True}


@pytest.mark.parametrize("obj,system_turns,beside", [
    ({"attachment": {"type": "nested_memory"}, "renderedRole": "user"}, True, True),
    ({"attachment": {"type": "nested_memory"}, "renderedRole": "user"}, False, False),
    ({"attachment": {"type": "nested_memory"}}, True, False),  # no recorded role: merged
    ({"attachment": {"type": "instructions"}, "renderedRole": "user"}, True, False),
    ({"attachment": {"type": "instructions", "besideToolResults": True}}, True, True),
    ({"attachment": {"type": "hook_additional_context", "hookName": "prompt.submit"}, "renderedRole": "user"}, True, True),
    ({"attachment": {"type": "hook_additional_context", "hookName": "PostToolUse"}, "renderedRole": "user"}, True, False),
    ({"attachment": {"type": "queued_command", "verifiedSlackHumanTurn": True}}, False, True),
    ({"attachment": {"type": "invoked_skills", "skills": [{"name": "s", "mcpSkill": {}}]}}, False, True),
    ({"attachment": "x"}, True, False),
])
def test_which_renderings_stay_beside(obj, system_turns, beside):
    assert claude_merge.beside(obj, system_turns) is beside


def items(*spec):
    """(kind, key, blocks, keeps) in file order from ("result"|"render"|"typed", key[, keeps])."""
    out = []
    for s in spec:
        kind, key = s[0], s[1]
        blocks = [result("r%s" % key)] if kind == "result" else [text(REMINDER)] if kind == "render" else [text("typed")]
        out.append((kind, key, blocks, len(s) > 2 and s[2]))
    return out


def test_a_rendering_after_a_typed_line_moves_above_it_into_the_result():
    got = claude_merge.fold(items(("result", 1), ("typed", 2), ("render", 3)), True)
    assert got[3] == (1, 0) and got[("block", 1, 0)]["content"] == "r1\n\n" + REMINDER


def test_a_rendering_under_an_earlier_result_line_goes_into_that_lines_result():
    got = claude_merge.fold(items(("result", 1), ("render", 2), ("result", 3)), True)
    assert got[2] == (1, 0)


def test_after_a_rendering_kept_beside_the_next_one_stays_beside_too():
    got = claude_merge.fold(items(("result", 1), ("render", 2, True), ("render", 3)), True)
    assert 2 not in got and 3 not in got


def test_a_typed_line_before_the_result_line_keeps_the_rendering_beside():
    got = claude_merge.fold(items(("typed", 0), ("result", 1), ("render", 2)), True)
    assert got == {}


def test_a_rendering_before_any_result_stays_beside():
    assert claude_merge.fold(items(("render", 0), ("result", 1)), True) == {}


def test_after_reminders_never_merged_a_rendering_still_goes_into_the_result():
    never = text("<system-reminder>\nDisk space is low: 1 GB\n</system-reminder>")
    seq = [("result", 1, [result("r1")], False), ("render", 2, [never], False), ("render", 3, [text(REMINDER)], False)]
    got = claude_merge.fold(seq, True)
    assert 2 not in got and got[3] == (1, 0)


@pytest.mark.claude
def test_the_client_still_merges_as_recorded(tmp_path):
    from tests.support.claude_agent import resume_payload

    path = os.path.join(HERE, "string_result.jsonl")
    theirs = resume_payload(path)["messages"]
    assert conversation(theirs) == conversation(json.load(open(path[:-6] + ".payload.json", encoding="utf-8")))
    assert conversation(sent_messages(scan(path))) == conversation(theirs)
