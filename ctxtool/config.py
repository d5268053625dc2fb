"""Agents' settings files: read JSON, JSON5 or TOML, find settings, know OpenClaw's defaults.

OpenClaw's config (``openclaw.json``) is JSON5: comments, trailing commas,
unquoted keys and single-quoted strings are allowed. ``load`` accepts both;
``get`` walks dotted paths such as ``agents.defaults.contextPruning``. pi and
Claude Code keep JSON ``settings.json`` files; Codex keeps TOML (``config.toml``,
read with ``tomlkit``: ``loads_toml``). ``load_for(path, syntax)`` reads any of them.
"""

from __future__ import annotations

import json
import re

from .errors import ConfigError

# Defaults, from OpenClaw's settings (reference §4.2 and §5).
PRUNING_DEFAULTS = {
    "mode": "cache-ttl",
    "ttl": "5m",
    "keepLastAssistants": 3,
    "softTrimRatio": 0.3,
    "hardClearRatio": 0.5,
    "minPrunableToolChars": 50_000,
    "tools": {"allow": [], "deny": []},
    "softTrim": {"maxChars": 4000, "headChars": 1500, "tailChars": 1500},
    "hardClear": {"enabled": True, "placeholder": "[Old tool result content cleared]"},
}
COMPACTION_DEFAULTS = {
    "mode": "safeguard",
    "reserveTokens": 16_384,
    "reserveTokensFloor": 20_000,
    "keepRecentTokens": 20_000,
    "maxHistoryShare": 0.5,
    "recentTurnsPreserve": 3,
}
PRUNING_PATH = "agents.defaults.contextPruning"
COMPACTION_PATH = "agents.defaults.compaction"

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|(?P<dq>"(?:[^"\\]|\\.)*")|(?P<sq>'(?:[^'\\]|\\.)*')"""
    r"""|(?P<num>[+-]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Infinity|NaN))(?![A-Za-z0-9_$])"""
    r"""|(?P<id>[A-Za-z_$][A-Za-z0-9_$]*)|(?P<other>.)""",
    re.S,
)


def _json_number(tok: str) -> str:
    """A JSON5 number as strict JSON: hex, leading/trailing dot, explicit plus, Infinity."""
    sign = "-" if tok.startswith("-") else ""
    body = tok.lstrip("+-")
    if body == "NaN":
        raise ValueError("NaN is not representable in JSON")
    if body == "Infinity":
        return sign + "1e999"
    if body[:2] in ("0x", "0X"):
        return sign + str(int(body, 16))
    if body.startswith("."):
        body = "0" + body
    body = re.sub(r"\.(?=[eE]|$)", "", body)  # "5." and "5.e3"
    return sign + body


def json5_to_json(text: str) -> str:
    """Translate the JSON5 that OpenClaw accepts into strict JSON (comments, unquoted keys,
    single quotes, trailing commas, JSON5 numbers). String contents are never touched."""
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        tok = m.group()
        if kind in ("lc", "bc", "ws"):
            out.append("\n" * tok.count("\n") or " ")  # keep line numbers for error messages
            continue
        if kind == "sq":
            body = tok[1:-1].replace('\\"', '"').replace("\\'", "'").replace('"', '\\"')
            out.append(f'"{body}"')
        elif kind == "num":
            out.append(_json_number(tok))
        elif kind == "id":
            out.append(tok if tok in ("true", "false", "null") else json.dumps(tok))
        elif tok in "}]":
            j = len(out) - 1
            while j >= 0 and not out[j].strip():
                j -= 1
            if j >= 0 and out[j] == ",":
                out[j] = " "  # trailing comma
            out.append(tok)
        else:
            out.append(tok)
    return "".join(out)


def loads(text: str, *, path: str | None = None) -> dict:
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigError("not valid JSON or JSON5 (nested too deep to read)", path=path) from None
    except ValueError:
        try:
            data = json.loads(json5_to_json(text))
        except RecursionError:
            raise ConfigError("not valid JSON or JSON5 (nested too deep to read)", path=path) from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"not valid JSON or JSON5 ({e.msg})", path=path, line=e.lineno) from None
        except ValueError as e:
            raise ConfigError(f"not valid JSON or JSON5 ({e})", path=path) from None
    if not isinstance(data, dict):
        raise ConfigError("config must be a JSON object", path=path)
    return data


