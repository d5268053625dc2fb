"""A process that keeps the session file open for writing (Codex holds its rollout open for as long as it runs) would
write on into the file a rewrite replaced: every line after the rename lost to the session. ``repair`` and ``compact``
wait for such a writer up to the lock timeout and then refuse (``HeldOpen``, exit 3, nothing written); an agent that
opens the file for each line (pi, Claude Code) is no such writer. The real Codex CLI is the judge of the last test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from ctxtool import commit, compact_writer
from ctxtool.cli import cli
from ctxtool.compact_writer import Options, compact_file
from ctxtool.errors import HeldOpen
from ctxtool.repair import repair_file
from ctxtool.summarize import ExtractiveSummarizer
from tests.support.codex_corrupt import write as codex_damaged
from tests.test_compact_support import make_session

HOLDER = r"""
import sys, time
path, hold, line = sys.argv[1], float(sys.argv[2]), sys.argv[3].encode()
with open(path, "ab") as f:
    print("open", flush=True)
    if line:
        f.write(line + b"\n"); f.flush()
    time.sleep(hold)
"""


class Holder:
    """Another process that opens ``path`` for appending, writes ``line`` (if any) and keeps the handle ``hold`` s."""

    def __init__(self, path: str, hold: float, line: str = ""):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, path, str(hold), line], stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "open"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def broken(tmp_path, fmt="pi") -> str:
    p = make_session(tmp_path, fmt, 8, size=200)
    with open(p, "ab") as f:
        f.write(b'{"type":"message","id":"torn","mess\n')
    return p


def left_beside(tmp_path) -> list[str]:
    return [n for n in os.listdir(tmp_path) if ".ctxtool-" in n or ".bak-" in n or n.endswith(".lock")]


def test_repair_refuses_a_file_another_process_keeps_open_for_writing(tmp_path):
    p = broken(tmp_path)
    before = open(p, "rb").read()
    with Holder(p, 30) as h:
        r = CliRunner().invoke(cli, ["repair", "--lock-timeout", "0.3", p])
        rj = CliRunner().invoke(cli, ["repair", "--json", "--lock-timeout", "0", p])
    assert r.exit_code == 3, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {p}: pid {h.proc.pid} (python")
    assert "keeps the file open for writing (waited 0.3 s)" in lines[0] and "nothing was written" in lines[0]
    assert open(p, "rb").read() == before and left_beside(tmp_path) == []
    assert rj.exit_code == 3 and f"pid {h.proc.pid}" in json.loads(rj.output)["failures"][0]["error"]


def test_a_healthy_file_held_open_is_left_alone_without_waiting(tmp_path):
    p = make_session(tmp_path, "pi", 8, size=200)
    with Holder(p, 30):
        t0 = time.monotonic()
        r = CliRunner().invoke(cli, ["repair", "--lock-timeout", "20", p])
        took = time.monotonic() - t0
    assert r.exit_code == 0 and " ok " in r.output and "repaired" not in r.output, r.output
    assert took < 10  # nothing to write: the writer was never waited for (20 s)


def test_repair_waits_for_the_writer_to_let_go_and_keeps_what_it_wrote(tmp_path):
    p = broken(tmp_path)
    last = json.loads(open(p, "rb").read().splitlines()[-2])["id"]
    line = json.dumps({"type": "message", "id": "held0001", "parentId": last, "timestamp": "2026-03-01T11:00:00.000Z",
                       "message": {"role": "user", "content": [{"type": "text", "text": "written while held"}],
                                   "timestamp": 1}}, separators=(",", ":"))
    with Holder(p, 0.6, line):
        report = repair_file(p, lock_timeout=20)
    assert report.written and any(c.kind == "bad-line" for c in report.changes)
    ids = [json.loads(x).get("id") for x in open(p, "rb").read().splitlines()]
    assert ids[-1] == "held0001" and "torn" not in open(p, "rb").read().decode()


def test_compact_refuses_a_file_held_open_before_it_summarizes(tmp_path, monkeypatch):
    p = make_session(tmp_path, "pi", 10, size=300)
    before = open(p, "rb").read()
    calls = []
    real = compact_writer.summarize_plan
    monkeypatch.setattr(compact_writer, "summarize_plan", lambda *a, **k: calls.append(1) or real(*a, **k))
    with Holder(p, 30) as h:
        res = compact_file(p, ExtractiveSummarizer(), Options(keep_recent_tokens=600, lock_timeout=0.2))
    assert res.status == "failed" and f"pid {h.proc.pid}" in res.error and "keeps the file open" in res.error
    assert calls == [] and open(p, "rb").read() == before and left_beside(tmp_path) == []
    res = compact_file(p, ExtractiveSummarizer(), Options(keep_recent_tokens=600, lock_timeout=0.2))
    assert res.status == "compacted" and calls == [1]  # (the same run, the writer gone)


def test_a_writer_that_opens_the_file_for_each_line_is_never_refused(tmp_path):
    """pi and Claude Code open the file for each line: an appender doing that every millisecond through five repairs."""
    appender = subprocess.Popen([sys.executable, "-c", r"""
