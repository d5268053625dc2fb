"""``ctxtool estimate``: context tokens four ways, breakdowns, pressure, calibration."""

from __future__ import annotations

import click

from .. import render, tokenizers
from ..errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK
from ..estimate import PI_RESERVE_TOKENS, TOKENIZERS, Options, estimate_many
from . import cli
from .common import collect, CONTEXT_SETTINGS, each_with_progress, emit_json, FiniteRange, format_option, json_option

ESTIMATOR_TEXT = {
    "heuristic": "heuristic (pi estimateTokens: ceil(chars/4) per message)",
    "tiktoken": "tiktoken",
    "usage": "recorded usage",
    "anthropic": "Anthropic count_tokens API",
}


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True)
@click.option("-t", "--tokenizer", type=click.Choice(TOKENIZERS), default="heuristic", show_default=True,
              help="heuristic: pi's chars/4; tiktoken: offline BPE; usage: what the provider recorded; "
                   "anthropic: count_tokens API (needs ANTHROPIC_API_KEY).")
@click.option("--encoding", type=click.Choice(tokenizers.ENCODINGS), default=None,
              help="tiktoken encoding [default: o200k_base for OpenAI models and Codex rollouts, else cl100k_base].")
@click.option("--safety-margin", type=FiniteRange(min=0.1, max=10), default=1.0, show_default=True,
              help="Multiply heuristic/tiktoken totals (OpenClaw uses 1.2).")
@click.option("--overheads", is_flag=True, help="Add AceClaw's overheads: 4 per message, 20 per tool use, 10 per tool result.")
@click.option("--window", type=click.IntRange(min=1), default=None,
              help="Context window in tokens [default: a contextWindow the file records, else from the model named in the "
                   "file (1M only when recorded usage above 200K proves it), else 200,000].")
@click.option("--model", default=None, help="Model for the window table and count_tokens [default: from the file].")
@click.option("--reserve-tokens", type=click.IntRange(min=0), default=PI_RESERVE_TOKENS, show_default=True,
              help="pi's compaction reserve (OpenClaw uses max(this, 20,000)).")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="List the N largest entries.")
@click.option("--calibrate", is_flag=True,
              help="Compare every offline estimator with the usage recorded at each assistant turn, against what the "
                   "model saw then (the compaction in effect); recommend one only if its p90 error is <= 25%.")
@click.option("--api-timeout", type=FiniteRange(min=0.1), default=60.0, show_default=True,
              help="Seconds before count_tokens gives up (anthropic).")
@click.option("--auto-compact-limit", type=click.IntRange(min=1), default=None,
              help="Codex rollouts: the model_auto_compact_token_limit your Codex config sets "
                   "[default: 90% of the model's context window, as Codex does].")
@format_option
@json_option
def estimate(paths, tokenizer, encoding, safety_margin, overheads, window, model, reserve_tokens, top, calibrate,
             api_timeout, auto_compact_limit, fmt, json_):
    """How full is the context, and what is eating it.

    Counts only what the model sees on the next request (after the last compaction;
    no toolUseResult, details, progress lines or snapshots), compares it with the
    window, gives the pressure level (<50% low, 50-70 medium, 70-85 high, >85
    critical), the compaction triggers crossed (pi, OpenClaw, Spacebot, AceClaw; Codex's own
    auto-compaction for Codex rollouts),
    and breakdowns by role, block kind and tool with the largest entries. Several
    files or directories: one row each plus totals. Exit 0 ok, 1 some files failed,
    2 usage error (or tokenizer not installed), 3 nothing could be estimated.

    \b
    Example:
      ctxtool estimate session.jsonl
      ctxtool estimate -t tiktoken --encoding o200k_base session.jsonl
      ctxtool estimate -t usage --calibrate ~/.claude/projects/-home-me-app/
      ctxtool estimate --safety-margin 1.2 --overheads --json sessions/
    """
    if tokenizer == "tiktoken":
        tokenizers.get_encoding(encoding or tokenizers.DEFAULT_ENCODING)  # TokenizerUnavailable -> one line, exit 2
    files, failures = collect(paths)
    opts = Options(tokenizer=tokenizer, encoding=encoding, safety_margin=safety_margin, overheads=overheads,
                   window=window, model=model, reserve_tokens=reserve_tokens, top=top, calibrate=calibrate,
                   fmt=fmt, api_timeout=api_timeout, auto_compact_limit=auto_compact_limit)
    res = estimate_many(files, opts, wrap=lambda done: each_with_progress(done, "estimate", enabled=not json_, total=len(files)))
    for f in failures:
        f["message"] = f"{f['path']}: {f['error']}"
        f["exit_code"] = EXIT_FAILED
    res["failures"] = failures + res["failures"]
    if json_:
        emit_json(res)
    else:
        _render(res)
    if res["failures"]:
        raise SystemExit(EXIT_FINDINGS if res["files"] else max(f.get("exit_code") or EXIT_FAILED for f in res["failures"]))
    raise SystemExit(EXIT_OK)


