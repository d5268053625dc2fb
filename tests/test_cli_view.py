"""``ctxtool view``: the messages the agent sends, as Messages JSONL, JSON or a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


def _odd(tmp_path, old: bytes, new: bytes, name="parallel.jsonl") -> str:
    data = (FIX / "claude-recorded" / name).read_bytes()
    assert old in data
    p = tmp_path / name
    p.write_bytes(data.replace(old, new, 1))
    return str(p)


def test_values_orjson_cannot_write_are_printed_as_json_parse_reads_them(tmp_path):
    """A lone surrogate and an object nested 1,000 deep (both valid JSON the agents read) stopped
    view with an internal error that named no file (found by adding view to the fuzz test). The
    surrogate is shown as the client sends it: U+FFFD (judged: tests/test_claude_judge.py)."""
    path = _odd(tmp_path, b'"role":"user","content":"Look around the project."', b'"role":"user","content":"Look \\ud800 around"')
    r = run("view", path)
    assert r.exit_code == 0, r.output
    assert any(b.get("text") == "Look \ufffd around" for ln in r.output.splitlines() for b in json.loads(ln)["content"])
    deep = b'{"a":' * 999 + b"1" + b"}" * 999
    path = _odd(tmp_path, b'"role":"user","content":"Look around the project."', b'"role":"user","content":[{"type":"text","text":"x","extra":' + deep + b"}]")
    r = run("view", path)
    assert r.exit_code == 0 and "internal error" not in r.output


def test_tool_ids_and_names_of_odd_types_are_read_not_crashed_on(tmp_path):
    path = _odd(tmp_path, b'"id":"toolu_rec_p2","name":"Read"', b'"id":{"x":1},"name":["Read"]')
    r = run("view", path)
    assert r.exit_code == 0, r.output
    assert "internal error" not in r.output


def test_an_error_names_the_file(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"not json at all\n")
    r = run("view", str(p))
    assert r.exit_code != 0 and "s.jsonl" in r.output


def test_the_table_on_a_terminal_takes_every_kind_of_content(tmp_path, monkeypatch):
    """On a terminal view prints a table: a Claude Code system message (content a string) and a damaged
    Messages JSONL message (content items that are no blocks) are summarized, not crashed on. Was: internal
    error on every recorded Claude Code file (CLI audit)."""
    import io
    from rich.console import Console

    from ctxtool import render

    screens: list = []

    def terminal(stderr=False):
        con = Console(file=io.StringIO(), force_terminal=True, width=160, no_color=True)
        screens.append(con.file)
        return con

    monkeypatch.setattr(render, "console", terminal)
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"role":"user","content":["a",5]}\n{"role":"assistant","content":"fine"}\n', encoding="utf-8")
    files = sorted(str(p) for p in (Path(__file__).parent.parent / "fixtures" / "claude-recorded").glob("*.jsonl")
                   if "agent-" not in p.name) + [str(odd)]
    for f in files:
        r = CliRunner().invoke(cli, ["view", f])
        assert r.exit_code == 0, (f, r.output)
        assert "user" in screens[-1].getvalue(), f


@pytest.mark.parametrize("env", [{"FORCE_COLOR": "1"}, {"FORCE_COLOR": "0"}, {"TTY_COMPATIBLE": "1"}])
def test_piped_view_is_messages_jsonl_whatever_rich_is_told(env):
    """CI systems set FORCE_COLOR: `view s.jsonl > out.jsonl` wrote a drawn table instead of the data (found by an
    adversarial review). Those variables are about drawing; piped, view's output is Messages JSONL."""
    import os
    import subprocess
    import sys

    src = Path(__file__).parent.parent / "fixtures" / "claude-recorded" / "parallel.jsonl"
    p = subprocess.run([sys.executable, "-m", "ctxtool", "view", str(src)], capture_output=True, text=True,
                       env={**os.environ, **env}, cwd=Path(__file__).parent.parent, timeout=120)
    assert p.returncode == 0
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert rows and {r["role"] for r in rows} <= {"user", "assistant", "system"}
