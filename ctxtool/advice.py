"""Configuration advice: the skill's four settings, the recommended values per work style,
mapped to each agent's own knobs (``ctxtool.agents``); comparison with the agent's own file,
a JSON patch (RFC 6902) and a safe apply.

Applying edits the file minimally: JSON and JSON5 (OpenClaw, pi, Claude Code) by changing
only the values or inserting new keys beside their siblings, so comments, key order and
formatting are kept; TOML (Codex) through ``tomlkit``, which keeps comments and layout. The
result is parsed again and checked before anything is written. The write goes through the
commit protocol (``ctxtool.commit``) under the agent's own lock where it has one (OpenClaw:
``<file>.lock``; pi: proper-lockfile's ``<file>.lock`` directory): a file that changed in any
way since it was read is refused; the backup (``<file>.bak-<pid>-<ms>``, the file as read) is
made only when the write happens, and a rollback note (``<backup>.rollback.txt``) is written
beside it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import time

from . import agents as agentsmod
from . import commit
from . import config as cfgmod
from .errors import ConfigError, CtxError, WriteError
from .jsonl import atomic_write
from .lock import DEFAULT_TIMEOUT, DirLock, SessionLocks

# The skill's four settings, as OpenClaw names them (the table below is in their terms).
SETTINGS = tuple({"key": k.key, "path": k.path, "title": agentsmod.INTENTS[k.intent], "practice": k.practice}
                 for k in agentsmod.OPENCLAW.knobs)
KEYS = tuple(s["key"] for s in SETTINGS)
SKILL_KEY = {v: k for k, v in agentsmod.INTENT_OF.items()}  # intent -> the skill's setting
# The skill's table of recommended combinations by work style.
RECOMMENDED = {
    "tool-heavy": {"reserveTokensFloor": 60000, "ttl": "1m", "keepLastAssistants": 1, "minPrunableToolChars": 10000},
    "conversational": {"reserveTokensFloor": 30000, "ttl": "5m", "keepLastAssistants": 3, "minPrunableToolChars": 50000},
    "mixed": {"reserveTokensFloor": 50000, "ttl": "2m", "keepLastAssistants": 2, "minPrunableToolChars": 10000},
    "bursty": {"reserveTokensFloor": 50000, "ttl": "2m", "keepLastAssistants": 1, "minPrunableToolChars": 10000},
}
# Long sessions (> 2 h): one step up this ladder of compression triggers.
FLOOR_LADDER = (30000, 50000, 60000)
ENABLED_WHY = "automatic compaction must stay on: every work style relies on it"

WHY = {
    "tool-heavy": {
        "reserveTokensFloor": "tool output fills the window fast; compressing early leaves room for the next batch of results",
        "ttl": "most of the context is old tool output; clearing it after a minute of quiet keeps the window lean",
        "keepLastAssistants": "only the exchange in progress needs its tool output verbatim",
        "minPrunableToolChars": "medium-sized outputs (10k+ chars) add up quickly in tool-heavy work",
    },
    "conversational": {
        "reserveTokensFloor": "conversation grows slowly; waiting longer keeps more of the discussion verbatim",
        "ttl": "there is little tool output to clear; a long TTL avoids re-reading files between messages",
        "keepLastAssistants": "recent exchanges carry the thread of the discussion",
        "minPrunableToolChars": "only the rare very large output is worth trimming",
    },
    "mixed": {
        "reserveTokensFloor": "a balance: compress at ~75% so a code/test round still fits afterwards",
        "ttl": "clears test and build output between discussion rounds without firing mid-task",
        "keepLastAssistants": "protects the current step and the one before it",
        "minPrunableToolChars": "test and build logs are medium-sized; trim them too",
    },
    "bursty": {
        "reserveTokensFloor": "an incident burst can add a lot at once; compress at ~75% to absorb it",
        "ttl": "quiet periods are long; clear the previous burst's output soon after it ends",
        "keepLastAssistants": "each burst is self-contained; only the latest exchange needs full output",
        "minPrunableToolChars": "monitoring output is medium-sized and repetitive",
    },
}


def recommend(pattern: str, long_session: bool = False, duration_s: float | None = None) -> dict:
    if pattern not in RECOMMENDED:
        raise ConfigError(f"unknown work style {pattern!r}")
    values = dict(RECOMMENDED[pattern])
    why = dict(WHY[pattern])
    adjustments = []
    if long_session:
        floor = values["reserveTokensFloor"]
        higher = next((x for x in FLOOR_LADDER if x > floor), floor)
        hours = f"{duration_s / 3600:.1f} h" if duration_s else "more than 2 h"
        if higher != floor:
            values["reserveTokensFloor"] = higher
            why["reserveTokensFloor"] = (f"long session ({hours} > 2 h): a higher compression trigger than the table's {floor} "
                                        f"survives multiple rounds of compaction")
            adjustments.append({"key": "reserveTokensFloor", "from": floor, "to": higher, "reason": "long session (> 2 h)"})
        else:
            why["reserveTokensFloor"] += f"; already the highest trigger for a long session ({hours})"
    return {"pattern": pattern, "long_session": bool(long_session), "values": values, "why": why, "adjustments": adjustments}


def _agent(name_or_agent) -> agentsmod.Agent:
    return name_or_agent if isinstance(name_or_agent, agentsmod.Agent) else agentsmod.agent(name_or_agent)


def current_settings(cfg: dict | None, agent="openclaw") -> dict:
    """Each knob of ``agent`` as configured (source ``config``) or the agent's default (source ``default``)."""
    a = _agent(agent)
    out = {}
    for k in a.knobs:
        v = cfgmod.get(cfg, k.path, _MISSING) if cfg is not None else _MISSING
        if v is _MISSING:
            out[k.key] = {"value": k.default, "source": "default", "default": k.default_text}
        else:
            _check_value(k.kind, v, k.path)
            out[k.key] = {"value": v, "source": "config", "default": k.default_text}
    return out