def _status(tr) -> str:
    if tr["crossed"]:
        return f"crossed by {-tr['distance']:,}"
    return f"{tr['distance']:,} to go"


def _render(res: dict) -> None:
    con = render.console()
    err = render.console(stderr=True)
    for f in res["failures"]:
        err.print(f"Error: {f['message']}", markup=False)
    files = res["files"]
    if len(files) == 1:
        _render_one(con, files[0])
    elif files:
        rows = []
        for f in files:
            crossed = [tr["name"] for tr in f["triggers"] if tr["crossed"]]
            rows.append([f["path"], f["format"], f["estimator"], render.fmt_int(f["tokens"]), render.fmt_int(f["window"]),
                         f"{f['percent']:.1f}%", f["pressure"], ", ".join(crossed) or "-"])
        tot = res["totals"]
        rows.append(["TOTAL", f"{tot['files']} files", "", render.fmt_int(tot["tokens"]), "", f"max {tot['max_percent']:.1f}%",
                     ", ".join(f"{k} {v}" for k, v in sorted(tot["pressure"].items())), f"{tot['crossed_any_trigger']} files"])
        render.table(con, None, ["file", "format", "estimator", "tokens", "window", "used", "pressure", "triggers crossed"], rows,
                     justify={"tokens": "right", "window": "right", "used": "right"})
        _render_calibrations(con, files)


def _render_calibrations(con, files: list[dict]) -> None:
    """--calibrate on several files: one row per file (the full tables are in --json or per file)."""
    cals = [(f, f["calibration"]) for f in files if f.get("calibration") is not None]
    if not cals:
        return
    rows = []
    for f, cal in cals:
        if not cal.get("available"):
            rows.append([f["path"], "-", "-", "-", "-", "-", f"unavailable: {cal.get('reason')}"])
            continue
        best = cal["estimators"].get(cal.get("best_offline")) or {}
        rows.append([f["path"], cal["turns"], _f(cal["chars_per_token"]), cal.get("best_offline") or "-",
                     render.fmt_pct(best.get("error_median")), render.fmt_pct(best.get("error_p90")), cal.get("trust") or "none"])
    con.print()
    render.table(con, "Calibration against recorded usage (per file; details: run on one file or --json)",
                 ["file", "turns", "chars/token", "best offline", "error med", "error p90", "trust"], rows,
                 justify={"turns": "right", "chars/token": "right", "error med": "right", "error p90": "right"})


