"""Scan a large transcript with helper processes, one part of the file each.

Parsing is most of a scan and orjson holds the GIL, so threads do not help; processes do.
The file is cut at line boundaries into parts. The later parts go to helper processes
(``part_run``, forked where that is safe, ``forked.py``; else ``python -c`` running ``part_main``),
which send their part of the index back as marshal frames while they scan, into an
unnamed temporary file (the spool) with each frame's place told on a pipe, so that a helper
never waits for this process to read; this process scans the first part meanwhile, then appends
the others' frames as they come, with index and line numbers moved. The result
is the same index a serial scan builds (``tests/test_parallel_scan.py`` checks that). If a
helper cannot start or fails, its part is scanned here instead.
"""

from __future__ import annotations

import marshal
import os
import struct
import sys

import orjson

from . import formats, forked
from .jsonl import BOM, Line, parse
from .model import EMPTY, META, PLAIN, Call, Entry, FullEntry, Kinds, Progress, Result, Usage, entry_from_tuple, entry_to_tuple, small_entry
from .scanloop import (ENV_LAZY, MODES, NOT_OBJECT, BadLine, Part, hander, meta_entry, native, native_entries, native_made,
                       released_entry, scan_lines)

MIN_BYTES = 64 << 20  # below this, starting helpers costs more than it saves
MAX_WORKERS = 4
ENV = "CTXTOOL_SCAN_WORKERS"
PARENT_WEIGHT = 1.25  # measured: a helper's part costs ~25% more (start-up, marshal) than the same bytes here
# a streaming pass: this process also runs the consumer (profile) on every entry, the helpers' too
# (measured, 500 MB: 0.85 -> 0.80 s real-shape Claude Code, 0.96 s pi; 1.25 -> 0.89 s, 1.07 s)
STREAM_PARENT_WEIGHT = 0.85
# where the C part takes the metadata lines (a format that declares what it reads, ``scanloop.native``), a
# part costs this process less, and a helper still its start-up and the merge of what it sends (measured,
# 500 MB real-shape Claude Code, the scan: 0.585 s at 1.25, 0.53 at 1.6, 0.515 at 2.0, 0.535 at 2.5). Since the C part
# reads its message lines too, this process's part costs about what a helper's does but for the merge: measured again
# (2026-11-26, alternating, the machine loaded; median of 5-6): 0.73 / 0.83 s at 1.3, 0.90 at 1.6, 0.85 / 0.92 at 2.0
NATIVE_PARENT_WEIGHT = 1.3
# the same for a streaming pass (profile: 0.86 s at 0.85, 0.69 at 1.2, 0.68-0.76 at 1.6, 0.71-0.82 at 2.0)
NATIVE_STREAM_PARENT_WEIGHT = 1.2
# a streaming pass over a pi session, whose lines the C part reads whole: the consumer's Python (profile's, for every
# entry, the helpers' too) is most of what this process does, so it scans less (measured 2026-11-27, 500 MB, five
# alternating runs each: 0.76-0.83 s at 0.5, 0.79-0.87 at 0.6, 0.84-1.11 at 0.85, 0.90-1.14 at 1.1; Codex rollouts
# gained nothing: 1.68-1.92 s at 0.5, 1.69-1.76 at 0.85. Once the profiler's per-entry Python was trimmed: 0.73-0.80 s
# at 0.5, 0.72-0.76 at 0.6, 0.72-0.76 at 0.7. Once the C part took its messages (``_scan.Profile``), 2026-11-27, the
# CLI, six alternating runs, medians: 0.67 s at 0.6, 0.66 at 0.8, 0.70 at 1.0; after the freeze: 0.66 at 0.6, 0.61 at 0.8)
PI_STREAM_PARENT_WEIGHT = 0.8


