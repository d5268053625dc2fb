"""Configuration advice: the four settings, the recommended values per work style,
comparison with an OpenClaw config, a JSON patch (RFC 6902) and a safe apply.

Applying edits the config text minimally (only the changed values, or new keys
inserted beside their siblings), so JSON5 comments, key order and formatting are
kept; the result is parsed again and checked before anything is written. The write
goes through the commit protocol (``ctxtool.commit``) under ``<config>.lock``: a config
that changed in any way since it was read (grown, shrunk, replaced, edited) is refused;
the backup (``<file>.bak-<pid>-<ms>``, the file as read) is made only when the write
happens, and a rollback note (``<backup>.rollback.txt``) is written beside it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time

from . import commit
from . import config as cfgmod
from .errors import ConfigError, CtxError, WriteError
from .jsonl import atomic_write
from .lock import DEFAULT_TIMEOUT, SessionLocks

SETTINGS = (
    {
        "key": "reserveTokensFloor",
        "path": cfgmod.COMPACTION_PATH + ".reserveTokensFloor",
        "title": "When to compress the conversation",
        "practice": "How full the context gets before the agent summarises and compresses the history. "
                    "Higher = compresses sooner: a shorter summary and more room left afterwards "
                    "(30000 waits until nearly full; 50000 compresses at ~75%; 60000 at ~70%).",
    },
    {
        "key": "ttl",
        "path": cfgmod.PRUNING_PATH + ".ttl",
        "title": "How quickly old tool output is cleared",
        "practice": "After this long without a request, old command output, file reads and search results are cleared "
                    "from the context. Shorter = more aggressive cleanup (5m rarely fires during active work; "
                    "1m clears fast, but files may need re-reading).",
    },
    {
        "key": "keepLastAssistants",
        "path": cfgmod.PRUNING_PATH + ".keepLastAssistants",
        "title": "How many recent exchanges are protected",
        "practice": "When old tool output is cleared, this many of the most recent exchanges stay untouched "
                    "(3 keeps more history visible; 1 protects only the last exchange).",
    },
    {
        "key": "minPrunableToolChars",
        "path": cfgmod.PRUNING_PATH + ".minPrunableToolChars",
        "title": "Minimum size before tool output is trimmed",
        "practice": "Only tool output larger than this (characters) can be cleared. Lower = more gets cleaned up "
                    "(50000 only very large outputs; 10000 medium ones too).",
    },
)
KEYS = tuple(s["key"] for s in SETTINGS)
# The skill's table of recommended combinations by work style.
RECOMMENDED = {
    "tool-heavy": {"reserveTokensFloor": 60000, "ttl": "1m", "keepLastAssistants": 1, "minPrunableToolChars": 10000},
    "conversational": {"reserveTokensFloor": 30000, "ttl": "5m", "keepLastAssistants": 3, "minPrunableToolChars": 50000},
    "mixed": {"reserveTokensFloor": 50000, "ttl": "2m", "keepLastAssistants": 2, "minPrunableToolChars": 10000},
    "bursty": {"reserveTokensFloor": 50000, "ttl": "2m", "keepLastAssistants": 1, "minPrunableToolChars": 10000},
}
# Long sessions (> 2 h): one step up this ladder of compression triggers.
FLOOR_LADDER = (30000, 50000, 60000)

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


def current_settings(cfg: dict | None) -> dict:
    """The four settings as configured (source ``config``) or OpenClaw's defaults (source ``default``)."""
    defaults = {
        "reserveTokensFloor": cfgmod.COMPACTION_DEFAULTS["reserveTokensFloor"],
        "ttl": cfgmod.PRUNING_DEFAULTS["ttl"],
        "keepLastAssistants": cfgmod.PRUNING_DEFAULTS["keepLastAssistants"],
        "minPrunableToolChars": cfgmod.PRUNING_DEFAULTS["minPrunableToolChars"],
    }
    out = {}
    for s in SETTINGS:
        v = cfgmod.get(cfg, s["path"], _MISSING) if cfg is not None else _MISSING
        if v is _MISSING:
            out[s["key"]] = {"value": defaults[s["key"]], "source": "default"}
        else:
            _check_value(s["key"], v, s["path"])
            out[s["key"]] = {"value": v, "source": "config"}
    return out


