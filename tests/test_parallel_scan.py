"""The parallel scan (helper processes, one part of the file each) builds exactly the index a
serial scan builds, whatever the file holds; a helper that cannot start or fails is replaced
by scanning its part here. Also: the structure-only scan (stats=False) agrees with the full one."""

import os
import sys

import pytest

from ctxtool import forked, parallel, synth
from ctxtool.model import entry_to_tuple
from ctxtool.repair import plan_repair, repair_file
from ctxtool.transcript import scan
from ctxtool.validate import validate_file
from ctxtool.view import provider_view

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    ("pi", []),
    ("pi", ["torn_tail", "crlf", "bom", "blank_lines", "missing_result", "duplicate_id"]),
    ("pi", ["nul_bytes", "invalid_utf8", "bad_control_char", "dangling_parent", "parent_cycle", "orphan_result"]),
    ("pi-v1", ["torn_tail", "separated_result", "blank_user_turn"]),
    ("claude", ["crlf", "duplicate_result", "torn_tail", "bad_tool_name"]),
    ("messages", ["bom", "no_id_call", "missing_result", "blank_lines"]),
]


def index_of(t):
    """Everything a scan produces, as comparable plain values."""
    return {
        "entries": [entry_to_tuple(e) for e in t.entries],
        "bad": [(b.lineno, b.offset, b.length, b.reason, b.blank) for b in t.bad],
        "counts": (t.lines, t.lf, t.crlf, t.last_eol, t.size, t.bom, t.fmt.NAME),
    }


def _session(tmp_path, fmt, kinds, seed=3, turns=160):
    path = str(tmp_path / f"{fmt}.jsonl")
    synth.write_session(path, fmt, seed=seed, turns=turns, corruptions=kinds)
    return path


@pytest.mark.parametrize("fmt,kinds", CASES, ids=lambda v: v if isinstance(v, str) else "+".join(v) or "clean")
@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "started"])
def test_parallel_index_equals_serial(tmp_path, monkeypatch, fmt, kinds, workers, fork):
    monkeypatch.setenv(forked.ENV, fork)  # helpers forked (where possible) or started as python -c
    path = _session(tmp_path, fmt, kinds)
    serial = scan(path, workers=1)
    par = scan(path, workers=workers, split_min_bytes=0)
    assert serial.parts == 1
    assert par.parts == workers  # the parallel path really ran
    assert index_of(par) == index_of(serial)


def test_parallel_structure_only_scan_equals_serial(tmp_path):
    path = _session(tmp_path, "pi", ["torn_tail", "missing_result", "duplicate_id"])
    assert index_of(scan(path, workers=2, split_min_bytes=0, stats=False)) == index_of(scan(path, workers=1, stats=False))


def test_repair_plan_is_the_same_from_a_parallel_scan(tmp_path):
    path = _session(tmp_path, "pi", ["torn_tail", "missing_result", "orphan_result", "separated_result", "duplicate_id"])
    a = plan_repair(scan(path, workers=1, stats=False))
    b = plan_repair(scan(path, workers=2, split_min_bytes=0, stats=False))
    assert [c.to_dict() for c in a.changes] == [c.to_dict() for c in b.changes]
    assert b"".join(a.chunks()) == b"".join(b.chunks())


@pytest.mark.parametrize("python", ["/nonexistent/python3", "/bin/false"])
def test_a_helper_that_cannot_start_or_fails_is_replaced(tmp_path, monkeypatch, python):
    path = _session(tmp_path, "claude", ["torn_tail", "crlf"])
    expected = index_of(scan(path, workers=1))
    monkeypatch.setenv(forked.ENV, "0")  # started as python -c
    monkeypatch.setattr(sys, "executable", python)
    t = scan(path, workers=2, split_min_bytes=0)
    assert t.parts == 2
    assert index_of(t) == expected


def test_a_forked_helper_that_fails_is_replaced(tmp_path, monkeypatch, forkable):
    path = _session(tmp_path, "claude", ["torn_tail", "crlf"])
    expected = index_of(scan(path, workers=1))

    def fails(*a):
        raise RuntimeError("the helper's bug")

    monkeypatch.setattr(parallel, "part_run", fails)  # (the child is a copy of this process: it fails there)
    t = scan(path, workers=2, split_min_bytes=0)
    assert t.parts == 2
    assert index_of(t) == expected


