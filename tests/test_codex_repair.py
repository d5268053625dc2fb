"""repair and validate on Codex rollouts, offline (the live judge is in test_codex_judge.py)."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from ctxtool import codex_rules
from ctxtool.cli import cli
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.validate import ERROR, WARNING, validate_file
from tests.support.codex_corrupt import CORRUPTIONS, FIX, SENT, read, write

RECORDED = sorted(n for n in os.listdir(FIX) if n.endswith(".jsonl"))
# (calls the client wrote without an output: repair writes the "aborted" output Codex sends for each, by design)
HEALTHY = [n for n in RECORDED if not n.startswith(("interrupted", "local_shell", "sigterm"))]


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_rollouts_validate_clean_and_are_left_alone(tmp_path, name):
    p = tmp_path / name
    shutil.copyfile(os.path.join(FIX, name), p)
    stem = name[:-6].split(".parent-")[0]  # a fork's parents beside it (without them Codex refuses it: an error)
    for other in os.listdir(FIX):
        if other.startswith(stem + ".parent-") and other.endswith(".jsonl") and other != name:
            shutil.copyfile(os.path.join(FIX, other), tmp_path / other)
    before = p.read_bytes()
    assert validate_file(str(p))["violations"] == []
    r = CliRunner().invoke(cli, ["repair", "--check", str(p)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["repair", str(p)])
    assert r.exit_code == 0 and p.read_bytes() == before
    assert not [n for n in os.listdir(tmp_path) if ".bak-" in n]


def test_lost_outputs_are_warnings_with_the_api_text_older_clients_met():
    vs = validate_file(os.path.join(FIX, "interrupted.jsonl"))["violations"]
    assert [(v["kind"], v["severity"], v["ids"]) for v in vs] == [
        ("missing-tool-result", WARNING, ["call_rec_i1"]), ("missing-tool-result", WARNING, ["call_rec_i2"])]
    assert "sends the output \"aborted\"" in vs[0]["api_error"]
    assert "No tool output found for function call call_rec_i1." in vs[0]["api_error"]
    r = CliRunner().invoke(cli, ["validate", os.path.join(FIX, "interrupted.jsonl")])
    assert r.exit_code == 0, r.output  # warnings only: Codex resumes it well paired


def test_what_codex_sends_as_is_is_an_error(tmp_path):
    vs = validate_file(write(tmp_path, "second_output"))["violations"]
    assert [(v["kind"], v["severity"]) for v in vs] == [("duplicate-tool-result", ERROR)]
    vs = validate_file(write(tmp_path, "orphan_output"))["violations"]
    assert [(v["kind"], v["severity"]) for v in vs] == [("unexpected-tool-result", WARNING)]
    assert "No tool call found for function call output with call_id call_rec_p2." in vs[0]["api_error"]


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_damage_is_repaired_and_untouched_lines_stay(tmp_path, name):
    path = write(tmp_path, name)
    before = [it for it, _ in codex_rules.sent_items(scan(path))] if name != "bom_and_no_final_newline" else None
    original = open(path, "rb").read().lstrip(b"\xef\xbb\xbf").splitlines(keepends=True)
    r = repair_file(path)
    assert r.changed and r.after == []
    assert validate_file(path)["violations"] == []
    out = open(path, "rb").read().splitlines(keepends=True)
    originals = {ln.rstrip(b"\n") for ln in original}
    new = [ln for ln in out if ln.rstrip(b"\n") not in originals]
    # every line repair did not insert or rewrite is an original line, byte for byte, in order
    assert len(new) == len([c for c in r.changes if c.action in ("inserted", "rewritten")])
    # (a line repair moved, named by its line number, stands where it was moved to)
    moved = {original[c.line - 1].rstrip(b"\n") for c in r.changes if c.action == "moved"}
    kept = [ln.rstrip(b"\n") for ln in out if ln.rstrip(b"\n") in originals and ln.rstrip(b"\n") not in moved]
    pos = [original.index(next(o for o in original if o.rstrip(b"\n") == k)) for k in kept]
    assert pos == sorted(pos)
    after = [it for it, _ in codex_rules.sent_items(scan(path))]
    if before is not None and CORRUPTIONS[name][1] != SENT:
        assert after == before  # Codex's own healing, now on disk (ids included)
    for ln in out:
        json.loads(ln)


def test_in_flight_calls_of_a_live_file_are_left(tmp_path):
    """A call of the last turn in a file the agent still has open for writing is running: its
    output is not lost yet, repair does not answer it."""
    path = write(tmp_path, "lost_last_outputs")
    with open(path, "ab"):
        r = repair_file(path, check=True)
    assert not r.changed and any("open for writing" in n for n in r.notices)
    r = repair_file(path, check=True)
    assert [c.kind for c in r.changes] == ["missing-result"]


def test_lines_appended_at_the_end_keep_an_ordinal(tmp_path):
    path = write(tmp_path, "lost_last_outputs")
    last = json.loads(read()[-1])
    repair_file(path)
    tail = json.loads(open(path, "rb").read().splitlines()[-1])
    assert tail["payload"]["output"] == "aborted" and isinstance(tail["ordinal"], int)
    assert list(tail)[:3] == ["timestamp", "ordinal", "type"] and tail["ordinal"] <= last["ordinal"]


def test_generated_rollouts_are_healthy_and_reproducible(tmp_path):
    from ctxtool import synth

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    synth.write_session(a, "codex", seed=3, target_bytes=600_000, compactions=1)
    synth.write_session(b, "codex", seed=3, target_bytes=600_000, compactions=1)
    assert a.read_bytes() == b.read_bytes()
    t = scan(str(a))
    assert t.format_name == "codex" and t.bad == []
    assert sum(1 for e in t.entries if e.kind == "compaction") == 1
    assert validate_file(str(a))["violations"] == []
    assert not repair_file(str(a), check=True).changed


def test_view_command_prints_the_items_codex_sends(tmp_path):
    r = CliRunner().invoke(cli, ["view", "--jsonl", os.path.join(FIX, "interrupted.jsonl")])
    assert r.exit_code == 0, r.output
    items = [json.loads(x) for x in r.output.splitlines()]
    assert items[0]["role"] == "developer"
    assert [i["output"] for i in items if i["type"] == "function_call_output"] == ["aborted", "aborted"]
    assert all("internal_chat_message_metadata_passthrough" not in i for i in items)


@pytest.mark.parametrize("name", RECORDED)
def test_the_view_pairing_walked_is_the_final_one_when_nothing_changes(name):
    """repair validates the result against the view its pairing walked when it changed nothing
    (one pass less): that view must be the one the final entries give, with the same findings."""
    from ctxtool.model import entry_to_tuple
    from ctxtool.repair import plan_repair
    from ctxtool.validate import validate_entries

    plan = plan_repair(scan(os.path.join(FIX, name), stats=False))
    if plan.changes:
        pytest.skip("repair changes this file")
    walked = plan.planner.walked_view
    assert walked is not None

    def key(view):
        return [(e.index, entry_to_tuple(e)[1:24]) for e in view]

    assert key(walked) == key(codex_rules.sent_entries(plan.final_entries))
    assert validate_entries("codex", plan.final_entries, context=walked) == validate_entries("codex", plan.final_entries)


def test_a_call_whose_timestamp_is_mended_gets_its_aborted_output_with_the_mended_timestamp(tmp_path):
    """A call line whose timestamp is no string, and whose output was lost: repair mends the call's
    envelope and inserts the output Codex sends for it ("aborted") with the mended timestamp, not the
    damaged one, so a second repair finds nothing (found by the fuzz: the output copied the number)."""
    lines = open(os.path.join(FIX, "interrupted.jsonl"), "rb").read().splitlines(keepends=True)
    k = next(n for n, ln in enumerate(lines) if b'"call_id":"call_rec_i1"' in ln and b'"function_call"' in ln)
    o = json.loads(lines[k])
    o["timestamp"] = 10 ** 30
    lines[k] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    path = str(tmp_path / "interrupted.jsonl")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    report = repair_file(path, backup=False)
    assert ("line-envelope", k + 1) in [(c.kind, c.line) for c in report.changes]
    written = [json.loads(x) for x in open(path, "rb")]
    outputs = [x for x in written if x.get("payload", {}).get("type") == "function_call_output"
               and x["payload"].get("call_id") == "call_rec_i1"]
    assert outputs and all(type(x["timestamp"]) is str for x in outputs)
    assert type(written[k]["timestamp"]) is str
    assert repair_file(path, check=True).changes == []


def test_a_trees_forks_are_indexed_once_for_a_batch_repair(tmp_path, monkeypatch):
    """Each rewrite of a rollout looks for the forks that read it (their first lines): a batch repair of a tree read
    every rollout's first line for each file it wrote (quadratic in a home of thousands of rollouts)."""
    day = tmp_path / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    for k in range(4):
        data = open(os.path.join(FIX, "parallel.jsonl"), "rb").read()
        (day / f"rollout-{k}.jsonl").write_bytes(data.replace(b"01a209aa-15e6", b"01a209aa-15e%d" % k) + b'{"torn\n')
    codex_rules._FORKS.clear()
    read = []
    real = codex_rules._fork_base
    monkeypatch.setattr(codex_rules, "_fork_base", lambda p: read.append(p) or real(p))
    for k in range(4):
        assert repair_file(str(day / f"rollout-{k}.jsonl")).written
    assert len(read) == 4  # each rollout's first line once, for the four rewrites
