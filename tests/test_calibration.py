"""estimate --calibrate: segments never pooled across a compaction; a recommendation only when sane."""

from __future__ import annotations

from pathlib import Path

from ctxtool.estimate import Options, estimate_file
from tests.support.pi_sessions import asst as _asst
from tests.support.pi_sessions import pi_session as _pi_session
from tests.support.pi_sessions import run
from tests.support.pi_sessions import user as _user

FIX = Path(__file__).resolve().parent.parent / "fixtures"


# ---------------------------------------------------------------- calibration


def _cal(path):
    return estimate_file(str(path), Options(calibrate=True))["calibration"]


def test_calibrate_claude_boundary_recommends_nothing():
    cal = _cal(FIX / "estimate" / "claude_boundary.jsonl")
    assert cal["trust"] is None and cal["best_offline"] is None
    assert "not enough recorded turns" in cal["advice"]
    # one turn before and one after the boundary: neither is judged against the other
    assert all(v["error_p90"] is None for v in cal["estimators"].values())


def test_calibrate_pi_compaction_does_not_pool_segments():
    cal = _cal(FIX / "estimate" / "pi_compaction.jsonl")
    assert cal["chars_per_token"] is None  # was 0.134 from a 67-char step
    for name, v in cal["estimators"].items():
        assert v["error_p90"] is None or v["error_p90"] < 1.0, name  # was 179 (17,900%)
    assert cal["trust"] is None and "moves" in cal["advice"]
    h = cal["estimators"]["heuristic"]
    assert [s["segment"] for s in h["segment_baselines"]] == [0, 1]


def _consistent_session(path, baseline=5000, noise=None):
    """Two context segments (a compaction between) of 4 turns each; every recorded usage is
    ``baseline`` + pi's heuristic of what the model saw at that request (times ``noise``)."""
    msgs, running, k = [], 0, 0
    for seg in range(2):
        if seg == 1:  # summary 400 chars (100 tokens) + the kept last turn of segment 1 (200 + 100)
            msgs.append({"type": "compaction", "summary": "s" * 400, "firstKeptEntryId": "keep", "tokensBefore": running})
            running = 100 + 300
        for t in range(4):
            msgs.append({**_user("u" * 800), **({"id": "keep"} if (seg, t) == (0, 3) else {})})
            running += 200
            ctx = int((baseline + running) * (noise[k % len(noise)] if noise else 1))
            k += 1
            msgs.append(_asst("a" * 400, context=ctx, total=ctx + 100))
            running += 100
    return _pi_session(path, msgs)


def test_calibrate_recommends_when_sane_and_refuses_when_not(tmp_path):
    good = _consistent_session(tmp_path / "good.jsonl")
    cal = _cal(good)
    h = cal["estimators"]["heuristic"]
    assert [s["baseline"] for s in h["segment_baselines"]] == [5000, 5000]
    assert cal["trust"] is not None and h["error_p90"] < 0.01
    bad = _consistent_session(tmp_path / "bad.jsonl", noise=[1.0, 2.2, 0.5, 1.7])
    cal = _cal(bad)
    assert cal["trust"] is None and cal["advice"].startswith("no estimator")
    r = run("estimate", "--calibrate", bad)
    assert "trust        none: no estimator" in r.stdout
