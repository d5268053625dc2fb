"""Where a session is read from: regular files only; standard input and pipes spooled to a temp file.

A FIFO named *.jsonl with no writer used to block every command forever; ``<(cat s.jsonl)``
was read twice from a pipe (line 1 unparseable, wrong counts); ``repair -o`` said "not seekable".
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.errors import InputError
from ctxtool.paths import NOT_REGULAR, Spool, expand
from ctxtool.transcript import scan

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")
CLAUDE = os.path.join(FIX, "demo", "claude-code-interrupted.jsonl")
COMMANDS = (["validate"], ["repair", "--check"], ["estimate"], ["profile"], ["prune"], ["compact", "-n"], ["view"])
ROOT = os.path.join(os.path.dirname(__file__), "..")


def run(*args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], **kw)


def spooled_left() -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), "ctxtool-*.jsonl"))


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "waiting.jsonl"
    os.mkfifo(path)
    return path


# ---------------------------------------------------------------- FIFOs and devices


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_fifo_named_jsonl_is_refused_in_one_line_without_blocking(fifo, args):
    r = run(*args, fifo)  # would block forever if the FIFO were opened (no writer)
    assert r.exit_code == 3, r.output
    assert r.stderr.strip().splitlines() == [f"Error: {fifo}: {NOT_REGULAR}"]


def test_fifo_in_a_directory_is_reported_and_the_rest_processed(fifo, tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_bytes(open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read())
    files, problems = expand([str(tmp_path)])
    assert files == [str(real)] and problems == [(str(fifo), NOT_REGULAR)]
    r = run("validate", tmp_path)
    assert r.exit_code == 1, r.output  # one file failed, one was checked
    assert f"Error: {fifo}: {NOT_REGULAR}" in r.stderr and str(real) in r.stdout


def test_scan_refuses_what_is_not_a_regular_file(fifo):
    with pytest.raises(InputError, match=NOT_REGULAR):
        scan(str(fifo))


# ---------------------------------------------------------------- pipes and standard input


def _bash(cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=ROOT, timeout=60)


CTX = f"{sys.executable} -m ctxtool"


def test_process_substitution_reads_like_the_file():
    piped = _bash(f"{CTX} estimate --json <(cat {CLAUDE})")
    direct = _bash(f"{CTX} estimate --json {CLAUDE}")
    assert piped.returncode == direct.returncode == 0, piped.stderr
    a, b = orjson.loads(piped.stdout)["files"][0], orjson.loads(direct.stdout)["files"][0]
    assert a["path"].startswith("/dev/fd/")
    assert (a["tokens"], a["bad_lines"], a["messages"]) == (b["tokens"], b["bad_lines"], b["messages"])
    v = _bash(f"{CTX} validate --json <(cat {CLAUDE})")
    assert orjson.loads(v.stdout)["files"][0]["bad_lines"] == orjson.loads(_bash(f"{CTX} validate --json {CLAUDE}").stdout)["files"][0]["bad_lines"]


def test_repair_output_from_a_pipe(tmp_path):
    out = tmp_path / "fixed.jsonl"
    r = _bash(f"{CTX} repair -o {out} <(cat {CLAUDE})")
    assert r.returncode == 0, r.stderr
    assert "not seekable" not in r.stderr
    again = run("repair", "--check", out)
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
def test_standard_input_is_spooled_and_named_stdin(name):
    data = open(CLAUDE, "rb").read()
    before = set(spooled_left())
    r = run("validate", "--json", name, input=data)
    assert r.exit_code == 1, r.output  # the fixture has one API error and one bad line
    f = orjson.loads(r.stdout)["files"][0]
    assert f["path"] == "<stdin>" and f["bad_lines"] == [84]
    assert set(spooled_left()) == before  # the temp copy is deleted


def test_errors_on_standard_input_name_stdin():
    r = run("validate", "-", input=b"not json at all\n")
    assert r.exit_code == 3
    assert r.stderr.startswith("Error: <stdin>:1: no parseable JSON lines") and "ctxtool-" not in r.output


def test_view_reads_standard_input_as_it_reads_the_file():
    # view alone took "-" for a file name ("-: no such file")
    data = open(CLAUDE, "rb").read()
    before = set(spooled_left())
    piped = run("view", "-", input=data)
    assert piped.exit_code == 0, piped.output
    assert piped.stdout == run("view", CLAUDE).stdout and piped.stdout.count("\n") > 3
    j = run("view", "--json", "-", input=data)
    assert orjson.loads(j.stdout)["path"] == "<stdin>"
    bad = run("view", "-", input=b"not json at all\n")
    assert bad.exit_code == 3 and bad.stderr.startswith("Error: <stdin>:1: no parseable JSON lines")
    assert set(spooled_left()) == before


def test_repair_in_place_of_standard_input_is_refused_and_output_works(tmp_path):
    data = open(CLAUDE, "rb").read()
    r = run("repair", "-", input=data)
    assert r.exit_code == 3
    assert r.stderr.strip() == "Error: <stdin>: standard input or a pipe cannot be repaired in place; use -o FILE (or --check)"
    out = tmp_path / "out.jsonl"
    r = run("repair", "-o", out, "-", input=data)
    assert r.exit_code == 0, r.output
    assert f"written to: {out} (<stdin> is unchanged)" in r.stdout
    assert run("validate", out).exit_code == 0


def test_compact_writes_nothing_for_standard_input_but_plans_it():
    data = open(os.path.join(FIX, "repair", "pi-clean.jsonl"), "rb").read()
    r = run("compact", "-", input=data)
    assert r.exit_code == 3 and "<stdin>: standard input or a pipe cannot be compacted in place" in r.stderr
    assert run("compact", "-n", "-", input=data).exit_code == 0


def test_prune_reads_standard_input():
    r = run("prune", "--json", "-", input=open(CLAUDE, "rb").read())
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["path"] == "<stdin>"


def test_spool_copies_once_and_deletes(tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"role":"user","content":"hi"}\n')))
    spool = Spool()
    files, problems = expand(["-", "-"], spool)
    assert problems == [] and len(files) == 1 and spool.names == {files[0]: "<stdin>"}
    assert open(files[0], "rb").read() == b'{"role":"user","content":"hi"}\n'
    spool.close()
    assert not os.path.exists(files[0])
    assert expand(["-"]) == ([], [("-", NOT_REGULAR)])  # no spool: refused rather than read twice


# ---------------------------------------------------------------- missing files


def test_repair_output_of_a_missing_file_says_no_such_file(tmp_path):
    missing = tmp_path / "missing.jsonl"
    r = run("repair", "-o", tmp_path / "out.jsonl", missing)
    assert r.exit_code == 3
    assert r.stderr.strip() == f"Error: {missing}: no such file or directory"
    assert not (tmp_path / "out.jsonl").exists()


def test_repair_output_still_takes_one_input(tmp_path):
    r = run("repair", "-o", tmp_path / "out.jsonl", CLAUDE, CLAUDE)
    assert r.exit_code == 2 and "exactly one input file" in r.output


# ---------------------------------------------------------------- a folder's files


def _walked(top: str) -> tuple[list[str], list[tuple[str, str]]]:
    """What expand gave a directory before it read the listing's types (os.walk, a realpath and a stat per file)."""
    from ctxtool.paths import is_artifact, regular, why_missing

    files, problems, seen = [], [], {}
    for root, dirs, names in os.walk(top):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            if not n.endswith(".jsonl") or is_artifact(n):
                continue
            if not regular(p):  # (a broken link says why, as when named)
                problems.append((p, NOT_REGULAR if os.path.exists(p) else why_missing(p)))
                continue
            key = os.path.realpath(p)
            if key not in seen:
                seen[key] = len(files)
                files.append(p)
            elif os.path.islink(files[seen[key]]) and not os.path.islink(p):
                files[seen[key]] = p
    return files, problems


