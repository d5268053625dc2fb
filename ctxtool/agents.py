"""The four intents of the context-management skill, mapped to each agent's own knobs.

The skill (seed 004) names four settings; each is an *intent* any agent can serve:

* ``compact``: when to compact (OpenClaw ``reserveTokensFloor``);
* ``clear``: how fast old tool output is cleared (OpenClaw ``contextPruning.ttl``);
* ``protect``: how much recent context stays protected (OpenClaw ``keepLastAssistants``);
* ``trim``: from what size tool output is trimmed (OpenClaw ``minPrunableToolChars``).

``AGENTS`` holds, per agent, its settings file, the knob for each intent (its own key name,
its own default, and how the skill's value for a work style becomes a value of that knob),
and for an intent the agent has no knob for, the practice that serves it instead. Names and
defaults come from each agent's own documentation or code; ``docs/agent-settings.md`` cites
the source of every one.

The skill's compaction floors are tokens on a 200K window (``REFERENCE_WINDOW``): 60000
compacts at 70% of the window, 50000 at 75%, 30000 at 85%. An agent that sets the trigger
as a share of the window (Claude Code) gets that share; one that sets it in tokens of its
own window (Codex) gets the share of the session's window; pi's ``reserveTokens`` is the
floor itself (pi compacts when the context exceeds the window less ``reserveTokens``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable

from . import config as cfgmod
from .errors import ConfigError

REFERENCE_WINDOW = 200_000  # the skill's floors are tokens on a 200K window
CHARS_PER_TOKEN = 4  # the trim size is in characters; token-valued caps get chars / 4 (pi's heuristic)

INTENTS = {
    "compact": "When to compress the conversation",
    "clear": "How quickly old tool output is cleared",
    "protect": "How much recent context is protected",
    "trim": "Minimum size before tool output is trimmed",
}
INTENT_OF = {"reserveTokensFloor": "compact", "ttl": "clear", "keepLastAssistants": "protect",
             "minPrunableToolChars": "trim"}


def compact_share(values: dict) -> float:
    """The share of the window at which the skill's floor compacts (0.70, 0.75, 0.85)."""
    return round(1 - values["reserveTokensFloor"] / REFERENCE_WINDOW, 4)


def _pct(values, window):
    return str(round(compact_share(values) * 100))


def _tokens_of_window(values, window):
    return int(round((window or REFERENCE_WINDOW) * compact_share(values)))


