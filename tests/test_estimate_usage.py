"""`ctxtool estimate -t usage` and `--calibrate` on Claude Code files: what the next request carries.

1. ``-t usage`` is pi's estimateContextTokens for Claude Code too: the last response's recorded
   context (input + cache creation + cache read) + its output tokens + the heuristic for the view's
   messages after it; for a response with only streaming records, the heuristic of its own content
   instead of the placeholder ``output_tokens``.
2. ``--calibrate`` leaves a subagent's lines in a main file out (``isSidechain`` after a main-thread
   line), as the view and ``window.Evidence`` do; a subagent file is calibrated on its own lines.
3. ``--calibrate``'s usage baseline is the final record of each response, never a placeholder's
   ``output_tokens``.

Figures are worked out by hand: the heuristic is ceil(chars / 4) per message (a response split over
several lines is one message).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.estimate import Options, estimate_file
from ctxtool.transcript import scan
from ctxtool.view import claude_main_thread
from ctxtool.window import Evidence

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
SHAPES = ROOT / "claude-shapes"
EST = ROOT / "estimate"


def h(*texts: str) -> int:
    """pi's heuristic for one message made of ``texts``."""
    return math.ceil(sum(len(t) for t in texts) / 4)


# ---------------------------------------------------------------- builders


def _cc(t, uuid, parent, *, side=False, **kw):
    return {"parentUuid": parent, "isSidechain": side, "userType": "external", "cwd": "/w", "sessionId": "S",
            "version": "2.1.39", "gitBranch": "main", "type": t, "uuid": uuid,
            "timestamp": "2026-01-01T00:00:00.000Z", **kw}


def prompt(uuid, parent, text, *, side=False):
    return _cc("user", uuid, parent, side=side, message={"role": "user", "content": text})


def result(uuid, parent, tool_id, text, *, side=False):
    return _cc("user", uuid, parent, side=side,
               message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": text}]},
               toolUseResult={"stdout": text * 20, "stderr": ""})


def asst(uuid, parent, mid, block, usage, *, stop=None, side=False):
    inp, cw, cr, out = usage
    return _cc("assistant", uuid, parent, side=side, requestId="req_" + mid,
               message={"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant",
                        "content": [block], "stop_reason": stop,
                        "usage": {"input_tokens": inp, "cache_creation_input_tokens": cw,
                                  "cache_read_input_tokens": cr, "output_tokens": out}})


def api_error(uuid, parent, text):
    return _cc("assistant", uuid, parent, isApiErrorMessage=True,
               message={"model": "<synthetic>", "id": "msg_err_" + uuid, "type": "message", "role": "assistant",
                        "content": [{"type": "text", "text": text}], "stop_reason": "stop_sequence",
                        "usage": {"input_tokens": 0, "output_tokens": 0}})


def text(s):
    return {"type": "text", "text": s}


def bash(tool_id, command):
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}


def write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return str(path)


def prefix(tmp_path, src: Path, n: int) -> str:
    """The first ``n`` lines of ``src``: the file as it was before a later request."""
    p = tmp_path / f"{src.stem}.{n}.jsonl"
    p.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return str(p)


def usage_of(path) -> dict:
    return estimate_file(str(path), Options(tokenizer="usage"))


# ---------------------------------------------------------------- 1. -t usage: what the next request carries

RUN = "Run the tests"
CMD = "pytest -q"
RUNNING = "Running."
RES = "3 passed, 1 failed"
LINT = "and now lint it"


def test_final_response_adds_its_output_and_the_messages_after_it(tmp_path):
    p = write(tmp_path / "s.jsonl", [
        prompt("u1", None, RUN),
        asst("a1", "u1", "msg_A", bash("toolu_1", CMD), (3, 1000, 2000, 9)),  # streaming placeholder
        asst("a2", "a1", "msg_A", text(RUNNING), (3, 1000, 2000, 120), stop="tool_use"),  # final record
        _cc("progress", "p1", "a2", data={"type": "hook_progress", "command": "guard.sh " * 50}),
        result("r1", "a1", "toolu_1", RES),
        api_error("e1", "r1", "API Error: 500 Internal server error " * 10),  # Claude Code's own line: not sent
        prompt("u2", "e1", LINT),
    ])
    u = usage_of(p)["usage"]
    after = h(RES) + h(LINT)  # 5 + 4: the result and the new prompt; not the API error, progress or toolUseResult
    assert (u["recorded"], u["output_added"], u["response_heuristic"], u["after"]) == (3003, 120, 0, after)
    assert usage_of(p)["tokens"] == 3003 + 120 + after == 3132
    assert u["placeholder"] is False and u["output"] == 120 and u["lines"] == [2, 3]
    assert u["after_messages"] == 1  # the result and the prompt are one user message
    assert "+ its output_tokens 120" in u["basis"] and f"+ heuristic {after} for 1 later message(s)" in u["basis"]


