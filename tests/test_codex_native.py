"""The C part's reading of Codex rollout lines (``_scan.Codex``, ``ctxtool/_scan_codex.c``) against the Python it
stands in for: every entry it makes is the one ``make_entry(codex, obj, ..., blocks=False, stats)`` then
``share_strings`` and ``release()`` make, on every line of every Codex fixture and of the generated rollout, and on
variants of them with each field, at any depth, given a value of another type or an edge value. A line it is not
sure of it declines (None), having changed nothing. (The whole index, with and without it, is compared in
``test_parallel_scan.py`` and ``test_lazy_decoding.py``.)"""

from __future__ import annotations

import copy
import glob
import os
import random

import orjson
import pytest

from ctxtool import scanloop
from ctxtool.formats import codex
from ctxtool.model import entry_to_tuple
from ctxtool.scanloop import make_entry, share_strings
from tests.support.variants import streamed, tally

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_entry = scanloop.native_entries(codex)
if _entry is None and os.environ.get("CTXTOOL_REQUIRE_NATIVE") == "1":
    raise RuntimeError("CTXTOOL_REQUIRE_NATIVE=1 but ctxtool._scan is not built")
pytestmark = pytest.mark.skipif(_entry is None, reason="ctxtool._scan is not built here (no compiler at install)")


def _fixture_lines() -> list[dict]:
    paths = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.jsonl"), recursive=True))
    out = []
    for p in paths:
        with open(p, "rb") as f:
            for raw in f:
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if type(obj) is dict and codex.sniff(obj):
                    out.append(obj)
    return out


def _generated_lines() -> list[dict]:
    from ctxtool import synth

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "r.jsonl")
        synth.write_session(p, "codex", seed=3, target_bytes=400_000)
        with open(p, "rb") as f:
            return [orjson.loads(raw) for raw in f]


LINES = _fixture_lines()
GENERATED = _generated_lines()

# values a field is given in place of its own: every JSON type, and the edges the reading tells apart
ODD = [None, True, False, 0, 1, -1, 1.5, 2**53, 2**64, 2**64 - 1, -(2**63) - 1, 2**200, "", " ", "x", "\u00a0\u2003",
       "<environment_context>x", "  # AGENTS.md instructions", "\U0001f600", "\ud800", "assistant", "user", "developer",
       "system", "message", "input_text", "output_text", "token_count", "thread_rolled_back", [], [1], {}, {"text": "t"},
       "2026-03-01T09:00:02.377Z", "2026-03-01T09:00:02Z", "2026-03-01T09:00:02.377+00:00", "2026-02-30T09:00:02Z"]


def python_entry(obj, stats: bool, shared: dict):
    e = make_entry(codex, obj, 5, 6, 7, 8, b"\n", False, stats)
    share_strings(e, shared)
    e.release()
    return e


def same(obj, stats: bool) -> bool:
    """Whether the C part declines the line or makes the Python's entry of it; True when it made one."""
    shared_c: dict = {}
    before = copy.deepcopy(obj)
    c = _entry(obj, 5, 6, 7, 8, b"\n", stats, shared_c)
    assert obj == before  # the object is not changed
    if c is None:
        return False
    shared_py: dict = {}
    py = python_entry(obj, stats, shared_py)
    assert type(c) is type(py)
    assert entry_to_tuple(c) == entry_to_tuple(py), obj
    assert type(c.ts) is type(py.ts) and c.kind is py.kind
    assert [type(x) for x in entry_to_tuple(c)] == [type(x) for x in entry_to_tuple(py)], obj
    assert c.obj is None and c.blocks is None
    # the strings that repeat across lines are shared (ids are not: they are a line's own, or two lines')
    ids = {c.id} | {x.id for x in c.calls} | {x.id for x in c.results}
    assert shared_c == {k: v for k, v in shared_py.items() if k not in ids or k in (c.type, c.role, c.model)}
    for v in (c.type, c.role, c.model):
        if v is not None:
            assert shared_c[v] is v
    for x in c.calls:
        assert shared_c[x.name] is x.name
    return True


