"""Compaction's cut: the true skip reason, a turn split as pi splits it, bashExecution as a turn start,
and the same cut as pi's own prepareCompaction (checked against the real agent)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ctxtool import compact as cp
from ctxtool.transcript import scan
from tests.support.pi_sessions import asst as _asst
from tests.support.pi_sessions import bash as _bash
from tests.support.pi_sessions import pi_session as _pi_session
from tests.support.pi_sessions import user as _user


def _plan(path, keep=20_000):
    return cp.plan_compaction(scan(str(path)), keep_recent_tokens=keep)


# ---------------------------------------------------------------- compact: the true skip reason


def test_compact_skip_reason_when_recent_messages_exceed_keep(tmp_path):
    # the audit's case scaled down: the whole context sits in two messages, far over keep-recent-tokens
    p = _pi_session(tmp_path / "two.jsonl", [_user("x" * 400_000), _asst("ok")])
    plan = _plan(p)
    assert plan.skip is not None
    assert "within --keep-recent-tokens" not in plan.skip  # the old, false reason
    assert "reaches back to message 1 of 2" in plan.skip and "first message" in plan.skip
    assert "100,000 tokens" in plan.skip  # the size of the message that holds the budget


def test_compact_skip_reason_within_keep_is_still_said_when_true(tmp_path):
    p = _pi_session(tmp_path / "small.jsonl", [_user("hello"), _asst("hi")])
    plan = _plan(p)
    assert plan.skip and "is within --keep-recent-tokens 20,000" in plan.skip


def test_compact_skip_reason_single_message(tmp_path):
    p = _pi_session(tmp_path / "one.jsonl", [_user("x" * 200_000)])
    plan = _plan(p)
    assert plan.skip and "single message of 50,000 tokens" in plan.skip


def test_compact_splits_a_turn_as_pi_does(tmp_path):
    # two huge messages in one turn: pi cuts at the assistant and summarizes the user as a turn prefix
    p = _pi_session(tmp_path / "split.jsonl", [_user("x" * 400_000), _asst("y" * 400_000)])
    plan = _plan(p)
    assert plan.skip is None
    assert plan.cut.split_turn and [u.role for u in plan.turn_prefix] == ["user"] and not plan.to_summarize
    assert plan.first_kept_entry.id == "e0000001"


def test_compact_cut_at_bash_execution_starts_its_own_turn(tmp_path):
    # pi's findTurnStartIndex starts at the cut entry: a bashExecution is its own turn start,
    # so the messages before it are history, not a turn prefix
    p = _pi_session(tmp_path / "bash.jsonl", [_user("a" * 400), _asst("b" * 400), _bash("z" * 120_000), _asst("done")])
    plan = _plan(p)
    assert plan.skip is None
    assert not plan.cut.split_turn and not plan.turn_prefix
    assert [u.role for u in plan.to_summarize] == ["user", "assistant"]
    assert plan.first_kept_entry.id == "e0000002"


PI_PREPARE = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const dist = process.argv[2];
const { prepareCompaction } = await import(pathToFileURL(dist + "/core/compaction/compaction.js").href);
const entries = readFileSync(process.argv[3], "utf8").trim().split("\n").map((l) => JSON.parse(l)).slice(1);
const p = prepareCompaction(entries, { enabled: true, reserveTokens: 16384, keepRecentTokens: Number(process.argv[4]) });
process.stdout.write(JSON.stringify(p ? { firstKept: p.firstKeptEntryId, summarize: p.messagesToSummarize.length,
  prefix: p.turnPrefixMessages.length, split: p.isSplitTurn } : null));
"""


@pytest.mark.pi
@pytest.mark.parametrize("case", ["two", "split", "bash", "small"])
def test_compact_cut_matches_pis_prepare_compaction(tmp_path, case):
    from tests.support.pi_agent import HARNESS_DIR, _node

    msgs = {
        "two": [_user("x" * 400_000), _asst("ok")],
        "split": [_user("x" * 400_000), _asst("y" * 400_000)],
        "bash": [_user("a" * 400), _asst("b" * 400), _bash("z" * 120_000), _asst("done")],
        "small": [_user("hello"), _asst("hi"), _user("more"), _asst("sure")],
    }[case]
    p = _pi_session(tmp_path / f"{case}.jsonl", msgs)
    script = tmp_path / "prep.mjs"
    script.write_text(PI_PREPARE)
    dist = HARNESS_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist"
    out = subprocess.run([_node(), str(script), str(dist), p, "20000"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    pi = json.loads(out)
    plan = _plan(p)
    assert plan.first_kept_entry is None or plan.first_kept_entry.id == pi["firstKept"]
    if plan.first_kept_entry is None:  # skipped: pi keeps everything from the first message too
        assert pi["summarize"] == 0 and pi["prefix"] == 0 and plan.kept[0].first.id == pi["firstKept"]
    assert len(plan.to_summarize) == pi["summarize"]
    assert len(plan.turn_prefix) == pi["prefix"]
    assert plan.cut.split_turn == (pi["split"] and pi["prefix"] > 0)
