"""Lines repair and compact read again or change: the scan's own parser on reload, edits in place.

A line with a lone surrogate or 1e400 (valid for JSON.parse, refused by orjson) failed the reload
with JSONDecodeError; a line nested 1,000 deep that repair had to change failed with
RecursionError. Kept lines are copied byte for byte; an id or link edit is made in the line's
own bytes, so everything else in it stays as written.
"""

import os

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.jsonl import loads, set_top_level
from ctxtool.repair import plan_repair
from ctxtool.transcript import scan

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
PI_CLEAN = os.path.join(FIX, "repair", "pi-clean.jsonl")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def pi_lines() -> list[bytes]:
    return open(PI_CLEAN, "rb").read().splitlines()


def write(tmp_path, lines, name="s.jsonl") -> str:
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


# ---------------------------------------------------------------- set_top_level


@pytest.mark.parametrize("raw,values,expected", [
    (b'{"a": 1, "parentId": "x", "b": {"c": [1, "}\\"]"]}}', {"parentId": "y"}, b'{"a": 1, "parentId": "y", "b": {"c": [1, "}\\"]"]}}'),
    (b'{"a":1e400,"p":null}', {"p": "z"}, b'{"a":1e400,"p":"z"}'),
    (b'{"a":"\\ud800"}', {"id": "n"}, b'{"a":"\\ud800","id":"n"}'),
    (b"{}", {"k": 1}, b'{"k":1}'),
    (b'{"k":1,"k":2}', {"k": 3}, b'{"k":1,"k":3}'),  # a key written twice: the last one counts, as in JSON.parse
])
def test_set_top_level_changes_only_the_value(raw, values, expected):
    assert set_top_level(raw, values) == expected


@pytest.mark.parametrize("raw", [b"[1]", b'"s"', b'{"a":1', b'{"a":1} x', b'{"a" 1}'])
def test_set_top_level_refuses_what_is_not_one_object(raw):
    assert set_top_level(raw, {"a": 2}) is None


def test_set_top_level_on_a_line_nested_1000_deep():
    deep = b'{"x":' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b',"parentId":"q"}'
    out = set_top_level(deep, {"parentId": "r"})
    assert out == deep.replace(b'"parentId":"q"', b'"parentId":"r"')


def test_loads_accepts_what_the_scan_accepts():
    assert loads(b'{"a":1e400}') == {"a": float("inf")}
    assert loads(b'{"a":"\\ud800"}') == {"a": "\ud800"}
    with pytest.raises(ValueError):
        loads(b'{"a":NaN}')


# ---------------------------------------------------------------- repair and compact re-read lines


def _odd_assistant(lines: list[bytes]) -> tuple[list[bytes], int]:
    """pi-clean with a lone surrogate and 1e400 in the last assistant line, whose tool call loses its result."""
    k = max(i for i, ln in enumerate(lines) if b'"role":"assistant"' in ln and b'"toolCall"' in ln)
    obj = orjson.loads(lines[k])
    obj["message"]["content"].insert(0, {"type": "text", "text": "SURROGATE"})
    obj["message"]["usage"]["cost"] = {"total": "INF"}
    lines[k] = orjson.dumps(obj).replace(b'"SURROGATE"', b'"\\ud83d oops"').replace(b'"INF"', b"1e400")
    results = [i for i, ln in enumerate(lines) if i > k and b'"role":"toolResult"' in ln]
    for i in reversed(results):
        del lines[i]
    return lines, k


def test_repair_rereads_a_line_with_a_lone_surrogate_and_1e400(tmp_path):
    lines, k = _odd_assistant(pi_lines())
    path = write(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, path)
    assert r.exit_code == 0, r.output
    assert "missing-result" in r.stdout
    assert lines[k] in out.read_bytes().splitlines()  # read again for the synthetic result, kept byte for byte
    assert run("repair", "--check", out).exit_code == 0


def test_compact_rereads_such_lines(tmp_path):
    lines, k = _odd_assistant(pi_lines())
    path = write(tmp_path, lines)
    fixed = tmp_path / "fixed.jsonl"
    assert run("repair", "-o", fixed, path).exit_code == 0
    for args in (["compact", "-n", "--keep-recent-tokens", "0"], ["compact", "--keep-recent-tokens", "0", "--no-backup"]):
        r = run(*args, fixed)
        assert r.exit_code == 0, r.output
        assert "internal error" not in r.output
    assert lines[k] in fixed.read_bytes().splitlines()


