"""Options and helpers shared by every command."""

from __future__ import annotations

import contextlib
import sys

import click
import orjson

from .. import formats, render
from ..errors import ConfigError, CtxError
from ..paths import expand

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

json_option = click.option("--json", "json_", is_flag=True, help="Machine-readable JSON on stdout.")
format_option = click.option(
    "--format", "fmt", type=click.Choice(formats.NAMES), default=None,
    help="Force the transcript format instead of detecting it.",
)


def emit_json(data) -> None:
    try:
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: finish quietly, the exit code still reports the result
        render.silence_stdout()


def collect(targets) -> tuple[list[str], list[dict]]:
    """Expand targets; problems become per-target failure records (never fatal alone)."""
    files, problems = expand(list(targets))
    failures = [{"path": t, "error": why, "line": None, "message": f"{t}: {why}"} for t, why in problems]
    return files, failures



def failure(path: str, e: CtxError) -> dict:
    return {"path": path, "error": e.reason if e.path else str(e), "line": e.line, "message": str(e)}


def each_with_progress(items, label: str, *, enabled: bool, total: int | None = None):
    """Iterate ``items``, drawing a rich progress bar on stderr when it is a terminal.
    ``total``: how many ``items`` will give (they are then not read ahead: results of a pool)."""
    if total is None:
        items = list(items)
        total = len(items)
    if not enabled or total < 2 or not sys.stderr.isatty():
        yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task(label, total=total)
        for item in items:
            yield item
            bar.advance(task)


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
