"""Ctrl-C and SIGTERM during a rewrite: before the rename they stop it cleanly (the session untouched, no temporary
file, no lock), from the rename until the old file's watch ends they wait, so a line an agent wrote to the old file
in that moment reaches the session (before, it was left in the backup and only reported). SIGTERM stops as Ctrl-C
does, with exit 143 and "Terminated."."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from ctxtool import commit, interrupts
from tests.test_commit_protocol import LATE, NEW, ORIGINAL, _writes_late_then, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def sigterm_raises():
    was = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupts.terminate_as_interrupt()
    yield
    signal.signal(signal.SIGTERM, was)


def test_ctrl_c_waits_while_held_and_is_taken_when_let_go():
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            seen.append("still running")
    assert seen == ["still running"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sigterm_raises_terminated_after_the_hold(sigterm_raises):
    with pytest.raises(interrupts.Terminated) as e:
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGTERM)
    assert interrupts.interrupted_exit(e.value) == 143
    assert interrupts.interrupted_exit(KeyboardInterrupt()) == 130


def test_a_hold_inside_another_lets_go_only_with_the_outer_one():
    order = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            with interrupts.held():
                os.kill(os.getpid(), signal.SIGINT)
            order.append("after the inner hold")
    assert order == ["after the inner hold"]


def test_of_two_signals_held_sigterm_is_taken(sigterm_raises):
    with pytest.raises(interrupts.Terminated):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_signal_stays_ignored():
    was = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.held():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, was)


def test_held_does_nothing_outside_the_main_thread():
    out = []

    def run():
        with interrupts.held():
            out.append(signal.getsignal(signal.SIGINT))
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert out == [signal.default_int_handler]


def test_an_error_in_the_block_goes_on_when_no_signal_came():
    with pytest.raises(ValueError):
        with interrupts.held():
            raise ValueError("x")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_old_file_is_watched_waits_and_the_late_line_reaches_the_session(tmp_path, sig,
                                                                                            sigterm_raises):
    """The review's case (2026-11-30): a writer opened the file just before the rename and writes a line to the old
    file after it; the signal comes then. The commit ends whole: the line is in the session, then the signal is
    taken (before, the line was left in the backup, reported as only there)."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    hook = _writes_late_then(lambda: os.kill(os.getpid(), sig))
    commit.hooks.append(hook)
    try:
        with pytest.raises(KeyboardInterrupt) as e:
            commit.commit(snap, [NEW], backup=False)
    finally:
        commit.hooks.remove(hook)
    assert isinstance(e.value, interrupts.Terminated) == (sig == signal.SIGTERM)
    assert open(p, "rb").read() == NEW + LATE
    commit._listings.clear()
    assert commit.late_writes(p) == []
    assert [n for n in os.listdir(tmp_path) if ".ctxtool-" in n] == []


_CLI = """
import os, signal, sys
sys.path.insert(0, sys.argv[3])
from ctxtool import commit
from ctxtool.cli import main
from tests.test_commit_protocol import _writes_late_then
phase, sig = sys.argv[2], int(sys.argv[4])
if phase == "after-rename":
    commit.hooks.append(_writes_late_then(lambda: os.kill(os.getpid(), sig)))
else:
    commit.hooks.append(lambda name, _p: name == phase and os.kill(os.getpid(), sig))
sys.argv = ["ctxtool", "repair", sys.argv[1]]
main()
"""

# a pi session with a line repair removes (a torn one), so that repair rewrites it
TORN = b'{"type":"message","id":"torn","mess\n'


@pytest.mark.parametrize("sig,code,said", [(signal.SIGINT, 130, "Interrupted."), (signal.SIGTERM, 143, "Terminated.")])
@pytest.mark.parametrize("phase", ["tmp-written", "before-rename", "after-rename"])
def test_the_command_stopped_by_a_signal_leaves_no_temp_no_lock_and_no_half_write(tmp_path, sig, code, said, phase):
    p = write(tmp_path / "s.jsonl", ORIGINAL + TORN)
    r = subprocess.run([sys.executable, "-c", _CLI, p, phase, ROOT, str(int(sig))], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == code, r.stderr[-800:]
    last = r.stderr.strip().splitlines()[-1]
    if phase == "after-rename":  # the rewrite was whole when the signal was taken: said so, with its backup
        assert last.startswith(f"{said[:-1]} after {p} was rewritten (backup: {p}.bak-"), r.stderr[-800:]
    else:
        assert last == said, r.stderr[-800:]
    names = sorted(os.listdir(tmp_path))
    assert [n for n in names if ".ctxtool-" in n or n.endswith(".lock")] == [], names
    text = open(p, "rb").read()
    if phase == "after-rename":  # the rewrite was done before the signal was taken: and with the late line
        assert TORN not in text and text.endswith(LATE)
        backups = [n for n in names if ".bak-" in n and not n.endswith(".writers")]
        assert len(backups) == 1 and open(tmp_path / backups[0], "rb").read() == ORIGINAL + TORN + LATE
    else:  # stopped before the rename: untouched, and no backup
        assert text == ORIGINAL + TORN
        assert [n for n in names if ".bak" in n] == []


_COMPACT = """
import sys
sys.path.insert(0, sys.argv[1])
from ctxtool.cli import main
sys.argv = ["ctxtool", "compact", "--summarizer", "command", "--summarizer-command", sys.argv[2],
            "--keep-recent-tokens", "0", "-j", "2", *sys.argv[3:]]
main()
"""


def test_sigterm_stops_a_batch_of_compactions_run_side_by_side(tmp_path):
    """``compact -j 2`` of six files whose summarizer takes a while, SIGTERM during the first two: the files not started
    are not, the two being summarized make no further call and are not written (the review's case, 2026-11-30: it ran
    all six to the end, then said "Terminated.")."""
    import shutil
    import time

    src = os.path.join(ROOT, "fixtures", "compact", "pi-basic.input.jsonl")
    files = []
    for i in range(6):
        files.append(str(tmp_path / f"s{i}.jsonl"))
        shutil.copyfile(src, files[-1])
    calls = tmp_path / "calls"
    started = tmp_path / "started"
    cmd = f"echo x >> {calls}; touch {started}; sleep 2; echo summary text"
    p = subprocess.Popen([sys.executable, "-c", _COMPACT, ROOT, cmd, *files], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err[-800:]
    assert err.strip().splitlines()[-1] == "Terminated.", err[-800:]
    assert len(calls.read_text().split()) <= 2  # no call once stopped: the two already running
    assert [n for n in os.listdir(tmp_path) if ".bak" in n or ".ctxtool-" in n or n.endswith(".lock")] == []
    assert all(open(f, "rb").read() == open(src, "rb").read() for f in files)


def test_ctrl_c_while_the_command_lines_modules_load_is_one_line_and_130(monkeypatch, capsys):
    """The entry point loads the command line's modules (click's import is most of a run's first ~50 ms) under its own
    catch: Ctrl-C there ends as it does later, where it printed a traceback from inside the import (found by a
    review). Stood in for by a module whose ``main`` raises as it is imported."""
    from ctxtool import launch

    class Loading:
        def __getattr__(self, name):
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "ctxtool.cli", Loading())
    with pytest.raises(SystemExit) as e:
        launch.main()
    assert e.value.code == 130
    assert capsys.readouterr().err == "Interrupted.\n"


def test_the_entry_point_runs_the_command_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ctxtool", "--version"], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert r.returncode == 0 and r.stdout.startswith("ctxtool ")
