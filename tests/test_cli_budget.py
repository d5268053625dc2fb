"""``ctxtool budget`` on the command line: JSON, --show, exit codes, config files, one-line errors."""

from __future__ import annotations

import json
import os
import shutil

from click.testing import CliRunner

from ctxtool.cli import cli

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "budget")


def _copy(tmp_path, case):
    ws = tmp_path / "ws"
    shutil.copytree(os.path.join(FIXTURES, case, "workspace"), ws)
    return ws


def _run(*args):
    return CliRunner().invoke(cli, ["budget", *map(str, args)])


def test_json_report_and_exit_one_when_something_is_cut(tmp_path):
    ws = _copy(tmp_path, "openclaw-limits")
    r = _run("--json", "--home", tmp_path / "home", ws)
    assert r.exit_code == 1, r.output
    rep = json.loads(r.output)
    assert rep["agent"] == "openclaw" and rep["totals"]["injected_chars"] == 60_000
    assert {a["file"] for a in rep["advice"]} == {"AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"}
    assert all(f["injected"] is None for f in rep["files"])


def test_within_the_limits_exits_zero(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "SOUL.md").write_text("Be kind.\n", encoding="utf-8")
    r = _run(ws)
    assert r.exit_code == 0, r.output
    assert "SOUL.md" in r.output and "kept" in r.output


def test_show_prints_the_injected_text_exactly(tmp_path):
    ws = _copy(tmp_path, "openclaw-limits")
    r = CliRunner().invoke(cli, ["budget", "--show", "SOUL.md", str(ws)])
    assert r.exit_code == 0
    with open(os.path.join(FIXTURES, "openclaw-limits", "injected", "SOUL.md"), encoding="utf-8") as f:
        assert r.output == f.read()


def test_config_files_set_the_limits(tmp_path):
    ws = _copy(tmp_path, "openclaw-within")
    cfg = tmp_path / "openclaw.json"
    cfg.write_text('{agents: {defaults: {bootstrapMaxChars: 30000}}} // json5\n', encoding="utf-8")
    r = _run("--json", "--config", cfg, ws)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["settings"]["maxChars"] == 30_000
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("x" * 100, encoding="utf-8")
    toml = tmp_path / "config.toml"
    toml.write_text("project_doc_max_bytes = 40\n", encoding="utf-8")
    r = _run("--json", "--agent", "codex", "--home", tmp_path / "h", "--config", toml, repo)
    assert r.exit_code == 1
    row = json.loads(r.output)["files"][0]
    assert row["injected_chars"] == 40 and row["status"] == "trimmed"


def test_bad_input_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "empty").mkdir()
    r = _run(tmp_path / "empty")
    assert r.exit_code == 3 and str(tmp_path / "empty") in r.output and "Traceback" not in r.output
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    r = _run("--config", bad, tmp_path)
    assert r.exit_code == 2 and str(bad) in r.output
    r = _run("--agent", "openclaw", "--show", "NOPE.md", tmp_path)
    assert r.exit_code == 3 and "NOPE.md" in r.output


def test_session_baseline_comparison(tmp_path):
    ws = _copy(tmp_path, "openclaw-within")
    demo = os.path.join(os.path.dirname(__file__), "..", "fixtures", "demo", "openclaw-tool-heavy.jsonl")
    r = _run("--json", "--session", demo, ws)
    rep = json.loads(r.output)
    s = rep["session"]
    assert s["budget_tokens"] == rep["totals"]["tokens"]
    assert s["baseline"]["status"] == "measured" and s["gap_tokens"] == s["baseline"]["tokens"] - s["budget_tokens"]


def test_an_import_that_is_no_text_file_is_a_note_not_the_end_of_the_budget(tmp_path):
    """A CLAUDE.md importing a binary file, a FIFO and a missing file: each a note of its own naming the
    importer, the rest counted (a binary import ended the whole budget with exit 3; a FIFO was "not found")."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tool.md").write_bytes(b"\x7fELF\x00\x00binary")
    os.mkfifo(ws / "pipe.md")
    (ws / "CLAUDE.md").write_text("# Rules\n@tool.md\n@pipe.md\n@missing.md\nBe nice.\n", encoding="utf-8")
    r = _run("--json", ws)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    notes = {os.path.basename(s["path"]): (s["status"], s.get("note") or "") for s in out["files"]}
    assert notes["tool.md"][0] == "skipped" and "binary" in notes["tool.md"][1] and "CLAUDE.md" in notes["tool.md"][1]
    assert notes["pipe.md"] == ("skipped", "not a regular file: not loaded")
    assert notes["missing.md"] == ("missing", "imported file not found")
    assert notes["CLAUDE.md"][0] == "kept"


def test_a_session_file_gets_one_line_naming_it(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"type":"user","message":{"role":"user","content":"hi"},"uuid":"a","parentUuid":null}\n',
                 encoding="utf-8")
    r = _run("--agent", "claude", p)
    assert r.exit_code == 3
    assert r.output.strip().splitlines() == [f"Error: {p}: a session transcript, not a context file: budget sizes the "
                                             "files an agent loads (a workspace folder, or files such as CLAUDE.md, "
                                             "AGENTS.md, SOUL.md); to compare them with a session, give it with --session"]


def test_the_session_read_from_standard_input(tmp_path):
    """`--session -` said "-: no such file" (found by an adversarial review): standard input, as everywhere."""
    ws = _copy(tmp_path, "openclaw-within")
    demo = os.path.join(os.path.dirname(__file__), "..", "fixtures", "demo", "openclaw-tool-heavy.jsonl")
    by_name = json.loads(_run("--json", "--session", demo, ws).output)["session"]
    with open(demo, encoding="utf-8") as f:
        r = CliRunner().invoke(cli, ["budget", "--json", "--session", "-", str(ws)], input=f.read())
    assert r.exit_code in (0, 1), r.output
    assert json.loads(r.stdout)["session"] == by_name
