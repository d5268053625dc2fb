"""ctxtool.checkpoint: the skill's .context-checkpoint.md from a session (library and CLI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading

import pytest
from click.testing import CliRunner

from ctxtool import checkpoint as ckpt
from ctxtool import jsonl
from ctxtool.cli import cli
from ctxtool.errors import InputError, WriteError

ROOT = os.path.join(os.path.dirname(__file__), "..")
SESSIONS = sorted(
    [os.path.join(ROOT, "fixtures", "demo", f) for f in os.listdir(os.path.join(ROOT, "fixtures", "demo")) if f.endswith(".jsonl")]
    + [os.path.join(ROOT, "fixtures", "claude-recorded", f) for f in ("interrupted.jsonl", "parallel.jsonl", "compacted.jsonl")]
    + [os.path.join(ROOT, "fixtures", "compact", f) for f in ("pi-basic.input.jsonl", "claude-basic.input.jsonl")])
EDITS = {"edit", "write", "multiedit", "multi_edit", "edit_file", "write_file", "apply_patch", "str_replace_editor", "notebookedit"}


def _raw_edits(path):
    """Independently of ctxtool: (paths an edit/write call changed with a result that is not an error, last user text)."""
    calls, ok, last_user = {}, set(), None
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            m = o.get("message") if isinstance(o.get("message"), dict) else o
            role, content = m.get("role"), m.get("content")
            if role == "toolResult":
                if not m.get("isError") and m.get("toolCallId") in calls:
                    ok.add(calls[m["toolCallId"]])
                continue
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            if not isinstance(content, list):
                continue
            texts = []
            for b in content:
                if not isinstance(b, dict):
                    continue
                if b.get("type") in ("toolCall", "tool_use") and str(b.get("name", "")).lower() in EDITS:
                    args = b.get("arguments") or b.get("input") or {}
                    p = args.get("path") or args.get("file_path") or args.get("filePath")
                    if p:
                        calls[b.get("id")] = p
                elif b.get("type") == "tool_result" and not b.get("is_error") and b.get("tool_use_id") in calls:
                    ok.add(calls[b["tool_use_id"]])
                elif b.get("type") == "text" and role == "user":
                    texts.append(b.get("text", ""))
            if role == "user" and "".join(texts).strip() and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                last_user = "\n".join(texts).strip()
    return ok, last_user


def _section(text, heading):
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1)


@pytest.mark.parametrize("path", SESSIONS, ids=os.path.basename)
def test_every_changed_file_is_listed_and_the_last_request_quoted(path, tmp_path):
    r = ckpt.build(path, output=str(tmp_path / "ckpt.md"))
    text = (tmp_path / "ckpt.md").read_text(encoding="utf-8")
    assert r.status == "written" and ckpt.has_sections(text)
    changed, last_user = _raw_edits(path)
    files = _section(text, "Files Changed")
    for p in changed:
        assert f"`{p}`" in files, p
    if last_user:
        first = next(line for line in last_user.splitlines() if line.strip())
        assert "> " + first.strip()[:80] in _section(text, "Current Task")


def test_demo_sessions_have_edits_to_list():
    changed = set()
    for p in SESSIONS:
        changed |= _raw_edits(p)[0]
    assert len(changed) >= 20  # the check above is not vacuous


def test_extractive_checkpoint_is_deterministic_and_names_failures(tmp_path):
    path = os.path.join(ROOT, "fixtures", "demo", "claude-code-interrupted.jsonl")
    a = ckpt.build(path, output=str(tmp_path / "a.md"), dry_run=True).text
    b = ckpt.build(path, output=str(tmp_path / "b.md"), dry_run=True).text
    assert a == b
    assert "`pytest -q` (exit 1" in _section(a, "Key State")
    assert "Failed edit: `/home/dev/projects/clawd/tests/agent_parse.py`" in a
    assert not (tmp_path / "a.md").exists()  # dry run


def test_if_over_writes_nothing_below_the_threshold(tmp_path):
    path = os.path.join(ROOT, "fixtures", "demo", "messages-export.jsonl")  # 24% of 200K
    target = tmp_path / "c.md"
    r = ckpt.build(path, output=str(target), if_over=0.75)
    assert r.status == "skipped" and not target.exists() and not os.listdir(tmp_path)
    r = ckpt.build(path, output=str(target), if_over=0.75, window=50_000)  # 97% of a 50K window
    assert r.status == "written" and target.exists()


def test_written_to_the_recorded_workspace_and_carried_forward(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    src = os.path.join(ROOT, "fixtures", "compact", "pi-basic.input.jsonl")
    lines = open(src, encoding="utf-8").read().splitlines()
    head = json.loads(lines[0])
    head["cwd"] = str(ws)
    session = tmp_path / "s.jsonl"
    session.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n", encoding="utf-8")
    r = ckpt.build(str(session))
    assert r.target == str(ws / ckpt.NAME)
    first = (ws / ckpt.NAME).read_text(encoding="utf-8")
    r = ckpt.build(str(session))
    second = (ws / ckpt.NAME).read_text(encoding="utf-8")
    assert "Carried forward from the previous checkpoint:" in second
    assert second.count("Carried forward from the") == 1  # the previous one's own carried block is not nested
    assert "> ## Current Task" in second and first != second
    head["cwd"] = str(tmp_path / "gone")
    session.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="-o"):
        ckpt.build(str(session))
    # a dry run prints it all the same (it needs no place to write it), and says what a real run would need
    r = ckpt.build(str(session), dry_run=True)
    assert r.status == "dry-run" and r.target is None and "-o" in r.reason and r.text.startswith("# Context Checkpoint")
    out = CliRunner().invoke(cli, ["checkpoint", "-n", str(session)])
    assert out.exit_code == 0 and out.stdout == r.text
    assert out.stderr.strip() == f"note: {session}: the session's workspace {tmp_path / 'gone'} does not exist here: name the checkpoint file with -o"
    assert not os.path.exists(tmp_path / "gone")


def test_write_is_atomic_a_failure_leaves_the_old_checkpoint(tmp_path, monkeypatch):
    target = tmp_path / ckpt.NAME
    ckpt.write(str(target), "# old\n")

    def broken(path, chunks):
        def gen():
            yield b"# new, half"
            raise OSError(28, "No space left on device")
        return real(path, gen())

    real = jsonl.write_temp
    monkeypatch.setattr(jsonl, "write_temp", broken)
    with pytest.raises((WriteError, OSError)):
        ckpt.write(str(target), "# new\n" * 1000)
    assert target.read_text() == "# old\n"
    assert os.listdir(tmp_path) == [ckpt.NAME]  # no temporary file left behind


def test_readers_never_see_half_a_checkpoint(tmp_path):
    target = tmp_path / ckpt.NAME
    texts = [f"# v{i}\n" + ("x" * 200_000) + "\nend\n" for i in range(2)]
    ckpt.write(str(target), texts[0])
    seen, stop = set(), threading.Event()

    def reader():
        while not stop.is_set():
            seen.add(target.read_text())

    t = threading.Thread(target=reader)
    t.start()
    for i in range(30):
        ckpt.write(str(target), texts[i % 2])
    stop.set()
    t.join()
    assert seen <= set(texts)


def test_llm_summarizer_and_its_fallback(tmp_path):
    path = os.path.join(ROOT, "fixtures", "demo", "messages-export.jsonl")
    good = tmp_path / "good.md"
    good.write_text("# Context Checkpoint\n\n## Current Task\nx\n## Key State\nx\n## Decisions Made This Session\n1. x\n"
                    "## Files Changed\n- x\n## Next Steps\n- x\n", encoding="utf-8")
    out = tmp_path / "out.md"
    r = CliRunner().invoke(cli, ["checkpoint", "--json", "--summarizer", "command", "--summarizer-command",
                                 f"cat > /dev/null; cat {good}", "-o", str(out), path])
    assert r.exit_code == 0, r.output
    assert out.read_text(encoding="utf-8") == good.read_text(encoding="utf-8")
    r = CliRunner().invoke(cli, ["checkpoint", "--json", "--summarizer", "command", "--summarizer-command",
                                 "cat > /dev/null; echo not a checkpoint", "-o", str(out), path])
    res = json.loads(r.output)["results"][0]
    assert res["fallback"] == "extractive" and "five sections" in res["reason"]
    assert "Written by `ctxtool checkpoint` (extractive)" in out.read_text(encoding="utf-8")


def test_cli_read_clear_and_batch(tmp_path):
    target = tmp_path / "c.md"
    path = os.path.join(ROOT, "fixtures", "demo", "messages-export.jsonl")
    run = lambda *a: CliRunner().invoke(cli, ["checkpoint", *map(str, a)])  # noqa: E731
    r = run("--read", "-o", target)
    assert r.exit_code == 3 and "no checkpoint" in r.output
    assert run("-o", target, path).exit_code == 0
    r = run("--read", "-o", target)
    assert r.exit_code == 0 and r.output == target.read_text(encoding="utf-8")
    r = run("--clear", "-o", target)
    assert r.exit_code == 0 and not target.exists()
    d = tmp_path / "many"
    d.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        shutil.copy(path, d / name)
    r = run("--json", d)  # Messages JSONL records no workspace: each fails on its own, one line each
    out = json.loads(r.output)
    assert r.exit_code == 3 and len(out["failures"]) == 2 and all("-o" in f["message"] for f in out["failures"])
    assert run("-o", target, d).exit_code == 2  # one -o for several sessions


def test_a_session_or_a_file_that_is_no_checkpoint_is_never_written_over_nor_removed(tmp_path):
    """-o naming the session itself (or a link to it), or another file that holds JSON or binary bytes:
    refused with one line naming it, the file unchanged; a Markdown checkpoint is written and removed."""
    src = os.path.join(ROOT, "fixtures", "demo", "messages-export.jsonl")
    session, other, binary = tmp_path / "s.jsonl", tmp_path / "other.jsonl", tmp_path / "tool.bin"
    shutil.copy(src, session)
    shutil.copy(src, other)
    binary.write_bytes(b"\x7fELF\x00\x01binary")
    (tmp_path / "link.md").symlink_to(session)
    before = {p: p.read_bytes() for p in (session, other, binary)}
    run = lambda *a: CliRunner().invoke(cli, ["checkpoint", *map(str, a)])  # noqa: E731
    for args, said in [(("-o", session, session), "is the session itself"),
                       (("-o", tmp_path / "link.md", session), "is the session itself"),
                       (("-n", "-o", session, session), "is the session itself"),
                       (("-o", other, session), "holds JSON"),
                       (("--clear", "-o", other, session), "holds JSON"),
                       (("--clear", "-o", binary), "binary"),
                       (("--read", "-o", binary), "binary")]:
        r = run(*args)
        assert r.exit_code == 3 and said in r.output and r.output.count("\n") == 1, (args, r.output)
    assert {p: p.read_bytes() for p in (session, other, binary)} == before
    md = tmp_path / "c.md"
    assert run("-o", md, session).exit_code == 0 and md.read_text(encoding="utf-8").startswith("# Context Checkpoint")
    assert run("-o", md, session).exit_code == 0  # its own checkpoint is replaced
    assert run("--clear", "-o", md, session).exit_code == 0 and not md.exists()
