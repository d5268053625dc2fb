"""Human output: rich tables on a terminal, plain aligned text when piped.

Functions here take plain data (dicts and lists from the library) and a rich
Console; ``Console`` honours NO_COLOR and detects whether stdout is a terminal.
"""

from __future__ import annotations

import os
import sys

from functools import cache
from typing import TYPE_CHECKING

from .errors import WriteError

if TYPE_CHECKING:  # rich is imported when something is printed (a --json run prints nothing through it: ~15 ms)
    from rich.console import Console


def silence_stdout() -> None:
    """The reader went away (``| head``): send the rest of stdout to /dev/null.

    The command then finishes normally, so its exit code still says what it found
    (a broken pipe must neither hide findings nor invent them).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor (tests): nothing left to protect
        pass


def output_error() -> OSError | None:
    """The error that writing stdout meets (a full disk), once what it holds is flushed; None when it is written, or
    its reader went away (the rest then goes to /dev/null, as ``silence_stdout``). After an error the rest goes there
    too, so that nothing fails again at the process's end."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as e:
        silence_stdout()
        return e
    except ValueError:  # (closed)
        pass
    return None


def unwritable(e: OSError, file=None) -> WriteError:
    """The error of an output stream that cannot be written (a full disk): standard output unless ``file`` is another."""
    file = sys.stdout if file is None else file
    name = "<stdout>" if file is sys.stdout else "<stderr>" if file is sys.stderr else str(getattr(file, "name", "output"))
    return WriteError(f"cannot be written: {e.strerror or e}", path=name)


def _fall_silent(con) -> None:
    """``con`` prints nothing more, and when it prints to standard output, what is written there goes to /dev/null (its
    reader went away, or the disk is full)."""
    con.quiet = True
    if con.file is sys.stdout:
        silence_stdout()


# the control codes rich leaves out of printed text (rich.control.strip_control_codes): bell, backspace, vertical tab,
# form feed, carriage return
_STRIPPED = {7: None, 8: None, 11: None, 12: None, 13: None}

# control characters in text printed on a terminal (a transcript's tool output holds ANSI escapes: one that sets the
# window's title or clears the screen reached the terminal, found by a review), shown as \x1b and the like; tab and
# newline are kept, and the ones rich leaves out (_STRIPPED) left to it
_SHOWN_ALL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7f, 0xa0)) if c not in (9, 10)}
_SHOWN = {c: x for c, x in _SHOWN_ALL.items() if c not in _STRIPPED}


def visible(text: str, stripped: bool = True) -> str:
    """``text`` for a terminal: its control characters but tab and newline shown as escapes (``\\x1b``); with
    ``stripped``, those rich leaves out of what it prints are left to it."""
    return text.translate(_SHOWN if stripped else _SHOWN_ALL)


@cache
def _console_class():
    from rich.console import Console

    class _Console(Console):
        def render_str(self, text, *args, **kwargs):
            # every string printed or put in a table goes through here: on a terminal, no escape sequence of a
            # transcript's reaches it
            return super().render_str(visible(text) if self.is_terminal else text, *args, **kwargs)

        def on_broken_pipe(self) -> None:
            # rich's default raises SystemExit(1), which reads as "something to report"
            _fall_silent(self)

        def _check_buffer(self) -> None:
            # where rich writes what it printed (it handles a broken pipe there): a full disk is the output's failure,
            # not a file of the session's, as for the plain console
            try:
                super()._check_buffer()
            except BrokenPipeError:
                raise
            except OSError as e:
                _fall_silent(self)
                raise unwritable(e, self.file) from None

    return _Console


class _Lazy:
    """A console made on its first use (most --json runs never print through one)."""

    __slots__ = ("_args", "_con")

    def __init__(self, **args) -> None:
        self._args = args
        self._con = None

    def _made(self):
        con = self._con
        if con is None:
            con = self._con = _console_class()(**self._args)
        return con

    def __getattr__(self, name):
        return getattr(self._made(), name)

    def __setattr__(self, name, value) -> None:
        if name in _Lazy.__slots__:
            object.__setattr__(self, name, value)
        else:
            setattr(self._made(), name, value)


