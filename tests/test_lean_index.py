"""A lean index (``transcript.scan(lean=True)``, what ``estimate`` and ``validate`` read): a Claude Code file's progress
lines get no entry, their offsets, uuids and parents are kept apart (``model.Progress``), and the chain reads them
among the entries in file order as it reads progress entries (``claude_chain.chain``). What every command reports is
the same as from the full index: every fixture, a generated session with progress lines scanned in one process and
split between helpers (forked and started), the judged progress shapes, and the C part's chain against the Python's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ctxtool.transcript as transcript
from ctxtool import estimate as est
from ctxtool import forked, synth
from ctxtool import validate as val
from ctxtool.claude_chain import chain, sent_entries
from ctxtool.errors import CtxError
from ctxtool.model import entry_to_tuple, lean_progress
from ctxtool.repair import repair_file
from ctxtool.scanloop import native
from ctxtool.transcript import scan
from tests.test_claude_progress_lines import SHAPES, _write

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(str(p) for p in (ROOT / "fixtures").glob("**/*.jsonl"))
native_only = pytest.mark.skipif(native() is None, reason="ctxtool._scan is not built here")


def _reports(path: str) -> list:
    out = []
    for run in (lambda: est.estimate_file(path, est.Options(tokenizer="usage")), lambda: est.estimate_file(path),
                lambda: val.validate_file(path)):
        try:
            out.append(json.dumps(run(), sort_keys=True, default=str))
        except CtxError as err:
            out.append(f"error: {err}")
    return out


def _full(monkeypatch) -> None:
    """estimate and validate given the full index"""
    real = transcript.scan

    def full(*args, **kw):
        kw["lean"] = False
        return real(*args, **kw)

    monkeypatch.setattr(est, "scan", full)
    monkeypatch.setattr(val, "scan", full)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.relpath(p, ROOT / "fixtures"))
def test_estimate_and_validate_report_the_same_from_a_lean_index(path, monkeypatch):
    lean = _reports(path)
    _full(monkeypatch)
    assert lean == _reports(path)


def _session(tmp_path, seed: int = 5, turns: int = 200) -> str:
    path = str(tmp_path / "claude.jsonl")
    synth.write_session(path, "claude", seed=seed, turns=turns, corruptions=["duplicate_result", "torn_tail"])
    return path


def _apart(t) -> list:
    p = t.progress
    return [] if p is None else [(o, u, q) for o, u, q in p.items()]


@native_only
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "started"])
def test_a_lean_index_is_the_full_one_less_its_progress_lines(tmp_path, monkeypatch, workers, fork):
    monkeypatch.setenv(forked.ENV, fork)
    path = _session(tmp_path)
    full = scan(path, workers=1)
    lean = scan(path, lean=True, workers=workers, split_min_bytes=0)
    progress = [e for e in full.entries if e.type == "progress"]
    assert progress and len(lean.progress) == len(progress)
    assert lean_progress(lean.entries) is lean.progress and lean_progress(list(lean.entries)) is None
    assert _apart(lean) == [(e.offset, e.id, e.parent) for e in progress]
    kept = [e for e in full.entries if e.type != "progress"]
    # the same entries, numbered in their own list
    assert [entry_to_tuple(e)[1:] for e in lean.entries] == [entry_to_tuple(e)[1:] for e in kept]
    assert [e.index for e in lean.entries] == list(range(len(lean.entries)))
    assert [e.index for e in sent_entries(lean.entries)] and \
        [e.lineno for e in sent_entries(lean.entries)] == [e.lineno for e in sent_entries(full.entries)]
    assert (lean.lines, lean.size, len(lean.bad)) == (full.lines, full.size, len(full.bad))


@native_only
@pytest.mark.parametrize("name", list(SHAPES))
def test_the_judged_progress_shapes_read_alike_from_a_lean_index(tmp_path, monkeypatch, name):
    path = tmp_path / "s.jsonl"
    _write(path, SHAPES[name][0])
    full = scan(str(path))
    lean = scan(str(path), lean=True)
    want = [e.lineno for e in chain(full.entries)]
    assert [e.lineno for e in chain(lean.entries)] == want
    monkeypatch.setattr("ctxtool.claude_chain.index_passes", lambda: None)  # the Python's loop
    assert [e.lineno for e in chain(lean.entries)] == want
    lean_reports = _reports(str(path))
    _full(monkeypatch)
    assert lean_reports == _reports(str(path))


def test_repair_reads_the_full_index_and_writes_every_progress_line(tmp_path):
    path = _session(tmp_path)
    out = tmp_path / "out.jsonl"
    report = repair_file(path, output=str(out))
    assert report.written and report.changes
    progress = [x for x in Path(path).read_bytes().splitlines(keepends=True) if b'"type":"progress"' in x]
    written = out.read_bytes().splitlines(keepends=True)
    assert progress and all(x in written for x in progress)
