"""Stress: `repair` rewrites a session while another process appends to it without a lock.

    python tests/bench/stress_appends.py --runs 3000 [--mode open-per-line] [--writer repair|compact] [--format pi|claude] [--dir /tmp/stress]

Each run writes a ~1 MB generated pi (or Claude Code, ``--format claude``: the appender then writes
prompt lines as Claude Code does, chained by ``parentUuid``) session with one damaged line (so repair rewrites it), starts
an appender (the test suite's APPENDER: one line every ``--gap`` seconds, a fresh ``open`` per line
or one handle kept open, under the agent's own leaf), waits a few ms (a different moment each run)
and repairs the file in place with ``--no-backup`` (or compacts it, ``--writer compact``: the
extractive summarizer, keeping the last 20,000 tokens, so the appended lines hang under the
compaction). Then it counts the appended lines missing from
the file, those out of the order they were written in, and the runs where late lines were put back
in place. A missing line the next read reports (kept in the backup) is counted apart from one lost
without a word. Failing runs are copied (with their backups) to ``<dir>/failed-<run>/``.

Run it on a loaded machine too (the races need a writer and ctxtool descheduled at the wrong moment):
the figures in the README come from runs next to two CPU-bound processes on 2 cores.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from ctxtool import commit  # noqa: E402
from ctxtool.compact_writer import Options, compact_file  # noqa: E402
from ctxtool.repair import repair_file  # noqa: E402
from ctxtool.summarize import ExtractiveSummarizer  # noqa: E402
from ctxtool.synth import write_session  # noqa: E402
from tests.test_concurrent_appends import APPENDER, records  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--lines", type=int, default=80)
    ap.add_argument("--gap", type=float, default=0.0002)
    ap.add_argument("--mode", choices=["open-per-line", "persistent-handle"], default="open-per-line")
    ap.add_argument("--writer", choices=["repair", "compact"], default="repair")
    ap.add_argument("--format", choices=["pi", "claude"], default="pi")
    ap.add_argument("--dir", default="/tmp/ctxtool-stress")
    a = ap.parse_args()
    # the watch as it ships (commit.WATCH_MAX, 1 s): the appender closes its handle well before it ends
    os.makedirs(a.dir, exist_ok=True)
    work = os.path.join(a.dir, "run")
    totals = {"runs": 0, "lost_silently": 0, "lost_reported": 0, "out_of_order_runs": 0, "carried": 0, "put_back_runs": 0, "not_compacted": 0}
    started = time.monotonic()
    key = "uuid" if a.format == "claude" else "id"
    for run in range(a.runs):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        path = os.path.join(work, "session.jsonl")
        write_session(path, a.format, seed=run, target_bytes=1 << 20,
                      corruptions=("bad_control_char",) if a.writer == "repair" else ())
        proc = subprocess.Popen([sys.executable, "-c", APPENDER, path, a.format, a.mode, leaf_of(path, key),
                                 str(a.lines), str(a.gap)], stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()
        time.sleep(0.001 * (run % 20))
        if a.writer == "repair":
            report = repair_file(path, backup=False)
        else:
            report = compact_file(path, ExtractiveSummarizer(), Options(keep_recent_tokens=20000, backup=False))
            if report.status != "compacted":
                totals["not_compacted"] += 1
                print(f"run {run}: compact {report.status}: {report.error}", flush=True)
        proc.wait()
        totals["runs"] += 1
        totals["carried"] += report.carried
        totals["put_back_runs"] += any("were put before the lines" in n for n in report.notices)
        mine = [r[key] for r in records(path) if str(r.get(key, "")).startswith("st")]
        missing = sorted({"st%06x" % k for k in range(a.lines)} - set(mine))
        bad = bool(missing) or mine != sorted(mine)
        if missing:
            commit._listings.clear()
            said = commit.late_writes(path)
            totals["lost_reported" if said else "lost_silently"] += len(missing)
        if mine != sorted(mine):
            totals["out_of_order_runs"] += 1
        if bad:
            keep = os.path.join(a.dir, f"failed-{run}")
            shutil.copytree(work, keep, dirs_exist_ok=True)
            print(f"run {run}: missing {missing}, in order: {mine == sorted(mine)}; notices: {report.notices}", flush=True)
    totals["seconds"] = round(time.monotonic() - started, 1)
    totals["mode"], totals["writer"], totals["format"] = a.mode, a.writer, a.format
    print(json.dumps(totals))


def leaf_of(path: str, key: str) -> str:
    """The id of the file's last line that has one: the agent's leaf, which its next line hangs under."""
    return next(r[key] for r in reversed(records(path)) if r.get(key) and r.get("type") != "session")


if __name__ == "__main__":
    main()
