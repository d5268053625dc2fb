"""Numbers as Codex's reader takes them where it reads a struct (``ctxtool.formats.codex_numbers``): the rule against
every spelling judged with Codex, and the Rust texts of a double it compares with. The judged lines themselves are in
``test_codex_judge`` (``BOUNDS``)."""

import random
import struct

import orjson

from ctxtool.formats.codex_numbers import PASSTHROUGH, exact_numbers, no_value, number_read, rust_display, rust_ryu
from ctxtool.model import META

# (spelling, 1 when Codex's reader takes it as a number where it reads a struct, 0 when as no value): each judged
# with Codex on 2026-11-27, in an item line's metadata (the last two not: beyond what Python's int() reads, and
# beyond double range)
SPELLINGS = {
    "1e39": 1, "1.0000000000000000e39": 0, "1.000000000000000e39": 0, "1.00000000000000000000e39": 0,
    "1.0000000000000000e30": 0, "5.0000000000000000": 0, "5.000000000000000": 0, "10000000000000000e23": 0,
    "1000000000000000e24": 0, "1.0e39": 0, "0.10000000000000000e40": 0, "12345678901234567e22": 0,
    "3.4028236692093846e38": 0, "3.4028236692093845e38": 0, "1.7976931348623157e308": 1, "1.797693134862315e308": 1,
    "123456789012345678901234567890.5": 0, "1.0000000000000000e3": 0, "-1.0000000000000000e39": 0, "5.0": 1,
    "1000.0": 1, "1e3": 0, "0.1": 1, "0.10": 0, "1E39": 1, "1e+39": 1, "1e15": 0, "1000000000000000.0": 1, "1e16": 1,
    "10000000000000000.0": 0, "-1e39": 1, "-5.0": 1, "0.0": 1, "-0.0": 1, "0": 1, "1e-7": 1, "0.0000001": 1,
    "1e-5": 0, "0.00001": 1, "0.0001": 1, "1e-4": 0, "1.2345678901234568e20": 1, "123456789012345680000.0": 0,
    "2.5e-3": 0, "0.0025": 1, "1.5": 1, "1.50": 0, "1" + "0" * 39: 1, "340282366920938500000000000000000000000": 1,
    "1e039": 0, "1e-07": 0, "1.0E39": 0, "1E+16": 1, "-0": 1, "100000000000000000000": 1, "1e22": 1,
    "10000000000000000000000.0": 0, "10000000000000000000000": 1, "123.456": 1, "123.4560": 0, "-1" + "0" * 39: 1,
    "1" + "0" * 400: 0, "0.0000000000000000000000000001": 1, "1e400": 0, "-1e400": 0, "1e300": 1, "5": 1,
    "340282366920938463463374607431768211456": 0, "340282366920938463463374607431768211455": 1,
    "-170141183460469231731687303715884105729": 0, "-170141183460469231731687303715884105728": 1,
    "999999999999999999999999999999999999999": 0, "3.402823669209385e38": 1, "18446744073709551616": 1,
    "1.2345678901234567e20": 1, "1" + "0" * 5000: 0, "1e99999": 0}


def test_every_judged_spelling_is_read_as_codex_reads_it():
    assert {s: int(number_read(s)) for s in SPELLINGS} == SPELLINGS


def test_a_number_read_as_no_value_becomes_an_empty_object_in_either_field():
    """orjson reads an integer of 20 digits or more as a float, and 1e39 and 1.0e39 as one float: the line is parsed
    again for the spelling. 2**128 written out, or 1.0e39, is no value (an empty object, as Codex's reader makes it);
    5.0, 3.4e38, 10**39 written out and 5 stay numbers (the line refused there)."""

    def field(line: bytes):
        obj = exact_numbers(orjson.loads(line), line)
        return obj["metadata"] if "metadata" in obj else obj["payload"][PASSTHROUGH]

    for written, value in ((b"340282366920938463463374607431768211456", {}), (b"1.0e39", {}), (b"5.0", 5.0),
                           (b"3.4e38", 3.4e38), (b"1" + b"0" * 39, 1e39), (b"5", 5)):
        for line in (b'{"type":"response_item","metadata":' + written + b',"payload":{}}',
                     b'{"type":"response_item","payload":{"type":"message","' + PASSTHROUGH.encode() + b'":'
                     + written + b"}}"):
            assert field(line) == value and type(field(line)) is type(value), (written, line)


