"""Options and helpers shared by every command."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys

import click
import orjson

from .. import formats, render, retained
from ..errors import ConfigError, InputError, unexpected
from ..paths import Spool, expand, is_stream, why_missing

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

json_option = click.option("--json", "json_", is_flag=True, help="Machine-readable JSON on stdout.")
format_option = click.option(
    "--format", "fmt", type=click.Choice(formats.NAMES), default=None,
    help="Force the transcript format instead of detecting it.",
)

SUMMARIZERS = ("extractive", "anthropic", "command")


def summarizer_options(what: str):
    """--summarizer, --model, --summarizer-command: the summarizers of ``ctxtool.summarize`` (``what``: for what)."""
    from ..summarize import DEFAULT_MODEL

    def deco(f):
        f = click.option("--summarizer-command", "command", metavar="CMD",
                         help="Shell command: prompt on stdin, answer on stdout.")(f)
        f = click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Model for --summarizer anthropic.")(f)
        return click.option("--summarizer", type=click.Choice(SUMMARIZERS), default="extractive", show_default=True,
                            help=f"{what}: extractive is offline and deterministic; anthropic: Messages API "
                                 "(ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL); command: pipe the prompt to "
                                 "--summarizer-command.")(f)
    return deco


class FiniteRange(click.FloatRange):
    """``click.FloatRange`` that refuses ``nan`` and ``inf`` (which pass its bounds: a comparison with NaN is false):
    ``--safety-margin nan`` ended in "internal error", ``--now nan`` in "expired (nans since ...)"."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if rv != rv or rv in (float("inf"), float("-inf")):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


FINITE = FiniteRange()  # for type=float


def output_file(ctx, param, value):
    """An output file option (``-o``, ``--html``, ``--write-patch``): ctxtool writes it whole and renames it into place,
    so it must name a file. ``-`` and a stream or device (``/dev/stdout``, ``/proc/self/fd/1``) are refused: the rename
    failed for a pipe, and replaced the file standard output was sent to while the report went to the unlinked one;
    ``-`` made a file named "-"."""
    if value is None:
        return value
    stream = value == "-" or value.startswith(_STREAM_NAMES) or _PROC_FD.match(value) is not None
    if not stream and os.path.isdir(value):
        raise click.BadParameter(f"{value!r} is a directory: name a file to write")
    if stream or (os.path.exists(value) and not os.path.isfile(value)):  # (a device or a pipe, /dev/shm's files are)
        raise click.BadParameter(f"{value!r} is not a file (standard output, a device or a pipe): name a file to write")
    return value


_STREAM_NAMES = ("/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")
_PROC_FD = re.compile(r"/proc/\d+/fd/")


def emit_json(data) -> None:
    try:
        out = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:  # lone surrogates, numbers beyond 64 bits read from a session
        try:
            out = json.dumps(data, indent=2, ensure_ascii=True, default=str).encode("ascii")
        except RecursionError:  # a value nested deeper than Python's stack (a tool input 50,000 levels deep)
            out = _deep_dumps(data).encode("ascii")
    write_out(out + b"\n")


def _deep_dumps(data) -> str:
    """``data`` as compact JSON (ASCII), however deep: the encoding done with a stack of its own, not by recursion.
    What ``json.dumps(..., default=str)`` writes for each leaf."""
    from json.encoder import encode_basestring_ascii as string

    parts: list[str] = []
    stack: list = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, _Text):
            parts.append(x)
        elif isinstance(x, dict):
            items = list(x.items())
            stack.append(_Text("}"))
            for k, (key, v) in reversed(list(enumerate(items))):
                stack.append(v)
                stack.append(_Text(string(_key(key)) + ":"))
                if k:
                    stack.append(_Text(","))
            stack.append(_Text("{"))
        elif isinstance(x, (list, tuple)):
            stack.append(_Text("]"))
            for k in range(len(x) - 1, -1, -1):
                stack.append(x[k])
                if k:
                    stack.append(_Text(","))
            stack.append(_Text("["))
        else:
            parts.append(json.dumps(x, ensure_ascii=True, default=str))
    return "".join(parts)


class _Text(str):
    """Text ``_deep_dumps`` writes as it is (punctuation, encoded keys)."""


def _key(key) -> str:
    """A dict key as ``json.dumps`` writes it: a string as it is, None, a bool or a number as its JSON text."""
    if isinstance(key, str):
        return key
    return json.dumps(key) if key is None or isinstance(key, (bool, int, float)) else str(key)


def write_out(data: str | bytes) -> None:
    """``data`` on standard output, flushed (``writing_out``)."""
    with writing_out():
        if isinstance(data, bytes):
            sys.stdout.flush()  # (text written before it goes first)
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(render.visible(data, stripped=False) if _on_terminal(sys.stdout) else data)
        sys.stdout.flush()


