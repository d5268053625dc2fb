"""CLI audit: exit codes, --json on failures, broken pipes, progress, messages (one test per fix)."""

import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ctxtool import jsonl, render
from ctxtool.cli import cli

ROOT = os.path.join(os.path.dirname(__file__), "..")
FIX = os.path.join(ROOT, "fixtures")


def copy(tmp_path, rel, name=None):
    dst = tmp_path / (name or os.path.basename(rel))
    shutil.copy(os.path.join(FIX, rel), dst)
    return str(dst)


def run(*args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], **kw)


def stdout_json(r):
    return json.loads(r.stdout)


# -- broken pipe: `| head` must not change the exit code --------------------------------------


class _BrokenFile:
    def write(self, s):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass

    def isatty(self):
        return False


def test_broken_pipe_on_human_output_keeps_exit_0(tmp_path, monkeypatch):
    # rich's default on_broken_pipe raised SystemExit(1): a clean file read as "something to report"
    real = render.console

    def broken_console(stderr=False):
        con = real(stderr)
        if not stderr:
            con.file = _BrokenFile()
        return con

    monkeypatch.setattr(render, "console", broken_console)
    r = run("validate", copy(tmp_path, "repair/pi-clean.jsonl"))
    assert r.exit_code == 0, r.output
    r = run("validate", copy(tmp_path, "repair/pi-separated-orphan.jsonl"))
    assert r.exit_code == 1, r.output


def _closed_pipe_run(args):
    """Run ctxtool with stdout a pipe whose reader is already gone (EPIPE on the first write)."""
    rd, wr = os.pipe()
    os.close(rd)
    try:
        p = subprocess.run([sys.executable, "-m", "ctxtool", *args], stdout=wr, stderr=subprocess.PIPE, cwd=ROOT,
                           timeout=120)
    finally:
        os.close(wr)
    return p.returncode, p.stderr.decode()


@pytest.mark.parametrize("json_", [False, True])
def test_broken_pipe_real_process_exit_code_reports_findings(tmp_path, json_):
    clean = copy(tmp_path, "repair/pi-clean.jsonl")
    bad = copy(tmp_path, "repair/pi-separated-orphan.jsonl")
    extra = ["--json"] if json_ else []
    rc, err = _closed_pipe_run(["validate", *extra, clean])
    assert (rc, err) == (0, "")
    rc, err = _closed_pipe_run(["validate", *extra, bad])  # --json used to exit 0 here, hiding the error
    assert (rc, err) == (1, "")


# -- --json stays valid JSON when the whole command fails -------------------------------------


def test_prune_json_missing_file_is_json_error(tmp_path):
    missing = str(tmp_path / "gone.jsonl")
    r = run("prune", "--json", missing)
    assert r.exit_code == 3
    err = stdout_json(r)["error"]
    assert err["exit_code"] == 3 and err["path"] == missing and "no such file" in err["message"]
    assert r.stderr.strip().splitlines() == [f"Error: {missing}: no such file or directory"]  # (as every command says)


@pytest.mark.parametrize("cmd", ["view", "prune", "validate", "estimate"])
def test_a_link_to_a_missing_file_says_so_in_every_command(tmp_path, cmd):
    """view and prune said "no such file" where the others say what the path is (found by an adversarial review)."""
    link = tmp_path / "d.jsonl"
    link.symlink_to(tmp_path / "nowhere.jsonl")
    r = run(cmd, link)
    assert r.exit_code == 3 and r.stderr.strip() == f"Error: {link}: a symbolic link to a missing file ({tmp_path / 'nowhere.jsonl'})"


def test_usage_error_with_json_is_json_error(tmp_path):
    r = run("prune", "--json", "--bogus", copy(tmp_path, "repair/pi-clean.jsonl"))
    assert r.exit_code == 2
    assert "--bogus" in stdout_json(r)["error"]["message"]


