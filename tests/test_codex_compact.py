"""compact, prune and profile on Codex rollouts (offline; the live judge is in test_codex_judge.py)."""

import json
import os
import shutil

from click.testing import CliRunner

from ctxtool import codex_rules
from ctxtool.cli import cli
from ctxtool.compact_writer import Options, compact_file
from ctxtool.profile import profile_session
from ctxtool.summarize import ExtractiveSummarizer
from ctxtool.transcript import scan
from ctxtool.validate import validate_file

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "codex-recorded")


def copy(tmp_path, name):
    p = tmp_path / name
    shutil.copyfile(os.path.join(FIX, name), p)
    return str(p)


def test_compact_appends_codex_own_compacted_line(tmp_path):
    path = copy(tmp_path, "parallel.jsonl")
    before = open(path, "rb").read()
    r = compact_file(path, ExtractiveSummarizer(), Options(keep_recent_tokens=50))
    assert r.status == "compacted", r.error
    after = open(path, "rb").read()
    assert after.startswith(before)  # every original line untouched
    new = [json.loads(x) for x in after[len(before):].splitlines()]
    assert len(new) == 1 and new[0]["type"] == "compacted"
    last = json.loads(before.splitlines()[-1])
    assert new[0]["ordinal"] == last["ordinal"] + 1  # a paginated rollout's last record keeps one
    p = new[0]["payload"]
    assert p["message"].startswith(codex_rules.SUMMARY_TEXT + "\n")
    hist = p["replacement_history"]
    assert hist[0] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": p["message"]}]}
    # the kept items, as recorded (less Codex's internal field), the last turn whole
    kept_ids = [it.get("call_id") for it in hist if it.get("call_id")]
    assert kept_ids == ["call_rec_p5", "call_rec_p5"]
    assert all("internal_chat_message_metadata_passthrough" not in it for it in hist)
    view = [it for it, _ in codex_rules.sent_items(scan(path))]
    assert view[0]["role"] == "developer" and view[1:] == hist
    assert validate_file(path)["violations"] == []
    assert r.backup and open(r.backup, "rb").read() == before


def test_compacting_a_compacted_rollout_updates_its_summary(tmp_path):
    path = copy(tmp_path, "parallel.jsonl")
    compact_file(path, ExtractiveSummarizer(), Options(keep_recent_tokens=50))
    r = compact_file(path, ExtractiveSummarizer(), Options(keep_recent_tokens=50))
    assert r.status == "skipped" and "already compacted" in r.reason


def test_prune_writes_a_codex_rollout(tmp_path):
    path = copy(tmp_path, "long_output.jsonl")
    out = str(tmp_path / "pruned.jsonl")
    r = CliRunner().invoke(cli, ["prune", "-s", "openclaw", "--ignore-ttl", "--window", "30000", "--keep-last-assistants", "0",
                                 "--min-prunable-tool-chars", "1000", path, "-o", out, "--as-session", "--json"])
    assert r.exit_code == 0, r.output
    t = scan(out)
    assert t.format_name == "codex"
    items = [it for it, _ in codex_rules.sent_items(t)]
    outputs = [it["output"] for it in items if it["type"] == "function_call_output"]
    recorded = [it["output"] for it, _ in codex_rules.sent_items(scan(path)) if it["type"] == "function_call_output"]
    assert [len(o) > 40_000 for o in recorded] == [True, True]
    assert len(outputs) == 2 and all(len(o) < 4000 for o in outputs)  # soft-trimmed: head and tail kept
    assert [o[:1000] for o in outputs] == [o[:1000] for o in recorded]
    meta = t.entries[0]
    assert meta.kind == "header" and meta.id != scan(path).entries[0].id and not meta.get("forked_from")
    assert validate_file(out)["violations"] == []


def test_profile_reads_codex_usage_and_window():
    """Two requests (the calls' response, then the reply), each with its recorded usage: the
    input tokens of its token_count."""
    r = profile_session(os.path.join(FIX, "long_output.jsonl"))
    assert r["format"] == "codex" and r["model"] == "gpt-5.5"
    assert r["window"] == 258_400 and r["requests"] == 2
    counts = []
    with open(os.path.join(FIX, "long_output.jsonl")) as f:
        for line in f:
            o = json.loads(line)
            if o["type"] == "event_msg" and o["payload"].get("type") == "token_count":
                counts.append(o["payload"]["info"]["last_token_usage"]["input_tokens"])
    assert r["timeline"]["series"] == counts and r["timeline"]["series_recorded"] == [1, 1]
