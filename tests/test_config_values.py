"""OpenClaw config values: a wrong type or an infinite number is a config error (exit 2), never an
internal error; JSON5 number forms; a tools.deny string is one pattern."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ctxtool import config
from ctxtool import prune as lib
from ctxtool.cli import cli
from tests.support.pi_sessions import asst, pi_session, user


def _prune_cli(*args):
    return CliRunner().invoke(cli, ["prune", *map(str, args)])


@pytest.mark.parametrize("pruning", [{"softTrim": 5}, {"hardClear": True}])
def test_config_non_object_nested_setting_is_a_config_error(tmp_path, pruning):
    p = pi_session(tmp_path / "s.jsonl", [user("hi"), asst("ok")])
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(json.dumps({"agents": {"defaults": {"contextPruning": pruning}}}))
    r = _prune_cli(p, "--config", cfg, "--ignore-ttl")
    assert "internal error" not in r.output
    assert r.exit_code == 2


@pytest.mark.parametrize("share", ["abc", [1]])
def test_config_non_numeric_max_history_share_is_a_config_error(tmp_path, share):
    p = pi_session(tmp_path / "s.jsonl", [user("hi"), asst("ok")])
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(json.dumps({"agents": {"defaults": {"compaction": {"maxHistoryShare": share}}}}))
    r = _prune_cli(p, "--config", cfg, "-s", "history-share")
    assert "internal error" not in r.output
    assert r.exit_code == 2


def test_config_infinite_integer_setting_is_a_config_error(tmp_path):
    p = pi_session(tmp_path / "s.jsonl", [user("hi"), asst("ok")])
    cfg = tmp_path / "openclaw.json5"
    cfg.write_text("{agents: {defaults: {contextPruning: {minPrunableToolChars: Infinity}}}}")
    r = _prune_cli(p, "--config", cfg, "--ignore-ttl")
    assert "internal error" not in r.output
    assert r.exit_code == 2


def test_config_json5_number_forms():
    assert config.loads("{softTrimRatio: .5}") == {"softTrimRatio": 0.5}
    assert config.loads("{hardClearRatio: 5.}") == {"hardClearRatio": 5.0}
    assert config.loads("{keepLastAssistants: +2}") == {"keepLastAssistants": 2}
    assert config.loads("{maxChars: 0x10}") == {"maxChars": 16}


def test_config_tools_deny_string_is_not_split_into_characters():
    try:
        s = lib.openclaw_settings({"tools": {"deny": "exec"}})
    except Exception as e:  # a config error is an acceptable answer too
        assert type(e).__name__ == "ConfigError"
        return
    assert lib.tool_predicate(s["tools"])("exec") is False
