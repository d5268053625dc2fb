"""Run one command in this process and report its wall time and peak memory (VmHWM).

    python tests/bench/measure.py bare FILE            # the bare orjson parse loop
    python tests/bench/measure.py ctxtool ARGS...      # a ctxtool command line

Prints one JSON object on the last line of stderr: {"seconds", "cpu_seconds" (this process and its
helpers), "peak_rss_mb" (VmHWM), "helper_peak_rss_mb" (the largest helper process), "exit"}.
"""

import json
import os
import resource
import sys
import time


def peak_rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def bare(path: str) -> int:
    import orjson

    n = 0
    with open(path, "rb", buffering=1 << 20) as f:
        for line in f:
            orjson.loads(line)
            n += 1
    return 0


def main() -> None:
    kind, args = sys.argv[1], sys.argv[2:]
    start = time.perf_counter()
    code = 0
    if kind == "bare":
        code = bare(args[0])
    else:
        import contextlib

        from ctxtool.cli import cli

        sink = open(os.devnull, "w")
        with contextlib.redirect_stdout(sink):
            try:
                cli.main(args=args, prog_name="ctxtool", standalone_mode=False)
            except SystemExit as e:
                code = e.code or 0
    seconds = time.perf_counter() - start
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime  # helper processes of a parallel scan included
    sys.stderr.write("\n" + json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak_rss_mb(),
                                        "helper_peak_rss_mb": kids.ru_maxrss / 1024, "exit": code}) + "\n")


if __name__ == "__main__":
    main()
