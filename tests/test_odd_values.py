"""Odd types and absurd numbers in a session line: read as missing (with a note), never an internal error.

The minimal inputs of the fuzz findings: ``{"type":[]}``, a pi timestamp of 1 and 400 zeros,
usage of 1e400, a 39-digit cacheRead / output_tokens, block types that are not strings.
"""

import math
import re
import os

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.formats.common import count, ms_to_seconds, parse_ts
from ctxtool.transcript import scan

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
PI_CLEAN = os.path.join(FIX, "repair", "pi-clean.jsonl")
COMMANDS = (["validate"], ["repair", "--check"], ["estimate"], ["profile"], ["prune"], ["compact", "-n"])
HUGE = "9" * 39


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def pi_lines() -> list[bytes]:
    with open(PI_CLEAN, "rb") as f:
        return f.read().splitlines()


def first_assistant(lines: list[bytes]) -> int:
    return next(i for i, ln in enumerate(lines) if b'"role":"assistant"' in ln and b'"usage"' in ln)


def with_value(tmp_path, key: str, raw: str, name="s.jsonl") -> tuple[str, int]:
    """pi-clean with the first assistant's ``key`` (in usage or the message) set to the raw JSON text ``raw``."""
    lines = pi_lines()
    k = first_assistant(lines)
    obj = orjson.loads(lines[k])
    holder = obj["message"]["usage"] if key in obj["message"]["usage"] else obj["message"]
    holder[key] = "\x00value\x00"
    lines[k] = orjson.dumps(obj).replace(b'"\\u0000value\\u0000"', raw.encode())
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path), k + 1


# ---------------------------------------------------------------- pure helpers


@pytest.mark.parametrize("value,expected", [
    (12, 12), (12.9, 12), (0, 0), (None, 0), ("12", 0), (True, 0), ([], 0),
    (-1, None), (float("inf"), None), (float("nan"), None), (10 ** 38, None), (2 ** 53, None), (1e300, None),
])
def test_count_reads_absurd_numbers_as_none_and_non_numbers_as_zero(value, expected):
    assert count(value) == expected


@pytest.mark.parametrize("value", [10 ** 400, float("inf"), float("-inf"), float("nan"), 253402300800000, -62135596800001, True])
def test_epoch_ms_outside_years_1_to_9999_is_no_timestamp(value):
    assert ms_to_seconds(value) is None
    assert parse_ts(value) is None


def test_epoch_ms_in_range_still_read():
    assert ms_to_seconds(1776393581000) == 1776393581.0
    assert parse_ts("2026-04-17T02:39:41Z") == 1776393581.0


# ---------------------------------------------------------------- every command


@pytest.mark.parametrize("line", [b'{"type":[]}', b'{"type":{}}'])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_type_that_is_not_a_string_is_no_internal_error(tmp_path, line, args):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(pi_lines() + [line]) + b"\n")
    r = run(*args, path)
    assert r.exit_code in (0, 1, 3), r.output
    assert "internal error" not in r.output
    if r.exit_code == 3:  # compact refuses what repair would change: one line naming the file
        assert r.stderr.startswith(f"Error: {path}: ")


@pytest.mark.parametrize("line", [b'{"type":[]}', b'{"type":{}}'])
def test_repair_drops_an_entry_whose_type_is_not_a_string(tmp_path, line):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(pi_lines() + [line]) + b"\n")
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, path)
    assert r.exit_code == 0, r.output
    assert "malformed-entry" in r.output
    assert out.read_bytes() == open(PI_CLEAN, "rb").read()


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("fmt,key,raw", [("pi", "timestamp", "1" + "0" * 400), ("pi", "input", "1e400"), ("pi", "cacheRead", HUGE),
                                         ("pi", "output", "-5"), ("pi", "totalTokens", "1e400"),
                                         # Codex token counts (fuzz seed 4242, case 177: profile's OverflowError)
                                         ("codex", "output_tokens", "1" + "0" * 400), ("codex", "input_tokens", HUGE),
                                         ("codex", "total_tokens", "-7")])
def test_absurd_numbers_never_stop_a_command(tmp_path, args, fmt, key, raw):
    path, _ = (with_value if fmt == "pi" else codex_with_usage)(tmp_path, key, raw)
    r = run(*args, path)
    assert r.exit_code == 0, r.output
    assert "internal error" not in r.output and not r.stderr


