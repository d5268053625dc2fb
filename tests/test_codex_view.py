"""ctxtool's view of Codex rollouts against what the real Codex CLI sent for them.

``fixtures/codex-recorded/*.payload.json`` hold the ``input`` the client pinned then (0.169.0; 0.171.0 sends the same for each, `test_codex_judge.py`) sent
when it resumed each recorded rollout (``record.py --payloads``); these tests need no client.
"""

import json
import os
import shutil

import pytest

from ctxtool import codex_rules
from ctxtool.formats.codex import normalize
from ctxtool.model import Entry
from ctxtool.transcript import scan
from ctxtool.view import view_file
from tests.support.codex_agent import compare, strip_turn, well_paired

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "codex-recorded")
RECORDED = sorted(n for n in os.listdir(FIX) if n.endswith(".jsonl"))


def view_items(path):
    return [it for it, _ in codex_rules.sent_items(scan(path))]


def sent(name):
    with open(os.path.join(FIX, name[:-6] + ".payload.json"), encoding="utf-8") as f:
        return strip_turn(json.load(f))


@pytest.mark.parametrize("name", RECORDED)
def test_view_is_what_codex_sent(name):
    assert scan(os.path.join(FIX, name)).format_name == "codex"
    assert compare(view_items(os.path.join(FIX, name)), sent(name)) == []


def test_lost_outputs_get_codex_own_aborted_output_with_its_ids():
    """kill -9 mid-tool: both parallel calls lost their outputs; Codex sends "aborted" right
    after each call, with ids derived from the call's item id. The view has the same ids."""
    view = view_items(os.path.join(FIX, "interrupted.jsonl"))
    outs = [it for it in view if it["type"] == "function_call_output"]
    assert [o["output"] for o in outs] == ["aborted", "aborted"]
    recorded = [it for it in sent("interrupted.jsonl") if it["type"] == "function_call_output"]
    assert [o["id"] for o in outs] == [o["id"] for o in recorded]
    kinds = [it["type"] for it in view[-4:]]
    assert kinds == ["function_call", "function_call_output", "function_call", "function_call_output"]
    assert well_paired(view) == []


def test_compaction_replaces_history_by_its_replacement():
    t = scan(os.path.join(FIX, "compacted.jsonl"))
    comp = [e for e in t.entries if e.kind == "compaction"]
    assert len(comp) == 1 and len(comp[0].get("replacement")) == 5
    view = codex_rules.sent_items(t)
    texts = [c.get("text") for it, _ in view for c in it.get("content") or [] if isinstance(c, dict)]
    assert "Read the app." in texts and not any(it.get("type") == "function_call" for it, _ in view)
    # the replacement's items come from the compacted line
    assert {ln for it, lines in view[1:6] for ln in lines} == {comp[0].lineno}


def test_fork_starts_with_its_parents_history(tmp_path):
    meta = scan(os.path.join(FIX, "forked.jsonl")).entries[0]
    assert meta.kind == "header" and meta.get("forked_from") == meta.get("history_base")["thread_id"]
    # alone (no parent beside it), only its own items are known
    alone = tmp_path / "forked.jsonl"
    shutil.copyfile(os.path.join(FIX, "forked.jsonl"), alone)
    own = view_items(str(alone))
    assert [it.get("role") for it in own] == ["developer", "user", "assistant"]
    assert len(view_items(os.path.join(FIX, "forked.jsonl"))) == 9


def test_view_command_output_for_codex():
    r = view_file(os.path.join(FIX, "parallel.jsonl"))
    assert r["format"] == "codex"
    calls = [m for m in r["messages"] if m["role"] == "function_call"]
    assert [m["content"][0]["id"] for m in calls] == ["call_rec_p1", "call_rec_p2", "call_rec_p3", "call_rec_p5"]
    assert all(m["lines"] for m in r["messages"])


def entry(line):
    e = Entry(0, 1, 0, 0, b"\n", "meta", "?")
    normalize(line, e)
    return e


def item(payload):
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item", "payload": payload}


def test_item_kinds_are_read():
    call = entry(item({"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\": [\"ls\"]}", "call_id": "c1"}))
    assert call.role == "assistant" and [c.id for c in call.calls] == ["c1"] and call.blocks[0]["input"] == {"command": ["ls"]}
    out = entry(item({"type": "custom_tool_call_output", "call_id": "c2", "output": "done"}))
    assert out.role == "toolResult" and [r.id for r in out.results] == ["c2"]
    rs = entry(item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "ZZZ"}))
    assert rs.signed_thinking and rs.blocks[0] == {"type": "thinking", "thinking": "think", "signature": "ZZZ"}
    ghost = entry(item({"type": "ghost_snapshot", "ghost_commit": {"id": "x"}}))
    assert ghost.kind == "meta" and "ghost_snapshot" in ghost.get("unsent")
    system = entry(item({"type": "message", "role": "system", "content": [{"type": "input_text", "text": "s"}]}))
    assert system.kind == "meta"
    env = entry(item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>x</environment_context>"}]}))
    assert env.get("context") == "user" and env.get("environment")
    # (without its closing tag Codex takes it for the user's text: judged, test_codex_judge's rollback probes)
    typed = entry(item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]}))
    assert typed.get("context") is None
    tc = entry({"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "last_token_usage": {"input_tokens": 900, "cached_input_tokens": 600, "output_tokens": 40, "total_tokens": 940},
        "total_token_usage": {"total_tokens": 5000}, "model_context_window": 272000}}})
    assert tc.usage.context == 900 and tc.usage.cache_read == 600 and tc.get("context_window") == 272000
    sub = entry({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {
        "id": "s", "source": {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}, "instructions": "old"}})
    assert sub.get("subagent") == "p" and sub.get("legacy_instructions") and not sub.get("base")


def test_heal_is_codex_normalization():
    calls = [{"type": "function_call", "id": "fc_a", "call_id": "a", "name": "x", "arguments": "{}"},
             {"type": "custom_tool_call", "call_id": "b", "name": "apply_patch", "input": "p"},
             {"type": "function_call_output", "call_id": "zzz", "output": "orphan"},
             {"type": "local_shell_call", "call_id": "c", "status": "completed", "action": {}}]
    healed = codex_rules.heal(calls)
    assert [(i["type"], i.get("call_id"), i.get("output")) for i in healed] == [
        ("function_call", "a", None), ("function_call_output", "a", "aborted"),
        ("custom_tool_call", "b", None), ("custom_tool_call_output", "b", "aborted"),
        ("local_shell_call", "c", None), ("function_call_output", "c", "aborted")]
    assert healed[1]["id"] == codex_rules.synthetic_output_id("fco", "fc_a") and "id" not in healed[3]


def test_rollback_and_older_compaction_rules():
    def lines(*objs):
        es = []
        for k, o in enumerate(objs):
            e = Entry(k, k + 1, k * 10, 5, b"\n", "meta", "?")
            normalize(o, e)
            es.append(e)
        return es

    def user(text):
        return item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})

    def bot(text):
        return item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    es = lines(user("<environment_context>e</environment_context>"), user("one"), bot("1"), user("two"), bot("2"),
               {"timestamp": "t", "type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 1}})
    assert [e.lineno for e in codex_rules.sent_entries(es)] == [1, 2, 3]
    es = lines(user("<environment_context>e</environment_context>"), user("one"), bot("1"), user("two"),
               {"timestamp": "t", "type": "compacted", "payload": {"message": "SUMMARY"}}, bot("after"))
    assert [e.lineno for e in codex_rules.sent_entries(es)] == [2, 4, 5, 6]
