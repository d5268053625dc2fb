"""Streaming JSONL reading and crash-safe writing.

Reading never loads a whole file: ``transcript.scan`` reads line by line (its hot
loop opens the file with ``open_binary`` and parses with orjson directly) and keeps
each line's number and byte offset, so it can come back to any line later
(``read_at``). ``parse`` says why a line cannot be used rather than skipping it.

Writing is atomic: a temp file in the same directory (``.<name>.ctxtool-<pid>-<ms>.tmp``,
a name the next run recognizes and removes once that pid is gone), fsync, rename over
the target, fsync of the directory. Rewriting a session in place goes through
``ctxtool.commit``, which adds the checks and carry-over a live file needs and the backup.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from typing import Iterable

import orjson

from .errors import InputError, WriteError

BOM = b"\xef\xbb\xbf"
READ_BUFFER = 1 << 20


class Line:
    """One physical line: where it is, and its bytes (``data`` still ends with its newline,
    so the hot path never copies a line; ``raw`` is the content without the newline)."""

    __slots__ = ("no", "offset", "data", "eol", "bom")

    def __init__(self, no: int, offset: int, data: bytes, eol: bytes, bom: bool = False):
        self.no = no  # 1-based line number
        self.offset = offset  # byte offset of the first content byte (after a BOM)
        self.data = data  # content plus line terminator (no BOM)
        self.eol = eol  # b"\n", b"\r\n" or b"" for a last line with no newline
        self.bom = bom  # line 1 started with a UTF-8 BOM (not part of data)

    @property
    def length(self) -> int:
        return len(self.data) - len(self.eol)

    @property
    def raw(self) -> bytes:
        return self.data[: self.length] if self.eol else self.data


def open_binary(path: str):
    """Open a transcript for reading; failures become one-line InputErrors."""
    try:
        return open(path, "rb", buffering=READ_BUFFER)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=path) from None


def parse(line: Line) -> tuple[object, str | None]:
    """Parse one line; return (object, None) or (None, reason it cannot be used)."""
    try:
        return orjson.loads(line.data), None  # JSON allows the trailing newline as whitespace
    except orjson.JSONDecodeError as e:
        raw = line.raw
        if not raw.strip():
            return None, "blank line"
        obj = _strict_fallback(raw)
        if obj is not _INVALID:
            return obj, None
        return None, _reason(line, str(e))


_INVALID = object()


def loads(raw: bytes):
    """The object of a line the scan accepted, read again: the same parsers as ``parse``
    (orjson, then the fallback for numbers beyond double range and lone surrogates)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        obj = _strict_fallback(raw)
        if obj is _INVALID:
            raise ValueError(f"line no longer parses ({e})") from None
        return obj


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _js_int(digits: str):
    """An integer literal as JSON.parse reads it where Python's ``int`` refuses to (more than 4,300 digits: infinity)."""
    return int(digits) if len(digits) <= 4300 else float(digits)


