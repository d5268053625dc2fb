"""A command over one file leaves its index for the process's end to drop (``ctxtool.retained``): the real process
ends through ``os._exit`` once its output is flushed, with the command's exit code and everything it wrote; a
folder's run, a library caller and ``CliRunner`` free as always."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from ctxtool import retained
from ctxtool.cli import cli

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"

# the entry point, with a mark on stderr when the process ends without freeing what it holds
RUN = (
    "import sys\n"
    "import ctxtool.cli as c\n"
    "from ctxtool import retained\n"
    "end = c._end_now\n"
    "def marked(code):\n"
    "    sys.stderr.write('ended-holding %d\\n' % len(retained._kept))\n"
    "    end(code)\n"
    "c._end_now = marked\n"
    "sys.argv = ['ctxtool'] + sys.argv[1:]\n"
    "c.main()\n"
)


def ctxtool(*args):
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, cwd=ROOT, timeout=120)


def copy(tmp_path, rel: str) -> str:
    dst = tmp_path / Path(rel).name
    shutil.copy(FIX / rel, dst)
    return str(dst)


def test_keep_holds_only_once_started():
    try:
        retained.keep(object())
        assert not retained.holding()
        retained.start()
        assert not retained.holding()
        retained.keep(obj := object())
        assert retained.holding() and retained._kept == [obj]
        retained.stop()
        retained.keep(object())
        assert not retained.holding()
    finally:
        retained.stop()


def test_cli_runner_keeps_nothing(tmp_path):
    r = CliRunner().invoke(cli, ["estimate", "--json", copy(tmp_path, "repair/pi-clean.jsonl")])
    assert r.exit_code == 0, r.output
    assert retained._kept is None


def test_one_file_ends_holding_its_index_with_its_output_and_exit_code(tmp_path):
    bad = copy(tmp_path, "repair/pi-missing-result.jsonl")
    for args, code in ((["estimate", "--json", bad], 0), (["validate", "--json", bad], 0),
                       (["repair", "--check", "--json", bad], 1), (["profile", "--json", bad], 0)):
        p = ctxtool(*args)
        assert p.returncode == code, p.stderr
        assert p.stderr.decode() == "ended-holding 1\n"
        out = json.loads(p.stdout)  # the whole output, flushed before the end
        assert (out.get("files") or out.get("sessions"))[0]["path"] == bad
    # human output to a pipe too
    p = ctxtool("estimate", bad)
    assert p.returncode == 0 and bad.encode() in p.stdout and p.stdout.endswith(b"\n")


def test_a_repair_written_through_the_quick_end_is_whole(tmp_path):
    bad = copy(tmp_path, "repair/pi-missing-result.jsonl")
    p = ctxtool("repair", "--json", bad)
    assert p.returncode == 0, p.stderr
    assert p.stderr.decode() == "ended-holding 1\n"
    report = json.loads(p.stdout)["files"][0]
    assert report["written"] and os.path.exists(report["backup"])
    assert Path(bad).read_bytes() == (FIX / "repair/pi-missing-result.expected.jsonl").read_bytes()
    assert not os.path.exists(bad + ".lock")  # the lock let go before the end
    assert ctxtool("validate", bad).returncode == 0


def test_a_folder_frees_as_it_goes(tmp_path):
    copy(tmp_path, "repair/pi-clean.jsonl")
    copy(tmp_path, "repair/pi-missing-result.jsonl")
    for args in (["estimate", "--json", str(tmp_path)], ["validate", "--json", str(tmp_path)]):
        p = ctxtool(*args)
        assert p.stderr.decode() == "", p.stderr  # ended as always
        assert len(json.loads(p.stdout)["files"]) == 2


def test_standard_input_spooled_for_one_file_is_removed_before_the_quick_end(tmp_path):
    spool = tmp_path / "tmp"
    spool.mkdir()
    data = (FIX / "repair/pi-separated-orphan.jsonl").read_bytes()
    p = subprocess.run([sys.executable, "-c", RUN, "validate", "-"], input=data, capture_output=True, cwd=ROOT,
                       timeout=120, env={**os.environ, "TMPDIR": str(spool)})
    assert p.returncode == 1 and p.stderr.decode() == "ended-holding 1\n"
    assert p.stdout.startswith(b"<stdin> (pi")
    assert list(spool.iterdir()) == []