def test_absurd_usage_is_read_as_missing_with_a_note(tmp_path):
    path, line = with_value(tmp_path, "input", "1e400")
    clean = run("estimate", "--json", "-t", "usage", PI_CLEAN)
    r = run("estimate", "--json", "-t", "usage", path)
    assert r.exit_code == 0, r.output
    f = orjson.loads(r.stdout)["files"][0]
    assert f["notes"] == [f"1 absurd number(s) read as missing (negative, infinite or beyond 2^53 counts; times outside "
                          f"years 1-9999): line {line} usage.input"]
    assert f["tokens"] == orjson.loads(clean.stdout)["files"][0]["tokens"]  # the last usage is another turn's


def test_absurd_count_in_profile_is_a_note(tmp_path):
    path, line = with_value(tmp_path, "cacheRead", HUGE)
    r = run("profile", path)
    assert r.exit_code == 0, r.output
    assert "note: 1 absurd number(s) read as missing" in r.stdout and f"line {line} usage.cacheRead" in r.stdout


def test_absurd_message_timestamp_falls_back_to_the_entry_timestamp(tmp_path):
    path, line = with_value(tmp_path, "timestamp", "1" + "0" * 400)
    t = scan(path)
    e = next(e for e in t.entries if e.lineno == line)
    assert e.ts == parse_ts(orjson.loads(pi_lines()[line - 1])["timestamp"])
    assert e.extra["ignored"] == ("message.timestamp",)


def test_claude_output_tokens_of_39_digits(tmp_path):
    src = os.path.join(FIX, "claude-shapes", "split_parallel.jsonl")
    lines = open(src, "rb").read().splitlines()
    k = next(i for i, ln in enumerate(lines) if b'"output_tokens"' in ln)
    obj = orjson.loads(lines[k])
    obj["message"]["usage"]["output_tokens"] = 0
    lines[k] = orjson.dumps(obj).replace(b'"output_tokens":0', b'"output_tokens":' + HUGE.encode())
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for args in (["profile"], ["estimate", "-t", "usage", "--calibrate"]):
        r = run(*args, path)
        assert r.exit_code == 0, r.output
        assert f"line {k + 1} usage.output_tokens" in r.stdout


def test_absurd_line_is_kept_byte_for_byte_by_repair(tmp_path):
    path, line = with_value(tmp_path, "input", "1e400")
    lines = open(path, "rb").read().splitlines()
    lines.append(lines[-1].replace(b'"parentId":"', b'"parentId":"gone', 1))  # something to repair elsewhere
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, broken)
    assert r.exit_code == 0, r.output
    assert lines[line - 1] in out.read_bytes().splitlines()


def test_block_type_that_is_not_a_string_counts_as_other_content(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"role":"user","content":[{"type":[]},{"type":"text","text":"hi"}]}\n'
                     b'{"role":"assistant","content":[{"type":{}}]}\n')
    t = scan(str(path))
    assert [e.nblocks for e in t.entries] == [2, 1]
    assert not t.entries[1].empty
    # the API refuses a block with no string type (Messages JSONL: the API is the reader): an error
    # validate names, which repair removes
    r = run("validate", "--json", path)
    assert r.exit_code == 1
    assert [v["kind"] for v in orjson.loads(r.output)["files"][0]["violations"]][:2] == ["invalid-block", "invalid-block"]
    out = tmp_path / "fixed.jsonl"
    assert run("repair", "-o", str(out), path).exit_code == 0
    assert out.read_bytes() == b'{"role":"user","content":[{"type":"text","text":"hi"}]}\n'


def test_deeply_nested_text_is_no_recursion_error(tmp_path):
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    path = tmp_path / "m.jsonl"
    path.write_text('{"role":"user","content":"go"}\n'
                    '{"role":"assistant","content":[{"type":"text","text":' + deep + '},{"type":"text","text":"ok"}]}\n'
                    '{"role":"user","content":"next"}\n')
    for args in COMMANDS:
        r = run(*args, path)
        assert r.exit_code in (0, 1), (args, r.output)
        assert "internal error" not in r.output


def test_notes_stay_finite_numbers(tmp_path):
    path, _ = with_value(tmp_path, "input", "1e400")
    f = orjson.loads(run("profile", "--json", path).stdout)["sessions"][0]
    assert all(math.isfinite(v) for v in f["figures"].values() if isinstance(v, float))


def test_deeply_nested_custom_type_does_not_stop_profile(tmp_path):
    """A pi custom entry whose customType is an object nested 1,000 deep (found by the fuzz run
    with seed 7): profile's agent detection must not turn it into text."""
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    header = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
    user = ('{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
            '"message":{"role":"user","content":"hi","timestamp":1767225601000}}')
    custom = '{"type":"custom","id":"c1","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","customType":' + deep + '}'
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join([header, user, custom]) + "\n")
    r = CliRunner().invoke(cli, ["profile", "--json", str(p)])
    assert r.exit_code == 0, r.output
    assert "internal error" not in r.output