def test_profile_json_when_no_session_could_be_read(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    missing = str(tmp_path / "gone.jsonl")
    r = run("profile", "--json", str(empty), missing)
    assert r.exit_code == 3
    data = stdout_json(r)
    assert data["sessions"] == []
    assert {f["path"] for f in data["failures"]} == {str(empty), missing}
    # every failure record has the same shape (collect()'s records had no message/line)
    assert all({"path", "error", "line", "message"} <= set(f) for f in data["failures"])


def test_profile_apply_without_yes_json(tmp_path):
    cfg = tmp_path / "openclaw.json"
    cfg.write_text('{"agents": {"defaults": {}}}\n')
    before = cfg.read_bytes()
    r = run("profile", "--json", copy(tmp_path, "profile/tool_heavy.jsonl"), "--config", cfg, "--apply")
    assert r.exit_code == 2
    data = stdout_json(r)
    assert data["applied"] is None and "needs --yes" in data["error"]["message"]
    assert cfg.read_bytes() == before


def test_compact_missing_api_key_json(tmp_path):
    r = run("compact", "--summarizer", "anthropic", "--json", copy(tmp_path, "compact/pi-basic.input.jsonl"))
    assert r.exit_code == 3
    assert "ANTHROPIC_API_KEY" in stdout_json(r)["error"]["message"]
    assert len(r.stderr.strip().splitlines()) == 1


# -- prune: an unreadable input is exit 3 with one line, not a click usage error ---------------


def deny_reading(monkeypatch, p) -> None:
    """Opening ``p`` fails as it does for a user who may not read it (as root chmod 000 does not stop reading)."""
    real_open = open

    def deny(path, *a, **kw):
        if os.path.abspath(str(path)) == os.path.abspath(p):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(jsonl, "open", deny, raising=False)


def test_prune_unreadable_input_is_exit_3_one_line(tmp_path, monkeypatch):
    p = copy(tmp_path, "repair/pi-clean.jsonl")
    monkeypatch.setattr(os, "access", lambda *a, **kw: False)
    deny_reading(monkeypatch, p)
    r = run("prune", p)
    assert r.exit_code == 3, r.output
    assert r.stderr.strip().splitlines() == [f"Error: {p}: cannot read: Permission denied"]


@pytest.mark.parametrize("cmd", ["prune", "view", "checkpoint --read"])
def test_a_directory_to_a_one_file_command_is_exit_3_one_line(tmp_path, cmd):
    """A one-file command given a directory says so as every command says what it could not process: one line
    naming it, exit 3 (prune answered with a usage error, exit 2)."""
    d = tmp_path / "sessions"
    d.mkdir()
    r = run(*cmd.split(), str(d))
    assert r.exit_code == 3, r.output
    assert r.stderr.strip().splitlines() == [f"Error: {d}: is a directory"]


def test_repair_of_an_unreadable_file_says_it_cannot_read_it(tmp_path, monkeypatch):
    """In a folder where no lock can be made either (read-only), the error is the file's own: it cannot be read
    (it named the lock)."""
    p = copy(tmp_path, "repair/pi-clean.jsonl")
    deny_reading(monkeypatch, p)
    from ctxtool import lock

    def no_lock(self):
        raise AssertionError("the lock was asked for")

    monkeypatch.setattr(lock.SessionLocks, "acquire", no_lock)
    r = run("repair", p)
    assert r.exit_code == 3, r.output
    assert r.stderr.strip().splitlines() == [f"Error: {p}: cannot read: Permission denied"]


def test_repair_errors_name_the_file_as_given(tmp_path, monkeypatch):
    """repair reads a file at its real path (a link's target); what it cannot repair is said of the name the user
    gave, relative or a link, as the other commands say it (it named the absolute real path)."""
    (tmp_path / "bad.jsonl").write_text("not json\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "bad.jsonl")
    monkeypatch.chdir(tmp_path)
    for name in ("bad.jsonl", "link.jsonl"):
        r = run("repair", name)
        assert r.exit_code == 3, r.output
        assert r.stderr.startswith(f"Error: {name}:1: no parseable JSON lines"), r.stderr
        r = run("repair", "--json", name)
        assert [f["path"] for f in json.loads(r.stdout)["failures"]] == [name]


def test_unreadable_config_is_one_line(tmp_path, monkeypatch):
    cfg = tmp_path / "openclaw.json"
    cfg.write_text("{}")
    monkeypatch.setattr(os, "access", lambda *a, **kw: False)  # click's readable check used to answer first
    r = run("prune", "--config", cfg, copy(tmp_path, "repair/pi-clean.jsonl"))
    assert r.exit_code == 0, r.output
    assert "Usage:" not in r.output


# -- option ranges ----------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", ["repair", "compact"])
def test_negative_lock_timeout_is_usage_error(tmp_path, cmd):
    r = run(cmd, "--lock-timeout", "-5", copy(tmp_path, "repair/pi-torn-tail.jsonl"))
    assert r.exit_code == 2
    assert "--lock-timeout" in r.output


def test_negative_keep_last_assistants_is_usage_error(tmp_path):
    r = run("prune", "--keep-last-assistants", "-3", copy(tmp_path, "demo/openclaw-tool-heavy.jsonl"))
    assert r.exit_code == 2
    assert "--keep-last-assistants" in r.output


# -- a symlink and its target are one session -------------------------------------------------


def test_symlink_and_target_processed_once(tmp_path):
    d = tmp_path / "sessions"
    d.mkdir()
    real = copy(d, "repair/pi-torn-tail.jsonl", "real.jsonl")
    os.symlink("real.jsonl", d / "link.jsonl")
    r = run("estimate", "--json", d)
    assert r.exit_code == 0, r.output
    assert [f["path"] for f in stdout_json(r)["files"]] == [real]  # the real name, not the link
    r = run("repair", "--check", "--json", d, str(d / "link.jsonl"))
    assert len(stdout_json(r)["files"]) == 1


# -- progress bars on estimate and profile batches --------------------------------------------


@pytest.mark.parametrize("cmd", ["estimate", "profile", "checkpoint"])  # (checkpoint had none: an adversarial review)
def test_batch_progress_bar(tmp_path, monkeypatch, cmd):
    import importlib

    mod = importlib.import_module(f"ctxtool.cli.{cmd}")
    calls = []

    def record(items, label, *, enabled, total=None):
        items = list(items)
        calls.append((label, len(items), enabled))
        yield from items

    monkeypatch.setattr(mod, "each_with_progress", record)
    a = copy(tmp_path, "profile/tool_heavy.jsonl")
    b = copy(tmp_path, "profile/mixed.jsonl")
    extra = ["-n"] if cmd == "checkpoint" else []
    assert run(cmd, *extra, a, b).exit_code == 0
    assert run(cmd, *extra, "--json", a, b).exit_code == 0
    assert calls == [(cmd, 2, True), (cmd, 2, False)]


# -- estimate --calibrate on several files shows the calibration ------------------------------


def test_estimate_calibrate_several_files_shows_calibration(tmp_path):
    a = copy(tmp_path, "estimate/pi_basic.jsonl")
    b = copy(tmp_path, "estimate/claude_split.jsonl")
    r = run("estimate", "-t", "usage", "--calibrate", a, b)
    assert r.exit_code == 0, r.output
    section = r.stdout.split("Calibration against recorded usage", 1)[1]
    assert a in section and b in section and "heuristic" in section


# -- validate: unparseable lines are never "ok", line numbers shown, table on a terminal -------


def test_validate_unparseable_line_not_ok(tmp_path):
    p = copy(tmp_path, "repair/pi-clean.jsonl")
    lines = open(p, "rb").read().split(b"\n")
    lines[3] = lines[3][:20] + b"\x00" + lines[3][20:]
    open(p, "wb").write(b"\n".join(lines))
    r = run("validate", p)
    assert r.exit_code == 1
    first = r.stdout.splitlines()[0]
    assert ": ok" not in first
    assert "1 unparseable line(s) (line 4" in first


def test_validate_table_on_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: behave as on a terminal
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    r = run("validate", copy(tmp_path, "repair/pi-clean.jsonl"), copy(tmp_path, "repair/pi-separated-orphan.jsonl"))
    assert r.exit_code == 1
    plain = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout)
    assert "┃ file" in plain and "unparseable lines" in plain
    assert "\x1b[3" not in r.stdout  # NO_COLOR: no colours (bold is allowed)


# -- config errors name the file or the option -----------------------------------------------


def test_config_errors_name_their_source(tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text('{"agents": {"defaults": {"contextPruning": {"ttl": "forever"}}}}')
    s = copy(tmp_path, "demo/openclaw-tool-heavy.jsonl")
    for cmd in ("prune", "profile"):
        r = run(cmd, "--config", cfg, s)
        assert r.exit_code == 2
        assert r.stderr.strip().splitlines()[0].startswith(f"Error: {cfg}: "), r.stderr
    r = run("prune", "--ttl", "xyz", s)
    assert r.exit_code == 2 and r.stderr.startswith("Error: --ttl: invalid duration")
    r = run("prune", "--now", "yesterday", s)
    assert r.exit_code == 2 and r.stderr.startswith("Error: --now: invalid time")


# -- repair -o says where it wrote -----------------------------------------------------------


def test_repair_output_says_where(tmp_path):
    src = copy(tmp_path, "repair/pi-torn-tail.jsonl")
    out = tmp_path / "fixed.jsonl"
    r = run("repair", "-o", out, src)
    assert r.exit_code == 0
    assert f"written to: {out} ({src} is unchanged)" in r.stdout
    clean = copy(tmp_path, "repair/pi-clean.jsonl")
    r = run("repair", "-o", tmp_path / "copy.jsonl", clean)
    assert "ok (copied)" in r.stdout and "repaired" not in r.stdout


@pytest.mark.parametrize("args, said", [
    (["repair", "--check", "-o", "{out}", "{f}"], "--check writes nothing"),
    (["view", "--json", "--jsonl", "{f}"], "--json and --jsonl"),
    (["prune", "--compare", "-s", "aceclaw", "{f}"], "--compare runs every strategy"),
    (["checkpoint", "--read", "-n", "-o", "{out}"], "-n/--dry-run is for writing"),
])
def test_options_that_exclude_each_other_are_a_usage_error(tmp_path, args, said):
    """Two options of which one would be ignored without a word (CLI audit): exit 2, the reason, nothing
    written."""
    f = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "repair", "pi-missing-result.jsonl")
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(cli, [a.format(f=f, out=out) for a in args])
    assert r.exit_code == 2 and said in r.output and not out.exists()


def test_a_path_with_an_emoji_code_is_printed_as_it_is(tmp_path):
    """rich turns ``:fire:`` into an emoji by default: a file's name must come out as the user wrote it."""
    d = tmp_path / ":fire:"
    d.mkdir()
    p = copy(d, "pi-recorded/branched.jsonl")
    r = run("repair", "--check", p)
    assert p in r.stdout and "\U0001f525" not in r.stdout
    con = render.console()
    con.file = io.StringIO()
    con.print(":fire: and :smile:", markup=False)
    assert con.file.getvalue() == ":fire: and :smile:\n"


# -- output that cannot be written (a full disk) -----------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["estimate"], ["estimate", "--json"], ["validate"], ["validate", "--json"],
                                  ["repair", "--check"], ["repair", "--check", "--json"], ["profile"],
                                  ["profile", "--json"], ["view"], ["view", "--json"], ["prune"], ["checkpoint", "-n"],
                                  ["folder"]])