def test_results_between_the_lines_of_the_last_response_count_as_after(tmp_path):
    """Parallel calls written call, result, call, result: the results are not in the recorded input
    side (the request was sent before them); the response's own later line is (its output)."""
    p = write(tmp_path / "s.jsonl", [
        prompt("u1", None, RUN),
        asst("a1", "u1", "msg_B", bash("toolu_1", CMD), (5, 100, 4000, 60), stop="tool_use"),
        result("r1", "a1", "toolu_1", RES),
        asst("a2", "a1", "msg_B", bash("toolu_2", "ruff check ."), (5, 100, 4000, 60), stop="tool_use"),
        result("r2", "a2", "toolu_2", "All checks passed!"),
    ])
    r = usage_of(p)
    u = r["usage"]
    assert u["lines"] == [2, 4] and u["after"] == h(RES) + h("All checks passed!")
    assert r["tokens"] == 4105 + 60 + h(RES) + h("All checks passed!")


def test_placeholder_only_response_uses_its_content_not_the_placeholder_output(tmp_path):
    think, call_cmd = "Let me look at the call sites first.", "grep -rn total ."
    p = write(tmp_path / "agent.jsonl", [
        prompt("u1", None, "Find every call site of total()", side=True),
        asst("a1", "u1", "msg_C", text(think), (3, 4000, 0, 9), side=True),
        asst("a2", "a1", "msg_C", bash("toolu_1", call_cmd), (3, 4000, 0, 9), side=True),
        result("r1", "a2", "toolu_1", "cart.py:3:def total(items):", side=True),
    ])
    r = usage_of(p)
    u = r["usage"]
    own = h(think, "Bash" + json.dumps({"command": call_cmd}, separators=(",", ":")))  # one message: one ceil
    assert u["placeholder"] is True and u["output"] == 9
    assert (u["recorded"], u["output_added"], u["response_heuristic"]) == (4003, 0, own)
    assert u["after"] == h("cart.py:3:def total(items):")
    assert r["tokens"] == 4003 + own + u["after"]
    assert "instead of the placeholder output_tokens 9" in u["basis"]


def test_a_placeholder_written_after_the_final_record_does_not_replace_it(tmp_path):
    p = write(tmp_path / "s.jsonl", [
        prompt("u1", None, RUN),
        asst("a1", "u1", "msg_D", text("Done."), (2, 10, 3000, 50), stop="end_turn"),
        asst("a2", "a1", "msg_D", text(" More."), (2, 10, 3000, 9)),
    ])
    u = usage_of(p)["usage"]
    assert (u["placeholder"], u["output_added"], u["response_heuristic"]) == (False, 50, 0)
    assert usage_of(p)["tokens"] == 3012 + 50


def test_fixtures_match_profile_context_now():
    """profile's context_now counts the same thing (recorded + output, or + the response's characters)."""
    for case in ("split_parallel", "subagent", "main_with_sidechain", "compaction"):
        exp = json.loads((SHAPES / f"{case}.expected.json").read_text())
        assert usage_of(SHAPES / f"{case}.jsonl")["tokens"] == exp["profile"]["context_now"], case


def test_cli_says_what_was_added(tmp_path):
    res = CliRunner().invoke(cli, ["estimate", "-t", "usage", str(EST / "claude_split.jsonl")])
    assert res.exit_code == 0, res.output
    out = " ".join(res.stdout.split())
    assert "3,065 of 200,000" in out
    assert "3,055 (lines 8-9, 2 record(s) deduplicated) + its output_tokens 10 + heuristic 0 for 0 later message(s)" in out
    res = CliRunner().invoke(cli, ["estimate", "-t", "usage", str(SHAPES / "subagent.jsonl")])
    out = " ".join(res.stdout.split())
    assert "4,146 of" in out and "+ heuristic 21 for the response's own content" in out


# ---------------------------------------------------------------- 2. --calibrate without a subagent's lines


def test_calibration_leaves_out_sidechain_lines_of_a_main_file():
    cal = estimate_file(str(SHAPES / "main_with_sidechain.jsonl"), Options(calibrate=True))["calibration"]
    # L2 (11003) and L8 (11152); the subagent's L4 (30004) and L6 (30906) are another context
    assert cal["turns"] == 2
    heur = cal["estimators"]["heuristic"]
    # heuristic before L2: L1 14; before L8: L1 14 + L2 30 + L7 12 (no sidechain characters)
    assert heur["raw_error_median"] == pytest.approx(((11003 - 14) / 11003 + (11152 - 56) / 11152) / 2, abs=1e-4)
    usage = cal["estimators"]["usage"]
    # L2's 11003 + its output 120 + the Task result L7 (12) predicts L8's 11152 (was 0.63 with L4/L6)
    assert usage["turns"] == 1 and usage["error_median"] == pytest.approx((11152 - 11135) / 11152, abs=1e-4)


