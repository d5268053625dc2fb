"""Repair: golden cases, byte preservation, idempotence, validity, safety of writes."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from ctxtool.errors import InputError, LockTimeout, StaleLock
from ctxtool.repair import plan_repair, repair_file
from ctxtool.transcript import scan
from ctxtool.validate import errors, validate_entries

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "repair")
CASES = sorted(n[:-6] for n in os.listdir(FIXTURES) if n.endswith(".jsonl") and ".expected" not in n)
BYTE_CHANGING = {"rewritten", "relinked", "dropped", "inserted", "removed", "added"}


def fixture(tmp_path, case):
    src = os.path.join(FIXTURES, case + ".jsonl")
    dst = tmp_path / (case + ".jsonl")
    shutil.copy(src, dst)
    return str(dst)


def lines_of(path):
    with open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


@pytest.mark.parametrize("case", CASES)
def test_golden(tmp_path, case):
    path = fixture(tmp_path, case)
    out = str(tmp_path / "out.jsonl")
    report = repair_file(path, output=out)
    expected_out = os.path.join(FIXTURES, case + ".expected.jsonl")
    got = open(out, "rb").read() if report.written else open(path, "rb").read()
    assert got == open(expected_out, "rb").read()
    with open(os.path.join(FIXTURES, case + ".expected-changes.json"), encoding="utf-8") as f:
        expected_changes = json.load(f)
    assert [{"kind": c.kind, "action": c.action, "line": c.line, "id": c.id} for c in report.changes] == expected_changes
    assert errors(report.after) == [], report.after


@pytest.mark.parametrize("case", CASES)
def test_repair_is_idempotent_and_valid(tmp_path, case):
    path = fixture(tmp_path, case)
    repair_file(path, backup=False)
    second = repair_file(path, check=True)
    assert second.changes == []
    assert errors(second.before) == []


@pytest.mark.parametrize("case", CASES)
def test_untouched_lines_are_byte_identical_and_drops_are_listed(tmp_path, case):
    path = fixture(tmp_path, case)
    original = lines_of(path)
    report = repair_file(path, output=str(tmp_path / "out.jsonl"))
    if not report.written:
        assert report.changes == []
        return
    out = lines_of(str(tmp_path / "out.jsonl"))
    touched = {c.line for c in report.changes if c.action in BYTE_CHANGING and c.line}
    out_set = set(out)
    for no, raw in enumerate(original, 1):
        if no in touched:
            continue
        # a last line without newline gets one; the BOM is stripped from line 1
        candidates = {raw, raw + b"\n"} if not raw.endswith(b"\n") else {raw}
        assert candidates & out_set, f"line {no} changed but no change names it"
    dropped_lines = {c.line for c in report.changes if c.action == "dropped"}
    for no, raw in enumerate(original, 1):
        if raw not in out_set and raw + b"\n" not in out_set:
            assert no in touched, f"line {no} vanished without being listed"
    for no in dropped_lines:  # gone, or as many copies fewer (a line written twice, one copy dropped)
        raw = original[no - 1]
        gone = sum(1 for k in dropped_lines if original[k - 1] == raw)
        assert out.count(raw) + out.count(raw + b"\n") <= original.count(raw) - gone, f"line {no} dropped but still there"


def test_check_mode_writes_nothing(tmp_path):
    path = fixture(tmp_path, "pi-missing-result")
    before = open(path, "rb").read()
    mtime = os.stat(path).st_mtime_ns
    report = repair_file(path, check=True)
    assert report.changed and not report.written
    assert open(path, "rb").read() == before
    assert os.stat(path).st_mtime_ns == mtime
    assert [p for p in os.listdir(tmp_path) if p != os.path.basename(path)] == []


def test_in_place_keeps_backup_and_mode(tmp_path):
    path = fixture(tmp_path, "pi-torn-tail")
    os.chmod(path, 0o640)
    original = open(path, "rb").read()
    report = repair_file(path)
    assert report.written and report.backup
    assert open(report.backup, "rb").read() == original
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.stat(report.backup).st_mode & 0o777 == 0o640
    assert not os.path.exists(path + ".lock")
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_no_backup_option(tmp_path):
    path = fixture(tmp_path, "pi-torn-tail")
    report = repair_file(path, backup=False)
    assert report.written and report.backup is None
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(path)]


@pytest.fixture
def live_pid():
    """The pid of a running process (a lock holder that is alive)."""
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    yield holder.pid
    holder.kill()
    holder.wait()


def test_live_lock_times_out_naming_the_holder(tmp_path, live_pid):
    path = fixture(tmp_path, "pi-torn-tail")
    with open(path + ".lock", "w") as f:
        json.dump({"pid": live_pid, "createdAt": "2099-01-01T00:00:00.000Z"}, f)
    before = open(path, "rb").read()
    with pytest.raises(LockTimeout) as e:
        repair_file(path, lock_timeout=0.3)
    assert f"pid={live_pid}" in str(e.value) and "session file locked (timeout 300ms)" in str(e.value)
    assert open(path, "rb").read() == before
    assert os.path.exists(path + ".lock")


def test_lock_of_a_dead_holder_is_taken_over_with_a_notice(tmp_path):
    path = fixture(tmp_path, "pi-torn-tail")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(path + ".lock", "w") as f:
        json.dump({"pid": dead.pid, "createdAt": "2026-01-01T00:00:00.000Z"}, f)
    report = repair_file(path)
    assert report.written and "dead-pid" in report.lock_broken and f"holder pid {dead.pid}" in report.lock_broken
    assert report.lock_broken in report.notices
    assert not os.path.exists(path + ".lock")


def test_too_old_lock_of_a_live_holder_is_only_removed_when_asked(tmp_path, live_pid):
    path = fixture(tmp_path, "pi-torn-tail")
    with open(path + ".lock", "w") as f:
        json.dump({"pid": live_pid, "createdAt": "2026-01-01T00:00:00.000Z"}, f)
    with pytest.raises(StaleLock) as e:
        repair_file(path, lock_timeout=0.2)
    assert f"live pid={live_pid}" in str(e.value) and "--break-stale-lock" in str(e.value)
    assert os.path.exists(path + ".lock")
    report = repair_file(path, break_stale_lock=True)
    assert report.written and "too-old" in report.lock_broken
    assert not os.path.exists(path + ".lock")


def test_lock_file_is_openclaw_shaped_while_writing(tmp_path, monkeypatch):
    import ctxtool.repair as mod

    path = fixture(tmp_path, "pi-torn-tail")
    seen = {}
    real = mod.commit.commit

    def spy(snap, chunks, **kw):
        with open(path + ".lock", encoding="utf-8") as f:
            seen.update(json.load(f))
        return real(snap, chunks, **kw)

    monkeypatch.setattr(mod.commit, "commit", spy)
    repair_file(path)
    assert seen["pid"] == os.getpid() and seen["createdAt"].endswith("Z")


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty session file"),
        (b"\n\n  \n", "empty session file"),
        (b"\x00\x01\x02\x03" * 100, "binary file"),
        (b"not json at all\nstill not\n", "no parseable JSON lines"),
        (b'{"a": 1}\n{"b": 2}\n', "cannot tell the transcript format"),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path, content, reason):
    p = tmp_path / "x.jsonl"
    p.write_bytes(content)
    with pytest.raises(InputError) as e:
        repair_file(str(p), check=True)
    assert reason in str(e.value) and str(p) in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        repair_file(str(tmp_path / "nope.jsonl"))


def test_crlf_bom_blank_lines_nul_and_invalid_utf8(tmp_path):
    src = open(os.path.join(FIXTURES, "pi-clean.jsonl"), "rb").read().splitlines()
    body = [b"\xef\xbb\xbf" + src[0]] + src[1:5] + [b"", b'{"type":"message","id":"zz\x00zz"}', b'{"type":"message","text":"\xff\xfe"}'] + src[5:]
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\r\n".join(body) + b"\r\n")
    t = scan(str(p))
    reasons = {b.lineno: b.reason for b in t.bad}
    assert reasons[6] == "blank line"
    assert reasons[7] == "NUL bytes in line"
    assert 8 not in reasons  # bytes that are not UTF-8 are read as pi (Node) reads them: U+FFFD
    assert next(t.load(e) for e in t.entries if e.lineno == 8)["text"] == "\ufffd\ufffd"
    report = repair_file(str(p), backup=False)
    kinds = sorted(c.kind for c in report.changes)
    assert kinds == ["bad-line", "blank-line", "bom", "malformed-entry"]  # line 8: a message entry with no message
    out = p.read_bytes()
    assert not out.startswith(b"\xef\xbb\xbf")
    assert out.count(b"\r\n") == len(src)  # CRLF kept on every surviving line
    assert repair_file(str(p), check=True).changes == []


def test_huge_single_line_is_read(tmp_path):
    src = open(os.path.join(FIXTURES, "pi-clean.jsonl"), "rb").read().splitlines()
    big = {"type": "message", "id": "f0000001", "parentId": "a1000009", "timestamp": "2026-04-17T02:40:00.000Z",
           "message": {"role": "user", "content": [{"type": "text", "text": "x" * (40 * 1024 * 1024)}], "timestamp": 1}}
    p = tmp_path / "big.jsonl"
    p.write_bytes(b"\n".join(src) + b"\n" + json.dumps(big).encode() + b"\n")
    t = scan(str(p))
    assert t.entries[-1].chars == 40 * 1024 * 1024
    assert t.entries[-1].obj is None  # released after indexing


def test_plan_uses_index_not_objects(tmp_path):
    path = fixture(tmp_path, "pi-separated-orphan")
    t = scan(path)
    assert all(e.obj is None and e.blocks is None for e in t.entries)
    plan = plan_repair(t)
    assert errors(validate_entries("pi", plan.final_entries)) == []


def test_trailing_assistant_is_trimmed_only_when_asked(tmp_path):
    path = fixture(tmp_path, "pi-clean")
    # pi-clean ends with a cache-ttl custom entry: OpenClaw's trim stops there, so does ours
    assert repair_file(path, check=True, trim_trailing=True).changes == []
    lines = open(path, "rb").read().splitlines(keepends=True)
    with open(path, "wb") as f:
        f.writelines(lines[:-1])  # now the last entry is the assistant reply
    assert repair_file(path, check=True).changes == []
    report = repair_file(path, trim_trailing=True, backup=False)
    assert [(c.kind, c.action, c.line) for c in report.changes] == [("trailing-assistant", "dropped", 9)]
    assert open(path, "rb").read() == b"".join(lines[:8])


def test_valid_json_that_orjson_refuses_is_kept(tmp_path):
    """JSON.parse accepts 1e400 and lone surrogate escapes; such lines must survive repair."""
    src = open(os.path.join(FIXTURES, "pi-missing-result.jsonl"), "rb").read().splitlines(keepends=True)
    odd = (b'{"type":"custom","id":"e0000001","parentId":"a1000005","timestamp":"2026-04-17T02:39:44.550Z",'
           b'"customType":"metrics","data":{"huge":1e400,"note":"\\ud800 lone surrogate"}}\n')
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"".join(src[:6]) + odd + b"".join(src[6:]))
    t = scan(str(p))
    assert t.bad == []
    report = repair_file(str(p), backup=False)
    assert "bad-line" not in {c.kind for c in report.changes}
    assert odd in p.read_bytes().splitlines(keepends=True)


def test_symlinked_session_is_repaired_at_its_target(tmp_path):
    real_dir = tmp_path / "store"
    real_dir.mkdir()
    real = fixture(real_dir, "pi-torn-tail")
    link = tmp_path / "link.jsonl"
    os.symlink(real, link)
    report = repair_file(str(link))
    assert report.written and report.path == str(link)
    assert os.path.islink(link)
    assert repair_file(real, check=True).changes == []
    assert report.backup.startswith(real + ".bak-")


def test_result_without_tool_name_takes_its_calls_name(tmp_path):
    """OpenClaw's pairing repair fills an empty toolName from the call (reference §3.3)."""
    path = fixture(tmp_path, "pi-clean")
    data = open(path, "rb").read().replace(b'"toolName":"read","content":[{"type":"text","text":"test:', b'"toolName":" ","content":[{"type":"text","text":"test:')
    open(path, "wb").write(data)
    report = repair_file(path, backup=False)
    assert [(c.kind, c.line, c.id) for c in report.changes] == [("result-name", 8, "toolu_01B")]
    assert b'"toolCallId":"toolu_01B","toolName":"read"' in open(path, "rb").read()
    assert repair_file(path, check=True).changes == []
