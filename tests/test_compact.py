"""Compaction planning (pure) and write-back for pi, Claude Code and Messages JSONL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxtool import compact as cp
from ctxtool.compact_writer import Options, compact_file
from ctxtool.summarize import ExtractiveSummarizer
from ctxtool.transcript import scan
from tests.test_compact_support import api_errors, make_session, pi_lines, turns, view_entries, write_jsonl

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "compact"
EXTRACTIVE = ExtractiveSummarizer()


class U:
    """A minimal unit for the chunking functions."""

    def __init__(self, role, tokens, calls=(), results=(), stop=None):
        self.role, self.tokens, self.call_ids, self.result_ids, self.stop = role, tokens, tuple(calls), tuple(results), stop

    @property
    def errored(self):
        return self.role == "assistant" and self.stop in ("error", "aborted")


def plan_of(path, keep=2000):
    return cp.plan_compaction(scan(path), keep_recent_tokens=keep)


# ---------------------------------------------------------------- cut point


def test_cut_keeps_recent_tokens_and_never_cuts_at_tool_result(tmp_path):
    p = make_session(tmp_path, "pi", 12)
    for keep in (50, 300, 900, 2000, 4000):
        plan = plan_of(p, keep)
        assert plan.kept[0].role != "toolResult"
        assert plan.tokens_kept >= min(keep, cp.units_tokens(plan.context.units)) or plan.kept[0].role == "user"
        ids = {c for u in plan.to_summarize + plan.turn_prefix for c in u.call_ids}
        kept_results = {r for u in plan.kept for r in u.result_ids}
        assert not ids & kept_results  # no call separated from its result


def test_cut_budget_never_reached_summarizes_nothing(tmp_path):
    plan = plan_of(make_session(tmp_path, "pi", 2), keep=100_000)
    assert plan.skip and "nothing to summarize" in plan.skip


def test_split_turn_like_pi():
    units = [U("user", 10), U("assistant", 10, ["a"]), U("toolResult", 500, results=["a"]), U("assistant", 10),
             U("user", 10), U("assistant", 300, ["b"]), U("toolResult", 10, results=["b"]), U("assistant", 400)]
    cut = cp.find_cut(units, 300)
    assert cut.first_kept == 7 and cut.split_turn and cut.turn_start == 4
    cut = cp.find_cut(units, 700)
    assert cut.first_kept == 5 and cut.turn_start == 4  # assistant cut: prefix is the user message
    cut = cp.find_cut(units, 1000)
    assert cut.first_kept == 3 and cut.split_turn and cut.turn_start == 0
    assert cp.find_cut(units, 1240).first_kept == 1  # crosses at index 1 (an assistant)
    assert cp.find_cut(units, 10_000).first_kept == 0  # budget never reached: nothing summarized
    assert units[cp.find_cut(units, 700).first_kept].role != "toolResult"


def test_split_turn_plan_has_prefix(tmp_path):
    items = turns(6, size=200)
    items[-1]["text"] = "final " + "w" * 6000  # the last assistant alone exceeds the budget
    p = write_jsonl(tmp_path / "s.jsonl", pi_lines(items))
    plan = plan_of(p, keep=1000)
    assert plan.cut.split_turn and plan.turn_prefix and plan.turn_prefix[0].role == "user"
    assert plan.kept[0].role == "assistant"


# ---------------------------------------------------------------- chunking


def test_split_by_token_share_keeps_pairs_and_parts():
    msgs = [U("user", 100), U("assistant", 50, ["a", "b"]), U("toolResult", 400, results=["a"]),
            U("toolResult", 400, results=["b"]), U("assistant", 50), U("user", 100), U("assistant", 50), U("user", 300)]
    for parts in (1, 2, 3, 5):
        chunks = cp.split_by_token_share(msgs, parts)
        assert 1 <= len(chunks) <= min(parts, len(msgs))
        assert [m for c in chunks for m in c] == msgs
        for c in chunks:  # no chunk starts with a tool result
            assert c[0].role != "toolResult"
    assert cp.split_by_token_share([], 2) == []


def test_chunk_by_max_tokens_margin_and_oversized():
    msgs = [U("user", 40), U("user", 40), U("user", 40), U("user", 500), U("user", 10)]
    chunks = cp.chunk_by_max_tokens(msgs, 120)  # effective floor(120/1.2) = 100
    assert [len(c) for c in chunks] == [2, 1, 1, 1]
    assert chunks[2][0].tokens == 500  # oversized alone


def test_adaptive_ratio_and_oversized():
    assert cp.adaptive_chunk_ratio([U("user", 100)] * 10, 200_000) == 0.4
    big = [U("user", 30_000)] * 2  # 30k*1.2/200k = 0.18 > 0.1 -> 0.4 - 0.25 clamp -> 0.15
    assert cp.adaptive_chunk_ratio(big, 200_000) == pytest.approx(0.15)
    mid = [U("user", 20_000)]  # 0.12 -> 0.4 - 0.24 = 0.16
    assert cp.adaptive_chunk_ratio(mid, 200_000) == pytest.approx(0.16)
    assert cp.is_oversized(U("user", 84_000), 200_000) and not cp.is_oversized(U("user", 83_000), 200_000)
    assert cp.max_chunk_tokens([U("user", 100)], 200_000) == 80_000 - 4096


def test_finalize_caps_at_16000_chars():
    text = cp.finalize_summary("## Goal\n" + "g" * 40_000, read=["a.py"], modified=[f"src/f{i}.py" for i in range(500)],
                               errors=[cp.ToolError("bash", "boom " * 100)] * 12)
    assert len(text) <= cp.MAX_SUMMARY_CHARS
    assert "[Compaction summary truncated to fit budget]" in text
    assert "<modified-files>" in text and "...and " in text and "## Tool Failures" in text
    assert cp.parse_file_tags(text)[0] == ["a.py"]


# ---------------------------------------------------------------- extraction


def test_phase0_extraction(tmp_path):
    items = turns(4, size=20)
    items.append({"role": "assistant", "call": {"name": "bash", "input": {"command": "cd src"}}, "id": "c1", "text": "x"})
    items.append({"role": "result", "id": "c1", "name": "bash", "error": False, "text": "ok"})
    items.append({"role": "assistant", "call": {"name": "bash", "input": {"command": "ls -la /very/long/dir"}}, "id": "c2", "text": "x"})
    items.append({"role": "result", "id": "c2", "name": "bash", "error": False, "text": "ok"})
    items.append({"role": "assistant", "call": {"name": "write", "input": {"path": "docs/new.md", "content": "hi"}}, "id": "c3", "text": "x"})
    items.append({"role": "result", "id": "c3", "name": "write", "error": False, "text": "ok"})
    p = write_jsonl(tmp_path / "e.jsonl", pi_lines(items))
    t = scan(p)
    ctx = cp.load_context(t)
    ex = cp.extract(ctx.units)
    assert ex.commands == ["pytest -q tests/test_mod_1.py"]  # cd/ls and short commands dropped
    assert ex.modified_files == ["docs/new.md", "src/mod_0.py", "src/mod_3.py"]
    assert ex.read_files == ["docs/guide_2.md"]
    assert [e.name for e in ex.errors] == ["bash"] and "assertion failed in test_mod_1" in ex.errors[0].text
    assert "src/mod_0.py" in ex.identifiers
    assert cp.keep_command("git status -s") and not cp.keep_command("git diff") and not cp.keep_command("cd /a/very/long/path")


# ---------------------------------------------------------------- write-back


@pytest.mark.parametrize("fmt", ["pi", "claude", "messages"])
def test_view_is_summary_then_exactly_the_kept_messages(tmp_path, fmt):
    p = make_session(tmp_path, fmt, 12)
    before = plan_of(p, 1500)
    kept_lines = [json.dumps(e.obj.get("message", e.obj), sort_keys=True) for u in before.kept for e in u.entries]
    original = Path(p).read_bytes()
    r = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1500))
    assert r.status == "compacted", r.error
    assert r.tokens_after < r.tokens_before
    assert r.backup and Path(r.backup).read_bytes() == original
    t, entries = view_entries(p)
    first = entries[0]
    if fmt == "pi":
        assert first.kind == "compaction"
        assert Path(p).read_bytes().startswith(original)  # original lines byte-identical
        obj = json.loads(Path(p).read_bytes().splitlines()[-1])
        assert re.fullmatch(r"[0-9a-f]{8}", obj["id"]) and obj["parentId"] == before.context.leaf.id
        assert obj["firstKeptEntryId"] == before.first_kept_entry.id and obj["tokensBefore"] == r.tokens_before
        assert set(obj["details"]) == {"readFiles", "modifiedFiles"}
    else:
        assert first.role == "user" and "## Goal" in json.dumps(first.obj)
        assert json.dumps(first.obj).count("This session is being continued from a previous conversation") == 1
    rest = [json.dumps(e.obj.get("message", e.obj), sort_keys=True) for e in entries[1:]]
    assert rest == kept_lines
    assert api_errors(p) == []
    assert sum(-(-e.chars // 4) for e in entries) == r.tokens_after


def test_claude_records(tmp_path):
    p = make_session(tmp_path, "claude", 10)
    original = Path(p).read_bytes()
    r = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1200, backup=False))
    assert r.status == "compacted"
    data = Path(p).read_bytes()
    assert data.startswith(original)
    new = [json.loads(x) for x in data[len(original):].splitlines()]
    b, s = new[0], new[1]
    last_uuid = json.loads(original.splitlines()[-1])["uuid"]
    assert b["type"] == "system" and b["subtype"] == "compact_boundary" and b["parentUuid"] is None
    assert b["logicalParentUuid"] == last_uuid
    meta = b["compactMetadata"]
    assert meta["trigger"] == "manual" and meta["preTokens"] == r.tokens_before
    assert s["isCompactSummary"] is True and s["parentUuid"] == b["uuid"]
    assert s["message"]["content"].startswith("This session is being continued from a previous conversation that ran out of context.")
    # Claude Code's own record of the kept messages (as the client writes it): the originals stay
    # where they are, named by uuid, never copied (a copy keeps its message.id and was sent twice)
    assert len(new) == 2
    kept = meta["preservedMessages"]["uuids"]
    before = [json.loads(x) for x in original.splitlines()]
    assert kept and kept == [o["uuid"] for o in before if o["uuid"] in set(kept)]  # in file order
    assert kept[-1] == last_uuid and meta["preservedMessages"]["anchorUuid"] == s["uuid"]
    assert meta["preservedSegment"] == {"headUuid": kept[0], "anchorUuid": s["uuid"], "tailUuid": kept[-1]}
    t, entries = view_entries(p)
    assert [e.id for e in entries[1:]] == kept  # summary, then each kept message once


def test_pi_truncate_removes_summarized_and_relinks(tmp_path):
    p = make_session(tmp_path, "pi", 12)
    plan = plan_of(p, 1500)
    r = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1500, truncate=True, backup=False))
    assert r.status == "compacted" and r.removed_entries == len([u for u in plan.to_summarize + plan.turn_prefix])
    t = scan(p, keep=True)
    ids = {e.id for e in t.entries if e.id}
    for e in t.entries:
        assert e.parent is None or e.parent in ids
    assert t.entries[1].type == "model_change"  # non-message entries are kept
    _, entries = view_entries(p)
    assert entries[0].kind == "compaction" and len(entries) - 1 == sum(len(u.entries) for u in plan.kept)
    assert api_errors(p) == []


def test_compacting_twice_stacks(tmp_path):
    p = make_session(tmp_path, "pi", 10)
    r1 = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1200, backup=False))
    assert compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1200)).reason == "already compacted at its leaf"
    t = scan(p)
    leaf = t.entries[-1].id
    more = pi_lines(turns(6, tag="second"), header=False, start=500, parent=leaf)
    with open(p, "a") as f:
        for obj in more:
            f.write(json.dumps(obj) + "\n")
    plan = plan_of(p, 1200)
    assert plan.previous_summary and "Request t0" in plan.previous_summary
    r2 = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1200, backup=False))
    assert r2.status == "compacted" and r2.previous_summary
    _, entries = view_entries(p)
    summary = json.loads(Path(p).read_bytes().splitlines()[-1])["summary"]
    assert "Request t0" in summary  # first goal carried forward
    assert "Latest request: Request second" in summary
    assert "src/mod_0.py" in summary and "Earlier: summarized" in summary
    assert summary.count("## Goal") == 1 and summary.count("<modified-files>") == 1
    assert api_errors(p) == []
    assert r1.tokens_after > 0


def test_lock_held_by_live_process_is_a_clear_error(tmp_path):
    p = make_session(tmp_path, "pi", 8)
    before = Path(p).read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        Path(p + ".lock").write_text(json.dumps({"pid": holder.pid, "createdAt": "2099-01-01T00:00:00.000Z"}))
        r = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=1000, lock_timeout=0.3))
    finally:
        holder.kill()
        holder.wait()
    assert r.status == "failed" and "locked" in r.error and f"pid={holder.pid}" in r.error
    assert Path(p).read_bytes() == before


def test_bad_lines_refused(tmp_path):
    p = make_session(tmp_path, "messages", 6)
    with open(p, "a") as f:
        f.write('{"role": "user", "content": "torn')
    r = compact_file(p, EXTRACTIVE, Options(keep_recent_tokens=500))
    assert r.status == "failed" and "ctxtool repair" in r.error


def test_pi_v1_refused(tmp_path):
    lines = [{"type": "session", "id": "abc", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}]
    lines += [{"type": "message", "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "hi " * 2000}}] * 4
    r = compact_file(write_jsonl(tmp_path / "v1.jsonl", lines), EXTRACTIVE, Options(keep_recent_tokens=10))
    assert r.status == "failed" and "version 1" in r.error


# ---------------------------------------------------------------- golden fixtures (extractive)


def _normalize(data: bytes) -> str:
    text = data.decode("utf-8")
    text = re.sub(r'"(uuid|parentUuid|anchorUuid)":"[0-9a-f-]{36}"', r'"\1":"<uuid>"', text)
    text = re.sub(r'"timestamp":"[^"]+"', '"timestamp":"<ts>"', text)
    text = re.sub(r'"type":"compaction","id":"[0-9a-f]{8}"', '"type":"compaction","id":"<id>"', text)
    return text


GOLDEN = sorted(p.name[: -len(".input.jsonl")] for p in FIXTURES.glob("*.input.jsonl"))


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_extractive(tmp_path, name):
    src = FIXTURES / f"{name}.input.jsonl"
    keep = int((FIXTURES / f"{name}.keep").read_text()) if (FIXTURES / f"{name}.keep").exists() else 1500
    dst = tmp_path / f"{name}.jsonl"
    dst.write_bytes(src.read_bytes())
    r = compact_file(str(dst), EXTRACTIVE, Options(keep_recent_tokens=keep, backup=False, truncate="truncate" in name))
    assert r.status == "compacted", r.error
    got = _normalize(dst.read_bytes())
    exp_path = FIXTURES / f"{name}.expected.jsonl"
    if os.environ.get("CTXTOOL_REGEN_GOLDEN"):
        exp_path.write_text(got, encoding="utf-8")
        (FIXTURES / f"{name}.summary.md").write_text(r.summary + "\n", encoding="utf-8")
    assert got == exp_path.read_text(encoding="utf-8")
    assert r.summary + "\n" == (FIXTURES / f"{name}.summary.md").read_text(encoding="utf-8")


def test_golden_fixtures_present():
    assert len(GOLDEN) >= 3
