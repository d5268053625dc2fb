"""A streaming pass (``transcript.scan`` with ``keep_index=False`` and an ``on_entry`` that reads no object) hands
its consumer every entry in file order, numbered, serial or split among helpers, whichever part made it (the C part's
loop, ``_scan.Rows.hand``, or the Python's); with ``plain=False`` it may leave out the metadata entries with nothing
set, and hands the same others with the same numbers."""

from __future__ import annotations

import glob
import os

import pytest

from ctxtool import scanloop, synth
from ctxtool.model import META, PLAIN, Entry, FullEntry, entry_to_tuple
from ctxtool.transcript import scan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _handed(path, plain, workers, native=True, monkeypatch=None):
    got = []
    if not native:
        monkeypatch.setattr(scanloop, "hander", lambda: scanloop._hand)
    scan(path, None, on_entry=got.append, keep_index=False, blocks=False, lazy=True, plain=plain, workers=workers,
         split_min_bytes=0 if workers > 1 else None)
    return [(entry_to_tuple(e), e._m is PLAIN and e.kind == META) for e in got]


def _sessions(tmp_path):
    out = []
    for fmt, seed in (("claude", 3), ("pi", 4), ("claude", 9)):
        p = str(tmp_path / f"{fmt}-{seed}.jsonl")
        synth.write_session(p, fmt, seed=seed, target_bytes=600_000)
        out.append(p)
    out += sorted(glob.glob(os.path.join(ROOT, "fixtures", "claude-recorded", "*.jsonl")))[:6]
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_plain_false_leaves_out_only_plain_metadata(tmp_path, workers):
    left_out = 0
    for p in _sessions(tmp_path):
        every = _handed(p, True, workers)
        some = _handed(p, False, workers)
        # what was left out: exactly the plain metadata entries; the others as before, numbered as before
        assert some == [(t, False) for t, plain in every if not plain], p
        assert [t[0] for t, _ in every] == list(range(len(every)))
        left_out += len(every) - len(some)
    assert left_out > 50  # (the Claude Code sessions have progress lines)


@pytest.mark.parametrize("plain", [True, False])
def test_the_c_part_hands_as_the_python_does(tmp_path, monkeypatch, plain):
    if scanloop.index_passes() is None:
        pytest.skip("ctxtool._scan is not built here")
    for p in _sessions(tmp_path)[:3]:
        for workers in (1, 2):
            with monkeypatch.context() as m:
                slow = _handed(p, plain, workers, native=False, monkeypatch=m)
            assert _handed(p, plain, workers) == slow


def test_hand_numbers_and_filters():
    hand = scanloop.index_passes().hand if scanloop.index_passes() is not None else None
    if hand is None:
        pytest.skip("ctxtool._scan is not built here")
    es = [Entry(0, 1, 0, 5, b"\n", META, "progress", "a"), FullEntry(0, 2, 5, 5, b"\n", "message", "user", role="user"),
          Entry(0, 3, 10, 5, b"\r\n", META, "progress", "b"), Entry(0, 4, 15, 5, b"\n", META, "x", extra={"k": 1})]
    for h in (hand, scanloop._hand):
        got = []
        assert h(es, 7, got.append, False) == 4
        assert [e.index for e in es] == [7, 8, 9, 10]
        assert got == es[1:]  # the first is plain; a CRLF line and one with flags are not
        got = []
        assert h(es, None, got.append, True) == 4
        assert got == es and [e.index for e in es] == [7, 8, 9, 10]
    with pytest.raises(TypeError):
        hand([object()], 0, print, True)
