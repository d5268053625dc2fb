"""Fuzz against the owning agents: mutated sessions each agent wrote, read by ctxtool and by the
agent itself, before and after repair (``tests/support/judge_fuzz.py`` says what is checked).

CI runs ``JUDGE_FUZZ_CASES`` cases per agent with a fixed seed; ``CTXTOOL_JUDGE_FUZZ_N=200``
runs more (``CTXTOOL_JUDGE_FUZZ_SEED`` picks another seed). Each case starts the agent twice.
"""

import os

import pytest

from tests.support import judge_fuzz

JUDGE_FUZZ_CASES = 8
SEED = int(os.environ.get("CTXTOOL_JUDGE_FUZZ_SEED", "20261126"))
N = int(os.environ.get("CTXTOOL_JUDGE_FUZZ_N", JUDGE_FUZZ_CASES))


@pytest.mark.parametrize("agent", [pytest.param(a, marks=getattr(pytest.mark, a)) for a in judge_fuzz.AGENTS])
def test_mutated_sessions_read_and_repaired_as_their_agent_reads_them(agent, tmp_path):
    failures = []
    for name, source, data in judge_fuzz.cases(agent, SEED, N):
        path = judge_fuzz.write(str(tmp_path), source, data)
        found = judge_fuzz.problems(agent, path, str(tmp_path / "work"))
        if found:
            keep = tmp_path / f"{name}-{source}"
            keep.write_bytes(data)
            failures.append(f"{name} ({source}, kept as {keep}): " + "; ".join(found))
    assert not failures, f"{len(failures)} of {N} case(s), first:\n" + "\n".join(failures[:3])


def test_only_a_codex_line_nested_past_serde_jsons_limit_goes_unjudged(tmp_path):
    """The fuzz leaves unjudged only the documented difference (a Codex line nested 128 deep, which Codex skips
    and ctxtool reads); 127 levels, brackets inside strings and the other agents are judged."""
    def case(agent, line):
        p = tmp_path / "s.jsonl"
        p.write_bytes(b'{"type":"session_meta","payload":{}}\n' + line + b"\n")
        return judge_fuzz.known_difference(agent, str(p))

    deep = b'{"a":' + b"[" * 127 + b"]" * 127 + b"}"
    assert judge_fuzz.nesting(deep) == 128
    assert case("codex", deep)
    assert not case("pi", deep) and not case("claude", deep)
    assert not case("codex", b'{"a":' + b"[" * 126 + b"]" * 126 + b"}")
    assert not case("codex", b'{"a":"' + b"[" * 300 + b'"}')
    assert case("codex", b'{"payload":{"content":[{"type":0,"text":"x"}]}}') and not case("claude", b'{"type":0}')
    assert not case("codex", b'{"payload":{"type":"message","text":"\\"type\\": zero"}}')


@pytest.mark.claude
def test_the_judge_compares_the_reminder_text_it_does_not_place(tmp_path, monkeypatch):
    """The comparison of messages leaves ``<system-reminder>`` text out (ctxtool does not imitate where the client puts
    some of it); its text is compared all the same, sorted: a task notification sent without the client's framing is
    found (it was not, until a recording by a newer client showed it)."""
    import shutil

    from ctxtool.formats import claude

    src = os.path.join(judge_fuzz.FIXTURES, "claude-recorded", "task_notification.jsonl")
    path = str(tmp_path / "task_notification.jsonl")
    shutil.copy(src, path)
    assert judge_fuzz.problems("claude", path, str(tmp_path / "a")) == []
    monkeypatch.setattr(claude, "framed", lambda obj, content: content)
    found = judge_fuzz.problems("claude", path, str(tmp_path / "b"))
    assert any(f.startswith("damaged file: reminder text:") and "SYSTEM NOTIFICATION" in f for f in found), found
