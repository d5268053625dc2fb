"""compact uses the session's own window (ctxtool.window) unless --window forces one."""

import os
import shutil

from ctxtool.compact_writer import Options, compact_file
from ctxtool.repair import repair_file
from ctxtool.summarize import ExtractiveSummarizer

DEMO = os.path.join(os.path.dirname(__file__), "..", "fixtures", "demo", "openclaw-tool-heavy.jsonl")


def _session(tmp_path):
    path = str(tmp_path / "s.jsonl")
    shutil.copy(DEMO, path)
    repair_file(path, backup=False)  # the demo file is broken on purpose
    return path


def test_if_over_uses_the_window_the_session_proves(tmp_path):
    path = _session(tmp_path)
    res = compact_file(path, ExtractiveSummarizer(), Options(if_over=0.5, dry_run=True))
    assert res.window == 1_000_000 and "proves the 1M context variant" in res.window_source
    assert res.status == "skipped" and "1,000,000-token window" in res.reason


def test_forced_window_wins(tmp_path):
    path = _session(tmp_path)
    res = compact_file(path, ExtractiveSummarizer(), Options(if_over=0.5, dry_run=True, window=200_000))
    assert res.window == 200_000 and res.window_source == "--window"
    assert res.status == "planned"


def test_pairing_repairs_alone_do_not_block_compaction(tmp_path):
    # a missing result makes repair re-link the next entry ("parent"): not a broken structure
    path = str(tmp_path / "s.jsonl")
    shutil.copy(os.path.join(os.path.dirname(DEMO), "..", "repair", "pi-missing-result.jsonl"), path)
    res = compact_file(path, ExtractiveSummarizer(), Options(keep_recent_tokens=10, dry_run=True))
    assert res.status in ("planned", "skipped"), res.error
