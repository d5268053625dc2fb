"""Tool arguments are measured as JavaScript's JSON.stringify writes them (pi's rule):
ctxtool.formats.common.js_number is checked against node itself."""

import json
import shutil
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtool.formats.common import args_chars, js_number, js_to_number

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def node_stringify(values: list) -> list[str]:
    script = "const v=JSON.parse(require('fs').readFileSync(0,'utf8')).map(b=>new Float64Array(new Uint8Array(b).buffer)[0]);" \
             "process.stdout.write(JSON.stringify(v.map(x=>JSON.stringify(x))))"
    payload = json.dumps([list(struct.pack("<d", v)) for v in values])
    out = subprocess.run([NODE, "-e", script], input=payload, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@settings(max_examples=5, deadline=None, derandomize=True)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=50, max_size=200))
def test_js_number_matches_node(values):
    values += [1.0, 1e20, 1e21, 1e-7, 1e-6, 5e-324, -0.0, 100.0]
    assert [js_number(v) for v in values] == node_stringify(values)


def test_args_chars_counts_json_stringify_length():
    args = {"w": 1.0, "big": [1e20, 0.5, 1e-7], "s": "x", "n": 3}
    assert args_chars(args) == len('{"w":1,"big":[100000000000000000000,0.5,1e-7],"s":"x","n":3}')


@pytest.mark.parametrize("value,expected", [
    (3, 3), (float("inf"), float("inf")), ("3", 3), (" 2\n", 2), ("", 0), (None, 0), (True, 1), (False, 0),
    ([], 0), ([3], 3), (["7"], 7), ([None], 0), ("0x10", 16), ("Infinity", float("inf")), (".5", 0.5),
])
def test_js_to_number_coerces_as_a_comparison_does(value, expected):
    assert js_to_number(value) == expected


@pytest.mark.parametrize("value", [{}, [1, 2], [True], "abc", "1_0", "inf", "nan", "-0x10", "e5"])
def test_js_to_number_is_nan_where_javascript_gets_no_number(value):
    n = js_to_number(value)
    assert n != n


def test_js_to_number_equals_node():
    values = [3, 2.5, "3", " 2\n", "", None, True, False, [], [3], ["7"], [None], [[2]], [True], [1, 2], {}, "0x10",
              "0o17", "0b11", "-0x10", "Infinity", "-Infinity", "inf", "nan", "1_0", ".5", "5.", "e5", "1e3", " +4 ", "\u00a08"]
    script = "const v=JSON.parse(require('fs').readFileSync(0,'utf8'));" \
             "process.stdout.write(JSON.stringify(v.map(x=>String(Number(x)))))"
    out = json.loads(subprocess.run([NODE, "-e", script], input=json.dumps(values), capture_output=True, text=True,
                                    check=True).stdout)
    for v, want in zip(values, out):
        got, want = js_to_number(v), float(want.replace("Infinity", "inf"))  # float("NaN") is nan
        assert got == want or (got != got and want != want), (v, got, want)


def test_brief_names_any_value_without_recursion():
    from ctxtool.formats.common import brief

    deep = cur = {}
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    assert brief(deep) == "(an object)" and brief([deep]) == "(an array)"
    assert brief("x" * 100) == '"' + "x" * 39 and brief(float("inf")) == "Infinity" and brief(None) == "null"
    assert brief("\ud800") == '"\\ud800"'  # escaped: it prints
