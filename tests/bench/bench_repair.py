"""Benchmark: `ctxtool repair --check` on generated >= 500 MB sessions against a bare orjson
parse loop over the same file, in the same run. Target: at most 2x the bare loop, peak memory
far below the file size.

    python tests/bench/bench_repair.py --size-mb 500 --out bench-out

Reported for the generated pi session (with ~35K reused tool ids to rename, the costly case)
and a real-shape Claude Code session (``realshape.py``, as bench_realshape.py uses): the default run (large files are scanned by helper
processes, one per CPU up to 4), its CPU time (this process and its helpers), and a serial
run (CTXTOOL_SCAN_WORKERS=1) for comparison.
"""

import argparse
import json
import os

from bench_realshape import realshape_file
from common import best, generated


def one(path: str, repeat: int) -> dict:
    size_mb = os.path.getsize(path) / 1024 / 1024
    bare = best("bare", path, repeat=repeat)
    check = best("ctxtool", "repair", "--check", path, repeat=repeat)
    serial = best("ctxtool", "repair", "--check", path, repeat=repeat, env={"CTXTOOL_SCAN_WORKERS": "1"})
    return {
        "file": path,
        "file_mb": round(size_mb, 1),
        "bare_seconds": round(bare["seconds"], 3),
        "bare_peak_rss_mb": round(bare["peak_rss_mb"], 1),
        "repair_check_seconds": round(check["seconds"], 3),
        "repair_check_cpu_seconds": round(check["cpu_seconds"], 3),
        "repair_check_peak_rss_mb": round(check["peak_rss_mb"], 1),
        "repair_check_helper_peak_rss_mb": round(check["helper_peak_rss_mb"], 1),
        "ratio_vs_bare": round(check["seconds"] / bare["seconds"], 2),
        "serial_seconds": round(serial["seconds"], 3),
        "serial_peak_rss_mb": round(serial["peak_rss_mb"], 1),
        "serial_ratio_vs_bare": round(serial["seconds"] / bare["seconds"], 2),
        "runs": {"bare": bare["runs"], "repair_check": check["runs"], "serial": serial["runs"]},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--formats", default="pi,claude")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    result = {
        "benchmark": "repair --check",
        "target": "ratio <= 2.0, peak RSS far below file size",
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "files": [one(realshape_file(a.out, a.size_mb) if fmt == "claude" else generated(a.out, fmt, a.size_mb), a.repeat)
                  for fmt in a.formats.split(",")],
    }
    with open(os.path.join(a.out, "repair.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
