"""What reaches a terminal: a transcript's control characters (its tool output holds ANSI escapes) are shown, not
obeyed. Found by a review: ``view`` on a terminal and ``checkpoint -n`` let an escape set the window's title and clear
the screen. Piped output is left as it is (it is data)."""

from __future__ import annotations

import io

from ctxtool import render
from ctxtool.cli import common

HOSTILE = "title \x1b]0;pwned\x07 then \x1b[2J clear\x9b1m\ttab\nnext \x00 line"


def test_control_characters_are_shown_as_escapes_but_tab_and_newline():
    shown = render.visible(HOSTILE)
    assert "\x1b" not in shown and "\x9b" not in shown and "\x00" not in shown
    assert "\\x1b]0;pwned" in shown and "\\x1b[2J" in shown and "\\x9b1m" in shown and "\\x00" in shown
    assert "\ttab\nnext" in shown
    assert render.visible("plain text, é, 日本") == "plain text, é, 日本"


def test_the_terminal_console_shows_them_in_text_and_tables():
    buf = io.StringIO()
    con = render._console_class()(file=buf, force_terminal=True, highlight=False, emoji=False, width=100)
    con.print(HOSTILE, markup=False)
    render.table(con, "t", ["content"], [["x\x1b[31mred"]])
    out = buf.getvalue()
    assert "\x1b]0;" not in out and "\x1b[2J" not in out and "\x1b[31mred" not in out
    assert "\\x1b]0;pwned" in out and "x\\x1b[31mred" in out


def test_a_piped_console_leaves_them(monkeypatch):
    buf = io.StringIO()
    con = render._console_class()(file=buf, force_terminal=False, highlight=False, emoji=False)
    con.print("a \x1b[2J b", markup=False)
    assert buf.getvalue() == "a \x1b[2J b\n"


class _Stdout(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_text_written_out_is_shown_on_a_terminal_and_left_in_a_pipe(monkeypatch):
    for tty in (True, False):
        out = _Stdout(tty)
        monkeypatch.setattr(common.sys, "stdout", out)
        common.write_out("# Checkpoint\n\x1b]0;pwned\x07\n")
        assert out.getvalue() == ("# Checkpoint\n\\x1b]0;pwned\\x07\n" if tty else "# Checkpoint\n\x1b]0;pwned\x07\n")