def _render_one(con, f: dict) -> None:
    est = ESTIMATOR_TEXT.get(f["estimator"], f["estimator"])
    if f["estimator"] == "tiktoken":
        est += f" {f.get('encoding')}"
    if f["estimator"] in ("heuristic", "tiktoken"):
        extras = []
        if f.get("overhead_tokens"):
            extras.append(f"+{f['overhead_tokens']:,} AceClaw overheads")
        if f.get("safety_margin") not in (None, 1, 1.0):
            extras.append(f"x{f['safety_margin']:g} safety margin")
        if extras:
            est += " (" + ", ".join(extras) + ")"
    pairs = [
        ("file", f"{f['path']} ({f['format']}, {f['messages']:,} messages in context"
                 + (f", {f['compactions']} compaction(s)" if f["compactions"] else "")
                 + (f", {f['bad_lines']} unparseable line(s) skipped" if f["bad_lines"] else "") + ")"),
        ("estimator", est),
        ("tokens", f"{f['tokens']:,} of {f['window']:,} ({f['percent']:.1f}%)"),
        ("pressure", f["pressure"]),
        ("skill action", f"{f['skill']['band']}: {f['skill']['action']}"),
        ("window", f"{f['window']:,} ({f['window_source']})"),
    ]
    if f["skill"]["warning"]:
        pairs.append(("skill warning", f["skill"]["warning"]))
    if f.get("usage"):
        pairs.append(("usage", f["usage"]["basis"]))
    if f.get("api"):
        pairs.append(("count_tokens", f"model {f['api']['model']}, {f['api']['messages']} messages"))
    b = f["breakdown"]
    sh = b["shares"]
    pairs.append(("tool output", f"{sh['tool_output'] * 100:.1f}% vs conversation {sh['conversation'] * 100:.1f}% "
                                 f"(the skill's rule of thumb: 60/40)"))
    pairs.append(("summaries", f"{sh['summaries'] * 100:.1f}% of context ({sh['summary_tokens']:,} tokens)"))
    render.kv(con, pairs)
    con.print()
    render.table(con, "Compaction triggers", ["trigger", "threshold", "rule", "status"],
                 [[tr["name"], render.fmt_int(tr["threshold"]), tr["rule"], _status(tr)] for tr in f["triggers"]],
                 justify={"threshold": "right"})
    total = b["tokens"] or 1
    con.print()
    render.table(con, f"By role ({b['basis']})", ["role", "tokens", "share"],
                 [[r, render.fmt_int(v), render.fmt_pct(v / total)] for r, v in b["by_role"].items()],
                 justify={"tokens": "right", "share": "right"})
    con.print()
    render.table(con, f"By block kind ({b['basis']})", ["kind", "tokens", "share"],
                 [[k, render.fmt_int(v), render.fmt_pct(v / total)] for k, v in b["by_kind"].items()],
                 justify={"tokens": "right", "share": "right"})
    if b["by_tool"]:
        con.print()
        render.table(con, "By tool", ["tool", "calls", "call tokens", "result tokens", "total", "share"],
                     [[x["tool"], x["calls"], render.fmt_int(x["call_tokens"]), render.fmt_int(x["result_tokens"]),
                       render.fmt_int(x["tokens"]), render.fmt_pct(x["tokens"] / total)] for x in b["by_tool"][:15]],
                     justify={"calls": "right", "call tokens": "right", "result tokens": "right", "total": "right", "share": "right"})
    if b["top"]:
        con.print()
        render.table(con, f"Largest {len(b['top'])} entries", ["line", "role", "tokens", "tools"],
                     [[x["line"], x["role"], render.fmt_int(x["tokens"]), ", ".join(x["tools"])] for x in b["top"]],
                     justify={"line": "right", "tokens": "right"})
    cal = f.get("calibration")
    if cal is not None:
        con.print()
        if not cal.get("available"):
            con.print(f"calibration: unavailable ({cal.get('reason')})", markup=False)
        else:
            rows = []
            for name, r in cal["estimators"].items():
                rows.append([name, r["turns"], r.get("evaluated", r["turns"]), _f(r["ratio_median"]), _f(r["ratio_p90"]),
                             render.fmt_int(r["baseline"]), render.fmt_pct(r["error_median"]), render.fmt_pct(r["error_p90"])])
            cols = ["estimator", "turns", "judged", "ratio med", "ratio p90", "baseline", "error med", "error p90"]
            render.table(con, f"Calibration against recorded usage ({cal['turns']} turns; each judged against a fit of "
                              f"the other turns of its context segment)", cols, rows,
                         justify={c: "right" for c in cols[1:]})
            render.kv(con, [("chars/token", _f(cal["chars_per_token"])),
                            ("trust", f"{cal['trust'] or 'none'}: {cal['advice']}")])
        for n in cal.get("notes") or []:
            con.print(f"note: {n}", markup=False)
    for n in f.get("notes") or []:
        con.print(f"note: {n}", markup=False)


def _f(x) -> str:
    return f"{x:.3f}" if x is not None else "-"
