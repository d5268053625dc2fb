"""How the real-shape bench (tests/bench/bench_realshape.py) measures: each round's ratio to the reference, and the
CPU of workers a command leaves to end on their own (a folder run's pool does), which ``wait4`` alone misses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench")
sys.path.insert(0, BENCH)

import bench_realshape  # noqa: E402


def test_each_rounds_ratio_is_paired_with_the_reference_run_of_its_round():
    # round 2 is slow for both (the machine busy then): its ratio is 1.0, where best-of-runs would compare 1.0 with 0.5
    out = bench_realshape.paired([1.0, 3.0, 1.1, 0.9], [0.8, 3.0, 1.0, 0.5])
    assert out == {"median": 1.18, "min": 1.0, "max": 1.8, "rounds": 4}  # (1.1 + 1.25) / 2
    assert bench_realshape.paired([2.0, 1.0, 3.0], [1.0, 1.0, 1.0])["median"] == 2.0  # odd count: the middle one
    assert bench_realshape.paired([], []) == {"median": None, "min": None, "max": None, "rounds": 0}


def test_each_round_runs_the_cases_in_an_order_of_its_own(monkeypatch):
    # in one fixed order the reference always ran right after the heaviest case, and ran slow every time (2026-11-30)
    calls = []

    def external(argv, env=None):
        calls.append(argv[0])
        return {"seconds": float(len(calls)), "cpu_seconds": 0.0, "peak_rss_mb": 1.0, "exit": 0}

    monkeypatch.setattr(bench_realshape, "external", external)
    cases = {name: ([name], None) for name in ("a", "b", "heavy", "ref")}
    out = bench_realshape.compare(cases, 11)
    rounds = [calls[i:i + 4] for i in range(0, len(calls), 4)]
    assert len(rounds) == 11 and all(sorted(r) == sorted(cases) for r in rounds)  # every case once a round
    assert out["round_orders"] == rounds
    before_ref = {r[r.index("ref") - 1] if r.index("ref") else None for r in rounds}
    assert len(before_ref) > 1  # not always after the same case
    for name in cases:  # each case's runs in round order: the i-th run of each ran in round i
        assert out[name]["runs"] == [float(r.index(name) + 4 * i + 1) for i, r in enumerate(rounds)]
    assert bench_realshape.compare(cases, 11)["round_orders"] == rounds  # seeded: the same orders each bench run


# A command that forks a worker, answers, and exits without waiting for it; the worker then burns ~0.3 s of CPU.
_LEAVES_A_WORKER = """
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    os.close(1)
    os.close(2)  # (the bench reads the command's stderr to its end)
    os.setsid()
    os.write(w, b"x")
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
    os._exit(0)
os.close(w)
os.read(r, 1)
os._exit(0)
"""

# Runs external() as the bench does (subreaper first) in a process of its own: as subreaper, a process reaps every
# orphan below it, which pytest's process must not do to the servers and clients other tests start.
_MEASURE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_realshape as b
print(json.dumps({"subreaper": b.subreaper(), "run": b.external([sys.executable, "-c", sys.argv[2]])}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_the_cpu_of_a_worker_left_to_end_on_its_own_is_counted():
    out = subprocess.run([sys.executable, "-c", _MEASURE, BENCH, _LEAVES_A_WORKER], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["subreaper"] is True
    run = got["run"]
    assert run["exit"] == 0
    assert run["cpu_seconds"] >= 0.25  # the worker's 0.3 s, which wait4 on the command alone leaves out
    assert run["seconds"] < run["cpu_seconds"]  # the command itself exited before its worker's work was done
