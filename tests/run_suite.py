"""Run the test suite in one pytest process per CPU (``make test``; CI): ``python tests/run_suite.py [-j N] [pytest args]``.

Most of the suite's time is the agents' real clients, one process on one core per judged case, run one after another:
split over the CPUs, the suite takes about half as long on two. Each process runs its share (``tests/support/shard.py``,
by the seconds each test file took, ``tests/durations.json``); the processes are plain pytest runs, each single-threaded,
so ctxtool forks its helpers there as it does for a user (pytest-xdist's workers run a second thread, which would
turn that off). Each share's output is printed when it ends, then one summary line; the exit code is the first
share's that failed (0 when all passed). ``-j 1``, one CPU, or test paths among the arguments: one plain pytest run.
``--save-durations`` records the seconds of each file from this run (its JUnit reports) into tests/durations.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.support import shard  # noqa: E402


def _jobs(args: list[str]) -> tuple[int, list[str], bool]:
    n, save, rest = None, False, []
    it = iter(args)
    for a in it:
        if a == "-j":
            n = int(next(it))
        elif a.startswith("-j") and a[2:].isdigit():
            n = int(a[2:])
        elif a == "--save-durations":
            save = True
        else:
            rest.append(a)
    if n is None:
        n = int(os.environ.get("CTXTOOL_TEST_JOBS", "0") or 0)
    if not n:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, n), rest, save


def _names_paths(args: list[str]) -> bool:
    """Whether the arguments name tests to run (a path or node id): then it is one plain run."""
    def exists(p: str) -> bool:
        return os.path.exists(p) or os.path.exists(os.path.join(ROOT, p))

    return any(not a.startswith("-") and ("::" in a or exists(a)) for a in args)


NO_TESTS = 5  # pytest's exit code when it collected (or kept) no test
PROGRESS_EVERY = 60.0  # seconds between the lines that say how far each share is


def _progress(log: str) -> str:
    """How far a share is, from the last ``[ NN%]`` pytest -q wrote to its log."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.path.getsize(log) - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return "?"
    found = re.findall(r"\[\s*(\d+)%\]", tail)
    return f"{found[-1]}%" if found else "collecting"


def _report(report: str) -> tuple[dict[str, int], dict[str, float]]:
    """A share's JUnit report, read once: its counts (tests, failures, errors, skipped) and the seconds per test file
    (its test cases' times, by the file their class names)."""
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return {}, {}
    counts: dict[str, int] = {}
    for s in [root] if root.tag == "testsuite" else list(root.iter("testsuite")):
        for k in ("tests", "failures", "errors", "skipped"):
            counts[k] = counts.get(k, 0) + int(s.get(k, 0) or 0)
    seconds: dict[str, float] = {}
    for case in root.iter("testcase"):
        parts = [p for p in case.get("classname", "").split(".") if p]  # tests.test_x[.Class] -> tests/test_x.py
        k = next((i for i, p in enumerate(parts) if p.startswith("test_")), None)
        if k is not None:
            f = "/".join(parts[:k + 1]) + ".py"
            seconds[f] = seconds.get(f, 0.0) + float(case.get("time", 0) or 0)
    return counts, seconds


def main(argv: list[str]) -> int:
    n, rest, save = _jobs(argv)
    cmd = [sys.executable, "-m", "pytest", "-q"] + rest
    if n == 1 or _names_paths(rest):
        return subprocess.call(cmd, cwd=ROOT)
    tmp = tempfile.mkdtemp(prefix="ctxtool-suite-")
    procs = []
    start = time.monotonic()
    for i in range(n):
        log = open(os.path.join(tmp, f"share-{i + 1}.log"), "wb")
        report = os.path.join(tmp, f"share-{i + 1}.xml")
        env = dict(os.environ, **{shard.ENV: f"{i + 1}/{n}"})
        procs.append((subprocess.Popen(cmd + [f"--junitxml={report}"], cwd=ROOT, env=env, stdout=log,
                                       stderr=subprocess.STDOUT), log, report))
    print(f"running the suite in {n} processes (tests/support/shard.py); their output follows as each ends", flush=True)
    codes: list[int | None] = [None] * n
    told = time.monotonic()
    try:
        while None in codes:
            if time.monotonic() - told >= PROGRESS_EVERY:  # a line now and then: a long run is seen to go on
                told = time.monotonic()
                print(f"[{told - start:.0f} s] " + ", ".join(
                    f"share {i + 1}: " + ("done" if codes[i] is not None else _progress(log.name))
                    for i, (_, log, _) in enumerate(procs)), flush=True)
            for i, (p, log, report) in enumerate(procs):
                if codes[i] is None and p.poll() is not None:
                    codes[i] = p.returncode
                    log.close()
                    took = time.monotonic() - start
                    print(f"\n==== share {i + 1}/{n}: exit {p.returncode}, {took:.0f} s ====", flush=True)
                    with open(log.name, "rb") as f:
                        sys.stdout.buffer.write(f.read())
                    sys.stdout.flush()
            time.sleep(0.2)
    except KeyboardInterrupt:
        for p, _, _ in procs:
            p.terminate()
        for p, _, _ in procs:
            p.wait()
        return 2
    total: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for _, _, report in procs:
        counts, times = _report(report)
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
        for f, s in times.items():
            seconds[f] = seconds.get(f, 0.0) + s
    print(f"\n==== {n} shares, {time.monotonic() - start:.0f} s: {total.get('tests', 0)} tests, "
          f"{total.get('failures', 0)} failed, {total.get('errors', 0)} errors, {total.get('skipped', 0)} skipped; "
          f"exit codes {codes} ====", flush=True)
    if save and seconds:  # (failed tests took their time too)
        with open(shard.DURATIONS, "w", encoding="utf-8") as f:
            json.dump({"note": "seconds per test file, from `python tests/run_suite.py --save-durations`: how "
                               "tests/support/shard.py splits the suite", "seconds": {k: round(v, 1) for k, v in sorted(seconds.items())}},
                      f, indent=1)
            f.write("\n")
        print(f"durations saved to {os.path.relpath(shard.DURATIONS, ROOT)}")
    shutil.rmtree(tmp, ignore_errors=True)  # (each share's output is printed above)
    if NO_TESTS in codes and not all(c == NO_TESTS for c in codes):
        # a share whose tests a -k or -m left none of: the run as a whole ran some
        codes = [0 if c == NO_TESTS else c for c in codes]
    return next((c for c in codes if c), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
