"""Summarizers: the real anthropic SDK over real HTTP against FakeAnthropic, and the command summarizer."""

from __future__ import annotations

import json
import sys
import time

import pytest

from ctxtool import compact as cp
from ctxtool.compact_writer import Options, compact_file
from ctxtool.errors import SummarizerError
from ctxtool.summarize import (
    MERGE_INSTRUCTIONS,
    AnthropicSummarizer,
    CommandSummarizer,
    Settings,
    summarize_plan,
)
from ctxtool.transcript import scan
from tests.support.fake_anthropic import MESSAGES_PATH, SUMMARY_MARKER, FakeAnthropic
from tests.test_compact_support import api_errors, make_session, pi_lines, turns, view_entries

KEY = "sk-test-SECRET-key-123456"
HEADINGS = ["## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked",
            "## Key Decisions", "## Next Steps", "## Critical Context"]




@pytest.fixture
def srv():
    with FakeAnthropic() as s:
        yield s


def summarizer(srv, **kw):
    kw.setdefault("min_delay", 0.01)
    kw.setdefault("max_delay", 0.05)
    kw.setdefault("timeout", 5.0)
    return AnthropicSummarizer("claude-test", api_key=KEY, base_url=srv.base_url, **kw)


def user_cut_keep(path) -> int:
    """A --keep-recent-tokens that cuts at a user message (no split turn, so one call per chunk)."""
    for keep in range(1000, 4000, 25):
        plan = cp.plan_compaction(scan(path), keep_recent_tokens=keep)
        if plan.cut and not plan.cut.split_turn and plan.to_summarize:
            return keep
    raise AssertionError("no user cut")


def plan_of(path, keep=None):
    return cp.plan_compaction(scan(path), keep_recent_tokens=keep if keep is not None else user_cut_keep(path))


def prompt_of(req) -> str:
    return req.body["messages"][0]["content"]


def test_success_prompt_headings_and_max_tokens(srv, tmp_path):
    s = summarizer(srv)
    plan = plan_of(make_session(tmp_path, "pi", 10))
    res = summarize_plan(plan, s, Settings(reserve_tokens=16384))
    assert res.fallback == "none" and res.calls == 1 and SUMMARY_MARKER in res.text
    req = srv.requests[0]
    assert req.body["max_tokens"] == int(0.8 * 16384) and req.body["model"] == "claude-test"
    assert "Do NOT continue the conversation" in req.body["system"]
    p = prompt_of(req)
    assert p.startswith("<conversation>\n[User]: Request t0")
    for h in HEADINGS:
        assert h in p
    assert "[Assistant tool calls]: edit(path=\"src/mod_0.py\"" in p and "<previous-summary>" not in p
    assert req.auth_scheme == "bearer" and req.api_key == KEY
    assert "<modified-files>" in res.text  # file lists appended to the model's summary


def test_retries_429_529_500_then_success(srv, tmp_path):
    srv.script = [429, 529, ("status", 500)]
    s = summarizer(srv, attempts=3)
    plan = plan_of(make_session(tmp_path, "pi", 10))
    res = summarize_plan(plan, s)
    # 429, 529 -> third attempt 500 -> attempts exhausted -> fallback run (no oversized) -> fixed text
    assert len(srv.requests) == 3 and res.fallback == "text"
    assert "gave up after 3 attempts" in res.errors[0] and "HTTP 500" in res.errors[0]
    srv.requests.clear()
    srv.script = [429, 529]
    res = summarize_plan(plan, s)
    assert len(srv.requests) == 3 and res.fallback == "none" and SUMMARY_MARKER in res.text


def test_no_retry_on_400(srv, tmp_path):
    srv.script = [400]
    res = summarize_plan(plan_of(make_session(tmp_path, "pi", 10)), summarizer(srv))
    assert len(srv.requests) == 1 and res.fallback == "text"
    assert "HTTP 400 invalid_request_error: fake: invalid request (not retried)" in res.errors[0]
    assert "Summary unavailable due to size limits." in res.text and "## Goal" in res.text  # + extractive


def test_connection_drop_timeout_and_malformed_are_retried(srv, tmp_path):
    srv.script = ["drop", ("timeout", 2), "malformed"]
    s = summarizer(srv, timeout=0.3, attempts=4)
    t0 = time.monotonic()
    res = summarize_plan(plan_of(make_session(tmp_path, "pi", 10)), s)
    assert res.fallback == "none" and len(srv.requests) == 4
    assert time.monotonic() - t0 < 2.5


