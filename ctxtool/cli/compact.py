"""``ctxtool compact``: chunked compaction written back in each format's own record."""

from __future__ import annotations

import os
import re
import sys
import threading
import time

import click

from .. import render
from ..compact import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_PARTS, DEFAULT_RESERVE_TOKENS, DEFAULT_WINDOW
from ..batch_compact import DEFAULT_BATCH_SIZE, BatchOptions, PollPolicy, run_batch
from ..batch_state import default_path, run_key
from ..compact_writer import Options, compact_batch
from ..errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, InputError
from ..interrupts import interrupted_exit, stopped_by
from ..lock import DEFAULT_TIMEOUT
from ..paths import shard as shard_files
from ..report import MAX_SHARDS
from ..summarize import DEFAULT_CALL_TIMEOUT, DEFAULT_OVERALL_TIMEOUT, PlanOnly, Settings, make_summarizer
from . import _json_error, cli
from .common import (
    collect, CONTEXT_SETTINGS, emit_json, failure, FiniteRange, format_option, json_option, spooled,
    summarizer_options,
)


def _shard(ctx, param, value):
    if value is None:
        return None
    m = re.fullmatch(r"\s*(\d{1,7})\s*/\s*(\d{1,7})\s*", value)
    if not m or not (1 <= int(m.group(1)) <= int(m.group(2)) <= MAX_SHARDS):
        raise click.BadParameter(f"expected I/N with 1 <= I <= N <= {MAX_SHARDS:,}, e.g. 2/4")
    return f"{int(m.group(1))}/{int(m.group(2))}"


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True)
@summarizer_options("The summary")
@click.option("--keep-recent-tokens", type=click.IntRange(min=0), default=DEFAULT_KEEP_RECENT_TOKENS, show_default=True,
              help="Recent context kept verbatim (pi's estimate, chars/4).")
@click.option("--reserve-tokens", type=click.IntRange(min=1024), default=DEFAULT_RESERVE_TOKENS, show_default=True,
              help="pi's reserve; the summary's max_tokens is floor(0.8 x this).")
@click.option("--window", type=click.IntRange(min=1000), default=None,
              help="Context window in tokens, for --if-over and chunk sizes. Default: the session's own "
                   "(recorded window, model, usage above 200K; else 200,000), as estimate and profile find it.")
@click.option("--parts", type=click.IntRange(min=1), default=DEFAULT_PARTS, show_default=True,
              help="Split large histories into this many parts by token share, then merge their summaries.")
@click.option("--if-over", type=FiniteRange(min=0.0, max=1.0), default=None, metavar="RATIO",
              help="Only compact sessions whose context is above RATIO of --window (e.g. 0.8).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Files compacted concurrently (direct calls; --batch writes each file as its answers arrive).")
@click.option("--shard", callback=_shard, metavar="I/N", help="Process only the files whose name (their path under the directory given, else as given) "
                   "hashes to slice I of N (CI): a file added moves no other file.")
@click.option("--batch", is_flag=True,
              help="Send every summarization request through the Message Batches API (half the price, asynchronous; "
                   "--summarizer anthropic). Resumable: re-running the same command never submits a request twice.")
@click.option("--batch-state", metavar="PATH", default=None,
              help="The resume state of --batch (a journal). Default: ./.ctxtool-batch-<hash of targets, shard, model "
                   "and options>.jsonl; removed when every file is done.")
@click.option("--batch-size", type=click.IntRange(min=1, max=100_000), default=DEFAULT_BATCH_SIZE, show_default=True,
              help="Requests per batch (each batch also stays under 200 MB); a batch is sent as soon as it is full.")
@click.option("--batch-poll", type=FiniteRange(min=0.001), default=1.0, show_default=True, metavar="SECONDS",
              envvar="CTXTOOL_BATCH_POLL",
              help="First status check of a batch after this long; then doubling, at most 60 s and at most 10% of the "
                   "batch's age (env CTXTOOL_BATCH_POLL).")