def test_small_files_and_one_worker_stay_serial(tmp_path, monkeypatch):
    path = _session(tmp_path, "pi", [])
    assert scan(path).parts == 1  # below MIN_BYTES
    monkeypatch.setenv(parallel.ENV, "1")
    assert parallel.worker_count() == 1
    assert scan(path, split_min_bytes=0).parts == 1
    monkeypatch.setenv(parallel.ENV, "3")
    assert parallel.worker_count() == 3


def test_first_part_too_short_to_detect_the_format_falls_back(tmp_path):
    # fewer than 50 parseable lines before the first boundary: a serial scan decides the format
    path = _session(tmp_path, "messages", [], turns=4)
    t = scan(path, workers=2, split_min_bytes=0)
    assert t.parts == 1 and t.entries


def test_helper_output_round_trips_odd_values(tmp_path):
    # values orjson refuses (1e400, a lone surrogate) come from the strict fallback parser
    path = tmp_path / "odd.jsonl"
    lines = [b'{"role":"user","content":"hi %d"}\n' % i for i in range(120)]
    lines[90] = b'{"role":"assistant","content":"x\\ud800y","n":1e400}\n'
    lines[95] = b'{"role":"user","content":[{"type":"text","text":"caf\\u00e9 \\ud83d\\ude00"}]}\n'
    path.write_bytes(b"".join(lines))
    assert index_of(scan(str(path), workers=2, split_min_bytes=0)) == index_of(scan(str(path), workers=1))


def _fixtures():
    for root, _, files in os.walk(os.path.join(ROOT, "fixtures")):
        for f in sorted(files):
            if f.endswith(".jsonl") and ".expected" not in f:
                yield os.path.join(root, f)


STRUCTURE = slice(0, 14)  # index ... model: everything but the counts


def _agree(ta: tuple, tb: tuple, where) -> None:
    """A full and a structure-only entry (as tuples) agree on everything but the counts; the
    items a Codex ``compacted`` line holds (``extra["replacement"]``) are entries of their own."""
    assert ta[STRUCTURE] == tb[STRUCTURE], where
    assert [c[:4] for c in ta[14] or ()] == [c[:4] for c in tb[14] or ()]
    assert [r[:4] for r in ta[15] or ()] == [r[:4] for r in tb[15] or ()]
    assert ta[16:20] == tb[16:20]  # nblocks, empty, blank_text, signed_thinking
    assert tb[23] is None  # no usage
    if ta[9] in ("user", "assistant", "toolResult"):
        assert tb[20] == 0  # no character counts of message content
    xa, xb = dict(ta[24] or {}), dict(tb[24] or {})
    subs_a, subs_b = xa.pop("replacement", ()), xb.pop("replacement", ())
    assert xa == xb and len(subs_a) == len(subs_b), where
    for sa, sb in zip(subs_a, subs_b):
        _agree(sa, sb, where)


def test_structure_only_scan_agrees_with_the_full_scan():
    checked = 0
    for path in _fixtures():
        try:
            full, lean = scan(path), scan(path, stats=False)
        except Exception:
            continue  # fixtures of bad input (errors are tested elsewhere)
        for a, b in zip(full.entries, lean.entries):
            _agree(entry_to_tuple(a), entry_to_tuple(b), (path, a.lineno))
        assert len(full.entries) == len(lean.entries)
        checked += 1
    assert checked > 40


def test_validate_file_counts_the_messages_of_the_view():
    path = os.path.join(ROOT, "fixtures", "repair", "pi-missing-result.jsonl")
    t = scan(path)
    r = validate_file(path)
    assert r["messages"] == len(provider_view("pi", t.entries))
    assert r["format"] == "pi" and any(v["kind"] == "missing-tool-result" for v in r["violations"])


def test_violations_before_only_when_asked():
    path = os.path.join(ROOT, "fixtures", "repair", "pi-missing-result.jsonl")
    assert repair_file(path, check=True, violations_before=False).before is None
    assert repair_file(path, check=True, violations_before=False).to_dict()["violations_before"] is None
    assert any(v.kind == "missing-tool-result" for v in repair_file(path, check=True).before)


