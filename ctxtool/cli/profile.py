"""``ctxtool profile``: work style, what eats the context, and configuration advice."""

from __future__ import annotations

import math
import os
import sys

import click
import orjson

from .. import advice, agents, pool, render
from .. import config as cfgmod
from ..errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from ..jsonl import atomic_write
from ..profile import (
    BURST_MIN_CALLS, BURSTY_MIN_BURST_CALL_SHARE, BURSTY_MIN_GAP_CV, BURSTY_MIN_IDLE_GAPS, BURSTY_MIN_IDLE_SHARE,
    CONVERSATIONAL_MAX_CALLS_PER_TURN, CONVERSATIONAL_MAX_SHARE, IDLE_GAP_MIN, LONG_SESSION_HOURS,
    PRESSURE_LEVELS, TOOL_HEAVY_MIN_CALLS_PER_TURN, TOOL_HEAVY_MIN_SHARE, TOOL_HEAVY_SOLO_SHARE,
    aggregate, profile_file,
)
from . import cli
from .common import (
    collect, CONTEXT_SETTINGS, each_with_progress, emit_json, failure, format_option, in_config, json_option,
    output_file,
)

HELP = f"""Profile sessions: work style, what eats the context, and config advice.

Classifies each session into one of the four work styles, from measurable
signatures (first matching rule wins):

\b
  bursty          >= {BURSTY_MIN_IDLE_GAPS} idle gaps (>= {IDLE_GAP_MIN:g} min without a message), idle time
                  >= {BURSTY_MIN_IDLE_SHARE:.0%} of wall time, >= {BURSTY_MIN_BURST_CALL_SHARE:.0%} of tool calls inside bursts (activity
                  periods between idle gaps with >= {BURST_MIN_CALLS} calls), and coefficient of
                  variation of the gaps between messages >= {BURSTY_MIN_GAP_CV:g}
  tool-heavy      tool results >= {TOOL_HEAVY_MIN_SHARE:.0%} of conversation tokens (user + assistant +
                  tool results) and >= {TOOL_HEAVY_MIN_CALLS_PER_TURN:g} tool calls per user turn, or >= {TOOL_HEAVY_SOLO_SHARE:.0%} alone
  conversational  tool results < {CONVERSATIONAL_MAX_SHARE:.0%} and < {CONVERSATIONAL_MAX_CALLS_PER_TURN:g} tool calls per user turn
  mixed           everything else

A figure within 10% of a threshold marks the verdict borderline.

Several sessions (a folder): each session is classified on its own and the
folder's style is the one whose sessions carry the most conversation tokens
(user + assistant + tool results, chars/4; ties: the most sessions). The
report shows the distribution (sessions and tokens per style) and, for
reference, the pooled figures, which one long idle session can dominate.

Shows tokens by category now in the context (fixed baseline = first recorded usage
minus the messages it covered; ranges chars/4..chars/3.5), tool results by tool, the
compaction history (stacking summaries), and a timeline of context tokens per request
with compaction points and the {'/'.join(f'{int(p * 100)}' for p in PRESSURE_LEVELS)}% pressure lines.

Advises in the agent's own settings: the skill's four intents (when to
compact, how fast old tool output is cleared, how much recent context is
protected, from what size tool output is trimmed) mapped to each agent's knobs:
OpenClaw reserveTokensFloor, contextPruning.ttl, keepLastAssistants and
minPrunableToolChars (work-style table: tool-heavy 60000/1m/1/10000,
conversational 30000/5m/3/50000, mixed 50000/2m/2/10000, bursty 50000/2m/1/10000);
pi settings.json compaction.reserveTokens, keepRecentTokens, enabled; Claude Code
settings.json env CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, BASH_MAX_OUTPUT_LENGTH,
MAX_MCP_OUTPUT_TOKENS, CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS, autoCompactEnabled;
Codex config.toml model_auto_compact_token_limit, tool_output_token_limit. Where
an agent has no knob for an intent, the practice that serves it instead. The
agent is detected from the session (format, OpenClaw entries, pi's file names);
--agent overrides. Sessions longer than {LONG_SESSION_HOURS:g} h get the next higher
compression trigger. With --config (the agent's own file: JSON, JSON5 or TOML)
the report leads with what is already right, then current -> recommended.
--apply edits the file minimally (comments kept), under the agent's lock where it
has one, after a byte-identical backup and a rollback note beside it.
--html REPORT writes a self-contained HTML report (inline SVG charts).

\b
Example:
  ctxtool profile session.jsonl
  ctxtool profile ~/.openclaw/agents/main/sessions/ --config ~/.openclaw/openclaw.json
  ctxtool profile s.jsonl --config openclaw.json --write-patch advice.patch.json
  ctxtool profile s.jsonl --config openclaw.json --apply --yes
  ctxtool profile ~/.claude/projects/-w-app/ --config ~/.claude/settings.json --apply --yes
  ctxtool profile session.jsonl --agent codex --config ~/.codex/config.toml --write-patch p.json
  ctxtool profile ~/.pi/agent/sessions/ --html report.html
  ctxtool profile s.jsonl --json | jq .sessions[0].classification
"""


