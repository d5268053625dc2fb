"""Advice in each agent's own settings: the intent table, agent detection, and golden advice
for one fixture per agent and work style (OpenClaw, pi, Claude Code, Codex x four styles).

Regenerate the golden files after a deliberate change with CTXTOOL_UPDATE_GOLDEN=1."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ctxtool import advice, agents
from ctxtool.profile import profile_session

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "profile")
GOLDEN = os.path.join(FIX, "advice")
STYLES = {"tool-heavy": "tool_heavy", "conversational": "conversational", "mixed": "mixed", "bursty": "bursty"}
PI_NAME = "2026-03-01T09-00-00-000Z_0b0c0d0e-1111-4222-8333-444455556666.jsonl"


def fixture_for(agent: str, style: str, tmp_path) -> tuple[str, str | None]:
    """(session file, --agent): Claude Code fixtures are Claude Code transcripts and Codex's are
    Codex rollouts (both detected from the file; the Codex ones are resumed by the real client in
    tests/test_codex_judge.py); pi's are the pi fixtures under pi's own file name (detected);
    OpenClaw's are the pi fixtures as they are (no mark of pi: OpenClaw)."""
    base = STYLES[style]
    if agent in ("claude", "codex"):
        return os.path.join(FIX, f"{agent}_{base}.jsonl"), None
    src = os.path.join(FIX, f"{base}.jsonl")
    if agent == "pi":
        dst = tmp_path / PI_NAME
        shutil.copy(src, dst)
        return str(dst), None
    return src, None


def advise(path: str, forced: str | None, cfg: dict | None = None) -> dict:
    p = profile_session(path)
    name = forced or p["agent"]["name"]
    rec = advice.recommend(p["classification"]["pattern"], p["long_session"], p["duration_s"])
    cmp = advice.compare(advice.current_settings(cfg, name), rec, name, p["window"])
    return {"session": p, "agent": name, "cmp": cmp}


def golden_view(res: dict) -> dict:
    """What the golden file pins: the agent, the style, each knob (its own key, where it lives,
    the agent's default, the value now, the recommendation, right or change) and the practices."""
    items = [{"intent": i["intent"], "key": i["key"], "path": i["path"], "default": i["default"],
              "current": i["current"], "recommended": i["recommended"], "status": status}
             for status in ("right", "change") for i in res["cmp"][status]]
    items.sort(key=lambda i: (list(agents.INTENTS).index(i["intent"]), i["key"]))
    return {"agent": res["agent"], "pattern": res["session"]["classification"]["pattern"],
            "window": res["session"]["window"], "knobs": items,
            "no_knob": sorted(p["intent"] for p in res["cmp"]["practices"] if p["intent"]),
            "practices": [p["practice"] for p in res["cmp"]["practices"] if not p["intent"]]}


@pytest.mark.parametrize("agent", agents.AGENT_NAMES)
@pytest.mark.parametrize("style", list(STYLES))
def test_golden_advice(agent, style, tmp_path):
    path, forced = fixture_for(agent, style, tmp_path)
    res = advise(path, forced)
    assert res["agent"] == agent
    assert res["session"]["classification"]["pattern"] == style
    got = golden_view(res)
    gold = os.path.join(GOLDEN, f"{agent}-{STYLES[style]}.json")
    if os.environ.get("CTXTOOL_UPDATE_GOLDEN") or not os.path.exists(gold):
        with open(gold, "w") as f:
            json.dump(got, f, indent=1)
            f.write("\n")
    with open(gold) as f:
        assert got == json.load(f)


def test_golden_values_follow_the_skill_table():
    """Spot checks of the golden values against the skill's table, in each agent's own units."""
    def gold(name):
        with open(os.path.join(GOLDEN, name + ".json")) as f:
            return {k["key"]: k for k in json.load(f)["knobs"]}

    assert gold("openclaw-tool_heavy")["reserveTokensFloor"]["recommended"] == 60000
    assert gold("pi-tool_heavy")["compaction.reserveTokens"]["recommended"] == 60000
    assert gold("pi-tool_heavy")["compaction.reserveTokens"]["default"] == "16384"
    assert gold("pi-conversational")["compaction.keepRecentTokens"]["status"] == "right"  # 3 exchanges: pi's default
    assert gold("claude-tool_heavy")["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"]["recommended"] == "70"
    assert gold("claude-mixed")["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"]["recommended"] == "75"
    assert gold("claude-conversational")["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"]["recommended"] == "85"
    assert gold("claude-tool_heavy")["BASH_MAX_OUTPUT_LENGTH"]["recommended"] == "10000"
    assert gold("claude-conversational")["BASH_MAX_OUTPUT_LENGTH"]["status"] == "right"  # default 30000 < 50000
    assert gold("codex-tool_heavy")["model_auto_compact_token_limit"]["recommended"] == 180880  # 70% of the rollout's own 258,400 window
    assert gold("codex-tool_heavy")["tool_output_token_limit"]["recommended"] == 2500
    assert gold("codex-conversational")["tool_output_token_limit"]["status"] == "right"


