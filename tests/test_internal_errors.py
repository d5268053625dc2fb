"""A bug met on one file is one line naming that file (and line where known), never a bare
"internal error: <Exception>"; the rest of a batch goes on."""

import os
import shutil

import orjson
import pytest
from click.testing import CliRunner

from ctxtool import compact_writer, estimate, repair
from ctxtool.cli import cli
from ctxtool.errors import InternalError, unexpected
from ctxtool.formats import pi

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
PI_CLEAN = os.path.join(FIX, "repair", "pi-clean.jsonl")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def two(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    shutil.copy(PI_CLEAN, a)
    shutil.copy(PI_CLEAN, b)
    return a, b


def test_unexpected_names_file_and_line():
    e = unexpected(KeyError("x"), path="s.jsonl", line=3)
    assert isinstance(e, InternalError) and e.exit_code == 3
    assert str(e) == "s.jsonl:3: internal error: KeyError: 'x' (set CTXTOOL_DEBUG=1 for a traceback)"
    assert str(unexpected(OSError(5, "Input/output error"), path="s.jsonl")) == "s.jsonl: cannot read or write: Input/output error"


def test_unexpected_raises_again_under_ctxtool_debug(monkeypatch):
    monkeypatch.setenv("CTXTOOL_DEBUG", "1")
    with pytest.raises(KeyError):
        try:
            raise KeyError("x")
        except KeyError as e:
            unexpected(e, path="s.jsonl")


@pytest.mark.parametrize("args", [["validate"], ["repair", "--check"], ["estimate"], ["profile"]], ids=" ".join)
def test_bug_while_reading_a_line_names_file_and_line_and_the_batch_goes_on(two, monkeypatch, args):
    a, b = two
    real = pi.normalize

    def normalize(obj, e, *rest, **kw):
        if e.lineno == 4 and obj.get("id") == "BUG":
            raise ZeroDivisionError("division by zero")
        return real(obj, e, *rest, **kw)

    lines = a.read_bytes().splitlines()
    obj = orjson.loads(lines[3])
    obj["id"] = "BUG"
    lines[3] = orjson.dumps(obj)
    a.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(pi, "normalize", normalize)
    monkeypatch.setenv("CTXTOOL_NATIVE", "0")  # the C part makes most pi lines' entries without normalize
    r = run(*args, a, b)
    assert r.exit_code == 1, r.output  # one failed, one done
    assert r.stderr.strip().splitlines() == [
        f"Error: {a}:4: internal error: ZeroDivisionError: division by zero (set CTXTOOL_DEBUG=1 for a traceback)"]
    assert str(b) in r.stdout


def test_bug_in_the_planner_names_the_file(two, monkeypatch):
    a, b = two

    def broken(t, **kw):
        raise KeyError("boom")

    monkeypatch.setattr(repair, "plan_repair", broken)
    r = run("repair", "--check", a)
    assert r.exit_code == 3
    assert r.stderr.strip() == f"Error: {a}: internal error: KeyError: 'boom' (set CTXTOOL_DEBUG=1 for a traceback)"


def test_bug_in_estimate_and_compact_batches_names_the_file(two, monkeypatch):
    a, b = two
    monkeypatch.setattr(estimate, "read_index", lambda *x, **k: (_ for _ in ()).throw(IndexError("bad index")))
    r = run("estimate", a)
    assert r.exit_code == 3 and r.stderr.strip() == f"Error: {a}: internal error: IndexError: bad index (set CTXTOOL_DEBUG=1 for a traceback)"
    monkeypatch.setattr(compact_writer.cp, "plan_compaction", lambda *x, **k: 1 / 0)
    r = run("compact", "-n", a, b)
    assert r.exit_code == 3
    assert f"Error: {a}: internal error: ZeroDivisionError" in r.stderr and f"Error: {b}: internal error" in r.stderr


def test_last_resort_catch_all_names_the_file(two, monkeypatch):
    a, _ = two
    from ctxtool.cli import repair as repair_cli

    monkeypatch.setattr(repair_cli, "_render", lambda *x: {}["missing"])
    r = run("repair", "--check", a)
    assert r.exit_code == 3
    assert r.stderr.strip() == f"Error: {a}: internal error: KeyError: 'missing' (set CTXTOOL_DEBUG=1 for a traceback)"
