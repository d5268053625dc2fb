"""--write-patch and --apply on each agent's own file: Claude Code settings.json (with an
``env`` block and without one), Codex config.toml with comments, pi settings.json under its
proper-lockfile lock, OpenClaw JSON5; each with a rollback (the backup restores the exact bytes
and the agent's values)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import threading
import time

import pytest

from ctxtool import advice, config
from ctxtool.errors import ConfigError, LockTimeout

CLAUDE_WITH_ENV = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "opus",
  "env": {
    "DISABLE_TELEMETRY": "1",
    "BASH_MAX_OUTPUT_LENGTH": "60000"
  },
  "permissions": {
    "allow": ["Bash(npm test:*)"]
  }
}
"""
CLAUDE_NO_ENV = """{
  "model": "sonnet",
  "cleanupPeriodDays": 60
}
"""
CODEX_TOML = """# Codex settings, kept by hand
model = "gpt-5.5"  # the main model
model_reasoning_effort = "high"
tool_output_token_limit = 12000 # raised for long logs

# providers below
[model_providers.local]
name = "Local"   # a proxy
base_url = "http://127.0.0.1:8080/v1"

[profiles.fast]
model = "gpt-5.5-mini"
"""
PI_SETTINGS = """{
  "defaultProvider": "anthropic",
  "compaction": {
    "reserveTokens": 16384
  },
  "theme": "dark"
}
"""
OPENCLAW_JSON5 = """// OpenClaw config
{
  agents: {
    defaults: {
      // pruning tuned by hand
      contextPruning: { mode: 'cache-ttl', ttl: '5m', },
    },
  },
  gateway: { port: 18789 },
}
"""


def changes_for(agent: str, text: str, pattern: str = "tool-heavy", window: int = 200_000):
    syntax = {"codex": "toml", "openclaw": "json5"}.get(agent, "json")
    cfg = config.loads_for(syntax, text)
    cmp = advice.compare(advice.current_settings(cfg, agent), advice.recommend(pattern), agent, window)
    return cfg, cmp["change"]


def planned(tmp_path, name, text, agent, pattern="tool-heavy"):
    """The file written, its settings, the changes and the planned apply (nothing written yet)."""
    f = tmp_path / name
    f.write_text(text)
    cfg, ch = changes_for(agent, text, pattern)
    return f, cfg, ch, advice.plan_apply(str(f), ch, agent)


def apply(tmp_path, name, text, agent, pattern="tool-heavy"):
    f, cfg, ch, plan = planned(tmp_path, name, text, agent, pattern)
    return f, cfg, ch, advice.apply_config(plan)


def rolled_back(f, res, original: str) -> None:
    """The rollback note's own command restores the file byte for byte."""
    note = open(res["rollback_note"]).read()
    assert f"cp -p '{res['backup']}' '{f}'" in note
    shutil.copy2(res["backup"], f)
    assert f.read_text() == original


# ------------------------------------------------------------------ Claude Code settings.json


def test_claude_settings_with_env_block(tmp_path):
    f, cfg, ch, res = apply(tmp_path, "settings.json", CLAUDE_WITH_ENV, "claude")
    new = json.loads(f.read_text())  # strict JSON: what Claude Code parses
    env = new["env"]
    assert env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "70"
    assert env["BASH_MAX_OUTPUT_LENGTH"] == "10000" and env["MAX_MCP_OUTPUT_TOKENS"] == "2500"
    assert env["DISABLE_TELEMETRY"] == "1"  # the user's own variable stays
    assert all(isinstance(v, str) for v in env.values())  # env values are strings in Claude Code's schema
    assert {k: v for k, v in new.items() if k != "env"} == {k: v for k, v in cfg.items() if k != "env"}
    assert list(new) == list(cfg)  # key order kept
    assert '"permissions": {\n    "allow": ["Bash(npm test:*)"]\n  }' in f.read_text()  # untouched text stays as written
    assert open(res["backup"]).read() == CLAUDE_WITH_ENV
    assert "Claude Code" in open(res["rollback_note"]).read()
    rolled_back(f, res, CLAUDE_WITH_ENV)


