"""Benchmark: `ctxtool repair --check` and `ctxtool estimate` (heuristic and recorded usage) on a
generated >= 500 MB Codex rollout, against a bare orjson parse loop over the same file, in the same
run. Target: at most 2x the bare loop, peak memory far below the file size.

    python tests/bench/bench_codex.py --size-mb 500 --out bench-out

The rollout (``ctxtool.synth.codex_rollout``) has the shapes Codex 0.169 writes: ordinals,
internal passthrough fields, encrypted reasoning, parallel exec_command calls, token counts, and
a compaction whenever the history passes Codex's threshold.
"""

import argparse
import json
import os

from common import best, generated


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    path = generated(a.out, "codex", a.size_mb)
    bare = best("bare", path, repeat=a.repeat)
    runs = {
        "repair_check": best("ctxtool", "repair", "--check", path, repeat=a.repeat),
        "estimate": best("ctxtool", "estimate", path, repeat=a.repeat),
        "estimate_usage": best("ctxtool", "estimate", "-t", "usage", path, repeat=a.repeat),
    }
    result = {
        "benchmark": "codex rollout: repair --check, estimate",
        "target": "ratio <= 2.0, peak RSS far below file size",
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "file": path,
        "file_mb": round(os.path.getsize(path) / 1024 / 1024, 1),
        "bare_seconds": round(bare["seconds"], 3),
        "bare_peak_rss_mb": round(bare["peak_rss_mb"], 1),
    }
    for name, r in runs.items():
        result[name] = {"seconds": round(r["seconds"], 3), "cpu_seconds": round(r["cpu_seconds"], 3),
                        "ratio_vs_bare": round(r["seconds"] / bare["seconds"], 2),
                        "peak_rss_mb": round(r["peak_rss_mb"], 1), "helper_peak_rss_mb": round(r["helper_peak_rss_mb"], 1),
                        "exit": r["exit"], "runs": r["runs"]}
    with open(os.path.join(a.out, "codex.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
