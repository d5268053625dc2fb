"""The commit protocol (ctxtool.commit) and the lock rules, as pure functions on small files:
what was read, files that grew, shrank, were replaced or rewritten, unfinished last lines,
the re-link of the first carried line, backups, leftovers of killed runs, stale locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import orjson
import pytest

from ctxtool import commit
from ctxtool.errors import FileChanged, LockTimeout, StaleLock
from ctxtool.lock import GARBAGE_STALE_MS, SessionLock, process_starttime


def pi(i, parent, text="x"):
    return {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-03-01T10:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}}


def line(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def write(path, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:  # open per line, as pi does
        f.write(data)


def leftovers(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if ".ctxtool-" in n or ".bak-" in n)


ORIGINAL = line({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"}) \
    + line(pi("a1", None)) + line(pi("a2", "a1"))
NEW = ORIGINAL + line(pi("c1", "a2", "compaction"))


@pytest.fixture(autouse=True)
def _fast_watch(monkeypatch):
    monkeypatch.setattr(commit, "WATCH_MAX", 0.2)


# ---------------------------------------------------------------- what was read


def test_snapshot_of_a_file_ending_in_a_newline_carries_from_its_end(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    st = os.stat(p)
    assert (snap.dev, snap.ino, snap.size, snap.start, snap.skip_eol) == (st.st_dev, st.st_ino, len(ORIGINAL), len(ORIGINAL), False)


def test_snapshot_of_a_complete_record_missing_its_newline_waits_for_the_newline(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL[:-1])
    snap = commit.snapshot(p, len(ORIGINAL) - 1)
    assert snap.start == len(ORIGINAL) - 1 and snap.skip_eol


def test_snapshot_of_a_torn_last_line_carries_it_once_completed(tmp_path):
    torn = ORIGINAL + b'{"type":"message","id":"a3"'
    p = write(tmp_path / "s.jsonl", torn)
    snap = commit.snapshot(p, len(torn))
    assert snap.start == len(ORIGINAL) and not snap.skip_eol


def test_snapshot_refuses_a_file_replaced_while_it_was_read(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    before = commit.identity(p)
    write(tmp_path / "other", ORIGINAL)
    os.replace(tmp_path / "other", p)
    with pytest.raises(FileChanged) as e:
        commit.snapshot(p, len(ORIGINAL), expect=before)
    assert e.value.retry and str(p) in str(e.value)


# ---------------------------------------------------------------- grown, shrunk, replaced, rewritten


def test_lines_appended_before_the_commit_are_carried_byte_for_byte(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    odd = b'{"type":"custom","id":"a4","parentId":"a3","data":{"k":1.50,"s":"\\u00e9"}}\n'  # non-canonical JSON stays as is
    appended = line(pi("a3", "a2")) + odd
    append(p, appended)
    done = commit.commit(snap, [NEW])
    assert open(p, "rb").read() == NEW + appended
    assert done.carried == 2 and done.carried_late == 0 and done.relinked is None
    assert open(done.backup, "rb").read() == ORIGINAL + appended  # the backup is the file before the rewrite
    # a live file: the record that lets the next read report a line written to the old file late
    assert leftovers(tmp_path) == sorted([os.path.basename(done.backup), os.path.basename(done.backup) + commit.WRITERS])


def test_a_live_file_keeps_its_old_copy_even_without_backup_and_the_next_read_reports_a_late_line(tmp_path):
    """A writer whose open of the path began before the rename, held up longer than the watch,
    writes its line to the old file after ctxtool let it go: nothing can carry it then, but it
    is kept and the next read says where it is."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    append(p, line(pi("a3", "a2")))
    done = commit.commit(snap, [NEW], backup=False)
    assert done.backup and any("the replaced file is kept as" in n for n in done.notices)
    assert commit.late_writes(p) == []
    append(done.backup, line(pi("a4", "a3")))  # the held-up writer's line, in the old file
    commit._listings.clear()
    said = commit.late_writes(p)
    assert len(said) == 1 and "1 line(s)" in said[0] and done.backup in said[0]


def test_a_quiet_file_without_backup_leaves_nothing(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    done = commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW], backup=False)
    assert done.backup is None and leftovers(tmp_path) == []


