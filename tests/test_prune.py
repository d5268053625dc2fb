"""Golden cases and library checks for ``ctxtool.prune`` (strategies never touch the file)."""

from __future__ import annotations

import glob
import json
import os

import pytest

from ctxtool import config, prune
from ctxtool.errors import ConfigError
from ctxtool.transcript import scan
from ctxtool.validate import errors, validate_entries, validate_messages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures", "prune")
CASES = sorted(glob.glob(os.path.join(FIXTURES, "*", "*.jsonl")))
CASES = [c for c in CASES if not c.endswith(".expected.jsonl")]


def _case_id(path):
    return os.path.relpath(path, FIXTURES)[: -len(".jsonl")]


def run_case(path):
    with open(path[: -len(".jsonl")] + ".args.json", encoding="utf-8") as f:
        kw = json.load(f)
    strategy = kw.pop("strategy")
    if "now" in kw:
        kw["now"] = prune.parse_now(kw["now"])
    t = scan(path, keep=True)
    return t, prune.simulate(t.format_name, t.entries, strategy, **kw)


def test_every_strategy_has_golden_cases():
    have = {os.path.basename(os.path.dirname(c)) for c in CASES}
    assert have == set(prune.STRATEGIES)


@pytest.mark.parametrize("path", CASES, ids=_case_id)
def test_golden(path):
    _, r = run_case(path)
    base = path[: -len(".jsonl")]
    with open(base + ".expected.json", encoding="utf-8") as f:
        expected = json.load(f)
    report = json.loads(json.dumps(r.to_dict()))
    report.pop("settings")
    assert report == expected
    with open(base + ".expected.jsonl", encoding="utf-8") as f:
        expected_msgs = [json.loads(line) for line in f if line.strip()]
    assert json.loads(json.dumps(r.messages)) == expected_msgs


@pytest.mark.parametrize("path", CASES, ids=_case_id)
def test_pruned_view_passes_the_core_validator(path, tmp_path):
    """Written as Messages JSONL and read back by the core: no API error introduced by pruning."""
    _, r = run_case(path)
    out = tmp_path / "pruned.jsonl"
    out.write_bytes(b"".join(prune.messages_chunks(r.messages)))
    t = scan(str(out), keep=True)
    assert t.format_name == "messages"
    after = {(v.kind, tuple(v.ids)) for v in errors(validate_entries("messages", t.entries))}
    before = {(v.kind, tuple(v.ids)) for v in validate_messages(r.baseline)}
    assert after <= before  # nothing broken by pruning (a few inputs are invalid on purpose)
    assert prune.new_violations(r) == []
    if r.strategy == "history-turns" and r.fired:
        assert after == set()  # the pairing repair fixed what the cut left behind


@pytest.mark.parametrize("path", CASES, ids=_case_id)
def test_unchanged_cases_send_the_provider_view(path):
    t, r = run_case(path)
    if r.actions and r.strategy != "spacebot":
        return
    if r.strategy == "spacebot" and r.details.get("fires"):
        return
    assert r.messages == r.baseline
    assert r.tokens_after == r.tokens_before


def test_baseline_matches_provider_view():
    from ctxtool.view import provider_view

    for path in CASES:
        t, r = run_case(path)
        view = provider_view(t.format_name, t.entries)
        assert [m.role for m in view] == [m["role"] for m in r.baseline]
        assert [m.blocks() for m in view] == [m["content"] for m in r.baseline]


# ------------------------------------------------------------------ openclaw details


def _load(name):
    return run_case(os.path.join(FIXTURES, name + ".jsonl"))[1]


