"""--format is checked, not trusted; files that are not sessions say what they are;
compaction refuses files whose structure repair would change."""

import os

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.compact_writer import Options, compact_file
from ctxtool.errors import FormatError, InputError
from ctxtool.summarize import ExtractiveSummarizer
from ctxtool.synth import write_session
from ctxtool.transcript import scan

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def _lines(path, objs):
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    return str(path)


@pytest.mark.parametrize("forced,source", [("pi", "claude"), ("messages", "pi"), ("claude", "pi"), ("pi", "messages")])
def test_forced_format_that_does_not_match_is_refused(tmp_path, forced, source):
    path = tmp_path / "s.jsonl"
    write_session(path, source, seed=1, turns=4)
    with pytest.raises(FormatError) as e:
        scan(str(path), forced)
    assert f"does not look like a {forced} transcript" in str(e.value)
    assert f"it looks like {source}" in str(e.value)


def test_forced_format_mismatch_never_rewrites_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path, "claude", seed=1, turns=4)
    before = path.read_bytes()
    r = CliRunner().invoke(cli, ["repair", "--format", "pi", str(path)])
    assert r.exit_code == 3, r.output
    assert path.read_bytes() == before
    assert not [n for n in os.listdir(tmp_path) if ".bak-" in n]
    assert "does not look like a pi transcript" in r.output and r.output.count("\n") <= 2


def test_forced_format_that_matches_still_settles_ambiguity(tmp_path):
    # a pi file whose header line is torn still reads as pi when forced
    src = open(os.path.join(FIX, "repair", "pi-torn-header.jsonl"), "rb").read()
    path = tmp_path / "s.jsonl"
    path.write_bytes(src)
    assert scan(str(path), "pi").format_name == "pi"


def test_codex_rollout_is_read_as_codex(tmp_path):
    path = _lines(tmp_path / "rollout.jsonl", [
        {"timestamp": "2025-09-25T21:12:14.126Z", "type": "session_meta", "payload": {"id": "0199", "cwd": "/repo"}},
        {"timestamp": "2025-09-25T21:12:15.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_A"}},
    ])
    assert scan(path).format_name == "codex"
    with pytest.raises(FormatError) as e:
        scan(path, "pi")
    assert "looks like codex" in str(e.value) and "refusing --format pi" in str(e.value)


def _refusal(tmp_path, data: bytes) -> str:
    """Why ``scan`` refuses a file holding ``data``."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError) as e:
        scan(str(path))
    return str(e.value)


def test_json_array_lines_are_named(tmp_path):
    assert "JSON array values, not objects" in _refusal(tmp_path, b'[{"role": "user", "content": "hi"}]\n[1, 2]\n')


@pytest.mark.parametrize("compress,name", [("gzip", "gzip"), ("bz2", "bzip2"), ("lzma", "xz")])
def test_compressed_session_is_named(tmp_path, compress, name):
    import importlib

    raw = open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read()
    path = tmp_path / "s.jsonl"
    path.write_bytes(importlib.import_module(compress).compress(raw))
    with pytest.raises(InputError) as e:
        scan(str(path))
    assert str(e.value) == f"{path}: {name}-compressed file: decompress it first"
    r = CliRunner().invoke(cli, ["repair", "--check", str(path)])
    assert r.exit_code == 3 and r.stderr.strip() == f"Error: {path}: {name}-compressed file: decompress it first"


@pytest.mark.parametrize("shape", ["array", "object", "big-array"])
def test_pretty_printed_json_is_named(tmp_path, shape, monkeypatch):
    import json

    from ctxtool import transcript

    objs = [orjson.loads(x) for x in open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read().splitlines()]
    if shape == "big-array":  # above the size parsed whole: told by its indented second line
        monkeypatch.setattr(transcript, "PRETTY_CHECK_BYTES", 100)
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(objs[1] if shape == "object" else objs, indent=2))
    for args in (["validate"], ["estimate"], ["repair", "--check"]):
        r = CliRunner().invoke(cli, [*args, str(path)])
        assert r.exit_code == 3
        assert r.stderr.strip() == (f"Error: {path}: a pretty-printed JSON document, not JSONL (one JSON object per line); "
                                    "convert it first, e.g. with jq -c")


def test_jsonl_whose_lines_are_all_broken_is_not_called_pretty_printed(tmp_path):
    assert "no parseable JSON lines" in _refusal(tmp_path, b'{"type":"session",\n{"type":"message"\n')


def test_compact_refuses_broken_structure_and_leaves_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(open(os.path.join(FIX, "demo", "pi-torn-header.jsonl"), "rb").read())
    before = path.read_bytes()
    res = compact_file(str(path), ExtractiveSummarizer(), Options(keep_recent_tokens=10))
    assert res.status == "failed"
    assert "broken structure" in res.error and "duplicate-id" in res.error and "ctxtool repair" in res.error
    assert path.read_bytes() == before


def test_compact_accepts_reused_tool_ids(tmp_path):
    # ids reused across turns (exec_0 style) are a pairing matter, not structure: still compacted
    path = tmp_path / "s.jsonl"
    write_session(path, "pi", seed=3, turns=20)
    res = compact_file(str(path), ExtractiveSummarizer(), Options())
    assert res.status == "compacted", res.error


def test_config_read_errors_name_the_file_once(tmp_path):
    from ctxtool.config import load
    from ctxtool.errors import ConfigError

    bad = tmp_path / "openclaw.json"
    bad.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ConfigError) as e:
        load(str(bad))
    assert str(e.value) == f"{bad}: cannot read config: not UTF-8 text (byte 0)"


def test_v1_first_kept_index_true_is_not_index_1(tmp_path):
    # JavaScript ignores a boolean firstKeptEntryIndex; Python's bool is an int and must not be read as 1
    path = _lines(tmp_path / "v1.jsonl", [
        {"type": "session", "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "timestamp": "2026-01-01T00:00:01.000Z", "message": {"role": "user", "content": "a", "timestamp": 1}},
        {"type": "compaction", "timestamp": "2026-01-01T00:00:02.000Z", "summary": "s", "firstKeptEntryIndex": True, "tokensBefore": 5},
    ])
    comp = scan(path).entries[-1]
    assert comp.get("first_kept_index") is None