def test_output_that_cannot_be_written_is_one_line_and_exit_3(tmp_path, args):
    """Not a traceback (it was one with --json: the error's own JSON failed too), and not the session file blamed
    ("cannot read or write" of the input): one line naming standard output."""
    target = copy(tmp_path, "repair/pi-clean.jsonl")
    if args == ["folder"]:
        copy(tmp_path, "repair/pi-missing-result.jsonl")
        args, target = ["estimate", "--json"], str(tmp_path)
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "ctxtool", *args, target], stdout=full, stderr=subprocess.PIPE,
                           cwd=ROOT, timeout=120)
    assert (p.returncode, p.stderr.decode()) == (3, "Error: <stdout>: cannot be written: No space left on device\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["estimate"], ["validate"], ["repair", "--check"], ["profile"], ["view"], ["prune"]])
def test_output_rich_cannot_write_names_standard_output(tmp_path, args):
    """The same through rich's own console (FORCE_COLOR: drawn as on a terminal), which writes its buffer itself: the
    session file was blamed ("cannot read or write" of the input) where standard output was full."""
    target = copy(tmp_path, "repair/pi-clean.jsonl")
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "ctxtool", *args, target], stdout=full, stderr=subprocess.PIPE,
                           cwd=ROOT, timeout=120, env=env)
    assert (p.returncode, p.stderr.decode()) == (3, "Error: <stdout>: cannot be written: No space left on device\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["-h"], ["--version"], ["validate", "-h"], ["view", "-h"]])
def test_help_and_version_that_cannot_be_written_are_one_line_and_exit_3(args):
    """click writes these before any command runs: a raw traceback, exit 1 (found by an adversarial review)."""
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "ctxtool", *args], stdout=full, stderr=subprocess.PIPE, cwd=ROOT,
                           timeout=120)
    assert (p.returncode, p.stderr.decode()) == (3, "Error: <stdout>: cannot be written: No space left on device\n")