_MISSING = object()


def _check_value(kind, v, path):
    if kind == "duration":
        try:
            cfgmod.duration_ms(v)
        except ConfigError as e:  # name the key: "invalid duration 'forever'" alone does not say where
            raise ConfigError(f"{path}: {e.reason}", path=e.path, line=e.line) from None
        return
    if kind == "bool":
        if not isinstance(v, bool):
            raise ConfigError(f"{path} must be true or false, got {json.dumps(v)}")
        return
    if kind == "str-int" and isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise ConfigError(f"{path} must be a number (written as a string), got {json.dumps(v)}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ConfigError(f"{path} must be a non-negative number, got {json.dumps(v)}")


def same_value(kind: str, a, b) -> bool:
    if kind in ("ttl", "duration"):
        try:
            return cfgmod.duration_ms(a) == cfgmod.duration_ms(b)
        except ConfigError:
            return False
    if kind == "bool" or isinstance(a, bool) or isinstance(b, bool):
        return a is b
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def _at_most(a, b) -> bool:
    try:
        return float(a) <= float(b)
    except (TypeError, ValueError):
        return False


def compare(current: dict, rec: dict, agent="openclaw", window: int | None = None) -> dict:
    """``right``: knobs already at the recommended value; ``change``: current -> recommended and why;
    ``practices``: what serves an intent the agent has no knob for, and the work style's habits."""
    a = _agent(agent)
    right, change = [], []
    for k in a.knobs:
        cur = current[k.key]
        want = k.recommend(rec["values"], window)
        why = ENABLED_WHY if k.kind == "bool" else rec["why"][SKILL_KEY[k.intent]]
        item = {"intent": k.intent, "key": k.key, "path": k.path, "title": agentsmod.INTENTS[k.intent],
                "practice": k.practice, "default": k.default_text, "current": cur["value"], "source": cur["source"],
                "recommended": want, "why": why}
        ok = cur["value"] is not None and (same_value(k.kind, cur["value"], want)
                                           or (k.at_most and _at_most(cur["value"], want)))
        (right if ok else change).append(item)
    practices = [{"intent": i, "title": agentsmod.INTENTS[i], "practice": p} for i, p in a.no_knob.items()]
    practices += [{"intent": None, "title": "Practice", "practice": p} for p in a.practices.get(rec["pattern"], [])]
    return {"right": right, "change": change, "practices": practices}


# ------------------------------------------------------------------ JSON patch


def _pointer(parts) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _plan(cfg: dict, changes: list[dict]) -> list[tuple]:
    """[(op, parts, value, current)]: replace an existing member, or add at the first missing container."""
    grouped: dict = {}
    order = []
    for c in changes:
        parts = c["path"].split(".")
        node = cfg
        depth = 0
        while depth < len(parts) - 1 and isinstance(node, dict) and isinstance(node.get(parts[depth]), dict):
            node = node[parts[depth]]
            depth += 1
        if depth < len(parts) - 1 and isinstance(node, dict) and parts[depth] in node:
            raise ConfigError(f"{'.'.join(parts[:depth + 1])} is not an object; cannot set {c['path']}")
        if depth == len(parts) - 1 and parts[-1] in node:
            order.append(("replace", tuple(parts), c["recommended"], node[parts[-1]]))
            continue
        anchor = tuple(parts[:depth + 1])
        rest = parts[depth + 1:]
        if anchor not in grouped:
            grouped[anchor] = {} if rest else None
            order.append(("add", anchor, None, None))
        if rest:
            d = grouped[anchor]
            for p in rest[:-1]:
                d = d.setdefault(p, {})
            d[rest[-1]] = c["recommended"]
        else:
            grouped[anchor] = c["recommended"]
    out = []
    for op, parts, value, cur in order:
        if op == "add":
            value = grouped[parts]
        out.append((op, parts, value, cur))
    return out


def make_patch(cfg: dict, changes: list[dict]) -> list[dict]:
    """RFC 6902 operations that turn ``cfg`` into the recommended settings (``test`` guards each replace)."""
    ops = []
    for op, parts, value, cur in _plan(cfg, changes):
        if op == "replace":
            ops.append({"op": "test", "path": _pointer(parts), "value": cur})
        ops.append({"op": op, "path": _pointer(parts), "value": value})
    return ops


def apply_patch(doc: dict, ops: list[dict]) -> dict:
    """Apply ``add``/``replace``/``test`` operations to a copy of ``doc``."""
    out = copy.deepcopy(doc)
    for o in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in o["path"].split("/")[1:]]
        node = out
        for p in parts[:-1]:
            if not isinstance(node, dict) or p not in node:
                raise ConfigError(f"patch path {o['path']} does not exist")
            node = node[p]
        last = parts[-1]
        if o["op"] == "test":
            if node.get(last, _MISSING) != o["value"]:
                raise ConfigError(f"patch test failed at {o['path']}: the config changed since the patch was made")
        elif o["op"] == "replace":
            if last not in node:
                raise ConfigError(f"patch path {o['path']} does not exist")
            node[last] = copy.deepcopy(o["value"])
        elif o["op"] == "add":
            node[last] = copy.deepcopy(o["value"])
        else:
            raise ConfigError(f"unsupported patch op {o['op']!r}")
    return out