def test_claude_settings_without_env_block(tmp_path):
    f, cfg, ch, res = apply(tmp_path, "settings.json", CLAUDE_NO_ENV, "claude", "mixed")
    new = json.loads(f.read_text())
    assert new["model"] == "sonnet" and new["cleanupPeriodDays"] == 60
    assert new["env"]["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "75"
    assert f.read_text().startswith('{\n  "model": "sonnet",\n  "cleanupPeriodDays": 60,\n  "env": {\n')
    rolled_back(f, res, CLAUDE_NO_ENV)
    assert "env" not in json.loads(f.read_text())


def test_claude_patch_adds_the_env_block(tmp_path):
    cfg, ch = changes_for("claude", CLAUDE_NO_ENV)
    ops = advice.make_patch(cfg, ch)
    assert [o["path"] for o in ops if o["op"] == "add"] == ["/env"]
    patched = advice.apply_patch(cfg, ops)
    assert patched["env"]["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "70"


# ------------------------------------------------------------------ Codex config.toml


def test_codex_config_toml_keeps_comments_and_layout(tmp_path):
    f, cfg, ch, res = apply(tmp_path, "config.toml", CODEX_TOML, "codex")
    text = f.read_text()
    for line in ("# Codex settings, kept by hand", 'model = "gpt-5.5"  # the main model', "# providers below",
                 'name = "Local"   # a proxy', "[profiles.fast]"):
        assert line in text
    assert "tool_output_token_limit = 2500 # raised for long logs" in text  # the value changed, its comment kept
    new = config.loads_toml(text)
    assert new["model_auto_compact_token_limit"] == 140000  # a top-level key, not inside a table
    assert new["model_providers"]["local"]["base_url"] == "http://127.0.0.1:8080/v1"
    assert text.index("model_auto_compact_token_limit") < text.index("[model_providers.local]")
    # nothing else moved: the lines of the original are all there, in order
    old_lines = [x for x in CODEX_TOML.splitlines() if x and "tool_output_token_limit" not in x]
    new_lines = text.splitlines()
    pos = [new_lines.index(x) for x in old_lines]
    assert pos == sorted(pos)
    assert open(res["backup"]).read() == CODEX_TOML
    rolled_back(f, res, CODEX_TOML)
    assert config.loads_toml(f.read_text())["tool_output_token_limit"] == 12000


def test_codex_patch_is_on_the_toml_document(tmp_path):
    cfg, ch = changes_for("codex", CODEX_TOML)
    ops = advice.make_patch(cfg, ch)
    assert {"op": "replace", "path": "/tool_output_token_limit", "value": 2500} in ops
    assert {"op": "add", "path": "/model_auto_compact_token_limit", "value": 140000} in ops


def test_codex_rejects_json_with_a_hint(tmp_path):
    f = tmp_path / "config.json"
    f.write_text('{"model": "x"}')
    with pytest.raises(ConfigError, match="Codex reads TOML"):
        config.load_for(str(f), "toml")
    f.write_text("model = = 1\n")
    with pytest.raises(ConfigError) as e:
        config.load_for(str(f), "toml")
    assert e.value.path == str(f) and e.value.line == 1


# ------------------------------------------------------------------ pi settings.json and its lock


def test_pi_settings(tmp_path):
    f, cfg, ch, res = apply(tmp_path, "settings.json", PI_SETTINGS, "pi", "bursty")
    new = json.loads(f.read_text())
    assert new["compaction"] == {"reserveTokens": 50000, "keepRecentTokens": 10000}
    assert new["defaultProvider"] == "anthropic" and new["theme"] == "dark"
    assert not os.path.exists(str(f) + ".lock")  # released
    rolled_back(f, res, PI_SETTINGS)


def pi_plan_while_locked(tmp_path):
    """A planned change of pi's settings.json while pi holds its lock (proper-lockfile: a directory)."""
    f, _cfg, _ch, plan = planned(tmp_path, "settings.json", PI_SETTINGS, "pi")
    os.mkdir(str(f) + ".lock")
    return f, plan


def test_pi_lock_is_waited_for(tmp_path):
    f, plan = pi_plan_while_locked(tmp_path)

    def release():
        time.sleep(0.3)
        os.rmdir(str(f) + ".lock")

    t = threading.Thread(target=release)
    t.start()
    res = advice.apply_config(plan, lock_timeout=10)
    t.join()
    assert json.loads(f.read_text())["compaction"]["reserveTokens"] == 60000
    assert res["notices"] == []


def test_pi_fresh_lock_times_out_and_nothing_is_written(tmp_path):
    f, plan = pi_plan_while_locked(tmp_path)
    with pytest.raises(LockTimeout):
        advice.apply_config(plan, lock_timeout=0.2)
    assert f.read_text() == PI_SETTINGS
    assert not glob.glob(str(f) + ".bak-*")


def test_pi_stale_lock_is_taken_over(tmp_path):
    f, plan = pi_plan_while_locked(tmp_path)
    lock = str(f) + ".lock"
    old = time.time() - 60
    os.utime(lock, (old, old))
    res = advice.apply_config(plan, lock_timeout=0.2)
    assert any("stale lock" in n for n in res["notices"])
    assert not os.path.exists(lock)


# ------------------------------------------------------------------ OpenClaw JSON5


def test_openclaw_json5_round_trip_and_rollback(tmp_path):
    f, cfg, ch, res = apply(tmp_path, "openclaw.json", OPENCLAW_JSON5, "openclaw")
    text = f.read_text()
    for c in ("// OpenClaw config", "// pruning tuned by hand", "gateway: { port: 18789 }"):
        assert c in text
    new = config.loads(text)
    assert config.get(new, "agents.defaults.contextPruning.ttl") == "1m"
    assert config.get(new, "agents.defaults.compaction.reserveTokensFloor") == 60000
    rolled_back(f, res, OPENCLAW_JSON5)


def test_refused_when_the_file_changed_since_read(tmp_path):
    f, _cfg, _ch, plan = planned(tmp_path, "config.toml", CODEX_TOML, "codex")
    f.write_text(CODEX_TOML + "# edited meanwhile\n")
    with pytest.raises(Exception):
        advice.apply_config(plan)
    assert f.read_text().endswith("# edited meanwhile\n")
    assert not glob.glob(str(f) + ".bak-*")
