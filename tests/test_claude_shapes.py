"""validate, repair, estimate and profile on real Claude Code transcript shapes.

The inputs (fixtures/claude-shapes/<case>.jsonl, built by build.py there) model what
Claude Code 2.1.x writes: the full envelope, responses split one block per line with
placeholder usage, results pointing at the line holding their call, progress and
metadata lines, compaction records, server tools, interrupts, API error messages and
subagent lines. <case>.expected.json holds the answers, worked out by hand (see `_how`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.estimate import Options, estimate_file
from ctxtool.profile import profile_session
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.validate import validate_file
from ctxtool.view import provider_view, sent_messages

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "claude-shapes"
CASES = sorted(p.name[: -len(".expected.json")] for p in FIX.glob("*.expected.json"))


def load(case):
    return FIX / f"{case}.jsonl", json.loads((FIX / f"{case}.expected.json").read_text())


def lines_of(path):
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines()]


def test_all_shapes_present():
    assert set(CASES) == {"split_parallel", "compaction", "server_tools", "interrupted", "subagent", "main_with_sidechain"}


def test_fixtures_carry_the_real_envelope():
    for case in CASES:
        path, _ = load(case)
        for obj in lines_of(path):
            if obj["type"] not in ("user", "assistant", "system", "progress"):
                continue
            for key in ("uuid", "parentUuid", "sessionId", "timestamp", "cwd", "version", "gitBranch", "isSidechain", "userType"):
                assert key in obj, (case, key, obj["type"])
            if obj["type"] == "assistant":
                m = obj["message"]
                assert {"id", "model", "usage", "stop_reason"} <= set(m), case
                if m["model"] != "<synthetic>":
                    assert obj["requestId"].startswith("req_"), case
        if case == "subagent":
            assert all(o["isSidechain"] and o["agentId"] for o in lines_of(path))


@pytest.mark.parametrize("case", CASES)
def test_validate(case):
    path, exp = load(case)
    r = validate_file(str(path))
    assert r["format"] == exp["format"]
    assert r["messages"] == exp["validate"]["messages"]
    assert r["bad_lines"] == []
    errors = [{"kind": v["kind"], "message_index": v["message_index"], "lines": v["lines"], "ids": v["ids"]}
              for v in r["violations"] if v["severity"] == "error"]
    assert errors == exp["validate"]["errors"]
    warnings = [{"kind": v["kind"], "lines": v["lines"]} for v in r["violations"] if v["severity"] == "warning"]
    assert warnings == exp["validate"]["warnings"]
    code = CliRunner().invoke(cli, ["validate", str(path)]).exit_code
    assert code == (1 if exp["validate"]["errors"] else 0)


@pytest.mark.parametrize("case", CASES)
def test_view_is_what_claude_code_sends(case):
    """Split lines merged, consecutive user lines one message, metadata/progress/sidechain/API-error lines left out."""
    path, exp = load(case)
    t = scan(str(path), keep=True)
    assert [[m.role, m.lines] for m in provider_view(t.format_name, t.entries)] == exp["view"]


@pytest.mark.parametrize("case", CASES)
def test_repair_check_and_idempotence(case, tmp_path):
    path, exp = load(case)
    src = tmp_path / path.name
    shutil.copy(path, src)
    before = src.read_bytes()
    rep = repair_file(str(src), check=True)
    got = [{"kind": c.kind, "action": c.action, "line": c.line, "id": c.id} for c in rep.changes]
    assert got == exp["repair"]["changes"]
    assert src.read_bytes() == before
    assert not [v for v in rep.after if v.severity == "error"]
    code = CliRunner().invoke(cli, ["repair", "--check", str(src)]).exit_code
    assert code == (1 if got else 0)
    out = tmp_path / "out.jsonl"
    repair_file(str(src), output=str(out))
    if not got:
        assert out.read_bytes() == before  # nothing to repair: the same bytes
    again = repair_file(str(out), check=True)
    assert again.changes == [], [c.to_dict() for c in again.changes]  # a repaired file needs nothing more
    assert not [v for v in again.before if v.severity == "error"]


def test_interrupted_call_is_dropped_as_the_client_drops_it():
    """The Bash call at L3 never got a result and the user went on: the real client (judged)
    sends the response without that call, so the view as sent does too, and validate warns."""
    path, exp = load("interrupted")
    t = scan(str(path))
    sent = sent_messages(t)
    calls = [b for m in sent for b in m["content"] if b.get("type") == "tool_use"]
    assert "toolu_01Long3Qp" not in [c["id"] for c in calls]
    assert "toolu_01Long3Qp" in path.read_text()
    (w,) = [v for v in validate_file(str(path))["violations"] if v["kind"] == "missing-tool-result"]
    assert w["severity"] == "warning" and w["ids"] == ["toolu_01Long3Qp"]


@pytest.mark.parametrize("case", CASES)
def test_heuristic_estimate(case):
    path, exp = load(case)
    r = estimate_file(str(path), Options(top=3))
    e = exp["estimate"]
    assert r["format"] == "claude" and r["model"] == "claude-opus-4-6"
    assert r["tokens"] == r["raw_tokens"] == e["heuristic"]
    assert r["messages"] == e["messages"]
    assert r["entries_in_context"] == e["entries_in_context"]
    assert r["compactions"] == e.get("compactions", 0)
    b = r["breakdown"]
    assert b["by_role"] == e["by_role"]
    assert {x["tool"]: x["calls"] for x in b["by_tool"] if x["calls"]} == e["tool_calls"]


@pytest.mark.parametrize("case", CASES)
def test_usage_estimate(case):
    path, exp = load(case)
    r = estimate_file(str(path), Options(tokenizer="usage"))
    u, e = r["usage"], exp["usage"]
    # what the next request carries: the recorded input side + the output (or, for a placeholder, the
    # response's own content) + the heuristic for what came after (pi's estimateContextTokens)
    assert r["tokens"] == e["tokens"] and u["recorded"] == e["recorded"]
    assert r["tokens"] == u["recorded"] + u["output_added"] + u["response_heuristic"] + u["after"]
    assert u["output_added"] == (0 if e["placeholder"] else e["output"])
    assert u["line"] == e["line"] and u["lines"] == e["lines"]
    assert u["placeholder"] is e["placeholder"]
    assert u["output"] == e["output"]
    assert r["breakdown"]["tokens"] == exp["estimate"]["heuristic"]


@pytest.mark.parametrize("case", CASES)
def test_profile(case):
    path, exp = load(case)
    p = profile_session(str(path))
    e = exp["profile"]
    assert p["format"] == "claude"
    assert p["messages"] == e["messages"]
    assert p["user_turns"] == e["user_turns"]
    assert p["requests"] == e["requests"]
    assert p["tool_calls"] == e["tool_calls"]
    assert p["timeline"]["series"] == e["timeline"]
    assert p["timeline"]["recorded_points"] == len(e["timeline"])
    assert p["tokens"]["baseline"]["tokens"] == e["baseline"]
    assert p["tokens"]["context_now"] == e["context_now"]
    assert {x["name"]: x["result_chars"] for x in p["tools"]} == e["tool_result_chars"]
    if "compactions" in e:
        got = [{k: c[k] for k in ("line", "tokens_before", "summary_chars")} for c in p["compactions"]["items"]]
        assert got == e["compactions"]