# ------------------------------------------------------------------ minimal text edit (JSON and JSON5)

_TOK = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
    r"""|(?P<p>[{}\[\]:,])|(?P<atom>[^\s{}\[\]:,"'/]+)|(?P<bad>.)""",
    re.S,
)
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def has_comments(text: str) -> bool:
    return any(m.lastgroup in ("lc", "bc") for m in _TOK.finditer(text))


def _index(text: str):
    """Spans of every object member: path -> (key_start, value_start, value_end, key_quoted);
    objects: path -> {open, close, members: [keys], trailing_comma_end}."""
    toks = [(m.lastgroup, m.start(), m.end(), m.group()) for m in _TOK.finditer(text) if m.lastgroup not in ("ws", "lc", "bc")]
    members: dict = {}
    objects: dict = {}
    pos = 0

    def value(path):
        nonlocal pos
        kind, s, e, txt = toks[pos]
        if txt == "{":
            return obj(path)
        if txt == "[":
            depth = 0
            while True:
                t = toks[pos][3]
                if toks[pos][0] == "p" and t in "[{":
                    depth += 1
                elif toks[pos][0] == "p" and t in "]}":
                    depth -= 1
                    if depth == 0:
                        pos += 1
                        return s, toks[pos - 1][2]
                pos += 1
        if kind in ("p", "bad"):
            raise ValueError(f"unexpected {txt!r}")
        pos += 1
        return s, e

    def obj(path):
        nonlocal pos
        open_s = toks[pos][1]
        pos += 1
        keys = []
        trailing = None
        while not (toks[pos][0] == "p" and toks[pos][3] == "}"):
            kind, ks, ke, txt = toks[pos]
            if kind == "str":
                key = json.loads(txt) if txt[0] == '"' else txt[1:-1]
            elif kind == "atom":
                key = txt
            else:
                raise ValueError(f"unexpected {txt!r}")
            pos += 1
            if toks[pos][3] != ":":
                raise ValueError("expected ':'")
            pos += 1
            vs, ve = value(path + (key,))
            members[path + (key,)] = (ks, vs, ve, kind == "str")
            keys.append(key)
            trailing = None
            if toks[pos][0] == "p" and toks[pos][3] == ",":
                trailing = toks[pos][2]
                pos += 1
        objects[path] = {"open": open_s, "close": toks[pos][1], "keys": keys, "trailing": trailing}
        pos += 1
        return open_s, toks[pos - 1][2]

    while pos < len(toks) and toks[pos][3] != "{":
        pos += 1
    if pos >= len(toks):
        raise ValueError("no top-level object")
    value(())
    return members, objects