@click.option("--batch-wait", type=FiniteRange(min=0), default=None, metavar="SECONDS",
              help="Stop waiting for batches after this long (0: submit and return): files still waiting are "
                   "reported pending (exit 1) and the same command collects them later. Default: wait until they end.")
@click.option("-n", "--dry-run", is_flag=True, help="Show the plan (messages and tokens to summarize, tokens sent, tokens after); call and write nothing.")
@click.option("--truncate", is_flag=True, help="pi: also remove the summarized message entries and re-link the rest (OpenClaw truncateAfterCompaction).")
@click.option("--no-backup", is_flag=True, help="Do not keep <file>.bak-<pid>-<ms> (kept anyway when an agent appended to the file meanwhile).")
@click.option("--timeout", type=FiniteRange(min=0.1), default=DEFAULT_CALL_TIMEOUT, show_default=True, help="Seconds per summarizer call.")
@click.option("--overall-timeout", type=FiniteRange(min=0.1), default=DEFAULT_OVERALL_TIMEOUT, show_default=True,
              help="Seconds for all summarizer calls of one file, retries included.")
@click.option("--on-error", type=click.Choice(["fallback", "skip"]), default="fallback", show_default=True,
              help="When the summarizer fails: write OpenClaw's fallback text plus the extractive summary, or leave the file.")