@pytest.mark.parametrize("raw", ["1" + "0" * 400, "12345", "{}", "[]", "true"])
def test_a_parent_that_is_not_a_string_is_a_lost_parent_repair_relinks(tmp_path, raw):
    """A parentId holding a number or an object: no entry has it as its id, so pi (its map lookup
    finds nothing) sends only what hangs below the line; repair re-links it to the line before, the
    second tool result goes back under its call, and a second repair finds nothing (fuzz seed 77)."""
    from ctxtool.repair import repair_file
    from ctxtool.view import sent_messages

    lines = pi_lines()
    k = next(i for i, ln in enumerate(lines) if b'"toolCallId":"toolu_01B"' in ln)
    lines[k] = lines[k].replace(b'"parentId":"a1000006"', b'"parentId":' + raw.encode())
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    whole = sent_messages(scan(PI_CLEAN))
    assert len(sent_messages(scan(str(path)))) == len(whole) - 2  # the history is cut there
    report = repair_file(str(path), backup=False)
    assert [(c.kind, c.line) for c in report.changes] == [("dangling-parent", k + 1)]
    assert orjson.loads(path.read_bytes().splitlines()[k])["parentId"] == "a1000006"
    assert not [v for v in report.after if v.severity == "error"]
    assert [m["content"] for m in sent_messages(scan(str(path)))] == [m["content"] for m in whole]
    assert repair_file(str(path), check=True).changes == []


@pytest.mark.pi
def test_pi_cuts_the_history_at_a_parent_that_is_not_a_string_and_loads_the_repair_whole(tmp_path):
    """The judge: pi sends two messages for the damaged file (as ctxtool reads it) and the whole
    conversation after repair."""
    from ctxtool.repair import repair_file
    from ctxtool.view import sent_messages
    from tests.support.pi_agent import load_with_pi

    lines = pi_lines()
    k = next(i for i, ln in enumerate(lines) if b'"toolCallId":"toolu_01B"' in ln)
    lines[k] = lines[k].replace(b'"parentId":"a1000006"', b'"parentId":12345')
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert [m["role"] for m in load_with_pi(path)["llmMessages"]] == ["toolResult", "assistant"]
    assert len(sent_messages(scan(str(path)))) == 2  # the same two, as the Messages API takes them
    repair_file(str(path), backup=False)
    assert load_with_pi(path)["llmMessages"] == load_with_pi(PI_CLEAN)["llmMessages"]
    assert len(sent_messages(scan(str(path)))) == len(sent_messages(scan(PI_CLEAN)))


# ---------------------------------------------------------------- Codex token counts

CODEX_PARALLEL = os.path.join(os.path.dirname(__file__), "..", "fixtures", "codex-recorded", "parallel.jsonl")


def codex_with_usage(tmp_path, key: str, raw: str) -> tuple[str, int]:
    """The recorded Codex rollout with ``key`` of the last ``token_count``'s last_token_usage set to ``raw``."""
    lines = open(CODEX_PARALLEL, "rb").read().splitlines()
    k = max(i for i, ln in enumerate(lines) if b'"token_count"' in ln and b'"last_token_usage"' in ln)
    lines[k] = re.sub(rb'("last_token_usage":\{[^}]*"' + key.encode() + rb'":)\d+', rb"\g<1>" + raw.encode(), lines[k], count=1)
    assert raw.encode() in lines[k]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path), k + 1


def test_absurd_codex_token_count_is_read_as_missing_with_a_note(tmp_path):
    path, line = codex_with_usage(tmp_path, "output_tokens", "1" + "0" * 400)
    r = run("profile", path)
    assert r.exit_code == 0, r.output
    assert f"line {line} payload.info.last_token_usage.output_tokens" in r.stdout


# ---------------------------------------------------------------- arrays that are not arrays (fuzz seed 909, case 1869)

