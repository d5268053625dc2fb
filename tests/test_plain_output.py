"""Human output to a pipe or a file: ``render.console()`` there prints text itself (``render._Plain``), without
importing rich, and what it prints is what rich's console printed there, byte for byte."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from ctxtool import render

TEXTS = [
    "", "plain", "trailing spaces   ", "a [bold]b[/bold] [older clients sent this] c", ":fire: path/with:fire:",
    "bell\x07 back\x08 vt\x0b ff\x0c cr\r end", "esc \x1b[31m kept", "nul \x00 del \x7f nel \x85",
    "wide 漢字 and emoji 😀 and zero-width \u200b", "line one\nline two\n", "x" * 500, "tab\there", "\t", "a\r\nb",
]


def _rich_console(buf):
    return render._console_class()(file=buf, highlight=False, emoji=False, soft_wrap=True, no_color=None)


def _both(call) -> tuple[str, str]:
    plain_buf, rich_buf = io.StringIO(), io.StringIO()
    call(render._Plain(file=plain_buf, highlight=False, emoji=False, soft_wrap=True, no_color=None))
    call(_rich_console(rich_buf))
    return plain_buf.getvalue(), rich_buf.getvalue()


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_plain_text_is_what_rich_printed(text):
    plain, rich = _both(lambda con: con.print(text, markup=False))
    assert plain == rich


def test_empty_lines_several_objects_and_ends_are_rich_s():
    def calls(con):
        con.print()
        con.print("a", "b", markup=False)
        con.print("a", "b", sep="--", end="!\n", markup=False)
        con.print("no newline", end="", markup=False)
        con.print("", markup=False)
        con.print("[not markup] :fire:", markup=False, highlight=False, emoji=False)

    plain, rich = _both(calls)
    assert plain == rich


def test_markup_and_renderables_go_to_rich():
    plain, rich = _both(lambda con: con.print("[bold]x[/bold] [dim]y[/dim]"))
    assert plain == rich == "x y\n"
    con = render._Plain(file=io.StringIO(), highlight=False, emoji=False, soft_wrap=True, no_color=None)
    assert con._rich is None
    con.print("[bold]x[/bold]")
    assert con._rich is not None  # made for the markup


def test_a_piped_run_imports_no_rich(tmp_path):
    """The point of it: ~25 ms of rich's import left out of every piped run (tables and text alike)."""
    from tests.support.pi_sessions import asst, pi_session, user

    p = pi_session(tmp_path / "s.jsonl", [user("hi"), asst("hello")])
    code = ("import sys; import ctxtool.cli as c; sys.argv = ['ctxtool'] + sys.argv[1:]\n"
            "def said():\n"
            "    print('RICH' if any(m.startswith('rich') for m in sys.modules) else 'NO RICH', file=sys.stderr)\n"
            "end = c._end_now\n"
            "c._end_now = lambda code: (said(), end(code))\n"  # (a run over one file ends there: ctxtool.retained)
            "try:\n    c.main()\nexcept SystemExit:\n    said()\n")
    for args in (["estimate", p], ["repair", "--check", p], ["validate", p], ["profile", p]):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
        assert r.stderr.strip().endswith("NO RICH"), (args, r.stderr[-300:])
        assert r.stdout.strip()


def test_the_environment_that_makes_rich_draw_keeps_rich(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert isinstance(render.console(), render._Plain)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert not isinstance(render.console(), render._Plain)


def test_a_closed_pipe_makes_it_quiet():
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError

    con = render._Plain(file=Closed(), highlight=False, emoji=False, soft_wrap=True, no_color=None)
    con.print("x", markup=False)
    assert con.quiet
    con.print("y", markup=False)  # nothing raised