def _cap(default: int, per_token: bool, as_str: bool):
    def value(values, window):
        chars = values["minPrunableToolChars"]
        v = min(default, chars // CHARS_PER_TOKEN if per_token else chars)
        return str(v) if as_str else v
    return value


# pi keeps ``keepRecentTokens`` verbatim at compaction (default 20000, the share OpenClaw's
# default of 3 protected exchanges maps to); each protected exchange fewer keeps 5000 fewer.
PI_KEEP_RECENT = {1: 10_000, 2: 15_000, 3: 20_000}


@dataclass(frozen=True)
class Knob:
    """One setting of an agent's file that serves an intent."""

    intent: str
    key: str  # the agent's own name for it
    path: str  # dotted path inside the settings file
    default: object  # the value the agent uses when the key is unset (None: computed, see default_text)
    default_text: str
    kind: str  # int | str-int (a number written as a string: Claude Code env) | duration | bool
    recommend: Callable  # (style values, window) -> value
    practice: str  # what it does, in practice
    at_most: bool = False  # a cap: a lower value than recommended is already right
    source: str = ""


@dataclass(frozen=True)
class Agent:
    name: str
    label: str
    files: tuple  # where its settings live (for messages)
    syntax: str  # json5 | json | toml
    lock: str | None  # openclaw (``<file>.lock``) | proper-lockfile (``<file>.lock/`` directory) | None
    knobs: tuple
    no_knob: dict = field(default_factory=dict)  # intent -> practice
    practices: dict = field(default_factory=dict)  # work style -> [practice] beyond the knobs
    reload: str = ""  # how the agent picks up a changed file


OPENCLAW = Agent(
    name="openclaw", label="OpenClaw", files=("~/.openclaw/openclaw.json",), syntax="json5", lock="openclaw",
    knobs=(
        Knob("compact", "reserveTokensFloor", cfgmod.COMPACTION_PATH + ".reserveTokensFloor",
             cfgmod.COMPACTION_DEFAULTS["reserveTokensFloor"], str(cfgmod.COMPACTION_DEFAULTS["reserveTokensFloor"]), "int",
             lambda v, w: v["reserveTokensFloor"],
             "How full the context gets before the agent summarises and compresses the history. "
             "Higher = compresses sooner: a shorter summary and more room left afterwards "
             "(30000 waits until nearly full; 50000 compresses at ~75%; 60000 at ~70%).",
             source="OpenClaw docs, session-management-compaction"),
        Knob("clear", "ttl", cfgmod.PRUNING_PATH + ".ttl", cfgmod.PRUNING_DEFAULTS["ttl"], cfgmod.PRUNING_DEFAULTS["ttl"],
             "duration", lambda v, w: v["ttl"],
             "After this long without a request, old command output, file reads and search results are cleared "
             "from the context. Shorter = more aggressive cleanup (5m rarely fires during active work; "
             "1m clears fast, but files may need re-reading).",
             source="OpenClaw docs, session-pruning"),
        Knob("protect", "keepLastAssistants", cfgmod.PRUNING_PATH + ".keepLastAssistants",
             cfgmod.PRUNING_DEFAULTS["keepLastAssistants"], str(cfgmod.PRUNING_DEFAULTS["keepLastAssistants"]), "int",
             lambda v, w: v["keepLastAssistants"],
             "When old tool output is cleared, this many of the most recent exchanges stay untouched "
             "(3 keeps more history visible; 1 protects only the last exchange).",
             source="OpenClaw docs, session-pruning"),
        Knob("trim", "minPrunableToolChars", cfgmod.PRUNING_PATH + ".minPrunableToolChars",
             cfgmod.PRUNING_DEFAULTS["minPrunableToolChars"], str(cfgmod.PRUNING_DEFAULTS["minPrunableToolChars"]), "int",
             lambda v, w: v["minPrunableToolChars"],
             "Only tool output larger than this (characters) can be cleared. Lower = more gets cleaned up "
             "(50000 only very large outputs; 10000 medium ones too).",
             source="OpenClaw docs, session-pruning"),
    ),
    practices={"tool-heavy": ["Spawn sub-agents for tool-heavy work (test suites, multi-file audits): only their "
                              "summary (~500 tokens) enters the main context."]},
    reload="restart the OpenClaw gateway (or let it reload its config) so it reads the new values",
)

PI = Agent(
    name="pi", label="pi", files=("~/.pi/agent/settings.json", ".pi/settings.json"), syntax="json",
    lock="proper-lockfile",
    knobs=(
        Knob("compact", "compaction.reserveTokens", "compaction.reserveTokens", 16384, "16384", "int",
             lambda v, w: v["reserveTokensFloor"],
             "pi compacts when the context exceeds the window less this many tokens: higher = compacts sooner, "
             "with more room left afterwards (30000 on a 200K window compacts at 85%; 50000 at 75%; 60000 at 70%).",
             source="pi docs/settings.md (Compaction); core/settings-manager.ts getCompactionReserveTokens"),
        Knob("compact", "compaction.enabled", "compaction.enabled", True, "true", "bool", lambda v, w: True,
             "Automatic compaction on or off; every work style relies on it (with it off the context grows "
             "until the provider refuses the request).",
             source="pi docs/settings.md (Compaction)"),
        Knob("protect", "compaction.keepRecentTokens", "compaction.keepRecentTokens", 20000, "20000", "int",
             lambda v, w: PI_KEEP_RECENT[v["keepLastAssistants"]],
             "How many tokens of the newest messages stay verbatim when pi compacts; the rest is summarised "
             "(20000, the default, keeps a few exchanges; 10000 keeps about the last one).",
             source="pi docs/settings.md (Compaction); core/compaction/compaction.ts findCutPoint"),
    ),
    no_knob={
        "clear": "pi has no pruning of old tool output (no TTL setting): it stays until compaction. "
                 "Start a new session (/new) between unrelated tasks, or /compact when a tool-heavy step is done.",
        "trim": "No setting: pi's tools cut their own output at 2000 lines or 50 KB (DEFAULT_MAX_LINES, "
                "DEFAULT_MAX_BYTES in core/tools/truncate.ts). Ask for filtered output (grep, head, tail, "
                "a line range) instead of whole files and logs.",
    },
    reload="pi reads settings.json when it starts: restart pi (running sessions keep the old values)",
)

CLAUDE = Agent(
    name="claude", label="Claude Code", files=("~/.claude/settings.json", ".claude/settings.json"), syntax="json",
    lock=None,
    knobs=(
        Knob("compact", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", None,
             "about 95% of the window (the effective window less a summary buffer)", "str-int", _pct,
             "The share of the window (1-100) at which Claude Code compacts on its own. Lower = compacts sooner "
             "(85 waits until nearly full; 75 compacts at 75%; 70 at 70%). It can only lower the built-in "
             "threshold; CLAUDE_CODE_AUTO_COMPACT_WINDOW (default: the model's window) is the window it applies to.",
             source="code.claude.com/docs/en/env-vars; the client's autocompact_state schema"),
        Knob("compact", "autoCompactEnabled", "autoCompactEnabled", True, "true", "bool", lambda v, w: True,
             "Automatic compaction on or off; every work style relies on it.",
             source="the client's settings schema (2.1.330) and global config default"),
        Knob("trim", "BASH_MAX_OUTPUT_LENGTH", "env.BASH_MAX_OUTPUT_LENGTH", 30000, "30000", "str-int",
             _cap(30000, per_token=False, as_str=True),
             "Characters of a Bash command's output Claude receives inline; longer output is cut "
             "(10000 trims medium outputs too; the default 30000 only large ones).",
             at_most=True, source="code.claude.com/docs/en/env-vars; the client: default 30000, max 150000"),
        Knob("trim", "MAX_MCP_OUTPUT_TOKENS", "env.MAX_MCP_OUTPUT_TOKENS", 25000, "25000", "str-int",
             _cap(25000, per_token=True, as_str=True),
             "Tokens of an MCP tool's result Claude receives; larger results are cut with a warning.",
             at_most=True, source="code.claude.com/docs/en/env-vars; the client: default 25000"),
        Knob("trim", "CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "env.CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", 25000,
             "25000", "str-int", _cap(25000, per_token=True, as_str=True),
             "Tokens a single Read may return; a larger read fails with a hint to read a line range, so the "
             "model reads big files in pieces instead of whole.",
             at_most=True, source="code.claude.com/docs/en/env-vars; the client: default 25000"),
    ),
    no_knob={
        "clear": "No setting clears old tool output after a pause. /clear between unrelated tasks; "
                 "run tool-heavy steps in subagents so their output never enters the main context.",
        "protect": "No setting for how much stays verbatim at compaction. Run /compact with instructions "
                   "naming what must survive (the current task, its files, open decisions).",
    },
    practices={s: ["Run tool-heavy work (test suites, multi-file audits, log digging) in subagents (the Task tool): "
                   "only their summary enters the main context."] for s in ("tool-heavy", "bursty", "mixed")},
    reload="Claude Code reads settings.json when a session starts: start or resume a session to use the new values",
)

CODEX = Agent(
    name="codex", label="Codex", files=("~/.codex/config.toml", ".codex/config.toml"), syntax="toml", lock=None,
    knobs=(
        Knob("compact", "model_auto_compact_token_limit", "model_auto_compact_token_limit", None,
             "90% of the model's context window", "int", _tokens_of_window,
             "The context size in tokens at which Codex compacts the history on its own. Lower = compacts "
             "sooner (set here to the work style's share of the session's window; Codex caps it at 90% of "
             "the window).",
             source="developers.openai.com/codex/config-reference; codex-rs protocol openai_models.rs"),
        Knob("trim", "tool_output_token_limit", "tool_output_token_limit", 10000,
             "10000 (the model's truncation policy for the GPT-5 Codex models)", "int",
             _cap(10000, per_token=True, as_str=False),
             "Tokens of each tool output kept in the history; longer output is truncated "
             "(2500 trims medium outputs too; 10000 only large ones).",
             at_most=True, source="developers.openai.com/codex/config-reference; codex models.json truncation_policy"),
    ),
    no_knob={
        "clear": "No setting clears old tool output after a pause. Start a new session between unrelated "
                 "tasks, or /compact when a tool-heavy step is done.",
        "protect": "No setting: Codex's compaction keeps recent user messages and summarises the rest. "
                   "Run /compact right after finishing a step so the summary records it.",
    },
    practices={"tool-heavy": ["Ask for filtered command output (rg, head, tail, a line range) instead of whole "
                              "files and logs."]},
    reload="Codex reads config.toml when it starts: restart codex to use the new values",
)

AGENTS = {a.name: a for a in (OPENCLAW, PI, CLAUDE, CODEX)}
AGENT_NAMES = tuple(AGENTS)


def agent(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        raise ConfigError(f"unknown agent {name!r} (choose from {', '.join(AGENTS)})") from None


# ------------------------------------------------------------------ which agent wrote a session

_OPENCLAW_PATH = re.compile(r"(^|/)\.(openclaw|clawdbot)/|/agents/[^/]+/sessions/")
_PI_PATH = re.compile(r"(^|/)\.pi/agent/sessions/")
_PI_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_[0-9a-fA-F-]{36}\.jsonl$")
# Session formats whose name is the agent's own (``codex``: the Codex rollout format module,
# ``ctxtool/formats/codex.py``, whose NAME is "codex"; a future format named after its agent
# needs no change here).
_FORMAT_AGENT = {"claude": "claude", "codex": "codex"}


def detect(format_name: str | None, path: str | None, openclaw_marks: int = 0) -> tuple[str, str]:
    """(agent, basis): the agent that wrote a session, from its format, its entries and its path."""
    if format_name in _FORMAT_AGENT:
        return _FORMAT_AGENT[format_name], f"{format_name} session format"
    if format_name in AGENTS and format_name != "pi":
        return format_name, f"{format_name} session format"
    p = os.path.abspath(path).replace(os.sep, "/") if path else ""
    if format_name == "pi":
        if openclaw_marks:
            return "openclaw", f"pi format with {openclaw_marks} OpenClaw entries (openclaw.* custom entries)"
        if _OPENCLAW_PATH.search(p):
            return "openclaw", "pi format in an OpenClaw sessions folder"
        if _PI_PATH.search(p) or _PI_NAME.match(os.path.basename(p)):
            return "pi", "pi format, pi's own session file name" if _PI_NAME.match(os.path.basename(p)) \
                else "pi format in pi's sessions folder"
        return "openclaw", "pi format with no mark of either agent: OpenClaw assumed (use --agent pi for pi)"
    return "openclaw", f"{format_name or 'unknown'} format names no agent: OpenClaw assumed (use --agent)"


def choose(detected: list[tuple[str, str]]) -> tuple[str, str]:
    """One agent for several sessions: the one most sessions were written by."""
    if not detected:
        return "openclaw", "no session: OpenClaw assumed"
    counts: dict = {}
    for name, _basis in detected:
        counts[name] = counts.get(name, 0) + 1
    order = list(AGENTS)
    best = sorted(counts, key=lambda n: (-counts[n], order.index(n)))[0]
    if len(detected) == 1:
        return best, detected[0][1]
    if len(counts) == 1:
        return best, f"all {len(detected)} sessions: {detected[0][1]}"
    others = ", ".join(f"{AGENTS[n].label} {c}" for n, c in counts.items() if n != best)
    return best, f"{counts[best]} of {len(detected)} sessions are {AGENTS[best].label}'s (also {others}); use --agent"