def test_a_folder_gives_the_files_os_walk_gave_without_a_stat_each(tmp_path):
    """Links to files (in the tree and outside it), a linked directory (not entered), broken links, a FIFO, artifacts,
    nested and sorted directories: the same files, names, order and problems as the os.walk way."""
    top = tmp_path / "projects"
    (top / "b-proj" / "sub").mkdir(parents=True)
    (top / "a-proj").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for p in (top / "a-proj" / "2.jsonl", top / "a-proj" / "1.jsonl", top / "b-proj" / "sub" / "3.jsonl",
              outside / "far.jsonl", top / "b-proj" / "x.jsonl.bak-1-2", top / "b-proj" / "notes.txt"):
        p.write_text("{}\n")
    os.symlink(top / "a-proj" / "1.jsonl", top / "b-proj" / "0-link-to-1.jsonl")  # met after its target: left out
    os.symlink(top / "a-proj" / "2.jsonl", top / "a-proj" / "0-link.jsonl")  # met first: its place, the target's name
    os.symlink(outside / "far.jsonl", top / "b-proj" / "far.jsonl")
    os.symlink(outside, top / "c-linked-dir")
    os.symlink(tmp_path / "gone.jsonl", top / "b-proj" / "broken.jsonl")
    os.mkfifo(top / "b-proj" / "pipe.jsonl")
    for target in (str(top), str(top) + "/", str(top / "b-proj")):
        files, problems = expand([target])
        assert (files, problems) == _walked(target)
    files, problems = expand([str(top)])
    assert [os.path.relpath(f, top) for f in files] == [
        "a-proj/2.jsonl", "a-proj/1.jsonl", "b-proj/far.jsonl", "b-proj/sub/3.jsonl"]
    assert sorted(os.path.basename(p) for p, _ in problems) == ["broken.jsonl", "pipe.jsonl"]