@pytest.mark.parametrize("workers", [2, 3])
def test_real_shape_claude_code_parallel_index_equals_serial(tmp_path, workers, monkeypatch):
    """Real-shape data (recorded Claude Code lines, progress lines at the measured shares), small:
    the parallel scan, with or without selective decoding, gives the serial whole-line index."""
    from ctxtool import scanloop
    from tests.bench import realshape

    path = str(tmp_path / "realshape.jsonl")
    realshape.write_file(path, 600_000, seed=workers)
    monkeypatch.setenv(scanloop.ENV_LAZY, "0")
    serial = index_of(scan(path, workers=1))
    monkeypatch.setenv(scanloop.ENV_LAZY, "1")
    par = scan(path, workers=workers, split_min_bytes=0)
    assert par.parts == workers
    assert index_of(par) == serial
    assert index_of(scan(path, workers=workers, split_min_bytes=0, stats=False)) == index_of(scan(path, workers=1, stats=False))


def _many_lines(tmp_path, fmt="codex", lines=3 * parallel.FRAME):
    """A session whose helper part holds several frames of entries (short lines: many per MB)."""
    path = str(tmp_path / f"{fmt}-many.jsonl")
    out = []
    lines_of = synth.codex_rollout(seed=5, turns=100000) if fmt == "codex" else synth.generate(fmt, seed=5, turns=100000)
    for line in lines_of:
        out.append(line)
        if len(out) >= lines:
            break
    with open(path, "wb") as f:
        f.write(b"".join(out))
    return path


@pytest.mark.parametrize("fmt", ["codex", "claude"])
def test_helper_frames_sent_while_it_scans_give_the_serial_index(tmp_path, fmt):
    """A helper writes its entries FRAME at a time into the spool as it scans; the parent merges
    them as they come: several frames per part, in order, index as a serial scan's."""
    path = _many_lines(tmp_path, fmt)
    serial = scan(path, workers=1)
    assert len(serial.entries) > 2 * parallel.FRAME
    seen = []
    real = parallel._frames

    def counted(*a):
        for frame in real(*a):
            seen.append(len(frame))
            yield frame

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parallel, "_frames", counted)
        par = scan(path, workers=2, split_min_bytes=0)
    assert par.parts == 2
    assert len(seen) >= 2 and all(n <= parallel.FRAME for n in seen)
    assert index_of(par) == index_of(serial)


def test_without_a_spool_file_frames_come_inline(tmp_path, monkeypatch):
    """No temporary file to be had (a read-only or full temp dir): the helper sends its frames
    on the pipe itself, and the index is the same."""
    path = _many_lines(tmp_path, "codex")
    serial = scan(path, workers=1)
    monkeypatch.setattr(parallel, "_spool", lambda: None)
    par = scan(path, workers=2, split_min_bytes=0)
    assert par.parts == 2
    assert index_of(par) == index_of(serial)


def test_a_spool_cut_short_falls_back_to_scanning_here(tmp_path, monkeypatch):
    """A spool that does not hold what the helper said (the temp dir filled up): the part is
    scanned here instead, and the index is the same."""
    path = _many_lines(tmp_path, "codex")
    serial = scan(path, workers=1)
    real = parallel._spool

    def truncating():
        f = real()

        class Cut:
            def fileno(self):
                return f.fileno()

            def close(self):
                f.close()

        os.ftruncate(f.fileno(), 0)
        return Cut()

    monkeypatch.setattr(parallel, "_spool", truncating)
    real_frames = parallel._frames

    def cut(proc, spool, tail):
        for frame in real_frames(proc, spool, tail):
            os.ftruncate(spool.fileno(), 0)  # everything the helper wrote so far is gone
            yield frame

    monkeypatch.setattr(parallel, "_frames", cut)
    par = scan(path, workers=2, split_min_bytes=0)
    assert index_of(par) == index_of(serial)


# ---------------------------------------------------------------- a streaming pass split over helpers (profile)


def _streamed(path, workers, **kw):
    """(entries handed to on_entry as plain tuples, the Transcript, the format told)."""
    seen, told = [], []
    t = scan(path, workers=workers, split_min_bytes=0, on_entry=lambda e: seen.append(entry_to_tuple(e)),
             keep_index=False, blocks=False, lazy=True, on_format=lambda m: told.append(m.NAME), **kw)
    return seen, t, told