PI_COMPACTION = os.path.join(os.path.dirname(__file__), "..", "fixtures", "estimate", "pi_compaction.jsonl")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("value", ["1.5", '"a.py"', '{"a":1}'])
def test_a_compaction_whose_file_lists_are_no_arrays_stops_no_command(tmp_path, args, value):
    data = open(PI_COMPACTION, "rb").read().replace(b'"readFiles":["a.py"]', b'"readFiles":' + value.encode())
    assert value.encode() in data
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    r = run(*args, path)
    assert r.exit_code in (0, 1), r.output
    assert "internal error" not in r.output


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_a_codex_reasoning_summary_that_is_a_number_stops_no_command(tmp_path, args):
    data = open(CODEX_PARALLEL, "rb").read()
    data = re.sub(rb'("type":"reasoning","id":"[^"]+","summary":)\[[^\]]*\]', rb"\g<1>7", data, count=1)
    assert b'"summary":7' in data
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(data)
    r = run(*args, path)
    assert r.exit_code in (0, 1), r.output
    assert "internal error" not in r.output


def test_integers_beyond_a_float_read_as_orjson_reads_them():
    """An integer beyond 64 bits reads as the float orjson makes of it; one beyond a float's range
    (orjson refuses its line, the fallback reads it whole) stays whole: never an OverflowError."""
    from ctxtool.formats.common import args_chars
    from ctxtool.model import as_text, decoded_number

    assert decoded_number(10 ** 40) == 1e40 and decoded_number(2 ** 64 - 1) == 2 ** 64 - 1
    assert decoded_number(10 ** 400) == 10 ** 400 and as_text(10 ** 400) == "1" + "0" * 400
    assert as_text(10 ** 40) == "1e+40" and as_text(-(10 ** 40)) == "-1e+40"
    assert args_chars({"n": 10 ** 40}) == len('{"n":1e+40}')
    assert args_chars({"n": 10 ** 400}) == 0  # not written by orjson either way


def _odd_roles_session(tmp_path):
    head = {"type": "session", "version": 3, "id": "3f1c2a4e-0000-4000-8000-0000000000aa", "timestamp": "2026-04-01T10:00:00.000Z",
            "cwd": "/w"}

    def msg(i, parent, m):
        return {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-04-01T10:00:01.000Z", "message": m}
    lines = [head, msg("b0000001", None, {"role": "user", "content": "hi", "timestamp": 1}),
             msg("b0000002", "b0000001", {"role": "system", "content": "SECRET-SYSTEM", "timestamp": 2}),
             msg("b0000003", "b0000002", {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                                          "stopReason": "stop", "timestamp": 3}),
             msg("b0000004", "b0000003", {"role": "", "content": [], "timestamp": 4})]
    path = tmp_path / "roles.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return str(path)


def test_a_message_of_a_role_pi_does_not_send_is_not_in_the_view(tmp_path):
    """pi's convertToLlm passes on user, assistant, toolResult, bashExecution, custom and the two
    summaries, and drops any other role: such a message is not sent, so it is neither counted nor an
    empty message for validate (a fuzz case, seed 14: repair could not fix the error it reported)."""
    from ctxtool.validate import validate_file
    from ctxtool.view import sent_messages

    path = _odd_roles_session(tmp_path)
    sent = sent_messages(scan(path))
    assert [m["role"] for m in sent] == ["user", "assistant"] and "SECRET-SYSTEM" not in orjson.dumps(sent).decode()
    assert [v["kind"] for v in validate_file(path)["violations"]] == ["trailing-assistant"]  # a warning; no empty message
    r = run("repair", "--check", path)
    assert r.exit_code == 0, r.output


@pytest.mark.pi
def test_pi_drops_a_message_of_another_role(tmp_path):
    from tests.support.pi_agent import load_with_pi

    result = load_with_pi(_odd_roles_session(tmp_path))
    assert [m["role"] for m in result["llmMessages"]] == ["user", "assistant"]
    assert "SECRET-SYSTEM" not in orjson.dumps(result["llmMessages"]).decode()


def test_deeply_nested_request_id_is_no_recursion_error(tmp_path):
    """A Claude Code line's requestId that is no string (here nested 1,000 deep) was formatted into the
    response's grouping key, and its repr() hit the recursion limit: an internal error on every
    command (fuzz seed 16). It is read as missing now."""
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    base = '"sessionId":"s","timestamp":"2026-04-17T02:30:01.000Z","isSidechain":false'
    path = tmp_path / "c.jsonl"
    path.write_text('{"type":"user","uuid":"u1","parentUuid":null,' + base + ',"message":{"role":"user","content":"go"}}\n'
                    '{"type":"assistant","uuid":"a1","parentUuid":"u1",' + base + ',"requestId":' + deep +
                    ',"message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"ok"}],'
                    '"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}}\n')
    for args in COMMANDS:
        r = run(*args, path)
        assert r.exit_code in (0, 1), (args, r.output)
        assert "internal error" not in r.output
