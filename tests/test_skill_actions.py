"""The context-management skill's action per pressure level and its warning, in estimate and profile."""

from __future__ import annotations

import os

from ctxtool import skill
from ctxtool.estimate import Options, estimate_file, pressure
from ctxtool.profile import profile_session

DEMO = os.path.join(os.path.dirname(__file__), "..", "fixtures", "demo", "openclaw-tool-heavy.jsonl")


def test_levels_follow_the_skill_and_estimate_pressure():
    for f, level in ((0.0, "low"), (0.4999, "low"), (0.5, "medium"), (0.6999, "medium"), (0.7, "high"),
                     (0.85, "high"), (0.8501, "critical"), (1.2, "critical")):
        assert skill.action(f)["level"] == level == pressure(f)
    assert "more than 3 tool calls" in skill.action(0.6)["action"]
    assert "any tool work" in skill.action(0.8)["action"]
    assert "checkpoint" in skill.action(0.9)["action"] and "/compact" in skill.action(0.9)["action"]


def test_warning_template_with_the_figures_filled_in():
    assert skill.advise(130_000, 200_000)["warning"] is None  # 65% exactly: not yet
    w = skill.advise(140_000, 200_000, tool_calls=10, tool_tokens=30_000)
    assert w["remaining_tool_calls"] == 20 and w["tokens_per_tool_call"] == 3_000
    assert w["warning"] == ("⚠️ Context: 70% (140k/200k). Estimated remaining: ~20 tool calls. "
                            "Spawning sub-agents for remaining tool-heavy work.")
    assert skill.advise(160_000, 200_000)["warning"].endswith("Recommend compacting soon. Writing checkpoint.")
    crit = skill.advise(190_000, 200_000)
    assert crit["tokens_per_tool_call"] == skill.DEFAULT_TOKENS_PER_CALL and crit["remaining_tool_calls"] == 3
    assert crit["warning"].endswith("Context critical. Writing checkpoint now. Suggest /compact or /new.")


def test_estimate_and_profile_report_the_action():
    e = estimate_file(DEMO, Options(window=300_000))
    assert e["skill"]["level"] == e["pressure"] == "critical"
    assert e["skill"]["warning"].startswith("⚠️ Context: 93% (280k/300k)")
    low = estimate_file(DEMO, Options(window=1_000_000))
    assert low["skill"]["level"] == "low" and low["skill"]["warning"] is None
    p = profile_session(DEMO, window=400_000)
    assert p["skill"]["level"] == "high" and "any tool work" in p["skill"]["action"]
    assert p["skill"]["tokens_per_tool_call_source"] == "this session"
