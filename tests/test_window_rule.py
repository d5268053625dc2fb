"""One context-window rule for estimate, profile, prune and compact (``ctxtool.window``)."""

from __future__ import annotations

import json
from pathlib import Path

from ctxtool import compact as cp
from ctxtool import window as win
from ctxtool.estimate import estimate_file
from ctxtool.profile import profile_session
from ctxtool.transcript import scan
from tests.support.pi_sessions import asst as _asst
from tests.support.pi_sessions import pi_session as _pi_session
from tests.support.pi_sessions import run
from tests.support.pi_sessions import user as _user

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"


# ---------------------------------------------------------------- one window rule


DEMO = FIX / "demo" / "openclaw-tool-heavy.jsonl"


def test_window_same_for_estimate_profile_prune_compact_on_demo():
    e = estimate_file(str(DEMO))
    p = profile_session(str(DEMO))
    pr = json.loads(run("prune", DEMO, "--json").stdout)
    plan = cp.plan_compaction(scan(str(DEMO)))
    # claude-sonnet-4-6 with recorded usage 289,317 > 200K: the 1M variant, proved by usage
    assert e["window"] == p["window"] == pr["window"] == plan.window == 1_000_000
    assert e["window_basis"] == p["window_basis"] == pr["window_basis"] == "usage"
    assert "recorded usage 289,317" in e["window_source"] and e["window_source"] == p["window_source"] == pr["window_source"]
    assert p["tokens"]["context_now_share"] < 1.0  # no more 144.9% of a 200,000 window


def test_window_claude_without_usage_proof_is_200k(tmp_path):
    f = _pi_session(tmp_path / "c.jsonl", [_user("hi"), _asst("hello", model="claude-sonnet-4-6", context=150_000)])
    assert estimate_file(f)["window"] == profile_session(f)["window"] == 200_000
    assert json.loads(run("prune", f, "--json").stdout)["window"] == 200_000
    # usage of another model does not prove a window for this one
    g = _pi_session(tmp_path / "g.jsonl", [_user("hi"), _asst("a", model="gemini-2.5-pro", context=600_000),
                                            _user("again"), _asst("b", model="claude-sonnet-4-6", context=10_000)])
    assert estimate_file(g)["window"] == profile_session(g)["window"] == 200_000


def test_window_forced_and_configured(tmp_path):
    f = str(DEMO)
    assert profile_session(f, window=128_000)["window_source"] == "--window"
    assert json.loads(run("prune", f, "--window", "128000", "--json").stdout)["window"] == 128_000
    cfg = {"models": {"providers": {"anthropic": {"models": [{"id": "claude-sonnet-4-6", "contextWindow": 500_000}]}}}}
    p = profile_session(f, cfg=cfg)
    assert p["window"] == 500_000 and p["window_basis"] == "configured"
    assert "models.providers.anthropic.models[0].contextWindow" in p["window_source"]
    capped = profile_session(f, cfg={**cfg, "agents": {"defaults": {"contextTokens": 300_000}}})
    assert capped["window"] == 300_000 and "agents.defaults.contextTokens" in capped["window_source"]
    cpath = tmp_path / "openclaw.json"
    cpath.write_text(json.dumps(cfg))
    d = json.loads(run("profile", f, "--config", cpath, "--json").stdout)
    assert d["sessions"][0]["window"] == 500_000


def test_window_rule_is_one_function():
    ev = win.Evidence()
    assert win.resolve_window(ev, model="claude-opus-4-6").tokens == 200_000
    assert win.resolve_window(ev, model="claude-opus-4-6[1m]").tokens == 1_000_000
    assert win.resolve_window(ev).basis == "default"
    ev.peaks["claude-opus-4-6"] = (250_000, 9)
    w = win.resolve_window(ev, model="claude-opus-4-6")
    assert (w.tokens, w.basis) == (1_000_000, "usage") and "line 9" in w.source
    assert win.resolve_window(ev, model="some-local-model").source.endswith("default 200,000")  # other model's usage
    ev.peaks["some-local-model"] = (250_000, 12)
    unknown = win.resolve_window(ev, model="some-local-model")
    assert unknown.tokens == 200_000 and "recorded usage 250,000 (line 12) exceeds it" in unknown.source
