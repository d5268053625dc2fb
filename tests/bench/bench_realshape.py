"""Benchmark on real-shape data (issue 13): a folder against ccusage, one large file against the bare loop.

    python tests/bench/bench_realshape.py [--mb 500] [--files 165] [--repeat 3] [--out bench-out]

Inputs (made once under bench-out/realshape/ by ``tests/bench/realshape.py``, deterministic):

* a folder of ``--files`` real-shape Claude Code sessions, about ``--mb`` MB together, laid out as
  Claude Code does (``projects/<encoded-cwd>/<session>.jsonl``);
* one real-shape Claude Code session of ``--mb`` MB, and the generated pi session of the same size
  (``bench-out/pi-<mb>mb-seed1.jsonl``, ``ctxtool.synth``).

The folder: ``ctxtool estimate`` (heuristic and ``-t usage``), ``validate`` and ``repair --check``
(all with ``--json``) against ccusage's native binary (``ccusage session --json --offline`` with
``CLAUDE_CONFIG_DIR`` at the folder), installed from npm into bench-out/ccusage (pinned, the binary
ships in its platform package). Target: each at most 1.25x ccusage's wall time. When ccusage cannot
be installed (no registry), the comparison is reported as skipped, with the reason. The same run
measures the parse floor (``bare_parse_all_cores``: the bare orjson loop over every file, on every
core, nothing else) and reports each command against it too, and whether the floor itself is within
the target (``floor_reaches_target``).

One file: ``repair --check``, ``estimate`` and ``profile`` against the bare orjson loop over the same
file. Targets: at most 1.0x its wall time, at most 1.6x its CPU time, at most 150 MB peak (this
process or any helper); ``profile`` no slower than ``estimate``.

Every run is a whole process (interpreter start included, as for ccusage), timed until it exits
(CPU: it and every process it started, the workers it leaves to end on their own included, this
process being their subreaper on Linux; peak: the largest of them). The runs of one comparison
alternate, ``--repeat`` times: the fastest of each is compared, and for the folder also each round's
pair (``paired_vs_ccusage``: the median and range of the rounds' ratios); each round runs its cases in
an order of its own (``compare``). ccusage also runs ``--repeat`` times back to back after the rounds (on a
2-core VM its time is bimodal, and its fast runs are rare inside the rounds): the reference is its fastest
run anywhere. The folder target is met when both the fastest runs' ratio and the median round's are within
it. Writes bench-out/realshape.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import realshape  # noqa: E402
from common import generated  # noqa: E402

CCUSAGE_VERSION = "20.0.24"  # the version issue 13 measured; its native binary is in @ccusage/ccusage-<platform>
FOLDER_TARGET = 1.25
WALL_TARGET = 1.0
CPU_TARGET = 1.6
PEAK_TARGET_MB = 150
BARE = "import sys, orjson\nwith open(sys.argv[1], 'rb', buffering=1 << 20) as f:\n    for line in f:\n        orjson.loads(line)\n"
PROFILE = "import sys\nfrom ctxtool.profile import profile_session\nprofile_session(sys.argv[1])\n"
# The parse floor of a folder: the bare orjson loop over every file, spread over every core by bytes (largest
# first), nothing else. No command that parses each line (validate and repair must: a torn or invalid line is
# what they look for) can be faster; measured against ccusage, it tells whether the folder target is reachable.
BARE_FOLDER = """import os, sys, orjson
from multiprocessing import Pool
def run(paths):
    for p in paths:
        with open(p, 'rb', buffering=1 << 20) as f:
            for line in f:
                orjson.loads(line)
if __name__ == '__main__':
    files = sorted(((os.path.getsize(os.path.join(d, n)), os.path.join(d, n)) for d, _, ns in os.walk(sys.argv[1])
                    for n in ns if n.endswith('.jsonl')), reverse=True)
    k = len(os.sched_getaffinity(0))
    parts, sizes = [[] for _ in range(k)], [0] * k
    for size, p in files:
        i = sizes.index(min(sizes))
        parts[i].append(p)
        sizes[i] += size
    with Pool(k) as pool:
        pool.map(run, parts)
