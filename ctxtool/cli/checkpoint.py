"""``ctxtool checkpoint``: the context-management skill's ``.context-checkpoint.md`` from a session."""

from __future__ import annotations

import click

from .. import checkpoint as ckpt
from .. import render
from ..errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, CtxError, InputError
from ..summarize import DEFAULT_CALL_TIMEOUT, make_summarizer
from . import cli
from .common import (
    collect, CONTEXT_SETTINGS, each_with_progress, emit_json, failure, FiniteRange, format_option, json_option, output_file,
    summarizer_options, write_out,
)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1)
@click.option("-o", "--output", metavar="FILE", default=None, callback=output_file,
              help=f"Checkpoint file [default: {ckpt.NAME} in the workspace the session records (its cwd)].")
@summarizer_options("The checkpoint (on a failed call the extractive one is written)")
@click.option("--timeout", type=FiniteRange(min=0.1), default=DEFAULT_CALL_TIMEOUT, show_default=True,
              help="Seconds for the summarizer call.")
@click.option("--if-over", type=FiniteRange(min=0.0, max=1.0), default=None, metavar="RATIO",
              help=f"Write only when the context is past RATIO of the window (the skill writes proactively at "
                   f"{ckpt.SKILL_PROACTIVE}).")
@click.option("--window", type=click.IntRange(min=1000), default=None,
              help="Context window in tokens for --if-over [default: the session's own, as estimate finds it].")
@click.option("--read", "read_", is_flag=True, help="Print the existing checkpoint and exit (3 when there is none).")
@click.option("--clear", "clear_", is_flag=True, help="Remove the existing checkpoint (after the agent has consumed it).")
@click.option("-n", "--dry-run", is_flag=True, help="Print the checkpoint instead of writing it.")
@format_option
@json_option
def checkpoint(paths, output, summarizer, model, command, timeout, if_over, window, read_, clear_, dry_run, fmt, json_):
    """Write the context-management skill's .context-checkpoint.md for SESSION.

    Five sections the agent reads after compaction or /new to resume: the current
    task (the last user request, quoted), key state (done, in progress, failed
    commands, the previous checkpoint or compaction summary carried forward),
    decisions with their reasons, files changed (edit/write/apply-patch calls and
    their results) and next steps (open questions first). The file goes to the
    workspace the session records, or -o; it is replaced atomically. Several
    sessions (files or directories) each get their own. Exit 0 written or skipped,
    1 some failed, 3 none could be done (for --read: no checkpoint).

    \b
    Example:
      ctxtool checkpoint ~/.openclaw/agents/main/sessions/s.jsonl
      ctxtool checkpoint --if-over 0.75 --json ~/.claude/projects/-home-me-app/
      ctxtool checkpoint --summarizer anthropic -o /tmp/ckpt.md s.jsonl
      ctxtool checkpoint --read s.jsonl && ctxtool checkpoint --clear s.jsonl
    """
    if read_ and clear_:
        raise click.UsageError("--read and --clear exclude each other")
    if dry_run and (read_ or clear_):
        raise click.UsageError("-n/--dry-run is for writing a checkpoint: drop it with --read or --clear")
    if summarizer == "command" and not command:
        raise click.UsageError("--summarizer command needs --summarizer-command CMD")
    if not paths and not ((read_ or clear_) and output):
        raise click.UsageError("give a SESSION (or -o FILE with --read / --clear)")
    if read_ or clear_:
        return _read_or_clear(paths, output, fmt, read_, json_)
    files, failures = collect(paths)
    if output and len(files) > 1:
        raise click.UsageError("-o names one checkpoint file: give one session")
    summ = make_summarizer(summarizer, model=model, command=command, timeout=timeout) if summarizer != "extractive" else None
    results = []
    try:
        for path in each_with_progress(files, "checkpoint", enabled=not json_):
            try:
                results.append(ckpt.build(path, summ, fmt=fmt, output=output, if_over=if_over, window=window,
                                          dry_run=dry_run).to_dict(text=dry_run))
            except CtxError as e:
                failures.append(failure(path, e))
    finally:
        if summ is not None:
            summ.close()
    code = EXIT_OK if not failures else (EXIT_FINDINGS if results else EXIT_FAILED)
    if json_:
        emit_json({"results": results, "failures": failures})
        raise SystemExit(code)
    con = render.console()
    for r in results:
        if r["status"] == "dry-run":
            write_out(r["text"])
            if r["target"] is None:  # printed, but a real run would need -o
                click.echo(f"note: {r['path']}: {r['reason']}", err=True)
            continue
        line = {"written": f"wrote {r['target']} ({r['bytes']:,} bytes)", "skipped": f"skipped: {r['reason']}"}.get(r["status"], r["status"])
        pct = f", context {r['ratio']:.0%} of {r['window']:,}" if r.get("ratio") is not None else ""
        con.print(f"{r['path']}: {line}{pct if r['status'] == 'written' else ''}", markup=False)
        if r.get("fallback"):
            con.print(f"  note: {r['reason']}", markup=False)
    for f in failures:
        click.echo(f"Error: {f['message']}", err=True)
    raise SystemExit(code)


def _read_or_clear(paths, output, fmt, read_, json_):
    targets = []
    for p in (paths or [None]):
        targets.append((ckpt.locate(p, fmt, output) if p is not None else output, p))
    code = EXIT_OK
    out = []
    for target, session in targets:
        if read_:
            why = ckpt.not_a_checkpoint(target, session)
            if why is not None:
                raise InputError(why, path=target)
            text = ckpt.read(target)
            if text is None:
                code = EXIT_FAILED
                click.echo(f"Error: {target}: no checkpoint", err=True)
            elif not json_:
                write_out(text)
            out.append({"target": target, "exists": text is not None, "text": text})
        else:
            removed = ckpt.clear(target, session)
            out.append({"target": target, "removed": removed})
            if not json_:
                click.echo(f"{'removed' if removed else 'no checkpoint at'} {target}")
    if json_:
        emit_json({"results": out})
    raise SystemExit(code)