def test_a_line_without_a_number_there_is_not_parsed_again():
    plain = orjson.loads(b'{"type":"response_item","metadata":{"a":1.0e39},"payload":{"x":1.0e39}}')
    assert exact_numbers(plain, b"(not read)") is plain
    assert exact_numbers([1.0], b"(not read)") == [1.0]


def test_a_value_without_its_spelling():
    """A line parsed without its spellings (the fallback parser's): beyond 128-bit integers and double range only."""
    assert [no_value(v) for v in (2 ** 128 - 1, 2 ** 128, -(2 ** 127), -(2 ** 127) - 1, 1e308, float("inf"))] == \
        [False, True, False, True, False, True]


def test_rust_texts_of_a_double_read_back_as_it_with_the_shortest_digits():
    """ryu's and Display's texts of random doubles read back as the double, with Python's repr's digits (both the
    shortest that read back); the branches of each are among the judged spellings."""
    rng = random.Random(5)
    checked = 0
    for _ in range(5000):
        f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if f != f or f in (float("inf"), float("-inf")):
            continue
        checked += 1
        digits = repr(abs(f)).split("e")[0].replace(".", "").strip("0")
        for text in (rust_ryu(f), rust_display(f)):
            assert float(text) == f and text.lstrip("-").split("e")[0].replace(".", "").strip("0") == digits, (f, text)
    assert checked > 4900
    assert [rust_ryu(f) for f in (5.0, 1e15, 1e16, 1e-5, 1e-7, 0.0025, -0.0, 1.5e300)] == \
        ["5.0", "1000000000000000.0", "1e16", "0.00001", "1e-7", "0.0025", "-0.0", "1.5e300"]
    assert [rust_display(f) for f in (5.0, 1e-7, 1e39, -0.0, 12.5)] == ["5", "0.0000001", "1" + "0" * 39, "-0", "12.5"]


def test_a_line_read_again_from_disk_is_read_as_the_scan_read_it(tmp_path):
    """An entry released after the scan and loaded again (``Transcript.load``, ``reload``): its number read as no
    value again (an empty object), so the item the scan took is not refused the second time."""
    import os
    import re

    from ctxtool.transcript import scan

    fix = os.path.join(os.path.dirname(__file__), "..", "fixtures", "codex-recorded", "long_output.jsonl")
    lines = open(fix, "rb").read().split(b"\n")
    k = 3
    lines[k] = re.sub(rb'"metadata":\{[^{}]*\}\}$', b'"metadata":1.0e39}', lines[k])
    assert b'"metadata":1.0e39}' in lines[k]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"\n".join(lines))
    t = scan(str(path))
    e = next(e for e in t.entries if e.lineno == k + 1)
    assert e.kind != META and not (e.extra or {}).get("refused")
    e.obj = e.blocks = None  # released: read again from disk
    assert t.load(e)["metadata"] == {}
    again = t.reload(e)
    assert again.kind == e.kind and not (again.extra or {}).get("refused")


def test_every_place_a_compacted_line_reads_a_struct():
    """A compacted line's replacement_history_metadata entries, replacement items' passthroughs, and its three struct
    fields: each number read as no value is an empty object, each number read as one is left; the rest untouched."""
    line = (b'{"type":"compacted","metadata":1.0e39,"payload":{"message":"m","retained_context":5.0,'
            b'"latest_token_usage_record":1e-05,"resume_metadata":5.00,"window_number":3.0,'
            b'"replacement_history_metadata":[1.0e39,1e39,{"history_sequence":1.0}],'
            b'"replacement_history":[{"type":"message","' + PASSTHROUGH.encode() + b'":1e39},'
            b'{"type":"message","' + PASSTHROUGH.encode() + b'":1.0e39}]}}')
    obj = exact_numbers(orjson.loads(line), line)
    p = obj["payload"]
    assert obj["metadata"] == {} and p["retained_context"] == 5.0 and p["latest_token_usage_record"] == {}
    assert p["resume_metadata"] == {} and p["window_number"] == 3.0  # (a u64 field: not a struct place)
    assert p["replacement_history_metadata"] == [{}, 1e39, {"history_sequence": 1.0}]
    assert [x[PASSTHROUGH] for x in p["replacement_history"]] == [1e39, {}]