def test_empty_reply_is_a_failure(srv, tmp_path):
    srv.script = ["empty"]
    res = summarize_plan(plan_of(make_session(tmp_path, "pi", 10)), summarizer(srv))
    assert res.fallback == "text" and "empty summary" in res.errors[0] and len(srv.requests) == 1


def test_default_backoff_is_500ms_to_5s(srv):
    s = AnthropicSummarizer("m", api_key=KEY, base_url=srv.base_url, seed=1)
    delays = [s.backoff(n) for n in range(1, 8)]
    assert all(0.5 <= d <= 5.0 for d in delays)
    assert delays[0] < 0.7 and delays[-1] == pytest.approx(5.0, abs=1.0)
    assert s.backoff(1, retry_after=30) == 5.0
    srv.script = [429]
    t0 = time.monotonic()
    s.call("sys", "hi", max_tokens=10)
    assert 0.4 <= time.monotonic() - t0 < 1.5 and len(srv.requests) == 2


def test_overall_timeout(srv, tmp_path):
    srv.script = [("timeout", 3)] * 5
    s = summarizer(srv, timeout=2.0)
    t0 = time.monotonic()
    res = summarize_plan(plan_of(make_session(tmp_path, "pi", 10)), s, Settings(overall_timeout=0.5))
    assert time.monotonic() - t0 < 2.0
    assert res.fallback == "text" and any("overall timeout" in e for e in res.errors)


def test_staged_split_and_merge_prompt(srv, tmp_path):
    p = make_session(tmp_path, "pi", 16, size=2000)
    plan = plan_of(p, 800)
    st = Settings(window=12_000)  # max chunk = 0.4 x 12,000 - 4096 = 704 tokens -> split into parts, then merge
    res = summarize_plan(plan, summarizer(srv), st)
    assert res.fallback == "none"
    prompts = [prompt_of(r) for r in srv.requests]
    merge = [x for x in prompts if "Merge these partial summaries" in x]
    assert len(merge) == 1 and prompts[-1] == merge[0] or prompts[-2] == merge[0]
    assert MERGE_INSTRUCTIONS in merge[0] and "[Partial summary 1 of 2]" in merge[0] and "[Partial summary 2 of 2]" in merge[0]
    assert "5/17" in merge[0] and "last thing the user requested" in merge[0]
    assert res.calls == len(srv.requests) >= 3
    calls, _ = cp.planned_calls(plan, window=12_000)
    assert calls == res.calls  # --dry-run's plan matches what happened


def test_oversized_fallback_notes(srv, tmp_path):
    items = turns(8, size=200)
    items[2]["text"] = "huge " * 8000  # ~10k tokens: oversized for a 20k window
    p = tmp_path / "o.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in pi_lines(items)))
    plan = plan_of(str(p), 500)
    srv.script = [400]  # the full attempt fails; the retry without the oversized message succeeds
    res = summarize_plan(plan, summarizer(srv), Settings(window=20_000, parts=1))
    assert res.fallback == "partial" and len(srv.requests) == 2
    assert "[Large toolResult (~10K tokens) omitted from summary]" in res.text
    assert "huge huge" not in prompt_of(srv.requests[1])


def test_update_prompt_carries_previous_summary_when_stacking(srv, tmp_path):
    p = make_session(tmp_path, "pi", 10)
    srv.reply = "## Goal\n- FIRST-SUMMARY-GOAL\n\n## Next Steps\n1. keep going"
    r1 = compact_file(p, summarizer(srv), Options(keep_recent_tokens=user_cut_keep(p), backup=False))
    assert r1.status == "compacted"
    t = scan(p)
    more = pi_lines(turns(6, tag="again"), header=False, start=700, parent=t.entries[-1].id)
    with open(p, "a") as f:
        f.writelines(json.dumps(x) + "\n" for x in more)
    srv.requests.clear()
    srv.reply = "## Goal\n- SECOND"
    r2 = compact_file(p, summarizer(srv), Options(keep_recent_tokens=user_cut_keep(p), backup=False))
    assert r2.status == "compacted" and r2.previous_summary
    prompt = prompt_of(srv.requests[0])
    assert "<previous-summary>\n## Goal\n- FIRST-SUMMARY-GOAL" in prompt
    assert "PRESERVE all information from the previous summary" in prompt
    assert "<modified-files>" not in prompt.split("<previous-summary>")[1]  # file lists are rebuilt, not nested
    _, entries = view_entries(p)
    assert entries[0].kind == "compaction" and "SECOND" in entries[0].blocks[0]["text"]
    assert api_errors(p) == []


