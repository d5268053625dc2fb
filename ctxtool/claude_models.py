"""The model Claude Code resumes a session with, and what that model changes in the request (2.1.330).

**Which model.** Without ``--model`` (and without ``ANTHROPIC_MODEL`` or an ``ANTHROPIC_DEFAULT_*_MODEL``), the client
walks the resumed conversation back from its end and takes the first assistant line that is not ``isMeta``, whose
``message.model`` is a string other than ``<synthetic>``: its ``inPlaceOfModel`` where that is a string, else its
model. Only that line counts. A name the client does not restore (unknown, an alias, a model past its retirement date,
``claude-opus-4-0``/``4-1``, ``claude-mythos-5``) gives the default, ``claude-opus-5-5``, without looking further back.
A restored name is sent as written, lower-cased, ``[1m]`` left out. Lines before a compact boundary count (the client
keeps them loaded); a sidechain's and an abandoned branch's do not. Where no response names a model, or an
``ANTHROPIC_DEFAULT_*_MODEL`` turns the restore off, the settings' ``model`` is taken where one of the client's settings
files names it (``client_settings``; an alias resolved, any other name sent as written), else the default. The
settings' ``env`` is laid over the process's environment (``client_environment``): an ``ANTHROPIC_MODEL`` there is
the client's model whatever the file says.

**What it changes.** A model before ``claude-opus-4-8`` in the client's order (and every ``claude-3-`` model) takes no
system messages: the context the client renders for the system goes in the user turn as reminder text instead
(``view._claude_user_run``), and after tool results into the last result (``claude_merge``). The thinking of lines
another model wrote is dropped where the client is not talking to Anthropic's API directly (``ANTHROPIC_BASE_URL``
set to another host); on Anthropic's API the client keeps it by default (a served flag decides; not seen offline).

Judged with the real client (a helper's round of 2026-11-30: 22 names, `--model` and settings overrides, 16 fixtures
resumed as Sonnet 4.6 and as Opus 5.5; ``fixtures/claude-models``; the settings files, 2026-11-30, 66 cases:
``tests/test_claude_settings_model.py``). The retirement dates make the answer depend on the
day: ``claude-sonnet-4-5`` is not restored from 2026-11-30 on.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from typing import Iterable

from .formats.common import js_string
from .model import js_false

DEFAULT = "claude-opus-5-5"  # the client's default model (2.1.330, first party)
# the client's model order: a model before claude-opus-4-8 takes no system messages (the bundle's RA and _2e)
ORDER = ("claude-opus-4-0", "claude-sonnet-4-0", "claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5",
         "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8",
         "claude-mythos-5", "claude-fable-5", "claude-sonnet-5", "claude-opus-5", "claude-mythos-5-1", "claude-fable-5-1",
         "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-mythos-5-2", "claude-fable-5-2")
FIRST_WITH_SYSTEM = "claude-opus-4-8"
# the catalog's models and their first-party ids (a dated id names the same model)
CATALOG = {
    "claude-3-5-haiku": "claude-3-5-haiku-20241022", "claude-haiku-4-5": "claude-haiku-4-5-20251001",
    "claude-haiku-5-5": "claude-haiku-5-5", "claude-3-5-sonnet": "claude-3-5-sonnet-20241022",
    "claude-3-7-sonnet": "claude-3-7-sonnet-20250219", "claude-sonnet-4-0": "claude-sonnet-4-20250514",
    "claude-sonnet-4-5": "claude-sonnet-4-5-20250929", "claude-sonnet-4-6": "claude-sonnet-4-6",
    "claude-sonnet-5": "claude-sonnet-5", "claude-sonnet-5-5": "claude-sonnet-5-5",
    "claude-opus-4-0": "claude-opus-4-20250514", "claude-opus-4-1": "claude-opus-4-1-20250805",
    "claude-opus-4-5": "claude-opus-4-5-20251101", "claude-opus-4-6": "claude-opus-4-6", "claude-opus-4-7": "claude-opus-4-7",
    "claude-opus-4-8": "claude-opus-4-8", "claude-opus-5": "claude-opus-5", "claude-opus-5-5": "claude-opus-5-5",
    "claude-fable-5": "claude-fable-5", "claude-fable-5-1": "claude-fable-5-1", "claude-fable-5-2": "claude-fable-5-2",
    "claude-mythos-5": "claude-mythos-5", "claude-mythos-5-1": "claude-mythos-5-1", "claude-mythos-5-2": "claude-mythos-5-2",
}
# the catalog's models whose window is natively a million tokens (2.1.332's catalog, ``context.native_1m``)
NATIVE_1M = frozenset(("claude-haiku-5-5", "claude-sonnet-5", "claude-sonnet-5-5", "claude-opus-4-7", "claude-opus-4-8",
                       "claude-opus-5", "claude-opus-5-5", "claude-fable-5", "claude-fable-5-1", "claude-fable-5-2",
                       "claude-mythos-5", "claude-mythos-5-1", "claude-mythos-5-2"))
ALIASES = {"opus": "claude-opus-5-5", "sonnet": "claude-sonnet-5-5", "haiku": "claude-haiku-5-5",
           "fable": "claude-fable-5-2", "best": "claude-opus-5-5",
           "opusplan": "claude-sonnet-5-5"}  # (opusplan: Opus in plan mode only; a resumed turn is not in it, judged)
ALWAYS_RETIRED = frozenset(("claude-opus-4-0", "claude-opus-4-1"))  # remapped by the client on its first-party API
RETIRED_ON = {"claude-opus-4-0": datetime.date(2026, 6, 15), "claude-sonnet-4-5": datetime.date(2026, 11, 30),
              "claude-sonnet-4-0": datetime.date(2026, 6, 15), "claude-3-opus": datetime.date(2026, 1, 5),
              "claude-3-7-sonnet": datetime.date(2026, 2, 19), "claude-3-5-sonnet": datetime.date(2025, 10, 28),
              "claude-3-5-haiku": datetime.date(2026, 2, 19)}
NOT_ALLOWED = frozenset(("claude-mythos-5",))  # declined by the client (an access check, not read further)
SYNTHETIC = "<synthetic>"

_BY_ID = {**{m: m for m in CATALOG}, **{fp: m for m, fp in CATALOG.items()}}
_DATED = re.compile(r"-\d{8}$")


# every spelling of a catalog model the client finds inside a name (its id, its first-party id, that id undated),
# longest first: a provider's id holds one (``us.anthropic.claude-haiku-4-5-20251001-v1:0``, ``claude-sonnet-4-6@…``)
_SPELLINGS = sorted({(k, m) for m, fp in CATALOG.items() for k in (m, fp, _DATED.sub("", fp))},
                    key=lambda x: (-len(x[0]), x[0]))


def canonical(name: str) -> str:
    """The model a name stands for (the client's ``St``): lower case, no ``[1m]``, a dated id as its model, a
    provider's id (Bedrock, Vertex, an inference profile's ARN) as the catalog model it holds (judged with 8 ids)."""
    n = name.lower().replace("[1m]", "")
    if n in _BY_ID:
        return _BY_ID[n]
    return next((m for k, m in _SPELLINGS if k in n), n)


def native_1m(model: str) -> bool:
    """Whether ``model`` has a window of a million tokens in the client's catalog (its ``context.native_1m``)."""
    return canonical(model) in NATIVE_1M


