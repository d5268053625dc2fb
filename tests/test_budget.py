"""ctxtool.budget: the context files each agent loads, and its own limits on them (pure functions)."""

from __future__ import annotations

import json
import os

import pytest

from ctxtool import budget, utf16
from ctxtool.errors import ConfigError, InputError
from tests.support.budget_cases import run_case, stable

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "budget")
CASES = sorted(d for d in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, d, "args.json")))


@pytest.mark.parametrize("case", CASES)
def test_golden_workspaces(case):
    base = os.path.join(FIXTURES, case)
    with run_case(base) as (report, root):
        with open(os.path.join(base, "expected.json"), encoding="utf-8") as f:
            expected = json.load(f)
        assert stable(report, root) == expected
        for r in report["files"]:
            if r["status"] == "trimmed":
                with open(os.path.join(base, "injected", r["name"].replace("/", "__")), encoding="utf-8") as f:
                    assert utf16.printable(utf16.text(r["injected"])) == f.read(), r["name"]


def test_utf16_units_slice_like_javascript():
    s = "a😀b中"
    u = utf16.units(s)
    assert len(u) == 5 and utf16.text(u) == s
    assert utf16.safe_slice(u, 0, 2) == "a"  # would end inside the pair: the high half is left out
    assert utf16.safe_slice(u, 2) == "b中"  # would start on the low half: skipped
    assert utf16.text(utf16.safe_slice(u, 0, 3)) == "a😀"
    assert utf16.trim_end(utf16.units("x \u3000\ufeff\n")) == "x"
    assert utf16.trim_end("x\x1c") == "x\x1c"  # not JavaScript whitespace (Python's isspace says it is)


def test_openclaw_trim_keeps_75_head_25_tail_and_names_the_file():
    text = "".join(f"line {i}\n" for i in range(5000))
    t = budget.openclaw_trim(utf16.units(text), "SOUL.md", 2000)
    assert t.truncated and len(t.content) <= 2000
    assert "[...truncated, read SOUL.md for full content...]" in t.content
    assert f"kept {t.head}+{t.tail} chars of {len(text.rstrip())}" in t.content
    assert abs(t.head / (t.head + t.tail) - 0.75) < 0.01
    assert t.content.startswith(text[:t.head]) and t.content.endswith(text.rstrip()[-t.tail:])


def test_openclaw_user_md_cap_and_total_budget():
    big = "x" * 30_000
    srcs = [budget.Source(n, f"/w/{n}", big, "bootstrap") for n in ("SOUL.md", "USER.md", "IDENTITY.md", "MEMORY.md")]
    rows = budget.openclaw_assemble(srcs, 20_000, 30_000)
    by = {r["name"]: r for r in rows}
    assert 19_990 < by["SOUL.md"]["injected_chars"] <= 20_000 and by["SOUL.md"]["causes"] == ["per-file-limit"]
    assert 3_900 < by["USER.md"]["injected_chars"] <= 4_000  # fixed cap below bootstrapMaxChars
    assert by["IDENTITY.md"]["causes"] == ["per-file-limit", "total-limit"]
    assert sum(r["injected_chars"] for r in rows) <= 30_000
    assert by["MEMORY.md"]["status"] == "dropped"


def test_openclaw_missing_files_cost_their_marker(tmp_path):
    _tree(tmp_path, {"SOUL.md": "soul\n"})
    d = budget.discover("openclaw", [str(tmp_path)])
    rows = {r["name"]: r for r in budget.assemble(d, budget.resolve_settings("openclaw"))["files"]}
    assert set(rows) == {"AGENTS.md", "SOUL.md", "IDENTITY.md"}  # USER.md, MEMORY.md, BOOTSTRAP.md: no marker
    marker = f"[MISSING] Expected at: {tmp_path}/AGENTS.md"
    assert rows["AGENTS.md"]["injected"] == marker and rows["AGENTS.md"]["injected_chars"] == len(marker)


def _tree(root, files: dict):
    for rel, content in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(content)