def _line_indent(text: str, pos: int) -> str | None:
    start = text.rfind("\n", 0, pos) + 1
    pre = text[start:pos]
    return pre if pre.strip() == "" else None


def _fmt_value(v, indent: str, unit: str, nl: str) -> str:
    if isinstance(v, dict):
        body = json.dumps(v, indent=unit, ensure_ascii=False)
        return body.replace("\n", nl + indent)
    return json.dumps(v, ensure_ascii=False)


def edit_text(text: str, cfg: dict, changes: list[dict]) -> str:
    """The config text with ``changes`` applied by minimal edits; verified by parsing it again."""
    try:
        members, objects = _index(text)
    except (ValueError, IndexError) as e:
        raise ConfigError(f"cannot edit this config safely ({e}); use --write-patch and apply it yourself") from None
    nl = "\r\n" if "\r\n" in text else "\n"
    unit = "\t" if re.search(r"\n\t", text) else " " * (_min_indent(text) or 2)
    edits = []  # (start, end, replacement)
    adds: dict = {}  # parent path -> (indent, [member text])
    for op, parts, value, _cur in _plan(cfg, changes):
        if op == "replace":
            ks, vs, ve, _q = members[parts]
            edits.append((vs, ve, json.dumps(value, ensure_ascii=False)))
            continue
        parent = parts[:-1]
        key = parts[-1]
        o = objects[parent]
        quoted = all(m[3] for m in members.values())
        if o["keys"]:
            last = members[parent + (o["keys"][-1],)]
            quoted = last[3]
            ind = _line_indent(text, last[0])
        else:
            base = re.match(r"[ \t]*", text[text.rfind("\n", 0, o["open"]) + 1:])[0]
            ind = base + unit
        k = key if (not quoted and _IDENT.match(key)) else json.dumps(key, ensure_ascii=False)
        adds.setdefault(parent, (ind, []))[1].append(f"{k}: {_fmt_value(value, ind or '', unit, nl)}")
    for parent, (ind, ms) in adds.items():
        o = objects[parent]
        if not o["keys"]:
            base = ind[: -len(unit)]
            edits.append((o["open"] + 1, o["close"], nl + f",{nl}".join(ind + m for m in ms) + nl + base))
            continue
        lastv = members[parent + (o["keys"][-1],)][2]
        if ind is None:  # single-line object
            if o["trailing"] is not None:
                edits.append((o["trailing"], o["trailing"], "".join(f" {m}," for m in ms)))
            else:
                edits.append((lastv, lastv, "".join(f", {m}" for m in ms)))
        elif o["trailing"] is not None:
            edits.append((o["trailing"], o["trailing"], "".join(f"{nl}{ind}{m}," for m in ms)))
        else:
            edits.append((lastv, lastv, "".join(f",{nl}{ind}{m}" for m in ms)))
    out = text
    ordered = sorted(((s, e, i, rep) for i, (s, e, rep) in enumerate(edits)), reverse=True)
    for s, e, _i, rep in ordered:
        out = out[:s] + rep + out[e:]
    try:
        check = cfgmod.loads(out)
    except ConfigError:
        raise ConfigError("editing the config produced invalid JSON; nothing was written (use --write-patch)") from None
    for c in changes:
        if cfgmod.get(check, c["path"], _MISSING) != c["recommended"]:
            raise ConfigError(f"editing the config did not set {c['path']}; nothing was written (use --write-patch)")
    return out


