"""``ctxtool repair`` and ``ctxtool validate``."""

from __future__ import annotations

import os

import click

from ..errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, InputError
from ..lock import DEFAULT_TIMEOUT
from ..repair import check_file, repair_file
from ..validate import errors as error_violations
from ..validate import validate_report
from .. import pool, render
from . import cli
from .common import (
    collect, CONTEXT_SETTINGS, each_with_progress, emit_json, failure, FiniteRange, format_option, json_option,
    output_file, spooled,
)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when anything would change (for CI).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=output_file, help="Write the repaired file here; the input is left alone (one input only).")
@click.option("--no-backup", is_flag=True, help="Do not keep <file>.bak-<pid>-<ms> beside a file repaired in place (kept anyway when an agent appended to the file meanwhile).")
@click.option("--trim-trailing-assistant", is_flag=True, help="Also drop a trailing assistant message (avoids the prefill 400).")
@click.option("--lock-timeout", type=FiniteRange(min=0), default=DEFAULT_TIMEOUT, show_default=True, help="Seconds to wait for the agent's <file>.lock.")
@click.option("--break-stale-lock", is_flag=True, help="Also remove a lock held for over 30 min by a live process (a dead or recycled holder's lock is always taken over).")
@click.option("-v", "--verbose", is_flag=True, help="List every change, not just the counts.")
@format_option
@json_option
def repair(paths, check, output, no_backup, trim_trailing_assistant, lock_timeout, break_stale_lock, verbose, fmt, json_):
    """Repair corrupted session files so the agent loads them and the API accepts them.

    Drops torn and unparseable lines, rebuilds a missing pi header, re-links broken
    parent chains and fixes tool_use/tool_result pairing. Lines not involved are kept
    byte for byte; the original is kept as <file>.bak-<pid>-<ms>; the agent's lock is
    honoured (a lock whose holder is gone is taken over); lines an agent appends while
    the file is rewritten are carried over. Every dropped line and every change is
    listed (--json for all of them).

    \b
    Example:
      ctxtool repair --check sessions/          # CI: exit 1 if anything would change
      ctxtool repair session.jsonl              # in place, with backup
      ctxtool repair -o fixed.jsonl broken.jsonl --json
    """
    if output and len(paths) != 1:
        raise click.UsageError("-o/--output takes exactly one input file")
    if check and output:
        raise click.UsageError("--check writes nothing: drop -o/--output (or --check)")
    files, failures = collect(paths)  # one target that is missing or unreadable: its own error below
    if output and len(files) > 1:
        raise click.UsageError("-o/--output takes exactly one input file (a directory of several was given)")
    reports = []
    if check and not output:  # nothing is written: many files are checked by worker processes
        done = pool.each(check_file, files, fmt, trim_trailing_assistant, json_)
        for path, report, e in each_with_progress(done, "repair", enabled=not json_, total=len(files)):
            if e is None:
                reports.append(report)
            else:
                failures.append(failure(path, e))
    else:
        for path in each_with_progress(files, "repair", enabled=not json_):
            if spooled(path) and not check and not output:
                failures.append(failure(path, InputError("standard input or a pipe cannot be repaired in place; "
                                                         "use -o FILE (or --check)", path=path)))
                continue
            try:
                reports.append(repair_file(
                    path, fmt=fmt, check=check, output=output, backup=not no_backup,
                    trim_trailing=trim_trailing_assistant, lock_timeout=lock_timeout, break_stale_lock=break_stale_lock,
                    violations_before=json_,  # only the JSON report shows them
                ))
            except Exception as e:  # any failure is this file's, one line naming it
                failures.append(failure(path, e))
    if json_:
        emit_json({"check": check, "files": [r.to_dict() for r in reports], "failures": failures})
    else:
        _render(reports, failures, check, verbose)
    if failures:
        raise SystemExit(EXIT_FAILED if not reports else EXIT_FINDINGS)
    if check and any(r.changed for r in reports):
        raise SystemExit(EXIT_FINDINGS)
    if any(error_violations(r.after) for r in reports):
        raise SystemExit(EXIT_FINDINGS)
    raise SystemExit(EXIT_OK)