@pytest.mark.parametrize("stats", [True, False])
def test_every_fixture_and_generated_line(stats):
    assert len(LINES) > 100
    made = sum(same(o, stats) for o in LINES + GENERATED)
    # it takes most of them (what the file is mostly made of), not only the easy ones
    assert made >= 0.9 * len(GENERATED), (made, len(LINES), len(GENERATED))


def _kinds_of_lines(lines):
    """One line of each shape (line type, item or event type, role), as many as there are."""
    seen = {}
    for o in lines:
        p = o.get("payload") if type(o.get("payload")) is dict else {}
        key = (o.get("type"), p.get("type"), p.get("role"), bool(o.get("ordinal") is not None),
               bool(p.get(codex.PASSTHROUGH)), type(p.get("output")).__name__, type(p.get("info")).__name__)
        seen.setdefault(key, o)
    return list(seen.values())


@pytest.mark.parametrize("stats", [True, False])
def test_every_field_given_another_value(stats):
    shapes = _kinds_of_lines(LINES + GENERATED)
    assert len(shapes) >= 12
    made, declined = tally(shapes, ODD, lambda v: same(v, stats))
    assert made > 1000 and declined > 1000, (made, declined)


@pytest.mark.parametrize("seed", range(3))
def test_random_texts(seed):
    """Texts of every kind of character (white space, astral, surrogates) in messages, reasoning, calls, outputs."""
    rng = random.Random(seed)
    alphabet = [" ", "\t", "\n", "\u00a0", "\u3000", "\u200b", "a", "<", "é", "\U0001f600", "\ud83d", "\x00", "\x1c"]
    # (the tags of context, with and without their closing ones, in other cases; the developer's tags a rollback trims)
    prefixes = ["", "<environment_context>", "<user_instructions>", "<skill>", "# AGENTS.md instructions", "<turn_aborted>",
                "<ENVIRONMENT_context>", "<goal_context>", "<Model_Switch>", "<tools>", "approved command prefix saved:",
                "<context_window>", "<context_window_guidance>", "<permissions instructions>"]
    suffixes = ["", "</environment_context>", "</skill>", "</INSTRUCTIONS>", "</turn_aborted>", "</Goal_Context>"]
    shapes = [o for o in _kinds_of_lines(LINES + GENERATED) if o.get("type") == "response_item"]
    for _ in range(1500):
        obj = orjson.loads(orjson.dumps(rng.choice(shapes)))
        p = obj["payload"]

        def text():
            return (rng.choice(prefixes) * rng.randint(0, 1) + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
                    + rng.choice(suffixes) * rng.randint(0, 1) + rng.choice(alphabet) * rng.randint(0, 1))

        if p.get("type") == "message":
            p["content"] = [{"type": rng.choice(["input_text", "output_text"]), "text": rng.choice(alphabet) * rng.randint(0, 3) + text()}
                            for _ in range(rng.randint(0, 3))]
            p["role"] = rng.choice(["user", "assistant", "developer", "tool", "User"])
        elif p.get("type") == "reasoning":
            p["summary"] = [{"type": "summary_text", "text": text()} for _ in range(rng.randint(0, 3))]
            p["content"] = rng.choice([None, [], [{"type": "reasoning_text", "text": text()}]])
            p["encrypted_content"] = rng.choice([None, "", "abc"])
        for k in ("arguments", "input", "output", "name"):
            if k in p:
                p[k] = text()
        for stats in (True, False):
            same(obj, stats)


@pytest.mark.parametrize("seed", range(2))
def test_token_counts(seed):
    """Recorded counts of every size and relation (cached above input, zeros, the largest exact one, floats)."""
    rng = random.Random(seed)
    line = next(o for o in LINES if o.get("type") == "event_msg" and type(o["payload"].get("info")) is dict
                and type(o["payload"]["info"].get("last_token_usage")) is dict)
    values = [0, 1, 7, 9523, 2**53 - 1, 2**53, -1, 1.0, 2.5, float(2**60), None, "3", True]
    made = 0
    for _ in range(600):
        obj = copy.deepcopy(line)
        info = obj["payload"]["info"]
        for k in ("input_tokens", "cached_input_tokens", "output_tokens", "total_tokens"):
            info["last_token_usage"][k] = rng.choice(values) if rng.random() < 0.3 else rng.randint(0, 20000)
        info["total_token_usage"]["total_tokens"] = rng.choice(values + [rng.randint(0, 10**6)])
        info["model_context_window"] = rng.choice(values + [258400, 2**70, -(2**70)])
        for stats in (True, False):
            made += same(obj, stats)
    assert made > 300


