"""Review findings, round 4: compact's skip reason, one window rule, calibration, folder
verdict, message labels, config key in errors. One regression test (or a few) per finding."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtool import compact as cp
from ctxtool import window as win
from ctxtool.cli import cli
from ctxtool.estimate import Options, estimate_file
from ctxtool.profile import aggregate, profile_session
from ctxtool.transcript import scan

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
HEADER = {"type": "session", "version": 3, "id": "11111111-2222-4333-8444-555555555555",
          "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
T0 = 1767225600000  # 2026-01-01T00:00:00Z in ms


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


# ---------------------------------------------------------------- builders


def _usage(context=1, total=None):
    return {"input": context, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total or context + 1,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _asst(text, model="claude-sonnet-4-5", context=1, total=None):
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
            "provider": "anthropic", "model": model, "usage": _usage(context, total), "stopReason": "stop"}


def _bash(output):
    return {"role": "bashExecution", "command": "make test", "output": output, "exitCode": 0, "cancelled": False,
            "truncated": False}


def _pi_session(path, msgs):
    """A linear pi v3 session; items with a non-"message" ``type`` are written as entries (``id`` may be given)."""
    out = [HEADER]
    parent = None
    for i, m in enumerate(msgs):
        m = dict(m)
        eid = m.pop("id", None) or f"e{i:07d}"
        ts = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        if m.get("type") not in (None, "message"):
            e = {**m, "id": eid, "parentId": parent, "timestamp": ts}
        else:
            e = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts,
                 "message": {**m, "timestamp": T0 + i * 1000}}
        out.append(e)
        parent = eid
    with open(path, "w", encoding="utf-8") as f:
        for o in out:
            f.write(json.dumps(o) + "\n")
    return str(path)


def _plan(path, keep=20_000):
    return cp.plan_compaction(scan(str(path)), keep_recent_tokens=keep)


# ================================================================ 1. compact: the true skip reason


def test_compact_skip_reason_when_recent_messages_exceed_keep(tmp_path):
    # the audit's case scaled down: the whole context sits in two messages, far over keep-recent-tokens
    p = _pi_session(tmp_path / "two.jsonl", [_user("x" * 400_000), _asst("ok")])
    plan = _plan(p)
    assert plan.skip is not None
    assert "within --keep-recent-tokens" not in plan.skip  # the old, false reason
    assert "reaches back to message 1 of 2" in plan.skip and "first message" in plan.skip
    assert "100,000 tokens" in plan.skip  # the size of the message that holds the budget


def test_compact_skip_reason_within_keep_is_still_said_when_true(tmp_path):
    p = _pi_session(tmp_path / "small.jsonl", [_user("hello"), _asst("hi")])
    plan = _plan(p)
    assert plan.skip and "is within --keep-recent-tokens 20,000" in plan.skip


def test_compact_skip_reason_single_message(tmp_path):
    p = _pi_session(tmp_path / "one.jsonl", [_user("x" * 200_000)])
    plan = _plan(p)
    assert plan.skip and "single message of 50,000 tokens" in plan.skip


def test_compact_splits_a_turn_as_pi_does(tmp_path):
    # two huge messages in one turn: pi cuts at the assistant and summarizes the user as a turn prefix
    p = _pi_session(tmp_path / "split.jsonl", [_user("x" * 400_000), _asst("y" * 400_000)])
    plan = _plan(p)
    assert plan.skip is None
    assert plan.cut.split_turn and [u.role for u in plan.turn_prefix] == ["user"] and not plan.to_summarize
    assert plan.first_kept_entry.id == "e0000001"


def test_compact_cut_at_bash_execution_starts_its_own_turn(tmp_path):
    # pi's findTurnStartIndex starts at the cut entry: a bashExecution is its own turn start,
    # so the messages before it are history, not a turn prefix
    p = _pi_session(tmp_path / "bash.jsonl", [_user("a" * 400), _asst("b" * 400), _bash("z" * 120_000), _asst("done")])
    plan = _plan(p)
    assert plan.skip is None
    assert not plan.cut.split_turn and not plan.turn_prefix
    assert [u.role for u in plan.to_summarize] == ["user", "assistant"]
    assert plan.first_kept_entry.id == "e0000002"


PI_PREPARE = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const dist = process.argv[2];
const { prepareCompaction } = await import(pathToFileURL(dist + "/core/compaction/compaction.js").href);
const entries = readFileSync(process.argv[3], "utf8").trim().split("\n").map((l) => JSON.parse(l)).slice(1);
const p = prepareCompaction(entries, { enabled: true, reserveTokens: 16384, keepRecentTokens: Number(process.argv[4]) });
process.stdout.write(JSON.stringify(p ? { firstKept: p.firstKeptEntryId, summarize: p.messagesToSummarize.length,
  prefix: p.turnPrefixMessages.length, split: p.isSplitTurn } : null));
"""