def system_turns(model: str) -> bool:
    """Whether the client sends ``role: "system"`` messages to ``model`` (its ``Tw``, no overrides)."""
    c = canonical(model)
    if "claude-3-" in c:
        return False
    return not (c in ORDER and ORDER.index(c) < ORDER.index(FIRST_WITH_SYSTEM))


def declined(name: str, today: datetime.date) -> str | None:
    """Why the client does not restore ``name`` (None: it does)."""
    c = canonical(name)
    if c not in CATALOG:
        return "not a model the client knows"
    if c in NOT_ALLOWED:
        return "not offered by the client"
    if c in ALWAYS_RETIRED or (c in RETIRED_ON and today >= RETIRED_ON[c]):
        return "retired"
    return None


@dataclass(frozen=True)
class Resumed:
    model: str  # the request's model
    basis: str  # how it was chosen, for a person
    line: int | None = None  # the line whose model decided (None: none did)

    @property
    def system_turns(self) -> bool:
        return system_turns(self.model)


# the variables that name the model an alias stands for (the client's, where set: judged for opus, sonnet and haiku)
ALIAS_VARIABLES = {"opus": "ANTHROPIC_DEFAULT_OPUS_MODEL", "sonnet": "ANTHROPIC_DEFAULT_SONNET_MODEL",
                   "haiku": "ANTHROPIC_DEFAULT_HAIKU_MODEL", "fable": "ANTHROPIC_DEFAULT_FABLE_MODEL"}


