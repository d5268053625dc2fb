"""The real Claude Code client as the judge of ``profile --apply``: after ctxtool sets a lower
auto-compact threshold in the client's own settings.json, resuming a session that sits above
that threshold makes the client send a summarization request first; below it, it does not;
and the same session above the new threshold but below the client's default one was resumed
without compaction before the change.

The sandbox's settings.json already sets CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000 (the user's own
value, kept by the edit), so the percentage applies to a 200K window whatever the model's is.
The session's context is what its last response's recorded usage says: the client trusts it."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from tests.support.claude_agent import PROMPT, ClaudeSandbox

pytestmark = pytest.mark.claude

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "profile", "claude_tool_heavy.jsonl")
SESSION_ID = "5e1f0c1d-7a2b-4c3d-9e4f-a5b6c7d8e9f0"
WINDOW = "200000"


def at_context(tokens: int) -> str:
    """The tool-heavy fixture with its last response's usage saying ``tokens`` of context."""
    lines = open(FIX).read().splitlines()
    objs = [json.loads(x) for x in lines]
    last = [o for o in objs if o.get("type") == "assistant"][-1]["message"]["id"]
    out = []
    for o in objs:
        if o.get("type") == "assistant" and o["message"]["id"] == last:
            o["message"]["usage"].update(input_tokens=10, cache_creation_input_tokens=0, cache_read_input_tokens=tokens - 10)
        o["sessionId"] = SESSION_ID
        out.append(json.dumps(o, separators=(",", ":")))
    return "\n".join(out) + "\n"


def summarizes_first(box: ClaudeSandbox, tokens: int) -> bool:
    """Resume the session at ``tokens`` of context; True when the client's first request
    asks for a summary of the conversation (its compaction) rather than answering the prompt."""
    src = os.path.join(box.root, "session.jsonl")
    with open(src, "w") as f:
        f.write(at_context(tokens))
    box.install(src, SESSION_ID)
    run = box.run(PROMPT, resume=SESSION_ID)
    reqs = run.messages_requests
    assert run.returncode == 0 and reqs, (run.returncode, run.stderr[:500])
    last = reqs[0].body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last if isinstance(b, dict))
    summary = "<summary>" in text and "<analysis>" in text
    if summary:  # after the summary, the prompt itself is answered
        assert any(PROMPT in json.dumps(r.body["messages"][-1]) for r in reqs[1:])
    return summary


def test_lower_threshold_from_apply_makes_claude_code_compact_above_it_only():
    with ClaudeSandbox() as box:
        settings = os.path.join(box.config, "settings.json")
        with open(settings, "w") as f:
            f.write('{\n  "env": {\n    "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "%s"\n  }\n}\n' % WINDOW)
        # 160K of a 200K window: under the client's own threshold (the window less its output
        # reserve and summary buffer), so no compaction before the change
        assert not summarizes_first(box, 160_000)

        r = CliRunner().invoke(cli, ["profile", FIX, "--config", settings, "--apply", "--yes", "--json"])
        assert r.exit_code == 0, r.output
        env = json.load(open(settings))["env"]
        assert env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "70" and env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == WINDOW

        assert summarizes_first(box, 160_000)  # above 70%: the summarization request comes first
        assert not summarizes_first(box, 100_000)  # below it: the prompt is sent as it is