def test_soft_trim_text_is_openclaws():
    r = _load("openclaw/trim-and-clear")
    trimmed = [a for a in r.actions if a["action"] == "trimmed"]
    assert trimmed and trimmed[0]["line"] == 12
    msg = next(m for m in r.messages for b in m["content"] if b.get("tool_use_id") == "toolu_04")
    body = next(b for b in msg["content"] if b.get("tool_use_id") == "toolu_04")["content"][0]["text"]
    assert body.endswith("\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of 9000 chars.]")
    head, rest = body.split("\n...\n", 1)
    assert len(head) == 1500 and len(rest.split("\n\n[Tool result trimmed")[0]) == 1500
    cleared = [a for a in r.actions if a["action"] == "cleared"]
    assert [a["line"] for a in cleared] == [6, 8] and [a["tool"] for a in cleared] == ["read", "exec"]
    texts = [b["content"][0]["text"] for m in r.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert texts.count(config.PRUNING_DEFAULTS["hardClear"]["placeholder"]) == 2
    # the bootstrap read before the first user message is protected
    assert not any(a["line"] == 3 for a in r.actions)


def test_min_prunable_tool_chars_blocks_the_hard_clear():
    r = _load("openclaw/min-prunable-blocks-clear")
    assert {a["action"] for a in r.actions} == {"trimmed"}
    assert "minPrunableToolChars" in r.details["stopped"]


def test_ttl_gate():
    r = _load("openclaw/ttl-not-expired")
    assert not r.fired and "not expired" in r.reason and r.messages == r.baseline
    t = scan(os.path.join(FIXTURES, "openclaw/ttl-not-expired.jsonl"), keep=True)
    r2 = prune.simulate(t.format_name, t.entries, "openclaw", window=14000, now=r.details["now"], ignore_ttl=True,
                        pruning={"minPrunableToolChars": 10000})
    assert r2.fired and r2.details["ttl_gate"] == "ignored"


def test_images_are_collapsed_or_trimmed():
    r = _load("openclaw/images")
    texts = [b["content"] for m in r.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert all(x["type"] == "text" for c in texts[:2] for x in c)
    assert texts[0][0]["text"] == "page title: Home\n[image removed during context pruning]"
    assert "[image removed during context pruning]" in texts[1][0]["text"]
    assert r.details["chars_before"] > 8000 * 4  # images weigh 8,000 chars each


def test_cjk_weighting_crosses_the_threshold():
    r = _load("openclaw/cjk-weighting")
    assert r.fired
    assert r.details["ratio_before"] > 0.3
    assert prune.cjk_len("数据") == 8 and prune.cjk_len("ab") == 2 and prune.cjk_len("한글") == 8


def test_tool_globs_deny_wins():
    pred = prune.tool_predicate({"allow": ["read*", "EXEC"], "deny": ["read_secret"]})
    assert pred("read_file") and pred("exec") and pred("Read_File")
    assert not pred("READ_secret") and not pred("web_fetch")
    assert prune.tool_predicate({})("anything")
    r = _load("openclaw/deny-allow-globs")
    assert {a["tool"] for a in r.actions} == {"read_file", "exec"}


def test_settings_validation():
    s = prune.openclaw_settings({"softTrimRatio": 7, "ttl": "1h"})
    assert s["softTrimRatio"] == 1.0 and s["ttlMs"] == 3_600_000
    with pytest.raises(ConfigError):
        prune.openclaw_settings({"ttl": "soon"})
    with pytest.raises(ConfigError):
        prune.openclaw_settings({"keepLastAssistants": "three"})


def test_presets_from_the_skill_table():
    assert config.pruning_preset("tool-heavy") == {"ttl": "1m", "keepLastAssistants": 1, "minPrunableToolChars": 10000}
    assert config.pruning_preset("conversational")["ttl"] == "5m"
    assert config.pruning_preset("mixed")["keepLastAssistants"] == 2
    assert config.pruning_preset("bursty") == {"ttl": "2m", "keepLastAssistants": 1, "minPrunableToolChars": 10000}
    with pytest.raises(ConfigError):
        config.pruning_preset("nope")


# ------------------------------------------------------------------ other strategies


def test_aceclaw_stubs_and_protects_last_five_turns():
    r = _load("aceclaw/fires")
    stubs = [b["content"][0]["text"] for m in r.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert sum(s.endswith("\n[content pruned...]") for s in stubs) == 3
    assert all(len(s) == 200 + len("\n[content pruned...]") for s in stubs[:3])
    assert all(len(s) == 1500 for s in stubs[3:])  # last 5 turns intact
    assert "target_met" in r.details


def test_history_turns_cut_into_a_tool_span():
    r = _load("history-turns/cut-into-tool-span")
    details = {(a["line"], a["detail"].split(" (")[0]) for a in r.actions}
    assert (8, "orphan tool result") in details
    assert any(a["line"] == 10 and "error assistant turn" in a["detail"] for a in r.actions)
    assert r.messages[0]["role"] == "user"


def test_split_by_token_share_keeps_pairs():
    t, _ = run_case(os.path.join(FIXTURES, "history-share/drops-oldest-chunks.jsonl"))
    units = prune.load_units(t.format_name, t.entries)
    chunks = prune.split_by_token_share(units, 2, lambda u: prune.heuristic_messages([u.message()]))
    assert len(chunks) == 2 and sum(map(len, chunks)) == len(units)
    first_ids = {u.tool_id for u in chunks[0] if u.role == "toolResult"}
    calls = {cid for u in chunks[0] for cid, _ in u.calls}
    assert first_ids == calls


def test_repair_pairing_synthesizes_missing_results():
    a = prune.Unit("assistant", "assistant", [{"type": "tool_use", "id": "t1", "name": "exec", "input": {}},
                                              {"type": "tool_use", "id": "t2", "name": "read", "input": {}}], [1])
    r2 = prune.Unit("toolResult", "toolResult", [{"type": "tool_result", "tool_use_id": "t2", "content": "x"}], [2], tool_id="t2", tool_name="read")
    u = prune.Unit("user", "user", [{"type": "text", "text": "hi"}], [3])
    orphan = prune.Unit("toolResult", "toolResult", [{"type": "tool_result", "tool_use_id": "zz", "content": "x"}], [4], tool_id="zz")
    out, actions = prune.repair_pairing([u, orphan, a, u, r2])
    assert [x.role for x in out] == ["user", "assistant", "toolResult", "toolResult", "user"]
    assert out[2].tool_id == "t1" and out[2].src == "synthetic" and out[3] is r2
    assert prune.MISSING_RESULT_TEXT in json.dumps(out[2].blocks)
    assert sorted(x["action"] for x in actions) == ["added", "dropped"]


def test_spacebot_tiers():
    r = _load("spacebot/emergency")
    assert r.details["fires"] == "emergency"
    assert r.messages[0]["content"][0]["text"] == "[System: 12 older messages were truncated due to context limits]"
    ag = _load("spacebot/aggressive")
    assert ag.details["fires"] == "aggressive" and ag.counts() == {"summarized": 12, "added": 1}
    bg = _load("spacebot/background-only")
    assert bg.details["fires"] == "background" and [t["crossed"] for t in bg.details["tiers"]] == [True, False, False]
    assert bg.messages[0]["content"][0]["text"].startswith(prune.SPACEBOT_SUMMARY_PREFIX + "7 earlier messages.")
    assert '"Run 1."' in bg.messages[0]["content"][0]["text"] and "exec x2" in bg.messages[0]["content"][0]["text"]
    for r in (bg, ag, _load("spacebot/emergency"), _load("spacebot/below-thresholds")):
        after = [t["tokens_after"] for t in r.details["tiers"]]
        assert all(a < r.tokens_before for a in after)  # every tier frees tokens
        assert after[0] > after[1]  # the aggressive tier drains more than the background tier
    assert bg.tokens_after == bg.details["tiers"][0]["tokens_after"] and ag.tokens_after == ag.details["tiers"][1]["tokens_after"]
    below = _load("spacebot/below-thresholds")
    assert not below.fired and below.messages == below.baseline


def test_spacebot_drains_results_with_their_call_and_keeps_earlier_summaries_on_top():
    t, _ = run_case(os.path.join(FIXTURES, "spacebot/aggressive.jsonl"))
    s = {"backgroundFraction": 0.1}  # 2 of 24 messages: the cut would fall between a call and its results
    r = prune.simulate(t.format_name, t.entries, "spacebot", window=1900, spacebot=s)
    assert r.details["tiers"][0]["messages"] == 3 and "dropped" not in r.counts()
    assert prune.new_violations(r) == []
    units = prune.load_units(t.format_name, t.entries)
    old = prune.Unit("user", "summary", [{"type": "text", "text": prune.SPACEBOT_SUMMARY_PREFIX + "earlier work"}])
    kept, _, d = prune.spacebot_prune([old, prune.Unit("assistant", "assistant", [{"type": "text", "text": "ok"}])] + units,
                                      {**prune.SPACEBOT_DEFAULTS}, 1000, 860)
    texts = [b["text"] for u in kept[:2] for b in u.blocks]
    assert texts[0] == prune.SPACEBOT_SUMMARY_PREFIX + "earlier work" and texts[1].startswith(prune.SPACEBOT_SUMMARY_PREFIX)


class _Scripted:
    name = "command"
    offline = False

    def __init__(self, answer=None):
        self.answer, self.prompts = answer, []

    def call(self, system, prompt, *, max_tokens, deadline=None):
        self.prompts.append(prompt)
        if self.answer is None:
            from ctxtool.errors import SummarizerError
            raise SummarizerError("down")
        return self.answer


def test_spacebot_llm_summarizer_and_fallback():
    t, _ = run_case(os.path.join(FIXTURES, "spacebot/background-only.jsonl"))
    llm = _Scripted("Ran exec twice.")
    r = prune.simulate(t.format_name, t.entries, "spacebot", window=1900, summarizer=llm)
    assert r.messages[0]["content"][0]["text"] == prune.SPACEBOT_SUMMARY_PREFIX + "Ran exec twice."
    assert len(llm.prompts) == 1 and "[User]: Run 1." in llm.prompts[0] and "[Tool call exec]" in llm.prompts[0]
    r = prune.simulate(t.format_name, t.entries, "spacebot", window=1900, summarizer=_Scripted(None))
    tier = r.details["tiers"][0]
    assert tier["summary_by"] == "extractive" and tier["summarizer_error"] == "down"


def test_spacebot_settings_from_its_toml():
    cfg = {"defaults": {"compaction": {"background_threshold": 0.8, "aggressive_threshold": 0.85, "emergency_threshold": 0.95}},
           "agents": [{"id": "small-model-bot", "compaction": {"background_threshold": 0.7, "aggressive_threshold": 0.75}}]}
    assert prune.spacebot_settings(cfg) == {"background": 0.8, "aggressive": 0.85, "emergency": 0.95}
    assert prune.spacebot_settings(cfg, "small-model-bot") == {"background": 0.7, "aggressive": 0.75, "emergency": 0.95}
    with pytest.raises(ConfigError):
        prune.spacebot_settings(cfg, "nobody")
    with pytest.raises(ConfigError):
        prune.spacebot_settings({"defaults": {"compaction": {"background_threshold": "high"}}})


def test_counter_is_pluggable():
    t, _ = run_case(os.path.join(FIXTURES, "aceclaw/fires.jsonl"))
    r = prune.simulate(t.format_name, t.entries, "aceclaw", window=4000, counter=lambda msgs: 10_000 * len(msgs))
    assert r.tokens_before == 10_000 * len(r.baseline)
    cl = prune.get_counter("cl100k_base")
    assert 0 < cl([{"role": "user", "content": "hello world"}]) < 5


def test_parse_now():
    assert prune.parse_now("2026-04-17T04:00:00Z") == 1776398400.0
    assert prune.parse_now("1776398400000") == 1776398400.0
    assert prune.parse_now("1776398400") == 1776398400.0
    with pytest.raises(ConfigError):
        prune.parse_now("yesterday")
