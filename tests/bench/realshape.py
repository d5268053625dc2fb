"""Real-shape Claude Code sessions of any size, for the benchmarks (issue 13).

The lines come from files the real client wrote: ``fixtures/claude-recorded/*.jsonl`` (Claude
Code 2.1.330: attachments with ``rendered``, ``api-request*``, ``last-prompt``, ``queue-operation``,
``cost-state``, ... and user lines with ``toolUseResult`` copies) and ``fixtures/claude-shapes/*.jsonl``
(the older 2.1.x shapes: ``progress`` lines, ``file-history-snapshot``). A file is a run of *copies*
of these sessions, one after the other, each copy with its own ids (every uuid, message id, request
id and tool id rewritten, consistently within the copy), its timestamps moved on, its root linked
to the previous copy's leaf: one long conversation. Copies of the older shape get the progress
lines the real client wrote around their tool calls (hook and Bash progress), as many and as long
as needed to keep the file at the shares measured on real data (issue 13): progress lines 71% of
the lines and 39% of the bytes.

Deterministic: the same arguments give the same bytes.

    python tests/bench/realshape.py file OUT.jsonl --mb 500
    python tests/bench/realshape.py folder OUTDIR --mb 500 --files 165   # OUTDIR/projects/<cwd>/<session>.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDED = os.path.join(ROOT, "fixtures", "claude-recorded")
SHAPES = os.path.join(ROOT, "fixtures", "claude-shapes")

PROGRESS_LINES = 0.71  # share of the lines (issue 13, measured on real sessions)
PROGRESS_BYTES = 0.39  # share of the bytes
NEW_SHARE = 0.5  # copies of the 2.1.330 recordings; the rest are of the older shapes

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_IDS = re.compile(rf'(?P<uuid>{_UUID})|(?P<tool>\b(?:srvtoolu|toolu|msg|req)_[A-Za-z0-9_]+)'
                  r'|"timestamp":"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"|(?P<root>"parentUuid":null)')
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PREFIX = {"toolu": ("toolu_01", 22), "srvtoolu": ("srvtoolu_01", 20), "msg": ("msg_01", 24), "req": ("req_011C", 20)}
_SHELL = ("collected 214 items", "tests/test_cart.py ........................................ [ 18%]",
          "tests/test_checkout.py ..........F......................... [ 36%]", "src/app/models.py:41: DeprecationWarning: use utcnow",
          "  warnings.warn(", "Compiling shop v0.3.1 (/home/dev/shop)", "   Finished dev [unoptimized + debuginfo] target(s) in 4.21s",
          "npm warn deprecated inflight@1.0.6", "added 812 packages, and audited 813 packages in 9s", "ok  \tgithub.com/dev/shop/cart\t0.412s")


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _iso(t: float) -> str:
    s = int(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{int((t - s) * 1000):03d}Z"


@dataclass
class Template:
    name: str
    shape: str  # "new" (2.1.330 recording) or "old" (2.1.x shapes)
    parts: list  # per line: list of str pieces and ("uuid"|"tool"|"ts"|"root"|"session", value) slots
    kinds: list  # per line: the line's type
    leaf: str | None  # original uuid of the conversation's last line
    holders: dict = field(default_factory=dict)  # line no -> (obj, [tool ids]) of assistant lines with tool calls
    span: float = 0.0  # seconds from the first timestamp to the last


def load_templates() -> list[Template]:
    out = []
    for folder, shape in ((RECORDED, "new"), (SHAPES, "old")):
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".jsonl") or ".agent-" in name:
                continue
            t = _template(os.path.join(folder, name), shape)
            if t is not None:
                out.append(t)
    return out


def _template(path: str, shape: str) -> Template | None:
    with open(path, encoding="utf-8") as f:
        texts = [x.rstrip("\n") for x in f if x.strip()]
    objs = [json.loads(x) for x in texts]
    if all(o.get("isSidechain") for o in objs if "uuid" in o):
        return None  # a subagent's own file: not a main conversation
    sessions = {o["sessionId"] for o in objs if isinstance(o.get("sessionId"), str)}
    stamps = [_epoch(o["timestamp"]) for o in objs if isinstance(o.get("timestamp"), str)]
    t0 = min(stamps)
    root = next(i for i, o in enumerate(objs) if "parentUuid" in o and o["parentUuid"] is None and not o.get("isSidechain")
                and o.get("type") != "system")
    leaf = None
    holders = {}
    for i, o in enumerate(objs):
        if "uuid" in o and not o.get("isSidechain") and o.get("type") != "progress":
            leaf = o["uuid"]
        m = o.get("message")
        if o.get("type") == "assistant" and isinstance(m, dict) and isinstance(m.get("content"), list):
            ids = [b["id"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
            if ids:
                holders[i] = (o, ids)
    parts = []
    for i, text in enumerate(texts):
        line, pos = [], 0
        for m in _IDS.finditer(text):
            line.append(text[pos:m.start()])
            pos = m.end()
            if m.group("uuid"):
                u = m.group("uuid")
                line.append(("session", u) if u in sessions else ("uuid", u))
            elif m.group("tool"):
                line.append(("tool", m.group("tool")))
            elif m.group("ts"):
                line.append(("ts", _epoch(m.group("ts")) - t0))
            elif i == root:
                line.append(("root", None))
            else:
                line.append(m.group(0))
        line.append(text[pos:])
        parts.append(line)
    return Template(os.path.basename(path), shape, parts, [o.get("type") for o in objs], leaf, holders,
                    max(stamps) - t0)


class Writer:
    """Writes copies of the templates into one file, keeping the progress shares."""

    def __init__(self, f, templates: list[Template], rng: random.Random, session: str, start: float, key: str):
        self.f, self.templates, self.rng, self.session, self.clock, self.key = f, templates, rng, session, start, key
        self.new = [t for t in templates if t.shape == "new"]
        self.old = [t for t in templates if t.shape == "old"]
        self.leaf: str | None = None
        self.copies = 0
        self.bytes = self.lines = 0
        self.np_lines = self.np_bytes = self.p_lines = self.p_bytes = 0
        self.types: dict = {}

    def _digest(self, orig: str) -> bytes:
        return hashlib.blake2b(f"{self.key}/{self.copies}/{orig}".encode(), digest_size=20).digest()

    def _uuid(self, orig: str) -> str:
        h = self._digest(orig).hex()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def _tool(self, orig: str) -> str:
        prefix, n = _PREFIX[orig.split("_", 1)[0]]
        d = int.from_bytes(self._digest(orig), "big")
        chars = []
        for _ in range(n):
            d, r = divmod(d, 62)
            chars.append(_B62[r])
        return prefix + "".join(chars)

    def copy(self) -> None:
        t = self.rng.choice(self.new if self.rng.random() < NEW_SHARE else self.old)
        ids: dict = {}
        start = self.clock
        rendered = []
        for no, line in enumerate(t.parts):
            out = []
            for p in line:
                if type(p) is str:
                    out.append(p)
                    continue
                kind, v = p
                if kind == "uuid" or kind == "tool":
                    new = ids.get(v)
                    if new is None:
                        new = ids[v] = self._uuid(v) if kind == "uuid" else self._tool(v)
                    out.append(new)
                elif kind == "session":
                    out.append(self.session)
                elif kind == "ts":
                    out.append(f'"timestamp":"{_iso(start + v)}"')
                else:  # the copy's root hangs under the previous copy's leaf
                    out.append(f'"parentUuid":"{self.leaf}"' if self.leaf else '"parentUuid":null')
            text = ("".join(out) + "\n").encode()
            rendered.append(text)
            kind = t.kinds[no]
            self.types[kind] = self.types.get(kind, 0) + 1
            if kind == "progress":
                self.p_lines += 1
                self.p_bytes += len(text)
            else:
                self.np_lines += 1
                self.np_bytes += len(text)
        progress = self._progress(t, ids, start) if t.holders else {}
        for no, text in enumerate(rendered):
            self.f.write(text)
            for p in progress.get(no, ()):
                self.f.write(p)
        self.lines += len(rendered) + sum(len(v) for v in progress.values())
        self.bytes += sum(map(len, rendered)) + sum(len(p) for v in progress.values() for p in v)
        self.leaf = ids.get(t.leaf, self.leaf)
        self.clock = start + t.span + self.rng.uniform(20, 900)
        self.copies += 1

    def _progress(self, t: Template, ids: dict, start: float) -> dict:
        """Progress lines for this copy's tool calls: what keeps the file at the measured shares."""
        want_lines = math.ceil(self.np_lines * PROGRESS_LINES / (1 - PROGRESS_LINES)) - self.p_lines
        want_bytes = self.np_bytes * PROGRESS_BYTES / (1 - PROGRESS_BYTES) - self.p_bytes
        if want_lines <= 0:
            return {}
        slots = [(no, tid) for no, (_, tids) in sorted(t.holders.items()) for tid in tids]
        out: dict = {}
        for k in range(want_lines):
            no, tid = slots[k * len(slots) // want_lines]
            holder = t.holders[no][0]
            left = want_lines - k
            size = max(0.0, want_bytes) / left
            line = self._progress_line(holder, ids, tid, start, size)
            out.setdefault(no, []).append(line)
            want_bytes -= len(line)
            self.p_lines += 1
            self.p_bytes += len(line)
            self.types["progress"] = self.types.get("progress", 0) + 1
        return out

    def _progress_line(self, holder: dict, ids: dict, tid: str, start: float, size: float) -> bytes:
        rng = self.rng
        env = {"parentUuid": ids[holder["uuid"]], "isSidechain": False}
        for k in ("userType", "cwd"):
            if k in holder:
                env[k] = holder[k]
        env["sessionId"] = self.session
        for k in ("version", "gitBranch", "slug"):
            if k in holder:
                env[k] = holder[k]
        tool = ids.get(tid) or self._tool(tid)
        env["type"] = "progress"
        base = 560
        if size < base + 120 or rng.random() < 0.25:
            env["data"] = {"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": "PreToolUse:Bash",
                           "command": "~/.claude/hooks/guard.sh"}
        else:
            n = max(0, int((size - base) * rng.uniform(0.6, 1.4)) // 2)
            text = []
            total = 0
            while total < n:
                s = rng.choice(_SHELL)
                text.append(s)
                total += len(s) + 1
            full = "\n".join(text)[:n]
            env["data"] = {"type": "bash_progress", "output": full[-n // 4:] if n > 3 else full, "fullOutput": full,
                           "elapsedTimeSeconds": rng.randint(1, 120), "totalLines": len(text)}
        env["toolUseID"] = tool
        env["parentToolUseID"] = tool
        env["uuid"] = self._uuid(f"progress/{self.p_lines}")
        env["timestamp"] = _iso(start + rng.uniform(0.1, 5))
        return (json.dumps(env, ensure_ascii=False, separators=(",", ":")) + "\n").encode()

    def stats(self) -> dict:
        return {"bytes": self.bytes, "lines": self.lines, "copies": self.copies,
                "progress_line_share": round(self.p_lines / self.lines, 4) if self.lines else 0.0,
                "progress_byte_share": round(self.p_bytes / self.bytes, 4) if self.bytes else 0.0,
                "types": dict(sorted(self.types.items(), key=lambda kv: -kv[1]))}


def _session_id(key: str) -> str:
    h = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def write_file(path: str, target_bytes: int, seed: int = 1, templates: list[Template] | None = None) -> dict:
    """One session of at least ``target_bytes`` (whole copies), written to ``path``."""
    templates = templates or load_templates()
    rng = random.Random(seed)
    key = f"{seed}/{os.path.basename(path)}"
    session = _session_id(key)
    start = 1_780_000_000 + rng.randrange(0, 30 * 86400)
    with open(path, "wb", buffering=1 << 20) as f:
        w = Writer(f, templates, rng, session, start, key)
        while w.bytes < target_bytes:
            w.copy()
    return w.stats()


PROJECTS = ("-home-dev-shop", "-home-dev-api", "-home-dev-infra", "-home-dev-docs", "-home-dev-ml", "-home-dev-cli")


def folder_sizes(total: int, files: int, seed: int) -> list[int]:
    """File sizes with the spread of a real projects folder: log-normal (many small sessions, a few large)."""
    rng = random.Random(seed)
    raw = [rng.lognormvariate(0, 1.3) for _ in range(files)]
    scale = total / sum(raw)
    return [max(20_000, int(x * scale)) for x in raw]


def write_folder(root: str, total_bytes: int, files: int = 165, seed: int = 1) -> dict:
    """``root/projects/<cwd>/<session>.jsonl``: ``files`` sessions of about ``total_bytes`` together."""
    templates = load_templates()
    sizes = folder_sizes(total_bytes, files, seed)
    rng = random.Random(seed)
    out = []
    for i, size in enumerate(sizes):
        project = os.path.join(root, "projects", PROJECTS[rng.randrange(len(PROJECTS))])
        os.makedirs(project, exist_ok=True)
        sid = _session_id(f"folder/{seed}/{i}")
        path = os.path.join(project, f"{sid}.jsonl")
        st = write_file(path, size, seed=seed * 100_003 + i, templates=templates)
        out.append({"path": os.path.relpath(path, root), **{k: st[k] for k in ("bytes", "lines", "progress_line_share")}})
    total = sum(x["bytes"] for x in out)
    lines = sum(x["lines"] for x in out)
    return {"files": len(out), "bytes": total, "lines": lines,
            "largest_bytes": max(x["bytes"] for x in out), "smallest_bytes": min(x["bytes"] for x in out),
            "median_bytes": sorted(x["bytes"] for x in out)[len(out) // 2]}


def measure_shares(path: str) -> dict:
    """Line and byte shares of each line type in a file (what the issue measured on real data)."""
    lines: dict = {}
    sizes: dict = {}
    n = total = tur = 0
    with open(path, "rb") as f:
        for raw in f:
            o = json.loads(raw)
            t = o.get("type")
            lines[t] = lines.get(t, 0) + 1
            sizes[t] = sizes.get(t, 0) + len(raw)
            n += 1
            total += len(raw)
            if t == "user" and "toolUseResult" in o:
                tur += 1
    return {"lines": n, "bytes": total, "avg_line_bytes": round(total / n) if n else 0,
            "user_lines_with_toolUseResult": tur,
            "line_share": {k: round(v / n, 4) for k, v in sorted(lines.items(), key=lambda kv: -kv[1])},
            "byte_share": {k: round(v / total, 4) for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("file", "folder", "shares"))
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--files", type=int, default=165)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.what == "file":
        st = write_file(a.out, int(a.mb * 1_000_000), a.seed)
    elif a.what == "folder":
        st = write_folder(a.out, int(a.mb * 1_000_000), a.files, a.seed)
    else:
        st = measure_shares(a.out)
    print(json.dumps(st, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
