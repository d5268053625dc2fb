"""``ctxtool view``: the messages the agent sends, as Messages JSONL, JSON or a table."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ctxtool.cli import cli
from tests.support.claude_agent import conversation

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_piped_output_is_messages_jsonl_equal_to_what_claude_code_sent():
    r = run("view", str(FIX / "claude-recorded" / "parallel.jsonl"))
    assert r.exit_code == 0, r.output
    msgs = [json.loads(x) for x in r.output.splitlines()]
    assert all(set(m) == {"role", "content"} for m in msgs)
    sent = json.loads((FIX / "claude-recorded" / "parallel.payload.json").read_text())
    assert conversation(msgs) == conversation(sent)


def test_json_names_the_lines_of_each_message():
    r = run("view", "--json", str(FIX / "repair" / "pi-clean.jsonl"))
    assert r.exit_code == 0
    out = json.loads(r.output)
    assert out["format"] == "pi" and out["messages"]
    assert all(m["lines"] and all(isinstance(n, int) for n in m["lines"]) for m in out["messages"])
    assert out["messages"][0]["role"] == "user"


def test_missing_file_is_one_line_and_exit_3():
    r = run("view", "no-such.jsonl")
    assert r.exit_code == 3 and "no-such.jsonl: no such file" in r.output and "Traceback" not in r.output


def test_help_has_an_example():
    r = run("view", "-h")
    assert r.exit_code == 0 and "Example:" in r.output
