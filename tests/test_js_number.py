"""Tool arguments are measured as JavaScript's JSON.stringify writes them (pi's rule):
ctxtool.formats.common.js_number is checked against node itself."""

import json
import shutil
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtool.formats.common import args_chars, js_number

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
