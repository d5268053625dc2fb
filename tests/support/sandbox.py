"""What the agent harnesses share (test support): a throwaway HOME + project directory for a
real client, and small helpers for its runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable


class Sandbox:
    """``root`` (a temp dir unless given, removed on exit when it was made here) with ``home``
    and the project directory ``cwd`` the client runs in."""

    prefix = "ctxtool-agent-"

    def __init__(self, root: str | None = None, *, cwd_name: str = "proj"):
        self._own = root is None
        self.root = tempfile.mkdtemp(prefix=self.prefix) if root is None else root
        self.home = os.path.join(self.root, "home")
        self.cwd = os.path.join(self.root, cwd_name)
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.cwd, exist_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._own:
            shutil.rmtree(self.root, ignore_errors=True)

    def execute(self, cmd: list, env: dict, timeout: float) -> tuple[int, str, str]:
        """Run the client in the project directory: (exit code, stdout, stderr); -9 on a timeout."""
        try:
            p = subprocess.run(cmd, cwd=self.cwd, env=env, capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            return -9, text(e.stdout), text(e.stderr) + "\n[timed out]"


@contextlib.contextmanager
def serving(server, factory: Callable[[], Any]):
    """``server`` when the caller runs one, else a fresh one (``factory()``) started for the run
    and stopped after it."""
    if server is not None:
        yield server
        return
    srv = factory()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@dataclass
class Run:
    """One client run: its exit, output and the requests the server recorded."""

    returncode: int
    stdout: str
    stderr: str
    requests: list = field(default_factory=list)


def text(b: Any) -> str:
    """A subprocess output (bytes, str or None) as text."""
    if b is None:
        return ""
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else b


def is_uuid(value: Any) -> bool:
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def unavailable_reason(binary: str, what: str, target: str, marker: str, env: dict | None = None) -> str | None:
    """Why a pinned client cannot run here (``binary --version`` must print ``marker``), or None."""
    if not os.path.isfile(binary):
        return f"{what} harness not installed ({binary} missing); run: make {target}"
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {binary} --version: {exc}"
    if out.returncode != 0 or marker not in out.stdout:
        return f"{binary} --version failed: {out.stderr.strip()[:200]}"
    return None