def _render(reports, failures, check, verbose):
    con = render.console()
    err = render.console(stderr=True)
    for f in failures:
        err.print(f"Error: {f.get('message') or f['path'] + ': ' + f['error']}", markup=False)
    rows = []
    for r in reports:
        counts = r.counts()
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "ok"
        if r.written and r.changed:
            status = "repaired"
        elif r.written:
            status = "ok (copied)"  # -o with nothing to fix
        elif r.changed:
            status = "would repair" if check else "needs repair"
        else:
            status = "ok"
        left = len(error_violations(r.after))
        rows.append([r.path, r.format, status, len(r.changes), summary, left])
    if rows:
        render.table(con, None, ["file", "format", "status", "changes", "what", "API errors left"], rows,
                     justify={"changes": "right", "API errors left": "right"})
    for r in reports:
        if r.written and r.output and os.path.realpath(r.output) != os.path.realpath(r.path):
            con.print(f"written to: {r.output} ({r.path} is unchanged)", markup=False)
        if r.backup:
            con.print(f"backup: {r.backup}", markup=False)
        if r.carried:
            con.print(f"carried over: {r.carried} line(s) the agent appended while the file was rewritten", markup=False)
        for n in r.notices:
            con.print(f"note: {r.path}: {n}", markup=False)
        if verbose or len(reports) == 1:
            for c in r.changes[: None if verbose else 30]:
                where = f"line {c.line}" if c.line else "new line"
                ident = f" {c.id}" if c.id else ""
                con.print(f"  {where}: {c.kind} {c.action}{ident}: {c.detail}", markup=False)
            if not verbose and len(r.changes) > 30:
                con.print(f"  ... {len(r.changes) - 30} more (use -v or --json)", markup=False)
        for v in error_violations(r.after):
            con.print(f"  still invalid (lines {v.lines}): {v.api_error}", markup=False)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True)
@format_option
@json_option
def validate(paths, fmt, json_):
    """Check what the agent would send against the Anthropic Messages API's rules.

    Reports, per violation, the 400 error text the API would answer with and the
    file lines it comes from. Exit 1 when any file has errors (warnings do not count).

    \b
    Example:
      ctxtool validate session.jsonl
      ctxtool validate --json ~/.claude/projects/-home-me-app/
    """
    files, failures = collect(paths)
    results = []
    for path, result, e in each_with_progress(pool.each(validate_report, files, fmt), "validate", enabled=not json_,
                                              total=len(files)):
        if e is None:
            results.append(result)
        else:
            failures.append(failure(path, e))
    if json_:
        emit_json({"files": results, "failures": failures})
    else:
        con = render.console()
        err = render.console(stderr=True)
        for f in failures:
            err.print(f"Error: {f.get('message') or f['path'] + ': ' + f['error']}", markup=False)
        if con.is_terminal and results:
            rows = []
            for r in results:
                errs = sum(1 for v in r["violations"] if v["severity"] == "error")
                rows.append([r["path"], r["format"], r["messages"], errs, len(r["violations"]) - errs, len(r["bad_lines"]),
                             "ok" if not errs and not r["bad_lines"] else "invalid"])
            render.table(con, None, ["file", "format", "messages", "errors", "warnings", "unparseable lines", "status"], rows,
                         justify={k: "right" for k in ("messages", "errors", "warnings", "unparseable lines")})
        for r in results:
            errs = [v for v in r["violations"] if v["severity"] == "error"]
            warns = [v for v in r["violations"] if v["severity"] != "error"]
            # unparseable lines make the exit code 1 too: never call such a file "ok"
            state = "ok" if not errs and not r["bad_lines"] else f"{len(errs)} error(s)"
            bad = r["bad_lines"]
            shown = ", ".join(str(n) for n in bad[:10]) + (", ..." if len(bad) > 10 else "")
            con.print(f"{r['path']} ({r['format']}, {r['messages']} messages): {state}"
                      + (f", {len(warns)} warning(s)" if warns else "")
                      + (f", {len(bad)} unparseable line(s) (line {shown}; ctxtool repair drops them)"
                         if bad else ""), markup=False)
            for v in r["violations"]:
                con.print(f"  {v['severity']} lines {v['lines']}: {v['api_error']}", markup=False)
            for n in r["notices"]:
                con.print(f"  note: {n}", markup=False)
    bad = any(any(v["severity"] == "error" for v in r["violations"]) or r["bad_lines"] for r in results)
    if failures:
        raise SystemExit(EXIT_FAILED if not results else EXIT_FINDINGS)
    raise SystemExit(EXIT_FINDINGS if bad else EXIT_OK)
