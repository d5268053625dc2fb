"""The real Codex CLI as the judge of ``profile --apply``: after ctxtool sets
``model_auto_compact_token_limit`` in Codex's own config.toml, resuming a rollout whose last
``token_count`` sits above that limit makes Codex send its compaction request first; below it,
it does not; and before the change the same rollout (above the new limit, below Codex's default
of 90% of the window) was resumed without compaction."""

from __future__ import annotations

import json
import os

import pytest
import tomlkit
from click.testing import CliRunner

from ctxtool.cli import cli
from tests.support.codex_agent import PROMPT, CodexSandbox
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.codex

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "codex-recorded", "parallel.jsonl")
COMPACTION = "You are performing a CONTEXT CHECKPOINT COMPACTION."


def at_context(tokens: int, dst: str) -> str:
    """The recorded rollout with its last token_count saying ``tokens`` of context."""
    lines = open(FIX, encoding="utf-8").read().splitlines()
    last = max(i for i, x in enumerate(lines) if '"token_count"' in x)
    obj = json.loads(lines[last])
    obj["payload"]["info"]["last_token_usage"].update(input_tokens=tokens - 12, output_tokens=12, total_tokens=tokens)
    lines[last] = json.dumps(obj, separators=(",", ":"))
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return dst


def compacts_first(box: CodexSandbox, srv: FakeOpenAI, tokens: int) -> bool:
    sid = box.install(at_context(tokens, os.path.join(box.root, f"s{tokens}.jsonl")))
    srv.requests_log.clear()  # this resume's requests only
    run = box.run(PROMPT, resume=sid, config=None, server=srv)
    bodies = run.bodies
    assert run.returncode == 0 and bodies, (run.returncode, run.stderr[-500:])
    first = json.dumps(bodies[0]["input"][-1])
    if COMPACTION in first:
        assert any(PROMPT in json.dumps(b["input"][-1]) for b in bodies[1:])  # then the prompt itself
        return True
    assert PROMPT in first
    return False


def test_limit_from_apply_makes_codex_compact_above_it_only():
    with CodexSandbox() as box, FakeOpenAI() as srv:
        box.write_config(srv.base_url)
        config = os.path.join(box.codex_home, "config.toml")
        assert not compacts_first(box, srv, 225_000)  # below Codex's default (90% of 258,400)

        session = at_context(225_000, os.path.join(box.root, "profiled.jsonl"))
        r = CliRunner().invoke(cli, ["profile", session, "--config", config, "--apply", "--yes", "--json"])
        assert r.exit_code == 0, r.output
        limit = tomlkit.parse(open(config, encoding="utf-8").read())["model_auto_compact_token_limit"]
        assert 100_000 < limit < 225_000

        assert compacts_first(box, srv, 225_000)  # above the new limit: the compaction comes first
        assert not compacts_first(box, srv, 100_000)  # below it: the prompt is sent as it is
