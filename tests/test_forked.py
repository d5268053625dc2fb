"""Helpers forked from this process (``ctxtool.forked``): only from a process with one thread, keeping only the
descriptors they are given, writing nothing to this process's standard output, their failure their exit code."""

from __future__ import annotations

import os
import threading
import time

import pytest

from ctxtool import forked

pytestmark = pytest.mark.usefixtures("forkable")  # (skipped where helpers are not forked)


def _answer(proc) -> bytes:
    data = proc.stdout.read()
    proc.stdout.close()
    return data


def test_a_child_runs_and_answers_on_its_pipe():
    proc = forked.child(lambda r, w: os.write(w, b"hello"))
    assert _answer(proc) == b"hello" and proc.wait() == 0 and proc.poll() == 0


def test_a_child_that_raises_exits_1():
    def boom(r, w):
        raise KeyboardInterrupt  # (whatever it raises)

    proc = forked.child(boom)
    assert _answer(proc) == b"" and proc.wait() == 1


def test_a_child_reads_what_this_process_sends_when_asked():
    def echo(r, w):
        os.write(w, os.read(r, 100).upper())

    proc = forked.child(echo, stdin=True, buffered=False)
    proc.stdin.write(b"jobs")
    proc.stdin.close()
    assert _answer(proc) == b"JOBS" and proc.wait() == 0


def test_a_child_keeps_only_the_descriptors_it_is_given(tmp_path):
    # a lock file or a session file open here must not stay open in a helper (a lock held by a copy of its
    # descriptor outlives this process's release of it)
    other = os.open(tmp_path / "other", os.O_CREAT | os.O_WRONLY)
    kept = os.open(tmp_path / "kept", os.O_CREAT | os.O_WRONLY)

    def check(r, w):
        def is_open(fd):
            try:
                os.fstat(fd)
                return b"1"
            except OSError:
                return b"0"

        os.write(w, is_open(other) + is_open(kept))

    try:
        proc = forked.child(check, keep=(kept,))
        assert _answer(proc) == b"01" and proc.wait() == 0
    finally:
        os.close(other)
        os.close(kept)


def test_a_child_writes_nothing_to_this_processs_output(capfd):
    def noisy(r, w):
        os.write(1, b"fd 1\n")
        os.write(2, b"fd 2\n")
        os.write(w, b"done")

    print("before", end="")  # held in this process's buffer: flushed before the fork, once
    proc = forked.child(noisy)
    assert _answer(proc) == b"done" and proc.wait() == 0
    out, err = capfd.readouterr()
    assert (out, err) == ("before", "")


def test_env_is_set_in_the_child_only(monkeypatch):
    monkeypatch.delenv("CTXTOOL_TEST_FORKED", raising=False)
    proc = forked.child(lambda r, w: os.write(w, os.environ.get("CTXTOOL_TEST_FORKED", "-").encode()),
                        env={"CTXTOOL_TEST_FORKED": "yes"})
    assert _answer(proc) == b"yes" and "CTXTOOL_TEST_FORKED" not in os.environ


def test_no_fork_with_another_thread_or_when_turned_off(monkeypatch):
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not forked.possible() and forked.child(lambda r, w: None) is None
    finally:
        stop.set()
        t.join()
    deadline = time.monotonic() + 5  # (a joined thread may take a moment to end: the kernel counts it until then)
    while not forked.possible() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert forked.possible()
    monkeypatch.setenv(forked.ENV, "0")
    assert not forked.possible() and forked.child(lambda r, w: None) is None


def test_kill_ends_a_child_that_would_not():
    import subprocess

    proc = forked.child(lambda r, w: time.sleep(60))
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    proc.kill()
    assert proc.wait() == -9
    _answer(proc)


_INTERRUPTED = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a shell's background job ignores it)
sys.path.insert(0, sys.argv[1])
from ctxtool import pool

def slow(path):
    time.sleep(30)

paths = [os.path.join(sys.argv[2], f"s{i}") for i in range(6)]
for p in paths:
    open(p, "w").close()
print("ready", flush=True)
try:
    list(pool.each(slow, paths, workers=2, min_bytes=0))
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_ctrl_c_ends_the_forked_workers_too(tmp_path):
    # a terminal's Ctrl-C goes to the whole process group: the workers end with this process, none is left behind
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.Popen([sys.executable, "-c", _INTERRUPTED, root, str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    assert p.stdout.readline() == b"ready\n"
    time.sleep(0.5)  # (the workers started and took a job each)
    group = subprocess.run(["ps", "-o", "pid=", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert len(group) >= 2  # this process and its forked worker
    os.killpg(p.pid, signal.SIGINT)
    assert p.wait(timeout=20) == 130
    time.sleep(0.2)
    left = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(p.pid)], capture_output=True, text=True).stdout.split("\n")
    assert [line for line in left if line.strip()] == []
