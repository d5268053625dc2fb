"""``ctxtool prune``: simulate pruning strategies on a session without touching it."""

from __future__ import annotations

import click

from .. import config, render
from .. import prune as lib
from ..errors import EXIT_FINDINGS, EXIT_OK
from ..jsonl import atomic_write
from ..transcript import scan
from ..validate import validate_messages
from ..window import Evidence, configured_window, resolve_window
from . import cli
from .common import (
    CONTEXT_SETTINGS, emit_json, FINITE, FiniteRange, format_option, in_config, json_option, one_input,
    output_file, summarizer_options, working_on,
)

MAX_ROWS = 40


def _strategy(ctx, param, value):
    if value is None:
        return None
    v = value.strip().lower()
    for sep in (":", "="):
        if v.startswith("history-turns" + sep):
            n = v.split(sep, 1)[1]
            if not n.isdigit():
                raise click.BadParameter(f"{value!r}: history-turns takes a whole number of turns (history-turns:5)")
            return ("history-turns", int(n))
    if v not in lib.STRATEGIES:
        raise click.BadParameter(f"{value!r} is not one of {', '.join(lib.STRATEGIES)} (history-turns:N sets N)")
    return (v, None)


def _ratio(ctx, param, value):
    if value is not None and not 0 <= value <= 1:
        raise click.BadParameter("must be between 0 and 1")
    return value


