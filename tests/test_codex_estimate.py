"""estimate on Codex rollouts: recorded usage, the window the file records, Codex's own
auto-compaction threshold, o200k_base for OpenAI models."""

import json
import os
import shutil

from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.estimate import Options, default_encoding, estimate_file

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "codex-recorded")


def last_token_count(name):
    last = None
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            if o["type"] == "event_msg" and o["payload"].get("type") == "token_count" and o["payload"].get("info"):
                last = o["payload"]["info"]
    return last


def test_usage_is_the_last_token_count_when_nothing_follows_it():
    for name in ("parallel.jsonl", "compacted.jsonl", "long_output.jsonl", "api_error.jsonl"):
        info = last_token_count(name)
        r = estimate_file(os.path.join(FIX, name), Options(tokenizer="usage"))
        assert r["tokens"] == info["last_token_usage"]["total_tokens"], name
        assert r["usage"]["after"] == 0
    # the last request's usage, not the running total of the session
    assert estimate_file(os.path.join(FIX, "parallel.jsonl"), Options(tokenizer="usage"))["tokens"] < \
        last_token_count("parallel.jsonl")["total_token_usage"]["total_tokens"]


def test_usage_adds_the_heuristic_for_what_came_after_the_counted_response():
    """Killed mid-tool: the last count is the first turn's; the second prompt and the calls came after."""
    info = last_token_count("interrupted.jsonl")
    r = estimate_file(os.path.join(FIX, "interrupted.jsonl"), Options(tokenizer="usage"))
    u = r["usage"]
    assert u["recorded"] == info["last_token_usage"]["total_tokens"] and u["after"] > 0
    assert r["tokens"] == u["recorded"] + u["after"] and u["after_messages"] == 2


def test_window_and_codex_auto_compaction_threshold():
    r = estimate_file(os.path.join(FIX, "parallel.jsonl"))
    assert r["window"] == last_token_count("parallel.jsonl")["model_context_window"] == 258_400
    assert r["model"] == "gpt-5.5"
    codex = [t for t in r["triggers"] if t["name"] == "codex-auto-compact"]
    # judged: Codex 0.169 compacts at 244,800 (90% of gpt-5.5's 272,000; it records 95% of it)
    assert [t["threshold"] for t in codex] == [244_800]
    r = estimate_file(os.path.join(FIX, "parallel.jsonl"), Options(auto_compact_limit=5000))
    assert [t for t in r["triggers"] if t["name"] == "codex-auto-compact"][0]["crossed"]


def test_tiktoken_defaults_to_o200k_for_openai():
    assert default_encoding("codex", None) == "o200k_base"
    assert default_encoding("claude", "claude-opus-4-6") == "cl100k_base"
    assert default_encoding("pi", "openai/gpt-5.1") == "o200k_base"
    r = CliRunner().invoke(cli, ["estimate", "-t", "tiktoken", "--json", os.path.join(FIX, "compacted.jsonl")])
    assert r.exit_code == 0, r.output
    f = json.loads(r.output)["files"][0]
    assert f["encoding"] == "o200k_base" and f["breakdown"]["basis"] == "tiktoken:o200k_base"
    r = CliRunner().invoke(cli, ["estimate", "-t", "tiktoken", "--encoding", "cl100k_base", "--json",
                                 os.path.join(FIX, "compacted.jsonl")])
    assert json.loads(r.output)["files"][0]["encoding"] == "cl100k_base"


def test_the_base_instructions_and_replacement_items_are_counted():
    r = estimate_file(os.path.join(FIX, "compacted.jsonl"), Options(tokenizer="tiktoken"))
    top = r["breakdown"]["top"]
    assert top[0]["line"] == 1  # the base instructions: the largest item sent
    assert r["messages"] >= 3 and r["compactions"] == 1


def test_a_fork_says_what_it_inherits_and_that_it_is_not_counted(tmp_path):
    """A fork sends its parent's history first (``view`` shows it); the estimate's figures are the fork's own items:
    said, not left silent (a review found a fork of a long session estimated at 2% of its window, 2026-11-30)."""
    r = estimate_file(os.path.join(FIX, "fork_long.jsonl"))
    assert any("the 8 item(s) it inherits from its parent up to the fork point are not counted" in n for n in r["notes"])
    alone = tmp_path / "fork_long.jsonl"
    shutil.copy(os.path.join(FIX, "fork_long.jsonl"), alone)
    r = estimate_file(str(alone))
    assert any("whose parent rollout is not found: Codex refuses to resume it" in n for n in r["notes"])
    assert not any("fork" in n for n in estimate_file(os.path.join(FIX, "parallel.jsonl"))["notes"])