@pytest.mark.parametrize("args", [["validate"], ["estimate", "--json"], ["view"], ["repair", "--check"], ["-h"],
                                  ["--version"]])
def test_a_closed_standard_output_is_one_line_and_exit_3(tmp_path, args):
    """``>&-``: Python starts with no sys.stdout; every command printed "internal error" and two tracebacks, exit 1
    (which reads as findings). Nothing runs now (a repair would be done unseen): one line, exit 3."""
    target = copy(tmp_path, "repair/pi-clean.jsonl")
    p = subprocess.run([sys.executable, "-m", "ctxtool", *args, *([target] if args[0][0] != "-" else [])],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, timeout=120,
                       preexec_fn=lambda: os.close(1))
    assert (p.returncode, p.stderr.decode()) == (3, "Error: <stdout>: cannot be written: standard output is closed\n")


def test_a_closed_standard_input_read_as_a_session_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ctxtool", "validate", "-"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, timeout=120,
                       preexec_fn=lambda: os.close(0))
    assert p.returncode == 3 and p.stderr.decode() == "Error: <stdin>: cannot read: standard input is closed\n"


def test_a_closed_standard_error_still_runs_the_command(tmp_path):
    target = copy(tmp_path, "repair/pi-clean.jsonl")
    p = subprocess.run([sys.executable, "-m", "ctxtool", "validate", target], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, cwd=ROOT, timeout=120, preexec_fn=lambda: os.close(2))
    assert p.returncode == 0 and b"ok" in p.stdout