def _min_indent(text: str) -> int:
    best = 0
    for m in re.finditer(r"\n( +)\S", text):
        n = len(m.group(1))
        if best == 0 or n < best:
            best = n
    return best


def edit_toml(text: str, changes: list[dict]) -> str:
    """The TOML text with ``changes`` applied through tomlkit (comments and layout kept);
    verified by parsing it again."""
    import tomlkit

    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as e:
        raise ConfigError(f"not valid TOML ({e})", line=getattr(e, "line", None)) from None
    for c in changes:
        parts = c["path"].split(".")
        node = doc
        for i, p in enumerate(parts[:-1]):
            if p not in node:
                node[p] = tomlkit.table()
            node = node[p]
            if not isinstance(node, dict):
                raise ConfigError(f"{'.'.join(parts[:i + 1])} is not a table; cannot set {c['path']}")
        node[parts[-1]] = c["recommended"]
    out = tomlkit.dumps(doc)
    check = cfgmod.loads_toml(out)
    for c in changes:
        if cfgmod.get(check, c["path"], _MISSING) != c["recommended"]:
            raise ConfigError(f"editing the config did not set {c['path']}; nothing was written (use --write-patch)")
    return out


def plan_apply(path: str, changes: list[dict], agent="openclaw") -> dict:
    """Read the agent's file and compute the new text; nothing is written. Raises ConfigError when not possible."""
    a = _agent(agent)
    commit.phase("before-read", path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
            st = os.fstat(f.fileno())
    except FileNotFoundError:
        raise ConfigError("no such config file", path=path) from None
    except OSError as e:
        raise ConfigError(f"cannot read config: {e.strerror or e}", path=path) from None
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw[3:].decode("utf-8") if bom else raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("config is not UTF-8", path=path) from None
    cfg = cfgmod.loads_for(a.syntax, text, path=path)
    with _in_file(path):
        if a.syntax == "toml":
            new = edit_toml(text, changes) if changes else text
        else:
            new = edit_text(text, cfg, changes) if changes else text
            if a.syntax == "json" and not _is_json5(text) and _is_json5(new):
                raise ConfigError(f"editing the config would leave JSON that {a.label} cannot read; nothing was "
                                  "written (use --write-patch)")
    data = (b"\xef\xbb\xbf" if bom else b"") + new.encode("utf-8")
    try:  # what was read: the commit refuses a config that is not this file any more
        snap = commit.snapshot(path, len(raw), expect=(st.st_dev, st.st_ino), whole=True)
    except CtxError as e:
        raise ConfigError(e.reason, path=path) from None
    return {"path": os.path.abspath(path), "agent": a.name, "old": raw, "new": data,
            "comments": has_comments(text) if a.syntax != "toml" else "#" in text,
            "json5": a.syntax != "toml" and _is_json5(text), "syntax": a.syntax, "changes": changes, "snapshot": snap}


@contextlib.contextmanager
def _in_file(path):
    try:
        yield
    except ConfigError as e:
        if e.path is not None:
            raise
        raise ConfigError(e.reason, path=path, line=e.line) from None


def _is_json5(text: str) -> bool:
    try:
        json.loads(text)
        return False
    except ValueError:
        return True


def _show(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "unset"
    return json.dumps(v) if isinstance(v, str) else str(v)


def rollback_note(path: str, backup: str, changes: list[dict], when: str, agent="openclaw") -> str:
    a = _agent(agent)
    lines = [
        f"ctxtool profile --apply: {a.label} configuration changed at {when}",
        "",
        f"File:   {path}",
        f"Backup: {backup}",
        "        (a byte-identical copy of the file, taken before the change)",
        "",
        "Values changed:",
    ]
    for c in changes:
        src = f" (was unset: {a.label} default, {c.get('default')})" if c.get("source") == "default" else ""
        lines.append(f"  {c['path']}: {_show(c['current'])}{src} -> {_show(c['recommended'])}")
    lines += [
        "",
        "To roll back, restore the backup over the file:",
        f"  cp -p '{backup}' '{path}'",
        f"then {a.reload}.",
        "Or set only the values above back to what they were.",
        "",
    ]
    return "\n".join(lines)


def agent_lock(path: str, agent, timeout: float = DEFAULT_TIMEOUT):
    """The lock the agent itself takes on its settings file (a no-op when it takes none)."""
    a = _agent(agent)
    if a.lock == "openclaw":
        return SessionLocks(path, timeout=timeout)
    if a.lock == "proper-lockfile":
        return DirLock(path, timeout=timeout)
    return _NoLock()


class _NoLock:
    """Claude Code and Codex take no lock on their settings: the commit's checks and the atomic
    rename are what guard the file."""

    notices: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def apply_config(plan: dict, *, lock_timeout: float = DEFAULT_TIMEOUT) -> dict:
    """Write a planned change under the agent's lock: refused when the file changed since it
    was read; the backup is the file as read, made at the write; the rollback note follows."""
    path = plan["path"]
    agent = plan.get("agent", "openclaw")
    commit.phase("planned", path)
    with agent_lock(path, agent, timeout=lock_timeout) as lock:
        notices = list(lock.notices) + commit.clean_leftovers(path)
        done = commit.commit(plan["snapshot"], [plan["new"]], backup=True)
    backup = done.backup
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    note_path = backup + ".rollback.txt"
    note = rollback_note(path, backup, plan["changes"], when, agent)
    try:
        atomic_write(note_path, [note.encode("utf-8")], mode=0o600)
    except WriteError as e:
        raise WriteError(f"the config was changed (backup {backup}) but the rollback note could not be written: {e.reason}",
                         path=path) from None
    return {"file": path, "agent": agent, "backup": backup, "rollback_note": note_path,
            "mode": oct(os.stat(path).st_mode & 0o7777),
            "changed": [{"path": c["path"], "from": c["current"], "to": c["recommended"]} for c in plan["changes"]],
            "notices": notices + done.notices}