import sys, time
path = sys.argv[1]
end = time.monotonic() + 30
while time.monotonic() < end:
    with open(path, "ab") as f:
        f.write(b'{"type":"custom","customType":"x","id":"c%d","parentId":null,"timestamp":"2026-03-01T11:00:00.000Z"}\n'
                % int(time.monotonic() * 1e6))
    time.sleep(0.001)
""", str(tmp_path / "s.jsonl")])
    try:
        for k in range(5):
            os.makedirs(tmp_path / f"r{k}")
            os.replace(broken(tmp_path / f"r{k}"), tmp_path / "s.jsonl")
            report = repair_file(str(tmp_path / "s.jsonl"), lock_timeout=0)
            assert report.written
    finally:
        appender.kill()
        appender.wait()


def test_held_open_tells_a_kept_handle_from_one_line_writes(tmp_path):
    p = str(tmp_path / "s.jsonl")
    open(p, "wb").write(b"{}\n")
    fd = os.open(p, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        assert commit.held_open(fd, st, "s.jsonl") == []
        with open(p, "ab") as mine:
            assert [w["pid"] for w in commit.held_open(fd, st, "s.jsonl")] == [os.getpid()]
            assert commit.held_open(fd, st, "s.jsonl", (mine.fileno(),)) == []  # this process's own descriptor
    finally:
        os.close(fd)


@pytest.mark.codex
def test_repair_while_codex_runs_waits_for_it_and_keeps_its_turn(tmp_path):
    """The real Codex CLI resumes a damaged rollout and holds it open while its model answers: ``repair`` with a short
    timeout refuses, naming codex, and leaves the file as Codex writes it; with a long one it waits until Codex exits,
    and the repaired file has Codex's new turn and resumes in Codex with the whole history."""
    from tests.support.codex_agent import CodexSandbox, compare, resume_payload
    from tests.support.fake_openai import FakeOpenAI, message

    src = codex_damaged(tmp_path, "torn_last_line")
    with CodexSandbox() as box, FakeOpenAI() as srv:
        sid = box.install(src)
        path = box.sessions()[0]
        srv.script = [("slow", 2.0, [message("ok")])]  # the model takes 2 s to answer
        box.write_config(srv.base_url, "")
        proc = subprocess.Popen(box.command("a new turn while ctxtool runs", resume=sid), cwd=box.cwd, env=box.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            st = os.stat(path)
            deadline = time.monotonic() + 60
            while not commit.open_writers(st.st_dev, st.st_ino, os.path.basename(path)):
                assert time.monotonic() < deadline and proc.poll() is None, "codex never opened its rollout"
                time.sleep(0.05)
            with pytest.raises(HeldOpen) as err:
                repair_file(path, lock_timeout=0.2)
            assert "(codex" in str(err.value) and [w["name"] for w in err.value.holders] == ["codex"]
            report = repair_file(path, lock_timeout=80)  # waits for Codex to answer and exit
            assert proc.wait(timeout=5) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert report.written and open(report.backup, "rb").read().startswith(open(src, "rb").read().rsplit(b"\n", 2)[0])
        text = open(path, "rb").read().decode()
        assert "a new turn while ctxtool runs" in text  # Codex's turn, written before the rewrite, is kept
        kept = str(tmp_path / "repaired.jsonl")
        shutil.copy(path, kept)
    from ctxtool import codex_rules
    from ctxtool.transcript import scan

    sent = resume_payload(kept)["history"]
    assert compare([it for it, _ in codex_rules.sent_items(scan(kept))], sent) == []
    assert any("a new turn while ctxtool runs" in json.dumps(it) for it in sent)
