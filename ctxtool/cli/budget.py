"""``ctxtool budget``: what the agent puts in front of every request, and what its limits cut."""

from __future__ import annotations

import click

from .. import budget as bud
from .. import render, tokenizers
from ..errors import EXIT_FINDINGS, EXIT_OK
from . import cli
from .common import CONTEXT_SETTINGS, emit_json, in_config, json_option, one_input, write_out


def _load_config(path: str | None) -> dict | None:
    if not path:
        return None
    from .. import config

    return config.load_for(path, "toml" if path.endswith(".toml") else "json5")


def _counter(tokenizer: str):
    if tokenizer == "heuristic":
        return None
    enc = tokenizers.get_encoding(tokenizer)
    return lambda text: len(enc.encode_ordinary(text))


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("targets", nargs=-1)
@click.option("--agent", type=click.Choice(bud.AGENTS), default=None,
              help="Which agent's files and limits [default: detected from the files present].")
@click.option("--config", "config_path", default=None,
              help="The agent's config: OpenClaw openclaw.json (agents.defaults.bootstrapMaxChars, bootstrapTotalMaxChars), "
                   "Codex config.toml (project_doc_max_bytes, project_doc_fallback_filenames).")
@click.option("--max-file-chars", type=click.IntRange(min=1), default=None,
              help="Per-file limit: OpenClaw bootstrapMaxChars [20,000], AceClaw maxPerTierChars [20,000], "
                   "Claude Code's large-file warning [40,000].")
@click.option("--max-total-chars", type=click.IntRange(min=1), default=None,
              help="Total limit: OpenClaw bootstrapTotalMaxChars [60,000], AceClaw maxTotalChars [150,000], "
                   "Claude Code's total warning [120,000].")
@click.option("--max-bytes", type=click.IntRange(min=0), default=None, help="Codex project_doc_max_bytes [32,768].")
@click.option("--import-depth", type=click.IntRange(min=1), default=None,
              help="Claude Code: levels of @imports read (the file itself is level 0) [5].")
@click.option("--fallback-filename", "fallbacks", multiple=True, help="Codex project_doc_fallback_filenames (repeatable).")
@click.option("--window", type=click.IntRange(min=1), default=None,
              help="Context window in tokens for the baseline share [200,000]; AceClaw scales its budget to it "
                   "(forContextWindow).")
@click.option("--max-output", type=click.IntRange(min=0), default=0, show_default=True,
              help="AceClaw forContextWindow: output tokens reserved from the window.")
@click.option("-t", "--tokenizer", type=click.Choice(("heuristic",) + tokenizers.ENCODINGS), default="heuristic",
              show_default=True, help="heuristic: chars/4; or an offline tiktoken encoding.")
@click.option("--home", default=None, help="Home directory for user-level files (~/.claude, ~/.codex, ~/.aceclaw) [$HOME].")
@click.option("--show", "show", default=None, metavar="FILE",
              help="Print FILE's text exactly as the agent injects it (after its trimming) and exit.")
@click.option("--session", "session", default=None, metavar="S",
              help="Compare with the fixed baseline `profile` measures from this session's recorded usage.")
