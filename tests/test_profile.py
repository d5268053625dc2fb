"""ctxtool.profile and ctxtool.advice: fixtures with expected verdicts, recommendation rows, config patch/apply."""

from __future__ import annotations

import glob
import json
import os
import stat

import pytest

from ctxtool import advice, config
from ctxtool.errors import ConfigError
from ctxtool.profile import aggregate, classify, profile_session

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "profile")
CASES = sorted(os.path.basename(p)[: -len(".expected.json")] for p in glob.glob(os.path.join(FIX, "*.expected.json")))


@pytest.mark.parametrize("case", CASES)
def test_fixture_verdict_and_figures(case):
    exp = json.load(open(os.path.join(FIX, case + ".expected.json")))
    p = profile_session(os.path.join(FIX, case + ".jsonl"))
    c = p["classification"]
    assert c["pattern"] == exp["pattern"], (case, p["figures"])
    assert c["borderline"] == exp["borderline"], (case, c["near"])
    for k, (lo, hi) in exp["figures"].items():
        assert lo <= p["figures"][k] <= hi, (case, k, p["figures"][k])
    if "baseline_tokens" in exp:
        assert p["tokens"]["baseline"]["status"] == "measured"
        assert p["tokens"]["baseline"]["tokens"] == exp["baseline_tokens"]
    if "tools" in exp:
        assert [t["name"] for t in p["tools"]] == exp["tools"]
        assert "unknown" not in {t["name"] for t in p["tools"]}
    if "compactions" in exp:
        assert p["compactions"]["count"] == exp["compactions"]
        assert p["compactions"]["stacking"] == exp["stacking"]
        lo, hi = exp["summary_share_now"]
        assert lo <= p["compactions"]["summary_share_now"] <= hi
    if "format" in exp:
        assert p["format"] == exp["format"]


def test_fixture_cases_cover_every_pattern():
    pats = {json.load(open(os.path.join(FIX, c + ".expected.json")))["pattern"] for c in CASES}
    assert pats == {"tool-heavy", "conversational", "mixed", "bursty"}
    assert any(json.load(open(os.path.join(FIX, c + ".expected.json")))["borderline"] for c in CASES)


def test_compaction_history_and_timeline():
    p = profile_session(os.path.join(FIX, "compactions_stacking.jsonl"))
    items = p["compactions"]["items"]
    assert [i["tokens_before"] for i in items] == [60000, 70000, 80000]
    sizes = [i["summary_tokens"] for i in items]
    assert sizes == sorted(sizes) and sizes[0] == 500
    tl = p["timeline"]
    assert tl["points"] == tl["recorded_points"] > 0
    assert len(tl["compaction_points"]) == 3
    # the context drops after each compaction
    for cp in tl["compaction_points"]:
        assert tl["series"][cp] < tl["series"][cp - 1]
    now = {r["category"]: r for r in p["tokens"]["now"]}
    assert now["summary"]["tokens"] == sizes[-1]
    assert now["tools"]["low"] <= now["tools"]["high"]


