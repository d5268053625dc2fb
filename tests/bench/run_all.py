"""`make bench`: run every benchmark script in this folder; each writes bench-out/<name>.json."""

import argparse
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench-out", help="where the benchmarks write (each uses its default under bench-out/)")
    ap.parse_args()
    failed = []
    for script in sorted(glob.glob(os.path.join(HERE, "bench_*.py"))):
        name = os.path.basename(script)
        print(f"== {name}", flush=True)
        r = subprocess.run([sys.executable, script])
        if r.returncode:
            failed.append(name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