def _strict_fallback(raw: bytes):
    """Lines orjson refuses but JavaScript's JSON.parse (so the agent) accepts: numbers
    beyond double range and lone UTF-16 surrogate escapes. Such a line is valid and
    must never be dropped. NaN/Infinity literals stay invalid, as in JavaScript.
    Bytes that are not UTF-8 are read as Node reads a file as text: each bad sequence one
    U+FFFD (pi and Claude Code keep such a line, judged; Codex skips it: ``scanloop.rust_refuses``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_js_int)
    except ValueError:
        return _INVALID
    except RecursionError:  # nested deeper than Python reads on its own stack: JavaScript reads it
        return _deep_loads(text)


DEEP_LEVELS = 200_000  # nesting read and written with a stack of its own (JSON.parse has no limit; no agent nests so)
_DEEP_STACK = 512 << 20


def with_deep_stack(fn):
    """``fn()`` for a value nested past the recursion limit (the standard library's JSON reader and
    writer recurse): in a thread with a large stack and a higher limit (the limit is the process's: set
    back at once). RecursionError past ``DEEP_LEVELS``, or where no such thread can be made."""
    import threading

    out: list = [None, RecursionError("nested too deeply")]

    def run() -> None:
        try:
            out[0], out[1] = fn(), None
        except BaseException as e:  # handed back to the caller's thread
            out[1] = e

    limit = sys.getrecursionlimit()
    old_size = threading.stack_size()
    try:
        threading.stack_size(_DEEP_STACK)
        sys.setrecursionlimit(max(limit, DEEP_LEVELS + 100))
        t = threading.Thread(target=run, name="ctxtool-deep-json")
        t.start()
        t.join()
    except (RuntimeError, ValueError, MemoryError):  # no thread of that stack size here
        pass
    finally:
        sys.setrecursionlimit(limit)
        threading.stack_size(old_size)
    if out[1] is not None:
        raise out[1]
    return out[0]


def _deep_loads(text: str):
    try:
        return with_deep_stack(lambda: json.loads(text, parse_constant=_reject_constant))
    except (ValueError, RecursionError):
        return _INVALID


TORN_LAST = "torn last line"  # (how a bad line's reason begins where the last line has no newline yet)


def _reason(line: Line, message: str) -> str:
    raw = line.raw
    if b"\x00" in raw:
        return "NUL bytes in line"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at byte {line.offset + e.start}"
    if not line.eol:
        return TORN_LAST + " (no newline, incomplete JSON)"
    if "control character" in message:
        # the line's own newline inside a string that never closes: the line ends in it (torn), not a bad character
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if "end of data" in str(e):
                return "incomplete JSON: the line ends inside a string (torn)"
        return "unescaped control character in string (bad control character)"
    return f"invalid JSON ({message.split(':', 1)[0]})"


def read_at(path: str, offset: int, length: int, f=None) -> bytes:
    """Read ``length`` bytes at ``offset``: how an indexed entry is loaded again."""
    if f is not None:
        f.seek(offset)
        return f.read(length)
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


_INF, _NINF = "\x00ctxtool:+inf\x00", "\x00ctxtool:-inf\x00"  # stand-ins while the fallback serializer writes


def _infinities(obj) -> list:
    """(container, key) of every infinite float in ``obj`` (numbers like 1e400 the fallback parser read)."""
    found, stack = [], [obj]
    while stack:
        c = stack.pop()
        for k, v in (c.items() if type(c) is dict else enumerate(c)):
            t = type(v)
            if t is float:
                if v in (math.inf, -math.inf):
                    found.append((c, k))
            elif t is dict or t is list:
                stack.append(v)
    return found


def dumps(obj: object) -> bytes:
    """Serialize one record compactly, keeping key order and non-ASCII text as is.

    What orjson cannot write (lone surrogates, integers beyond 64 bits) or would write wrongly
    (it writes an infinity as null) goes through the standard library: surrogates escaped, an
    infinity as 1e999, which JSON.parse reads as Infinity again."""
    spots = _infinities(obj) if type(obj) in (dict, list) else []
    if not spots:
        try:
            return orjson.dumps(obj)
        except (TypeError, orjson.JSONEncodeError):
            pass
    saved = [(c, k, c[k]) for c, k in spots]
    try:
        for c, k, v in saved:
            c[k] = _INF if v > 0 else _NINF
        try:
            text = json.dumps(obj, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
        except RecursionError:  # a line nested deeper than orjson writes (it reads up to 1,024 levels)
            text = with_deep_stack(lambda: json.dumps(obj, separators=(",", ":"), ensure_ascii=True, allow_nan=False))
    finally:
        for c, k, v in saved:
            c[k] = v
    return text.replace(json.dumps(_INF), "1e999").replace(json.dumps(_NINF), "-1e999").encode("ascii")


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STRUCTURE = re.compile(rb'["{}\[\]]')
_SCALAR = re.compile(rb'[^,}\]\s]+')
_SPACE = re.compile(rb'[ \t\r\n]*')


def _value_end(raw: bytes, i: int) -> int:
    """Where the JSON value starting at ``i`` ends (-1 if it does not), without parsing it:
    strings and brackets are skipped by pattern, so nesting depth costs nothing."""
    c = raw[i:i + 1]
    if c == b'"':
        m = _STRING.match(raw, i)
        return m.end() if m else -1
    if c not in (b"{", b"["):
        m = _SCALAR.match(raw, i)
        return m.end() if m else -1
    depth, pos = 0, i
    while True:
        m = _STRUCTURE.search(raw, pos)
        if m is None:
            return -1
        ch = m.group()
        if ch == b'"':
            s = _STRING.match(raw, m.start())
            if s is None:
                return -1
            pos = s.end()
            continue
        depth += 1 if ch in b"{[" else -1
        pos = m.end()
        if depth == 0:
            return pos


def set_top_level(raw: bytes, values: dict) -> bytes | None:
    """``raw`` (one JSON object) with the top-level keys of ``values`` set (replaced in place,
    or added at the end), every other byte as it was; None when ``raw`` is not a plain object.

    How repair re-links or renames a line without re-serializing it: numbers, escapes, key
    order and spacing stay as written, and a line nested deeper than any serializer goes
    is still edited."""
    spans: dict[str, tuple[int, int]] = {}
    i = _SPACE.match(raw, 0).end()
    if raw[i:i + 1] != b"{":
        return None
    i = _SPACE.match(raw, i + 1).end()
    if raw[i:i + 1] != b"}":
        while True:
            m = _STRING.match(raw, i)
            if m is None:
                return None
            try:
                key = orjson.loads(m.group())
            except orjson.JSONDecodeError:
                return None
            i = _SPACE.match(raw, m.end()).end()
            if raw[i:i + 1] != b":":
                return None
            i = _SPACE.match(raw, i + 1).end()
            end = _value_end(raw, i)
            if end < 0:
                return None
            spans[key] = (i, end)  # a key written twice: the last one counts, as in JSON.parse
            i = _SPACE.match(raw, end).end()
            if raw[i:i + 1] == b",":
                i = _SPACE.match(raw, i + 1).end()
                continue
            if raw[i:i + 1] == b"}":
                break
            return None
    close = i
    if raw[close + 1:].strip():
        return None
    edits = sorted((spans[k][0], spans[k][1], dumps(v)) for k, v in values.items() if k in spans)
    added = [dumps(k) + b":" + dumps(v) for k, v in values.items() if k not in spans]
    out, pos = [], 0
    for start, end, new in edits:
        out += [raw[pos:start], new]
        pos = end
    out.append(raw[pos:close])
    if added:
        out.append((b"," if spans else b"") + b",".join(added))
    out.append(raw[close:])
    return b"".join(out)


def timestamp_ms() -> int:
    return int(time.time() * 1000)


def backup_path(path: str) -> str:
    """OpenClaw's repair backup name: ``<file>.bak-<pid>-<ms>``, one not taken yet (two writes
    of one process in the same millisecond, as when late lines are put back, get two names)."""
    return _free(lambda ms: f"{path}.bak-{os.getpid()}-{ms}")


def _free(name_at) -> str:
    """``name_at(ms)`` for the first millisecond from now whose name does not exist (names carry
    this process's pid: only this process makes them)."""
    ms = timestamp_ms()
    while os.path.lexists(name_at(ms)):
        ms += 1
    return name_at(ms)


#: ctxtool's own leftovers beside a file: temp files (``tmp``) and backups not yet named (``bak``)
TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.ctxtool-(?P<pid>\d+)-(?P<ms>\d+)\.(?P<kind>tmp|bak)$")


def temp_path(path: str, kind: str = "tmp") -> str:
    """``<dir>/.<name>.ctxtool-<pid>-<ms>.<kind>`` beside ``path`` (see TEMP_NAME)."""
    directory, name = os.path.split(path)
    return _free(lambda ms: os.path.join(directory, f".{name}.ctxtool-{os.getpid()}-{ms}.{kind}"))


def write_temp(path: str, chunks: Iterable[bytes]) -> tuple[str, int, int]:
    """Write ``chunks`` to a new temp file beside ``path`` (mode 0600) and fsync it.

    Returns ``(temp path, fd, bytes written)``; the fd stays open for appending (O_APPEND),
    the caller closes it. On any error the temp file is removed (OSError becomes WriteError)."""
    tmp = temp_path(path)
    written = 0
    fd = -1
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        with os.fdopen(fd, "wb", buffering=READ_BUFFER, closefd=False) as out:
            for chunk in chunks:
                out.write(chunk)
                written += len(chunk)
        os.fsync(fd)
    except BaseException as e:
        discard(tmp, fd)
        if isinstance(e, OSError):
            raise WriteError(f"cannot write: {e.strerror or e}", path=path) from None
        raise
    return tmp, fd, written


def discard(tmp: str, fd: int = -1) -> None:
    """Close ``fd`` (when open) and remove ``tmp``, ignoring errors: the cleanup after a failed write."""
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        os.unlink(tmp)
    except OSError:
        pass


def atomic_write(path: str, chunks: Iterable[bytes], *, mode: int | None = None) -> int:
    """Write ``chunks`` to ``path`` atomically; returns the number of bytes written.

    For new files and outputs (``-o``, patches, notes); a live session is rewritten with
    ``ctxtool.commit``. ``mode`` defaults to the existing file's mode (or 0o600 for a new
    file, as OpenClaw creates session files). A symlink is written through: the real file
    is replaced and the link stays. On any error the temp file is removed and the target
    is left as it was.
    """
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if mode is None:
        mode = st.st_mode & 0o7777 if st is not None else 0o600
    tmp, fd, written = write_temp(path, chunks)
    try:
        if st is not None:
            keep_owner(fd, st)
        os.fchmod(fd, mode)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException as e:
        discard(tmp, fd)
        if isinstance(e, OSError):
            raise WriteError(f"cannot write: {e.strerror or e}", path=path) from None
        raise
    fsync_dir(os.path.dirname(path))
    return written


def keep_owner(fd: int, st: os.stat_result) -> None:
    """Give the file at ``fd`` (a replacement being written) the owner and group of the file it replaces
    (``st``), where they differ and this process may (root, or a group of its own): a session rewritten by
    root stays readable by the agent that owns it. Before ``fchmod``: a change of owner clears set-id bits."""
    if st.st_uid == os.geteuid() and st.st_gid == os.getegid():
        return
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        try:  # not root: the group alone, when it is one of this process's
            os.fchown(fd, -1, st.st_gid)
        except OSError:
            pass
    except OSError:
        pass


def fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