@pytest.mark.parametrize("argv", [["estimate", "--help"], ["--version"], ["no-such-command"]])
def test_main_pauses_the_collector_only_while_the_command_loads(argv):
    """``main`` pauses the cyclic GC while click and the command's modules load (its collections cost each start
    ~4 ms) and resumes it once the command is looked up, or when main returns without one."""
    code = (
        "import gc, sys\n"
        "from ctxtool import cli as c\n"
        "real = c._imports_done\n"
        "def done():\n"
        "    print('loading', gc.isenabled(), file=sys.stderr)\n"
        "    real()\n"
        "c._imports_done = done\n"
        f"sys.argv = ['ctxtool', *{argv!r}]\n"
        "try:\n    c.main()\n"
        "except SystemExit:\n    pass\n"
        "print('after', gc.isenabled(), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    said = [line for line in out.stderr.splitlines() if line.startswith(("loading", "after"))]
    assert said[0] == "loading False" and said[-1] == "after True", out.stderr


# -- inputs an adversarial review found to end in "internal error" ------------------------------


@pytest.mark.parametrize("kind", ["deep.json", "deep.toml", "binary.toml"])
@pytest.mark.parametrize("cmd", [["prune", "--config"], ["prune", "-s", "spacebot", "--spacebot-config"],
                                 ["profile", "--config"], ["budget", "--config"]])
def test_a_config_nested_too_deep_or_not_text_is_a_config_error_naming_it(tmp_path, cmd, kind):
    """A config 100,000 levels deep, or bytes that are no UTF-8: "internal error: RecursionError" (or
    UnicodeDecodeError) with no file name, exit 3; now the file, why, and exit 2 (a usage error) as for any bad config."""
    cfg = tmp_path / kind
    if kind == "deep.json":
        cfg.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    elif kind == "deep.toml":
        cfg.write_text("a = " + "[" * 100_000 + "]" * 100_000)
    else:
        cfg.write_bytes(bytes(range(128, 256)) * 8)
    if cmd[-1] == "--spacebot-config" and kind == "deep.json":
        pytest.skip("a spacebot config is TOML")
    if cmd[0] == "budget":
        args = [*cmd, cfg, os.path.join(FIX, "budget", "codex-chain", "workspace")]
        if kind.endswith(".toml"):
            args[1:1] = ["--agent", "codex"]
    else:
        args = [*cmd, cfg, copy(tmp_path, "repair/pi-clean.jsonl")]
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"Error: {cfg}") and "internal error" not in r.stderr and "Traceback" not in r.output


