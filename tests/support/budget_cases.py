"""Run a golden budget case (``fixtures/budget/<case>``) in a temporary copy (test support).

The workspace and home are copied to a temporary directory (Codex needs a git root,
created there as ``workspace/repo/.git``; git cannot store one), the library runs
with the case's ``args.json``, and ``stable`` turns the report into what
``expected.json`` holds: paths relative to the copy, injected texts as SHA-256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile

from ctxtool import budget, utf16


def overrides(agent: str, args: dict) -> dict:
    if agent == "openclaw":
        return {"maxChars": args.get("max_file_chars"), "totalMaxChars": args.get("max_total_chars")}
    if agent == "aceclaw":
        return {"contextWindow": args.get("window", budget.DEFAULT_WINDOW), "maxOutput": args.get("max_output", 0),
                "maxPerTierChars": args.get("max_file_chars"), "maxTotalChars": args.get("max_total_chars")}
    if agent == "codex":
        return {"maxBytes": args.get("max_bytes")}
    return {"fileWarnChars": args.get("max_file_chars"), "totalWarnChars": args.get("max_total_chars"),
            "importDepth": args.get("import_depth")}


@contextlib.contextmanager
def run_case(base: str):
    with open(os.path.join(base, "args.json"), encoding="utf-8") as f:
        args = json.load(f)
    with tempfile.TemporaryDirectory(prefix="ctxtool-budget-") as tmp:
        root = os.path.realpath(tmp)
        for sub in ("workspace", "home"):
            src = os.path.join(base, sub)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(root, sub))
            else:
                os.makedirs(os.path.join(root, sub))
        if args["agent"] == "codex":
            os.makedirs(os.path.join(root, "workspace", "repo", ".git"))
        ws = os.path.join(root, "workspace", args.get("workspace", ""))
        pre = {"managedPath": os.path.join(root, "managed", "CLAUDE.md")}
        d = budget.discover(args["agent"], [ws], home=os.path.join(root, "home"), settings=pre)
        s = budget.resolve_settings(d.agent, overrides(d.agent, args))
        yield budget.assemble(d, s, window=args.get("window", budget.DEFAULT_WINDOW)), root


def stable(report: dict, root: str) -> dict:
    """The report with the temporary root replaced by ``<tmp>`` and only the files under it."""

    def fix(v):
        if isinstance(v, str):
            return v.replace(root, "<tmp>")
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        return v

    out = dict(report)
    files = []
    for r in report["files"]:
        if not r["path"].startswith(root):
            continue  # Claude Code's ancestors of the temporary directory: not part of the case
        r = dict(r)
        text = utf16.text(r.pop("injected") or "")
        r["injected_sha256"] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() if text else None
        files.append(r)
    out["files"] = files
    return fix(out)
