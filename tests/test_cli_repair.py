"""CLI layer of repair/validate: exit codes, output modes, errors as one line."""

import json
import os
import shutil

from click.testing import CliRunner

from ctxtool.cli import cli

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "repair")


def copy(tmp_path, case):
    dst = tmp_path / f"{case}.jsonl"
    shutil.copy(os.path.join(FIXTURES, f"{case}.jsonl"), dst)
    return str(dst)


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_check_exits_1_and_writes_nothing(tmp_path):
    p = copy(tmp_path, "pi-missing-result")
    before = open(p, "rb").read()
    r = run("repair", "--check", p)
    assert r.exit_code == 1, r.output
    assert "would repair" in r.output and "missing-result" in r.output
    assert open(p, "rb").read() == before


def test_check_clean_file_exits_0(tmp_path):
    r = run("repair", "--check", copy(tmp_path, "pi-clean"))
    assert r.exit_code == 0, r.output
    assert "ok" in r.output


def test_in_place_repair_then_clean(tmp_path):
    p = copy(tmp_path, "pi-torn-tail")
    r = run("repair", p)
    assert r.exit_code == 0, r.output
    assert "repaired" in r.output and "backup: " in r.output
    assert run("repair", "--check", p).exit_code == 0


def test_json_lists_every_change(tmp_path):
    p = copy(tmp_path, "pi-separated-orphan")
    r = run("repair", "--check", "--json", p)
    assert r.exit_code == 1
    data = json.loads(r.output)
    f = data["files"][0]
    assert f["format"] == "pi" and f["changed"] and not f["written"]
    kinds = {c["kind"] for c in f["changes"]}
    assert {"moved-result", "orphan-result"} <= kinds
    assert any(v["kind"] == "unexpected-tool-result" for v in f["violations_before"])
    assert [v for v in f["violations_after"] if v["severity"] == "error"] == []


def test_output_option(tmp_path):
    p = copy(tmp_path, "messages-mixed")
    out = tmp_path / "fixed.jsonl"
    before = open(p, "rb").read()
    r = run("repair", "-o", str(out), p)
    assert r.exit_code == 0, r.output
    assert open(p, "rb").read() == before
    assert out.read_bytes() == open(os.path.join(FIXTURES, "messages-mixed.expected.jsonl"), "rb").read()


def test_output_with_two_inputs_is_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["repair", "-o", str(tmp_path / "o.jsonl"), copy(tmp_path, "pi-clean"), copy(tmp_path, "pi-torn-tail")])
    assert r.exit_code == 2
    assert "exactly one input" in r.output


def test_missing_file_is_one_line_exit_3(tmp_path):
    missing = str(tmp_path / "gone.jsonl")
    r = CliRunner().invoke(cli, ["repair", missing])
    assert r.exit_code == 3
    assert r.output.strip().splitlines() == [f"Error: {missing}: no such file or directory"]
    assert "Traceback" not in r.output


def test_one_bad_file_among_good_ones(tmp_path):
    good = copy(tmp_path, "pi-torn-tail")
    bad = tmp_path / "bin.jsonl"
    bad.write_bytes(b"\x00\x01" * 500)
    r = CliRunner().invoke(cli, ["repair", good, str(bad)])
    assert r.exit_code == 1
    assert f"Error: {bad}: binary file, not a JSONL transcript" in r.output
    assert "repaired" in r.output  # the good file was still processed


def test_directory_of_non_sessions(tmp_path):
    d = tmp_path / "notes"
    d.mkdir()
    (d / "readme.txt").write_text("hello")
    r = CliRunner().invoke(cli, ["repair", "--check", str(d)])
    assert r.exit_code == 3
    assert "directory holds no *.jsonl session files" in r.output


def test_directory_summary_table(tmp_path):
    for case in ("pi-clean", "pi-torn-tail", "claude-interrupted-parallel"):
        copy(tmp_path, case)
    r = run("repair", "--check", str(tmp_path))
    assert r.exit_code == 1
    assert r.output.count(".jsonl") >= 3
    assert "claude" in r.output and "would repair" in r.output


def test_validate_reports_api_errors(tmp_path):
    p = copy(tmp_path, "pi-separated-orphan")
    r = run("validate", p)
    assert r.exit_code == 1
    assert "unexpected `tool_use_id` found in `tool_result` blocks: toolu_01GONE" in r.output
    r = run("validate", "--json", p)
    v = json.loads(r.output)["files"][0]["violations"]
    assert {x["kind"] for x in v if x["severity"] == "error"} == {"result-not-first", "unexpected-tool-result"}


def test_validate_names_what_pi_fills_in_as_a_warning(tmp_path):
    """pi-ai answers a call left without a result itself ("No result provided"; judged in test_pi_missing_results):
    the request pi sends is accepted, so this is a warning (it was an error, exit 1); repair still writes a result."""
    p = copy(tmp_path, "pi-missing-result")
    r = run("validate", p)
    assert r.exit_code == 0, r.output
    assert 'pi sends the error result "No result provided" for this call' in r.output and "toolu_01B" in r.output
    v = json.loads(run("validate", "--json", p).output)["files"][0]["violations"]
    assert v[0]["kind"] == "missing-tool-result" and v[0]["severity"] == "warning"
    assert run("repair", "--check", p).exit_code == 1


def test_validate_names_what_claude_code_heals_as_a_warning(tmp_path):
    """Claude Code itself drops a call left without a result when it resumes (judged): the
    request it sends is accepted, so this is a warning naming what the model loses."""
    p = copy(tmp_path, "claude-interrupted-parallel")
    r = run("validate", p)
    assert r.exit_code == 0, r.output
    assert "Claude Code drops these tool calls when it resumes" in r.output and "toolu_01Run" in r.output
    v = json.loads(run("validate", "--json", p).output)["files"][0]["violations"]
    assert v[0]["kind"] == "missing-tool-result" and v[0]["lines"] == [4] and v[0]["severity"] == "warning"


def test_validate_clean(tmp_path):
    r = run("validate", copy(tmp_path, "pi-clean"))
    assert r.exit_code == 0, r.output


def test_plain_output_when_piped_has_no_ansi(tmp_path):
    r = run("repair", "--check", copy(tmp_path, "pi-torn-tail"))
    assert "\x1b[" not in r.output


def test_force_format_mismatch_is_reported(tmp_path):
    r = CliRunner().invoke(cli, ["validate", "--format", "messages", copy(tmp_path, "pi-clean")])
    assert r.exit_code == 3, r.output  # refused: read as Messages, every pi line would be metadata
    assert "does not look like a messages transcript (it looks like pi)" in r.output
    assert "Traceback" not in r.output