def _on_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def writing_out():
    """Writing standard output: a reader that went away (`| head`) ends it quietly (the exit code still reports the
    result); output that cannot be written (a full disk) is a ``WriteError`` naming standard output, not a file of the
    session's."""
    try:
        yield
    except BrokenPipeError:
        render.silence_stdout()
    except OSError as e:
        render.silence_stdout()
        raise render.unwritable(e) from None


CURRENT = "ctxtool.path"  # ctx.meta key: the file being processed (the command group's last-resort error names it)
TARGETS = "ctxtool.targets"
NAMES = "ctxtool.names"  # temp file of spooled input -> the name the user gave (<stdin>, /dev/fd/63)


def working_on(path: str) -> None:
    """Record the file being processed, for an error that escapes the command."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[CURRENT] = path


def collect(targets) -> tuple[list[str], list[dict]]:
    """Expand targets; problems become per-target failure records (never fatal alone).

    Standard input (``-``, ``/dev/stdin``) and named pipes are spooled to temp files, deleted
    when the command ends; output shows them under the name the user gave."""
    ctx = click.get_current_context(silent=True)
    spool = None
    if ctx is not None:
        ctx.meta[TARGETS] = list(targets)
        spool = Spool()
        ctx.call_on_close(spool.close)
    files, problems = expand(list(targets), spool)
    if spool is not None and spool.names:
        _show_names(ctx, dict(spool.names))
    failures = [{"path": t, "error": why, "line": None, "message": f"{t}: {why}"} for t, why in problems]
    if len(files) > 1:
        retained.stop()  # each file's index is freed as the run goes on (``ctxtool.retained``)
    return files, failures



def one_input(path: str) -> str:
    """The file a single-file command reads for ``path``: itself, or for standard input or a pipe its spooled copy
    (``collect``; output names it as the user did). A problem with it is raised as the ``InputError`` it would be."""
    if not is_stream(path):
        if not os.path.exists(path):  # why, as a folder's walk says it (a link to a missing file, a loop of links)
            raise InputError(why_missing(path), path=path)
        return path
    files, failures = collect([path])
    if not files:
        raise InputError(failures[0]["error"], path=path)
    return files[0]


def spooled(path: str) -> str | None:
    """The name the user gave for a spooled input (``<stdin>``), or None for a real file."""
    ctx = click.get_current_context(silent=True)
    return (ctx.meta.get(NAMES) or {}).get(path) if ctx is not None else None


def shown(ctx, text: str) -> str:
    """``text`` with spooled temp files under the names the user gave."""
    for tmp, name in (ctx.meta.get(NAMES) or {}).items():
        text = text.replace(tmp, name)
    return text


class _Renaming:
    """A text stream (and its byte buffer) that writes spooled temp files' paths as the names
    the user gave, so every message and report names ``<stdin>`` rather than a temp file."""

    def __init__(self, stream, names: dict, binary: bool = False):
        self._stream = stream
        self._pairs = [(k.encode(), v.encode()) if binary else (k, v) for k, v in names.items()]
        self._names = names

    def write(self, s):
        for tmp, name in self._pairs:
            s = s.replace(tmp, name)
        return self._stream.write(s)

    @property
    def buffer(self):
        return _Renaming(self._stream.buffer, self._names, binary=True)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _show_names(ctx, names: dict) -> None:
    ctx.meta[NAMES] = names
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Renaming(sys.stdout, names), _Renaming(sys.stderr, names)

    def restore():
        sys.stdout, sys.stderr = saved

    ctx.call_on_close(restore)


def failure(path: str, e: Exception) -> dict:
    """The failure record of one file of a batch; any exception becomes one line naming the file."""
    e = unexpected(e, path=path)
    return {"path": path, "error": e.reason, "line": e.line, "message": str(e)}


def each_with_progress(items, label: str, *, enabled: bool, total: int | None = None):
    """Iterate ``items``, drawing a rich progress bar on stderr when it is a terminal.
    ``total``: how many ``items`` will give (they are then not read ahead: results of a pool,
    ``(path, result, error)``). The file each item is about is recorded for an error that escapes."""
    if total is None:
        items = list(items)
        total = len(items)
    if not enabled or total < 2 or not sys.stderr.isatty():
        for item in items:
            working_on(_path_of(item))
            yield item
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=sys.stderr, emoji=False), transient=True) as bar:
        task = bar.add_task(label, total=total)
        for item in items:
            working_on(_path_of(item))
            yield item
            bar.advance(task)


def _path_of(item):
    return item if isinstance(item, str) else item[0]


@contextlib.contextmanager
def in_config(path: str | None, option: str | None = None):
    """A ConfigError raised inside names where the bad value came from: the config file or the option."""
    try:
        yield
    except ConfigError as e:
        if e.path is not None or not (path or option):
            raise
        if path:
            raise ConfigError(e.reason, path=path) from None
        raise ConfigError(f"{option}: {e.reason}") from None
