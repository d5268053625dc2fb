"""ctxtool profile advising in each agent's own settings, through the CLI (CliRunner)."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from ctxtool import config
from ctxtool.cli import cli

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "profile")
CLAUDE = os.path.join(FIX, "claude_tool_heavy.jsonl")
PI_STYLE = os.path.join(FIX, "mixed.jsonl")


def run(*args):
    return CliRunner().invoke(cli, ["profile", *args])


def test_claude_session_gets_claude_code_advice():
    r = run(CLAUDE)
    assert r.exit_code == 0, r.output
    assert "Recommended Claude Code settings for tool-heavy work" in r.output
    assert "env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE): unset" in r.output and '-> "70"' in r.output
    assert "reserveTokensFloor" not in r.output and "contextPruning" not in r.output
    assert "no Claude Code setting for: how quickly old tool output is cleared" in r.output
    assert "subagents" in r.output
    d = json.loads(run(CLAUDE, "--json").output)
    assert d["agent"]["name"] == "claude" and d["config"]["compared_with"] == "Claude Code defaults"


def test_agent_option_overrides_detection():
    d = json.loads(run(CLAUDE, "--agent", "pi", "--json").output)
    assert d["agent"] == {**d["agent"], "name": "pi", "basis": "--agent"}
    assert {i["key"] for i in d["changes"]} == {"compaction.reserveTokens", "compaction.keepRecentTokens"}


def test_claude_apply_writes_the_env_block(tmp_path):
    f = tmp_path / "settings.json"
    f.write_text('{\n  "model": "opus"\n}\n')
    r = run(CLAUDE, "--config", str(f), "--apply", "--yes")
    assert r.exit_code == 0, r.output
    assert "env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: unset" in r.output
    assert "start or resume a session" in r.output
    assert json.loads(f.read_text())["env"]["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "70"


def test_codex_write_patch_and_apply(tmp_path):
    f = tmp_path / "config.toml"
    original = '# mine\nmodel = "gpt-5.5"\n'
    f.write_text(original)
    patch = tmp_path / "p.json"
    r = run(PI_STYLE, "--agent", "codex", "--config", str(f), "--write-patch", str(patch))
    assert r.exit_code == 0, r.output
    assert {"op": "add", "path": "/model_auto_compact_token_limit", "value": 150000} in json.loads(patch.read_text())
    assert f.read_text() == original
    r = run(PI_STYLE, "--agent", "codex", "--config", str(f), "--apply", "--yes")
    assert r.exit_code == 0, r.output
    assert "TOML edited with tomlkit" in r.output
    assert f.read_text().startswith("# mine\n")
    assert config.loads_toml(f.read_text())["model_auto_compact_token_limit"] == 150000


def test_wrong_syntax_for_the_agent_is_one_line(tmp_path):
    f = tmp_path / "settings.json"
    f.write_text('{"env": {}}')
    r = run(PI_STYLE, "--agent", "codex", "--config", str(f))
    assert r.exit_code == 2
    assert len(r.output.strip().splitlines()) == 1 and str(f) in r.output and "TOML" in r.output
    t = tmp_path / "config.toml"
    t.write_text('model = "x"\n')
    r = run(CLAUDE, "--config", str(t))  # detected Claude Code, but a TOML file
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "--agent codex" in r.output


def test_bad_env_value_is_one_line(tmp_path):
    f = tmp_path / "settings.json"
    f.write_text('{"env": {"BASH_MAX_OUTPUT_LENGTH": "lots"}}')
    r = run(CLAUDE, "--config", str(f))
    assert r.exit_code == 2
    assert len(r.output.strip().splitlines()) == 1 and "env.BASH_MAX_OUTPUT_LENGTH" in r.output and str(f) in r.output
