"""Tool pairing is linear in the number of calls: 10,000 unanswered calls in one message.

Before: 4,000 such calls took 6.6 s in ``repair --check`` and 12.6 s in ``compact -n``; 10,000
took 38.6 s and more than a minute (the calling line was read again for every missing result,
dropped results were removed from a list, calls of one id were searched from the start).
The one wall-clock bound the task asks for: repaired in under a second (about 0.2 s here).
"""

import time

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.compact import plan_compaction
from ctxtool.repair import plan_repair
from ctxtool.transcript import no_gc, scan
from ctxtool.validate import validate_entries

N = 10_000
BOUND_S = 1.0


def session(fmt: str, calls: list[dict], after: list) -> list[dict]:
    if fmt == "pi":
        call_blocks = [{"type": "toolCall", "id": c["id"], "name": c["name"], "arguments": {"path": "/f"}} for c in calls]
        return [{"type": "session", "version": 3, "id": "7d3f4c2a-5b1e-4e8f-9a6c-2d1b0e9f8a7c", "timestamp": "2026-04-17T02:39:40.101Z", "cwd": "/"},
                {"type": "message", "id": "a0000001", "parentId": None, "timestamp": "2026-04-17T02:39:41.000Z",
                 "message": {"role": "user", "content": "go", "timestamp": 1776393581000}},
                {"type": "message", "id": "a0000002", "parentId": "a0000001", "timestamp": "2026-04-17T02:39:42.000Z",
                 "message": {"role": "assistant", "content": call_blocks, "stopReason": "toolUse", "timestamp": 1776393582000}},
                {"type": "message", "id": "a0000003", "parentId": "a0000002", "timestamp": "2026-04-17T02:39:43.000Z",
                 "message": {"role": "user", "content": "next", "timestamp": 1776393583000}}]
    blocks = [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": {"path": "/f"}} for c in calls]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": blocks}, *after, {"role": "user", "content": "next"}]


def write(tmp_path, objs) -> str:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    return str(path)


CALLS = [{"id": f"toolu_{i}", "name": "read"} for i in range(N)]
RESULTS = [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"} for i in range(N)]
SHAPES = {
    "pi-unanswered": ("pi", CALLS, []),
    "messages-unanswered": ("messages", CALLS, []),
    "duplicate-results": ("messages", CALLS, [{"role": "user", "content": RESULTS + RESULTS}]),
    "one-reused-id": ("messages", [dict(c, id="toolu_x") for c in CALLS],
                      [{"role": "user", "content": [dict(r, tool_use_id="toolu_x") for r in RESULTS]}]),
    "orphans": ("messages", [], [{"role": "user", "content": RESULTS}]),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_pairing_10000_calls_in_one_message_takes_under_a_second(tmp_path, shape):
    fmt, calls, after = SHAPES[shape]
    t = scan(write(tmp_path, session(fmt, calls, after)), stats=False)
    with no_gc():  # as repair_file runs it (the collector would re-walk the test session's objects)
        start = time.perf_counter()
        plan = plan_repair(t)
        after_errors = [v for v in validate_entries(t.format_name, plan.final_entries) if v.severity == "error"]
        elapsed = time.perf_counter() - start
    assert not after_errors
    assert len(plan.changes) >= N
    assert elapsed < BOUND_S, f"{shape}: {elapsed:.2f} s"


def test_validate_and_compact_plan_of_10000_unanswered_calls(tmp_path):
    path = write(tmp_path, session("messages", CALLS, []))
    start = time.perf_counter()
    violations = validate_entries("messages", scan(path, stats=False).entries)
    assert time.perf_counter() - start < BOUND_S
    assert violations[0].ids == [c["id"] for c in CALLS]
    start = time.perf_counter()
    plan = plan_compaction(scan(path), keep_recent_tokens=0)
    assert time.perf_counter() - start < BOUND_S
    assert plan.messages_to_summarize >= 1


def test_repair_check_and_compact_dry_run_cli(tmp_path):
    path = write(tmp_path, session("pi", CALLS, []))
    start = time.perf_counter()
    assert CliRunner().invoke(cli, ["repair", "--check", path]).exit_code == 1
    assert CliRunner().invoke(cli, ["compact", "-n", "--keep-recent-tokens", "0", path]).exit_code == 0
    assert time.perf_counter() - start < 4 * BOUND_S  # two commands, each scanning the file twice
