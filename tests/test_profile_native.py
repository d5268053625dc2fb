"""The C part's per-message accounting of ``profile`` (``_scan.Profile.message``, ``ctxtool/_scan_profile.c``) against
the Python it stands in for (``profile.Feed`` without it): the same profile of every fixture and of generated pi
sessions, and the same profiler, models and window evidence after every entry of random streams whose entries and
profiler state are given values of unexpected types, where it must decline (False, nothing changed)."""

from __future__ import annotations

import glob
import os
import random

import orjson
import pytest

from ctxtool import profile, scanloop, synth
from ctxtool.model import COMPACTION, EMPTY, MESSAGE, META, Call, FullEntry, Kinds, Result, Usage
from ctxtool.profile import Feed, SessionProfiler, profile_session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_fast = profile._native_message()
if _fast is None and os.environ.get("CTXTOOL_REQUIRE_NATIVE") == "1":
    raise RuntimeError("CTXTOOL_REQUIRE_NATIVE=1 but ctxtool._scan is not built")
pytestmark = pytest.mark.skipif(_fast is None, reason="ctxtool._scan is not built here (no compiler at install)")


def _taken() -> int:
    return _fast.__self__.taken


def _both(path: str, monkeypatch) -> tuple[bytes, bytes, int]:
    before = _taken()
    with_c = orjson.dumps(profile_session(path))
    took = _taken() - before
    with monkeypatch.context() as m:
        m.setattr(profile, "_native_message", lambda: None)
        without = orjson.dumps(profile_session(path))
    return with_c, without, took


def test_every_fixture_profiles_the_same(monkeypatch):
    took = 0
    paths = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.jsonl"), recursive=True))
    assert len(paths) > 50
    for p in paths:
        try:
            a, b, n = _both(p, monkeypatch)
        except Exception as err:  # a fixture no command reads (bad header...): both must fail alike
            with monkeypatch.context() as m:
                m.setattr(profile, "_native_message", lambda: None)
                with pytest.raises(type(err)):
                    profile_session(p)
            continue
        assert a == b, p
        took += n
    assert took > 1000  # the recorded pi and Claude Code sessions' messages went through the C part


@pytest.mark.parametrize("fmt,seed,compactions", [("pi", 3, 0), ("pi-v1", 4, 0), ("pi", 11, 2), ("pi", 7, 3),
                                                   ("claude", 5, 0), ("claude", 8, 2)])
def test_generated_sessions_profile_the_same(tmp_path, monkeypatch, fmt, seed, compactions):
    p = str(tmp_path / f"{fmt}-{seed}.jsonl")
    synth.write_session(p, fmt, seed=seed, target_bytes=400_000, compactions=compactions)
    a, b, n = _both(p, monkeypatch)
    assert a == b
    assert n > 50


# ------------------------------------------------------------------ random streams, entry by entry

NAMES = ("read", "bash", "", "edit")
IDS = ("c1", "c2", "c3", "", "c4")


def _usage(rng):
    if rng.random() < 0.3:
        return None
    if rng.random() < 0.05:
        return Usage(input=2**60)  # beyond what the C part takes
    return Usage(input=rng.choice((0, 0, 1200, 90_000)), output=rng.randrange(0, 900), cache_read=rng.randrange(0, 5000),
                 cache_write=rng.choice((0, 300)), placeholder=rng.random() < 0.2)


def _kinds(rng):
    r = rng.random()
    if r < 0.3:
        return EMPTY
    if r < 0.35:
        return {"text": 5}  # a plain dict: the Python's
    if r < 0.4:
        return Kinds()
    return Kinds(text=rng.randrange(0, 400), thinking=rng.choice((0, 50)), tool_call=rng.choice((0, 80)))


def _ts(rng, state):
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.18:
        return int(state["t"])  # an int time: the Python's
    state["t"] += rng.choice((1.5, 30.0, 600.0, 700.0, -20.0, 0.0, 3600.25))
    return state["t"]