@cli.command(context_settings=CONTEXT_SETTINGS, help=HELP)
@click.argument("paths", nargs=-1, required=True)
@click.option("--agent", "agent_name", type=click.Choice(agents.AGENT_NAMES), default=None, help="The agent whose settings to advise (default: detected from the sessions).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, readable=False), help="The agent's settings file to compare with: openclaw.json (JSON5), pi or Claude Code settings.json, Codex config.toml.")
@click.option("--window", type=click.IntRange(1000), default=None, help="Context window in tokens (default: the --config model window, a contextWindow the file records, the model (1M only when recorded usage above 200K proves it), else 200000).")
@click.option("--write-patch", "patch_path", type=click.Path(dir_okay=False), callback=output_file, help="Write the recommended change as a JSON patch (RFC 6902). Needs --config.")
@click.option("--apply", "apply_", is_flag=True, help="Change the config file (shows file and values first; backup + rollback note). Needs --config.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before --apply (required when not interactive).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None, callback=output_file, help="Write a self-contained HTML report (charts as inline SVG, no network).")
@format_option
@json_option
def profile(paths, agent_name, config_path, window, patch_path, apply_, yes, html_path, fmt, json_):
    if (patch_path or apply_) and not config_path:
        raise click.UsageError("--write-patch and --apply need --config PATH (the change is computed against your file)")
    syntax = None
    cfg = None
    if config_path:  # a file that cannot be read is refused before any session is read
        syntax = agents.agent(agent_name).syntax if agent_name else ("toml" if config_path.endswith(".toml") else "json5")
        cfg = cfgmod.load_for(config_path, syntax)
        if agent_name:
            with in_config(config_path):
                advice.current_settings(cfg, agent_name)
    files, failures = collect(paths)
    profiles = []
    # one file per worker process, results in input order (an OpenClaw config may name the model's window; other
    # agents' files hold none); any failure is that file's, one line naming it
    done = pool.each(profile_file, files, fmt, window, cfg if syntax == "json5" else None)
    for path, result, e in each_with_progress(done, "profile", enabled=not json_, total=len(files)):
        if e is None:
            profiles.append(result)
        else:
            failures.append(failure(path, e))
    if not profiles:
        for f in failures:
            click.echo(f"Error: {f.get('message') or f['path'] + ': ' + f['error']}", err=True)
        if json_:
            emit_json({"sessions": [], "aggregate": None, "recommendation": None, "config": None,
                       "already_right": [], "changes": [], "failures": failures})
        raise SystemExit(EXIT_FAILED)
    agg = aggregate(profiles) if len(profiles) > 1 else None
    basis = agg or profiles[0]
    duration = agg["duration_s"] if agg else profiles[0]["duration_s"]
    if agent_name:
        chosen = (agent_name, "--agent")
    else:
        chosen = agents.choose([(p["agent"]["name"], p["agent"]["basis"]) for p in profiles])
    agent = agents.agent(chosen[0])
    if config_path and (syntax == "toml") != (agent.syntax == "toml"):
        cfg = cfgmod.load_for(config_path, agent.syntax)  # the agent's own syntax, with a hint when it is not
    with in_config(config_path):
        current = advice.current_settings(cfg, agent)  # bad values -> ConfigError (exit 2), naming the file
    win = _common_window(profiles)
    rec = advice.recommend(basis["classification"]["pattern"], basis["long_session"], duration)
    cmp = advice.compare(current, rec, agent, win)
    out = {
        "sessions": profiles,
        "aggregate": agg,
        "agent": {"name": agent.name, "label": agent.label, "basis": chosen[1], "files": list(agent.files),
                  "syntax": agent.syntax, "window": win},
        "recommendation": rec,
        "config": {"path": os.path.abspath(config_path) if config_path else None, "current": current,
                   "compared_with": "config" if cfg is not None else f"{agent.label} defaults",
                   "pruning_mode": cfgmod.get(cfg, cfgmod.PRUNING_PATH + ".mode") if cfg and agent.name == "openclaw" else None},
        "already_right": cmp["right"],
        "changes": cmp["change"],
        "practices": cmp["practices"],
        "failures": failures,
    }
    plan = None
    if config_path and (patch_path or apply_):
        with in_config(config_path):  # (a value in the way of a change is the config's fault: named so)
            out["patch"] = advice.make_patch(cfg, cmp["change"])
            if apply_ and cmp["change"]:
                plan = advice.plan_apply(config_path, cmp["change"], agent)
        if plan is not None:
            out["config"]["json5"] = plan["json5"]
            out["config"]["comments"] = plan["comments"]
            out["config"]["edit"] = ("minimal text edit: comments and formatting kept" if plan["comments"]
                                     else "minimal text edit")
    if html_path:
        from ..html_report import write_report

        write_report(html_path, out)
        out["html_file"] = os.path.abspath(html_path)
    if patch_path:
        atomic_write(patch_path, [orjson.dumps(out["patch"], option=orjson.OPT_INDENT_2) + b"\n"])
        out["patch_file"] = os.path.abspath(patch_path)
    con = render.console()
    err = render.console(stderr=True)
    if not json_:
        _render(con, out)
    if apply_:
        if not cmp["change"]:
            out["applied"] = None
            if not json_:
                con.print("--apply: nothing to change; the config already has the recommended values.", markup=False)
        else:
            shown = err if json_ else con
            _show_plan(shown, plan)
            if not yes:
                if not sys.stdin.isatty():
                    msg = "--apply in a non-interactive run needs --yes; nothing was changed."
                    click.echo(f"Error: {msg}", err=True)
                    if json_:
                        out["applied"] = None
                        out["error"] = {"message": msg, "exit_code": EXIT_USAGE}
                        emit_json(out)
                    raise SystemExit(EXIT_USAGE)
                if not click.confirm("Apply these changes?", default=False, err=True):
                    out["applied"] = None
                    click.echo("Not applied; nothing was changed.", err=True)
                    if json_:
                        emit_json(out)
                    raise SystemExit(EXIT_OK)
            res = advice.apply_config(plan)
            out["applied"] = res
            if not json_:
                con.print(f"Applied. Backup: {res['backup']}", markup=False)
                con.print(f"Rollback note: {res['rollback_note']}", markup=False)
                for n in res["notices"]:
                    con.print(f"note: {n}", markup=False)
                con.print(f"To use the new values: {agent.reload}.", markup=False)
    if json_:
        emit_json(out)
    else:
        for f in failures:
            err.print(f"Error: {f.get('message') or f['path'] + ': ' + f['error']}", markup=False)
    raise SystemExit(EXIT_FINDINGS if failures else EXIT_OK)


def _common_window(profiles) -> int:
    """The window most sessions ran with (Codex's compaction limit is in tokens of it)."""
    counts: dict = {}
    for p in profiles:
        counts[p["window"]] = counts.get(p["window"], 0) + 1
    return max(counts, key=lambda w: (counts[w], w))


# ------------------------------------------------------------------ rendering


_pct = render.fmt_pct
_tok = render.fmt_int


def _rng(row) -> str:
    if row.get("tokens") is None:
        return "unknown"
    if row.get("low") is not None and row.get("high") is not None and row["high"] != row["low"]:
        return f"{row['low']:,}..{row['high']:,}"
    return f"{row['tokens']:,}"


def _figures(con, f, verdict):
    rows = [
        ["tool-result share of conversation tokens", _pct(f["tool_share"]),
         f"tool-heavy >= {TOOL_HEAVY_MIN_SHARE:.0%} (alone >= {TOOL_HEAVY_SOLO_SHARE:.0%}); conversational < {CONVERSATIONAL_MAX_SHARE:.0%}"],
        ["tool calls per user turn", f"{f['calls_per_turn']:.2f}",
         f"tool-heavy >= {TOOL_HEAVY_MIN_CALLS_PER_TURN:g}; conversational < {CONVERSATIONAL_MAX_CALLS_PER_TURN:g}"],
        [f"idle gaps >= {IDLE_GAP_MIN:g} min", str(f["idle_gaps"]), f"bursty >= {BURSTY_MIN_IDLE_GAPS}"],
        ["idle share of wall time", _pct(f["idle_share"]), f"bursty >= {BURSTY_MIN_IDLE_SHARE:.0%}"],
        [f"tool calls inside bursts ({f['bursts']} bursts)", _pct(f["burst_call_share"]), f"bursty >= {BURSTY_MIN_BURST_CALL_SHARE:.0%}"],
        ["gap coefficient of variation", f"{f['gap_cv']:.2f}", f"bursty >= {BURSTY_MIN_GAP_CV:g}"],
    ]
    if not f.get("timestamps", True):
        rows.append(["timestamps", "none", "burstiness cannot be measured"])
    render.table(con, None, ["signature", "value", "thresholds"], rows, justify={"value": "right"})
    extra = f"  borderline: {', '.join(verdict['near'])}" if verdict["borderline"] else ""
    con.print(f"confidence: {verdict['confidence']}{extra}", markup=False)


def _heading(con, text):
    if con.is_terminal:
        con.print(text, style="bold", markup=False)
    else:
        con.print(text, markup=False)


def _render(con, out):
    profiles = out["sessions"]
    agg = out["aggregate"]
    if agg is None:
        p = profiles[0]
        _render_session(con, p)
    else:
        rows = []
        for p in profiles:
            f = p["figures"]
            rows.append([os.path.basename(p["path"]), p["format"], p["classification"]["pattern"] + ("?" if p["classification"]["borderline"] else ""),
                         _pct(f["tool_share"]), f"{f['calls_per_turn']:.2f}", f["idle_gaps"], render.fmt_duration(p["duration_s"]),
                         _tok(p["tokens"]["context_now"]), p["compactions"]["count"]])
        render.table(con, f"{len(profiles)} sessions", ["session", "format", "style", "tool share", "calls/turn", "idle gaps",
                                                        "duration", "context now", "compactions"], rows,
                     justify={k: "right" for k in ("tool share", "calls/turn", "idle gaps", "duration", "context now", "compactions")})
        c = agg["classification"]
        con.print("", markup=False)
        _heading(con, f"Aggregate work style: {c['pattern'].upper()}" + ("  (borderline)" if c["borderline"] else ""))
        con.print(f"rule: {c['rule']}", markup=False)
        dist = agg["distribution"]
        rows = [[k, v["sessions"], _pct(v["session_share"]), _tok(v["tokens"]), _pct(v["token_share"])]
                for k, v in sorted(dist.items(), key=lambda kv: (-kv[1]["tokens"], -kv[1]["sessions"])) if v["sessions"]]
        render.table(con, None, ["style", "sessions", "share", "conversation tokens", "token share"], rows,
                     justify={k: "right" for k in ("sessions", "share", "conversation tokens", "token share")})
        extra = f"  borderline: {'; '.join(c['near'])}" if c["borderline"] else ""
        con.print(f"confidence: {c['confidence']}{extra}", markup=False)
        pooled = agg["pooled_classification"]
        con.print("", markup=False)
        con.print(f"Pooled figures over all sessions (for reference; on these alone the verdict would be "
                  f"{pooled['pattern']}, but one long or idle session can dominate wall-time figures)", markup=False)
        _figures(con, agg["figures"], pooled)
        con.print(f"long sessions (> {LONG_SESSION_HOURS:g} h): {agg['long_sessions']} of {agg['sessions']}", markup=False)
    con.print("", markup=False)
    _render_advice(con, out)


def _render_session(con, p):
    c = p["classification"]
    _heading(con, f"Session: {p['path']}")
    con.print(f"{p['format']}, {p['size']:,} bytes, {p['transcript_messages']:,} transcript messages "
              f"({p['api_messages']:,} API messages over the session), {p['user_turns']:,} user turns, "
              f"{p['requests']:,} requests, {p['tool_calls']:,} tool calls, {render.fmt_duration(p['duration_s'])}"
              + (" (long session)" if p["long_session"] else ""), markup=False)
    con.print("", markup=False)
    _heading(con, f"Work style: {c['pattern'].upper()}" + ("  (borderline)" if c["borderline"] else ""))
    con.print(f"rule: {c['rule']}", markup=False)
    _figures(con, p["figures"], c)
    con.print("", markup=False)
    t = p["tokens"]
    _heading(con, f"What is eating the context: ~{t['context_now']:,} tokens now "
                  f"({_pct(t['context_now_share'])} of a {p['window']:,} window, {p['window_source']})")
    con.print(f"({t['context_now_source']}; categories: {t['method']})", markup=False)
    sess = {r["category"]: r for r in t["session"]}
    rows = []
    for r in t["now"]:
        s = sess.get(r["category"])
        rows.append([r["label"], _rng(r), _pct(r["share"]), _tok(s["tokens"]) if s else "-", _pct(s["share"]) if s else "-"])
    if t["baseline"]["status"] == "unknown":
        rows.insert(0, ["fixed baseline (system prompt + tools)", "unknown", "-", "-", "-"])
    render.table(con, None, ["category", "tokens now (range)", "share now", "whole session", "share"], rows,
                 justify={k: "right" for k in ("tokens now (range)", "share now", "whole session", "share")})
    if t["baseline"]["status"] == "unknown":
        con.print("baseline unknown: the transcript has no recorded usage", markup=False)
    calls = [f"{x['name']} {x['calls']}" for x in p["tools"] if x["calls"]][:8]
    if calls:
        con.print("tool calls: " + ", ".join(calls), markup=False)
    sk = p.get("skill")
    if sk:
        con.print(f"skill action ({sk['band']}): {sk['action']}", markup=False)
        if sk["warning"]:
            con.print(f"skill warning: {sk['warning']}", markup=False)
    con.print("", markup=False)
    cp = p["compactions"]
    if cp["count"]:
        _heading(con, f"Compactions: {cp['count']}")
        for it in cp["items"]:
            con.print(f"  #{it['n']} line {it['line']}: tokens before {_tok(it['tokens_before'])}, summary "
                      f"{_tok(it['summary_tokens'])} tokens", markup=False)
        con.print(f"summaries now take {_pct(cp['summary_share_now'])} of the context"
                  + ("; summaries are stacking (each one larger than the last)" if cp["stacking"] else "; not stacking"), markup=False)
    else:
        con.print("Compactions: none", markup=False)
    for n in p.get("notes") or []:
        con.print(f"note: {n}", markup=False)
    con.print("", markup=False)
    tl = p["timeline"]
    if tl["points"]:
        _heading(con, f"Context tokens per request ({tl['points']:,} requests, {tl['recorded_points']:,} with recorded usage; "
                      f"peak {tl['peak']:,} = {_pct(tl['peak_share'])})")
        for line in chart(tl["series"], p["window"], tl["compaction_points"], tl["bucket"], ascii_only=not con.is_terminal):
            con.print(line, markup=False, highlight=False)
        over = ", ".join(f"{k}%: {v:,}" for k, v in tl["points_over"].items())
        con.print(f"requests at or over each pressure level: {over}", markup=False)
        con.print("", markup=False)


def _val(v) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else f"{v}"


def _render_advice(con, out):
    rec = out["recommendation"]
    conf = out["config"]
    ag = out["agent"]
    long = "; long session, compression trigger raised" if rec["adjustments"] else ""
    _heading(con, f"Recommended {ag['label']} settings for {rec['pattern']} work{long}")
    con.print(f"agent: {ag['label']} ({ag['basis']})", markup=False)
    where = conf["path"] or f"{ag['label']} defaults (pass --config {ag['files'][0]} to compare with your file)"
    con.print(f"compared with: {where}", markup=False)
    if conf.get("pruning_mode") not in (None, "cache-ttl"):
        con.print(f"note: contextPruning.mode is {conf['pruning_mode']!r}: ttl, keepLastAssistants and minPrunableToolChars "
                  "only act when it is \"cache-ttl\"", markup=False)
    if out["already_right"]:
        con.print("Already right:", markup=False)
        for it in out["already_right"]:
            src = " (default)" if it["source"] == "default" else ""
            con.print(f"  ok  {it['title']} ({it['key']} = {_val(it['current'])}{src})", markup=False)
    if out["changes"]:
        con.print("Change:", markup=False)
        for it in out["changes"]:
            src = f" (default: {it['default']})" if it["source"] == "default" and it["current"] is None else \
                (" (default)" if it["source"] == "default" else "")
            con.print(f"  ->  {it['title']} ({it['path']}): {_val(it['current'])}{src} -> {_val(it['recommended'])}", markup=False)
            con.print(f"      in practice: {it['practice']}", markup=False)
            con.print(f"      why: {it['why']}", markup=False)
    else:
        con.print("Nothing to change.", markup=False)
    for it in out.get("practices", []):
        label = f"no {ag['label']} setting for: {it['title'].lower()}" if it["intent"] else "practice"
        con.print(f"  ..  {label}: {it['practice']}", markup=False)
    if out.get("patch_file"):
        con.print(f"JSON patch ({len(out['patch'])} ops) written to {out['patch_file']}", markup=False)
    if out.get("html_file"):
        con.print(f"HTML report written to {out['html_file']}", markup=False)


def _show_plan(con, plan):
    con.print(f"About to change {plan['path']}:", markup=False)
    for c in plan["changes"]:
        src = f" (unset, default {c['default']})" if c["source"] == "default" else ""
        con.print(f"  {c['path']}: {_val(c['current']) if c['current'] is not None else 'unset'}{src} -> "
                  f"{_val(c['recommended'])}", markup=False)
    if plan.get("syntax") == "toml":
        how = "TOML edited with tomlkit: comments and layout kept"
    elif plan["comments"]:
        how = "JSON5 with comments: a minimal text edit keeps the comments"
    else:
        how = "minimal text edit, formatting kept"
    con.print(f"  ({how}; a byte-identical backup and a rollback note are written first)", markup=False)


def chart(series, window, comp_points, bucket, *, width: int = 64, height: int = 10, ascii_only: bool = False) -> list[str]:
    """A small bar chart of context tokens per request with the pressure lines and compaction marks."""
    if not series:
        return []
    step = max(1, math.ceil(len(series) / width))
    cols = [max(series[i:i + step]) for i in range(0, len(series), step)]
    top = max(max(cols), int(max(PRESSURE_LEVELS) * window * 1.05)) or 1
    full, line_ch, empty = ("#", "-", " ") if ascii_only else ("█", "┄", " ")
    rows = []
    levels = {}
    for p in PRESSURE_LEVELS:
        r = min(height - 1, int(p * window / top * height))
        levels[r] = p
    for r in range(height - 1, -1, -1):
        lo = top * r / height
        label = f"{int(levels[r] * 100)}%" if r in levels else ""
        cells = []
        for v in cols:
            if v > lo:
                cells.append(full)
            else:
                cells.append(line_ch if r in levels else empty)
        rows.append(f"{label:>4} |" + "".join(cells))
    marks = [" "] * len(cols)
    for cp in comp_points:
        i = min(len(cols) - 1, (cp // max(1, bucket)) // step)
        marks[i] = "C"
    rows.append("     +" + "-" * len(cols))
    if comp_points:
        rows.append("      " + "".join(marks) + "   C = compaction")
    rows.append(f"      request 1 .. {len(series) * bucket:,}; top = {top:,} tokens; window {window:,}")
    return rows
