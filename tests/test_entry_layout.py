"""The entry of a metadata line stays small: its optional fields (line ending other than "\\n",
role, parsed object, blocks, calls, usage...) live in one shared second object until one is set."""

from __future__ import annotations

from ctxtool.model import PLAIN, Entry, FullEntry, full_entry, small_entry
from ctxtool.transcript import scan


def meta(eol=b"\n"):
    return small_entry(3, 4, 100, 20, eol, "meta", "progress", "u1", "p1", 1.5)


def test_writing_a_default_keeps_the_shared_object():
    e = meta()
    e.release()  # obj = blocks = None
    e.role = None
    e.eol = b"\n"
    e.extra = None
    assert e._m is PLAIN and e.obj is None and e.role is None and e.eol == b"\n"


def test_a_field_set_on_one_entry_is_its_own():
    a, b = meta(), meta()
    a.role, a.eol, a.obj = "user", b"\r\n", {"type": "x"}
    assert (a.role, a.eol, a.obj) == ("user", b"\r\n", {"type": "x"}) and a._m is not PLAIN
    assert (b.role, b.eol, b.obj) == (None, b"\n", None) and b._m is PLAIN
    assert (PLAIN.role, PLAIN.eol, PLAIN.obj) == (None, b"\n", None)


def test_other_line_endings_are_kept():
    assert meta(b"\r\n").eol == b"\r\n" and meta(b"").eol == b""
    assert Entry(0, 1, 0, 5, b"", "meta", "x").eol == b"" and Entry(0, 1, 0, 5, b"\n", "meta", "x")._m is PLAIN
    f = full_entry(0, 1, 0, 5, b"\r\n")
    assert type(f) is FullEntry and f.eol == b"\r\n" and f.role is None


def test_a_crlf_claude_file_keeps_each_lines_ending(tmp_path):
    n = 200  # past the lines read to tell the format, which become full entries
    lines = [b'{"type":"progress","uuid":"a%d","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z"}' % k for k in range(n)]
    lines.append(b'{"type":"user","uuid":"u","parentUuid":"a2","timestamp":"2026-01-01T00:00:05Z",'
                 b'"message":{"role":"user","content":"hi"}}')
    eols = [b"\r\n" if k % 3 else b"\n" for k in range(n)] + [b""]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(x + eol for x, eol in zip(lines, eols)))
    t = scan(str(path))
    assert [e.eol for e in t.entries] == eols
    assert t.entries[-2]._m is not PLAIN and t.entries[-3]._m is PLAIN  # lines 200 ("\r\n") and 199 ("\n")


def test_a_line_ending_equal_to_the_default_keeps_the_shared_object():
    """b"\\n" as a module's bytecode holds it (marshal: an installed package's .pyc) is another object than
    the default's; it is the same value, so the entry stays small."""
    import marshal

    nl = marshal.loads(marshal.dumps(b"\n"))
    e = meta()
    e.eol = nl
    assert e._m is PLAIN and e.eol == b"\n"
