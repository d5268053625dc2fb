"""ctxtool report: merging per-shard `compact --json` outputs (pure merge, then the CLI on real shard runs)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.errors import InputError
from ctxtool.report import merge, read_report, skip_kind
from tests.test_compact_support import make_session


def f(path, status, before=1000, after=400, **kw):
    d = {"path": path, "status": status, "tokens_before": before, "tokens_after": after if status in ("compacted", "fallback") else before,
         "calls": 1 if status in ("compacted", "fallback") else 0, "fallback": "none", "reason": None, "error": None}
    d.update(kw)
    return d


def shard(spec, files, **kw):
    return {"dry_run": False, "summarizer": "anthropic", "shard": spec, "seconds": 2.5, "files": files, "failures": [], **kw}


NOTHING = "nothing to summarize: the whole context (5 messages, 611 tokens) is within --keep-recent-tokens 20,000"


def test_merge_counts_tokens_reasons_failures_and_fallbacks():
    reports = [
        ("s1.json", shard("1/3", [f("a", "compacted"), f("b", "skipped", reason=NOTHING)],
                          batch={"batches": [{"id": "b1"}], "requests_submitted": 3, "requests_reused": 0})),
        ("s2.json", shard("2/3", [f("c", "fallback", fallback="text", error="summarizer failed, fallback summary written: x"),
                                  f("d", "skipped", reason="12,000 tokens, not over 0.8 of the 200,000-token window")],
                          batch={"batches": [{"id": "b2"}, {"id": "b3"}], "requests_submitted": 4, "requests_reused": 1})),
        ("s3.json", shard("3/3", [f("e", "failed", error="locked"), f("g", "compacted", fallback="partial", reason="partial summary: y"),
                                  f("h", "skipped", reason="nothing to summarize: no valid cut point (...)")],
                          failures=[{"path": "nope/", "error": "no such file or directory"}])),
    ]
    m = merge(reports)
    assert (m["files"], m["compacted"], m["fallback"], m["skipped"], m["failed"]) == (7, 2, 1, 3, 1)
    assert m["tokens_before"] == 7000 and m["tokens_after"] == 400 * 3 + 1000 * 4 and m["tokens_saved"] == 1800
    assert m["calls"] == 3 and m["seconds"] == 2.5
    assert m["skip_reasons"][0] == {"reason": "nothing to summarize", "files": 2, "example": NOTHING}
    assert {g["reason"] for g in m["skip_reasons"]} == {"nothing to summarize", "not over --if-over"}
    assert m["failed_files"] == [{"path": "e", "error": "locked", "source": "s3.json"}]
    assert [(x["path"], x["level"]) for x in m["fallback_files"]] == [("c", "text"), ("g", "partial")]
    assert m["failures"] == [{"source": "s3.json", "sources": ["s3.json"], "path": "nope/", "error": "no such file or directory"}]
    assert m["batch"] == {"batches": 3, "requests_submitted": 7, "requests_reused": 1}
    assert m["expected_shards"] == 3 and m["missing_shards"] == [] and not m["ok"]
    assert [s["files"] for s in m["shards"]] == [2, 2, 3] and m["shards"][2]["failed"] == 1


def test_all_done_is_ok_and_partial_summaries_do_not_spoil_it():
    m = merge([("a", shard("1/2", [f("x", "compacted", fallback="partial")])), ("b", shard("2/2", [f("y", "skipped", reason=NOTHING)]))])
    assert m["ok"] and m["notes"] == [] and len(m["fallback_files"]) == 1


def test_missing_and_repeated_shards_duplicate_files_and_failed_runs():
    m = merge([("a", shard("1/4", [f("x", "compacted")])), ("b", shard("3/4", [f("x", "compacted"), f("y", "compacted")])),
               ("c", shard("3/4", [f("z", "compacted")])),
               ("d", {"error": {"message": "no API key: set ANTHROPIC_API_KEY", "exit_code": 3}})])
    assert m["missing_shards"] == ["2/4", "4/4"] and not m["ok"]
    assert m["files"] == 3 and m["duplicates"] == [{"path": "x", "sources": ["a", "b"]}]
    notes = " | ".join(m["notes"])
    assert "2 of 4 shards missing: 2/4, 4/4" in notes and "given more than once: 3/4" in notes
    assert "reported by more than one shard" in notes and "d: no API key" in notes
    assert merge([("a", shard("1/2", [])), ("b", shard("1/3", []))])["notes"][0].startswith("the shards come from different splits")


def test_a_shard_given_twice_is_not_ok():
    m = merge([("a", shard("1/2", [f("x", "compacted")])), ("a2", shard("1/2", [])), ("b", shard("2/2", [f("y", "compacted")]))])
    assert m["missing_shards"] == [] and m["duplicates"] == [] and not m["ok"]
    assert "given more than once: 1/2" in " | ".join(m["notes"])


def test_shards_of_different_splits_are_not_ok_and_their_missing_shards_are_named():
    m = merge([("a", shard("1/2", [f("x", "compacted")])), ("b", shard("2/3", [f("y", "compacted")]))])
    assert not m["ok"] and m["expected_shards"] is None
    assert m["missing_shards"] == ["2/2", "1/3", "3/3"]
    assert m["notes"][0].startswith("the shards come from different splits (/2, /3)")


def test_a_file_reported_twice_gets_the_same_status_in_any_argument_order():
    old = ("old.json", shard("1/2", [f("x", "failed", error="locked")]))
    new = ("new.json", shard("1/2", [f("x", "compacted")]))
    rest = ("b.json", shard("2/2", [f("y", "compacted")]))
    a, b = merge([old, new, rest]), merge([new, rest, old])
    for m in (a, b):
        assert (m["files"], m["compacted"], m["failed"], m["failed_files"]) == (2, 2, 0, [])
        assert m["duplicates"] == [{"path": "x", "sources": ["new.json", "old.json"]}] and not m["ok"]
    assert a["tokens_before"] == b["tokens_before"] and a["tokens_after"] == b["tokens_after"]


def test_a_target_missing_in_every_shard_is_one_failure():
    miss = [{"path": "missing.jsonl", "error": "no such file or directory"}]
    m = merge([("a", shard("1/2", [], failures=miss)), ("b", shard("2/2", [], failures=miss))])
    assert m["failures"] == [{"source": "a", "sources": ["a", "b"], "path": "missing.jsonl", "error": "no such file or directory"}]


def test_skip_kind():
    assert skip_kind(NOTHING) == "nothing to summarize"
    assert skip_kind("already compacted at its leaf") == "already compacted at its leaf"
    assert skip_kind("5,000 tokens, not over 0.8 of the 200,000-token window") == "not over --if-over"
    assert skip_kind("first kept entry has no id") == "first kept entry has no id"
    assert skip_kind(None) == "(no reason given)"


@pytest.mark.parametrize("content, words, line", [(b"", "empty file", None), (b'{"files": [\n  {"path": 1,,', "not JSON", 2),
                                                  (b'{"totals": {}}', "not a `ctxtool compact --json` report", None),
                                                  (b'[1, 2]', "not a `ctxtool compact --json` report", None),
                                                  # fields of other types (CLI audit: internal errors, an N that
                                                  # listed 10^20 missing shards until memory ran out)
                                                  (b'{"files": [], "shard": {"index": 5}}', '"shard" is (an object)', None),
                                                  (b'{"files": [], "shard": "-1/2"}', '"shard" is', None),
                                                  (b'{"files": [], "shard": "1/99999999999999999999"}', "N <= 100,000", None),
                                                  (b'{"files": [], "seconds": "x"}', '"seconds" is', None),
                                                  (b'{"files": [{"path": "a", "tokens_before": "x"}]}', "files[0].tokens_before", None),
                                                  (b'{"files": [{"path": "a", "reason": 5}]}', "files[0].reason", None),
                                                  (b'{"files": [], "batch": [1]}', '"batch"', None),
                                                  # a status compact never writes was counted in no status (exit 0)
                                                  (b'{"files": [{"path": "x", "status": "exploded"}], "shard": "1/1"}',
                                                   "files[0].status is 'exploded', not one of compacted", None)])
def test_read_report_names_the_file(tmp_path, content, words, line):
    p = tmp_path / "shard-1.json"
    p.write_bytes(content)
    with pytest.raises(InputError) as e:
        read_report(str(p))
    assert e.value.path == str(p) and words in e.value.reason and e.value.line == line


# ---------------------------------------------------------------- CLI


def compact(*args):
    return CliRunner().invoke(cli, ["compact", *args], catch_exceptions=False)


def report(*args):
    return CliRunner().invoke(cli, ["report", *args], catch_exceptions=False)


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "sessions"
    d.mkdir()
    for i in range(7):
        fmt = ("pi", "claude", "messages")[i % 3]
        make_session(d, fmt, 4 + i, name=f"s{i}-{fmt}.jsonl")
    return d


def test_report_of_a_sharded_run_equals_the_unsharded_run(corpus, tmp_path):
    whole = tmp_path / "whole"
    shutil.copytree(corpus, whole)
    r = compact("--keep-recent-tokens", "900", "--no-backup", "--json", str(whole))
    want = json.loads(r.stdout)["totals"]
    outs = []
    for i in (1, 2, 3):
        r = compact("--keep-recent-tokens", "900", "--no-backup", "--json", "--shard", f"{i}/3", str(corpus))
        assert r.exit_code == 0, r.output
        out = tmp_path / f"shard-{i}.json"
        out.write_text(r.stdout)
        outs.append(str(out))
    r = report("--json", *outs)
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)
    assert m["files"] == want["files"] == 7 and m["missing_shards"] == [] and m["ok"]
    assert (m["tokens_before"], m["tokens_after"]) == (want["tokens_before"], want["tokens_after"])
    assert m["compacted"] == want.get("compacted", 0) and m["skipped"] == want.get("skipped", 0)
    r = report(*outs)  # piped: plain text
    assert r.exit_code == 0
    assert "shards" in r.stdout and "1/3" in r.stdout and "3/3" in r.stdout and "\x1b[" not in r.stdout
    assert f"7 file(s) in 3 report(s): {want['compacted']} compacted" in r.stdout
    r = report(*outs[:2])
    assert r.exit_code == 1 and "1 of 3 shards missing: 3/3" in r.output
    again = tmp_path / "shard-1-again.json"
    again.write_text(json.dumps({**json.loads(open(outs[0]).read()), "files": []}))
    r = report(*outs, str(again))  # every file done, no file reported twice, but shard 1/3 given twice
    assert r.exit_code == 1 and "given more than once: 1/3" in r.output
    other = tmp_path / "other-split.json"
    other.write_text(compact("--keep-recent-tokens", "900", "--no-backup", "--json", "--shard", "2/2", str(corpus)).stdout)
    r = report(outs[0], str(other))  # 1/3 and 2/2: 2/3, 3/3 and 1/2 missing
    assert r.exit_code == 1 and "different splits (/2, /3)" in r.output and "3 shards missing: 1/2, 2/3, 3/3" in r.output


def test_report_bad_inputs(tmp_path, corpus):
    good = tmp_path / "shard-1.json"
    good.write_text(compact("--keep-recent-tokens", "900", "--json", "-n", "--shard", "1/1", str(corpus)).stdout)
    bad = tmp_path / "shard-2.json"
    bad.write_text("Error: something went wrong\n")
    r = report(str(good), str(bad))
    assert r.exit_code == 1 and f"{bad}:1: not JSON" in r.output and "Traceback" not in r.output
    r = report(str(bad), str(tmp_path / "missing.json"))
    assert r.exit_code == 3 and "missing.json: cannot read" in r.output
    r = report("--json", str(bad))
    assert r.exit_code == 3 and json.loads(r.stdout)["unreadable"][0]["path"] == str(bad)
    r = report(str(tmp_path))  # a folder of reports
    assert "shard-1.json" in r.output and "shard-2.json" in r.output


def test_a_report_that_is_no_regular_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "shard.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as e:
        read_report(str(fifo))
    assert "not a regular file" in e.value.reason


def test_one_bad_report_leaves_the_others_summarized(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"files": [{"path": "a.jsonl", "status": "compacted", "tokens_before": 10, "tokens_after": 4}], '
                    '"shard": "1/2", "seconds": 1.5}', encoding="utf-8")
    bad.write_text('{"files": [], "shard": {"i": 2}}', encoding="utf-8")
    r = report("--json", str(good), str(bad))
    out = json.loads(r.output)
    assert r.exit_code == 1 and out["compacted"] == 1 and out["tokens_saved"] == 6
    assert [u["path"] for u in out["unreadable"]] == [str(bad)]


def test_a_report_read_from_standard_input(tmp_path):
    """`-` is standard input for every command that reads a file: `report -` said "-: cannot read: No such file"
    (found by an adversarial review)."""
    doc = '{"files": [{"path": "a.jsonl", "status": "compacted", "tokens_before": 10, "tokens_after": 4}], "seconds": 1}'
    r = CliRunner().invoke(cli, ["report", "--json", "-"], input=doc)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["compacted"] == 1
