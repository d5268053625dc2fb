"""profile on a folder (the verdict follows the sessions, token-weighted, documented), its message
labels, and a bad config value named by its key."""

from __future__ import annotations

import json
from pathlib import Path

from ctxtool.estimate import estimate_file
from ctxtool.profile import aggregate, profile_session
from tests.support.pi_sessions import run

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"


# ---------------------------------------------------------------- folder verdict


def test_profile_folder_verdict_follows_the_sessions():
    ps = [profile_session(str(p)) for p in sorted((FIX / "profile").glob("*.jsonl"))]
    agg = aggregate(ps)
    assert agg["patterns"]["tool-heavy"] == 6 and agg["patterns"]["bursty"] == 3  # pi, Claude Code and Codex
    assert agg["pooled_classification"]["pattern"] == "bursty"  # what the pooled wall-time figures say
    assert agg["classification"]["pattern"] == "tool-heavy"
    dist = agg["distribution"]
    assert max(dist, key=lambda k: dist[k]["tokens"]) == "tool-heavy"
    assert sum(d["sessions"] for d in dist.values()) == 15


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


# ---------------------------------------------------------------- message labels


def test_profile_message_counts_are_labelled():
    f = FIX / "repair" / "pi-clean.jsonl"
    p = profile_session(str(f))
    v = json.loads(run("validate", f, "--json").stdout)["files"][0]
    e = estimate_file(str(f))
    assert p["transcript_messages"] == p["messages"] == 5
    assert p["api_messages"] == v["messages"] == e["messages"] == 4
    out = run("profile", f).stdout
    assert "5 transcript messages (4 API messages" in out and " 5 messages," not in out


# ---------------------------------------------------------------- config key in errors


def test_profile_bad_ttl_names_the_key(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"agents": {"defaults": {"contextPruning": {"ttl": "forever"}}}}')
    r = run("profile", FIX / "repair" / "pi-clean.jsonl", "--config", bad)
    assert r.exit_code == 2
    assert "agents.defaults.contextPruning.ttl" in r.stderr and "forever" in r.stderr
    d = json.loads(run("profile", FIX / "repair" / "pi-clean.jsonl", "--config", bad, "--json").stdout)
    assert "agents.defaults.contextPruning.ttl" in d["error"]["reason"]


# ---------------------------------------------------------------- a folder over worker processes


def test_a_folders_profiles_from_the_workers_are_the_serial_ones(tmp_path, monkeypatch):
    """``profile`` over many files runs one file per worker process (``pool.each``), results in input order: each
    profile is the one a serial loop makes, and a file that fails is that file's failure, naming it."""
    from ctxtool import parallel, pool
    from ctxtool.errors import CtxError
    from ctxtool.profile import profile_file

    monkeypatch.delenv(parallel.ENV, raising=False)
    paths = [str(p) for p in sorted((FIX / "profile").glob("*.jsonl"))]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    paths.insert(3, str(bad))
    got = list(pool.each(profile_file, paths, None, None, None, workers=2, min_bytes=0))
    assert [p for p, _, _ in got] == paths
    for path, result, err in got:
        if path == str(bad):
            assert result is None and isinstance(err, CtxError) and err.path == path
        else:
            assert err is None and result == profile_session(path)
