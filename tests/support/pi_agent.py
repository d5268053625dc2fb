"""Run the real pi coding agent's session loader on a JSONL file (test support).

The harness lives in ``tests/pi_harness`` (``load_session.mjs`` plus a pinned
``@mariozechner/pi-coding-agent``). Install it with::

    npm ci --prefix tests/pi_harness --ignore-scripts --no-audit --no-fund

``load_with_pi`` never lets pi touch the caller's file: pi may rewrite a session
file while opening it (v1/v2 migration, or wiping it to a bare header), so the
file is copied into a temporary directory first and pi opens the copy. Whether
pi rewrote the copy is reported in the result (``rewritten``, ``fileAfter``).

Standard library only.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent.parent / "pi_harness"
HARNESS_SCRIPT = HARNESS_DIR / "load_session.mjs"
PI_PACKAGE_JSON = HARNESS_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent" / "package.json"
MIN_NODE_MAJOR = 20  # pi-coding-agent needs node >= 20.6
DEFAULT_TIMEOUT = 60.0


def _node() -> str | None:
    return os.environ.get("PI_HARNESS_NODE") or shutil.which("node")


def node_problem(needs: str) -> str | None:
    """Why node cannot run a harness here (``needs``: e.g. "pi harness needs node >= 20.6"), or None."""
    node = _node()
    if not node:
        return f"node is not installed ({needs})"
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        major = int(out.lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"cannot run {node} --version: {exc}"
    if major < MIN_NODE_MAJOR:
        return f"node {out} is too old ({needs})"
    return None


@functools.lru_cache(maxsize=1)
def pi_unavailable_reason() -> str | None:
    """Why the pi harness cannot run here, or None when it can."""
    problem = node_problem("pi harness needs node >= 20.6")
    if problem is not None:
        return problem
    if not HARNESS_SCRIPT.is_file():
        return f"missing {HARNESS_SCRIPT}"
    if not PI_PACKAGE_JSON.is_file():
        return (
            f"pi harness not installed ({PI_PACKAGE_JSON.parent} missing); run: "
            "npm ci --prefix tests/pi_harness --ignore-scripts --no-audit --no-fund"
        )
    return None


def pi_available() -> bool:
    """True when node is present and tests/pi_harness/node_modules is installed."""
    return pi_unavailable_reason() is None


def _loads_deep(text: str):
    """The harness's answer, however deep pi let a value nest (a fuzzed line nests 1,000 levels: past
    Python's default recursion limit, not past what pi loads)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return json.loads(text)
    finally:
        sys.setrecursionlimit(limit)


def load_with_pi(path: str | os.PathLike[str], *, check: bool = True, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """Load a copy of ``path`` with pi's SessionManager and return the harness JSON.

    With ``check=True`` (default) any harness failure raises AssertionError carrying
    the harness stdout/stderr. With ``check=False`` the harness result is returned
    even when ``ok`` is false (e.g. to document pi crashing or hanging on a file).
    A timeout (pi's buildSessionContext loops forever on a parentId cycle; the
    harness detects that case itself) always raises AssertionError.
    """
    reason = pi_unavailable_reason()
    if reason is not None:
        raise AssertionError(f"pi harness unavailable: {reason}")
    src = Path(path)
    if not src.is_file():
        raise AssertionError(f"session file not found: {src}")

    with tempfile.TemporaryDirectory(prefix="ctxtool-pi-") as tmp:
        tmpdir = Path(tmp)
        copy = tmpdir / "sessions" / src.name
        copy.parent.mkdir()
        shutil.copyfile(src, copy)
        home = tmpdir / "home"
        home.mkdir()
        env = dict(os.environ)
        # The harness isolates itself too; this is belt and braces for ~/.pi.
        env.update(
            HOME=str(home),
            USERPROFILE=str(home),
            PI_CODING_AGENT_DIR=str(home / ".pi" / "agent"),
            NO_COLOR="1",
        )
        cmd = [_node() or "node", str(HARNESS_SCRIPT), str(copy)]
        try:
            proc = subprocess.run(
                cmd,
                cwd=tmpdir,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"pi harness timed out after {timeout}s on {src}\n"
                f"stderr:\n{_text(exc.stderr)}"
            ) from None

    stdout, stderr = proc.stdout, proc.stderr
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    try:
        result = _loads_deep(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise AssertionError(
            f"pi harness printed no JSON result for {src} (exit {proc.returncode})\n"
            f"stdout:\n{stdout}\nstderr:\n{stderr}"
        ) from None
    if not isinstance(result, dict):
        raise AssertionError(f"pi harness result is not an object: {result!r}")
    if check and (proc.returncode != 0 or not result.get("ok")):
        raise AssertionError(
            f"pi failed to load {src} (exit {proc.returncode}): {result.get('error')}\n"
            f"stderr:\n{stderr}"
        )
    return result


def turn_with_pi(path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """Resume a copy of ``path`` with pi's SessionManager, append one turn (a user message and a reply) as the
    agent appends them, open the file again: ``{"before", "after"}``, the number of messages pi sends at each
    open (``tests/pi_harness/append_turn.mjs``). A resumed session that keeps its history has ``after == before + 2``."""
    reason = pi_unavailable_reason()
    if reason is not None:
        raise AssertionError(f"pi harness unavailable: {reason}")
    src = Path(path)
    with tempfile.TemporaryDirectory(prefix="ctxtool-pi-") as tmp:
        copy = Path(tmp) / src.name
        shutil.copyfile(src, copy)
        home = Path(tmp) / "home"
        home.mkdir()
        env = dict(os.environ, HOME=str(home), USERPROFILE=str(home), PI_CODING_AGENT_DIR=str(home / ".pi" / "agent"))
        proc = subprocess.run([_node() or "node", str(HARNESS_DIR / "append_turn.mjs"), str(copy)], cwd=tmp, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"pi could not take a turn on {src} (exit {proc.returncode})\nstderr:\n{proc.stderr}")
    return json.loads(lines[-1])


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data