def test_file_result_with_anthropic_and_key_never_in_output(srv, tmp_path):
    srv.script = [429, 400]
    p = make_session(tmp_path, "claude", 10)
    r = compact_file(p, summarizer(srv), Options(keep_recent_tokens=user_cut_keep(p), backup=False))
    assert r.status == "fallback" and "HTTP 400" in r.error and len(srv.requests) == 2
    assert KEY not in json.dumps(r.to_dict(with_summary=True))
    m = make_session(tmp_path, "messages", 10)
    r2 = compact_file(m, summarizer(srv), Options(keep_recent_tokens=user_cut_keep(m), on_error="skip"))
    assert r2.status == "compacted"  # script exhausted: success


def test_on_error_skip_leaves_file(srv, tmp_path):
    srv.script = [400]
    p = make_session(tmp_path, "messages", 10)
    before = open(p, "rb").read()
    r = compact_file(p, summarizer(srv), Options(keep_recent_tokens=user_cut_keep(p), on_error="skip"))
    assert r.status == "failed" and "file left unchanged" in r.error and open(p, "rb").read() == before


def test_missing_key_is_clear():
    with pytest.raises(SummarizerError, match="ANTHROPIC_API_KEY"):
        AnthropicSummarizer("m")


def test_base_url_from_env(srv, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    s = AnthropicSummarizer("m")
    assert s.call("sys", "hello", max_tokens=20).startswith(SUMMARY_MARKER)
    assert srv.requests[0].path == MESSAGES_PATH


# ---------------------------------------------------------------- command


def test_command_summarizer(tmp_path):
    script = tmp_path / "summ.py"
    script.write_text("import sys, os\ndata = sys.stdin.read()\n"
                      "print('## Goal\\n- from command, prompt chars', len(data), 'max', os.environ['CTXTOOL_SUMMARY_MAX_TOKENS'])\n")
    s = CommandSummarizer(f"{sys.executable} {script}")
    p = make_session(tmp_path, "pi", 10)
    r = compact_file(p, s, Options(keep_recent_tokens=user_cut_keep(p), backup=False))
    assert r.status == "compacted" and r.calls == 1
    _, entries = view_entries(p)
    assert "from command, prompt chars" in entries[0].blocks[0]["text"] and "max 13107" in entries[0].blocks[0]["text"]


def python_command_fails(code: str, match: str) -> CommandSummarizer:
    """A command summarizer running ``python -c code``, whose call fails with an error matching ``match``."""
    s = CommandSummarizer(f"{sys.executable} -c \"{code}\"")
    with pytest.raises(SummarizerError, match=match):
        s.call("sys", "p", max_tokens=10)
    return s


def test_command_failure_shows_stderr(tmp_path):
    s = python_command_fails("import sys; sys.stderr.write('model not found: foo'); sys.exit(3)",
                             "exited with status 3: model not found: foo")
    python_command_fails("import sys; sys.stdin.read(); sys.stderr.write('warming up')", "produced no output: warming up")
    p = make_session(tmp_path, "pi", 10)
    r = compact_file(p, s, Options(keep_recent_tokens=user_cut_keep(p), backup=False))
    assert r.status == "fallback" and "model not found: foo" in r.error


def test_command_output_that_is_no_text_is_refused_and_a_timeout_stops_what_it_started(tmp_path):
    """A command that writes binary bytes (`cat /bin/ls`) is a failed summarizer (fallback), not a summary
    of NULs and U+FFFD written into the session; on a timeout its whole process group is stopped (the
    child of the shell stayed behind). CLI audit."""
    python_command_fails("import sys; sys.stdin.read(); sys.stdout.buffer.write(b'## Goal\\\\x00x')", "NUL bytes")
    python_command_fails("import sys; sys.stdin.read(); sys.stdout.buffer.write(b'caf\\\\xe9')", "not UTF-8")
    marker = tmp_path / "child-still-running"
    slow = CommandSummarizer(f"{sys.executable} -c \"import time; time.sleep(3); open('{marker}', 'w')\" & wait", timeout=0.5)
    with pytest.raises(SummarizerError, match="timed out"):
        slow.call("sys", "p", max_tokens=10)
    time.sleep(3.5)
    assert not marker.exists()  # the command's child was stopped with it