def _entry(rng, i, state):
    role = rng.choice(("user", "assistant", "assistant", "toolResult", "toolResult", "custom", "bashExecution"))
    kw = dict(index=i, lineno=i + 1, offset=i * 10, length=9, eol=b"\n", kind=MESSAGE, type="message", id=f"e{i}",
              parent=f"e{i - 1}", role=role, ts=_ts(rng, state), chars=rng.choice((0, 10, 400, 2000)),
              model=rng.choice((None, "", "<synthetic>", "m1", "m2")))
    if rng.random() < 0.03:
        kw["chars"] = 2**55  # beyond what the C part takes
    if rng.random() < 0.03:
        kw["chars"] = -3
    if role == "assistant":
        kw["calls"] = tuple(Call(k, rng.choice(IDS), rng.choice(NAMES)) for k in range(rng.choice((0, 0, 1, 3))))
        if rng.random() < 0.03:
            kw["calls"] = [Call(0, "c1", "read")]  # a list: the Python's
        kw["kinds"] = _kinds(rng)
        kw["usage"] = _usage(rng)
        kw["stop"] = rng.choice((None, "stop", "toolUse", "error", "aborted"))
        kw["empty"] = rng.random() < 0.1
        kw["msg_key"] = state["key"] = rng.choice((None, state.get("key"), state.get("key"), "k1", "k2"))
    elif role in ("toolResult", "user"):
        rs = tuple(Result(k, rng.choice(IDS + (None,)), rng.choice(NAMES + (None,)), chars=rng.choice((0, 30, 500)))
                   for k in range(rng.choice((0, 1, 1, 2))))
        kw["results"] = rs
        if role == "toolResult" and rng.random() < 0.7:
            kw["tool_chars"] = {r.name or "x": r.chars for r in rs} or EMPTY
    if rng.random() < 0.05:
        kw["extra"] = rng.choice(({"is_meta": True}, {"compact_summary": True}, {"ignored": ["usage"]},
                                  {"attachment": "x", "sidechain": True}))
    elif rng.random() < 0.15:  # a Claude Code attachment's flags
        kw["extra"] = rng.choice(({"attachment": "file", "context": "user"}, {"attachment": "hook", "context": "system"},
                                  {"attachment": "todo"}, {"attachment": "x", "context": ""}))
    if rng.random() < 0.03:
        kw.update(kind=COMPACTION, role=None, extra={"first_kept": f"e{max(0, i - 5)}", "tokens_before": 5000})
    elif rng.random() < 0.15:  # a metadata line that says a model or a window (pi's custom and model_change lines)
        x = {"provider": "p"}
        for key, values in (("custom_type", (None, "note", "openclaw.usage", 5)),
                            ("model", (None, "", "m3", 7, "m1")),
                            ("context_window", (None, 0, -5, 128_000, True, 2.5, 2**70, "big")),
                            ("ignored", (None, None, None, ["usage"]))):
            v = rng.choice(values + ("absent",))
            if v != "absent":
                x[key] = v
        kw.update(kind=META, type=rng.choice(("custom", "model_change")), role=None, extra=rng.choice((x, x, x, None, {})),
                  usage=rng.choice((None, None, None, Usage(input=5))), model=rng.choice((None, None, "m2", "")))
    return FullEntry(**kw)


def _state(feed: Feed) -> dict:
    prof = feed.prof
    out = {}
    for name in SessionProfiler.__slots__:
        v = getattr(prof, name)
        if name == "gaps":
            v = (v.n, v.mean, v.m2)
        elif name == "main":
            v = v.seen
        elif name in ("points", "recorded"):
            v = list(v)
        out[name] = v
    ev = feed.ev
    out["ev"] = (ev.last_model, ev.peaks, ev.main.seen, ev.recorded, ev.model_hint)
    out["models"] = dict(feed.models)
    out["flagged"] = [e.index for e in feed.flagged]
    out["openclaw_marks"] = feed.openclaw_marks
    return out


def _odd_state(rng, prof):
    """Now and then, a profiler slot of a type the C part does not take (both profilers get it)."""
    r = rng.random()
    if r < 0.01:
        prof.anchor = 2**55
    elif r < 0.02:
        prof.since_chars = 2**61
    elif r < 0.03:
        prof.prev_ts = 5
    elif r < 0.04:
        prof.cur["tool:read"] = 2**52
    elif r < 0.05:
        prof.anchor = None
        prof.since_chars = 0
        prof.cur.pop("tool:read", None)
        prof.prev_ts = None