@click.option("--lock-timeout", type=FiniteRange(min=0), default=DEFAULT_TIMEOUT, show_default=True, help="Seconds to wait for the agent's <file>.lock.")
@click.option("--break-stale-lock", is_flag=True, help="Also remove a lock held for over 30 min by a live process (a dead or recycled holder's lock is always taken over).")
@click.option("--show-summary", is_flag=True, help="Print each summary (and include it in --json).")
@format_option
@json_option
def compact(paths, summarizer, model, command, keep_recent_tokens, reserve_tokens, window, parts, if_over, jobs, shard,
            batch, batch_state, batch_size, batch_poll, batch_wait, dry_run, truncate, no_backup, timeout, overall_timeout,
            on_error, lock_timeout, break_stale_lock, show_summary, fmt, json_):
    """Compact sessions: summarize old history, keep the recent context verbatim.

    Keeps the newest --keep-recent-tokens (never cutting between a tool call and its
    results), summarizes the rest in stages (OpenClaw's split/merge and fallbacks) and
    writes the result back as the agent's own record: a pi `compaction` entry, a Claude
    Code compact_boundary + summary, or a rewritten Messages JSONL file. Under the
    agent's lock, atomic, with a backup. Exit 0 when every file succeeded (or was
    skipped), 1 when some failed (the rest are still done), 3 when none could be done.

    \b
    Example:
      ctxtool compact session.jsonl                      # offline extractive summary
      ctxtool compact -n --json sessions/                # plan only
      ctxtool compact --summarizer anthropic --model claude-haiku-4-5 \\
          --if-over 0.8 --jobs 16 --shard 1/4 'sessions/**/*.jsonl'
      ctxtool compact --summarizer command --summarizer-command 'llm -m gpt-4o-mini' s.jsonl
      ctxtool compact --summarizer anthropic --batch --shard 3/8 --json sessions/ > shard-3.json
    """
    if summarizer == "command" and not command:
        raise click.UsageError("--summarizer command needs --summarizer-command CMD")
    if batch and summarizer != "anthropic":
        raise click.UsageError("--batch needs --summarizer anthropic (the Message Batches API)")
    files, failures = collect(paths)
    if not dry_run:  # compaction writes the file back: a spooled copy of standard input would be lost
        failures += [failure(f, InputError("standard input or a pipe cannot be compacted in place; use --dry-run", path=f))
                     for f in files if spooled(f)]
        files = [f for f in files if not spooled(f)]
    files = shard_files(files, shard, list(paths))
    opts = Options(fmt=fmt, keep_recent_tokens=keep_recent_tokens,
                   settings=Settings(window=window or DEFAULT_WINDOW, reserve_tokens=reserve_tokens, parts=parts, overall_timeout=overall_timeout),
                   if_over=if_over, dry_run=dry_run, truncate=truncate, backup=not no_backup, lock_timeout=lock_timeout,
                   break_stale_lock=break_stale_lock, on_error=on_error, window=window)
    if dry_run and summarizer != "extractive":
        summ = PlanOnly()  # plans LLM calls without creating a client (no key needed for a dry run)
    else:
        # a SummarizerError (no API key, ...) goes to the command group: one line, exit 3, JSON with --json
        summ = make_summarizer(summarizer, model=model, command=command, timeout=timeout)
    report = None
    t0 = time.monotonic()
    try:
        if batch and not dry_run:
            spec = {"targets": [os.path.abspath(p) for p in paths], "shard": shard, "model": model, "fmt": fmt,
                    "keep_recent_tokens": keep_recent_tokens, "reserve_tokens": reserve_tokens, "window": window,
                    "parts": parts, "if_over": if_over, "truncate": truncate, "on_error": on_error}
            key = run_key(spec)
            state = batch_state or default_path(os.getcwd(), key)
            bopts = BatchOptions(state_path=state, key=key, meta={"spec": spec}, batch_size=batch_size,
                                 poll=PollPolicy(first=batch_poll), wait=batch_wait)
            try:
                results, report = _run_batch(files, summ, opts, bopts, show_progress=not json_ and sys.stderr.isatty())
            except KeyboardInterrupt as e:
                why = (f"the batch state is kept in {state}; run the same command again to resume "
                       "(nothing already submitted is sent again)")
                click.echo(f"{stopped_by(e)}: {why}.", err=True)
                if json_:  # stdout is still one JSON document
                    _json_error(f"interrupted: {why}", interrupted_exit(e), path=state)
                raise SystemExit(interrupted_exit(e)) from None
        else:
            results = _run(files, summ, opts, jobs, show_progress=not json_ and sys.stderr.isatty())
    finally:
        close = getattr(summ, "close", None)
        if close:
            close()
    wall = time.monotonic() - t0
    failed = [r for r in results if not r.ok]
    if json_:
        out = {
            "dry_run": dry_run, "summarizer": summarizer, "model": model if summarizer == "anthropic" else None,
            "shard": shard, "seconds": round(wall, 3),
            "files": [r.to_dict(with_summary=show_summary) for r in results],
            "failures": failures,
            "totals": _totals(results),
        }
        if report is not None:
            for d in out["files"]:
                d["batch"] = report.files.get(d["path"])
            out["batch"] = report.to_dict()
        emit_json(out)
    else:
        _render(results, failures, dry_run, wall, show_summary)
        if report is not None:
            _render_batch(report)
    if failures or failed:
        # 3 only when no file was touched at all; a fallback summary was still written, or the
        # file's requests were submitted and wait in their batch
        done = [r for r in results if r.ok or r.status in ("fallback", "pending")]
        raise SystemExit(EXIT_FINDINGS if done else EXIT_FAILED)
    raise SystemExit(EXIT_OK)


