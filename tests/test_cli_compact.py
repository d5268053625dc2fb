"""``ctxtool compact`` through the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli
from tests.support.fake_anthropic import FakeAnthropic
from tests.support import pi_agent
from tests.test_compact_support import api_errors, make_session, view_entries

KEY = "sk-cli-SECRET-987654321"




def run(*args, env=None):
    r = CliRunner().invoke(cli, ["compact", *args], env=env, catch_exceptions=False)
    return r


def test_help_has_example():
    r = run("-h")
    assert r.exit_code == 0 and "Example:" in r.output and "--keep-recent-tokens" in r.output and "--summarizer" in r.output


def test_dry_run_json_writes_nothing(tmp_path):
    files = [make_session(tmp_path, f, 10) for f in ("pi", "claude", "messages")]
    before = [open(f, "rb").read() for f in files]
    r = run("-n", "--json", "--keep-recent-tokens", "1000", "--summarizer", "anthropic", str(tmp_path))
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [f["status"] for f in data["files"]] == ["planned"] * 3
    for f in data["files"]:
        assert f["messages_summarized"] > 0 and f["tokens_summarized"] > 0 and f["prompt_tokens"] > 0 and f["calls"] >= 1
        assert f["tokens_after"] <= f["tokens_before"]
    assert [open(f, "rb").read() for f in files] == before


def test_batch_json_report_if_over_and_exit_codes(tmp_path):
    big = make_session(tmp_path, "pi", 12, name="big.jsonl")
    small = make_session(tmp_path, "messages", 2, name="small.jsonl")
    r = run("--json", "--keep-recent-tokens", "800", "--window", "4000", "--if-over", "0.5", "-j", "4", big, small,
            str(tmp_path / "missing.jsonl"))
    assert r.exit_code == 1  # one target failed, the rest done
    data = json.loads(r.stdout)
    by = {os.path.basename(f["path"]): f for f in data["files"]}
    assert by["big.jsonl"]["status"] == "compacted" and by["big.jsonl"]["tokens_after"] < by["big.jsonl"]["tokens_before"]
    assert by["small.jsonl"]["status"] == "skipped" and "not over 0.5" in by["small.jsonl"]["reason"]
    assert set(by["big.jsonl"]) >= {"status", "tokens_before", "tokens_after", "summary_chars", "seconds", "error"}
    assert data["failures"][0]["error"] == "no such file or directory"
    assert api_errors(big) == []
    r = run("--keep-recent-tokens", "800", big)  # compacted at its leaf: skipped, exit 0
    assert r.exit_code == 0 and "already compacted at its leaf" in r.output


def test_shard_is_deterministic_and_disjoint(tmp_path):
    for i in range(5):
        make_session(tmp_path, "messages", 3, name=f"s{i}.jsonl")
    seen = []
    for k in (1, 2):
        data = json.loads(run("-n", "--json", "--shard", f"{k}/2", str(tmp_path)).stdout)
        seen.append({f["path"] for f in data["files"]})
    assert not seen[0] & seen[1] and len(seen[0] | seen[1]) == 5
    assert run("--shard", "3/2", str(tmp_path)).exit_code == 2


def test_shard_of_a_file_is_a_hash_of_its_path_under_the_target_not_its_position(tmp_path):
    d = tmp_path / "sessions"
    (d / "sub").mkdir(parents=True)
    names = [f"s{i}.jsonl" for i in range(8)] + ["sub/t.jsonl"]
    for n in names:
        make_session(d, "messages", 3, name=n)

    def shards(target):
        out = {}
        for k in (1, 2, 3):
            for f in json.loads(run("-n", "--json", "--shard", f"{k}/3", target).stdout)["files"]:
                assert os.path.relpath(f["path"], target) not in out
                out[os.path.relpath(f["path"], target)] = k
        return out

    before = shards(str(d))
    assert set(before) == set(names)
    for n, k in before.items():  # the documented rule: sha256 of the path under the target, first 8 bytes, mod N
        assert k == int.from_bytes(hashlib.sha256(n.encode()).digest()[:8], "big") % 3 + 1
    make_session(d, "messages", 3, name="s0a.jsonl")  # an agent starts a session between two shards' runs
    after = shards(str(d))
    assert {n: after[n] for n in names} == before  # no other file moved to another shard
    assert "s0a.jsonl" in after
    elsewhere = tmp_path / "copy" / "of" / "them"
    shutil.copytree(d, elsewhere)  # another runner's checkout: the same split
    assert shards(str(elsewhere) + "/") == after


def test_anthropic_via_cli_env_key_never_printed(tmp_path):
    p = make_session(tmp_path, "claude", 10)
    with FakeAnthropic() as srv:
        srv.script = [429, 400]
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": srv.base_url}
        r = run("--summarizer", "anthropic", "--model", "claude-haiku-test", "--keep-recent-tokens", "900", p, env=env)
        assert len(srv.requests) >= 2 and srv.requests[0].body["model"] == "claude-haiku-test"
        assert r.exit_code == 1  # the only file fell back: written with the fallback summary, to report
        assert "HTTP 400" in r.output and "fallback" in r.output
        assert KEY not in r.output
        r2 = run("--summarizer", "anthropic", "--json", "--keep-recent-tokens", "900", "--show-summary",
                 make_session(tmp_path, "pi", 10), env=env)
        assert r2.exit_code == 0 and KEY not in r2.output
        assert json.loads(r2.stdout)["files"][0]["summary"].startswith("[FAKE-SUMMARY]")


def test_missing_key_and_command_errors(tmp_path):
    p = make_session(tmp_path, "pi", 8)
    r = run("--summarizer", "anthropic", p)
    assert r.exit_code == 3 and "ANTHROPIC_API_KEY" in r.output
    assert run("--summarizer", "command", p).exit_code == 2
    r = run("--summarizer", "command", "--summarizer-command", f"{sys.executable} -c \"import sys; sys.stderr.write('boom-stderr'); sys.exit(2)\"",
            "--on-error", "skip", "--keep-recent-tokens", "900", p)
    assert r.exit_code == 3 and "boom-stderr" in r.output and "file left unchanged" in r.output


def test_lock_held_cli(tmp_path):
    p = make_session(tmp_path, "pi", 8)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with open(p + ".lock", "w") as f:
            json.dump({"pid": holder.pid, "createdAt": "2099-01-01T00:00:00.000Z"}, f)
        r = run("--lock-timeout", "0.2", "--keep-recent-tokens", "900", p)
    finally:
        holder.kill()
        holder.wait()
    assert r.exit_code == 3 and f"session file locked (timeout 200ms): pid={holder.pid}" in r.output


@pytest.mark.pi
@pytest.mark.skipif(not pi_agent.pi_available(), reason=pi_agent.pi_unavailable_reason() or "pi unavailable")
@pytest.mark.parametrize("truncate", [False, True])
def test_real_pi_loads_compacted_file(tmp_path, truncate):
    p = make_session(tmp_path, "pi", 12)
    args = ["--keep-recent-tokens", "1000", p] + (["--truncate"] if truncate else [])
    assert run(*args).exit_code == 0
    _, entries = view_entries(p)
    kept_ids = [e.id for e in entries[1:]]
    out = pi_agent.load_with_pi(p)
    assert out["rewritten"] is False
    msgs = out["messages"]
    assert msgs[0]["role"] == "compactionSummary" and "## Goal" in json.dumps(msgs[0])
    assert len(msgs) - 1 == len(kept_ids)
    assert out["leafId"] == json.loads(open(p, "rb").read().splitlines()[-1])["id"]