def test_claude_import_cycle_is_reported_not_followed(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    _tree(ws, {"CLAUDE.md": "root @a.md\n", "a.md": "A @b.md\n", "b.md": "B @a.md @CLAUDE.md @./b.md\n"})
    d = budget.discover("claude", [str(ws)], home=str(home), settings={"managedPath": None})
    mine = [s for s in d.sources if str(s.path).startswith(str(ws))]
    loaded = [s.name for s in mine if s.status is None]
    assert loaded == ["CLAUDE.md", "a.md", "b.md"]  # each file once, in import order
    cycles = [s.name for s in mine if s.status == "cycle"]
    assert sorted(cycles) == ["CLAUDE.md", "a.md", "b.md"]
    assert all(s.parent.endswith("b.md") for s in mine if s.status == "cycle")


def test_claude_imports_skip_code_and_honour_the_depth_limit(tmp_path):
    ws = tmp_path / "ws"
    _tree(ws, {"CLAUDE.md": "```\n@fenced.md\n```\n`@span.md` and @real.md\n    @indented.md\n",
               "real.md": "@d2.md\n", "d2.md": "@d3.md\n", "d3.md": "x\n"})
    d = budget.discover("claude", [str(ws)], home=str(tmp_path / "h"), settings={"managedPath": None, "importDepth": 3})
    got = {s.name: s.status for s in d.sources if str(s.path).startswith(str(ws))}
    assert got == {"CLAUDE.md": None, "real.md": None, "d2.md": None, "d3.md": "depth-limit"}


def test_aceclaw_protected_tiers_and_lowest_priority_first():
    S = budget.Source
    srcs = [S("Soul", "/s", "s" * 30_000, "soul", 100, True), S("Managed Policy", "/p", "p" * 25_000, "policy", 90, True),
            S("Workspace Memory", "/w", "w" * 15_000, "workspace", 80), S("User Memory", "/u", "u" * 15_000, "user", 70)]
    rows = {r["name"]: r for r in budget.aceclaw_assemble(srcs, 20_000, 75_000)}
    assert rows["Soul"]["status"] == "kept" and rows["Soul"]["injected_chars"] == 30_000  # protected, past the per-tier cap
    assert rows["Managed Policy"]["status"] == "kept"
    assert rows["Workspace Memory"]["status"] == "kept"  # 80 outranks 70: untouched while User Memory absorbs the excess
    assert rows["User Memory"]["status"] == "trimmed" and rows["User Memory"]["causes"] == ["total-limit"]
    assert "<!-- [TRUNCATED] Original: 15000 chars" in rows["User Memory"]["injected"]
    rows = {r["name"]: r for r in budget.aceclaw_assemble(srcs, 20_000, 60_000)}
    assert rows["User Memory"]["status"] == "dropped" and rows["Workspace Memory"]["status"] == "trimmed"


def test_aceclaw_truncate_split_and_for_context_window():
    out, head, tail = budget.aceclaw_truncate("x" * 10_000, 1_000)
    assert len(out) <= 1_000 and head == 700 and tail == 200
    assert "<!-- [TRUNCATED] Original: 10000 chars, showing first 700 + last 200 chars -->" in out
    assert budget.ace_for_window(200_000) == {"maxPerTierChars": 20_000, "maxTotalChars": 150_000}
    assert budget.ace_for_window(32_000, 8_000) == {"maxPerTierChars": 20_000, "maxTotalChars": 24_000}
    assert budget.ace_for_window(8_000, 4_000) == {"maxPerTierChars": 4_000, "maxTotalChars": 4_000}
    assert budget.ace_for_window(100) == {"maxPerTierChars": 1_000, "maxTotalChars": 1_000}


def test_codex_byte_cap_cuts_inside_a_character_as_codex_does():
    srcs = [budget.Source("AGENTS.md", "/r/AGENTS.md", None, "project", raw=("é" * 10).encode()),
            budget.Source("AGENTS.md", "/r/s/AGENTS.md", None, "project", raw=b"more\n")]
    rows = budget.codex_assemble(srcs, 5)
    assert rows[0]["injected"] == "éé\ufffd" and rows[0]["injected_chars"] == 5  # from_utf8_lossy of 5 bytes
    assert rows[1]["status"] == "dropped"


def test_agent_detection_and_usage_errors(tmp_path):
    _tree(tmp_path / "oc", {"SOUL.md": "x"})
    _tree(tmp_path / "cc", {"CLAUDE.md": "x"})
    _tree(tmp_path / "cx", {"AGENTS.md": "x"})
    _tree(tmp_path / "ac", {"ACECLAW.md": "x"})
    assert [budget.detect_agent(str(tmp_path / d)) for d in ("oc", "cc", "cx", "ac")] == ["openclaw", "claude", "codex", "aceclaw"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no context files"):
        budget.discover(None, [str(tmp_path / "empty")])
    with pytest.raises(InputError, match="no such file"):
        budget.discover("openclaw", [str(tmp_path / "nope.md")])
    with pytest.raises(ConfigError):
        budget.resolve_settings("openclaw", {"maxChars": 0})
    s = budget.resolve_settings("openclaw", None, {"agents": {"defaults": {"bootstrapMaxChars": 12_000}}})
    assert s == {"maxChars": 12_000, "totalMaxChars": 60_000}


@pytest.mark.parametrize("name,text", [
    ("s.jsonl", "anything\n"),  # the name says it
    ("session.txt", '{"type":"user","message":{"role":"user","content":"hi"}}\n{"type":"assistant"}\n'),  # its first line
    ("NOTES.MD", '{"type":"session","version":3}\n'),
])
@pytest.mark.parametrize("agent", [None, "claude", "codex", "openclaw", "aceclaw"])
def test_a_session_transcript_given_as_a_context_file_is_refused(tmp_path, name, text, agent):
    # budget sized a Claude Code session passed by mistake as a 224,000-char CLAUDE.md, with advice to split it
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="a session transcript, not a context file") as e:
        budget.discover(agent, [str(p)])
    assert e.value.path == str(p)


@pytest.mark.parametrize("text", ["{not json}\n# Rules\n", "{}x\n", '["a"]\n', "# {\"a\": 1}\n"])
def test_a_context_file_that_starts_like_json_is_read(tmp_path, text):
    p = tmp_path / "CLAUDE.md"
    p.write_text(text, encoding="utf-8")
    d = budget.discover(None, [str(p)])
    assert d.agent == "claude" and [s.path for s in d.sources][:1] == [str(p)]


def test_compare_session_explains_the_gap():
    report = {"totals": {"tokens": 2_000}}
    out = budget.compare_session(report, {"baseline": {"status": "measured", "tokens": 9_600}})
    assert out["gap_tokens"] == 7_600 and "system prompt" in out["explained"]
    assert budget.compare_session(report, {"baseline": {"status": "unknown", "tokens": None}})["gap_tokens"] is None
