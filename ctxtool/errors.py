"""Failure kinds and the exit-code contract, in one place.

Library code raises these; only the CLI turns them into messages and exit codes.

Exit codes (documented in README and ``ctxtool --help``):

* 0 - success, nothing to report.
* 1 - something to report or fix: ``--check`` found changes, the validator found
  violations, a batch had failures (the rest were still processed).
* 2 - usage error (bad options).
* 3 - a file could not be processed at all (missing, unreadable, not a session,
  locked by a running agent).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_FAILED = 3


class CtxError(Exception):
    """Base class: a failure the user can act on, shown as one line."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        super().__init__(self.format())

    def __reduce__(self):
        # pickled as it is (a process pool sends errors back): reason, path, line and any
        # attribute of a subclass, not just the formatted message
        return _restore, (type(self), self.args, self.__dict__)

    def naming(self, path: str) -> "CtxError":
        """This error, said of ``path`` (the name the user gave a file it was raised of by another name)."""
        self.path = path
        self.args = (self.format(),)
        return self

    def format(self) -> str:
        where = ""
        if self.path is not None:
            where = printable_name(str(self.path))
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        return where + self.reason


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}


def printable_name(name: str) -> str:
    """A file name as one line of text: its control characters (a newline, an escape sequence that would recolour the
    terminal) written as ``\\xNN``, as ``ls -b`` writes them. The error's path itself stays as it is (``--json``)."""
    return name.translate(_CONTROL) if any(ord(ch) < 0x20 or ch == "\x7f" for ch in name) else name


def _restore(cls, args, state):
    e = cls.__new__(cls)
    Exception.__init__(e, *args)
    e.__dict__.update(state)
    return e


class InputError(CtxError):
    """The input file is missing, unreadable, binary or not a session transcript."""


class FormatError(InputError):
    """The transcript format could not be detected or does not match --format."""


class LockError(CtxError):
    """The agent's lock file prevents writing (held by a live process, or stale)."""


class LockTimeout(LockError):
    """Another process held the lock longer than the timeout."""


class StaleLock(LockError):
    """A stale lock exists and removing it was not allowed."""


class HeldOpen(LockError):
    """A process keeps the file open for writing (an agent that takes no lock but holds its file, as Codex holds its
    rollout): a rewrite renamed over it would lose every line it writes afterwards. ``holders``: who (pid, name)."""

    def __init__(self, message: str, *, path: str | None = None, holders: list | None = None):
        self.holders = holders or []
        super().__init__(message, path=path)


class WriteError(CtxError):
    """Writing the output, the backup or the temp file failed."""


class ForkedError(WriteError):
    """Other rollouts read this file up to a byte offset (Codex forks: ``history_base.end_byte_offset``): a rewrite that
    changes a byte before it would change their history, or make them unloadable. Nothing was written."""


class BatchStateError(CtxError):
    """The resume state of a ``compact --batch`` run is unusable: another run's, in use, unreadable."""


class FileChanged(WriteError):
    """The file was replaced, shrank or was rewritten in place while ctxtool was rewriting
    it (appends are carried over, not refused); nothing was written. ``retry`` is True
    when planning again from the file as it is now would succeed."""

    def __init__(self, message: str, *, path: str | None = None, retry: bool = False):
        self.retry = retry
        super().__init__(message, path=path)


class ConfigError(CtxError):
    """A configuration file could not be read or has invalid values."""

    exit_code = EXIT_USAGE


class ApiError(CtxError):
    """A call to a model provider (count_tokens, summarizer) failed."""


class SummarizerError(CtxError):
    """A summarizer (API, command) failed or produced nothing usable."""


class TokenizerUnavailable(CtxError):
    """A tokenizer encoding is not installed; the message says what to install."""

    exit_code = EXIT_USAGE


class InternalError(CtxError):
    """ctxtool met something it did not expect while processing a file (a bug): still one line
    naming the file (and line where known), never a traceback."""


MAX_DETAIL = 200


def unexpected(exc: BaseException, *, path: str | None = None, line: int | None = None) -> CtxError:
    """The one-line error for an exception that escaped while processing ``path``.

    A CtxError keeps its message and gets the path (and line) when it had none; an OSError
    says what the system said; anything else becomes an InternalError naming its type.
    With CTXTOOL_DEBUG set, the original exception is raised again (for a traceback)."""
    if isinstance(exc, CtxError):
        if exc.path is None and path is not None:
            exc.path = path
            if exc.line is None:
                exc.line = line
            exc.args = (exc.format(),)
        return exc
    import os

    if os.environ.get("CTXTOOL_DEBUG"):
        raise exc
    detail = str(exc)
    if len(detail) > MAX_DETAIL:
        detail = detail[:MAX_DETAIL] + "..."
    if isinstance(exc, OSError):
        return InputError(f"cannot read or write: {exc.strerror or detail}", path=path, line=line)
    return InternalError(f"internal error: {type(exc).__name__}: {detail} (set CTXTOOL_DEBUG=1 for a traceback)",
                         path=path, line=line)