def _run(files, summ, opts, jobs, show_progress):
    if not show_progress or not files:
        return compact_batch(files, summ, opts, jobs=jobs)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    con = render.console(stderr=True)
    lock = threading.Lock()
    with Progress(TextColumn("compact"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=con, transient=True) as prog:
        task = prog.add_task("compact", total=len(files), last="")

        def done(r):
            with lock:
                prog.update(task, advance=1, last=f"{r.status}: {r.path[-50:]}")

        return compact_batch(files, summ, opts, jobs=jobs, on_done=done)


def _run_batch(files, summ, opts, bopts, show_progress):
    if not show_progress or not files:
        return run_batch(files, summ, opts, bopts)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    con = render.console(stderr=True)
    with Progress(TextColumn("compact --batch"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=con, transient=True) as prog:
        task = prog.add_task("compact", total=len(files), last="planning")

        def event(ev):
            kind = ev["event"]
            if kind == "file":
                text = f"{ev['status']}: {ev['path'][-50:]}"
            elif kind == "waiting":
                n = len(ev["batches"])
                text = f"waiting for {n} batch{'es' if n != 1 else ''} (next check in {ev['seconds']:.0f}s)"
            elif kind == "submitted":
                text = f"submitted {ev['batch']} ({ev['requests']} requests)"
            elif kind == "ended":
                text = f"{ev['batch']} ended"
            else:
                text = f"submitting {ev.get('requests', '')} requests"
            prog.update(task, completed=ev["done"], last=text)

        return run_batch(files, summ, opts, bopts, on_event=event)


def _render_batch(report) -> None:
    con = render.console()
    err = render.console(stderr=True)
    for note in report.notes:
        err.print(f"Note: {note}", markup=False)
    new = [b for b in report.batches.values() if not b["earlier"]]
    earlier = len(report.batches) - len(new)
    parts = [f"{len(report.batches)} batch(es)" + (f" ({earlier} from an earlier run)" if earlier else ""),
             f"{report.submitted:,} request(s) submitted"]
    if report.reused:
        parts.append(f"{report.reused:,} already submitted earlier (not sent again)")
    where = "removed (every file done)" if report.state_removed else f"kept in {report.state} (run the same command to resume)"
    con.print(f"batch: {', '.join(parts)}; state {where}", markup=False)


def _totals(results) -> dict:
    out = {"files": len(results)}
    for r in results:
        out[r.status] = out.get(r.status, 0) + 1
    out["tokens_before"] = sum(r.tokens_before for r in results)
    out["tokens_after"] = sum(r.tokens_after for r in results)
    out["calls"] = sum(r.calls for r in results)
    return out


def _render(results, failures, dry_run, wall, show_summary):
    con = render.console()
    err = render.console(stderr=True)
    for f in failures:
        err.print(f"Error: {f['path']}: {f['error']}", markup=False)
    if dry_run:
        cols = ["file", "format", "status", "before", "summarize (msgs / tokens)", "sent to summarizer", "calls", "after", "note"]
        rows = [[r.path, r.format or "-", r.status, render.fmt_int(r.tokens_before),
                 f"{r.messages_summarized} / {render.fmt_int(r.tokens_summarized)}",
                 render.fmt_int(r.prompt_tokens), r.calls, render.fmt_int(r.tokens_after), r.reason or r.error or ""] for r in results]
        right = {c: "right" for c in cols[3:8]}
    else:
        cols = ["file", "format", "status", "before", "after", "summary chars", "calls", "seconds", "note"]
        rows = [[r.path, r.format or "-", r.status, render.fmt_int(r.tokens_before), render.fmt_int(r.tokens_after),
                 render.fmt_int(r.summary_chars) if r.summary_chars else "-", r.calls, f"{r.seconds:.2f}",
                 r.error or r.reason or ""] for r in results]
        right = {c: "right" for c in cols[3:8]}
    if rows:
        render.table(con, None, cols, rows, justify=right)
    for r in results:
        if r.status == "failed":
            err.print(f"Error: {r.path}: {r.error}", markup=False)
        elif r.status == "fallback":
            err.print(f"Warning: {r.path}: {r.error}", markup=False)
        if r.carried:
            con.print(f"{r.path}: carried over {r.carried} line(s) the agent appended meanwhile", markup=False)
        for n in r.notices:
            con.print(f"note: {r.path}: {n}", markup=False)
        if show_summary and r.summary:
            con.print(f"--- summary for {r.path} ---\n{r.summary}", markup=False)
    t = _totals(results)
    parts = [f"{t.get(s, 0)} {s}" for s in ("compacted", "fallback", "planned", "skipped", "pending", "failed") if t.get(s)]
    con.print(f"{len(results)} file(s): {', '.join(parts) or 'nothing to do'}; tokens {render.fmt_int(t['tokens_before'])} -> "
              f"{render.fmt_int(t['tokens_after'])}; {wall:.2f}s", markup=False)