@pytest.mark.parametrize("fmt", ["pi", "claude"])
@pytest.mark.parametrize("seed", range(12))
def test_random_streams_keep_the_same_profiler(seed, fmt):
    rng = random.Random(seed)
    fast_feed, slow_feed = Feed(SessionProfiler(), _fast), Feed(SessionProfiler(), None)
    for f in (fast_feed, slow_feed):
        f.prof.fmt = fmt
    state = {"t": 1_700_000_000.0}
    before = _taken()
    declined = 0
    for i in range(600):
        e = _entry(rng, i, state)
        odd = random.Random(seed * 1000 + i)
        _odd_state(odd, fast_feed.prof)
        _odd_state(random.Random(seed * 1000 + i), slow_feed.prof)
        n = _taken()
        fast_feed.on_entry(e)
        declined += _taken() == n
        slow_feed.on_entry(e)
        assert _state(fast_feed) == _state(slow_feed), (seed, i, e)
    assert fast_feed.prof.result() == slow_feed.prof.result()
    assert _taken() - before > 100  # most messages went through the C part
    assert declined > 20  # and the odd ones did not


def test_the_pending_calls_are_capped_alike(monkeypatch):
    monkeypatch.setattr(SessionProfiler, "PENDING_CAP", 3)
    from ctxtool.scanloop import native

    c = native()
    fast = c.Profile(SessionProfiler, profile._Welford, profile.MainThread, FullEntry, Kinds, Call, Result, Usage,
                     scanloop.index_passes(), EMPTY, profile.UNSENT_STOPS, 3).message
    feeds = Feed(SessionProfiler(), fast), Feed(SessionProfiler(), None)
    for f in feeds:
        f.prof.fmt = "pi"
    for i in range(6):
        calls = tuple(Call(k, f"c{i}-{k}", "read") for k in range(2))
        e = FullEntry(i, i + 1, 0, 5, b"\n", MESSAGE, "message", id=f"a{i}", role="assistant", chars=5, calls=calls)
        for f in feeds:
            f.on_entry(e)
        assert _state(feeds[0]) == _state(feeds[1])
    assert fast.__self__.taken == 6
    assert list(feeds[0].prof.pending) == ["c4-1", "c5-0", "c5-1"]


def test_a_claude_code_response_split_over_lines_is_one_request():
    feeds = Feed(SessionProfiler(), _fast), Feed(SessionProfiler(), None)
    for f in feeds:
        f.prof.fmt = "claude"
    before = _taken()
    lines = [FullEntry(0, 1, 0, 5, b"\n", MESSAGE, "user", id="u", role="user", chars=40),
             FullEntry(1, 2, 0, 5, b"\n", MESSAGE, "assistant", id="a1", role="assistant", chars=30, msg_key="m+r",
                       usage=Usage(input=900, output=1, placeholder=True)),
             FullEntry(2, 3, 0, 5, b"\n", MESSAGE, "assistant", id="a2", role="assistant", chars=50, msg_key="m+r",
                       usage=Usage(input=900, output=70))]
    for e in lines:
        for f in feeds:
            f.on_entry(e)
        assert _state(feeds[0]) == _state(feeds[1])
    assert _taken() - before == 3
    prof = feeds[0].prof
    assert (prof.assistant_turns, prof.api_messages, list(prof.points), prof.response_chars) == (1, 2, [900], 80)


def test_another_format_is_left_to_the_python():
    feed = Feed(SessionProfiler(), _fast)
    feed.prof.fmt = "codex"
    before = _taken()
    e = FullEntry(0, 1, 0, 5, b"\n", MESSAGE, "user", id="a", role="user", chars=5)
    feed.on_entry(e)
    assert _taken() == before
    assert feed.prof.messages == 1 and feed.prof.session == {"user": 5}


def test_declining_changes_nothing():
    prof = SessionProfiler()
    prof.fmt = "pi"
    prof.anchor = 2**55  # beyond what the C part takes
    feed = Feed(prof, None)
    before = _state(feed)
    e = FullEntry(0, 1, 0, 5, b"\n", MESSAGE, "assistant", id="a", role="assistant", chars=5, model="m1",
                  usage=Usage(input=10))
    assert _fast(prof, e, feed.models, feed.ev, feed.ev.main) is False
    assert _state(feed) == before
