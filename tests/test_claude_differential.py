"""Differential test against the real Claude Code client: recorded files damaged at random (a
line dropped, two dropped, a line written twice, two lines swapped, the file cut short, a line
re-linked to another) must be read by ctxtool exactly as the client reads them when it resumes
them. The damage is seeded, so each case is the same on every run; the cases cover the rules of
``docs/claude-code-rules.md`` in combinations nobody wrote by hand (the leaf after a cut, the
fold of a compaction, a response whose lines hang on different branches, bridges by time).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from ctxtool.repair import repair_file
from tests.support.claude_agent import conversation, reminder_texts, resume_payload, well_paired

pytestmark = pytest.mark.claude

REC = Path(__file__).resolve().parent.parent / "fixtures" / "claude-recorded"
FILES = [p for p in sorted(REC.glob("*.jsonl")) if ".agent-" not in p.name and p.name != "subagent.jsonl"]
CASES = 72


def damaged(seed: int) -> tuple[str, str, list[bytes]]:
    rng = random.Random(seed)
    src = rng.choice(FILES)
    lines = src.read_bytes().split(b"\n")[:-1]
    linked = [i for i, x in enumerate(lines) if b'"uuid"' in x]
    kind = rng.choice(["drop", "drop", "drop2", "dup", "swap", "cut", "relink"])
    if kind == "drop":
        k = rng.choice(linked)
        out = lines[:k] + lines[k + 1:]
    elif kind == "drop2":
        gone = set(rng.sample(linked, 2))
        out = [x for i, x in enumerate(lines) if i not in gone]
    elif kind == "dup":
        k = rng.choice(linked)
        out = lines[:k + 1] + [lines[k]] + lines[k + 1:]
    elif kind == "swap":
        k = rng.randrange(len(lines) - 1)
        out = list(lines)
        out[k], out[k + 1] = out[k + 1], out[k]
    elif kind == "cut":
        out = lines[:rng.randrange(len(lines) // 2, len(lines))]
    else:
        k, j = rng.choice(linked), rng.choice(linked)
        obj = json.loads(lines[k])
        obj["parentUuid"] = json.loads(lines[j])["uuid"]
        out = list(lines)
        out[k] = json.dumps(obj, separators=(",", ":")).encode()
    return src.name, kind, out


@pytest.mark.parametrize("seed", range(CASES))
def test_damaged_recorded_file_is_read_as_the_client_reads_it(seed, tmp_path):
    name, kind, lines = damaged(seed)
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    sent = resume_payload(str(path))
    ours = sent_messages(scan(str(path)))
    assert conversation(ours) == conversation(sent["messages"]), f"{name}, {kind}"
    theirs = None if sent["compacting"] else reminder_texts(sent["messages"])
    if theirs is not None:
        assert reminder_texts(ours) == theirs, f"{name}, {kind}"


@pytest.mark.parametrize("seed", range(0, CASES, 2))
def test_repair_of_a_damaged_recorded_file_loses_nothing_the_client_sent(seed, tmp_path):
    """After repair the client resumes the file well paired, sends at least the messages it sent
    before, reads it as ctxtool does, and a second repair finds nothing."""
    name, kind, lines = damaged(seed)
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = conversation(resume_payload(str(path))["messages"])
    repair_file(str(path), backup=False)
    sent = resume_payload(str(path))["messages"]
    after = conversation(sent)
    assert well_paired(sent) == [], f"{name}, {kind}"
    assert len(after) >= len(before), f"{name}, {kind}: the repaired file sends less"
    assert conversation(sent_messages(scan(str(path)))) == after, f"{name}, {kind}"
    assert repair_file(str(path), check=True).changes == [], f"{name}, {kind}"
