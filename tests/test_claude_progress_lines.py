"""Progress lines (``"type": "progress"``: one per tool's progress, written by the 2.1 clients before 2.1.330 and most
of the lines of a long session of theirs), judged with the real Claude Code client.

What the client does, read in its code (2.1.330, its loader) and probed here on ``cleared_session_turns.jsonl``: a
progress line is no row. As it loads the file, line by line, it keeps a map of the progress lines it has read: their
uuid -> the parent the line names, or, where that parent is a progress line read before, the parent that one holds. A
row read later whose parent (a string JavaScript takes for true) is in the map is re-linked to the parent the map holds
(null where it holds none). So a row whose parent is a progress line written after it has lost its parent (the client
bridges it by time), and a progress line that shares a row's uuid takes the children of that row that are read after
it. ctxtool read progress lines as rows the walk passed through: it sent the wrong history in four of the shapes
below. ``claude_chain.chain`` now reads them as the client does (``spliced``), and repair leaves them as written
(their uuids are no rows' to rename)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtool.claude_chain import chain
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.view import sent_messages
from tests.support import judge_fuzz
from tests.support.claude_agent import conversation, resume_payload

REC = Path(__file__).resolve().parent.parent / "fixtures" / "claude-recorded"
SRC = REC / "cleared_session_turns.jsonl"
P1 = "11111111-1111-4111-8111-111111111111"
P2 = "22222222-2222-4222-8222-222222222222"


def _shapes() -> dict:
    """name -> (the lines, whether the client sends the first turn's answer)"""
    objs = [json.loads(x) for x in SRC.read_text(encoding="utf-8").splitlines()]
    prompt1, call1 = objs[9], objs[28]
    text1, prompt2 = objs[35], objs[40]
    assert prompt1["message"]["content"] == "First after clear." and prompt2["message"]["content"] == "Second after clear."
    assert call1["message"]["content"][0]["type"] == "tool_use" and text1["message"]["content"][0]["text"] == "Fresh."
    assert prompt2["parentUuid"] == text1["uuid"]

    def progress(uuid, parent, **more) -> dict:
        o = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": prompt1["cwd"],
             "sessionId": prompt1["sessionId"], "version": "2.1.39", "gitBranch": "", "type": "progress",
             "data": {"type": "bash_progress", "output": "", "fullOutput": "", "elapsedTimeSeconds": 1, "totalLines": 0},
             "toolUseID": "toolu_x", "parentToolUseID": "toolu_x", "uuid": uuid, "timestamp": prompt2["timestamp"]}
        o.update(more)
        return o

    def made(at: dict, extra: list, parent=None) -> list:
        """the file with the lines of ``extra`` put in (each (before the line of this uuid | None: at the end, line)),
        the second prompt's parent set to ``parent`` (when given)"""
        out = [dict(o) for o in objs]
        if parent is not None:
            out[40]["parentUuid"] = parent
        for before, line in extra:
            k = next(i for i, o in enumerate(out) if o.get("uuid") == before) if before else len(out)
            out.insert(k, line)
        return out

    p2 = prompt2["uuid"]
    return {
        # a progress line read before the prompt naming it: the prompt re-linked to the progress line's parent
        "before the prompt, naming the first prompt": (made({}, [(p2, progress(P1, prompt1["uuid"]))], P1), False),
        "two in order": (made({}, [(p2, progress(P2, text1["uuid"])), (p2, progress(P1, P2))], P1), True),
        "naming null: the prompt is a root": (made({}, [(p2, progress(P1, None))], P1), False),
        # written after the prompt naming it: a lost parent there, bridged by time to the first turn's answer
        "after the prompt, naming the first prompt": (made({}, [(None, progress(P1, prompt1["uuid"]))], P1), True),
        "before the prompt, naming one after it": (made({}, [(p2, progress(P1, P2)), (None, progress(P2, prompt1["uuid"]))],
                                                        P1), True),
        # a progress line with a row's uuid, read before that row's children: they hang off its own parent
        "with the answer's uuid, before the prompt": (made({}, [(p2, progress(text1["uuid"], prompt1["uuid"]))]), False),
        "with the answer's uuid, before the answer": (made({}, [(call1["uuid"], progress(text1["uuid"], prompt1["uuid"]))]),
                                                      False),
        "with the answer's uuid, at the end": (made({}, [(None, progress(text1["uuid"], prompt1["uuid"]))]), True),
        # a progress line whose uuid is no string is in no map
        "its uuid a number": (made({}, [(p2, progress(7, prompt1["uuid"]))]), True),
    }


SHAPES = _shapes()


def _write(path: Path, lines: list) -> None:
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in lines), encoding="utf-8")


@pytest.mark.claude
@pytest.mark.parametrize("name", list(SHAPES))
def test_progress_lines_are_read_out_of_the_links_as_the_client_reads_them(tmp_path, name):
    lines, answered = SHAPES[name]
    path = tmp_path / "cleared_session_turns.jsonl"
    _write(path, lines)
    judge = resume_payload(str(path))["messages"]
    ours = sent_messages(scan(str(path)))
    assert conversation(ours) == conversation(judge)
    assert ("Fresh." in json.dumps(conversation(ours))) == answered
    assert judge_fuzz.problems("claude", str(path), str(tmp_path / "work")) == []  # (repair too, resumed again)
    # repair keeps what the client sends: a uuid a progress line shares with a row is not renamed (the client's reading
    # would change), a row whose parent is lost past a progress line is re-linked to the row the client bridges it to
    out = tmp_path / "repaired.jsonl"
    report = repair_file(str(path), output=str(out))
    assert not any(c.kind == "duplicate-id" for c in report.changes)
    if report.written:
        assert conversation(resume_payload(str(out))["messages"]) == conversation(judge)


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_c_part_and_the_python_splice_progress_lines_alike(tmp_path, monkeypatch, name):
    lines, answered = SHAPES[name]
    path = tmp_path / "s.jsonl"
    _write(path, lines)
    got = []
    for native in (True, False):
        if not native:
            monkeypatch.setattr("ctxtool.claude_chain.index_passes", lambda: None)
        t = scan(str(path))
        spliced: dict = {}
        rows: dict = {}
        seq = chain(t.entries, rows=rows, spliced=spliced)
        got.append(([e.index for e in seq], sorted(rows), {k if isinstance(k, str) else k.index: v for k, v in spliced.items()}))
        assert ("Fresh." in json.dumps(conversation(sent_messages(t)))) == answered
    assert got[0] == got[1]
    assert all(t.entries[i].type != "progress" for i in got[0][0])  # (no progress line on the chain: no row)
