"""ctxtool's port of OpenClaw's bootstrap budget against the `openclaw` npm package itself.

``buildBootstrapContextFiles`` (per-file trim 75/25 with its marker, the compact marker
for tiny limits, AGENTS.md's policy digest, USER.md's fixed cap, the total budget,
"[MISSING]" entries) runs in node on the same inputs; every injected text must be
identical, code unit for code unit, on files around and past the limits, with CJK,
accents and astral characters (two UTF-16 units) at the cut points.
"""

from __future__ import annotations

import os
import random

import pytest

from ctxtool import budget, utf16
from tests.support.budget_cases import run_case
from tests.support.openclaw_judge import openclaw_context

pytestmark = pytest.mark.openclaw

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "budget")
PIECES = ["a", "bb ", " ", "\n", "\r\n", "é", "中文", "🔴", "😀", "禁止 ", "must ", "never ", "- item ", "## head\n",
          "```\n", "\t", "\u00a0", "ſ", "K", "1. step ", "AGENTS.md ", "plain words here ", "\u2028", "\ufeff"]
NAMES = ["SOUL.md", "AGENTS.md", "USER.md", "IDENTITY.md", "MEMORY.md", "agents.md", "user.MD", "Ünï😀.md"]


def _text(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        p = rng.choice(PIECES)
        out.append(p)
        size += len(utf16.units(p))
    s = "".join(out)
    return s if rng.random() < 0.7 else s + rng.choice(["\n\n", "  \t\n", "\u3000", ""])


def _cases(seed: int = 15, count: int = 400) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        limit = rng.choice([1, 2, 5, 16, 40, 63, 64, 65, 100, 500, 2_000, 4_000, 4_001, 12_000, 20_000])
        size = max(0, rng.choice([0, 1, limit - 1, limit, limit + 1, limit + 2, 2 * limit, 3 * limit + 7, 60]))
        files = [{"name": rng.choice(NAMES), "content": _text(rng, size)}]
        for _ in range(rng.choice([0, 0, 1, 2])):
            files.append({"name": rng.choice(NAMES), "content": _text(rng, rng.choice([10, 300, 5_000, limit]))})
        if rng.random() < 0.2:
            files.insert(rng.randrange(len(files) + 1), {"name": "IDENTITY.md", "missing": True})
        for i, f in enumerate(files):
            f["path"] = f"/ws/{i}/{f['name']}"
        total = rng.choice([1, 3, 63, 64, 100, limit, 2 * limit + 1, 60_000])
        cases.append({"files": files, "maxChars": limit, "totalMaxChars": total})
    return cases


def _ours(case: dict) -> list[dict]:
    sources = [budget.Source(f["name"], f["path"], None if f.get("missing") else f["content"], "bootstrap",
                             status="missing" if f.get("missing") else None) for f in case["files"]]
    rows = budget.openclaw_assemble(sources, case["maxChars"], case["totalMaxChars"])
    return [{"path": r["path"], "content": utf16.text(r["injected"])} for r in rows if r["injected"]]


def test_generated_files_around_and_past_the_limits_are_trimmed_as_openclaw_does():
    cases = _cases()
    expected = openclaw_context(cases)
    trimmed = sum(1 for c, e in zip(cases, expected) for f, r in zip(c["files"], e)
                  if not f.get("missing") and r["content"] != utf16.text(utf16.trim_end(utf16.units(f["content"]))))
    assert trimmed > 150  # the cases really exercise the cutting paths
    mismatches = [(i, c["maxChars"], c["totalMaxChars"]) for i, (c, e) in enumerate(zip(cases, expected)) if _ours(c) != e]
    assert mismatches == []


def test_agents_md_policy_digest_and_surrogate_pairs_at_the_cut():
    rng = random.Random(7)
    agents = "".join(f"## Rule {i}\nYou must test 禁止 {i}.\n" + "prose 😀 " * rng.randrange(1, 30) + "\n" for i in range(400))
    emoji = "😀" * 6001  # every cut point falls between or inside pairs
    cases = [{"files": [{"name": "AGENTS.md", "path": "/w/AGENTS.md", "content": agents}], "maxChars": m, "totalMaxChars": 60_000}
             for m in (12_000, 20_000, 999, 200)]
    cases += [{"files": [{"name": "SOUL.md", "path": "/w/SOUL.md", "content": emoji}], "maxChars": m, "totalMaxChars": t}
              for m, t in ((12_000, 60_000), (12_001, 60_000), (20_000, 11_999), (65, 60_000))]
    expected = openclaw_context(cases)
    for case, exp in zip(cases, expected):
        assert _ours(case) == exp
    assert "[Policy digest from AGENTS.md]" in expected[0][0]["content"]


def test_golden_workspaces_inject_what_openclaw_injects():
    for name in ("openclaw-limits", "openclaw-within"):
        base = os.path.join(FIXTURES, name)
        with run_case(base) as (report, _root):
            files = []
            for r in report["files"]:
                if r["status"] in ("not-loaded", "on-demand"):
                    continue
                if r["status"] == "missing":
                    files.append({"name": r["name"], "path": r["path"], "missing": True})
                else:
                    with open(r["path"], encoding="utf-8") as fh:
                        files.append({"name": r["name"], "path": r["path"], "content": fh.read()})
            s = report["settings"]
            [exp] = openclaw_context([{"files": files, "maxChars": s["maxChars"], "totalMaxChars": s["totalMaxChars"]}])
            ours = [{"path": r["path"], "content": utf16.text(r["injected"])} for r in report["files"] if r["injected"]]
            assert ours == exp, name
