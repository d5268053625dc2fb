"""ctxtool profile through the CLI (CliRunner)."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from ctxtool import config
from ctxtool.cli import cli

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "profile")
TOOL = os.path.join(FIX, "tool_heavy.jsonl")


def run(*args, input=None):
    return CliRunner().invoke(cli, ["profile", *args], input=input)


def test_help_documents_rules_and_example():
    r = CliRunner().invoke(cli, ["profile", "-h"])
    assert r.exit_code == 0
    for s in ("bursty", "tool-heavy", "conversational", "mixed", "idle gaps", "Example:", "--write-patch", "60000/1m/1/10000"):
        assert s in r.output


def test_json():
    r = run(TOOL, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    s = d["sessions"][0]
    assert s["classification"]["pattern"] == "tool-heavy"
    assert d["recommendation"]["values"]["reserveTokensFloor"] == 60000
    assert d["aggregate"] is None
    assert d["config"]["compared_with"] == "OpenClaw defaults"


def test_plain_report_when_piped():
    r = run(TOOL)
    assert r.exit_code == 0, r.output
    out = r.output
    assert "Work style: TOOL-HEAVY" in out
    assert "What is eating the context" in out and "fixed baseline" in out
    assert "85%" in out and "#" in out  # ASCII chart
    assert "\x1b[" not in out and "█" not in out
    assert "Change:" in out and "-> 60000" in out


def test_folder_aggregate(tmp_path):
    for c in ("tool_heavy", "conversational", "bursty"):
        shutil.copy(os.path.join(FIX, c + ".jsonl"), tmp_path)
    r = run(str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "3 sessions" in r.output and "Aggregate work style" in r.output
    d = json.loads(run(str(tmp_path), "--json").output)
    assert len(d["sessions"]) == 3 and d["aggregate"]["sessions"] == 3
    assert d["recommendation"]["pattern"] == d["aggregate"]["classification"]["pattern"]


def test_config_already_right(tmp_path):
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(json.dumps({"agents": {"defaults": {"compaction": {"reserveTokensFloor": 60000},
                                                       "contextPruning": {"ttl": "1m", "keepLastAssistants": 1}}}}))
    r = run(TOOL, "--config", str(cfg))
    assert r.exit_code == 0, r.output
    assert r.output.index("Already right:") < r.output.index("Change:")
    assert "minPrunableToolChars): 50000 (default) -> 10000" in r.output
    assert "reserveTokensFloor): " not in r.output  # not listed as a change


def test_write_patch(tmp_path):
    cfg = tmp_path / "openclaw.json"
    cfg.write_text('{"agents": {"defaults": {"compaction": {"reserveTokensFloor": 20000}}}}')
    patch = tmp_path / "p.json"
    r = run(TOOL, "--config", str(cfg), "--write-patch", str(patch))
    assert r.exit_code == 0, r.output
    ops = json.loads(patch.read_text())
    assert {"op": "replace", "path": "/agents/defaults/compaction/reserveTokensFloor", "value": 60000} in ops
    assert any(o["op"] == "add" and o["path"] == "/agents/defaults/contextPruning" for o in ops)
    assert cfg.read_text() == '{"agents": {"defaults": {"compaction": {"reserveTokensFloor": 20000}}}}'


def test_apply_yes(tmp_path):
    cfg = tmp_path / "openclaw.json"
    original = '{\n  // comment\n  agents: { defaults: {} },\n}\n'
    cfg.write_text(original)
    r = run(TOOL, "--config", str(cfg), "--apply", "--yes")
    assert r.exit_code == 0, r.output
    assert f"About to change {cfg}" in r.output and "Rollback note:" in r.output
    backups = glob.glob(str(cfg) + ".bak-*")
    bak = [b for b in backups if not b.endswith(".rollback.txt")]
    assert len(bak) == 1 and open(bak[0]).read() == original
    assert bak[0] in open(bak[0] + ".rollback.txt").read()
    new = config.load(str(cfg))
    assert config.get(new, "agents.defaults.contextPruning.ttl") == "1m"
    assert "// comment" in cfg.read_text()


def test_apply_non_interactive_needs_yes(tmp_path):
    cfg = tmp_path / "openclaw.json"
    cfg.write_text("{}")
    r = run(TOOL, "--config", str(cfg), "--apply")
    assert r.exit_code == 2
    assert cfg.read_text() == "{}"
    assert not glob.glob(str(cfg) + ".bak-*")


def test_apply_needs_config():
    r = run(TOOL, "--apply")
    assert r.exit_code == 2


def test_bad_config_exit_2_one_line(tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text("{ not json")
    r = run(TOOL, "--config", str(cfg))
    assert r.exit_code == 2
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("Error:")
    cfg.write_text('{"agents": {"defaults": {"contextPruning": {"ttl": "soon"}}}}')
    r = run(TOOL, "--config", str(cfg))
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1


def test_missing_file_one_line(tmp_path):
    r = run(str(tmp_path / "nope.jsonl"))
    assert r.exit_code == 3
    assert len(r.output.strip().splitlines()) == 1 and "nope.jsonl" in r.output


@pytest.mark.parametrize("agent, body, path", [
    ("openclaw", '{"agents": 5}', "agents"), ("claude", '{"env": 5}', "env"), ("pi", '{"compaction": 5}', "compaction")])
@pytest.mark.parametrize("how", [["--apply", "--yes"], ["--write-patch", "PATCH"], ["--write-patch", "PATCH", "--json"]])
def test_a_config_value_in_the_way_of_a_change_names_the_config_not_the_session(tmp_path, agent, body, path, how):
    """A config whose value stands where a change must add a member (found by a review: the error named the session
    file): one line naming the config, exit 2, nothing written."""
    cfg = tmp_path / ("settings.json" if agent != "openclaw" else "openclaw.json")
    cfg.write_text(body)
    how = [str(tmp_path / "patch.json") if a == "PATCH" else a for a in how]
    r = run(TOOL, "--agent", agent, "--config", str(cfg), *how)
    assert r.exit_code == 2, r.output
    why = f"{path} is not an object; cannot set {path}."
    if "--json" in how:
        err = json.loads(r.stdout)["error"]
        assert err["path"] == str(cfg) and err["reason"].startswith(why)
    else:
        assert r.stderr.startswith(f"Error: {cfg}: {why}") and r.stderr.count("\n") == 1
    assert cfg.read_text() == body and not (tmp_path / "patch.json").exists()
