"""Benchmark: `ctxtool repair --check` on a generated >= 500 MB pi session against a bare
orjson parse loop over the same file, in the same run. Target: at most 2x the bare loop,
peak memory far below the file size.

    python tests/bench/bench_repair.py --size-mb 500 --out bench-out
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
    path = generated(a.out, "pi", a.size_mb)
    size_mb = os.path.getsize(path) / 1024 / 1024
    bare = best("bare", path, repeat=a.repeat)
    check = best("ctxtool", "repair", "--check", path, repeat=a.repeat)
    result = {
        "benchmark": "repair --check",
        "file": path,
        "file_mb": round(size_mb, 1),
        "bare_seconds": round(bare["seconds"], 3),
        "bare_peak_rss_mb": round(bare["peak_rss_mb"], 1),
        "repair_check_seconds": round(check["seconds"], 3),
        "repair_check_peak_rss_mb": round(check["peak_rss_mb"], 1),
        "ratio_vs_bare": round(check["seconds"] / bare["seconds"], 2),
        "runs": {"bare": bare["runs"], "repair_check": check["runs"]},
        "target": "ratio <= 2.0, peak RSS far below file size",
    }
    with open(os.path.join(a.out, "repair.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