def test_subagent_file_is_calibrated_on_its_own_lines():
    cal = estimate_file(str(SHAPES / "subagent.jsonl"), Options(calibrate=True))["calibration"]
    assert cal["turns"] == 2 and cal["estimators"]["heuristic"]["turns"] == 2


def test_main_thread_rule_is_the_evidence_rule(tmp_path):
    p = write(tmp_path / "s.jsonl", [
        prompt("s0", None, "a sidechain line before any main-thread line", side=True),  # kept (as Evidence)
        api_error("e0", "s0", "API Error: overloaded"),  # not the main thread
        prompt("s1", "e0", "still before the main thread", side=True),  # kept
        prompt("u1", "s1", RUN),
        asst("a1", "u1", "msg_E", text("x"), (1, 1, 1, 1), stop="end_turn"),
        prompt("s2", "a1", "a subagent's prompt", side=True),  # dropped
        asst("a2", "s2", "msg_F", text("y"), (1, 90000, 1, 1), stop="end_turn", side=True),  # dropped
        prompt("u2", "a1", LINT),
    ])
    t = scan(p, keep=True)
    body = [e for e in t.entries if e.kind != "header"]
    assert [e.lineno for e in claude_main_thread(body)] == [1, 2, 3, 4, 5, 8]
    # Evidence ignores exactly the dropped lines: the 90,003-token sidechain usage is no peak
    assert Evidence.of(t.entries).peak("claude-opus-4-6")[0] == 3
    # a file that is all sidechain keeps every line
    sub = scan(str(SHAPES / "subagent.jsonl"), keep=True).entries
    assert claude_main_thread(sub) == [e for e in sub]


# ---------------------------------------------------------------- 3. --calibrate's usage baseline: final records only


def test_calibration_baseline_of_a_placeholder_response_is_not_its_output_tokens():
    cal = estimate_file(str(SHAPES / "subagent.jsonl"), Options(calibrate=True))["calibration"]
    # L4 (4125) predicted from L2's input side 4003 + L2's own content (Grep call, 13) + the result L3 (21);
    # the placeholder output_tokens 9 of L2 is not used (it gave 4003 + 9 + 21)
    assert cal["estimators"]["usage"]["error_median"] == pytest.approx((4125 - 4037) / 4125, abs=1e-4)


def test_calibration_baseline_uses_the_final_record(tmp_path):
    # claude_split: msg_01 placeholders at L2/L3 (output 9), final at L5 (output 120): L8's 3055 is
    # predicted from 3003 + 120 + the result L6 (2)
    cal = estimate_file(str(EST / "claude_split.jsonl"), Options(calibrate=True))["calibration"]
    assert cal["estimators"]["usage"]["error_median"] == pytest.approx((3125 - 3055) / 3055, abs=1e-4)
    # with msg_01 written only as streaming records, its content (16 + 27 + 8 chars: 13) replaces the
    # placeholder output_tokens (120 on the last chunk)
    src = (EST / "claude_split.jsonl").read_text().replace('"stop_reason":"tool_use"', '"stop_reason":null')
    p = tmp_path / "streamed.jsonl"
    p.write_text(src)
    cal = estimate_file(str(p), Options(calibrate=True))["calibration"]
    assert cal["estimators"]["usage"]["error_median"] == pytest.approx((3055 - 3018) / 3055, abs=1e-4)


@pytest.mark.parametrize("case,cuts", [("split_parallel", (11, 18)), ("subagent", (3,)), ("compaction", (3, 10))])
def test_calibration_predicts_each_turn_as_usage_on_the_file_before_it(tmp_path, case, cuts):
    """The calibration's usage estimate for a turn is what -t usage says of the file written up to
    that request: one rule for both."""
    src = SHAPES / f"{case}.jsonl"
    full = estimate_file(str(src), Options(calibrate=True))
    recorded = {e.lineno: e.usage.context for e in scan(str(src), keep=True).entries
                if e.role == "assistant" and e.usage is not None}
    errs = []
    for n in cuts:
        before = usage_of(prefix(tmp_path, src, n))["tokens"]
        rec = recorded[n + 1]  # the next line opens the next response
        errs.append(abs(before - rec) / rec)
    u = full["calibration"]["estimators"]["usage"]
    assert u["evaluated"] == len(cuts)
    assert u["error_median"] == pytest.approx(statistics.median(errs), abs=1e-4)
    assert u["error_p90"] == pytest.approx(max(errs), abs=1e-4)