def worker_count(workers: int | None = None) -> int:
    """Processes to use (including this one): ``workers``, else $CTXTOOL_SCAN_WORKERS, else the CPUs we may run on."""
    if workers is None:
        env = os.environ.get(ENV, "").strip()
        if env:
            try:
                workers = int(env)
            except ValueError:
                workers = 1
        else:
            try:
                workers = len(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                workers = os.cpu_count() or 1
            workers = min(workers, MAX_WORKERS)
    return max(1, workers)


def _splittable(path: str, workers: int | None, min_bytes: int) -> tuple[int, int] | None:
    """``(workers, size)`` when ``path`` is worth splitting (two workers or more, ``min_bytes`` or more)."""
    n = worker_count(workers)
    if n < 2:
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size < min_bytes or size == 0:
        return None
    return n, size


def plan(path: str, n: int, size: int, weight: float | None = None) -> list[int] | None:
    """Part boundaries ``[0, b1, ..., size]`` at line starts for ``n`` parts of a file of ``size`` bytes
    (``_splittable``), or None for a serial scan. ``weight``: this process's part against a helper's
    (default ``PARENT_WEIGHT``)."""
    bounds = [0]
    # this process gets a bigger part: helpers start later and pay for sending their index back
    weight = PARENT_WEIGHT if weight is None else weight
    total = weight + (n - 1)
    with open(path, "rb") as f:
        for k in range(1, n):
            f.seek(max(int(size * (weight + k - 1) / total) - 1, bounds[-1]))
            f.readline()  # to the start of the next line
            pos = f.tell()
            if pos > bounds[-1] and pos < size:
                bounds.append(pos)
    bounds.append(size)
    return bounds if len(bounds) > 2 else None


def split(path: str, workers: int | None, min_bytes: int, module, streaming: bool = False,
          lazy: bool = True) -> tuple | None:
    """``(module, bounds)`` for a split scan of ``path``: the format a serial scan would settle on and
    the part boundaries (``plan``), weighted for what this process's part costs with that format; None
    for a serial scan. The format is sniffed first, from lines that lie in the first part whatever its
    weight, so the file is planned once."""
    ok = _splittable(path, workers, min_bytes)
    if ok is None:
        return None
    n, size = ok
    least = min(PARENT_WEIGHT, STREAM_PARENT_WEIGHT, NATIVE_PARENT_WEIGHT, NATIVE_STREAM_PARENT_WEIGHT,
                PI_STREAM_PARENT_WEIGHT)
    module = sniff(path, int(size * least / (least + n - 1)), module)
    if module is None:
        return None
    if lazy and native_takes(module):  # this process's part is cheaper: a larger one
        weight = NATIVE_STREAM_PARENT_WEIGHT if streaming else NATIVE_PARENT_WEIGHT
    elif streaming and module.NAME == "pi" and native_entries(module) is not None:
        weight = PI_STREAM_PARENT_WEIGHT
    else:
        weight = STREAM_PARENT_WEIGHT if streaming else PARENT_WEIGHT
    bounds = plan(path, n, size, weight)
    return None if bounds is None else (module, bounds)


def native_takes(module) -> bool:
    """Whether the C part will take this format's metadata lines (it is built, and the format declares what
    it reads, with selective decoding on)."""
    return (getattr(module, "READS", None) is not None and os.environ.get(ENV_LAZY, "1") in MODES
            and native() is not None)


def sniff(path: str, end: int, module):
    """The format module a serial scan would settle on, from the first lines before ``end``;
    None when the first part is too short to tell (the caller then scans serially).
    A forced ``module`` is checked on the same lines as the serial scan checks it; a first part
    with no parseable line gives None too: the serial scan then refuses the file ("empty session
    file", "no parseable JSON lines"), which the parts, each without the others' lines, cannot tell."""
    objs = []
    offset = 0
    with open(path, "rb") as f:
        for no, chunk in enumerate(f, 1):
            if offset >= end:
                break
            offset += len(chunk)
            if no == 1 and chunk.startswith(BOM):
                chunk = chunk[3:]
            try:
                obj = orjson.loads(chunk)
            except orjson.JSONDecodeError:
                eol = b"\r\n" if chunk.endswith(b"\r\n") else (b"\n" if chunk.endswith(b"\n") else b"")
                obj, reason = parse(Line(no, 0, chunk, eol))
                if reason is not None:
                    continue
            objs.append(obj)
            if len(objs) >= formats.SNIFF_LINES:
                return formats.detect(objs, path=path, forced=module)
    return None


def scan_part(path: str, fmt_name: str, begin: int, end: int, stats: bool = True, lazy: bool = True,
              on_frame=None, lean: bool = False) -> tuple:
    """Index ``[begin, end)`` of ``path``: (entry tuples, bad-line tuples, lines, lf, crlf, last eol, progress lines).
    ``on_frame(tuples)``, when given, is handed the entry tuples FRAME at a time as the scan goes
    (the list returned then holds only the last, unsent ones). ``lean``: a lean index's part, whose progress lines
    the C part makes no entry of (``transcript.scan``): their (offsets, uuids, parents), else None."""
    module = formats.get(fmt_name)
    t = Part(path, module)
    if lean:
        t.progress = Progress()
    out: list[tuple] = []
    shared: dict = {}
    sent = 0  # entries handed to on_frame so far: an entry's index in the part is sent + len(out)

    def flush() -> None:
        nonlocal out, sent
        if on_frame is not None and len(out) >= FRAME:
            while len(out) >= FRAME:  # (the C part hands over up to TAKEN_AT_MOST entries at once)
                frame = out if len(out) == FRAME else out[:FRAME]
                out = [] if frame is out else out[FRAME:]
                on_frame(frame)
                sent += FRAME

    made = native_entries(module)  # the C part's entries of the lines it is sure of (Codex, pi)

    def emit(where, obj):
        no, offset, length, eol = where
        if not isinstance(obj, dict):
            t.bad.append(BadLine(no, offset, length, NOT_OBJECT))
            return
        # (marshal keeps shared strings shared: smaller data, nothing to redo here)
        e = released_entry(module, made, obj, sent + len(out), no, offset, length, eol, stats, shared)
        out.append(entry_to_tuple(e))
        flush()

    def meta(no, offset, length, eol, ty, u, p, ts):  # short: an entry with nothing but these
        e = meta_entry(sent + len(out), no, offset, length, eol, ty, u, p, ts, shared)
        out.append((e.lineno, e.offset, e.length, e.eol, e.type, e.id, e.parent, e.ts))
        flush()

    def taken(tuples: list) -> None:  # the C part's metadata lines, as meta makes them
        out.extend(tuples)
        flush()

    scan_lines(t, path, [], module, emit, begin, end, meta if lazy else None, shared=shared,
               taken=taken if lazy else None, tuples=True, stats=stats)
    bad = [(b.lineno, b.offset, b.length, b.reason, b.blank) for b in t.bad]
    apart = (bytes(t.progress.offsets), t.progress.ids, t.progress.parents) if t.progress else None
    return out, bad, t.lines, t.lf, t.crlf, t.last_eol, apart


FRAME = 10_000  # entries per frame: the parent holds one frame's tuples at a time, not the whole part
_LEN = struct.Struct("<Q")
# What a helper writes to its stdout, each a marshal tuple behind its length: ("s", offset, size), a
# frame of entry tuples written to the spool file at offset; ("e", tuples), a frame sent inline (no
# spool); then ("t", bad lines, lines, lf, crlf, last eol), the part's tail, last.


def part_main() -> None:
    """Helper process started as ``python -c``: ``part_run`` with its arguments from argv, answering on stdout."""
    path, fmt_name, begin, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    stats, lazy = sys.argv[5] == "1", sys.argv[6] == "1"
    spool_fd = int(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] != "-" else None
    lean = len(sys.argv) > 8 and sys.argv[8] == "1"
    part_run(path, fmt_name, begin, end, stats, lazy, spool_fd, sys.stdout.buffer, lean)


def part_run(path: str, fmt_name: str, begin: int, end: int, stats: bool, lazy: bool, spool_fd: int | None,
             out, lean: bool = False) -> None:
    """A helper's work: scan one part. Its entry tuples go out FRAME at a time as the scan goes, into
    the spool file the parent opened (``spool_fd``) with their place told on ``out``,
    so the helper never waits for the parent to read; without a spool (None), inline on ``out``."""
    import gc

    gc.disable()
    spool = open(spool_fd, "wb", closefd=False) if spool_fd is not None else None
    pos = 0

    def send(message: tuple) -> None:
        data = marshal.dumps(message)
        out.write(_LEN.pack(len(data)) + data)
        out.flush()

    def on_frame(tuples: list) -> None:
        nonlocal pos
        if spool is None:
            send(("e", tuples))
            return
        data = marshal.dumps(tuples)
        spool.write(data)
        spool.flush()  # in the file (the page cache) before the parent is told where
        send(("s", pos, len(data)))
        pos += len(data)

    rest, *tail = scan_part(path, fmt_name, begin, end, stats, lazy, on_frame, lean)
    if rest:
        on_frame(rest)
    send(("t", *tail))


def _frames(proc, spool, tail: list):
    """An iterator over the helper's entry frames, as it sends them; ``tail`` gets the part's (bad
    lines, lines, lf, crlf, last eol, progress lines) at the end. Raises ValueError (or OSError, EOFError,
    TypeError) when the helper failed."""
    read = proc.stdout.read

    def message():
        head = read(_LEN.size)
        if len(head) != _LEN.size:
            raise ValueError("helper ended early")
        (size,) = _LEN.unpack(head)
        data = read(size)
        if len(data) != size:
            raise ValueError("helper ended early")
        return marshal.loads(data)

    while True:
        m = message()
        kind = m[0]
        if kind == "s":
            _, offset, size = m
            data = os.pread(spool.fileno(), size, offset)
            if len(data) != size:
                raise ValueError("spool cut short")
            yield marshal.loads(data)
        elif kind == "e":
            yield m[1]
        elif kind == "t":
            tail.extend(m[1:])
            break
        else:
            raise ValueError("unknown message")
    proc.stdout.close()
    if proc.wait() != 0:
        raise ValueError("helper failed")


def _spool():
    """An unnamed temporary file a helper writes its frames into, or None (then they come inline)."""
    try:
        import tempfile  # (here: only a split scan needs it; ~6 ms of imports)

        return tempfile.TemporaryFile(prefix="ctxtool-scan-")
    except OSError:
        return None


def _start(path: str, fmt_name: str, begin: int, end: int, stats: bool, lazy: bool, spool=None, lean: bool = False):
    """A helper scanning one part: forked where that is safe (``forked``), else started as ``python -c``."""
    spool_fd = spool.fileno() if spool is not None else None

    def run(_read_fd: int, write_fd: int) -> None:
        with open(write_fd, "wb") as out:
            part_run(path, fmt_name, begin, end, stats, lazy, spool_fd, out, lean)

    proc = forked.child(run, keep=() if spool_fd is None else (spool_fd,), env={ENV: "1"})
    if proc is not None:
        return proc
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # ``python -c`` puts the current directory first on sys.path: a ``ctxtool`` there (another
    # checkout or version) would scan the part instead of this one. The helper imports this copy.
    code = f"import sys; sys.path.insert(0, {root!r}); from ctxtool.parallel import part_main; part_main()"
    fds = (spool.fileno(),) if spool is not None else ()
    import subprocess  # (the rare way: not imported at every command's start)

    try:
        return subprocess.Popen([sys.executable, "-c", code, path, fmt_name, str(begin), str(end), "1" if stats else "0",
                                 "1" if lazy else "0", str(fds[0]) if fds else "-", "1" if lean else "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                pass_fds=fds)
    except (OSError, TypeError, ValueError):  # TypeError: sys.executable is None in some embedded interpreters
        return None


def _builder():
    """The C part's maker of a part's entries from its tuples (``_scan.Builder``: what ``_built`` does, ~6x
    faster), or None (not built, or turned off)."""
    return native_made("builder", lambda c: c.Builder(FullEntry, Entry, META, PLAIN, small_entry, Call, Result, Kinds,
                                                       Usage, EMPTY))


def _merge(entries: list, frames, shift: int, line_shift: int, sizes: dict | None = None) -> None:
    """Append a part's entries, index and line numbers moved; each tuple freed once its entry is built."""
    b = _builder()
    if b is None:
        entries.extend(_built(frames, shift, line_shift, sizes))
        return
    i, sizes = shift, ({} if sizes is None else sizes)
    for part in frames:
        i = b.build(part, entries, i, line_shift, sizes)


def _built_parts(frames, shift: int, line_shift: int, sizes: dict | None = None):
    """A part's entries, a list per frame, in order, index and line numbers moved; each tuple freed once its entry is
    built. ``sizes``: the table of metadata lines' lengths (one int object per value, as the scan keeps them)."""
    b = _builder()
    i, sizes = shift, ({} if sizes is None else sizes)
    same_size = sizes.setdefault
    for part in frames:
        out: list = []
        if b is not None:
            i = b.build(part, out, i, line_shift, sizes)
            yield out
            continue
        for j, tup in enumerate(part):
            if len(tup) == 8:  # an entry of type, id, parent and time (scan_part's meta)
                no, off, length, eol, ty, u, p, ts = tup
                e = small_entry(i, no + line_shift, off, same_size(length, length), eol, META, ty, u, p, ts)
            else:
                e = entry_from_tuple(tup, shift, line_shift)
                e.index = i  # the same value, as the int object shared with the previous line number
            part[j] = None
            out.append(e)
            no = e.lineno
            i = no if no == i + 1 else i + 1  # one int object for this line number and the next index
        yield out


def _built(frames, shift: int, line_shift: int, sizes: dict | None = None):
    """``_built_parts``'s entries, one after another."""
    for out in _built_parts(frames, shift, line_shift, sizes):
        yield from out


def scan(t, path: str, module, bounds: list[int], shared: dict, stats: bool = True, lazy: bool = True,
         on_entry=None, on_format=None, plain: bool = True) -> None:
    """Fill ``t`` (a ``Transcript``) of format ``module`` from the parts in ``bounds`` (both from
    ``split``; a helper that fails has its part scanned here).

    ``on_entry``: a streaming pass instead (``t.entries`` stays empty): each entry, in file order,
    is handed to ``on_entry`` (without its object or blocks) and let go; the helpers' entries as
    their frames arrive. ``on_format(module)`` is told the format first. ``plain=False``: a metadata entry with
    nothing set may be left out (``transcript.scan``'s ``plain``)."""
    name = module.NAME
    lean = t.progress is not None  # (a lean index: each part's progress lines apart, transcript.scan)
    spools = [_spool() for _ in range(1, len(bounds) - 1)]
    procs = [_start(path, name, bounds[k], bounds[k + 1], stats, lazy, spools[k - 1], lean)
             for k in range(1, len(bounds) - 1)]
    try:
        t.fmt = module
        if on_format is not None:
            on_format(module)
        entries = t.entries
        keep = on_entry is None
        count = 0  # entries handed to on_entry so far (streaming)
        made = native_entries(module)  # the C part's entries of the lines it is sure of (Codex, pi), released

        def emit(where, obj):
            nonlocal count
            no, offset, length, eol = where
            if not isinstance(obj, dict):
                t.bad.append(BadLine(no, offset, length, NOT_OBJECT))
                return
            if keep:
                entries.append(released_entry(module, made, obj, len(entries), no, offset, length, eol, stats, shared))
            else:  # a streaming pass reads no object nor block, and keeps no string table
                on_entry(released_entry(module, made, obj, count, no, offset, length, eol, stats, None))
                count += 1

        hand = hander()

        def meta(no, offset, length, eol, ty, u, p, ts) -> None:  # streaming: an entry of type, id, parent, time
            nonlocal count
            count += hand([meta_entry(count, no, offset, length, eol, ty, u, p, ts, None)], None, on_entry, plain)

        def taken(es) -> None:  # streaming: the entries the C part made, in file order
            nonlocal count
            count += hand(es, count, on_entry, plain)

        sizes: dict = {}
        scan_lines(t, path, [], module, emit, 0, bounds[1], meta=meta if lazy and not keep else None,
                   into=entries if lazy and keep else None, shared=shared, sizes=sizes,
                   taken=taken if lazy and not keep else None, stats=stats)
        lines, lf, crlf, last_eol = t.lines, t.lf, t.crlf, t.last_eol
        shared.clear()  # the helpers' entries share strings among themselves only: free the table first
        for k, proc in enumerate(procs, 1):
            shift = len(entries) if keep else count
            try:
                if proc is None:
                    raise ValueError("no helper")
                tail: list = []
                frames = _frames(proc, spools[k - 1], tail)
                if keep:
                    _merge(entries, frames, shift, lines, sizes)
                else:
                    for es in _built_parts(frames, shift, lines):
                        count += hand(es, None, on_entry, plain)
                bad, n, plf, pcrlf, peol, apart = tail
            except (OSError, ValueError, EOFError, TypeError):  # the helper failed: its part is scanned here
                part, bad, n, plf, pcrlf, peol, apart = scan_part(path, name, bounds[k], bounds[k + 1], stats, lazy,
                                                                  lean=lean)
                if keep:
                    del entries[shift:]
                    _merge(entries, [part], shift, lines, sizes)
                else:  # the entries it sent were handed on already: the rest of them
                    sent = count
                    count += hand([e for e in _built([part], shift, lines) if e.index >= sent], None, on_entry, plain)
                del part
            if apart is not None:
                t.progress.extend(*apart)
            t.bad.extend(BadLine(no + lines, off, length, reason, blank) for no, off, length, reason, blank in bad)
            lines += n
            lf += plf
            crlf += pcrlf
            if n:
                last_eol = peol
        t.lines, t.lf, t.crlf, t.last_eol, t.size = lines, lf, crlf, last_eol, bounds[-1]
        t.parts = len(bounds) - 1
    finally:
        for proc in procs:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for spool in spools:
            if spool is not None:
                spool.close()