@pytest.mark.parametrize("workers", [1, 2])
def test_a_streaming_pass_gets_the_same_entries_with_and_without_it(tmp_path, monkeypatch, workers):
    """A streaming pass (profile) is handed entries without their object, whichever part made them (the C part, the
    Python, a helper): a line whose object says a window only there (found in review) reads the same either way."""

    path = tmp_path / "r.jsonl"
    lines = [orjson.dumps(o) for o in GENERATED[:300]]
    lines.append(b'{"timestamp":"2026-03-01T09:00:02.377Z","type":"event_msg","payload":{"type":"task_complete"},'
                 b'"contextWindow":777777,"modelId":"gpt-x"}')
    path.write_bytes(b"\n".join(lines) + b"\n")

    got = streamed(path, monkeypatch, True, workers)
    assert got == streamed(path, monkeypatch, False, workers)
    assert len(got) == len(lines)


def _context_texts() -> list[str]:
    """Texts at the edges of what Codex takes for context: each tag of context with and without its closing one, in
    other cases, with white space around; each tag a rollback trims, so and otherwise; plain texts."""
    out = ["hello", "", "  ", "<", "</environment_context>", "<model_switchx", "x <model_switch>"]
    for name in ("environment_context", "turn_aborted", "user_shell_command", "skill", "subagent_notification",
                 "recommended_plugins", "goal_context", "user_instructions", "startup_context"):
        start, end = f"<{name}>", f"</{name}>"
        for a, b in ((start, end), (start.upper(), end.upper()), (start.title(), end)):
            out += [a + "x" + b, f" \n{a}\nx\n{b}\n ", a + "x", "x" + b, a + b, a[:-1] + "x" + b]
    out += ["# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>", "# agents.md instructions</instructions>"]
    for tag in ("<permissions instructions>", "<model_switch>", "<persistent_mode>", "<apps_instructions>",
                "<collaboration_mode>", "<multi_agent_role>", "<multi_agent_mode>", "<environments_instructions>",
                "<git_attribution>", "<realtime_conversation>", "<tools>", "<personality_spec>", "<token_budget>",
                "<context_window_guidance>", "<context_window>", "<skills_instructions>", "<plugins_instructions>",
                "<rollout_budget>", "Approved command prefix saved:", "<context_window_reminder>", "<foo>"):
        out += [tag + "x", tag.upper(), "\u3000\t" + tag, tag[:-1], "x" + tag]
    return out


@pytest.mark.parametrize("role", ["user", "developer", "assistant"])
def test_context_and_trimmed_developer_texts(role):
    """The C part classifies context (``context_text``) and the developer messages a rollback trims
    (``trimmed_with_turn``) as the Python does, alone and among other items of a message."""
    line = next(o for o in LINES if o.get("type") == "response_item" and o["payload"].get("type") == "message"
                and o["payload"].get("role") == "user")
    texts = _context_texts()
    made = context = 0
    for k, t in enumerate(texts):
        for items in ([t], ["plain", t], [t, texts[(k * 7) % len(texts)]]):
            obj = copy.deepcopy(line)
            obj.pop("metadata", None)  # (a line's metadata the C part leaves to the Python)
            obj["payload"]["role"] = role
            obj["payload"]["content"] = [{"type": "input_text", "text": x} for x in items]
            for stats in (True, False):
                made += same(obj, stats)
            e = python_entry(obj, True, {})
            context += bool(e.extra and (e.extra.get("context") == "user" or e.extra.get(codex.ROLLBACK_TRIM)))
    assert made == 6 * len(texts)  # (the C part reads every one of them)
    assert context > 150 if role != "assistant" else context == 0
