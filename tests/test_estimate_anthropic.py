"""The anthropic estimator against the real SDK and tests/support/fake_anthropic.py (real HTTP)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.errors import ApiError
from ctxtool.estimate import Options, estimate_file
from tests.support.fake_anthropic import COUNT_TOKENS_PATH, FakeAnthropic

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "estimate"
@pytest.fixture
def srv(monkeypatch):
    with FakeAnthropic(count_tokens=lambda body: 4242) as s:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", s.base_url)
        yield s


def test_count_tokens_through_the_sdk(srv):
    r = estimate_file(str(FIX / "claude_split.jsonl"), Options(tokenizer="anthropic"))
    assert r["tokens"] == 4242 and r["estimator"] == "anthropic"
    req = srv.requests.for_path(COUNT_TOKENS_PATH)[-1]
    assert req.api_key == "test-key" and req.auth_scheme in ("bearer", "x-api-key")
    body = req.body
    assert body["model"] == "claude-opus-4-6"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    kinds = [b["type"] for b in body["messages"][1]["content"]]
    # the split response merged as the real client sends it (judged): its text line is a sibling
    # off the chain, and the client puts the tool call last; no progress, no toolUseResult
    assert kinds == ["thinking", "text", "tool_use"]
    assert body["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 passed"}
    assert "toolUseResult" not in str(body)
    assert [t["name"] for t in body["tools"]] == ["Bash"]


def test_model_option_and_pi_file(srv):
    r = estimate_file(str(FIX / "pi_compaction.jsonl"), Options(tokenizer="anthropic", model="claude-haiku-4-5"))
    assert r["tokens"] == 4242
    body = srv.requests.for_path(COUNT_TOKENS_PATH)[-1].body
    assert body["model"] == "claude-haiku-4-5"
    assert body["messages"][0]["content"][0]["text"].startswith("The conversation history before this point was compacted")
    assert "old question" not in str(body)


def test_no_model_in_file(srv):
    with pytest.raises(ApiError, match="pass --model"):
        estimate_file(str(FIX / "messages.jsonl"), Options(tokenizer="anthropic"))


def test_http_500_is_one_line_error(srv):
    srv.script = [("status", 500), ("status", 500), ("status", 500)]
    with pytest.raises(ApiError) as ei:
        estimate_file(str(FIX / "pi_basic.jsonl"), Options(tokenizer="anthropic", api_retries=0))
    msg = str(ei.value)
    assert "\n" not in msg and "HTTP 500" in msg and "pi_basic.jsonl" in msg


def test_cli_timeout_one_line_nonzero(srv):
    srv.script = [("timeout", 5), ("timeout", 5)]
    res = CliRunner().invoke(cli, ["estimate", "-t", "anthropic", "--api-timeout", "0.3", str(FIX / "pi_basic.jsonl")])
    assert res.exit_code == 3
    err = res.stderr.strip()
    assert err.count("\n") == 0 and "timed out" in err and "Traceback" not in res.output


def test_cli_server_error_json(srv):
    srv.script = [500, 500, 500]
    res = CliRunner().invoke(cli, ["estimate", "-t", "anthropic", "--json", str(FIX / "pi_basic.jsonl")])
    assert res.exit_code == 3
    assert "HTTP 500" in res.stdout  # failures are in the JSON too


def test_no_key_offline(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    res = CliRunner().invoke(cli, ["estimate", "-t", "anthropic", str(FIX / "pi_basic.jsonl")])
    assert res.exit_code == 3
    assert res.stderr.strip().count("\n") == 0 and "ANTHROPIC_API_KEY" in res.stderr


def test_unreachable_server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(ApiError, match="cannot reach|count_tokens"):
        estimate_file(str(FIX / "pi_basic.jsonl"), Options(tokenizer="anthropic", api_retries=0, api_timeout=2))
