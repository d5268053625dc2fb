"""``ctxtool view``: the messages the agent really sends for a session file."""

from __future__ import annotations

import os
import sys

import click

from .. import render
from ..errors import EXIT_OK
from ..jsonl import dumps
from ..view import view_file
from . import cli
from .common import CONTEXT_SETTINGS, emit_json, format_option, json_option, one_input, working_on, writing_out


def _summary(content) -> str:
    """One line for a message's content: a string (a Claude Code system message), blocks, or any value."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    elif not isinstance(content, list):
        content = [content]
    parts = []
    for b in content:
        if not isinstance(b, dict):  # a value that is no block (a damaged Messages JSONL line)
            text = " ".join(str(b).split())
            parts.append(text[:60] + ("…" if len(text) > 60 else ""))
            continue
        t = b.get("type")
        if t == "text":
            text = " ".join(str(b.get("text", "")).split())
            parts.append(text[:60] + ("…" if len(text) > 60 else ""))
        elif t == "tool_use":
            parts.append(f"tool_use {b.get('name')} {b.get('id')}")
        elif t == "tool_result":
            parts.append(f"tool_result {b.get('tool_use_id')}" + (" (error)" if b.get("is_error") else ""))
        else:
            parts.append(str(t))
    return "; ".join(parts)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("path")
@format_option
@json_option
@click.option("--jsonl", is_flag=True, help="Messages JSONL (one {role, content} per line) even on a terminal.")
@click.option("--model", "model", metavar="NAME", default=None,
              help="Claude Code and Codex: the model the client is run with (its --model or -m; for Claude Code an "
                   "alias such as sonnet too). Codex's default: the model of a trusted project's .codex/config.toml, else of "
                   "its config.toml, else gpt-5.5. Claude "
                   "Code's default: "
                   "$ANTHROPIC_MODEL (also from the env of its settings files), else the model the client restores, "
                   "the last response's; where none does (or an ANTHROPIC_DEFAULT_*_MODEL turns the restore off), "
                   "the model its settings files name, else its default.")
def view(path, fmt, json_, jsonl, model):
    """Print the messages the agent sends for PATH: the provider view.

    For pi/OpenClaw the leaf's branch with the compaction summary first; for Claude Code
    the leaf's chain as the client itself builds and heals it; for Codex rollouts the Responses
    items the CLI sends (its ``input``, healed as it heals it). Piped (or with --jsonl) it
    is Messages JSONL, one {"role", "content"} per line (Codex: one Responses item per line),
    ready to send or diff; --json adds
    the file lines each message comes from; on a terminal, a table.

    Claude Code resumes with the model of the last response (or --model): to a model
    that takes no system messages (Sonnet 4.6, Haiku 4.5, Opus before 4.8) it sends their
    context as reminder text in the user turns. With ANTHROPIC_BASE_URL naming another host
    than Anthropic's API, it drops the thinking other models wrote, and so does the view.
    Codex resumes with its own model (-m, else its config's), not the rollout's: to a
    model outside its catalog it sends an image's "original" detail as "high".
    The client's settings files are read as it reads them (~/.claude/settings.json, or
    $CLAUDE_CONFIG_DIR's, then .claude/settings.json and settings.local.json in the folder
    the session ran in, then /etc/claude-code's managed settings): their model and their env.

    \b
    Example:
      ctxtool view session.jsonl | head
      ctxtool view - < session.jsonl
      ctxtool view --json ~/.claude/projects/-home-me-app/0f5e….jsonl
      ctxtool view --model sonnet ~/.claude/projects/-home-me-app/0f5e….jsonl
    """
    if json_ and jsonl:
        raise click.UsageError("--json and --jsonl are two outputs: give one")
    path = one_input(path)  # standard input or a pipe (``-``): its spooled copy, shown as <stdin>
    working_on(path)  # an error that escapes names the file
    if model is not None and not model.strip():
        raise click.BadParameter("is empty", param_hint="--model")
    r = view_file(path, fmt, model=model, environ=os.environ)
    if json_:
        emit_json(r)
        raise SystemExit(EXIT_OK)
    con = render.console()
    # the table only on a real terminal: piped, the output is data (Messages JSONL), whatever FORCE_COLOR or
    # TTY_COMPATIBLE tell rich about drawing (CI systems set them: `view s.jsonl > out.jsonl` made a table)
    if con.is_terminal and not _drawing_forced() and not jsonl:
        rows = [[k, m["role"], ",".join(map(str, m["lines"][:6])) + ("…" if len(m["lines"]) > 6 else ""),
                 _summary(m["content"])] for k, m in enumerate(r["messages"])]
        model = f", {r['model']['name']}: {r['model']['basis']}" if "model" in r else ""
        render.table(con, f"{path} ({r['format']}, {len(rows)} messages{model})", ["#", "role", "lines", "content"], rows,
                     justify={"#": "right"})
        raise SystemExit(EXIT_OK)
    out = sys.stdout.buffer
    with writing_out():
        for m in r["messages"]:
            # jsonl.dumps: what orjson cannot write (a lone surrogate, an integer beyond 64 bits) as JSON.parse reads it
            out.write(dumps(m["item"] if "item" in m else {"role": m["role"], "content": m["content"]}) + b"\n")
        out.flush()
    raise SystemExit(EXIT_OK)


def _drawing_forced() -> bool:
    """rich was told to draw on what is no terminal (FORCE_COLOR, TTY_COMPATIBLE with standard output piped)."""
    if "FORCE_COLOR" not in os.environ and "TTY_COMPATIBLE" not in os.environ:
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return True