@pytest.mark.parametrize("change", ["shrunk", "replaced", "rewritten", "removed"])
def test_a_file_that_shrank_was_replaced_or_rewritten_is_refused(tmp_path, change):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    if change == "shrunk":
        os.truncate(p, len(ORIGINAL) - 10)
    elif change == "replaced":
        write(tmp_path / "other", ORIGINAL + line(pi("z1", "a2")))
        os.replace(tmp_path / "other", p)
    elif change == "rewritten":  # same size, same inode, other bytes (a non-atomic writeFileSync)
        with open(p, "r+b") as f:
            f.write(ORIGINAL.replace(b'"a1"', b'"b1"'))
    else:
        os.unlink(p)
    after = open(p, "rb").read() if os.path.exists(p) else None
    with pytest.raises(FileChanged) as e:
        commit.commit(snap, [NEW])
    assert "nothing was written" in str(e.value) and str(p) in str(e.value)
    assert not e.value.retry
    assert (open(p, "rb").read() if os.path.exists(p) else None) == after
    assert leftovers(tmp_path) == []  # no temp file, no backup


def test_a_whole_file_that_grew_is_refused(tmp_path):
    p = write(tmp_path / "openclaw.json", b'{"a": 1}\n')
    snap = commit.snapshot(p, 9, whole=True)
    append(p, b"// edited\n")
    with pytest.raises(FileChanged) as e:
        commit.commit(snap, [b'{"a": 2}\n'])
    assert "changed since it was read (9 -> 19 bytes)" in str(e.value)
    assert open(p, "rb").read() == b'{"a": 1}\n// edited\n'


# ---------------------------------------------------------------- unfinished last lines