def test_a_path_that_cannot_be_looked_at_says_why(tmp_path, monkeypatch):
    # each was "no such file or directory": a loop of links, a link to a missing file, a folder that may not be entered
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "gone.jsonl")
    assert expand([str(tmp_path / "a.jsonl")])[1] == [(str(tmp_path / "a.jsonl"), "cannot read: Too many levels of symbolic links")]
    assert expand([str(tmp_path / "link.jsonl")])[1] == [
        (str(tmp_path / "link.jsonl"), f"a symbolic link to a missing file ({tmp_path / 'gone.jsonl'})")]
    assert expand([str(tmp_path / "none.jsonl")])[1] == [(str(tmp_path / "none.jsonl"), "no such file or directory")]
    closed = str(tmp_path / "closed" / "s.jsonl")
    real_stat = os.stat

    def stat(p, *a, **k):
        if str(p) == closed:
            raise PermissionError(13, "Permission denied", str(p))
        return real_stat(p, *a, **k)

    monkeypatch.setattr(os, "stat", stat)
    assert expand([closed])[1] == [(closed, "cannot read: Permission denied")]
    r = run("validate", tmp_path / "a.jsonl")
    assert r.exit_code == 3
    assert r.stderr.strip() == f"Error: {tmp_path / 'a.jsonl'}: cannot read: Too many levels of symbolic links"
    # the same links found in a folder say the same (found by a review: "not a regular file" there)
    monkeypatch.setattr(os, "stat", real_stat)
    found = dict(expand([str(tmp_path)])[1])
    assert found[str(tmp_path / "link.jsonl")] == f"a symbolic link to a missing file ({tmp_path / 'gone.jsonl'})"
    assert found[str(tmp_path / "a.jsonl")] == "cannot read: Too many levels of symbolic links"


def _unlistable(monkeypatch, *closed):
    """``os.scandir`` refuses these folders, as for a user who may not enter them (tests run as root)."""
    real = os.scandir
    shut = {str(c) for c in closed}

    def scandir(p="."):
        if str(p) in shut:
            raise PermissionError(13, "Permission denied", str(p))
        return real(p)

    monkeypatch.setattr(os, "scandir", scandir)


