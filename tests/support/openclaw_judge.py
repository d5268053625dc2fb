"""OpenClaw's own bootstrap-file budget, run from the `openclaw` npm package (test support).

The harness lives in ``tests/openclaw_harness`` (``trim_bootstrap.mjs`` plus a pinned
``openclaw``). Install it with ``make openclaw-harness``::

    npm ci --prefix tests/openclaw_harness --ignore-scripts --no-audit --no-fund

``openclaw_context(cases)`` sends every case in one node process (the package's
chunk is found and imported once) and returns, per case, the list of
``{"path", "content"}`` OpenClaw would inject. Standard library only.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from tests.support.pi_agent import _node, node_problem

HARNESS_DIR = Path(__file__).resolve().parent.parent / "openclaw_harness"
HARNESS_SCRIPT = HARNESS_DIR / "trim_bootstrap.mjs"
PACKAGE_JSON = HARNESS_DIR / "node_modules" / "openclaw" / "package.json"
DEFAULT_TIMEOUT = 120.0


@functools.lru_cache(maxsize=1)
def openclaw_unavailable_reason() -> str | None:
    """Why the openclaw harness cannot run here, or None when it can."""
    problem = node_problem("the openclaw harness needs node >= 20")
    if problem is not None:
        return problem
    if not PACKAGE_JSON.is_file():
        return f"openclaw harness not installed ({PACKAGE_JSON.parent} missing); run: make openclaw-harness"
    return None


def openclaw_version() -> str:
    return json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["version"]


def openclaw_context(cases: list[dict], *, timeout: float = DEFAULT_TIMEOUT) -> list[list[dict]]:
    """OpenClaw's ``buildBootstrapContextFiles`` for each case ``{"files", "maxChars", "totalMaxChars"}``."""
    reason = openclaw_unavailable_reason()
    if reason is not None:
        raise AssertionError(f"openclaw harness unavailable: {reason}")
    payload = json.dumps({"cases": cases}, ensure_ascii=True)
    proc = subprocess.run([_node(), str(HARNESS_SCRIPT)], input=payload, capture_output=True, text=True,
                          timeout=timeout, cwd=HARNESS_DIR)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"openclaw harness printed no JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}") from None
    if not out.get("ok"):
        raise AssertionError(f"openclaw harness failed: {out.get('error')}\n{proc.stderr}")
    return out["results"]
