"""``ctxtool estimate`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtool import tokenizers
from ctxtool.cli import cli

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "estimate"


def run(*args):
    return CliRunner().invoke(cli, ["estimate", *map(str, args)])


def test_help_has_example():
    res = run("-h")
    assert res.exit_code == 0
    assert "Example:" in res.output and "--tokenizer" in res.output and "--calibrate" in res.output


def test_json_single_file():
    res = run("--json", FIX / "pi_basic.jsonl")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    f = d["files"][0]
    assert f["tokens"] == 1233 and f["window"] == 200_000 and f["pressure"] == "low"
    assert {t["name"] for t in f["triggers"]} == {"pi", "openclaw", "spacebot-background", "spacebot-aggressive",
                                                  "spacebot-emergency", "aceclaw"}
    assert d["failures"] == [] and d["totals"]["tokens"] == 1233


def test_plain_output_when_piped():
    res = run("--top", 2, FIX / "pi_basic.jsonl")
    assert res.exit_code == 0
    out = res.stdout
    assert "1,233 of 200,000 (0.6%)" in out
    assert any(ln.split() == ["pressure", "low"] for ln in out.splitlines())
    for part in ("Compaction triggers", "By role", "By block kind", "By tool", "Largest 2 entries", "60/40"):
        assert part in out
    assert "\x1b[" not in out  # no terminal escapes when piped


def test_window_pressure_and_triggers_crossed():
    res = run("--json", "--window", 1400, FIX / "pi_basic.jsonl")
    f = json.loads(res.stdout)["files"][0]
    assert f["pressure"] == "critical" and f["percent"] == pytest.approx(88.07)
    crossed = {t["name"] for t in f["triggers"] if t["crossed"]}
    # 1,233 > 85% of 1,400 but < 95%; pi/OpenClaw thresholds are negative on so small a window
    assert crossed == {"pi", "openclaw", "spacebot-background", "spacebot-aggressive", "aceclaw"}
    res = run("--json", "--window", 20_000, "--reserve-tokens", 16_384, FIX / "pi_basic.jsonl")
    tr = {t["name"]: t for t in json.loads(res.stdout)["files"][0]["triggers"]}
    assert tr["pi"]["threshold"] == 3_616 and not tr["pi"]["crossed"] and tr["openclaw"]["threshold"] == 0


def test_many_files_and_directory_rows_plus_totals():
    res = run(FIX)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split()[:3] == ["file", "format", "estimator"]
    assert sum(1 for ln in lines if ln.startswith(str(FIX))) == 5
    assert lines[-1].startswith("TOTAL")
    d = json.loads(run("--json", FIX).stdout)
    assert d["totals"]["files"] == 5 and d["totals"]["tokens"] == 1233 + 15 + 25 + 8 + 1226


def test_missing_file_one_line_exit_3():
    res = run("/nonexistent/session.jsonl")
    assert res.exit_code == 3
    assert res.stderr.strip() == "Error: /nonexistent/session.jsonl: no such file or directory"


def test_some_failed_exit_1(tmp_path):
    bad = tmp_path / "notes.jsonl"
    bad.write_text("this is not json\n")
    res = run(FIX / "pi_basic.jsonl", bad)
    assert res.exit_code == 1
    assert str(bad) in res.stderr and res.stderr.count("\n") == 1


def test_usage_unavailable_for_messages():
    res = run("-t", "usage", FIX / "messages.jsonl")
    assert res.exit_code == 3
    assert "no usage" in res.stderr and res.stderr.count("\n") == 1


def test_usage_json_and_calibrate():
    d = json.loads(run("-t", "usage", "--calibrate", "--json", FIX / "claude_split.jsonl").stdout)
    f = d["files"][0]
    assert f["tokens"] == 3065 and f["usage"]["recorded"] == 3055 and f["usage"]["placeholder"] is False
    assert f["calibration"]["available"] and f["calibration"]["turns"] == 2
    out = run("-t", "usage", "--calibrate", FIX / "claude_split.jsonl").stdout
    assert "Calibration against recorded usage" in out and "trust" in out


def test_tiktoken_cli(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    d = json.loads(run("-t", "tiktoken", "--encoding", "o200k_base", "--json", FIX / "messages.jsonl").stdout)
    assert d["files"][0]["encoding"] == "o200k_base" and d["files"][0]["tokens"] > 1200


def test_tiktoken_unavailable_exit_2(monkeypatch):
    monkeypatch.setattr(tokenizers, "data_path", lambda name: None)
    monkeypatch.setattr(tokenizers, "_cache", {})
    res = run("-t", "tiktoken", FIX / "messages.jsonl")
    assert res.exit_code == 2
    assert "pip install" in res.stderr and res.stderr.count("\n") == 1


def test_bad_option_exit_2():
    assert run("--tokenizer", "nope", FIX / "messages.jsonl").exit_code == 2