def test_a_folder_that_cannot_be_listed_is_a_problem_not_passed_over(tmp_path, monkeypatch):
    # it was left out unsaid: `repair --check` of the tree exited 0 in CI without checking its sessions (found by an
    # adversarial review); named directly, it "held no *.jsonl session files"
    top = tmp_path / "projects"
    (top / "locked").mkdir(parents=True)
    healthy = os.path.join(FIX, "claude-recorded", "parallel.jsonl")
    shutil.copy(healthy, top / "a.jsonl")
    shutil.copy(healthy, top / "locked" / "b.jsonl")
    assert run("repair", "--check", top).exit_code == 0  # (listed: both healthy)
    _unlistable(monkeypatch, top / "locked")
    files, problems = expand([str(top)])
    assert [os.path.basename(f) for f in files] == ["a.jsonl"]
    assert problems == [(str(top / "locked"), "cannot list this folder: Permission denied")]
    assert expand([str(top / "locked")])[1] == [(str(top / "locked"), "cannot list this folder: Permission denied")]
    r = run("repair", "--check", top)
    assert r.exit_code == 1 and f"Error: {top / 'locked'}: cannot list this folder: Permission denied" in r.stderr
    r = run("validate", "--json", top)
    assert r.exit_code == 1
    assert [f["path"] for f in json.loads(r.stdout)["failures"]] == [str(top / "locked")]


# ---------------------------------------------------------------- globs


def _tree(root, rnd):
    names = ["a", "b", ".h", "c.jsonl", ".d.jsonl", "x.jsonl", "ab"]

    def fill(d, depth):
        for _ in range(rnd.randint(0, 4)):
            p = os.path.join(d, rnd.choice(names))
            if os.path.exists(p):
                continue
            if depth < 3 and rnd.random() < 0.5:
                os.mkdir(p)
                fill(p, depth + 1)
            else:
                open(p, "w").close()

    os.mkdir(os.path.join(root, "t"))
    fill(os.path.join(root, "t"), 0)


@pytest.mark.parametrize("seed", range(40))
def test_a_glob_matches_what_globs_glob_matches_in_a_tree_without_links(tmp_path, monkeypatch, seed):
    import random

    from ctxtool.paths import expand_glob

    _tree(str(tmp_path), random.Random(seed))
    monkeypatch.chdir(tmp_path)
    for pattern in ["t/**/*.jsonl", "t/**", "**/*.jsonl", "t/*/**/*.jsonl", "t/**/.*.jsonl", "t/a/**/x.jsonl",
                    "t/**/a/*.jsonl", "t/**/**/*.jsonl", str(tmp_path / "t" / "**" / "*.jsonl"), "t/**/*", "**",
                    "t/.h/**/*.jsonl", "none/**/*.jsonl", "t/*.jsonl", "t/?/*.jsonl"]:
        want = {p.rstrip("/") for p in glob.glob(pattern, recursive=True)}
        assert {p.rstrip("/") for p in expand_glob(pattern)} == want, pattern


def test_a_glob_does_not_follow_links_that_loop(tmp_path, monkeypatch):
    """Two links back up the tree: glob's ``**`` entered them over and over (300,000 paths in 19 s and on, a run that
    never ended: found by a review); ctxtool's does not enter a linked folder, as its walk of a folder does not."""
    (tmp_path / "dl" / "a").mkdir(parents=True)
    shutil.copy(os.path.join(FIX, "repair", "pi-clean.jsonl"), tmp_path / "dl" / "a" / "pi.jsonl")
    os.symlink("..", tmp_path / "dl" / "a" / "up")
    os.symlink("../a", tmp_path / "dl" / "a" / "self")
    monkeypatch.chdir(tmp_path)
    files, problems = expand(["dl/**/*.jsonl"])
    assert files == ["dl/a/pi.jsonl"] and problems == []
    r = run("validate", "--json", "dl/**/*.jsonl")
    assert r.exit_code == 0, r.output
    assert [f["path"] for f in json.loads(r.stdout)["files"]] == ["dl/a/pi.jsonl"]