def test_every_agent_serves_every_intent():
    for a in agents.AGENTS.values():
        served = {k.intent for k in a.knobs} | set(a.no_knob)
        assert served == set(agents.INTENTS), a.name
        assert not ({k.intent for k in a.knobs} & set(a.no_knob)), a.name
        for k in a.knobs:
            assert k.default_text and k.source and k.practice, (a.name, k.key)


def test_long_session_raises_each_agents_trigger():
    rec = advice.recommend("conversational", long_session=True, duration_s=3 * 3600)
    want = {"openclaw": ("reserveTokensFloor", 50000), "pi": ("compaction.reserveTokens", 50000),
            "claude": ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "75"), "codex": ("model_auto_compact_token_limit", 150000)}
    for name, (key, value) in want.items():
        cmp = advice.compare(advice.current_settings(None, name), rec, name, 200_000)
        assert {i["key"]: i["recommended"] for i in cmp["change"] + cmp["right"]}[key] == value, name


def test_codex_limit_is_a_share_of_the_sessions_window():
    rec = advice.recommend("tool-heavy")
    cmp = advice.compare(advice.current_settings(None, "codex"), rec, "codex", 272_000)
    assert {i["key"]: i["recommended"] for i in cmp["change"]}["model_auto_compact_token_limit"] == 190400


def test_a_tighter_cap_is_already_right_but_a_later_trigger_is_not():
    cfg = {"env": {"BASH_MAX_OUTPUT_LENGTH": "5000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "80"}}
    cmp = advice.compare(advice.current_settings(cfg, "claude"), advice.recommend("tool-heavy"), "claude")
    assert "BASH_MAX_OUTPUT_LENGTH" in {i["key"] for i in cmp["right"]}
    assert "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE" in {i["key"] for i in cmp["change"]}


def test_disabled_autocompaction_is_turned_back_on():
    cmp = advice.compare(advice.current_settings({"autoCompactEnabled": False}, "claude"),
                         advice.recommend("mixed"), "claude")
    assert {i["key"]: i["recommended"] for i in cmp["change"]}["autoCompactEnabled"] is True
    cmp = advice.compare(advice.current_settings({"compaction": {"enabled": False}}, "pi"), advice.recommend("mixed"), "pi")
    assert {i["key"]: i["recommended"] for i in cmp["change"]}["compaction.enabled"] is True


# ------------------------------------------------------------------ detection


def test_detect_from_format_entries_and_path():
    assert agents.detect("claude", "/x/s.jsonl")[0] == "claude"
    assert agents.detect("codex", "/x/rollout.jsonl")[0] == "codex"  # the Codex format module's name
    assert agents.detect("pi", "/x/s.jsonl", openclaw_marks=3)[0] == "openclaw"
    assert agents.detect("pi", "/home/u/.openclaw/agents/main/sessions/abc.jsonl")[0] == "openclaw"
    assert agents.detect("pi", "/home/u/.pi/agent/sessions/--w--/x.jsonl")[0] == "pi"
    assert agents.detect("pi", "/tmp/" + PI_NAME)[0] == "pi"
    name, basis = agents.detect("pi", "/tmp/session.jsonl")
    assert name == "openclaw" and "--agent pi" in basis
    assert agents.detect("messages", "/tmp/m.jsonl")[0] == "openclaw"


def test_detect_from_real_files(tmp_path):
    assert profile_session(os.path.join(FIX, "..", "demo", "openclaw-tool-heavy.jsonl"))["agent"]["name"] == "openclaw"
    assert profile_session(os.path.join(FIX, "claude_mixed.jsonl"))["agent"]["name"] == "claude"
    path, _ = fixture_for("pi", "mixed", tmp_path)
    assert profile_session(path)["agent"]["name"] == "pi"


def test_choose_for_a_folder():
    assert agents.choose([("claude", "b"), ("claude", "b"), ("pi", "c")])[0] == "claude"
    name, basis = agents.choose([("claude", "b"), ("pi", "c"), ("pi", "c")])
    assert name == "pi" and "--agent" in basis
