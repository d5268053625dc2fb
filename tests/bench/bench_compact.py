"""Benchmark: ``ctxtool compact`` over 200 generated sessions against FakeAnthropic.

200 sessions (ctxtool.synth, pi / Claude Code / Messages JSONL in turn), a loopback
Messages API server answering every call after 200 ms, ``--jobs 16``. The wall time of
the batch is compared with the ideal ``calls x latency / jobs``; target <= 1.3x.
Measured twice: in process (``compact_batch``, what --jobs controls) and through the
real CLI in a subprocess (adds interpreter start and the ~2 s ``import anthropic``).

Run: ``.venv/bin/python tests/bench/bench_compact.py`` -> prints and writes bench-out/compact.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ctxtool.compact_writer import Options, compact_batch  # noqa: E402
from ctxtool.summarize import AnthropicSummarizer, Settings  # noqa: E402
from ctxtool.synth import write_session  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic  # noqa: E402

SESSIONS = 200
LATENCY = 0.2
JOBS = 16
KEEP = 2000
TARGET_BYTES = 40_000  # ~10k tokens per session: realistic work per file without making the bench about disk I/O
FORMATS = ("pi", "claude", "messages")
TARGET = 1.3


def generate(directory: Path, sessions: int = SESSIONS) -> list[str]:
    files = []
    for i in range(sessions):
        fmt = FORMATS[i % len(FORMATS)]
        p = directory / f"s{i:03d}-{fmt}.jsonl"
        write_session(p, fmt, seed=i, target_bytes=TARGET_BYTES, tool_ratio=0.5)
        files.append(str(p))
    return files


def publish(name: str, out: dict) -> dict:
    """Write bench-out/<name>.json and print it."""
    dest = ROOT / "bench-out"
    dest.mkdir(exist_ok=True)
    (dest / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return out


def hermetic_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY") and not k.startswith("ANTHROPIC_")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def main() -> dict:
    os.environ.clear()
    os.environ.update(hermetic_env())
    work = Path(tempfile.mkdtemp(prefix="ctxtool-bench-compact-"))
    try:
        src = work / "src"
        src.mkdir()
        t0 = time.monotonic()
        files = generate(src)
        gen_s = time.monotonic() - t0
        out: dict = {"sessions": SESSIONS, "latency_s": LATENCY, "jobs": JOBS, "keep_recent_tokens": KEEP, "target_bytes": TARGET_BYTES,
                     "bytes": sum(os.path.getsize(f) for f in files), "generate_s": round(gen_s, 3), "target_ratio": TARGET}
        with FakeAnthropic(latency=LATENCY) as srv:
            # in process
            a = work / "a"
            shutil.copytree(src, a)
            s = AnthropicSummarizer("claude-bench", api_key="bench-key", base_url=srv.base_url, timeout=30)
            opts = Options(keep_recent_tokens=KEEP, backup=False, settings=Settings())
            t0 = time.monotonic()
            res = compact_batch(sorted(str(p) for p in a.iterdir()), s, opts, jobs=JOBS)
            wall = time.monotonic() - t0
            s.close()
            calls = sum(r.calls for r in res)
            ideal = calls * LATENCY / JOBS
            statuses: dict = {}
            for r in res:
                statuses[r.status] = statuses.get(r.status, 0) + 1
            out["in_process"] = {"wall_s": round(wall, 3), "calls": calls, "requests_seen": len(srv.requests),
                                 "ideal_s": round(ideal, 3), "ratio": round(wall / ideal, 3) if ideal else None,
                                 "statuses": statuses,
                                 "tokens_before": sum(r.tokens_before for r in res),
                                 "tokens_after": sum(r.tokens_after for r in res)}
            # through the CLI
            b = work / "b"
            shutil.copytree(src, b)
            srv.requests.clear()
            env = dict(os.environ, ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=srv.base_url)
            cli = [str(ROOT / ".venv" / "bin" / "ctxtool"), "compact", "--summarizer", "anthropic", "--model", "claude-bench",
                   "--jobs", str(JOBS), "--keep-recent-tokens", str(KEEP), "--no-backup", "--json", str(b)]
            t0 = time.monotonic()
            proc = subprocess.run(cli, capture_output=True, env=env)
            wall_cli = time.monotonic() - t0
            report = json.loads(proc.stdout) if proc.stdout else {}
            calls_cli = sum(f["calls"] for f in report.get("files", []))
            ideal_cli = calls_cli * LATENCY / JOBS
            out["cli"] = {"exit_code": proc.returncode, "wall_s": round(wall_cli, 3), "batch_s": report.get("seconds"),
                          "calls": calls_cli, "ideal_s": round(ideal_cli, 3),
                          "ratio_total": round(wall_cli / ideal_cli, 3) if ideal_cli else None,
                          "ratio_batch": round(report.get("seconds", 0) / ideal_cli, 3) if ideal_cli else None}
        out["ok"] = bool(out["in_process"]["ratio"] and out["in_process"]["ratio"] <= TARGET)
        return publish("compact", out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    result = main()
    sys.exit(0 if result["ok"] else 1)
