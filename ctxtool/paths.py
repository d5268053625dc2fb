"""Expand files, directories and globs into the session files to process."""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import re
import stat
import sys

from .errors import InputError

# Files that live beside sessions but are not live sessions (ours and OpenClaw's): backups,
# temp files, locks, archives, and compaction checkpoints (<id>.checkpoint.<uuid>.jsonl,
# snapshots that would be counted twice). Named explicitly, any of them is still read.
ARTIFACT_RE = re.compile(
    r"(\.bak-\d+-\d+$|\.tmp$|\.lock$|\.jsonl\.(reset|deleted|bak)\.|\.truncate-tmp$|\.manual-compaction-tmp$|\.ctxtool-"
    r"|\.checkpoint\.[0-9a-fA-F-]{8,}\.jsonl$)"
)


def is_artifact(path: str) -> bool:
    return bool(ARTIFACT_RE.search(os.path.basename(path)))


NOT_REGULAR = "not a regular file"
STDIN_TARGETS = ("-", "/dev/stdin")  # the explicit ways to read standard input
STDIN_NAME = "<stdin>"
FD_DIRS = ("/dev/fd/", "/proc/self/fd/")  # bash's <(...) and the like: a pipe with a name


def regular(path: str) -> bool:
    """A regular file (a FIFO, socket or device is never opened: reading one may block forever)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_stream(target: str) -> bool:
    """Standard input, or a pipe passed by name (``<(cat s.jsonl)`` is ``/dev/fd/63``)."""
    if target in STDIN_TARGETS:
        return True
    return target.startswith(FD_DIRS) and os.path.exists(target) and not regular(target)


class Spool:
    """Input that cannot be read twice (standard input, a pipe) copied to a temp file first:
    every command reads a session more than once (by offset, in parts). ``names`` maps each
    temp file to the name messages show (``<stdin>``, ``/dev/fd/63``); ``close`` deletes them."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self._by_target: dict[str, str] = {}

    def add(self, target: str) -> str:
        if target in self._by_target:
            return self._by_target[target]
        import shutil  # (here: most runs spool nothing, and these two cost ~8 ms of imports)
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix="ctxtool-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "wb") as out:
                if target in STDIN_TARGETS:
                    if sys.stdin is None:  # closed at the start (``<&-``)
                        raise InputError("cannot read: standard input is closed", path=STDIN_NAME)
                    shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
                else:
                    with open(target, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 20)
        except BaseException:
            os.unlink(tmp)
            raise
        self.names[tmp] = STDIN_NAME if target in STDIN_TARGETS else target
        self._by_target[target] = tmp
        return tmp

    def close(self) -> None:
        for tmp in self.names:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.names.clear()
        self._by_target.clear()