def test_checkpoint_of_a_call_whose_id_is_an_object_is_written(tmp_path):
    """A damaged line's tool_use id (an object, a list): checkpoint alone of the commands failed ("unhashable type")."""
    src = os.path.join(FIX, "claude-recorded", "parallel.jsonl")
    lines = open(src, "rb").read().splitlines()
    out = []
    for raw in lines:
        o = json.loads(raw)
        content = (o.get("message") or {}).get("content")
        if o.get("type") == "assistant" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    b["id"] = {"damaged": b["id"]}
        out.append(json.dumps(o))
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(out) + "\n")
    r = run("checkpoint", "-n", p)
    assert r.exit_code == 0 and "internal error" not in r.output and "## Next Steps" in r.stdout


def test_view_json_of_a_tool_input_nested_deeper_than_python_s_stack(tmp_path):
    """orjson stops at 255 levels and json.dumps at Python's stack: a tool input 50,000 deep ended in "internal error:
    RecursionError"; it is written with a stack of its own (plain `view` printed it already)."""
    deep = '{"a":' * 50_000 + "1" + "}" * 50_000
    rows = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "timestamp": "2026-01-01T00:00:00.000Z",
             "message": {"role": "user", "content": "go"}}]
    p = tmp_path / "s.jsonl"
    call = ('{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:01.000Z",'
            '"message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":'
            + deep + '}]}}')
    p.write_text(json.dumps(rows[0]) + "\n" + call + "\n")
    r = run("view", "--json", p)
    assert r.exit_code == 0, r.output
    import sys as _sys

    limit = _sys.getrecursionlimit()
    _sys.setrecursionlimit(200_000)
    try:
        doc = json.loads(r.stdout)
    finally:
        _sys.setrecursionlimit(limit)
    assert isinstance(doc, (dict, list)) and '"t1"' in r.stdout


def test_the_deep_encoder_writes_what_json_dumps_writes():
    from ctxtool.cli.common import _deep_dumps

    for v in [{"a": [1, 2.5, None, True, "x\u00e9\ud800"], "b": {}}, [], {}, "x", {1: 2, None: 3, 2.5: 1},
              [[[]]], {"k": {"j": [{"z": 1}]}}, [float("inf")], {"t": (1, 2)}]:
        assert _deep_dumps(v) == json.dumps(v, ensure_ascii=True, default=str, separators=(",", ":")), v


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
@pytest.mark.parametrize("cmd", [["estimate", "--safety-margin"], ["repair", "--check", "--lock-timeout"],
                                 ["prune", "--trigger"], ["prune", "--now"]])