def from_option(value: str, env=None) -> str:
    """A ``--model`` value as the client takes it: ``[1m]`` off, an alias resolved (through its
    ``ANTHROPIC_DEFAULT_*_MODEL`` in the client's environment ``env`` where that is set), a model it knows
    lower-cased."""
    v = value.strip().lower().replace("[1m]", "")
    variable = alias_variable(value, env)
    if variable is not None:
        return env[variable].strip()
    if v in ALIASES:
        return ALIASES[v]
    # (lower-cased where it names a model the client knows; another name is sent as written: "Zzz-Unknown", an env
    # value "[object Object]", judged)
    return v if canonical(v) in CATALOG else value.strip()


def alias_variable(value: str, env) -> str | None:
    """The ``ANTHROPIC_DEFAULT_*_MODEL`` of the client's environment ``env`` that names the model the alias ``value``
    stands for, where ``value`` is one and that variable is set (not white space alone); else None."""
    variable = ALIAS_VARIABLES.get(value.strip().lower().replace("[1m]", ""))
    return variable if variable is not None and env is not None and (env.get(variable) or "").strip() else None


def resume_model(newest_first: Iterable[tuple[int, dict]], *, override: str | None = None, default: str = DEFAULT,
                 today: datetime.date | None = None, override_from: str = "--model",
                 unnamed: tuple[str, str] | None = None) -> Resumed:
    """The model the client resumes with. ``newest_first``: the resumed conversation's assistant lines, newest first,
    as ``(line number, the line's object)`` (taken one by one until one decides). ``override``: the model the client is
    run with (``--model``; ``override_from`` says where it came from, for a person). ``unnamed``: ``(model, where it
    is set)`` when no response names a model (the settings' ``model``, ``ClientSettings.model``); else ``default``."""
    if override:
        m = from_option(override)
        return Resumed(m, f"{override_from} {override}")
    today = today or datetime.date.today()
    for no, obj in newest_first:
        msg = obj.get("message") if isinstance(obj, dict) else None
        model = msg.get("model") if isinstance(msg, dict) else None
        if not js_false(obj.get("isMeta")) or type(model) is not str or model == SYNTHETIC:
            continue
        name = obj.get("inPlaceOfModel") if type(obj.get("inPlaceOfModel")) is str else model
        why = declined(name, today)
        if why is None:
            return Resumed(name.lower().replace("[1m]", ""), f"the model of the last response (line {no})", no)
        return Resumed(default, f"the default: line {no}'s model {name!r} is {why}", no)
    if unnamed is not None:
        return Resumed(from_option(unnamed[0]), f"{unnamed[1]}: no response names a model")
    return Resumed(default, "the default: no response names a model")


def foreign(model, request: str) -> bool:
    """A line written by ``model`` whose thinking is another model's to the request's (the client's ``R5e``)."""
    if type(model) is not str:
        return True
    return model != SYNTHETIC and model != request and canonical(model) != canonical(request)



