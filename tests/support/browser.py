"""Headless Chromium (Debian's ``chromium`` package) for checking the HTML report (test support).

``render_page(html_path, png_path)`` loads a file in a fresh headless browser with its own
profile, takes a screenshot and the DOM after load, and collects every console message the
page produced (Chromium logs them as ``INFO:CONSOLE`` lines with ``--enable-logging=stderr``)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

CONSOLE = re.compile(r":CONSOLE(?:\(\d+\)|:\d+)\] (.*)")


def chromium_binary() -> str | None:
    return os.environ.get("CTXTOOL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@functools.lru_cache(maxsize=1)
def browser_unavailable_reason() -> str | None:
    binary = chromium_binary()
    if not binary:
        return "chromium not installed (Debian: apt-get install chromium; make browser)"
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {binary} --version: {exc}"
    if out.returncode != 0:
        return f"{binary} --version failed: {out.stderr.strip()[:200]}"
    return None


@dataclass
class Page:
    dom: str
    console: list
    screenshot: str


def _run(args: list[str], profile: str, timeout: float) -> subprocess.CompletedProcess:
    cmd = [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": profile, "LANG": "C.UTF-8"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def render_page(html_path: str, png_path: str, *, size: tuple[int, int] = (1000, 900), timeout: float = 120) -> Page:
    url = "file://" + os.path.abspath(html_path)
    with tempfile.TemporaryDirectory(prefix="ctxtool-chromium-") as profile:
        # the screenshot and the DOM once the page's scripts have run: without a virtual time budget, a
        # loaded machine can get a screenshot of a chart still being drawn (CI: 3,074 of its > 5,000 pixels)
        wait = "--virtual-time-budget=5000"
        shot = _run([f"--window-size={size[0]},{size[1]}", wait, f"--screenshot={png_path}", url], profile, timeout)
        dom = _run([wait, "--dump-dom", url], profile, timeout)
    console = [m.group(1) for proc in (shot, dom) for line in proc.stderr.splitlines() if (m := CONSOLE.search(line))]
    if not os.path.exists(png_path):
        raise AssertionError(f"chromium wrote no screenshot: rc={shot.returncode} {shot.stderr[-800:]}")
    return Page(dom=dom.stdout, console=console, screenshot=png_path)