def test_no_usage_baseline_unknown(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text('{"role":"user","content":"hi there"}\n{"role":"assistant","content":"hello"}\n')
    p = profile_session(str(f))
    assert p["tokens"]["baseline"]["status"] == "unknown"
    assert p["classification"]["confidence"] == "low"
    assert p["timeline"]["recorded_points"] == 0


def test_classify_rules_explicit():
    base = {"tool_share": 0.5, "calls_per_turn": 2, "idle_gaps": 0, "idle_share": 0, "burst_call_share": 0, "gap_cv": 0,
            "user_turns": 10, "timestamps": True}
    assert classify(base)["pattern"] == "mixed"
    assert classify({**base, "tool_share": 0.7, "calls_per_turn": 4})["pattern"] == "tool-heavy"
    assert classify({**base, "tool_share": 0.85, "calls_per_turn": 1})["pattern"] == "tool-heavy"
    assert classify({**base, "tool_share": 0.1, "calls_per_turn": 0.5})["pattern"] == "conversational"
    bursty = {**base, "idle_gaps": 5, "idle_share": 0.9, "burst_call_share": 0.9, "gap_cv": 3}
    assert classify(bursty)["pattern"] == "bursty"
    assert classify({**bursty, "timestamps": False})["pattern"] == "mixed"


def test_aggregate_pools_sessions():
    ps = [profile_session(os.path.join(FIX, c + ".jsonl")) for c in ("tool_heavy", "conversational", "bursty")]
    agg = aggregate(ps)
    assert agg["sessions"] == 3
    assert agg["patterns"]["tool-heavy"] == 1 and agg["patterns"]["bursty"] == 1 and agg["patterns"]["conversational"] == 1
    assert agg["classification"]["pattern"] in ("tool-heavy", "bursty", "mixed")
    assert agg["figures"]["user_turns"] == sum(p["figures"]["user_turns"] for p in ps)


# ------------------------------------------------------------------ recommendation rows

ROWS = [
    ("tool-heavy", 60000, "1m", 1, 10000),
    ("conversational", 30000, "5m", 3, 50000),
    ("mixed", 50000, "2m", 2, 10000),
    ("bursty", 50000, "2m", 1, 10000),
]


@pytest.mark.parametrize("pattern,floor,ttl,keep,minchars", ROWS)
def test_recommendation_row(pattern, floor, ttl, keep, minchars):
    r = advice.recommend(pattern)
    assert r["values"] == {"reserveTokensFloor": floor, "ttl": ttl, "keepLastAssistants": keep, "minPrunableToolChars": minchars}
    assert set(r["why"]) == set(advice.KEYS)
    long = advice.recommend(pattern, long_session=True, duration_s=3 * 3600)
    assert long["values"]["reserveTokensFloor"] == {60000: 60000, 50000: 60000, 30000: 50000}[floor]
    assert {k: v for k, v in long["values"].items() if k != "reserveTokensFloor"} == {k: v for k, v in r["values"].items() if k != "reserveTokensFloor"}


def test_compare_leads_with_right_and_equal_durations():
    cfg = {"agents": {"defaults": {"contextPruning": {"ttl": "60s", "keepLastAssistants": 1}, "compaction": {"reserveTokensFloor": 20000}}}}
    cmp = advice.compare(advice.current_settings(cfg), advice.recommend("tool-heavy"))
    assert {i["key"] for i in cmp["right"]} == {"ttl", "keepLastAssistants"}
    ch = {i["key"]: i for i in cmp["change"]}
    assert ch["reserveTokensFloor"]["current"] == 20000 and ch["reserveTokensFloor"]["source"] == "config"
    assert ch["minPrunableToolChars"]["source"] == "default"


def test_bad_config_value():
    with pytest.raises(ConfigError):
        advice.current_settings({"agents": {"defaults": {"contextPruning": {"ttl": "soon"}}}})


# ------------------------------------------------------------------ patch and apply

JSON5 = """// OpenClaw config
{
  agents: {
    defaults: {
      // pruning tuned by hand
      contextPruning: { mode: 'cache-ttl', ttl: '5m', },
      compaction: {
        reserveTokensFloor: 20000, /* old */
      },
    },
  },
  gateway: { port: 18789 },
}
"""


def _changes(text, pattern="tool-heavy"):
    cfg = config.loads(text)
    return cfg, advice.compare(advice.current_settings(cfg), advice.recommend(pattern))["change"]


@pytest.mark.parametrize("text", [JSON5, '{\n  "agents": {}\n}\n', "{}", '{"agents": {"defaults": {"compaction": {}}}}'])
def test_patch_and_text_edit_agree(text):
    cfg, ch = _changes(text)
    ops = advice.make_patch(cfg, ch)
    assert all(o["op"] in ("add", "replace", "test") for o in ops)
    edited = advice.edit_text(text, cfg, ch)
    assert config.loads(edited) == advice.apply_patch(cfg, ops)
    rec = advice.recommend("tool-heavy")["values"]
    for s in advice.SETTINGS:
        assert config.get(config.loads(edited), s["path"]) == rec[s["key"]]


def test_text_edit_keeps_json5_comments():
    cfg, ch = _changes(JSON5)
    edited = advice.edit_text(JSON5, cfg, ch)
    for c in ("// OpenClaw config", "// pruning tuned by hand", "/* old */", "gateway: { port: 18789 }"):
        assert c in edited
    assert edited.count("\n") >= JSON5.count("\n")


def test_apply_keeps_byte_identical_backup_and_rollback_note(tmp_path):
    f = tmp_path / "openclaw.json"
    f.write_text(JSON5)
    os.chmod(f, 0o640)
    before = f.read_bytes()
    cfg, ch = _changes(JSON5)
    plan = advice.plan_apply(str(f), ch)
    res = advice.apply_config(plan)
    assert open(res["backup"], "rb").read() == before
    assert os.path.dirname(res["rollback_note"]) == os.path.dirname(res["backup"])
    note = open(res["rollback_note"]).read()
    assert res["backup"] in note and str(f) in note and "cp -p" in note
    for c in ch:
        assert c["path"] in note
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640
    new = config.load(str(f))
    assert config.get(new, "agents.defaults.compaction.reserveTokensFloor") == 60000
    assert "// pruning tuned by hand" in f.read_text()


def test_apply_refuses_when_file_changed(tmp_path):
    f = tmp_path / "c.json"
    f.write_text("{}")
    cfg, ch = _changes("{}")
    plan = advice.plan_apply(str(f), ch)
    f.write_text('{"x": 1}')
    with pytest.raises(Exception):
        advice.apply_config(plan)
    assert not glob.glob(str(f) + ".bak-*")
