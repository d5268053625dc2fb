"""The real pi agent as the judge of ``profile --apply`` on its settings.json: pi's own
SettingsManager reads the values ctxtool wrote, and while ctxtool holds the lock pi's own
locking (proper-lockfile) finds it taken."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ctxtool import advice, config
from ctxtool.lock import DirLock
from tests.support.pi_agent import HARNESS_DIR, _node

pytestmark = pytest.mark.pi

SETTINGS = '{\n  "defaultProvider": "anthropic",\n  "compaction": {\n    "reserveTokens": 8192\n  }\n}\n'


def pi_reads(agent_dir: str, cwd: str) -> dict:
    out = subprocess.run([_node(), str(HARNESS_DIR / "read_settings.mjs"), agent_dir, cwd], capture_output=True,
                         text=True, timeout=60, cwd=str(HARNESS_DIR))
    assert out.returncode == 0, out.stderr[-800:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_pi_reads_what_apply_wrote_and_honours_the_lock(tmp_path):
    agent_dir, cwd = tmp_path / "agent", tmp_path / "proj"
    agent_dir.mkdir()
    cwd.mkdir()
    f = agent_dir / "settings.json"
    f.write_text(SETTINGS)
    assert pi_reads(str(agent_dir), str(cwd)) == {
        "compaction": {"enabled": True, "reserveTokens": 8192, "keepRecentTokens": 20000}, "lock": "free"}

    cfg = config.loads_for("json", SETTINGS)
    ch = advice.compare(advice.current_settings(cfg, "pi"), advice.recommend("tool-heavy"), "pi")["change"]
    advice.apply_config(advice.plan_apply(str(f), ch, "pi"))
    assert pi_reads(str(agent_dir), str(cwd))["compaction"] == {"enabled": True, "reserveTokens": 60000,
                                                                 "keepRecentTokens": 10000}
    with DirLock(str(f)):
        assert pi_reads(str(agent_dir), str(cwd))["lock"] == "ELOCKED"  # the same lock pi takes
    assert not os.path.exists(str(f) + ".lock")