@pytest.mark.pi
@pytest.mark.parametrize("case", ["two", "split", "bash", "small"])
def test_compact_cut_matches_pis_prepare_compaction(tmp_path, case):
    from tests.support.pi_agent import HARNESS_DIR, _node

    msgs = {
        "two": [_user("x" * 400_000), _asst("ok")],
        "split": [_user("x" * 400_000), _asst("y" * 400_000)],
        "bash": [_user("a" * 400), _asst("b" * 400), _bash("z" * 120_000), _asst("done")],
        "small": [_user("hello"), _asst("hi"), _user("more"), _asst("sure")],
    }[case]
    p = _pi_session(tmp_path / f"{case}.jsonl", msgs)
    script = tmp_path / "prep.mjs"
    script.write_text(PI_PREPARE)
    dist = HARNESS_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist"
    out = subprocess.run([_node(), str(script), str(dist), p, "20000"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    pi = json.loads(out)
    plan = _plan(p)
    assert plan.first_kept_entry is None or plan.first_kept_entry.id == pi["firstKept"]
    if plan.first_kept_entry is None:  # skipped: pi keeps everything from the first message too
        assert pi["summarize"] == 0 and pi["prefix"] == 0 and plan.kept[0].first.id == pi["firstKept"]
    assert len(plan.to_summarize) == pi["summarize"]
    assert len(plan.turn_prefix) == pi["prefix"]
    assert plan.cut.split_turn == (pi["split"] and pi["prefix"] > 0)


# ================================================================ 2. one window rule


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


# ================================================================ 3. calibration


def _cal(path):
    return estimate_file(str(path), Options(calibrate=True))["calibration"]


def test_calibrate_claude_boundary_recommends_nothing():
    cal = _cal(FIX / "estimate" / "claude_boundary.jsonl")
    assert cal["trust"] is None and cal["best_offline"] is None
    assert "not enough recorded turns" in cal["advice"]
    # one turn before and one after the boundary: neither is judged against the other
    assert all(v["error_p90"] is None for v in cal["estimators"].values())


def test_calibrate_pi_compaction_does_not_pool_segments():
    cal = _cal(FIX / "estimate" / "pi_compaction.jsonl")
    assert cal["chars_per_token"] is None  # was 0.134 from a 67-char step
    for name, v in cal["estimators"].items():
        assert v["error_p90"] is None or v["error_p90"] < 1.0, name  # was 179 (17,900%)
    assert cal["trust"] is None and "moves" in cal["advice"]
    h = cal["estimators"]["heuristic"]
    assert [s["segment"] for s in h["segment_baselines"]] == [0, 1]


def _consistent_session(path, baseline=5000, noise=None):
    """Two context segments (a compaction between) of 4 turns each; every recorded usage is
    ``baseline`` + pi's heuristic of what the model saw at that request (times ``noise``)."""
    msgs, running, k = [], 0, 0
    for seg in range(2):
        if seg == 1:  # summary 400 chars (100 tokens) + the kept last turn of segment 1 (200 + 100)
            msgs.append({"type": "compaction", "summary": "s" * 400, "firstKeptEntryId": "keep", "tokensBefore": running})
            running = 100 + 300
        for t in range(4):
            msgs.append({**_user("u" * 800), **({"id": "keep"} if (seg, t) == (0, 3) else {})})
            running += 200
            ctx = int((baseline + running) * (noise[k % len(noise)] if noise else 1))
            k += 1
            msgs.append(_asst("a" * 400, context=ctx, total=ctx + 100))
            running += 100
    return _pi_session(path, msgs)


def test_calibrate_recommends_when_sane_and_refuses_when_not(tmp_path):
    good = _consistent_session(tmp_path / "good.jsonl")
    cal = _cal(good)
    h = cal["estimators"]["heuristic"]
    assert [s["baseline"] for s in h["segment_baselines"]] == [5000, 5000]
    assert cal["trust"] is not None and h["error_p90"] < 0.01
    bad = _consistent_session(tmp_path / "bad.jsonl", noise=[1.0, 2.2, 0.5, 1.7])
    cal = _cal(bad)
    assert cal["trust"] is None and cal["advice"].startswith("no estimator")
    r = run("estimate", "--calibrate", bad)
    assert "trust        none: no estimator" in r.stdout


# ================================================================ 4. folder verdict


def test_profile_folder_verdict_follows_the_sessions():
    ps = [profile_session(str(p)) for p in sorted((FIX / "profile").glob("*.jsonl"))]
    agg = aggregate(ps)
    assert agg["patterns"]["tool-heavy"] == 5 and agg["patterns"]["bursty"] == 2  # pi and Claude Code
    assert agg["pooled_classification"]["pattern"] == "bursty"  # what the pooled wall-time figures say
    assert agg["classification"]["pattern"] == "tool-heavy"
    dist = agg["distribution"]
    assert max(dist, key=lambda k: dist[k]["tokens"]) == "tool-heavy"
    assert sum(d["sessions"] for d in dist.values()) == 11


def test_profile_folder_verdict_is_token_weighted():
    # one big bursty session outweighs a small tool-heavy one: the tokens decide, not the count
    ps = [profile_session(str(FIX / "profile" / f"{c}.jsonl")) for c in ("bursty", "borderline_tool_share")]
    agg = aggregate(ps)
    d = agg["distribution"]
    winner = max(d, key=lambda k: (d[k]["tokens"], d[k]["sessions"]))
    assert agg["classification"]["pattern"] == winner


def test_profile_folder_rule_documented():
    h = run("profile", "-h").stdout
    assert "most conversation tokens" in " ".join(h.split())
    assert "most conversation tokens" in (ROOT / "README.md").read_text()
    r = run("profile", FIX / "profile")
    assert "Aggregate work style: TOOL-HEAVY" in r.stdout and "verdict would be bursty" in r.stdout


# ================================================================ 5. message labels


def test_profile_message_counts_are_labelled():
    f = FIX / "repair" / "pi-clean.jsonl"
    p = profile_session(str(f))
    v = json.loads(run("validate", f, "--json").stdout)["files"][0]
    e = estimate_file(str(f))
    assert p["transcript_messages"] == p["messages"] == 5
    assert p["api_messages"] == v["messages"] == e["messages"] == 4
    out = run("profile", f).stdout
    assert "5 transcript messages (4 API messages" in out and " 5 messages," not in out


# ================================================================ 6. config key in errors


def test_profile_bad_ttl_names_the_key(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"agents": {"defaults": {"contextPruning": {"ttl": "forever"}}}}')
    r = run("profile", FIX / "repair" / "pi-clean.jsonl", "--config", bad)
    assert r.exit_code == 2
    assert "agents.defaults.contextPruning.ttl" in r.stderr and "forever" in r.stderr
    d = json.loads(run("profile", FIX / "repair" / "pi-clean.jsonl", "--config", bad, "--json").stdout)
    assert "agents.defaults.contextPruning.ttl" in d["error"]["reason"]
