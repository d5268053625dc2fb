"""``ctxtool report``: one summary of the per-shard ``compact --json`` outputs of a CI matrix."""

from __future__ import annotations

import glob
import os

import click

from .. import render
from ..errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, CtxError
from ..report import merge, read_report
from . import cli
from ..paths import is_stream
from .common import CONTEXT_SETTINGS, emit_json, failure, json_option, one_input


def _inputs(targets) -> tuple[list[str], list[dict]]:
    files, problems = [], []
    for t in targets:
        if os.path.isdir(t):
            found = sorted(glob.glob(os.path.join(t, "*.json")))
            if not found:
                problems.append({"path": t, "error": "directory holds no *.json reports", "line": None,
                                 "message": f"{t}: directory holds no *.json reports"})
            files.extend(found)
        elif is_stream(t):  # standard input (``-``) or a pipe: its spooled copy, shown as <stdin>
            try:
                files.append(one_input(t))
            except CtxError as e:
                problems.append(failure(t, e))
        else:
            files.append(t)
    return list(dict.fromkeys(files)), problems


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("reports", nargs=-1, required=True, metavar="SHARD.json...")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Failed, fallback and pending files listed by name (all of them in --json).")
@json_option
def report(reports, limit, json_):
    """Merge the `compact --json` outputs of several shards into one summary.

    Files by status (compacted, fallback, skipped with reasons, pending, failed), tokens
    before and after, summarizer calls, Message Batches used, and what is wrong with the set
    of shards: a shard of an I/N series missing or given twice, shards of different splits,
    a file reported twice, a shard whose whole run failed. Exit 0 when every file is done, 1
    when something needs a look (failed, fallback or pending files, missing, repeated or
    mixed shards), 3 when no report could be read.

    \b
    Example:
      ctxtool report shard-*.json
      ctxtool report --json artifacts/ > compaction-summary.json
    """
    paths, failures = _inputs(reports)
    loaded = []
    for p in paths:
        try:
            loaded.append((p, read_report(p)))
        except CtxError as e:
            failures.append(failure(p, e))
    merged = merge(loaded)
    merged["unreadable"] = failures
    if json_:
        emit_json(merged)
    elif not loaded:  # nothing to summarize: the reasons alone (not a "nothing to do" summary beside them)
        err = render.console(stderr=True)
        for f in failures:
            err.print(f"Error: {f['message']}", markup=False)
    else:
        _render(merged, failures, limit)
    if not loaded:
        raise SystemExit(EXIT_FAILED)
    raise SystemExit(EXIT_OK if merged["ok"] and not failures else EXIT_FINDINGS)


def _render(m: dict, failures: list, limit: int) -> None:
    con = render.console()
    err = render.console(stderr=True)
    for f in failures:
        err.print(f"Error: {f['message']}", markup=False)
    cols = ["shard", "report", "files", "compacted", "fallback", "skipped", "pending", "failed", "tokens before", "after", "seconds"]
    rows = []
    for s in m["shards"]:
        if s["error"]:
            rows.append([s["shard"] or "-", s["source"], "-", "-", "-", "-", "-", "-", "-", "-", f"failed: {s['error']}"])
            continue
        rows.append([s["shard"] or "-", s["source"], s["files"], s["compacted"], s["fallback"], s["skipped"], s["pending"],
                     s["failed"], render.fmt_int(s["tokens_before"]), render.fmt_int(s["tokens_after"]),
                     f"{s['seconds']:.1f}" if s["seconds"] is not None else "-"])
    if rows:
        render.table(con, "shards", cols, rows, justify={c: "right" for c in cols[2:]})
    if m["skip_reasons"]:
        render.table(con, "skipped", ["reason", "files", "example"],
                     [[g["reason"], g["files"], g["example"] or ""] for g in m["skip_reasons"]], justify={"files": "right"})
    for title, items, key in (("failed", m["failed_files"], "error"), ("fallback summaries", m["fallback_files"], "error"),
                              ("pending", m["pending_files"], "reason")):
        if not items:
            continue
        shown = items[:limit]
        render.table(con, title, ["file", "why"], [[i["path"], i[key] or ""] for i in shown])
        if len(items) > len(shown):
            con.print(f"... and {len(items) - len(shown)} more (--limit, or --json for all)", markup=False)
    for n in m["notes"]:
        err.print(f"Warning: {n}", markup=False)
    parts = [f"{m[s]} {s}" for s in ("compacted", "fallback", "planned", "skipped", "pending", "failed") if m[s]]
    saved = m["tokens_saved"]
    share = f" ({render.fmt_pct(saved / m['tokens_before'])} saved)" if m["tokens_before"] else ""
    line = (f"{m['files']:,} file(s) in {len(m['shards'])} report(s): {', '.join(parts) or 'nothing to do'}; tokens "
            f"{render.fmt_int(m['tokens_before'])} -> {render.fmt_int(m['tokens_after'])}{share}; {m['calls']:,} summarizer calls")
    if m["batch"]:
        b = m["batch"]
        line += f"; {b['batches']} batch(es), {b['requests_submitted']:,} requests submitted"
    con.print(line, markup=False)
