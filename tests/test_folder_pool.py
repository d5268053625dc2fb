"""Many files on every CPU (``ctxtool.pool``): ``estimate``, ``validate`` and ``repair --check`` over a
folder give exactly the serial output, in input order, failures included; a worker that dies has its
file done in the parent; an error that is not a CtxError is raised as a serial loop would raise it."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from ctxtool import forked, parallel, pool, synth
from ctxtool.cli import cli
from ctxtool.errors import InputError
from tests.bench import realshape


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool")
    realshape.write_folder(str(root), 1_500_000, files=6, seed=3)
    projects = root / "projects"
    extra = projects / "-home-dev-mixed"
    extra.mkdir(exist_ok=True)
    synth.write_session(str(extra / "pi.jsonl"), "pi", seed=1, turns=30, corruptions=["missing_result", "torn_tail"])
    synth.write_session(str(extra / "claude.jsonl"), "claude", seed=2, turns=30, corruptions=["duplicate_id"])
    (extra / "notes.jsonl").write_text("not json at all\n")  # a failure, in its place
    (extra / "empty.jsonl").write_text("")
    return str(projects)


def run(args, env=None):
    res = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    return res.exit_code, res.stdout


@pytest.mark.parametrize("args", [["estimate", "--json"], ["estimate", "-t", "usage", "--json"], ["validate", "--json"],
                                  ["repair", "--check", "--json"]], ids=lambda a: " ".join(a[:-1]) or a[0])
def test_folder_output_is_the_serial_output(folder, monkeypatch, args):
    monkeypatch.setattr(pool, "MIN_TOTAL_BYTES", 0)
    monkeypatch.setenv(parallel.ENV, "2")
    calls = []
    real = pool._Workers.finished

    def spy(self, block):
        out = real(self, block)
        calls.extend(out)
        return out

    monkeypatch.setattr(pool._Workers, "finished", spy)
    code, out = run(args + [folder])
    assert calls, "the workers really ran"
    serial_code, serial_out = run(args + [folder], env={parallel.ENV: "1"})
    assert (code, out) == (serial_code, serial_out)
    data = json.loads(out)
    paths = [f["path"] for f in data["files"]] + [f["path"] for f in data["failures"]]
    assert len(paths) == 10 and any(p.endswith("notes.jsonl") for p in paths)


@pytest.fixture(autouse=True)
def importable(monkeypatch):
    """Workers import the job's function by its module name: this file's, for the tests below."""
    here = os.path.dirname(os.path.abspath(__file__))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.path.dirname(here)]))


def _ok(path, tag):
    if path.endswith("bad"):
        raise InputError("refused", path=path, line=7)
    if path.endswith("bug"):
        raise KeyError("a bug")
    return (tag, os.path.basename(path), os.environ.get(parallel.ENV))


def _ok_slowly_in_a_worker(path, tag):
    """``_ok``, each job of a worker taking 20 ms: this process is sure to find files left to take meanwhile (with
    jobs as quick as its own loop, a worker answering as fast as it is fed may leave it none: seen once in CI)."""
    if os.environ.get(parallel.ENV) == "1":
        time.sleep(0.02)
    return _ok(path, tag)


def _dies(path):
    if os.environ.get(parallel.ENV) == "1" and path.endswith("2"):
        os._exit(9)  # a worker killed mid-job
    return os.path.basename(path), os.environ.get(parallel.ENV)


def _files(tmp_path, names, size=1000):
    out = []
    for n in names:
        p = tmp_path / n
        p.write_bytes(b"x" * size)
        out.append(str(p))
    return out


def test_results_come_in_input_order_with_errors_in_their_place(tmp_path):
    names = ["f0", "f1", "f2bad", "f3"] + [f"g{k}" for k in range(pool.AHEAD_MAX + 4)]
    paths = _files(tmp_path, names)
    (tmp_path / "f3").write_bytes(b"x" * 50_000)  # the largest goes first, still yielded in its place
    got = list(pool.each(_ok_slowly_in_a_worker, paths, "t", workers=2, min_bytes=0))
    assert [p for p, _, _ in got] == paths
    done = [r for _, r, _ in got if r is not None]
    assert [r[:2] for r in done] == [("t", n) for n in names if n != "f2bad"]
    # by the worker (as many small files ahead as AHEAD_MAX: it never waits for this process) and by this process
    assert {r[2] for r in done} == {"1", None}
    assert done[2][2] == "1"  # the largest went to the worker
    err = got[2][2]
    assert isinstance(err, InputError) and (err.reason, err.path, err.line) == ("refused", paths[2], 7)


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (Z: ended, not reaped), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.mark.skipif(not forked.possible() or not os.path.isdir("/proc/self"), reason="forked workers and /proc")
def test_a_pools_forked_workers_end_on_their_own_and_the_next_pool_reaps_them(tmp_path, monkeypatch):
    """The pool's end does not wait for its forked workers to exit (their stdin closed, they end on their own; it
    cost each folder 2-5 ms), and leaves no zombie for long: the next pool reaps those that ended."""
    monkeypatch.delenv(parallel.ENV, raising=False)
    monkeypatch.setattr(pool, "_ENDING", [])
    paths = _files(tmp_path, [f"f{k}" for k in range(6)])
    assert all(r is not None for _, r, _ in pool.each(_ok, paths, "t", workers=2, min_bytes=0))
    left = list(pool._ENDING)
    assert left and all(isinstance(p, forked.Child) and p.returncode is None for p in left)
    for p in left:  # it ends by itself: a zombie until reaped
        for _ in range(500):
            if _state(p.pid) in ("Z", None):
                break
            time.sleep(0.01)
        assert _state(p.pid) == "Z"
    assert all(r is not None for _, r, _ in pool.each(_ok, paths, "t", workers=2, min_bytes=0))
    assert all(p.returncode == 0 and _state(p.pid) is None for p in left)
    assert not set(pool._ENDING) & set(left)


def test_a_worker_holds_small_files_ahead_up_to_a_size():
    """A worker is sent jobs while it holds fewer than DEPTH, or less than AHEAD_BYTES of files and fewer than
    AHEAD_MAX jobs; answered jobs leave its count."""

    class Pipe:
        def write(self, data):
            return len(data)

    w = pool._Worker(type("Proc", (), {"stdin": Pipe()})())
    for k in range(3):
        assert w.send(k, _ok, f"f{k}", ("t",), 1 << 20)
    assert (list(w.jobs), w.ahead) == ([0, 1, 2], 3 << 20)
    assert w.answered() == 0 and w.ahead == 2 << 20


def test_one_worker_or_small_files_stay_in_this_process(tmp_path, monkeypatch):
    paths = _files(tmp_path, ["a", "b", "c"])
    monkeypatch.delenv(parallel.ENV, raising=False)
    assert [r[2] for _, r, _ in pool.each(_ok, paths, "t", workers=1, min_bytes=0)] == [None] * 3
    assert [r[2] for _, r, _ in pool.each(_ok, paths, "t", workers=2)] == [None] * 3  # 3 KB: not worth a worker


def test_a_worker_that_dies_has_its_file_done_here(tmp_path, monkeypatch):
    monkeypatch.delenv(parallel.ENV, raising=False)
    paths = _files(tmp_path, ["f1", "f2", "f3", "f4"])
    (tmp_path / "f2").write_bytes(b"x" * 5000)  # the largest: the worker's first job
    got = [r for _, r, _ in pool.each(_dies, paths, workers=2, min_bytes=0)]
    assert got[1] == ("f2", None)  # done here after its worker died
    assert [r[0] for r in got] == ["f1", "f2", "f3", "f4"]


def test_a_bug_in_a_worker_is_that_files_failure_naming_it(tmp_path, monkeypatch):
    """Any failure is one file's, one line naming it, and the batch goes on (as the serial
    loops do); CTXTOOL_DEBUG=1 raises it for a traceback."""
    from ctxtool.errors import InternalError

    monkeypatch.delenv("CTXTOOL_DEBUG", raising=False)
    paths = _files(tmp_path, ["f1", "f2bug"])
    got = list(pool.each(_ok, paths, "t", workers=2, min_bytes=0))
    assert got[0][2] is None and got[0][1] is not None
    err = got[1][2]
    assert isinstance(err, InternalError) and err.path == paths[1] and "KeyError" in str(err) and "a bug" in str(err)
    monkeypatch.setenv("CTXTOOL_DEBUG", "1")
    with pytest.raises(KeyError, match="a bug"):
        list(pool.each(_ok, paths, "t", workers=1, min_bytes=0))


def test_workers_that_cannot_start_leave_the_work_here(tmp_path, monkeypatch):
    monkeypatch.setenv(forked.ENV, "0")  # started as python -c
    monkeypatch.setattr(pool.sys, "executable", "/nonexistent/python3")
    monkeypatch.delenv(parallel.ENV, raising=False)
    paths = _files(tmp_path, ["f1", "f2", "f3"])
    assert [r[1] for _, r, _ in pool.each(_ok, paths, "t", workers=2, min_bytes=0)] == ["f1", "f2", "f3"]


def test_forked_workers_that_fail_leave_the_work_here(tmp_path, monkeypatch, forkable):
    def fails(inp, out):
        raise RuntimeError("the worker's bug")

    monkeypatch.setattr(pool, "worker_loop", fails)  # (a forked worker is a copy of this process: it fails there)
    monkeypatch.delenv(parallel.ENV, raising=False)
    paths = _files(tmp_path, ["f1", "f2", "f3", "f4"])
    assert [r[1] for _, r, _ in pool.each(_ok, paths, "t", workers=2, min_bytes=0)] == ["f1", "f2", "f3", "f4"]


@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "started"])
def test_workers_forked_or_started_give_the_same_answers(tmp_path, monkeypatch, fork):
    monkeypatch.setenv(forked.ENV, fork)
    monkeypatch.delenv(parallel.ENV, raising=False)
    paths = _files(tmp_path, [f"f{i}" for i in range(8)])
    got = [r for _, r, _ in pool.each(_ok, paths, "t", workers=2, min_bytes=0)]
    assert [r[1] for r in got] == [f"f{i}" for i in range(8)]
    assert "1" in {r[2] for r in got}  # some went to the worker (whose scans stay in one process)


def test_large_files_are_scanned_in_parts_here(tmp_path, monkeypatch):
    """A file of parallel.MIN_BYTES or more is done in this process (its scan uses the helpers)."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 20_000)
    monkeypatch.delenv(parallel.ENV, raising=False)
    paths = _files(tmp_path, ["small1", "big", "small2"])
    (tmp_path / "big").write_bytes(b"x" * 30_000)
    got = [r for _, r, _ in pool.each(_ok, paths, "t", workers=2, min_bytes=0)]
    assert got[1] == ("t", "big", None)  # here, with the part scan's helpers
    assert "1" in {got[0][2], got[2][2]}  # the small ones went to the worker


def test_what_a_worker_runs_imports_no_click():
    """A worker imports the module of the function it runs: estimate_file, check_file and validate_report live in the
    library, so a worker does not load click and the CLI (~25 ms each)."""
    import subprocess
    import sys

    from ctxtool.estimate import estimate_file
    from ctxtool.repair import check_file
    from ctxtool.validate import validate_report

    mods = sorted({f.__module__ for f in (estimate_file, check_file, validate_report)})
    code = f"import sys; import {', '.join(mods)}; print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich')))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"