def _deep_line(lines: list[bytes], i: int) -> bytes:
    obj = orjson.loads(lines[i])
    obj["details"] = "DEEP"
    return orjson.dumps(obj).replace(b'"DEEP"', b'{"a":' * 1000 + b"1" + b"}" * 1000)


def test_repair_relinks_a_line_nested_1000_deep_in_its_own_bytes(tmp_path):
    lines = pi_lines()
    k = next(i for i, ln in enumerate(lines) if b'"role":"user"' in ln and i > 3)
    lines[k] = _deep_line(lines, k).replace(b'"parentId":"', b'"parentId":"gone', 1)
    path = write(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, path)
    assert r.exit_code == 0, r.output
    assert "dangling-parent" in r.stdout
    new = out.read_bytes().splitlines()[k]
    parent = orjson.loads(lines[k - 1])["id"]
    assert new == lines[k].replace(b'"parentId":"gone' + orjson.loads(lines[k])["parentId"][4:].encode() + b'"',
                                   b'"parentId":"' + parent.encode() + b'"')
    assert run("repair", "--check", out).exit_code == 0


def test_repair_that_must_reserialize_a_line_nested_1000_deep_writes_it_whole(tmp_path):
    """orjson writes 255 levels; the standard library's fallback is given the recursion depth a line
    orjson read (up to 1,024 levels) needs, so the change is made and the deep value kept (it was
    refused with 'nested too deeply to rewrite')."""
    lines = pi_lines()
    k = next(i for i, ln in enumerate(lines) if b'"role":"user"' in ln and i > 3)
    obj = orjson.loads(lines[k])
    obj["message"]["content"] = [{"type": "text", "text": " "}]  # blank: repair rewrites the content
    obj["details"] = "x"
    deep = b"[" * 1000 + b"]" * 1000
    lines[k] = orjson.dumps(obj).replace(b'"details":"x"', b'"details":' + deep)
    path = write(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, path)
    assert r.exit_code == 0, r.output
    written = out.read_bytes().splitlines()[k]
    assert deep in written and b'"(continue)"' in written


def test_relinked_line_keeps_its_own_spacing_and_numbers(tmp_path):
    lines = pi_lines()
    k = 5
    obj = orjson.loads(lines[k])
    spaced = b", ".join(orjson.dumps(k_) + b": " + orjson.dumps(v) for k_, v in obj.items())
    lines[k] = (b"{" + spaced + b"}").replace(b'"parentId": "', b'"parentId": "gone', 1)
    t = scan(write(tmp_path, lines), stats=False)
    plan = plan_repair(t)
    chunk = list(plan.chunks())[k]
    prev = orjson.loads(lines[k - 1])["id"].encode()
    assert chunk == lines[k].replace(b'"parentId": "gone' + obj["parentId"].encode() + b'"', b'"parentId": "' + prev + b'"') + b"\n"


def test_dumps_writes_infinities_and_keeps_strings_that_say_infinity():
    from ctxtool.jsonl import dumps

    obj = loads(b'{"a":1e400,"b":[-1e400,"To Infinity \\ud800"],"n":' + b"1" + b"0" * 30 + b"}")
    assert dumps(obj) == b'{"a":1e999,"b":[-1e999,"To Infinity \\ud800"],"n":1' + b"0" * 30 + b"}"
    assert obj["a"] == float("inf") and obj["b"][0] == float("-inf")  # the object is left as it was
    assert loads(dumps(obj)) == obj


def test_rewritten_call_whose_input_is_1e400_keeps_it(tmp_path):
    """orjson writes an infinity as null: the call would have lost its input and become invalid."""
    lines = [b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]}',
             b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}',
             b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"b","input":1e400}]}',  # id reused
             b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}']
    path = write(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, path)
    assert r.exit_code == 0, r.output
    assert b'"input":1e999' in out.read_bytes().splitlines()[2]
    assert run("repair", "--check", out).exit_code == 0


def test_a_line_torn_inside_a_string_is_named_torn_not_a_bad_character():
    """A line that ends inside a string (a torn line in mid-file): its newline is the first control character the
    parser meets, but the line is incomplete, not badly escaped (found by a review: 'unescaped control character')."""
    from ctxtool.jsonl import Line, parse

    assert parse(Line(2, 31, b'{"role":"us\n', b"\n")) == (None, "incomplete JSON: the line ends inside a string (torn)")
    assert parse(Line(2, 31, b'{"role":"u\ts"}\n', b"\n"))[1] == "unescaped control character in string (bad control character)"
    assert parse(Line(2, 31, b'{"role":"us\r\n', b"\r\n"))[1] == "incomplete JSON: the line ends inside a string (torn)"