@pytest.mark.parametrize("fmt,kinds", CASES + [("codex", [])], ids=lambda v: v if isinstance(v, str) else "+".join(v) or "clean")
def test_a_streaming_pass_split_over_helpers_hands_on_the_serial_entries_in_order(tmp_path, fmt, kinds):
    path = _session(tmp_path, fmt, kinds) if fmt != "codex" else _many_lines(tmp_path, "codex", 4000)
    serial, st, stold = _streamed(path, 1)
    par, pt, ptold = _streamed(path, 2)
    assert st.parts == 1 and pt.parts == 2  # the split really ran
    assert par == serial and len(par) > 100
    assert pt.entries == [] and ptold == stold == [st.fmt.NAME]
    assert index_of(pt)["bad"] == index_of(st)["bad"] and index_of(pt)["counts"] == index_of(st)["counts"]


def test_a_streaming_pass_whose_helper_fails_midway_hands_on_each_entry_once(tmp_path, monkeypatch):
    path = _many_lines(tmp_path, "codex")
    serial, _, _ = _streamed(path, 1)
    real = parallel._frames

    def fails_after_one(*a):
        for n, frame in enumerate(real(*a)):
            if n == 1:
                raise ValueError("helper ended early")
            yield frame

    monkeypatch.setattr(parallel, "_frames", fails_after_one)
    par, t, _ = _streamed(path, 2)
    assert t.parts == 2
    assert par == serial


@pytest.mark.parametrize("fmt", ["pi", "claude", "codex"])
def test_profile_is_the_same_from_a_split_scan(tmp_path, monkeypatch, fmt):
    from ctxtool.profile import profile_session

    path = _session(tmp_path, fmt, ["torn_tail"] if fmt != "codex" else [], turns=400) if fmt != "codex" else \
        _many_lines(tmp_path, "codex", 6000)
    monkeypatch.setenv(parallel.ENV, "1")
    serial = profile_session(path)
    monkeypatch.setenv(parallel.ENV, "2")
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    calls = []
    real = parallel.scan
    monkeypatch.setattr(parallel, "scan", lambda t, *a, **k: calls.append(t) or real(t, *a, **k))
    assert profile_session(path) == serial
    assert len(calls) == 1 and calls[0].parts == 2  # the split scan ran


def test_a_last_line_completed_after_the_split_is_read_as_it_was_then(tmp_path):
    """The file ended in an unfinished line when it was split into parts, and an agent finished
    the line before the last helper read it: the part still ends where the file ended (the line
    is the torn tail the commit carries whole later), as a serial scan of the file then reads it.
    Was: read whole beyond the part's end, so a repair wrote it and carried it again."""
    path = _many_lines(tmp_path, "codex", 3000)
    data = open(path, "rb").read()
    cut = len(data) - 40  # the last line without its last 40 bytes
    with open(path, "wb") as f:
        f.write(data[:cut])
    serial = scan(path, workers=1)
    module, bounds = parallel.split(path, 2, 0, None)
    with open(path, "ab") as f:  # finished after the split, before the helper reads it
        f.write(data[cut:])
    from ctxtool.transcript import Transcript

    t = Transcript(path, None)
    parallel.scan(t, path, module, bounds, {})
    assert index_of(t) == index_of(serial)
    assert t.size == cut and t.bad and t.bad[-1].offset + t.bad[-1].length == cut


@pytest.mark.parametrize("workers", [1, 2])
def test_equal_line_lengths_share_one_int_object(tmp_path, workers):
    """The index holds one int object per distinct length of a metadata line (most lengths repeat:
    ~7 MB of a 500 MB real-shape file's index), in this process's part and in the helpers' alike."""
    from ctxtool.model import Entry
    from tests.bench import realshape

    path = str(tmp_path / "realshape.jsonl")
    realshape.write_file(path, 600_000, seed=1)
    for stats in (True, False):
        t = scan(path, workers=workers, split_min_bytes=0, stats=stats)
        assert t.parts == workers
        # (CPython caches the small ints anyway; message lines, read whole, keep their own)
        big = [e.length for e in t.entries if e.length > 256 and type(e) is Entry]
        assert len({id(n) for n in big}) == len(set(big)) < len(big)