_MISSING = object()


def _check_value(key, v, path):
    if key == "ttl":
        try:
            cfgmod.duration_ms(v)
        except ConfigError as e:  # name the key: "invalid duration 'forever'" alone does not say where
            raise ConfigError(f"{path}: {e.reason}", path=e.path, line=e.line) from None
        return
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ConfigError(f"{path} must be a non-negative number, got {json.dumps(v)}")


def same_value(key: str, a, b) -> bool:
    if key == "ttl":
        try:
            return cfgmod.duration_ms(a) == cfgmod.duration_ms(b)
        except ConfigError:
            return False
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def compare(current: dict, rec: dict) -> dict:
    """``right``: settings already at the recommended value; ``change``: current -> recommended and why."""
    right, change = [], []
    for s in SETTINGS:
        k = s["key"]
        item = {"key": k, "path": s["path"], "title": s["title"], "practice": s["practice"],
                "current": current[k]["value"], "source": current[k]["source"],
                "recommended": rec["values"][k], "why": rec["why"][k]}
        (right if same_value(k, current[k]["value"], rec["values"][k]) else change).append(item)
    return {"right": right, "change": change}


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


def plan_apply(path: str, changes: list[dict]) -> dict:
    """Read the config and compute the new text; nothing is written. Raises ConfigError when not possible."""
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
    cfg = cfgmod.loads(text, path=path)
    new = edit_text(text, cfg, changes) if changes else text
    data = (b"\xef\xbb\xbf" if bom else b"") + new.encode("utf-8")
    try:  # what was read: the commit refuses a config that is not this file any more
        snap = commit.snapshot(path, len(raw), expect=(st.st_dev, st.st_ino), whole=True)
    except CtxError as e:
        raise ConfigError(e.reason, path=path) from None
    return {"path": os.path.abspath(path), "old": raw, "new": data, "comments": has_comments(text),
            "json5": _is_json5(text), "changes": changes, "snapshot": snap}


def _is_json5(text: str) -> bool:
    try:
        json.loads(text)
        return False
    except ValueError:
        return True


def _show(v) -> str:
    return json.dumps(v) if isinstance(v, str) else str(v)


def rollback_note(path: str, backup: str, changes: list[dict], when: str) -> str:
    lines = [
        f"ctxtool profile --apply: configuration changed at {when}",
        "",
        f"File:   {path}",
        f"Backup: {backup}",
        "        (a byte-identical copy of the file, taken before the change)",
        "",
        "Values changed:",
    ]
    for c in changes:
        src = " (was unset: OpenClaw default)" if c.get("source") == "default" else ""
        lines.append(f"  {c['path']}: {_show(c['current'])}{src} -> {_show(c['recommended'])}")
    lines += [
        "",
        "To roll back, restore the backup over the file:",
        f"  cp -p '{backup}' '{path}'",
        "then restart the OpenClaw gateway (or let it reload its config) so it reads the restored values.",
        "Or set only the values above back to what they were.",
        "",
    ]
    return "\n".join(lines)


def apply_config(plan: dict, *, lock_timeout: float = DEFAULT_TIMEOUT) -> dict:
    """Write a planned change under ``<config>.lock``: refused when the config changed since it
    was read; the backup is the file as read, made at the write; the rollback note follows."""
    path = plan["path"]
    commit.phase("planned", path)
    with SessionLocks(path, timeout=lock_timeout) as lock:
        notices = lock.notices + commit.clean_leftovers(path)
        done = commit.commit(plan["snapshot"], [plan["new"]], backup=True)
    backup = done.backup
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    note_path = backup + ".rollback.txt"
    note = rollback_note(path, backup, plan["changes"], when)
    try:
        atomic_write(note_path, [note.encode("utf-8")], mode=0o600)
    except WriteError as e:
        raise WriteError(f"the config was changed (backup {backup}) but the rollback note could not be written: {e.reason}",
                         path=path) from None
    return {"file": path, "backup": backup, "rollback_note": note_path, "mode": oct(os.stat(path).st_mode & 0o7777),
            "changed": [{"path": c["path"], "from": c["current"], "to": c["recommended"]} for c in plan["changes"]],
            "notices": notices + done.notices}
