"""A web search call's ``action`` as Codex reads it: an enum tagged by ``type`` whose fields are optional and typed.
A line whose action Codex cannot read is skipped on resume; a tag it does not know is sent as ``{"type": "other"}``;
fields it does not know are left out. The table is what the real Codex 0.169 sent for each shape (recorded
2026-11-30 on ``web_search.jsonl``'s second call, the last eight by a review's round; found by the judge fuzz, seed 1069, case 0114: an action whose
``type`` was removed was sent by ctxtool, skipped by Codex, and every later item compared one place off)."""

from __future__ import annotations

import json
import os

import pytest

from ctxtool import codex_rules
from ctxtool.formats.codex import REFUSED_ACTION, web_search_action
from ctxtool.transcript import scan
from tests.support.codex_corrupt import FIX

SKIPPED = REFUSED_ACTION
ABSENT = None
# (name, the action written, what Codex sent: an action, ABSENT (the item without one) or SKIPPED (no item))
SHAPES = [
    ("no_type", {"url": "https://example.com"}, SKIPPED),
    ("empty_object", {}, SKIPPED),
    ("a_string", "open", SKIPPED),
    ("a_number", 5, SKIPPED),
    ("null", None, ABSENT),
    ("left_out", "LEFT_OUT", ABSENT),
    ("search_query_a_number", {"type": "search", "query": 5}, SKIPPED),
    ("search_queries_holding_a_number", {"type": "search", "queries": ["a", 5]}, SKIPPED),
    ("open_page_url_a_number", {"type": "open_page", "url": 5}, SKIPPED),
    ("find_in_page_pattern_a_number", {"type": "find_in_page", "pattern": 5}, SKIPPED),
    ("unknown_tag_with_fields", {"type": "zzz", "url": 5}, {"type": "other"}),
    ("other_with_fields", {"type": "other", "url": 5}, {"type": "other"}),
    ("camel_case_tag", {"type": "openPage", "url": "u"}, {"type": "other"}),
    ("unknown_field", {"type": "open_page", "url": "u", "x": 1}, {"type": "open_page", "url": "u"}),
    ("queries_only", {"type": "search", "queries": ["a", "b"]}, {"type": "search", "queries": ["a", "b"]}),
    ("search_query_null", {"type": "search", "query": None}, {"type": "search"}),
    ("open_page_no_url", {"type": "open_page"}, {"type": "open_page"}),
    ("find_in_page_url_only", {"type": "find_in_page", "url": "u"}, {"type": "find_in_page", "url": "u"}),
    ("tag_index_0", {"type": 0, "query": "q"}, {"type": "search", "query": "q"}),
    ("tag_index_1", {"type": 1, "url": "u"}, {"type": "open_page", "url": "u"}),
    ("tag_index_2", {"type": 2, "url": "u", "pattern": "p"}, {"type": "find_in_page", "url": "u", "pattern": "p"}),
    ("tag_index_3", {"type": 3}, {"type": "other"}),
    ("tag_index_5", {"type": 5, "url": "u"}, {"type": "other"}),
    ("tag_true", {"type": True}, SKIPPED),
    ("tag_fraction", {"type": 1.5}, SKIPPED),
    ("tag_null", {"type": None, "url": "u"}, SKIPPED),
    ("tag_object", {"type": {"x": 1}}, SKIPPED),
    ("list_empty", [], SKIPPED),
    ("list_index_only", [1], {"type": "open_page"}),
    ("list_tag_and_field", ["open_page", "u"], {"type": "open_page", "url": "u"}),
    ("list_index_and_field", [0, "q"], {"type": "search", "query": "q"}),
    # (a review's round, 2026-11-30: the list form of a variant without fields takes no further element)
    ("list_other_only", ["other"], {"type": "other"}),
    ("list_unknown_only", ["zzz"], {"type": "other"}),
    ("list_index_past_the_last_only", [7], {"type": "other"}),
    ("list_other_and_more", ["other", 1, 2, 3], SKIPPED),
    ("list_unknown_and_more", ["zzz", 1, 2], SKIPPED),
    ("list_index_past_the_last_and_more", [7, "x"], SKIPPED),
    ("list_index_3_and_more", [3, "x"], SKIPPED),
    ("list_other_and_null", ["other", None], SKIPPED),
]
CALL_ID = "we_fake_e7f1e620_2"


def rollout(tmp_path, action) -> str:
    lines = []
    for ln in open(os.path.join(FIX, "web_search.jsonl"), "rb"):
        o = json.loads(ln)
        if o.get("type") == "response_item" and o["payload"].get("id") == CALL_ID:
            if action == "LEFT_OUT":
                del o["payload"]["action"]
            else:
                o["payload"]["action"] = action
        lines.append(json.dumps(o, separators=(",", ":")).encode() + b"\n")
    path = str(tmp_path / "web_search.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    return path


@pytest.mark.parametrize("name,action,sent", SHAPES, ids=[s[0] for s in SHAPES])
def test_the_action_is_read_as_codex_reads_it(name, action, sent):
    assert web_search_action(None if action == "LEFT_OUT" else action) == sent


@pytest.mark.parametrize("name,action,sent", SHAPES, ids=[s[0] for s in SHAPES])
def test_the_view_sends_the_call_as_codex_does_or_leaves_the_line_out(tmp_path, name, action, sent):
    items = [it for it, _ in codex_rules.sent_items(scan(rollout(tmp_path, action)))]
    calls = [it for it in items if it.get("type") == "web_search_call"]
    mine = [it for it in calls if it.get("id") == CALL_ID]
    if sent is SKIPPED:
        assert mine == [] and len(calls) == 2
        return
    assert len(mine) == 1 and len(calls) == 3
    assert mine[0].get("action") == sent and ("action" in mine[0]) == (sent is not None)
    assert set(mine[0]) <= {"type", "id", "status", "action"}  # the passthrough is Codex's own, never sent


LIVE = ["no_type", "a_string", "left_out", "search_query_a_number", "unknown_tag_with_fields", "unknown_field",
        "tag_index_1", "tag_true", "list_index_only", "list_empty", "list_other_and_more", "list_unknown_only"]


@pytest.mark.codex
@pytest.mark.parametrize("name", LIVE)
def test_the_real_codex_agrees(tmp_path, name):
    from tests.support.codex_agent import compare, resume_payload

    action = next(a for n, a, _ in SHAPES if n == name)
    path = rollout(tmp_path, action)
    view = [it for it, _ in codex_rules.sent_items(scan(path))]
    assert compare(view, resume_payload(path)["history"]) == []