_AS_SET = {"highlight", "emoji"}  # options a console here is made without: the same text when given as False or None


class _Plain:
    """A console for a stream that is no terminal (a pipe, a file): text printed as rich prints it there (markup off,
    no wrapping, the control codes rich strips left out), without importing rich (~25 ms a run). Anything else (markup,
    a renderable, a tab, which rich expands by cell width, another method or option) goes to rich's console, made on
    first need."""

    is_terminal = False

    def __init__(self, **args) -> None:
        self._args = args
        self._rich = None
        self.file = args["file"]
        self.quiet = False

    def _made(self):
        if self._rich is None:
            self._rich = _console_class()(**self._args)
        self._rich.quiet = self.quiet
        return self._rich

    def print(self, *objects, sep: str = " ", end: str = "\n", markup=None, **options) -> None:
        if self.quiet:
            return
        text = None
        if options.keys() <= _AS_SET and not any(options.values()) and (markup is False or not objects) \
                and all(type(o) is str for o in objects) and type(sep) is str and type(end) is str:
            text = sep.join(objects) + end
        if text is None or "\t" in text:
            self._made().print(*objects, sep=sep, end=end, markup=markup, **options)
            self.quiet = self._rich.quiet
            return
        try:
            self.file.write(text.translate(_STRIPPED))
            self.file.flush()
        except BrokenPipeError:  # as the rich console's on_broken_pipe
            _fall_silent(self)
        except OSError as e:  # a full disk: the output is what failed, not a file of the session's
            _fall_silent(self)
            raise unwritable(e, self.file) from None

    def __getattr__(self, name):
        return getattr(self._made(), name)


def console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # emoji=False: rich would print a path with ``:fire:`` in it as an emoji
    args = dict(file=stream, highlight=False, emoji=False, soft_wrap=not stream.isatty(),
                no_color=bool(os.environ.get("NO_COLOR")) or None)
    # on a terminal, rich draws (tables, progress bars): the console itself; piped, plain text, unless the environment
    # tells rich to behave as on a terminal (it reads these two)
    if stream.isatty():
        return _console_class()(**args)
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return _Lazy(**args)
    return _Plain(**args)


def table(con: Console, title: str | None, columns: list[str], rows: list[list], *, justify: dict | None = None) -> None:
    """A rich table on a terminal; tab-free aligned plain text otherwise."""
    justify = justify or {}
    if con.is_terminal:
        from rich.table import Table

        t = Table(title=title, show_lines=False, header_style="bold")
        for c in columns:
            t.add_column(c, justify=justify.get(c, "left"), overflow="fold")
        for r in rows:
            t.add_row(*[str(x) for x in r])
        con.print(t)
        return
    if title:
        con.print(title, markup=False)
    cells = [[str(c) for c in columns]] + [[str(x) for x in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    for row in cells:
        parts = []
        for i, cell in enumerate(row):
            if i == len(row) - 1:
                parts.append(cell)
            elif justify.get(columns[i]) == "right":
                parts.append(cell.rjust(widths[i]))
            else:
                parts.append(cell.ljust(widths[i]))
        con.print("  ".join(parts).rstrip(), markup=False)


def kv(con: Console, pairs: list[tuple[str, object]]) -> None:
    width = max((len(k) for k, _ in pairs), default=0)
    for k, v in pairs:
        con.print(f"{k.ljust(width)}  {v}", markup=False)


def fmt_int(n) -> str:
    return f"{int(n):,}" if n is not None else "-"


def fmt_pct(x) -> str:
    return f"{x * 100:.1f}%" if x is not None else "-"


def fmt_duration(s) -> str:
    """Seconds as the unit that reads best: 45 s, 12 min, 3.1 h, 2.5 d."""
    if s is None:
        return "-"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"
