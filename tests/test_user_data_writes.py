"""Commands that write user data: compact on Claude Code files with sidechain lines, and compact
and profile --apply through symlinks (the real file is written, the link stays)."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from ctxtool.cli import cli
from ctxtool.compact_writer import Options, compact_file
from ctxtool.summarize import make_summarizer
from ctxtool.synth import write_session

BIG = "y" * 4000  # ~1,000 tokens


def _write(path, objs):
    with open(path, "w", newline="") as f:
        for o in objs:
            f.write(json.dumps(o) + "\n")
    return str(path)


def _claude_with_sidechains(path, *, last_line_sidechain=False):
    """A Claude Code main conversation with sidechain (subagent) lines interleaved, as in real files."""
    n = [0]

    def uid():
        n[0] += 1
        return f"00000000-0000-4000-8000-{n[0]:012d}"

    def env(side):
        return {"isSidechain": side, "userType": "external", "cwd": "/w", "sessionId": "s1", "version": "2.0.0"}

    def user(parent, content, side=False):
        return {"parentUuid": parent, **env(side), "type": "user", "message": {"role": "user", "content": content},
                "uuid": uid(), "timestamp": "2026-01-01T00:00:00.000Z"}

    def asst(parent, blocks, mid, side=False, stop="end_turn"):
        return {"parentUuid": parent, **env(side), "type": "assistant",
                "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                            "content": blocks, "stop_reason": stop, "usage": {"input_tokens": 1, "output_tokens": 1}},
                "requestId": "r" + mid, "uuid": uid(), "timestamp": "2026-01-01T00:00:00.000Z"}

    objs, prev = [], None
    for k in range(4):
        u = user(prev, f"q{k} " + BIG)
        a1 = asst(u["uuid"], [{"type": "text", "text": "let me"}], f"m{k}")
        a2 = asst(a1["uuid"], [{"type": "tool_use", "id": f"tu{k}", "name": "Read", "input": {"file_path": "/a"}}],
                  f"m{k}", stop="tool_use")
        s1 = user(None, f"SIDECHAIN-TASK-{k} " + BIG, side=True)
        s2 = asst(s1["uuid"], [{"type": "text", "text": "side " + BIG}], f"sm{k}", side=True)
        r = user(a2["uuid"], [{"type": "tool_result", "tool_use_id": f"tu{k}", "content": "ok " + BIG}])
        r["sourceToolAssistantUUID"] = a2["uuid"]
        b = asst(r["uuid"], [{"type": "text", "text": "done " + BIG}], f"n{k}")
        objs += [u, a1, a2, s1, s2, r, b]
        prev = b["uuid"]
    if last_line_sidechain:
        objs.append(user(None, "late sidechain " + BIG, side=True))
    return _write(path, objs)


def _extractive():
    return make_summarizer("extractive")


# ---------------------------------------------------------------- compact: Claude Code sidechains


def test_compact_claude_ignores_sidechain_lines(tmp_path):
    p = _claude_with_sidechains(tmp_path / "cc.jsonl")
    r = CliRunner().invoke(cli, ["estimate", "--json", p])
    main_tokens = json.loads(r.output)["files"][0]["tokens"]
    res = compact_file(p, _extractive(), Options(keep_recent_tokens=1500, backup=False))
    assert res.status == "compacted", res
    # what the model sees now (main chain only) is what compact must start from
    assert res.tokens_before == main_tokens
    text = open(p, encoding="utf-8").read().splitlines()
    summary = next(json.loads(x) for x in text if '"isCompactSummary"' in x)
    assert "SIDECHAIN-TASK" not in summary["message"]["content"]


def test_compact_claude_summary_not_marked_sidechain(tmp_path):
    p = _claude_with_sidechains(tmp_path / "cc.jsonl", last_line_sidechain=True)
    n_before = len(open(p, encoding="utf-8").read().splitlines())
    res = compact_file(p, _extractive(), Options(keep_recent_tokens=1500, backup=False))
    assert res.status == "compacted", res
    new = [json.loads(x) for x in open(p, encoding="utf-8").read().splitlines()[n_before:]]
    boundary, summary = new[0], new[1]
    assert boundary.get("subtype") == "compact_boundary"
    assert summary.get("isCompactSummary") is True
    assert boundary.get("isSidechain") is False
    assert summary.get("isSidechain") is False
    # the main conversation after the boundary must start with the summary
    main = [o for o in new[1:] if not o.get("isSidechain")]
    assert main and main[0] is summary


# ---------------------------------------------------------------- writes through symlinks


def test_profile_apply_symlinked_config(tmp_path):
    s = tmp_path / "s.jsonl"
    write_session(s, "pi", seed=2, turns=30, compactions=0)
    real_dir = tmp_path / "dotfiles"
    real_dir.mkdir()
    real = real_dir / "openclaw.json"
    original = b'{\n  "gateway": {"port": 18789}\n}\n'
    real.write_bytes(original)
    link = tmp_path / "openclaw.json"
    link.symlink_to(real)
    r = CliRunner().invoke(cli, ["profile", str(s), "--config", str(link), "--apply", "--yes", "--json"])
    assert r.exit_code == 0, r.output
    applied = json.loads(r.stdout)["applied"]
    assert os.path.islink(link), "the user's symlink was replaced by a regular file"
    assert json.loads(real.read_text())["agents"]["defaults"]["compaction"]["reserveTokensFloor"] > 20000
    backup = applied["backup"]
    assert not os.path.islink(backup)
    assert open(backup, "rb").read() == original


def test_compact_symlinked_session(tmp_path):
    real_dir = tmp_path / "store"
    real_dir.mkdir()
    real = real_dir / "s.jsonl"
    write_session(real, "pi", seed=3, turns=20, compactions=0)
    original = real.read_bytes()
    link = tmp_path / "s.jsonl"
    link.symlink_to(real)
    res = compact_file(str(link), _extractive(), Options())
    assert res.status == "compacted", res
    assert os.path.islink(link)
    assert real.read_bytes() != original and real.read_bytes().startswith(original)
    assert not os.path.islink(res.backup) and open(res.backup, "rb").read() == original