def test_a_number_option_that_is_not_finite_is_a_usage_error(tmp_path, cmd, value):
    """NaN passes every bound (each comparison with it is false): --safety-margin nan ended in "internal error",
    --now nan in "expired (nans since the last cache touch)"."""
    r = run(*cmd, value, copy(tmp_path, "repair/pi-clean.jsonl"))
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output


def test_an_epoch_beyond_the_years_an_iso_time_can_say_is_refused_as_the_iso_time_is(tmp_path):
    p = copy(tmp_path, "repair/pi-clean.jsonl")
    assert run("prune", "--now", "99999999999999999999", p).exit_code == 2
    assert run("prune", "--now", "10000-01-01", p).exit_code == 2
    assert run("prune", "--now", "1767225600000", p).exit_code in (0, 1)


@pytest.mark.parametrize("target", ["-", "/dev/stdout", "/proc/self/fd/1"])
@pytest.mark.parametrize("cmd", [["repair", "-o"], ["prune", "-o"], ["checkpoint", "-o"], ["profile", "--html"]])
def test_an_output_file_that_is_standard_output_or_a_device_is_a_usage_error(tmp_path, cmd, target, monkeypatch):
    """Outputs are written whole and renamed into place: `-o -` made a file named "-", `-o /dev/stdout` failed on a pipe
    and replaced the file stdout went to (found by an adversarial review)."""
    monkeypatch.chdir(tmp_path)
    r = run(*cmd, target, copy(tmp_path, "repair/pi-clean.jsonl"))
    assert r.exit_code == 2 and "is not a file" in r.output
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("cmd", [["repair", "-o"], ["prune", "-o"], ["checkpoint", "-o"], ["profile", "--html"]])
def test_an_output_file_that_is_a_folder_is_named_a_folder(tmp_path, cmd):
    """(It was called "not a file (standard output, a device or a pipe)": found by a review.)"""
    (tmp_path / "out").mkdir()
    r = run(*cmd, tmp_path / "out", copy(tmp_path, "repair/pi-clean.jsonl"))
    assert r.exit_code == 2 and "is a directory" in r.output and "not a file" not in r.output, r.output


def test_an_output_file_in_a_folder_under_dev_is_written(tmp_path):
    """(/dev/shm holds regular files: only streams, devices and pipes are refused.)"""
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm here")
    out = f"/dev/shm/ctxtool-test-{os.getpid()}.jsonl"
    try:
        r = run("repair", "-o", out, copy(tmp_path, "repair/pi-missing-result.jsonl"))
        assert r.exit_code == 0 and os.path.isfile(out)
    finally:
        if os.path.exists(out):
            os.unlink(out)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert run("repair", "-o", fifo, copy(tmp_path, "repair/pi-missing-result.jsonl")).exit_code == 2


def test_budget_show_with_json_is_json(tmp_path):
    r = run("budget", "--json", "--show", "AGENTS.md", os.path.join(FIX, "budget", "openclaw-within", "workspace"))
    assert r.exit_code == 0
    doc = json.loads(r.stdout)  # (it printed the file's markdown)
    assert doc["file"] == "AGENTS.md" and doc["injected"].startswith("# Operating manual")


@pytest.mark.parametrize("name", ["new\nline.jsonl", "esc\x1b[31mred.jsonl", "tab\tand\x7fdel.jsonl"])
def test_an_error_naming_a_file_with_control_characters_is_one_line(tmp_path, name):
    """A newline in a file name split the one error line in two, and an escape sequence recoloured the terminal; they
    are written as \\xNN (as `ls -b` does), and --json keeps the name as it is (found by an adversarial review)."""
    p = tmp_path / name
    p.write_bytes(b"")
    r = run("validate", p)
    assert r.exit_code == 3
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "\x1b" not in r.stderr and lines[0].endswith(": empty session file")
    r = run("validate", "--json", p)
    assert json.loads(r.stdout)["failures"][0]["path"] == str(p)