def load(path: str) -> dict:
    return load_for(path, "json5")


def loads_toml(text: str, *, path: str | None = None) -> dict:
    """A TOML document as plain data (tomlkit, the library that also edits it)."""
    import tomlkit

    try:
        return tomlkit.parse(text).unwrap()
    except RecursionError:
        raise ConfigError("not valid TOML (nested too deep to read)", path=path) from None
    except tomlkit.exceptions.ParseError as e:
        reason = str(e).split(" at line ")[0]
        raise ConfigError(f"not valid TOML ({reason})", path=path, line=getattr(e, "line", None)) from None


def loads_for(syntax: str, text: str, *, path: str | None = None) -> dict:
    """``text`` read as ``syntax`` (``toml``, else JSON/JSON5), with a hint when it is the other kind."""
    if syntax == "toml":
        try:
            return loads_toml(text, path=path)
        except ConfigError as e:
            if text.lstrip().startswith("{"):
                raise ConfigError(f"{e.reason}: this looks like JSON, but Codex reads TOML (config.toml); "
                                  "pass --agent for another agent", path=path, line=e.line) from None
            raise
    try:
        return loads(text, path=path)
    except ConfigError as e:
        if path and path.endswith(".toml"):
            raise ConfigError(f"{e.reason}: a .toml file is Codex's config; pass --agent codex", path=path,
                              line=e.line) from None
        raise


def load_for(path: str, syntax: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigError("no such config file", path=path) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"cannot read config: not UTF-8 text (byte {e.start})", path=path) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a config file", path=path) from None
    except OSError as e:
        raise ConfigError(f"cannot read config: {e.strerror or e}", path=path) from None
    return loads_for(syntax, text.lstrip("\ufeff"), path=path)


def get(cfg: dict, dotted: str, default=None):
    cur = cfg
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def merged(defaults: dict, overrides: dict | None) -> dict:
    """Defaults with overrides applied one level deep into nested dicts."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in defaults.items()}
    for k, v in (overrides or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = {**out[k], **v}
        else:
            out[k] = v
    return out


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


def duration_ms(value, *, default_unit: str = "m") -> int:
    """OpenClaw duration strings ("5m", "1h", "30s"; a bare number means minutes)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    m = _DURATION.match(str(value))
    if not m:
        raise ConfigError(f"invalid duration {value!r} (expected e.g. 30s, 5m, 1h)")
    n = float(m.group(1))
    unit = m.group(2) or default_unit
    return int(n * {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[unit])


# Work-style presets from the context-management skill's table (seed): when to
# compress (compaction.reserveTokensFloor) and the three contextPruning settings.
WORK_STYLE_PRESETS = {
    "tool-heavy": {"compaction": {"reserveTokensFloor": 60_000},
                   "contextPruning": {"ttl": "1m", "keepLastAssistants": 1, "minPrunableToolChars": 10_000}},
    "conversational": {"compaction": {"reserveTokensFloor": 30_000},
                       "contextPruning": {"ttl": "5m", "keepLastAssistants": 3, "minPrunableToolChars": 50_000}},
    "mixed": {"compaction": {"reserveTokensFloor": 50_000},
              "contextPruning": {"ttl": "2m", "keepLastAssistants": 2, "minPrunableToolChars": 10_000}},
    "bursty": {"compaction": {"reserveTokensFloor": 50_000},
               "contextPruning": {"ttl": "2m", "keepLastAssistants": 1, "minPrunableToolChars": 10_000}},
}


def pruning_preset(name: str) -> dict:
    """The contextPruning overrides of a work-style preset (tool-heavy, conversational, mixed, bursty)."""
    try:
        return dict(WORK_STYLE_PRESETS[name]["contextPruning"])
    except KeyError:
        raise ConfigError(f"unknown preset {name!r} (choose from {', '.join(WORK_STYLE_PRESETS)})") from None


def pruning_overrides(cfg: dict) -> dict:
    """``agents.defaults.contextPruning`` of an OpenClaw config (empty when absent)."""
    value = get(cfg, PRUNING_PATH, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{PRUNING_PATH} must be an object")
    return dict(value)