@json_option
def budget(targets, agent, config_path, max_file_chars, max_total_chars, max_bytes, import_depth, fallbacks, window,
           max_output, tokenizer, home, show, session, json_):
    """What the agent puts in front of every request: its context files, sized, against its own limits.

    Finds the files an agent loads from a WORKSPACE directory (default: the current
    one) or explicit FILEs: OpenClaw's bootstrap files (AGENTS.md, SOUL.md,
    IDENTITY.md, USER.md, BOOTSTRAP.md, MEMORY.md; TOOLS.md, HEARTBEAT.md and memory/
    are reported as not injected), Claude Code's CLAUDE.md hierarchy with its @imports
    (five levels, each file once: a cycle is reported, not followed), Codex's
    AGENTS.md chain up to project_doc_max_bytes, AceClaw's memory tiers with their
    priorities. Applies the agent's own limits exactly (OpenClaw's trim is checked
    byte for byte against the openclaw package) and reports per file: chars (UTF-16
    units, as the agents count; bytes for Codex), tokens, kept or trimmed, the lines
    cut, then the totals against each limit, the share of the window and how to fix a
    file past a limit. Exit 0 all within the limits, 1 something is cut or past a
    warning, 2 usage error, 3 a file could not be read.

    \b
    Example:
      ctxtool budget ~/.openclaw/workspace
      ctxtool budget --agent claude --show CLAUDE.md .
      ctxtool budget --agent codex --max-bytes 65536 ~/src/app
      ctxtool budget --session ~/.openclaw/agents/main/sessions/s.jsonl --json ~/.openclaw/workspace
    """
    cfg = _load_config(config_path)
    if fallbacks:
        cfg = dict(cfg or {})
        cfg["project_doc_fallback_filenames"] = list(fallbacks)
    counter = _counter(tokenizer)
    win = window or bud.DEFAULT_WINDOW
    with in_config(config_path):
        pre = {"fallbackFilenames": list(fallbacks) or None, "importDepth": import_depth}
        d = bud.discover(agent, list(targets), home=home, settings={k: v for k, v in pre.items() if v is not None})
        overrides = {}
        if d.agent == "openclaw":
            overrides = {"maxChars": max_file_chars, "totalMaxChars": max_total_chars}
        elif d.agent == "aceclaw":
            overrides = {"contextWindow": win, "maxOutput": max_output, "maxPerTierChars": max_file_chars,
                         "maxTotalChars": max_total_chars}
        elif d.agent == "codex":
            overrides = {"maxBytes": max_bytes}
        else:
            overrides = {"fileWarnChars": max_file_chars, "totalWarnChars": max_total_chars, "importDepth": import_depth}
        settings = bud.resolve_settings(d.agent, overrides, cfg)
    report = bud.assemble(d, settings, window=win, counter=counter)
    report["tokenizer"] = tokenizer
    if session:
        from ..profile import profile_session

        report["session"] = bud.compare_session(report, profile_session(one_input(session), window=window))
    if show:
        text = bud.injected(report, show)
        if json_:  # (only JSON on stdout with --json: the file's name and its text as injected)
            emit_json({"file": show, "agent": report.get("agent"), "injected": text})
        else:
            write_out(text)
        raise SystemExit(EXIT_OK)
    code = EXIT_FINDINGS if report["advice"] else EXIT_OK
    if json_:
        for r in report["files"]:
            r["injected"] = None
        emit_json(report)
        raise SystemExit(code)
    _render(report)
    raise SystemExit(code)


def _cut_text(r: dict) -> str:
    if not r["cut"]:
        return ""
    c = r["cut"][0]
    lines = f"{c['from_line']}" if c["from_line"] == c["to_line"] else f"{c['from_line']}-{c['to_line']}"
    digest = f", policy digest of {r['digest_lines']} lines kept" if r.get("digest_lines") else ""
    return f"lines {lines} ({c['chars']:,} {'bytes' if r['unit'] == 'bytes' else 'chars'}{digest})"


def _status(r: dict) -> str:
    return r["status"] + (" (" + ", ".join(r["causes"]) + ")" if r["causes"] else "")


def _render(rep: dict) -> None:
    con = render.console()
    title = f"{rep['agent']} context files" + (f" in {rep['root']}" if rep["root"] else "")
    rows = []
    for r in rep["files"]:
        name = ("  " * r["depth"] + r["name"]) if r["depth"] else r["name"]
        if rep["agent"] == "aceclaw":
            name += f" [{r['priority']}{', protected' if r['protected'] else ''}]"
        rows.append([name, render.fmt_int(r["chars"] if r["chars"] is not None else r["raw_chars"]),
                     render.fmt_int(r["injected_chars"]), render.fmt_int(r["tokens"]), _status(r), _cut_text(r)])
    unit = "bytes" if rep["agent"] == "codex" else "chars"
    render.table(con, title, ["file", unit, "injected", "tokens", "status", "cut"], rows,
                 justify={unit: "right", "injected": "right", "tokens": "right"})
    con.print()
    t = rep["totals"]
    pairs = [("injected", f"{t['injected_chars']:,} {unit} of {t['chars']:,}, ~{t['tokens']:,} tokens ({rep['tokenizer']})"),
             ("window share", f"{render.fmt_pct(rep['window_share'])} of {rep['window']:,} tokens")]
    for lim in rep["limits"]:
        used = f"{lim['used']:,}" + (f" (raw {lim['raw']:,})" if lim.get("raw") not in (None, lim["used"]) else "")
        pairs.append((lim["name"], f"{used} / {lim['value']:,} {lim['unit']}" + ("  OVER" if lim["over"] else "")))
    if rep.get("session"):
        s = rep["session"]
        b = s.get("baseline") or {}
        if b.get("tokens") is not None:
            pairs.append(("session baseline", f"{b['tokens']:,} tokens measured; these files ~{s['budget_tokens']:,}; "
                                              f"gap {s['gap_tokens']:,}"))
        pairs.append(("gap", s["explained"]))
    render.kv(con, pairs)
    for a in rep["advice"]:
        con.print(f"! {a['file'] + ': ' if a['file'] else ''}{a['problem']}", markup=False)
        con.print(f"  fix: {a['fix']}", markup=False)
    for r in rep["files"]:
        if r["note"] and r["status"] not in ("trimmed",):
            con.print(f"- {r['name']}: {r['note']}", markup=False)
    for n in rep["notes"]:
        con.print(f"note: {n}", markup=False)

