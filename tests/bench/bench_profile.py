"""Benchmark ``ctxtool profile`` on a >= 500 MB pi session (standalone script).

    .venv/bin/python tests/bench/bench_profile.py [--mb 520] [--file PATH]

Reuses a pi session of at least the target size under bench-out/ (or --file), otherwise
generates one with ctxtool.synth.write_session. Measures, each in its own subprocess (peak RSS via wait4):

* ``profile``: ctxtool.profile.profile_session(path)
* ``baseline``: ``ctxtool estimate FILE --json`` when ctxtool/estimate.py exists, else a
  heuristic token sum over the same streaming scan (chars/4 per entry).

Writes bench-out/profile.json and prints it. Targets: profile peak RSS < 150 MB and
profile time <= 2x the baseline.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "bench-out")
PY = sys.executable

PROFILE = """
import sys, json
from ctxtool.profile import profile_session
p = profile_session(sys.argv[1])
print(json.dumps({"pattern": p["classification"]["pattern"], "messages": p["messages"], "tool_calls": p["tool_calls"],
                  "compactions": p["compactions"]["count"], "requests": p["timeline"]["points"]}))
"""
HEURISTIC = """
import sys, json
from ctxtool.transcript import scan
from ctxtool.tokens import heuristic_entry
tot = [0, 0]
def on(e):
    tot[0] += heuristic_entry(e); tot[1] += 1
try:
    scan(sys.argv[1], on_entry=on, keep_index=False)
except TypeError:
    scan(sys.argv[1], on_entry=on)
print(json.dumps({"tokens": tot[0], "entries": tot[1]}))
"""


def measure(argv: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    # read all output, then reap with wait4 to get the child's peak RSS
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    res = {"seconds": round(wall, 2), "peak_rss_mb": round(ru.ru_maxrss / 1024, 1), "exit": proc.returncode}
    if proc.returncode != 0:
        res["stderr"] = err.decode("utf-8", "replace")[-500:]
    else:
        try:
            res["output"] = json.loads(out.decode().strip().splitlines()[-1]) if len(out) < 100_000 else None
        except (ValueError, IndexError):
            res["output"] = None
    return res


def find_or_make(target: int, path: str | None) -> tuple[str, bool]:
    if path:
        return path, False
    for p in sorted(glob.glob(os.path.join(OUT, "*.jsonl"))):
        if os.path.getsize(p) >= target and (".pi." in p or "pi" in os.path.basename(p)):
            with open(p, "rb") as f:
                if b'"type":"session"' in f.readline():
                    return p, False
    sys.path.insert(0, ROOT)
    from ctxtool.synth import write_session

    os.makedirs(OUT, exist_ok=True)
    p = os.path.join(OUT, f"profile-{target >> 20}mb.pi.jsonl")
    write_session(p, "pi", target_bytes=target, compactions=6)
    return p, True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=520)
    ap.add_argument("--file")
    a = ap.parse_args()
    path, made = find_or_make(a.mb << 20, a.file)
    size = os.path.getsize(path)
    prof = measure([PY, "-c", PROFILE, path])
    have_estimate = os.path.exists(os.path.join(ROOT, "ctxtool", "estimate.py"))
    base = None
    if have_estimate:
        ctx = os.path.join(os.path.dirname(PY), "ctxtool")
        base = measure([ctx if os.path.exists(ctx) else PY, *([] if os.path.exists(ctx) else ["-m", "ctxtool"]), "estimate", path, "--json"])
        base["what"] = "ctxtool estimate --json"
        if base["exit"] not in (0, 1):
            base = None
    heur = measure([PY, "-c", HEURISTIC, path])
    heur["what"] = "heuristic token sum over the same streaming scan"
    ref = base or heur
    result = {
        "file": os.path.relpath(path, ROOT),
        "bytes": size,
        "mb": round(size / (1 << 20), 1),
        "generated": made,
        "profile": prof,
        "heuristic_scan": heur,
        "estimate": base,
        "baseline": ref["what"],
        "ratio_vs_baseline": round(prof["seconds"] / ref["seconds"], 2) if ref["seconds"] else None,
        "ratio_vs_heuristic_scan": round(prof["seconds"] / heur["seconds"], 2) if heur["seconds"] else None,
        "targets": {"peak_rss_mb_lt": 150, "ratio_le": 2.0},
        "ok": prof["exit"] == 0 and prof["peak_rss_mb"] < 150 and (prof["seconds"] <= 2.0 * ref["seconds"]),
    }
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "profile.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
