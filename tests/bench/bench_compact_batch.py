"""Benchmark: ``compact --batch`` over 2,000 generated sessions against the loopback Message Batches server.

2,000 sessions (ctxtool.synth, pi / Claude Code / Messages JSONL in turn, ~40 KB each). The
loopback server processes one batch at a time and each batch takes 2 s (``batch_latency=2``,
``batch_concurrency=1``): the simulated processing time is the sum of the batches' processing
times, what a throughput-bound Batches API makes the client wait for anyway. With
``--batch-size 100`` the client submits a batch as soon as 100 requests are planned, polls,
and writes each file while later batches are still processed; the end-to-end wall time
(planning, submitting, polling, fetching results, writing 2,000 files) is compared with the
simulated processing time: target <= 1.2x.

For reference the same run with one batch per round (``--batch-size 100000``) is measured too:
there nothing overlaps, and ``wall - simulated`` is the client's own work (planning and writing
2,000 sessions), reported per session.

Run: ``.venv/bin/python tests/bench/bench_compact_batch.py`` -> prints and writes bench-out/compact_batch.json.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ctxtool.batch_compact import BatchOptions, PollPolicy, run_batch  # noqa: E402
from ctxtool.batch_state import run_key  # noqa: E402
from ctxtool.compact_writer import Options  # noqa: E402
from ctxtool.summarize import AnthropicSummarizer  # noqa: E402
from tests.bench.bench_compact import KEEP, TARGET_BYTES, generate, hermetic_env, publish  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic  # noqa: E402

SESSIONS = 2000  # the same generated sessions as bench_compact.py, ten times as many
BATCH_LATENCY = 2.0
BATCH_SIZE = 100
TARGET = 1.2


def one_run(src: Path, work: Path, name: str, batch_size: int) -> dict:
    d = work / name
    shutil.copytree(src, d)
    files = sorted(str(p) for p in d.iterdir())
    with FakeAnthropic(batch_latency=BATCH_LATENCY, batch_concurrency=1) as srv:
        s = AnthropicSummarizer("claude-bench", api_key="bench-key-0123456789", base_url=srv.base_url, timeout=60)
        bopts = BatchOptions(state_path=str(work / f"{name}.state.jsonl"), key=run_key({"bench": name}),
                             batch_size=batch_size, poll=PollPolicy())
        cpu0 = time.process_time()
        t0 = time.monotonic()
        results, report = run_batch(files, s, Options(keep_recent_tokens=KEEP, backup=False), bopts)
        wall = time.monotonic() - t0
        cpu = time.process_time() - cpu0
        s.close()
        sim = srv.simulated_processing_seconds()
        batches = sorted(srv.batches.values(), key=lambda b: b.created)
        ids = srv.submitted_custom_ids()
        return {
            "batch_size": batch_size, "wall_s": round(wall, 3), "simulated_processing_s": round(sim, 3),
            "ratio": round(wall / sim, 3) if sim else None, "overhead_s": round(wall - sim, 3),
            "cpu_s": round(cpu, 3), "cpu_ms_per_session": round(cpu * 1000 / len(files), 2),
            "batches": len(batches), "requests": len(ids), "requests_unique": len(set(ids)),
            "first_submit_after_s": round(batches[0].created - t0, 3) if batches else None,
            "last_batch_end_after_s": round(max(b.ends for b in batches) - t0, 3) if batches else None,
            "statuses": dict(Counter(r.status for r in results)),
            "tokens_before": sum(r.tokens_before for r in results), "tokens_after": sum(r.tokens_after for r in results),
            "state_removed": report.state_removed,
        }


def main() -> dict:
    os.environ.clear()
    os.environ.update(hermetic_env())
    work = Path(tempfile.mkdtemp(prefix="ctxtool-bench-batch-"))
    try:
        src = work / "src"
        src.mkdir()
        t0 = time.monotonic()
        generate(src, SESSIONS)
        out: dict = {"sessions": SESSIONS, "target_bytes": TARGET_BYTES, "keep_recent_tokens": KEEP,
                     "batch_latency_s": BATCH_LATENCY, "batch_concurrency": 1, "target_ratio": TARGET,
                     "bytes": sum(p.stat().st_size for p in src.iterdir()), "generate_s": round(time.monotonic() - t0, 3)}
        out["pipelined"] = one_run(src, work, "pipelined", BATCH_SIZE)
        out["one_batch_per_round"] = one_run(src, work, "single", 100_000)
        p = out["pipelined"]
        out["ok"] = bool(p["ratio"] and p["ratio"] <= TARGET and p["statuses"].get("compacted") == SESSIONS
                         and p["requests"] == p["requests_unique"])
        return publish("compact_batch", out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    result = main()
    sys.exit(0 if result["ok"] else 1)