"""


def external(argv: list[str], env: dict | None = None) -> dict:
    """Run ``argv`` to the end: wall seconds (until it exits and its stderr is closed, by every process holding it: a
    pool's forked workers end 2-3 ms after the command), CPU seconds and peak RSS of it and of every process it
    started, those it left to end on their own too (this process is their subreaper, ``subreaper()``, and reaps them
    after the run, before the next one starts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    left_peak = _reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
           "peak_rss_mb": round(max(ru.ru_maxrss, left_peak) / 1024, 1), "exit": code}
    if code not in (0, 1):
        out["stderr"] = err.decode("utf-8", "replace")[-800:]
    return out


_SUBREAPER = False


def subreaper() -> bool:
    """Make this process the subreaper of what it starts (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): a worker that
    outlives the command it served is then this process's to reap, and its CPU time counts (else it goes to init and
    its CPU time is lost to the comparison). False where that is not available: the CPU figures then leave such
    workers out."""
    global _SUBREAPER
    if _SUBREAPER or not sys.platform.startswith("linux"):
        return _SUBREAPER
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _SUBREAPER = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        _SUBREAPER = False
    return _SUBREAPER


def _reap() -> int:
    """Wait for every process left to this one (a command's workers ending on their own): the largest peak RSS
    among them (KB)."""
    peak = 0
    while True:
        try:
            _, _, ru = os.wait4(-1, 0)
        except ChildProcessError:
            return peak
        peak = max(peak, ru.ru_maxrss)


def fastest(runs: list[dict]) -> dict:
    best = dict(min(runs, key=lambda r: r["seconds"]))
    best["runs"] = [r["seconds"] for r in runs]
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return best


def compare(cases: dict, repeat: int, seed: int = 13) -> dict:
    """Each case ``name -> (argv, env)`` run ``repeat`` times, alternating; the fastest of each, with every run's
    seconds in order (``runs``: the i-th of each case ran in the same round).

    Each round runs the cases in an order of its own (``round_orders``, shuffled with ``seed``): what a run leaves
    behind (a machine busy freeing a heavy run's memory, its caches and clocks) falls on whichever case comes next,
    and in one fixed order always on the same one. ccusage, run right after the all-cores parse floor in every round,
    took 0.30-0.41 s where it takes 0.21-0.25 s run after a ctxtool command (2026-11-30): a fixed order had made
    every ratio to it look 1.5 times better than it is."""
    rng = random.Random(seed)
    runs: dict = {k: [] for k in cases}
    orders = []
    for _ in range(repeat):
        order = list(cases)
        rng.shuffle(order)
        orders.append(order)
        for name in order:
            argv, env = cases[name]
            runs[name].append(external(argv, env))
    out = {k: fastest(v) for k, v in runs.items()}
    out["round_orders"] = orders
    return out


def paired(runs: list[float], ref: list[float]) -> dict:
    """Each round's ratio of a case to the reference (their i-th runs ran one after the other, so the machine's
    moments of load fall on both alike): the median and the range. On a noisy machine the ratio of the fastest runs
    moves from one bench run to the next more than a step of work changes it; the median of paired rounds moves less."""
    ratios = sorted(r / x for r, x in zip(runs, ref) if x > 0)
    if not ratios:
        return {"median": None, "min": None, "max": None, "rounds": 0}
    n = len(ratios)
    median = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
    return {"median": round(median, 2), "min": round(ratios[0], 2), "max": round(ratios[-1], 2), "rounds": n}


# ----------------------------------------------------------------------------- ccusage


def ccusage(out_dir: str) -> tuple[str | None, str | None]:
    """The path of ccusage's native binary, installed from npm into ``out_dir``/ccusage; or (None, why not)."""
    prefix = os.path.join(out_dir, "ccusage")
    plat = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(os.uname().machine)
    if plat is None or arch is None:
        return None, f"no ccusage native binary for {sys.platform}/{os.uname().machine}"
    binary = os.path.join(prefix, "node_modules", "@ccusage", f"ccusage-{plat}-{arch}", "bin", "ccusage")
    if not os.path.exists(binary):
        npm = shutil.which("npm")
        if npm is None:
            return None, "npm is not installed"
        # --ignore-scripts: nothing runs at install; the binary is a file of the registry package
        r = subprocess.run([npm, "install", "--prefix", prefix, "--ignore-scripts", "--no-audit", "--no-fund",
                            "--loglevel=error", f"ccusage@{CCUSAGE_VERSION}"], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(binary):
            said = [x for x in r.stderr.splitlines() if x.startswith("npm error") and "complete log" not in x]
            why = (said or r.stderr.strip().splitlines() or ["the platform package was not installed"])[0]
            return None, f"npm install ccusage@{CCUSAGE_VERSION} failed: {why}"
    os.chmod(binary, 0o755)  # installed without scripts, the binary may lack its execute bit
    r = subprocess.run([binary, "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"ccusage does not run: {r.stderr.strip()[-200:]}"
    return binary, None


# ----------------------------------------------------------------------------- inputs


def realshape_file(out_dir: str, mb: int) -> str:
    path = os.path.join(out_dir, "realshape", f"claude-{mb}mb.jsonl")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        realshape.write_file(path + ".part", mb * 1_000_000, seed=1)
        os.replace(path + ".part", path)
    return path


def realshape_folder(out_dir: str, mb: int, files: int) -> str:
    root = os.path.join(out_dir, "realshape", f"folder-{mb}mb-{files}")
    if not os.path.exists(os.path.join(root, "done")):
        shutil.rmtree(root, ignore_errors=True)
        realshape.write_folder(root, mb * 1_000_000, files, seed=1)
        with open(os.path.join(root, "done"), "w") as f:
            f.write("ok\n")
    return root


def folder_info(root: str) -> dict:
    sizes = []
    for d, _, names in os.walk(os.path.join(root, "projects")):
        sizes.extend(os.path.getsize(os.path.join(d, n)) for n in names if n.endswith(".jsonl"))
    sizes.sort()
    return {"files": len(sizes), "bytes": sum(sizes), "smallest": sizes[0], "median": sizes[len(sizes) // 2],
            "largest": sizes[-1]}


# ----------------------------------------------------------------------------- the comparisons


def ctxtool_argv(*args: str) -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "ctxtool")
    return [exe, *args] if os.path.exists(exe) else [sys.executable, "-m", "ctxtool", *args]


def folder_bench(root: str, binary: str | None, skipped: str | None, repeat: int) -> dict:
    projects = os.path.join(root, "projects")
    cases = {
        "estimate": (ctxtool_argv("estimate", "--json", projects), None),
        "estimate_usage": (ctxtool_argv("estimate", "-t", "usage", "--json", projects), None),
        "validate": (ctxtool_argv("validate", "--json", projects), None),
        "repair_check": (ctxtool_argv("repair", "--check", "--json", projects), None),
    }
    serial_env = dict(os.environ, CTXTOOL_SCAN_WORKERS="1")
    cases["estimate_usage_one_process"] = (ctxtool_argv("estimate", "-t", "usage", "--json", projects), serial_env)
    cases["bare_parse_all_cores"] = ([sys.executable, "-c", BARE_FOLDER, projects], None)
    if binary:
        cases["ccusage"] = ([binary, "session", "--json", "--offline"], dict(os.environ, CLAUDE_CONFIG_DIR=root))
    res = compare(cases, repeat)
    out: dict = {"input": folder_info(root), "runs": res}
    if not binary:
        out["ccusage"] = {"skipped": skipped}
        out["ok"] = None
        return out
    # ccusage's wall time is bimodal on a 2-core VM (0.21-0.25 s, or 0.36-0.46 s with 0.2 s more system time), and in
    # the rounds it mostly runs slow: its runs back to back, after the rounds, give what it does at its best. The
    # reference is its fastest run anywhere in this bench run (the strictest); the paired rounds' medians say the rest
    cc_argv, cc_env = cases["ccusage"]
    alone = [external(cc_argv, cc_env)["seconds"] for _ in range(repeat)]
    ref = min(res["ccusage"]["seconds"], *alone)
    out["ccusage"] = {"version": CCUSAGE_VERSION, "command": "ccusage session --json --offline", "seconds": ref,
                      "fastest_in_rounds": res["ccusage"]["seconds"], "back_to_back_runs": alone}
    out["ratios_vs_ccusage"] = {k: round(res[k]["seconds"] / ref, 2) for k in
                                ("estimate", "estimate_usage", "validate", "repair_check", "estimate_usage_one_process",
                                 "bare_parse_all_cores")}
    floor = res["bare_parse_all_cores"]["seconds"]
    out["ratios_vs_parse_floor"] = {k: round(res[k]["seconds"] / floor, 2) for k in
                                    ("estimate", "estimate_usage", "validate", "repair_check")}
    out["floor_reaches_target"] = out["ratios_vs_ccusage"]["bare_parse_all_cores"] <= FOLDER_TARGET
    out["target_ratio"] = FOLDER_TARGET
    targeted = ("estimate", "estimate_usage", "validate", "repair_check")
    out["paired_vs_ccusage"] = {k: paired(res[k]["runs"], res["ccusage"]["runs"]) for k in targeted}
    # met when the fastest runs are within the target and so is the median round: the one alone is luck
    out["ok"] = all(out["ratios_vs_ccusage"][k] <= FOLDER_TARGET and out["paired_vs_ccusage"][k]["median"] <= FOLDER_TARGET
                    for k in targeted)
    return out


def file_bench(path: str, repeat: int) -> dict:
    cases = {
        "bare": ([sys.executable, "-c", BARE, path], None),
        "repair_check": (ctxtool_argv("repair", "--check", path), None),
        "estimate": (ctxtool_argv("estimate", "--json", path), None),
        "profile": ([sys.executable, "-c", PROFILE, path], dict(os.environ, PYTHONPATH=ROOT)),
    }
    res = compare(cases, repeat)
    bare = res["bare"]
    out: dict = {"file": os.path.relpath(path, ROOT), "bytes": os.path.getsize(path), "runs": res, "vs_bare": {}}
    ok = True
    for k in ("repair_check", "estimate"):
        r = res[k]
        v = {"wall": round(r["seconds"] / bare["seconds"], 2), "cpu": round(r["cpu_seconds"] / bare["cpu_seconds"], 2),
             "peak_rss_mb": r["peak_rss_mb"]}
        v["ok"] = v["wall"] <= WALL_TARGET and v["cpu"] <= CPU_TARGET and v["peak_rss_mb"] <= PEAK_TARGET_MB
        ok = ok and v["ok"]
        out["vs_bare"][k] = v
    out["profile_vs_estimate"] = round(res["profile"]["seconds"] / res["estimate"]["seconds"], 2)
    out["ok"] = ok and out["profile_vs_estimate"] <= 1.0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--files", type=int, default=165)
    ap.add_argument("--many-files", type=int, default=2000,
                    help="a second folder of the same size in this many files (a real projects folder's shape: most "
                         "sessions small); 0: none")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench-out"))
    ap.add_argument("--only", choices=("folder", "file"), default=None)
    a = ap.parse_args()
    subreaper()
    os.makedirs(a.out, exist_ok=True)
    result: dict = {"benchmark": "real-shape data (issue 13)", "cpus": len(os.sched_getaffinity(0)),
                    "targets": {"folder_vs_ccusage": FOLDER_TARGET, "file_wall_vs_bare": WALL_TARGET,
                                "file_cpu_vs_bare": CPU_TARGET, "file_peak_rss_mb": PEAK_TARGET_MB,
                                "profile_vs_estimate": 1.0}}
    if a.only in (None, "folder"):
        binary, why = ccusage(a.out)
        if binary is None:
            print(f"ccusage comparison skipped: {why}", flush=True)
        root = realshape_folder(a.out, a.mb, a.files)
        result["folder"] = folder_bench(root, binary, why, a.repeat)
        print(json.dumps({"folder": result["folder"].get("ratios_vs_ccusage") or result["folder"]["ccusage"]}), flush=True)
        if a.many_files:
            root = realshape_folder(a.out, a.mb, a.many_files)
            result["folder_many"] = folder_bench(root, binary, why, a.repeat)
            print(json.dumps({"folder_many": result["folder_many"].get("ratios_vs_ccusage")
                              or result["folder_many"]["ccusage"]}), flush=True)
    if a.only in (None, "file"):
        claude = realshape_file(a.out, a.mb)
        result["realshape_file"] = realshape.measure_shares(claude)
        result["claude_file"] = file_bench(claude, a.repeat)
        print(json.dumps({"claude_file": result["claude_file"]["vs_bare"]}), flush=True)
        result["pi_file"] = file_bench(generated(a.out, "pi", a.mb), a.repeat)
        print(json.dumps({"pi_file": result["pi_file"]["vs_bare"]}), flush=True)
    parts = [result[k]["ok"] for k in ("folder", "folder_many", "claude_file", "pi_file") if k in result]
    result["ok"] = all(p is not False for p in parts)
    with open(os.path.join(a.out, "realshape.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