def expand(targets: list[str], spool: Spool | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """(session files in a stable order, [(target, problem)] for targets that gave none).

    Only regular files are read. Standard input (``-``, ``/dev/stdin``) and named pipes such as
    ``/dev/fd/63`` are copied by ``spool`` (without one they are refused, as is any other file
    that is not a regular file)."""
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    seen: dict[str, int] = {}

    def add(p: str, key: str | None = None) -> None:
        # realpath: a symlink and its target (or two links to one file) are one session, processed
        # once (a batch would otherwise count it twice and compact it twice); the real name is shown
        if key is None:
            key = os.path.realpath(p)
        if key not in seen:
            seen[key] = len(files)
            files.append(p)
        elif os.path.islink(files[seen[key]]) and not os.path.islink(p):
            files[seen[key]] = p

    for target in targets:
        if is_stream(target):
            if spool is None:
                problems.append((target, NOT_REGULAR))
                continue
            try:
                add(spool.add(target))
            except OSError as e:
                problems.append((target, f"cannot read: {e.strerror or e}"))
        elif os.path.isdir(target):
            found, unlisted = _sessions_under(target)
            problems += unlisted  # a folder that may not be listed (its sessions would be passed over unsaid)
            if not found and not unlisted:
                problems.append((target, "directory holds no *.jsonl session files"))
            for p, is_regular, key in found:
                if is_regular:
                    add(p, key)
                else:  # (a link to a missing file, or a loop of links, says so, as when named)
                    problems.append((p, NOT_REGULAR if os.path.exists(p) else why_missing(p)))
        elif os.path.exists(target):
            if regular(target):
                add(target)
            else:
                problems.append((target, NOT_REGULAR))
        elif any(ch in target for ch in "*?["):
            matches = sorted(p for p in set(expand_glob(target)) if os.path.isfile(p) and not is_artifact(p))
            if not matches:
                problems.append((target, "glob matched no files"))
            for p in matches:
                add(p)
        else:
            problems.append((target, why_missing(target)))
    return files, problems


def expand_glob(pattern: str) -> list[str]:
    """The paths ``pattern`` matches, as ``glob.glob(pattern, recursive=True)`` gives them (hidden names only where the
    pattern's part starts with a dot), but ``**`` does not enter a symbolic link to a folder, as a folder's walk does
    not: glob's does, and a tree with two links that loop back made its list grow without end (found by a review: a
    run that never ended). The paths of files, and of folders where the pattern ends in ``**``; some may repeat."""
    if "**" not in pattern:
        return glob.glob(pattern)
    parts = pattern.split(os.sep)
    first = next(i for i, c in enumerate(parts) if glob.has_magic(c))
    base = os.sep.join(parts[:first]) if first else ""
    if first and not base:  # (an absolute pattern: its first part is empty)
        base = os.sep
    rest: list[str] = []
    for c in parts[first:]:  # ("**/**" is "**")
        if not (c == "**" and rest and rest[-1] == "**"):
            rest.append(c)
    if base and not os.path.isdir(base):
        return []
    out: list[str] = []
    _glob_under(base, rest, out)
    return out


def _glob_under(d: str, parts: list[str], out: list[str]) -> None:
    part, rest = parts[0], parts[1:]
    if not glob.has_magic(part):
        p = os.path.join(d, part)
        if rest:
            if os.path.isdir(p):
                _glob_under(p, rest, out)
        elif os.path.lexists(p):
            out.append(p)
        return
    try:
        with os.scandir(d or os.curdir) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    hidden_too = part.startswith(".")
    if part == "**" and not rest and d:
        out.append(os.path.join(d, ""))  # (the folder itself, as glob gives it)
    for e in entries:
        if e.name.startswith(".") and not hidden_too:
            continue
        p = os.path.join(d, e.name)
        try:
            is_dir = e.is_dir()
            linked = e.is_symlink()
        except OSError:
            continue
        if part == "**":
            if not rest:
                out.append(p)
            if is_dir and not linked:
                _glob_under(p, parts, out)
        elif fnmatch.fnmatchcase(e.name, part):
            if not rest:
                out.append(p)
            elif is_dir:
                _glob_under(p, rest, out)
    if part == "**" and rest:  # (none: the folder itself)
        _glob_under(d, rest, out)


def why_missing(path: str) -> str:
    """Why ``path``, which ``os.path.exists`` says is not there, cannot be read: missing, a symbolic link to a file
    that is missing, a loop of links, or a folder on the way that may not be entered (``exists`` says False for all)."""
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ENOENT:
            if os.path.islink(path):
                try:
                    return f"a symbolic link to a missing file ({os.readlink(path)})"
                except OSError:
                    pass
            return "no such file or directory"
        return f"cannot read: {e.strerror or e}"
    except ValueError:  # a NUL in the name
        return "no such file or directory"
    return "no such file or directory"  # (there now: it was not when looked for)


def _sessions_under(top: str) -> tuple[list[tuple[str, bool, str | None]], list[tuple[str, str]]]:
    """The session files under the directory ``top``, in os.walk's order (each directory's files by name, then its
    directories by name; symlinked directories not entered): ``(path, regular, real path)``; and the folders that
    could not be listed, each with why: ``(folder, problem)``. What the directory
    listing tells is not asked again of the file system: a file that is no symlink has its directory's real path
    (one realpath a tree, where one per file was ~40 ms of a 2,000-file folder), a regular one its type from the
    listing; only a symlink is stat'ed and resolved."""
    out: list[tuple[str, bool, str | None]] = []
    unlisted: list[tuple[str, str]] = []

    def visit(d: str, real: str) -> None:
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError as e:  # (os.walk leaves out what it cannot list: a check in CI would pass without it)
            unlisted.append((d, f"cannot list this folder: {e.strerror or e}"))
            return
        files, subdirs = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                try:
                    if not e.is_symlink():
                        subdirs.append(e.name)
                except OSError:
                    pass
            elif e.name.endswith(".jsonl") and not is_artifact(e.name):
                files.append(e)
        files.sort(key=lambda e: e.name)
        for e in files:
            try:
                link = e.is_symlink()
                is_regular = e.is_file()
            except OSError:
                link, is_regular = True, False
            if link:
                is_regular = regular(e.path)
            out.append((e.path, is_regular, None if link else os.path.join(real, e.name)))
        for name in sorted(subdirs):
            visit(os.path.join(d, name), os.path.join(real, name))

    visit(top, os.path.realpath(top))
    return out, unlisted


def shard_name(path: str, targets: list[str]) -> str:
    """The name that decides ``path``'s shard: its path under the first directory target that holds it
    (``sub/x.jsonl`` for ``sessions/sub/x.jsonl`` given ``sessions/``), else the path as given,
    normalized; ``/``-separated."""
    for t in targets:
        prefix = os.path.join(t, "")
        if os.path.isdir(t) and path.startswith(prefix):
            return path[len(prefix):].replace(os.sep, "/")
    return os.path.normpath(path).replace(os.sep, "/")


def shard_of(name: str, n: int) -> int:
    """1..n: the first 8 bytes of the SHA-256 of ``name`` (UTF-8), big-endian, mod n, plus 1."""
    import hashlib  # (here: its OpenSSL library costs 2.6 ms at every command's start, and only --shard reads it)

    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def shard(files: list[str], spec: str | None, targets: list[str] | None = None) -> list[str]:
    """``I/N``: the files whose ``shard_name`` (under ``targets``) hashes to slice I of N (``shard_of``).
    A file's slice depends on its own name only: a file added or removed moves no other file."""
    if not spec:
        return files
    i, n = (int(x) for x in spec.split("/", 1))
    return [f for f in files if shard_of(shard_name(f, targets or []), n) == i]
