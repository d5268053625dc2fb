"""What a rewrite keeps of the file it replaces besides its lines, or refuses (nothing written): the agent must get its
session back as it had it. Found by an adversarial review: another user with write access to the folder rewrote the
file as its own (the agent could no longer append), an ACL that let the agent write was dropped, hard-linked names were
split, a read-only file was rewritten; and a torn last line that a writer ended with a newline came back as a bad line.
The owner and group cases run a real process as another user (root only: CI runs as root)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxtool import commit
from ctxtool.errors import WriteError
from tests.test_commit_protocol import NEW, ORIGINAL, line, pi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _fast_watch(monkeypatch):
    monkeypatch.setattr(commit, "WATCH_MAX", 0.2)


def _file(directory, data: bytes = ORIGINAL, mode: int = 0o644) -> str:
    p = os.path.join(directory, "s.jsonl")
    with open(p, "wb") as f:
        f.write(data)
    os.chmod(p, mode)
    return p


def _left(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if ".ctxtool-" in n or ".bak-" in n)


def test_a_file_with_another_name_is_refused_and_both_names_keep_it(tmp_path):
    p = _file(tmp_path)
    other = tmp_path / "other.jsonl"
    os.link(p, str(other))
    snap = commit.snapshot(p, len(ORIGINAL))
    with pytest.raises(WriteError, match="2 names"):
        commit.commit(snap, [NEW])
    assert open(p, "rb").read() == ORIGINAL and other.read_bytes() == ORIGINAL
    assert os.stat(p).st_ino == os.stat(other).st_ino and _left(tmp_path) == []


def test_a_read_only_file_is_refused(tmp_path):
    p = _file(tmp_path, mode=0o444)
    with pytest.raises(WriteError, match="read-only"):
        commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    assert open(p, "rb").read() == ORIGINAL and _left(tmp_path) == []


def test_another_user_s_file_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    p = _file(tmp_path)
    owner = os.stat(p).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 4242)
    with pytest.raises(WriteError, match="belongs to another user"):
        commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    assert open(p, "rb").read() == ORIGINAL and _left(tmp_path) == []


def test_an_ordinary_file_is_still_rewritten_with_its_mode(tmp_path):
    p = _file(tmp_path, mode=0o640)
    commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    assert open(p, "rb").read() == NEW and os.stat(p).st_mode & 0o7777 == 0o640


def _xattrs_work(path: str) -> bool:
    try:
        os.setxattr(path, "user.ctxtool-probe", b"1")
        os.removexattr(path, "user.ctxtool-probe")
        return True
    except OSError:
        return False


def test_extended_attributes_are_kept(tmp_path):
    p = _file(tmp_path)
    if not _xattrs_work(p):
        pytest.skip("no user extended attributes on this file system")
    os.setxattr(p, "user.origin", b"agent-7")
    commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    assert open(p, "rb").read() == NEW and os.getxattr(p, "user.origin") == b"agent-7"


def test_an_acl_that_lets_another_user_write_is_kept(tmp_path):
    p = _file(tmp_path, mode=0o644)
    # a POSIX ACL in the kernel's xattr form: user::rw-, user:1000:rw-, group::r--, mask::rw-, other::r--
    import struct

    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in (
        (0x01, 6, 0xFFFFFFFF), (0x02, 6, 1000), (0x04, 4, 0xFFFFFFFF), (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)))
    try:
        os.setxattr(p, "system.posix_acl_access", acl)
    except OSError:
        pytest.skip("no POSIX ACLs on this file system")
    before = os.getxattr(p, "system.posix_acl_access")
    commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    assert os.getxattr(p, "system.posix_acl_access") == before and open(p, "rb").read() == NEW


def test_a_torn_line_a_writer_ends_with_a_newline_is_not_carried_back(tmp_path):
    torn = b'{"type":"message","id":"a3","par'
    p = _file(tmp_path, ORIGINAL + torn)
    snap = commit.snapshot(p, len(ORIGINAL) + len(torn))
    with open(p, "ab") as f:  # a writer that ends the file's last line before appending its own
        f.write(b"\n" + line(pi("a4", "a2")))
    done = commit.commit(snap, [NEW])
    assert open(p, "rb").read() == NEW + line(pi("a4", "a2"))
    assert any("never completed" in n for n in done.notices)
    assert open(done.backup, "rb").read().startswith(ORIGINAL + torn)


# ---------------------------------------------------------------- as another user (real processes; root only)

AS_USER = """
import os, sys
sys.path.insert(0, {root!r})
# everything a repair may import, imported first: the interpreter's own files may not be readable by that user
import hashlib, pickle, random, selectors, subprocess
from ctxtool.repair import repair_file
from ctxtool.errors import CtxError
os.setgroups([])
os.setgid({gid})
os.setuid({uid})
try:
    r = repair_file({path!r})
    print("written" if r.written else "unchanged")
except CtxError as e:
    print("refused:", e)
"""


def _as(uid: int, gid: int, path: str) -> str:
    out = subprocess.run([sys.executable, "-c", AS_USER.format(root=ROOT, uid=uid, gid=gid, path=path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


BROKEN = ORIGINAL + b"\x00\x00garbage\n"  # a bad line: repair would rewrite the file


@pytest.fixture
def open_dir():
    """A folder other users can reach (pytest's own are root's alone)."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="ctxtool-owner-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# (the folder's owner and mode, the file's owner and group, the user who runs repair, what it says, the file after)
AS_OTHERS = {
    "a user who may write the folder but does not own the file": ((0, 0o777), (1000, 1000), (65534, 65534),
                                                                   "refused:", "another user", BROKEN),
    "an owner outside the file's group": ((1000, 0o755), (1000, 1001), (1000, 1000), "refused:", "group", BROKEN),
    "the owner, its own file": ((1000, 0o755), (1000, 1000), (1000, 1000), "written", "", ORIGINAL),
}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as other users")
@pytest.mark.parametrize("case", list(AS_OTHERS))
def test_who_runs_repair_decides_whether_the_file_is_rewritten(open_dir, case):
    (dir_uid, dir_mode), owner, runner, said, why, after = AS_OTHERS[case]
    d = os.path.join(open_dir, "folder")
    os.mkdir(d)
    os.chown(d, dir_uid, dir_uid)
    os.chmod(d, dir_mode)
    p = _file(d, BROKEN)
    os.chown(p, *owner)
    out = _as(*runner, p)
    assert out.startswith(said) and why in out
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == owner and open(p, "rb").read() == after
    if after == BROKEN:
        assert _left(d) == []