def _deep(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = {**out[k], **v}
        else:
            out[k] = v
    return out


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("path", type=click.Path(readable=False))  # unreadable or a directory: one line, exit 3 (scan says why)
@click.option("-s", "--strategy", callback=_strategy, default="openclaw", show_default=True, metavar="NAME",
              help="openclaw | aceclaw | history-turns[:N] | history-share | spacebot.")
@click.option("--compare", is_flag=True, help="Run every strategy and show one table.")
@click.option("--window", type=click.IntRange(min=1), default=None,
              help="Context window in tokens [default: a contextWindow the file records, else from the model it names (1M only when recorded usage above 200K proves it), else 200,000].")
@click.option("--tokenizer", type=click.Choice(lib.TOKENIZERS), default="heuristic", show_default=True,
              help="Token estimator for before/after (heuristic = pi's chars/4).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, readable=False), help="OpenClaw config (JSON/JSON5): agents.defaults.contextPruning and compaction.maxHistoryShare.")
@click.option("--preset", type=click.Choice(list(config.WORK_STYLE_PRESETS)), help="Work-style preset: ttl, keepLastAssistants, minPrunableToolChars.")
@click.option("--ttl", help="[openclaw] Cache TTL (30s, 5m, 1h; bare number = minutes).")
@click.option("--keep-last-assistants", type=click.IntRange(min=0), help="[openclaw] Protected tail: last N assistant messages (default 3).")
@click.option("--soft-trim-ratio", type=FINITE, callback=_ratio, help="[openclaw] Soft-trim above this share of the window (0.3).")
@click.option("--hard-clear-ratio", type=FINITE, callback=_ratio, help="[openclaw] Hard-clear above this share (0.5).")
@click.option("--min-prunable-tool-chars", type=click.IntRange(min=0), help="[openclaw] Hard clear only when prunable results total this many chars (50000).")
@click.option("--soft-trim-max-chars", type=click.IntRange(min=0), help="[openclaw] Trim results longer than this (4000).")
@click.option("--soft-trim-head-chars", type=click.IntRange(min=0), help="[openclaw] Characters kept from the start (1500).")
@click.option("--soft-trim-tail-chars", type=click.IntRange(min=0), help="[openclaw] Characters kept from the end (1500).")
@click.option("--hard-clear/--no-hard-clear", default=None, help="[openclaw] Enable or disable the hard clear.")
@click.option("--placeholder", help="[openclaw] Hard-clear placeholder text.")
@click.option("--allow", multiple=True, metavar="GLOB", help="[openclaw] Only prune these tools (repeatable; case-insensitive globs).")
@click.option("--deny", multiple=True, metavar="GLOB", help="[openclaw] Never prune these tools (repeatable; deny wins).")
@click.option("--now", help="[openclaw] Current time for the TTL gate (ISO 8601 or epoch); default: now.")
@click.option("--ignore-ttl", is_flag=True, help="[openclaw] Skip the cache-TTL gate.")
@click.option("--protect-turns", type=click.IntRange(min=0), default=5, show_default=True, help="[aceclaw] Last N user turns kept intact.")
@click.option("--trigger", type=FINITE, callback=_ratio, default=0.85, show_default=True, help="[aceclaw] Prune only above this share of the window.")
@click.option("--target", type=FINITE, callback=_ratio, default=0.60, show_default=True, help="[aceclaw] Target share (phase 2 would run if missed).")
@click.option("--turns", type=click.IntRange(min=1), default=10, show_default=True, help="[history-turns] User turns to keep.")
@click.option("--max-history-share", type=FiniteRange(0.1, 0.9), help="[history-share] Share of the window for history (0.5).")
@click.option("--spacebot-config", type=click.Path(dir_okay=False, readable=False),
              help="[spacebot] Spacebot's config.toml: [defaults.compaction] background/aggressive/emergency_threshold.")
@click.option("--spacebot-agent", metavar="ID", help="[spacebot] Use the [agents.compaction] overrides of this agent id.")
@click.option("--background", type=FINITE, callback=_ratio, help="[spacebot] Background tier threshold (0.80).")
@click.option("--aggressive", type=FINITE, callback=_ratio, help="[spacebot] Aggressive tier threshold (0.85).")
@click.option("--emergency", type=FINITE, callback=_ratio, help="[spacebot] Emergency tier threshold (0.95).")
@click.option("--background-fraction", type=FINITE, callback=_ratio, help="[spacebot] Oldest share drained by the background tier (0.30).")
@click.option("--aggressive-fraction", type=FINITE, callback=_ratio, help="[spacebot] Oldest share drained by the aggressive tier (0.50).")
@summarizer_options("[spacebot] The summary of the drained messages")
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=output_file, help="Write the pruned provider view as Messages JSONL (one strategy).")
@click.option("--as-session", is_flag=True, help="With -o: write a new session file in the input's format instead.")
@click.option("-v", "--verbose", is_flag=True, help="List every action (default: the first 40).")
@format_option
@json_option
def prune(path, strategy, compare, window, tokenizer, config_path, preset, ttl, keep_last_assistants, soft_trim_ratio,
          hard_clear_ratio, min_prunable_tool_chars, soft_trim_max_chars, soft_trim_head_chars, soft_trim_tail_chars,
          hard_clear, placeholder, allow, deny, now, ignore_ttl, protect_turns, trigger, target, turns,
          max_history_share, spacebot_config, spacebot_agent, background, aggressive, emergency, background_fraction,
          aggressive_fraction, summarizer, model, command, output, as_session, verbose, fmt, json_):
    """Simulate pruning strategies on a session and show what each would send; the file is never modified.

    Strategies: openclaw (cache-TTL context pruning: soft trim, hard clear), aceclaw
    (request-time stubs, last 5 turns protected, fires above 85%), history-turns:N
    (keep the last N user turns), history-share (OpenClaw safeguard: history within
    maxHistoryShare of the window), spacebot (its compactor: the oldest 30% of the
    messages summarized at 80%, 50% at 85%, 50% truncated at 95%; --summarizer).
    Reports tokens before/after, the share saved and, per message, what happened
    (trimmed, cleared, stubbed, dropped, thinking-removed) with its line and tool.
    Settings: defaults < --config < --preset < flags.

    \b
    Example:
      ctxtool prune session.jsonl --ignore-ttl
      ctxtool prune session.jsonl --compare --window 128000
      ctxtool prune session.jsonl -s aceclaw --json
      ctxtool prune session.jsonl --preset tool-heavy --now 2026-04-17T03:00:00Z
      ctxtool prune session.jsonl -s history-turns:5 -o pruned.jsonl --as-session
      ctxtool prune session.jsonl -s spacebot --spacebot-config config.toml --window 128000
    """
    if as_session and not output:
        raise click.UsageError("--as-session needs -o/--output")
    if compare and output:
        raise click.UsageError("-o/--output writes one strategy's result; drop --compare")
    if compare and click.get_current_context().get_parameter_source("strategy") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--compare runs every strategy: drop -s/--strategy (or --compare)")
    name, n_turns = strategy
    if n_turns is not None:
        turns = n_turns

    pruning: dict = {}
    share = None
    cfg = None
    if config_path:
        cfg = config.load(config_path)
        with in_config(config_path):
            pruning = config.pruning_overrides(cfg)
            share = config.get(cfg, config.COMPACTION_PATH + ".maxHistoryShare")
            if share is not None:
                share = lib.max_history_share(share)  # a config error even when a flag overrides it
            lib.openclaw_settings(pruning)  # a bad --config value is a config error before flags can hide it
    if preset:
        pruning = _deep(pruning, config.pruning_preset(preset))
    if ttl is not None:
        with in_config(None, "--ttl"):
            config.duration_ms(ttl)
    flags: dict = {}
    for key, val in (("ttl", ttl), ("keepLastAssistants", keep_last_assistants), ("softTrimRatio", soft_trim_ratio),
                     ("hardClearRatio", hard_clear_ratio), ("minPrunableToolChars", min_prunable_tool_chars)):
        if val is not None:
            flags[key] = val
    st = {k: v for k, v in (("maxChars", soft_trim_max_chars), ("headChars", soft_trim_head_chars), ("tailChars", soft_trim_tail_chars)) if v is not None}
    if st:
        flags["softTrim"] = st
    hc = {k: v for k, v in (("enabled", hard_clear), ("placeholder", placeholder)) if v is not None}
    if hc:
        flags["hardClear"] = hc
    if allow or deny:
        tools = dict(pruning.get("tools") or {})  # an object: validated above
        if allow:
            tools["allow"] = list(allow)
        if deny:
            tools["deny"] = list(deny)
        flags["tools"] = tools
    pruning = _deep(pruning, flags)
    if max_history_share is not None:
        share = max_history_share
    history_share = {"maxHistoryShare": lib.max_history_share(share)} if share is not None else None
    with in_config(None, "--now"):
        now_ts = lib.parse_now(now)
    counter = lib.get_counter(tokenizer)
    lib.openclaw_settings(pruning)  # validate early: a bad setting is a usage error even for other strategies
    spacebot = _spacebot(spacebot_config, spacebot_agent, background, aggressive, emergency, background_fraction,
                         aggressive_fraction)
    if summarizer == "command" and not command:
        raise click.UsageError("--summarizer command needs --summarizer-command CMD")
    summ = None
    if summarizer != "extractive" and ("spacebot" in (lib.STRATEGIES if compare else (name,))):
        from ..summarize import make_summarizer

        summ = make_summarizer(summarizer, model=model, command=command)

    path = one_input(path)  # standard input or a pipe: its spooled copy
    working_on(path)
    t = scan(path, fmt, keep=True)
    ev = Evidence.of(t.entries)
    win = resolve_window(ev, override=window, configured=configured_window(cfg, ev.model))
    window = win.tokens
    names = list(lib.STRATEGIES) if compare else [name]
    results = []
    for s in names:
        results.append(lib.simulate(
            t.format_name, t.entries, s, window=window, pruning=pruning,
            aceclaw={"protectTurns": protect_turns, "triggerRatio": trigger, "targetRatio": target},
            history_turns=turns, history_share=history_share, now=now_ts, ignore_ttl=ignore_ttl, counter=counter,
            spacebot=spacebot, summarizer=summ, transcript=t,
        ))
    if summ is not None:
        summ.close()
    base_errors = validate_messages(results[0].baseline)
    checks = {r.strategy: lib.new_violations(r, base_errors) for r in results}
    written = None
    if output:
        lib.ensure_distinct(path, output)
        r = results[0]
        if as_session:
            header = next((t.load(e) for e in t.entries if e.kind == "header"), None)
            chunks = lib.session_chunks(t.format_name, path, header, r, load=t.load, eol=t.eol, now=now_ts)
        else:
            chunks = lib.messages_chunks(r.messages, t.eol)
        atomic_write(output, chunks, mode=0o600 if as_session else 0o644)
        written = {"path": output, "kind": f"{t.format_name} session" if as_session and t.format_name != "messages" else "messages jsonl",
                   "messages": len(r.messages)}

    if json_:
        out = {"path": path, "format": t.format_name, "window": window, "window_source": win.source,
               "window_basis": win.basis, "tokenizer": tokenizer, "output": written,
               "input_errors": len(base_errors), "unparseable_lines": [b.lineno for b in t.bad], "results": []}
        for r in results:
            d = r.to_dict()
            d["violations"] = [v.to_dict() for v in checks[r.strategy]]
            out["results"].append(d)
        emit_json(out)
    else:
        _render(path, t.format_name, results, checks, compare, verbose, written, window, win.source)
        if t.bad:
            shown = ", ".join(str(b.lineno) for b in t.bad[:10]) + (" …" if len(t.bad) > 10 else "")
            render.console().print(f"note: {len(t.bad)} unparseable line(s) skipped (line {shown}; ctxtool repair drops them)",
                                   markup=False)
        if base_errors:
            render.console().print(f"note: the unpruned view already has {len(base_errors)} API error(s) (see ctxtool validate); only new ones are counted",
                                   markup=False)
    bad = any(checks[r.strategy] for r in results)
    raise SystemExit(EXIT_FINDINGS if bad else EXIT_OK)


def _spacebot(path, agent, background, aggressive, emergency, background_fraction, aggressive_fraction) -> dict:
    out: dict = {}
    if path:
        cfg = config.load_for(path, "toml")
        with in_config(path):
            out.update(lib.spacebot_settings(cfg, agent))
    elif agent:
        raise click.UsageError("--spacebot-agent needs --spacebot-config")
    for key, val in (("background", background), ("aggressive", aggressive), ("emergency", emergency),
                     ("backgroundFraction", background_fraction), ("aggressiveFraction", aggressive_fraction)):
        if val is not None:
            out[key] = val
    return out


def _tiers(r) -> str:
    return ", ".join(f"{t['tier']} {t['threshold']:.0%} -> {render.fmt_int(t['tokens_after'])}" for t in r.details.get("tiers", []))


def _share(r) -> str:
    return render.fmt_pct(r.saved_share)


def _render(path, fmt_name, results, checks, compare, verbose, written, window, window_source):
    con = render.console()
    if compare:
        rows = []
        for r in results:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(r.counts().items())) or "-"
            rows.append([r.strategy, "yes" if r.fired else "no", render.fmt_int(r.tokens_before), render.fmt_int(r.tokens_after),
                         render.fmt_int(r.saved), _share(r), f"{r.messages_before}->{len(r.messages)}", counts,
                         "ok" if not checks[r.strategy] else f"{len(checks[r.strategy])} error(s)"])
        render.table(con, f"{path} ({fmt_name}, window {render.fmt_int(window)} tokens: {window_source})",
                     ["strategy", "fires", "before", "after", "saved", "share", "messages", "actions", "valid"], rows,
                     justify={"before": "right", "after": "right", "saved": "right", "share": "right"})
        for r in results:
            if r.reason:
                con.print(f"  {r.strategy}: {r.reason}", markup=False)
            if r.strategy == "spacebot":
                con.print(f"  spacebot tokens after each tier: {_tiers(r)}", markup=False)
        return
    r = results[0]
    pairs = [("file", f"{path} ({fmt_name})"), ("strategy", r.strategy), ("fires", f"{'yes' if r.fired else 'no'}: {r.reason}" if r.reason else ("yes" if r.fired else "no")),
             ("window", f"{render.fmt_int(window)} ({window_source})"),
             ("tokens before", f"{render.fmt_int(r.tokens_before)} ({render.fmt_pct(r.tokens_before / window)} of window)"),
             ("tokens after", f"{render.fmt_int(r.tokens_after)} ({render.fmt_pct(r.tokens_after / window)} of window)"),
             ("saved", f"{render.fmt_int(r.saved)} ({_share(r)})"),
             ("messages", f"{r.messages_before} -> {len(r.messages)}")]
    if r.strategy == "spacebot":
        for tier in r.details.get("tiers", []):
            pairs.append((f"{tier['tier']} {tier['threshold']:.0%}", ("crossed" if tier["crossed"] else "not reached")
                          + f" (oldest {tier['messages']} messages; {render.fmt_int(tier['tokens_after'])} tokens after)"
                          + (f" summarizer failed: {tier['summarizer_error']}" if tier.get("summarizer_error") else "")))
    if r.strategy == "openclaw" and r.details.get("ttl_gate"):
        pairs.append(("ttl gate", r.details["ttl_gate"]))
    if r.details.get("note"):
        pairs.append(("note", r.details["note"]))
    render.kv(con, pairs)
    if r.actions:
        rows = []
        for a in r.actions[: None if verbose else MAX_ROWS]:
            chars = f"{render.fmt_int(a['chars_before'])} -> {render.fmt_int(a['chars_after'])}" if a["chars_before"] is not None else ""
            rows.append([a["line"] if a["line"] is not None else "new", a["role"], a["tool"] or "", a["action"], chars, a["detail"]])
        render.table(con, None, ["line", "role", "tool", "action", "chars", "detail"], rows, justify={"line": "right", "chars": "right"})
        if not verbose and len(r.actions) > MAX_ROWS:
            con.print(f"... {len(r.actions) - MAX_ROWS} more (use -v or --json)", markup=False)
    for v in checks[r.strategy]:
        con.print(f"pruning broke the view (message {v.message_index}): {v.api_error}", markup=False)
    if written:
        con.print(f"wrote {written['kind']}: {written['path']} ({written['messages']} messages)", markup=False)