# the client's environment that chooses its model: ANTHROPIC_MODEL is its --model; any ANTHROPIC_DEFAULT_*_MODEL turns the
# restore off, and the default (the opus alias) is then ANTHROPIC_DEFAULT_OPUS_MODEL where set (judged, 3 variables)
DEFAULT_VARIABLES = ("ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                     "ANTHROPIC_DEFAULT_FABLE_MODEL")


def from_environment(env, unnamed: tuple[str, str] | None = None) -> tuple[str, str] | None:
    """``(model, what chose it)`` where the client's environment ``env`` chooses its model, else None. ``unnamed``: the
    settings' model (``ClientSettings.unnamed``), which the client takes where a variable turns the restore off."""
    if (env.get("ANTHROPIC_MODEL") or "").strip():  # (white space alone is as if not set: judged)
        return env["ANTHROPIC_MODEL"], "ANTHROPIC_MODEL"
    if any(env.get(k) for k in DEFAULT_VARIABLES):
        set_ = next(k for k in DEFAULT_VARIABLES if env.get(k))
        if unnamed is not None:
            return unnamed[0], f"{unnamed[1]} ({set_} turns the restore off)"
        if env.get("ANTHROPIC_DEFAULT_OPUS_MODEL"):
            return env["ANTHROPIC_DEFAULT_OPUS_MODEL"], "ANTHROPIC_DEFAULT_OPUS_MODEL"
        return DEFAULT, f"the default ({set_} turns the restore off)"
    return None


@dataclass(frozen=True)
class ClientSettings:
    """What the client's settings files say of its model: ``model`` (with ``model_source``, the file) where one of them
    names it, ``env``, their ``env`` blocks merged (each value as JavaScript's ``String()`` writes it: judged, ``5.5``,
    ``null``, ``[1]``, an object), which the client lays over its process environment."""
    model: str | None = None
    model_source: str | None = None
    env: dict = field(default_factory=dict)

    @property
    def unnamed(self) -> tuple[str, str] | None:
        """``resume_model``'s ``unnamed``: the settings' model, where it is a string the client takes (not empty)."""
        if type(self.model) is str and self.model:  # (white space alone: the client sends "", judged)
            return self.model, f"the settings' model ({self.model_source})"
        return None


# where an administrator's settings live (the client's managed settings: above every other file)
MANAGED_DIR = "/Library/Application Support/ClaudeCode" if sys.platform == "darwin" else "/etc/claude-code"


def settings_files(cwd: str | None, environ, managed: str | None = None) -> list[str]:
    """The client's settings files, lowest precedence first: the user's (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``),
    the project's (``.claude/settings.json``) and the local one (``.claude/settings.local.json``) in ``cwd``, the
    folder the session ran in, then the managed ones (``managed``, default ``MANAGED_DIR``: ``managed-settings.json``,
    then each ``managed-settings.d/*.json`` by name)."""
    home = environ.get("HOME") or os.path.expanduser("~")
    config = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    out = [os.path.join(config, "settings.json")]
    if cwd:
        out += [os.path.join(cwd, ".claude", "settings.json"), os.path.join(cwd, ".claude", "settings.local.json")]
    managed = MANAGED_DIR if managed is None else managed
    out.append(os.path.join(managed, "managed-settings.json"))
    drop_ins = os.path.join(managed, "managed-settings.d")
    try:
        names = sorted(n for n in os.listdir(drop_ins) if n.endswith(".json"))
    except (OSError, ValueError):
        names = []
    return out + [os.path.join(drop_ins, n) for n in names]


def client_settings(cwd: str | None, environ, managed: str | None = None) -> ClientSettings:
    """The client's settings for a session that ran in ``cwd``, its environment ``environ`` (judged with the real
    client, 2.1.330: a later file's ``model`` replaces an earlier one's, its ``env`` keys are laid over theirs; a file
    that is not a JSON object is passed by). ``managed``: as ``settings_files``."""
    model, source, env = None, None, {}
    for path in settings_files(cwd, environ, managed):
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # (a FIFO there would hold the open)
                continue
            with open(path, "rb") as f:
                data = json.loads(f.read())
        except (OSError, ValueError, RecursionError):  # (missing, unreadable, a NUL in a damaged file's cwd, not JSON,
            continue  # nested past Python's stack: the client passes each by)
        if not isinstance(data, dict) or ("model" in data and type(data["model"]) is not str) or (
                "env" in data and not isinstance(data["env"], dict)):
            continue  # (a file its schema refuses: the client passes it by whole, its env too; judged for these fields)
        if "model" in data:
            model, source = data["model"], path
        if "env" in data:
            env.update((k, js_string(v)) for k, v in data["env"].items())
    return ClientSettings(model, source, env)


def client_environment(environ, settings: ClientSettings) -> dict:
    """The client's environment: its process's, with its settings' ``env`` laid over it (a value there wins, judged
    with ``ANTHROPIC_MODEL`` set in both; an empty one is as if not set)."""
    return {**environ, **settings.env}


# the variables that send the client to another provider than Anthropic's API (its ``be``), where set to a true value
PROVIDER_VARIABLES = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CODE_USE_ANTHROPIC_AWS",
                      "CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD", "CLAUDE_CODE_USE_MANTLE", "CLAUDE_CODE_USE_VERTEX",
                      "CLAUDE_CODE_USE_GATEWAY")


def first_party(env) -> bool:
    """Whether the client in environment ``env`` talks to Anthropic's API itself (its ``hDe``: no other provider, and
    no ``ANTHROPIC_BASE_URL`` of another host; 2.1.332): its cap on a request's media bytes is then lower
    (``claude_media``)."""
    if any(env_true(env.get(k)) for k in PROVIDER_VARIABLES):
        return False
    return not another_host(env.get("ANTHROPIC_BASE_URL"))


def env_true(value) -> bool:
    """An environment value the client takes for true (its ``De``)."""
    return type(value) is str and value.strip().lower() in ("1", "true", "yes", "on")


def another_host(base_url: str | None) -> bool:
    """The client talks to another host than Anthropic's API (its ``ANTHROPIC_BASE_URL``): it then drops the thinking
    other models wrote (``foreign``)."""
    if not base_url:
        return False
    from urllib.parse import urlsplit

    try:
        host = urlsplit(base_url.strip()).hostname
    except ValueError:
        return True
    return host != "api.anthropic.com"
