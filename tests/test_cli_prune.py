"""``ctxtool prune`` through the CLI: output modes, settings sources, the input left alone."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.transcript import scan
from ctxtool.validate import errors, validate_entries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "fixtures", "prune")
PI_CASE = os.path.join(FIX, "openclaw", "trim-and-clear.jsonl")
CLAUDE_CASE = os.path.join(FIX, "spacebot", "emergency.jsonl")
MSG_CASE = os.path.join(FIX, "aceclaw", "fires.jsonl")
NOW = "2026-04-17T04:00:00Z"


def run(*args):
    return CliRunner().invoke(cli, ["prune", *map(str, args)], catch_exceptions=False)


def copy(tmp_path, src, name=None):
    dst = tmp_path / (name or os.path.basename(src))
    shutil.copyfile(src, dst)
    return dst


def test_help_has_example():
    r = run("-h")
    assert r.exit_code == 0 and "Example:" in r.output and "--compare" in r.output


@pytest.mark.parametrize("src", [PI_CASE, CLAUDE_CASE, MSG_CASE])
def test_input_bytes_and_mtime_unchanged_after_every_strategy(tmp_path, src):
    f = copy(tmp_path, src)
    os.utime(f, (1_700_000_000, 1_700_000_000))
    digest = hashlib.sha256(f.read_bytes()).hexdigest()
    before = os.stat(f)
    for strategy in ("openclaw", "aceclaw", "history-turns:2", "history-share", "spacebot"):
        out = tmp_path / f"out-{strategy.replace(':', '')}.jsonl"
        for extra in ([], ["--as-session"]):
            r = run(f, "-s", strategy, "--window", 3000, "--now", NOW, "--ignore-ttl", "-o", out, *extra)
            assert r.exit_code == 0, r.output
    r = run(f, "--compare", "--window", 3000, "--json")
    assert r.exit_code == 0
    after = os.stat(f)
    assert hashlib.sha256(f.read_bytes()).hexdigest() == digest
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (before.st_mtime_ns, before.st_size, before.st_ino)
    assert sorted(os.listdir(tmp_path)) == sorted(os.listdir(tmp_path))  # no temp files left behind
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_refuses_to_overwrite_the_input(tmp_path):
    f = copy(tmp_path, PI_CASE)
    data = f.read_bytes()
    r = run(f, "--ignore-ttl", "-o", f)
    assert r.exit_code == 3 and "refusing" in r.output
    assert f.read_bytes() == data


def test_compare_table_plain_text():
    r = run(PI_CASE, "--compare", "--window", 14000, "--now", NOW)
    assert r.exit_code == 0, r.output
    for s in ("openclaw", "aceclaw", "history-turns", "history-share", "spacebot"):
        assert s in r.output
    assert "\x1b[" not in r.output  # plain text when piped


def test_compare_json():
    r = run(PI_CASE, "--compare", "--window", 14000, "--now", NOW, "--json")
    d = json.loads(r.output)
    assert [x["strategy"] for x in d["results"]] == ["openclaw", "aceclaw", "history-turns", "history-share", "spacebot"]
    assert all(x["violations"] == [] for x in d["results"])
    oc = d["results"][0]
    assert oc["tokens_before"] > oc["tokens_after"] and 0 < oc["share_saved"] < 1
    assert {"line", "action", "tool", "role"} <= set(oc["actions"][0])


def test_single_strategy_text_lists_actions():
    r = run(PI_CASE, "--window", 14000, "--now", NOW, "--min-prunable-tool-chars", 10000, "--hard-clear-ratio", 0.6)
    assert r.exit_code == 0, r.output
    assert "cleared" in r.output and "trimmed" in r.output and "tokens before" in r.output


def test_ttl_flag_and_preset(tmp_path):
    # last cache touch 20 s after T0; now = touch + 90 s: expired under the 1m preset, not under the 5m default
    now = "2026-04-17T02:31:50Z"
    r = json.loads(run(PI_CASE, "--window", 14000, "--now", now, "--json").output)["results"][0]
    assert not r["fired"] and "not expired" in r["reason"]
    r = json.loads(run(PI_CASE, "--window", 14000, "--now", now, "--preset", "tool-heavy", "--json").output)["results"][0]
    assert r["fired"] and r["settings"]["keepLastAssistants"] == 1 and r["settings"]["minPrunableToolChars"] == 10000
    r = json.loads(run(PI_CASE, "--window", 14000, "--now", now, "--ttl", "30s", "--json").output)["results"][0]
    assert r["fired"]


def test_config_json5(tmp_path):
    cfg = tmp_path / "openclaw.json"
    cfg.write_text("""{
      // OpenClaw config, JSON5
      agents: { defaults: {
        contextPruning: { mode: 'cache-ttl', ttl: '1m', keepLastAssistants: 1, minPrunableToolChars: 1000,
                          tools: { deny: ['exec'] }, hardClear: { placeholder: '[gone]', }, },
        compaction: { maxHistoryShare: 0.3 },
      } },
    }""")
    r = run(PI_CASE, "--config", cfg, "--window", 14000, "--now", NOW, "--json", "--hard-clear-ratio", 0.3)
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)["results"][0]
    assert res["settings"]["keepLastAssistants"] == 1 and res["settings"]["ttlMs"] == 60000
    assert "exec" not in {a["tool"] for a in res["actions"]}
    assert any(a["action"] == "cleared" for a in res["actions"])
    out = tmp_path / "o.jsonl"
    run(PI_CASE, "--config", cfg, "--window", 14000, "--now", NOW, "--hard-clear-ratio", 0.3, "-o", out)
    assert "[gone]" in out.read_text()
    r = json.loads(run(PI_CASE, "--config", cfg, "-s", "history-share", "--window", 3000, "--json").output)
    assert r["results"][0]["settings"]["maxHistoryShare"] == 0.3


def test_output_messages_jsonl_is_valid(tmp_path):
    out = tmp_path / "pruned.jsonl"
    r = run(CLAUDE_CASE, "-s", "spacebot", "--window", 1600, "-o", out)
    assert r.exit_code == 0, r.output
    t = scan(str(out), keep=True)
    assert t.format_name == "messages"
    assert errors(validate_entries("messages", t.entries)) == []
    first = json.loads(out.read_text().splitlines()[0])
    assert first["content"][0]["text"].startswith("[System: 12 older messages were truncated")


@pytest.mark.parametrize("src,fmt", [(PI_CASE, "pi"), (CLAUDE_CASE, "claude"), (MSG_CASE, "messages")])
def test_as_session_keeps_the_format(tmp_path, src, fmt):
    out = tmp_path / "new.jsonl"
    r = run(src, "-s", "history-turns:2", "-o", out, "--as-session", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    t = scan(str(out), keep=True)
    assert t.format_name == fmt and not t.bad
    assert errors(validate_entries(fmt, t.entries)) == []
    from ctxtool.view import provider_view

    assert len(provider_view(fmt, t.entries)) == d["output"]["messages"] == d["results"][0]["messages_after"]
    if fmt == "pi":
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert lines[0]["type"] == "session" and lines[0]["version"] == 3
        ids = [x["id"] for x in lines[1:]]
        assert len(set(ids)) == len(ids)
        assert [x["parentId"] for x in lines[1:]] == [None] + ids[:-1]


def test_bad_options_exit_2(tmp_path):
    assert run(PI_CASE, "-s", "nope").exit_code == 2
    assert run(PI_CASE, "--soft-trim-ratio", 3).exit_code == 2
    assert run(PI_CASE, "--as-session").exit_code == 2
    assert run(PI_CASE, "--compare", "-o", tmp_path / "x.jsonl").exit_code == 2
    assert run(PI_CASE, "--ttl", "soon").exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{agents: {defaults: {contextPruning: {keepLastAssistants: 'x'}}}}")
    assert run(PI_CASE, "--config", bad).exit_code == 2
    assert run(PI_CASE, "--now", "yesterday").exit_code == 2


def test_missing_file_exit_3(tmp_path):
    assert run(tmp_path / "none.jsonl").exit_code == 3


@pytest.mark.pi
def test_as_session_loads_in_pi(tmp_path):
    from tests.support.pi_agent import load_with_pi, pi_available

    if not pi_available():
        pytest.skip("pi harness not installed")
    out = tmp_path / "pi-out.jsonl"
    r = run(PI_CASE, "-s", "openclaw", "--window", 14000, "--now", NOW, "-o", out, "--as-session", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    res = load_with_pi(str(out))
    assert res["ok"] and res["rewritten"] is False
    assert len(res["llmMessages"]) == len([x for x in out.read_text().splitlines()]) - 1
    assert d["output"]["messages"] <= len(res["llmMessages"])
    text = json.dumps(res["llmMessages"])
    assert "[Old tool result content cleared]" in text or "[Tool result trimmed" in text


def test_spacebot_settings_from_toml_and_flags_and_the_tier_table(tmp_path):
    toml = tmp_path / "config.toml"
    toml.write_text('[defaults.compaction]\nbackground_threshold = 0.95\n\n[[agents]]\nid = "small"\n'
                    '[agents.compaction]\nbackground_threshold = 0.5\n', encoding="utf-8")
    r = run("--json", "-s", "spacebot", "--spacebot-config", toml, "--window", 1900, CLAUDE_CASE)
    res = json.loads(r.output)["results"][0]
    assert res["settings"]["background"] == 0.95 and not res["fired"]
    r = run("--json", "-s", "spacebot", "--spacebot-config", toml, "--spacebot-agent", "small", "--window", 1900,
            "--background-fraction", 0.2, CLAUDE_CASE)
    res = json.loads(r.output)["results"][0]
    assert res["details"]["fires"] == "background" and res["details"]["tiers"][0]["messages"] == 4
    assert res["tokens_after"] < res["tokens_before"] and res["violations"] == []
    r = CliRunner().invoke(cli, ["prune", "-s", "spacebot", "--spacebot-config", str(toml), "--spacebot-agent", "nobody",
                                 CLAUDE_CASE])
    assert r.exit_code == 2 and str(toml) in r.output
    r = run("--compare", "--window", 1750, CLAUDE_CASE)
    assert "spacebot tokens after each tier: background 80% -> 1,067, aggressive 85% -> 808, emergency 95% -> 796" in r.output


def test_a_skipped_unparseable_line_is_said(tmp_path):
    """A torn last line: prune simulates without it and says so, as estimate does (CLI audit: nothing was said,
    and --json had no trace of it)."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "repair", "pi-missing-result.jsonl")
    data = open(src, "rb").read()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[:-30])
    n = data[:-30].count(b"\n") + 1
    r = CliRunner().invoke(cli, ["prune", str(torn)])
    assert f"1 unparseable line(s) skipped (line {n};" in r.output
    r = CliRunner().invoke(cli, ["prune", "--json", str(torn)])
    assert json.loads(r.output)["unparseable_lines"] == [n]
    r = CliRunner().invoke(cli, ["prune", "--json", src])
    assert json.loads(r.output)["unparseable_lines"] == []
