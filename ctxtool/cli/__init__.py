"""The ``ctxtool`` command group: the only place that imports click.

Exit codes: 0 ok; 1 something to report or fix (--check found changes, the
validator found violations, some files in a batch failed); 2 usage error;
3 a file could not be processed at all (missing, unreadable, not a session, locked).
"""

from __future__ import annotations

import gc
import os
import signal
import sys

import click

from .. import render, retained
from ..interrupts import interrupted_exit, stopped_by, terminate_as_interrupt
from ..errors import EXIT_FAILED, EXIT_USAGE, CtxError, WriteError, unexpected
from .common import CONTEXT_SETTINGS, CURRENT, TARGETS, shown


# command -> module that defines it: a command's module (and what it imports: rich,
# tiktoken, the anthropic SDK) is loaded only when that command runs or help lists it
COMMANDS = {
    "repair": "repair", "validate": "repair", "estimate": "estimate",
    "prune": "prune", "compact": "compact", "profile": "profile", "report": "report", "view": "view",
    "budget": "budget", "checkpoint": "checkpoint",
}


class CtxGroup(click.Group):
    """Loads commands on demand; turns library errors into one-line messages and documented exit codes."""

    def list_commands(self, ctx):
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            __import__(f"{__name__}.{COMMANDS[name]}")
        _imports_done()
        return self.commands.get(name)

    def invoke(self, ctx):
        # `--json` anywhere before a `--`: a failure that stops the command is still JSON on stdout
        raw = [*getattr(ctx, "_protected_args", []), *ctx.args]
        json_mode = "--json" in (raw[:raw.index("--")] if "--" in raw else raw)
        _tolerant_output()
        try:
            return super().invoke(ctx)
        except CtxError as e:
            e = unexpected(e, path=ctx.meta.get(CURRENT))  # a message without a file gets the one being processed
            click.echo(shown(ctx, f"Error: {e}"), err=True)
            if json_mode:
                _json_error(shown(ctx, str(e)), e.exit_code, path=e.path and shown(ctx, e.path), line=e.line, reason=e.reason)
            ctx.exit(e.exit_code)
        except click.ClickException as e:
            if json_mode:
                _json_error(e.format_message(), e.exit_code)
            raise
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (interrupts.Terminated): after the clean-up they make
            word = stopped_by(e)
            done = getattr(e, "committed", None)  # taken once a rewrite was whole (commit.commit)
            if done is not None:
                kept = f" (backup: {done.backup})" if done.backup else ""
                click.echo(shown(ctx, f"{word} after {done.path} was rewritten{kept}."), err=True)
            else:
                click.echo(f"{word}.", err=True)
            ctx.exit(interrupted_exit(e))
        except BrokenPipeError:
            render.silence_stdout()
            ctx.exit(0)
        except Exception as e:  # last resort, never a traceback: one line naming the file being processed
            out = _stdout_failure(e) if isinstance(e, OSError) else None
            where = ctx.meta.get(CURRENT) or ", ".join(ctx.meta.get(TARGETS) or ()) or None
            # stdout itself cannot be written (a full disk): no file of the session's is to blame
            err = render.unwritable(out) if out is not None else unexpected(e, path=where)
            click.echo(shown(ctx, f"Error: {err}"), err=True)
            if json_mode:
                _json_error(shown(ctx, str(err)), err.exit_code, path=err.path and shown(ctx, err.path), line=err.line,
                            reason=err.reason)
            ctx.exit(err.exit_code)


def _tolerant_output() -> None:
    """Text read from a session can hold lone surrogates (JSON allows them; so do file names
    with invalid UTF-8): written as escapes rather than failing the command after its work."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # not a TextIOWrapper: leave it
            pass


def _json_error(message: str, exit_code: int, *, path=None, line=None, reason=None) -> None:
    """The whole command failed in --json mode: one JSON object on stdout (the message also went to stderr, which is
    all there is when stdout cannot be written)."""
    from .common import emit_json

    try:
        emit_json({"error": {"message": message, "path": path, "line": line, "reason": reason or message,
                             "exit_code": exit_code}})
    except WriteError:
        pass


@click.group(cls=CtxGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="ctxtool", message="ctxtool %(version)s")
def cli():
    """Offline toolkit for LLM agent session transcripts (pi/OpenClaw, Claude Code, Codex CLI, Messages JSONL).

    \b
    Exit codes: 0 ok, 1 something to report or fix, 2 usage error,
    3 a file could not be processed (missing, unreadable, not a session, locked).

    \b
    Example:
      ctxtool repair --check ~/.openclaw/agents/main/sessions/
      ctxtool estimate session.jsonl
    """


_PAUSED = []  # main paused the cyclic GC while the command's modules are imported


def _imports_done() -> None:
    if _PAUSED:
        _PAUSED.clear()
        gc.enable()


def main():
    if sys.stdout is None or sys.stderr is None:
        _closed_streams()
    retained.start()  # a command over one file leaves its index unfreed (``ctxtool.retained``)
    if getattr(signal, "SIGIO", None) is not None and signal.getsignal(signal.SIGIO) == signal.SIG_DFL:
        signal.signal(signal.SIGIO, signal.SIG_IGN)  # a lease probe's, whatever thread probes (commit.ignore_lease_breaks)
    terminate_as_interrupt()  # SIGTERM (a CI job's time limit, kill) stops as cleanly as Ctrl-C: exit 143
    if gc.isenabled():  # its collections while the command's modules load cost ~4 ms of each start
        gc.disable()
        _PAUSED.append(True)
    try:
        cli(prog_name="ctxtool")
    except BrokenPipeError:
        sys.exit(0)
    except SystemExit as e:
        code = e.code
        if code is not None and type(code) is not int:
            raise
        code = code or 0
        out = render.output_error()  # what the command printed, written now: a full disk says so (exit 3)
        if out is not None:
            try:
                click.echo(f"Error: {render.unwritable(out)}", err=True)
            except OSError:
                pass
            code = EXIT_FAILED
        if retained.holding():
            _end_now(code)
        sys.exit(code)
    except OSError as e:
        # outside a command (click's help or version, written before any command ran): standard output that cannot be
        # written says so, as a command's does; any other error is not this one's
        out = _stdout_failure(e)
        if out is None:
            raise
        try:
            click.echo(f"Error: {render.unwritable(out)}", err=True)
        except OSError:
            pass
        sys.exit(EXIT_FAILED)
    finally:
        _imports_done()  # (a command that ended before it was looked up: a caller's own GC as it was)


def _stdout_failure(e: OSError) -> OSError | None:
    """The error standard output met, when ``e`` is one (then what is left of it goes to /dev/null), else None: what
    flushing it now meets (a full disk: ``render.output_error``), or ``e`` itself when it was raised writing it whole
    (the innermost frame wrote to it: click's ``echo`` of help or version text, whose failed write left nothing to flush)."""
    out = render.output_error()
    if out is not None:
        return out
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_locals.get("file") is not sys.stdout:
        return None
    render.silence_stdout()
    return e


def _closed_streams() -> None:
    """Standard output closed at the start (``>&-``: Python gives None): nothing a command prints could be read, so no
    command runs (one line on standard error, exit 3). Standard error closed: what it would say is dropped."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    if sys.stdout is None:
        click.echo(f"Error: {WriteError('cannot be written: standard output is closed', path='<stdout>')}", err=True)
        sys.exit(EXIT_FAILED)


def _end_now(code: int) -> None:
    """End the process with ``code`` without freeing what it holds (stdout is flushed already: ``main``)."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


__all__ = ["cli", "main", "EXIT_USAGE"]