def test_an_unfinished_appended_line_stays_pending_and_is_kept_in_the_backup(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    partial = b'{"type":"message","id":"a3","parentId":"a2","mess'
    append(p, line(pi("a3", "a2")) + partial)
    done = commit.commit(snap, [NEW], backup=False)
    assert open(p, "rb").read() == NEW + line(pi("a3", "a2"))  # the complete line, never the fragment
    assert done.backup and open(done.backup, "rb").read().endswith(partial)  # kept although backup=False
    assert any("unfinished line" in n for n in done.notices)


def test_an_unfinished_line_completed_after_the_rename_is_carried(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    full = line(pi("a3", "a2"))
    append(p, full[:20])
    handle = []  # the writer finishes its line through the handle it opened just before the rename

    def finish(phase, path):
        if phase == "renaming":
            handle.append(open(p, "ab"))
        if phase == "after-rename":
            handle[0].write(full[20:])
            handle[0].flush()

    commit.hooks.append(finish)
    try:
        done = commit.commit(snap, [NEW])
    finally:
        commit.hooks.remove(finish)
        handle[0].close()
    assert open(p, "rb").read() == NEW + full
    assert done.carried == 0 and done.carried_late == 1


def test_a_torn_line_read_at_the_end_is_carried_whole_once_completed(tmp_path):
    full = line(pi("a3", "a2"))
    p = write(tmp_path / "s.jsonl", ORIGINAL + full[:25])
    snap = commit.snapshot(p, len(ORIGINAL) + 25)
    append(p, full[25:])  # the writer was still writing it while the file was read
    done = commit.commit(snap, [NEW])  # the plan dropped the torn line
    assert open(p, "rb").read() == NEW + full and done.carried == 1


def test_a_torn_line_never_completed_does_not_swallow_the_next_line(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL + b'{"type":"mess')
    snap = commit.snapshot(p, len(ORIGINAL) + 13)
    append(p, line(pi("a3", "a2")))  # appended straight after the crash leftover
    done = commit.commit(snap, [NEW])
    assert open(p, "rb").read() == NEW + line(pi("a3", "a2"))
    assert any("never completed" in n for n in done.notices)


def test_a_newline_completing_a_record_read_without_it_is_not_carried_twice(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL[:-1])
    snap = commit.snapshot(p, len(ORIGINAL) - 1)
    append(p, b"\n" + line(pi("a3", "a2")))
    commit.commit(snap, [NEW])  # the plan wrote the last record with its newline
    assert open(p, "rb").read() == NEW + line(pi("a3", "a2"))


# ---------------------------------------------------------------- re-linking


def test_pi_first_carried_line_is_relinked_under_the_new_leaf_and_only_it_changes(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    first = b'{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"user","content":"\\u00e9 caf\xc3\xa9","n":1.50}}\n'
    rest = line(pi("a4", "a3")) + line(pi("a5", "a2"))  # a5 also points at a2: only the first is moved
    append(p, first + rest)
    done = commit.commit(snap, [NEW], relink=commit.relink_for("pi", "a2", "c1"))
    out = open(p, "rb").read()
    assert out == NEW + first.replace(b'"parentId":"a2"', b'"parentId":"c1"') + rest
    assert done.relinked == "a3"


def test_claude_first_carried_line_is_relinked_by_parent_uuid(tmp_path):
    a = {"parentUuid": None, "type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"}
    p = write(tmp_path / "c.jsonl", line(a))
    snap = commit.snapshot(p, len(line(a)))
    appended = line({"parentUuid": "u1", "type": "user", "message": {"role": "user", "content": "more"}, "uuid": "u2"})
    append(p, appended)
    new = line(a) + line({"parentUuid": None, "type": "system", "subtype": "compact_boundary", "uuid": "b1"})
    done = commit.commit(snap, [new], relink=commit.relink_for("claude", "u1", "b1"))
    assert open(p, "rb").read() == new + appended.replace(b'"parentUuid":"u1"', b'"parentUuid":"b1"')
    assert done.relinked == "u2"


def test_relink_line_never_touches_a_nested_field_of_the_same_name():
    obj = {"type": "custom", "data": {"parentId": "a2"}, "id": "a3", "parentId": "a2"}
    raw = orjson.dumps(obj) + b"\n"
    out = commit.relink_line(raw, obj, "parentId", "c1")
    assert orjson.loads(out) == {"type": "custom", "data": {"parentId": "a2"}, "id": "a3", "parentId": "c1"}
    assert out.endswith(b"\n")


def test_a_carried_line_pointing_at_a_removed_entry_refuses_with_retry(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    append(p, line(pi("a3", "a1")))  # its parent a1 is removed by the rewrite
    with pytest.raises(FileChanged) as e:
        commit.commit(snap, [NEW], relink=commit.relink_for("pi", "a2", "c1", frozenset({"a1"})))
    assert e.value.retry and "a1" in str(e.value)
    assert open(p, "rb").read() == ORIGINAL + line(pi("a3", "a1"))
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------- backups


def test_no_backup_when_not_asked(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    done = commit.commit(snap, [NEW], backup=False)
    assert done.backup is None and leftovers(tmp_path) == [] and open(p, "rb").read() == NEW


def test_mode_is_kept(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    os.chmod(p, 0o640)
    done = commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    assert os.stat(p).st_mode & 0o777 == 0o640 and os.stat(done.backup).st_mode & 0o777 == 0o640


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_owner_is_kept_when_root_rewrites_another_users_file(tmp_path):
    """root repairing (or compacting) an agent's session: the new file and its backup keep the agent's owner
    and group, so the agent can still read its session (mode 640). Was: root:root."""
    from ctxtool.jsonl import atomic_write

    p = write(tmp_path / "s.jsonl", ORIGINAL)
    os.chown(p, 65534, 65534)
    os.chmod(p, 0o640)
    done = commit.commit(commit.snapshot(p, len(ORIGINAL)), [NEW])
    for f in (p, done.backup):
        st = os.stat(f)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o640), f
    out = write(tmp_path / "out.jsonl", ORIGINAL)
    os.chown(out, 65534, 65534)
    atomic_write(str(out), [NEW])  # -o onto an existing file, a config patch
    assert (os.stat(out).st_uid, os.stat(out).st_gid) == (65534, 65534)


# ---------------------------------------------------------------- writers that keep the old file open


def test_open_writers_sees_write_handles_only(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    st = os.stat(p)
    with open(p, "rb"):
        assert commit.open_writers(st.st_dev, st.st_ino, "s.jsonl") == []
    with open(p, "ab"):
        found = commit.open_writers(st.st_dev, st.st_ino, "s.jsonl")
    assert [w["pid"] for w in found] == [os.getpid()]


def test_a_persistent_writer_after_the_commit_is_reported_by_the_next_read(tmp_path):
    """A writer that opened the file after ctxtool's last look (``renaming``) and keeps it open."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    opened = []

    def opens(phase, path):
        if phase == "renaming":
            opened.append(open(p, "ab"))

    commit.hooks.append(opens)
    try:
        done = commit.commit(snap, [NEW], backup=False)
        handle = opened[0]
        assert [w["pid"] for w in done.writers] == [os.getpid()]
        assert done.backup and any("still has the replaced file open" in n for n in done.notices)
        assert any("still has the old copy" in n for n in commit.late_writes(p))
        handle.write(line(pi("a3", "a2")))  # nothing can bring this into the new file
        handle.flush()
    finally:
        commit.hooks.remove(opens)
        for h in opened:
            h.close()
    notes = commit.late_writes(p)
    assert len(notes) == 1 and "1 line(s)" in notes[0] and done.backup in notes[0]
    assert open(done.backup, "rb").read().endswith(line(pi("a3", "a2")))
    assert commit.clean_leftovers(p) == [] and os.path.exists(done.backup + commit.WRITERS)  # kept: it grew


# ---------------------------------------------------------------- leftovers of killed runs


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_a_dead_run_are_cleaned_and_a_live_runs_are_kept(tmp_path):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    dead, ms = dead_pid(), int(time.time() * 1000)
    tmp = write(tmp_path / f".s.jsonl.ctxtool-{dead}-{ms}.tmp", b"partial")
    never = str(tmp_path / f".s.jsonl.ctxtool-{dead}-{ms + 1}.bak")
    os.link(p, never)  # pending backup of a run killed before its rename: it still is the file
    old = write(tmp_path / f".s.jsonl.ctxtool-{dead}-{ms + 2}.bak", b"the file before a rewrite that happened\n")
    other = write(tmp_path / f".t.jsonl.ctxtool-{dead}-{ms}.tmp", b"another file's")
    lock_tmp = write(tmp_path / f".s.jsonl.lock.ctxtool-{dead}-{ms}.tmp", b'{"pid": 1}')  # a lock being taken
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        mine = write(tmp_path / f".s.jsonl.ctxtool-{live.pid}-{ms}.tmp", b"being written")
        notes = commit.clean_leftovers(p)
    finally:
        live.kill()
        live.wait()
    assert not os.path.exists(tmp) and not os.path.exists(never) and not os.path.exists(lock_tmp)
    kept = f"{os.path.realpath(p)}.bak-{dead}-{ms + 2}"
    assert open(kept, "rb").read() == b"the file before a rewrite that happened\n" and not os.path.exists(old)
    assert os.path.exists(mine) and os.path.exists(other)
    assert len(notes) == 4 and any(kept in n for n in notes)
    assert open(p, "rb").read() == ORIGINAL


# ---------------------------------------------------------------- locks


def lock_file(tmp_path, payload: bytes, age_s: float = 0.0) -> str:
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    lp = p + ".lock"
    write(lp, payload)
    if age_s:
        t = time.time() - age_s
        os.utime(lp, (t, t))
    return p


def test_a_dead_holders_lock_is_taken_over_with_a_one_line_notice(tmp_path):
    pid = dead_pid()
    p = lock_file(tmp_path, json.dumps({"pid": pid, "createdAt": "2099-01-01T00:00:00.000Z"}).encode())
    with SessionLock(p, timeout=0) as lk:
        assert "dead-pid" in lk.notice and str(pid) in lk.notice and "\n" not in lk.notice
        assert json.load(open(p + ".lock"))["pid"] == os.getpid()


def test_a_recycled_pid_is_taken_over(tmp_path):
    live = os.getppid()  # alive, but its start time is not the one recorded
    p = lock_file(tmp_path, json.dumps({"pid": live, "createdAt": "2099-01-01T00:00:00.000Z",
                                        "starttime": (process_starttime(live) or 0) + 12345}).encode())
    with SessionLock(p, timeout=0) as lk:
        assert "recycled-pid" in lk.notice


@pytest.mark.parametrize("payload", [b"", b"{not json", b'{"createdAt": "2026-01-01T00:00:00Z"}'])
def test_a_lock_without_a_pid_is_judged_by_its_mtime(tmp_path, payload):
    p = lock_file(tmp_path, payload)
    with pytest.raises(LockTimeout) as e:  # young: a writer may be filling it in
        SessionLock(p, timeout=0.1).acquire()
    assert "has no pid" in str(e.value)
    t = time.time() - GARBAGE_STALE_MS / 1000 - 2
    os.utime(p + ".lock", (t, t))
    with SessionLock(p, timeout=0) as lk:
        assert "no pid in it" in lk.notice


def test_a_live_holder_blocks_and_a_too_old_one_only_yields_to_break_stale(tmp_path):
    holder = os.getppid()
    p = lock_file(tmp_path, json.dumps({"pid": holder, "createdAt": "2099-01-01T00:00:00.000Z"}).encode())
    with pytest.raises(LockTimeout) as e:
        SessionLock(p, timeout=0.1).acquire()
    assert f"pid={holder}" in str(e.value)
    write(p + ".lock", json.dumps({"pid": holder, "createdAt": "2020-01-01T00:00:00.000Z"}).encode())
    with pytest.raises(StaleLock) as e:
        SessionLock(p, timeout=0.1).acquire()
    assert "--break-stale-lock" in str(e.value)
    with SessionLock(p, timeout=0, break_stale=True) as lk:
        assert "too-old" in lk.notice


def test_a_lock_is_put_in_place_whole(tmp_path, monkeypatch):
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    seen = []
    real_link = os.link

    def link(src, dst, *a, **k):  # the moment the lock appears, it already holds its pid
        if dst.endswith(".lock"):
            seen.append(json.loads(open(src).read())["pid"])
        return real_link(src, dst, *a, **k)

    monkeypatch.setattr(os, "link", link)
    with SessionLock(p, timeout=0):
        assert json.load(open(p + ".lock"))["pid"] == os.getpid()
        assert sorted(os.listdir(tmp_path)) == ["s.jsonl", "s.jsonl.lock"]
    assert seen == [os.getpid()] and os.listdir(tmp_path) == ["s.jsonl"]


def test_two_writes_in_one_millisecond_get_two_backup_and_temp_names(tmp_path, monkeypatch):
    """A put-back commits twice within the same millisecond: the second backup must not take
    (and the rename not overwrite) the first one's name."""
    from ctxtool import jsonl

    monkeypatch.setattr(jsonl, "timestamp_ms", lambda: 1795625856415)
    p = str(tmp_path / "s.jsonl")
    first = jsonl.backup_path(p)
    open(first, "w").close()
    second = jsonl.backup_path(p)
    assert second != first and second.endswith("-1795625856416")
    tmp = jsonl.temp_path(p, "bak")
    open(tmp, "w").close()
    assert jsonl.temp_path(p, "bak") != tmp


# ---------------------------------------------------------------- another writer at the last moment (review 2026-11-30)


def _at(phase_name, act):
    """A hook that runs ``act(path)`` once, at ``phase_name``."""
    def hook(name, path):
        if name == phase_name:
            commit.hooks.remove(hook)
            act(path)
    commit.hooks.append(hook)
    return hook


def _run_then_unhook(hook, fn):
    try:
        return fn()
    finally:
        if hook in commit.hooks:
            commit.hooks.remove(hook)


THEIRS = ORIGINAL + line(pi("z1", "a2", "the agent's own rewrite"))


@pytest.mark.parametrize("backup", [True, False])
def test_a_file_another_writer_renames_over_the_session_after_the_last_look_is_put_back(tmp_path, backup):
    """Between the last look and the rename an agent renames a new file of its own over the session (an atomic
    rewrite): the rename swaps the two, sees the file it displaced is not the one read, and swaps them back. Before,
    the agent's file was replaced unseen and gone from disk."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))

    def rewrite(path):
        write(tmp_path / "agent-tmp", THEIRS)
        os.replace(tmp_path / "agent-tmp", path)
    hook = _at("renaming", rewrite)
    with pytest.raises(FileChanged) as e:
        _run_then_unhook(hook, lambda: commit.commit(snap, [NEW], backup=backup))
    assert "replaced by another file" in str(e.value) and "nothing was written" in str(e.value)
    assert open(p, "rb").read() == THEIRS
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("when,how", [("renaming", "shorter"), ("tmp-written", "an early line edited, one appended")])
def test_a_file_another_writer_rewrites_in_place_is_refused_and_left_as_it_wrote_it(tmp_path, when, how):
    """An agent that rewrites the session in place (a non-atomic writeFileSync): shorter after the last look, or with
    a line far from the end edited at the same length and a line appended (which only the tail's digest passed as an
    append before: the edit went back to what was read). Refused; the file is the agent's."""
    body = b"".join(line(pi(f"m{i}", f"m{i - 1}" if i else None, "y" * 200)) for i in range(400))  # > 64 KiB
    head = line({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"})
    p = write(tmp_path / "s.jsonl", head + body)
    snap = commit.snapshot(p, len(head + body))
    if how == "shorter":
        theirs = head + body[:1000].rsplit(b"\n", 1)[0] + b"\n"
    else:
        theirs = head + body.replace(b'"m1"', b'"q1"', 1) + line(pi("n1", "m399"))
    hook = _at(when, lambda path: write(path, theirs))  # (open "wb": truncated, then written)
    with pytest.raises(FileChanged) as e:
        _run_then_unhook(hook, lambda: commit.commit(snap, [head + body + line(pi("c1", "m399"))]))
    assert "nothing was written" in str(e.value)
    assert open(p, "rb").read() == theirs
    assert leftovers(tmp_path) == []


def test_the_lease_probe_cannot_end_the_process_with_sigio(tmp_path):
    """The kernel sends a lease's holder SIGIO when another process opens the file for writing; its default action
    ends the process (review: ctxtool killed with no word between the probe's two calls). After a probe, SIGIO is
    ignored."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    code = ("import os, signal, sys\nfrom ctxtool import commit\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "commit._lease_free(fd)\nos.kill(os.getpid(), signal.SIGIO)\nprint('alive')\n")
    r = subprocess.run([sys.executable, "-c", code, p], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "alive", (r.returncode, r.stderr[-300:])


def test_a_holder_of_a_linked_session_is_named_by_the_real_files_name(tmp_path):
    """``wait_unheld`` through a symbolic link: /proc names the real file, so the holder is found by that name (it was
    reported as "a process of another user")."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    link = tmp_path / "link.jsonl"
    os.symlink(p, link)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nf = open(sys.argv[1], 'ab')\nprint('ready', "
                               "flush=True)\ntime.sleep(30)\n", p], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(commit.HeldOpen) as e:
            commit.wait_unheld(str(link), 0.1)
        assert [w["pid"] for w in e.value.holders] == [holder.pid]
    finally:
        holder.kill()
        holder.wait()


def test_putting_late_lines_in_place_does_not_take_this_process_for_another_writer(tmp_path):
    """A writer whose open came just before the rename writes its next line to the old file, its line after that to
    the new one: the file is written once more to put them in order. That second write's watch took this process's
    own handle on the first new file for another writer: it waited the whole watch and named ctxtool's own pid."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    late, after = line(pi("l1", "c1", "late")), line(pi("l2", "l1", "next"))
    held = {}

    def hook(name, path):
        if name == "renaming" and "fd" not in held:
            held["fd"] = os.open(path, os.O_WRONLY | os.O_APPEND)  # the agent's open, just before the rename
        elif name == "after-rename" and "done" not in held:
            held["done"] = True
            append(path, after)  # its next line, to the new file
            os.write(held["fd"], late)  # the line it had begun, to the old one
            os.close(held["fd"])
    commit.hooks.append(hook)
    try:
        res = commit.commit(snap, [NEW], backup=False)
    finally:
        commit.hooks.remove(hook)
    assert open(p, "rb").read() == NEW + late + after  # in order
    me = f"pid {os.getpid()} "
    assert not [n for n in res.notices if me in n or "still has the replaced file open" in n], res.notices
    for n in os.listdir(tmp_path):
        if n.endswith(commit.WRITERS):
            assert json.load(open(tmp_path / n))["writers"] == []


LATE = line(pi("l9", "c1", "late"))


def _writes_late_then(then):
    """Hooks: a writer opens the path just before the rename and, after it, writes LATE to the old file; then
    ``then()`` (an interrupt)."""
    held = {}

    def hook(name, path):
        if name == "renaming" and "fd" not in held:
            held["fd"] = os.open(path, os.O_WRONLY | os.O_APPEND)
        elif name == "after-rename" and "done" not in held:
            held["done"] = True
            os.write(held["fd"], LATE)
            os.close(held["fd"])
            then()
    return hook


def test_an_error_while_the_old_file_is_watched_keeps_it_and_the_next_read_reports_the_late_line(tmp_path):
    """Stopped by an error after the rename, while the old file is watched: a line that reached it is in no other
    place. The old file is kept as the backup with its record, and the next read says the line is only there (it said
    nothing). (Ctrl-C and SIGTERM wait for the watch's end there: tests/test_interrupts.py.)"""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))

    def interrupt():
        raise KeyboardInterrupt
    hook = _writes_late_then(interrupt)
    commit.hooks.append(hook)
    try:
        with pytest.raises(KeyboardInterrupt):
            commit.commit(snap, [NEW], backup=False)
    finally:
        commit.hooks.remove(hook)
    assert open(p, "rb").read() == NEW
    commit._listings.clear()
    said = commit.late_writes(p)
    assert len(said) == 1 and "1 line(s)" in said[0], said
    backup = said[0].rsplit("only in ", 1)[1]
    assert open(backup, "rb").read() == ORIGINAL + LATE
    assert [n for n in os.listdir(tmp_path) if ".ctxtool-" in n] == []


_KILLED = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from tests.test_commit_protocol import ORIGINAL, NEW, _writes_late_then
from ctxtool import commit
snap = commit.snapshot(sys.argv[1], len(ORIGINAL))
commit.hooks.append(_writes_late_then(lambda: os.kill(os.getpid(), signal.SIGKILL)))
commit.commit(snap, [NEW], backup=False)
"""


def test_a_run_killed_while_the_old_file_is_watched_leaves_what_the_next_run_reports(tmp_path):
    """SIGKILL after the rename: the next run names the old file as a backup and keeps, beside it, how far the new
    file has its lines: the late line is reported as only there."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", _KILLED, p, root], capture_output=True, text=True, timeout=60)
    assert r.returncode == -9, r.stderr[-500:]
    assert open(p, "rb").read() == NEW
    commit._listings.clear()
    notices = commit.clean_leftovers(p)
    assert any("kept the file from before an interrupted ctxtool run" in n for n in notices), notices
    said = commit.late_writes(p)
    assert len(said) == 1 and "1 line(s)" in said[0], said
    assert [n for n in os.listdir(tmp_path) if ".ctxtool-" in n] == []


def test_where_the_swap_back_fails_the_other_writers_file_is_kept_and_named(tmp_path, monkeypatch):
    """The exchange displaced another writer's file and the swap back fails: that file stays where the exchange put
    it, named in the error, never discarded as this write's temporary file."""
    p = write(tmp_path / "s.jsonl", ORIGINAL)
    snap = commit.snapshot(p, len(ORIGINAL))
    real = commit._exchange
    calls = []

    def once(a, b):
        calls.append(a)
        return real(a, b) if len(calls) == 1 else False
    monkeypatch.setattr(commit, "_exchange", once)

    def rewrite(path):
        write(tmp_path / "agent-tmp", THEIRS)
        os.replace(tmp_path / "agent-tmp", path)
    hook = _at("renaming", rewrite)
    with pytest.raises(commit.WriteError) as e:
        _run_then_unhook(hook, lambda: commit.commit(snap, [NEW]))
    kept = calls[0]
    assert f"its file is kept as {kept}" in str(e.value)
    assert open(kept, "rb").read() == THEIRS and open(p, "rb").read() == NEW
