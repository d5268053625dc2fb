"""What an agent puts in front of every request: its context files and its own limits on them.

``discover`` finds the files an agent loads (from a workspace directory or explicit
files), ``assemble`` applies that agent's limits exactly as the agent does and
returns plain data: per file its size, what was kept, what was cut (line ranges)
and why, totals against each limit and the share of the context window; the text
each file contributes (``injected``) is what ``--show`` prints.

Agents (reference: the seed documents and each agent's published code):

* ``openclaw``: the workspace bootstrap files (``AGENTS.md``, ``SOUL.md``,
  ``IDENTITY.md``, ``USER.md``, ``BOOTSTRAP.md``, ``MEMORY.md`` in OpenClaw
  2026.9), ``buildBootstrapContextFiles``: ``bootstrapMaxChars`` per file (20,000),
  ``bootstrapTotalMaxChars`` in total (60,000), USER.md capped at 4,000, trimmed
  75% head / 25% tail around its marker, AGENTS.md with a policy digest. Lengths
  are UTF-16 code units. ``TOOLS.md``, ``HEARTBEAT.md`` (GoClaw and older OpenClaw
  load them) and ``memory/*.md`` are reported as not injected.
* ``claude``: Claude Code's instruction files (managed, user, each directory from
  the filesystem root down to the project: ``CLAUDE.md``, ``.claude/CLAUDE.md``,
  ``.claude/rules/*.md``, ``CLAUDE.local.md``) and their ``@path`` imports (five
  levels, each file once). Nothing is cut; files over Claude Code's own warning
  limits (40,000 chars per file, 120,000 in total for a 200K window) are flagged.
* ``codex``: Codex's ``AGENTS.md`` chain (``AGENTS.override.md``, ``AGENTS.md`` or
  a fallback name per directory from the git root down to the workspace) read up to
  ``project_doc_max_bytes`` (32 KiB) in total; the global ``~/.codex/AGENTS.md``.
* ``aceclaw``: AceClaw's memory tiers with their priorities (Soul 100 and Managed
  Policy 90 never cut), ``SystemPromptBudget``: 20,000 chars per tier, 150,000 in
  total, or ``forContextWindow``; cut 70% head / 20% tail around its marker,
  lowest priority first.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import orjson

from . import utf16
from .errors import ConfigError, InputError
from .tokens import heuristic_chars_tokens
from .window import DEFAULT_WINDOW

AGENTS = ("openclaw", "claude", "codex", "aceclaw")

# ------------------------------------------------------------------ OpenClaw (2026.9.6, src/agents/embedded-agent-helpers/bootstrap.ts)
OPENCLAW_VERSION = "2026.9.6"
OC_MAX_CHARS = 20_000
OC_TOTAL_MAX_CHARS = 60_000
OC_USER_MAX_CHARS = 4_000
OC_MIN_FILE_BUDGET = 64
OC_HEAD, OC_TAIL = 0.75, 0.25
OC_MIN_TRIMMED = 16
OC_AGENTS_HEAD, OC_AGENTS_TAIL, OC_AGENTS_DIGEST = 0.45, 0.15, 0.35
OC_DIGEST_LINE_MAX = 240
# In prompt order (WORKSPACE_BOOTSTRAP_FILENAMES). A missing file is injected as "[MISSING] Expected at:"
# except USER.md and MEMORY.md; BOOTSTRAP.md is dropped once the workspace's setup is complete.
OC_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "MEMORY.md")
OC_MISSING_MARKED = ("AGENTS.md", "SOUL.md", "IDENTITY.md")
OC_NOT_INJECTED = {
    "TOOLS.md": "not injected by OpenClaw 2026.9 (`openclaw doctor --fix` merges it into AGENTS.md); GoClaw and older OpenClaw load it",
    "HEARTBEAT.md": "not injected by OpenClaw 2026.9 (`openclaw doctor --fix` moves it to cron scratch); GoClaw and older OpenClaw load it",
}
OC_MEMORY_DIR_NOTE = "memory/*.md: read on demand by the memory tools (and once by the startup prelude), not with every request"
OC_SEED_NOTE = ("the OpenClaw seed (003) quotes ~5,000 per file and ~20,000 in total, an older release; "
                f"OpenClaw {OPENCLAW_VERSION} uses 20,000 and 60,000 (USER.md 4,000)")

# ------------------------------------------------------------------ Claude Code (2.1.x)
CLAUDE_IMPORT_DEPTH = 5  # files at depth 0-4 are read; an import at depth 5 is not
CLAUDE_FILE_WARN = 40_000  # max(40,000, 5% of the window x 4 chars/token)
CLAUDE_TOTAL_WARN = 120_000
CLAUDE_MAX_BYTES = 4_194_304  # larger files are skipped
CLAUDE_HEADER = ("Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
                 "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.")
CLAUDE_LABELS = {
    "Managed": " (organization-managed policy instructions)",
    "User": " (user's private global instructions for all projects)",
    "Project": " (project instructions, checked into the codebase)",
    "Local": " (user's private project instructions, not checked in)",
}
CLAUDE_TEXT_EXT = frozenset(
    ".md .txt .text .json .yaml .yml .toml .xml .csv .html .htm .css .scss .sass .less .js .ts .tsx .jsx .mjs .cjs "
    ".mts .cts .py .pyi .pyw .rb .erb .rake .go .rs .java .kt .kts .scala .c .cpp .cc .cxx .h .hpp .hxx .cs .swift "
    ".sh .bash .zsh .fish .ps1 .bat .cmd .env .ini .cfg .conf .config .properties .sql .graphql .gql .proto .vue "
    ".svelte .astro .ejs .hbs .pug .jade .php .pl .pm .lua .r .R .dart .ex .exs .erl .hrl .clj .cljs .cljc .edn .hs "
    ".lhs .elm .ml .mli .f .f90 .f95 .for .cmake .make .makefile .gradle .sbt .rst .adoc .asciidoc .org .tex .latex "
    ".lock .log .diff .patch".split())
CLAUDE_MANAGED = "/etc/claude-code/CLAUDE.md"

# ------------------------------------------------------------------ Codex (codex-rs core/src/project_doc.rs)
CODEX_MAX_BYTES = 32 * 1024
CODEX_NAMES = ("AGENTS.override.md", "AGENTS.md")
CODEX_SEPARATOR = "\n\n--- project-doc ---\n\n"

# ------------------------------------------------------------------ AceClaw (seed 000; SystemPromptBudget, TierTruncator)
ACE_PER_TIER = 20_000
ACE_TOTAL = 150_000
ACE_MIN = 1_000
ACE_PROTECTED_MIN = 90
ACE_SHARE = 0.25
ACE_CHARS_PER_TOKEN = 4
ACE_MARKER = "\n\n<!-- [TRUNCATED] Original: {n} chars, showing first {h} + last {t} chars -->\n\n"
# (tier, priority, protected): the file tiers of MemoryTierLoader, in load order.
ACE_TIERS = {
    "soul": ("Soul", 100, True),
    "policy": ("Managed Policy", 90, True),
    "workspace": ("Workspace Memory", 80, False),
    "user": ("User Memory", 70, False),
    "auto": ("Auto-Memory", 60, False),
    "markdown": ("Markdown Memory", 55, False),
    "journal": ("Daily Journal", 50, False),
}


@dataclass
class Source:
    """One file (or tier) the agent loads, before its limits apply."""

    name: str
    path: str
    content: str | None  # None: missing or not read
    kind: str = ""  # openclaw: bootstrap; claude: Managed/User/Project/Local; codex: global/project; aceclaw: tier key
    priority: int | None = None
    protected: bool = False
    parent: str | None = None  # the file that imported it (Claude Code)
    depth: int = 0
    status: str | None = None  # decided before the limits: not-loaded, on-demand, cycle, depth-limit, missing, skipped
    note: str = ""
    raw: bytes | None = None  # Codex reads bytes
    line_offset: int = 0  # lines removed before the content (frontmatter) for line numbers


@dataclass
class Discovery:
    agent: str
    root: str | None
    sources: list[Source] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ================================================================== reading files


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InputError("is a directory, not a context file", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=path) from None
    if b"\x00" in data[:8192]:
        raise InputError("binary file, not a context file", path=path)
    return data.decode("utf-8", "replace")


def _is_file(path: str) -> bool:
    return os.path.isfile(path)


# ================================================================== agent detection


def detect_agent(root: str) -> str | None:
    """The agent a workspace directory belongs to, from the files present; None: nothing recognised."""
    has = lambda *p: os.path.exists(os.path.join(root, *p))  # noqa: E731
    if has(".aceclaw") or has("ACECLAW.md"):
        return "aceclaw"
    if has("CLAUDE.md") or has(".claude") or has("CLAUDE.local.md"):
        return "claude"
    if any(has(n) for n in ("SOUL.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md", "MEMORY.md", "TOOLS.md")) or has("memory"):
        return "openclaw"
    if has("AGENTS.md") or has("AGENTS.override.md") or has(".codex"):
        return "codex"
    return None


def detect_agent_files(paths: list[str]) -> str | None:
    names = {os.path.basename(p) for p in paths}
    if names & {"ACECLAW.md", "managed-policy.md"}:
        return "aceclaw"
    if names & {"CLAUDE.md", "CLAUDE.local.md"}:
        return "claude"
    if names & (set(OC_FILES) | set(OC_NOT_INJECTED)) - {"AGENTS.md"}:
        return "openclaw"
    if names & {"AGENTS.md", "AGENTS.override.md"}:
        return "codex"
    return None


# ================================================================== discovery


def discover(agent: str | None, targets: list[str], *, home: str | None = None, settings: dict | None = None) -> Discovery:
    """The files ``agent`` loads for a workspace directory, or the explicit files given."""
    settings = settings or {}
    home = home if home is not None else os.path.expanduser("~")
    if not targets:
        targets = ["."]
    dirs = [t for t in targets if os.path.isdir(t)]
    files = [t for t in targets if not os.path.isdir(t)]
    if dirs and (files or len(dirs) > 1):
        raise ConfigError("give one workspace directory, or files only")
    for f in files:
        if not os.path.exists(f):
            raise InputError("no such file", path=f)
        if _session_like(f):
            raise InputError("a session transcript, not a context file: budget sizes the files an agent loads (a "
                             "workspace folder, or files such as CLAUDE.md, AGENTS.md, SOUL.md); to compare them with "
                             "a session, give it with --session", path=f)
    if dirs:
        root = os.path.abspath(dirs[0])
        agent = agent or detect_agent(root)
        if agent is None:
            raise InputError("no context files found (AGENTS.md, CLAUDE.md, SOUL.md, ACECLAW.md ...); "
                             "name the agent with --agent", path=dirs[0])
        return {"openclaw": _openclaw_workspace, "claude": _claude_workspace, "codex": _codex_workspace,
                "aceclaw": _aceclaw_workspace}[agent](root, home, settings)
    agent = agent or detect_agent_files(files)
    if agent is None:
        raise InputError("cannot tell which agent loads these files; name it with --agent", path=files[0])
    return _explicit(agent, [os.path.abspath(f) for f in files], home, settings)


def _session_like(path: str) -> bool:
    """Whether ``path`` is a session transcript (JSON lines: its name ends in ``.jsonl``, or its first line is a JSON
    object), which a user may pass where a context file is asked for: an agent's context files are text or Markdown."""
    if path.lower().endswith(".jsonl"):
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 16).strip()
    except OSError:
        return False  # (read, and reported, with the other files)
    if not (first.startswith(b"{") and first.endswith(b"}")):
        return False
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


def _explicit(agent: str, files: list[str], home: str, settings: dict) -> Discovery:
    d = Discovery(agent, None)
    for p in files:
        name = os.path.basename(p)
        if agent == "claude":
            _claude_file(d, p, _claude_kind(p, home), settings, set(), 0, None, home)
            continue
        content = _read_text(p)
        if agent == "codex":
            with open(p, "rb") as f:
                raw = f.read()
            d.sources.append(Source(name, p, content, "project", raw=raw))
        elif agent == "aceclaw":
            key = _ace_kind(p, home)
            tier, prio, prot = ACE_TIERS[key]
            d.sources.append(Source(tier, p, content, key, prio, prot))
        else:
            d.sources.append(Source(name, p, content, "bootstrap"))
    if agent == "aceclaw":
        d.sources.sort(key=lambda s: -s.priority)
    return d


# ------------------------------------------------------------------ openclaw


def _openclaw_workspace(root: str, home: str, settings: dict) -> Discovery:
    d = Discovery("openclaw", root)
    for name in OC_FILES:
        p = os.path.join(root, name)
        content = _read_text(p) if _is_file(p) else None
        if content is None:
            if name in OC_MISSING_MARKED:
                d.sources.append(Source(name, p, None, "bootstrap", status="missing",
                                        note="missing: OpenClaw injects \"[MISSING] Expected at: <path>\" instead"))
            continue
        note = "dropped once the workspace's setup is complete" if name == "BOOTSTRAP.md" else ""
        d.sources.append(Source(name, p, content, "bootstrap", note=note))
    for name, why in OC_NOT_INJECTED.items():
        p = os.path.join(root, name)
        if _is_file(p):
            d.sources.append(Source(name, p, _read_text(p), "bootstrap", status="not-loaded", note=why))
    mem = os.path.join(root, "memory")
    if os.path.isdir(mem):
        for name in sorted(os.listdir(mem)):
            p = os.path.join(mem, name)
            if name.endswith(".md") and _is_file(p):
                d.sources.append(Source(f"memory/{name}", p, _read_text(p), "memory", status="on-demand",
                                        note="daily memory: read on demand, not with every request"))
    d.notes.append(OC_SEED_NOTE)
    return d


# ------------------------------------------------------------------ claude code


def _claude_kind(path: str, home: str) -> str:
    if os.path.abspath(path) == os.path.abspath(os.path.join(home, ".claude", "CLAUDE.md")):
        return "User"
    if os.path.basename(path) == "CLAUDE.local.md":
        return "Local"
    return "Project"


_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_IMPORT = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODESPAN = re.compile(r"(`+)(?:.+?)\1", re.S)  # (what _blank_code_spans does, in linear time)
_COMMENT = re.compile(r"<!--[\s\S]*?-->")  # (what _uncommented does, in linear time)


def _blank_code_spans(line: str) -> str:
    """``_CODESPAN.sub`` with each match made spaces, in linear time, where the pattern took cubic time on a long run
    of backticks (169 s on 30,000, found by a review). At a backtick with ``r`` more in its run (itself included) the
    pattern takes the longest ``n`` whose closing run of ``n`` follows at least one character later: in its own run
    where ``2n + 1 <= r``, else at the first later run at least ``n`` long (so ``n`` is the larger of ``(r - 1) // 2``
    and ``min(r, the longest later run)``), the closing at the earliest place; with none, none after it either."""
    if line.count("`") < 2:
        return line
    runs = [(m.start(), m.end() - m.start()) for m in re.finditer("`+", line)]
    longest_after = [0] * (len(runs) + 1)  # the longest run after each
    for k in range(len(runs) - 1, -1, -1):
        longest_after[k] = max(runs[k][1], longest_after[k + 1])
    out, last, k = [], 0, 0
    p = runs[0][0]
    while k < len(runs):
        start, size = runs[k]
        p = max(p, start)
        r = start + size - p
        if r <= 0:
            k += 1
            continue
        n = max((r - 1) // 2, min(r, longest_after[k + 1]))
        if n < 1:
            break
        if 2 * n + 1 <= r:
            end = p + 2 * n + 1
        else:
            j = k + 1
            while runs[j][1] < n:
                j += 1
            end = runs[j][0] + n
            k = j
        out.append(line[last:p])
        out.append(" " * (end - p))
        last = p = end
    out.append(line[last:])
    return "".join(out)


def _uncommented(text: str) -> str:
    """``_COMMENT.sub("", text)`` in linear time (the pattern is tried from every "<!--" to the end when none closes)."""
    out, last = [], 0
    while (at := text.find("<!--", last)) >= 0:
        close = text.find("-->", at + 4)
        if close < 0:
            break
        out.append(text[last:at])
        last = close + 3
    out.append(text[last:])
    return "".join(out)


def claude_content(raw: str) -> tuple[str, list[str] | None, int]:
    """Claude Code's view of an instruction file: frontmatter removed (its ``paths:`` globs returned),
    block-level HTML comments removed; (content, paths, lines removed at the top)."""
    paths = None
    skipped = 0
    m = _FRONTMATTER.match(raw)
    if m:
        fm = m.group(1)
        paths = _frontmatter_paths(fm)
        skipped = raw.count("\n", 0, m.end())
        raw = raw[m.end():]
    if "<!--" in raw:
        raw = _strip_block_comments(raw)
    return raw, paths, skipped


def _frontmatter_paths(fm: str) -> list[str] | None:
    lines = fm.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        m = re.match(r"^paths\s*:\s*(.*)$", line)
        if not m:
            continue
        rest = m.group(1).strip()
        if rest.startswith("["):
            out = [x.strip().strip("'\"") for x in rest.strip("[]").split(",") if x.strip()]
        elif rest:
            out = [x.strip().strip("'\"") for x in rest.split(",") if x.strip()]
        else:
            for nxt in lines[i + 1:]:
                mm = re.match(r"^\s*-\s*(.+)$", nxt)
                if not mm:
                    break
                out.append(mm.group(1).strip().strip("'\""))
    out = [p[:-3] if p.endswith("/**") else p for p in out]
    out = [p for p in out if p]
    if not out or all(p == "**" for p in out):
        return None
    return out


def _strip_block_comments(raw: str) -> str:
    out, in_fence, i = [], None, 0
    lines = raw.split("\n")
    while i < len(lines):
        line = lines[i]
        f = _FENCE.match(line)
        if in_fence:
            out.append(line)
            if f and f.group(1)[0] == in_fence[0] and len(f.group(1)) >= len(in_fence):
                in_fence = None
            i += 1
            continue
        if f:
            in_fence = f.group(1)
            out.append(line)
            i += 1
            continue
        if line.lstrip().startswith("<!--"):
            block = [line]
            j = i
            while "-->" not in block[-1] and j + 1 < len(lines):  # ("-->" holds no newline: within one of the lines)
                j += 1
                block.append(lines[j])
            rest = _uncommented("\n".join(block))
            if rest.strip():
                out.append(rest)
            i = j + 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def claude_imports(content: str, base_dir: str, home: str) -> list[str]:
    """``@path`` imports outside code blocks and code spans, resolved against the importing file's directory."""
    found: list[str] = []
    in_fence = None
    for line in content.split("\n"):
        f = _FENCE.match(line)
        if in_fence:
            if f and f.group(1)[0] == in_fence[0] and len(f.group(1)) >= len(in_fence):
                in_fence = None
            continue
        if f:
            in_fence = f.group(1)
            continue
        if line.startswith("    ") or line.startswith("\t"):
            continue  # indented code block
        if "@" not in line:
            continue
        line = _blank_code_spans(line)
        for m in _IMPORT.finditer(line):
            p = m.group(1)
            if "#" in p:
                p = p[:p.index("#")]
            p = p.replace("\\ ", " ")
            if not p:
                continue
            if not (p.startswith("./") or p.startswith("~/") or (p.startswith("/") and p != "/")
                    or (not p.startswith("@") and not re.match(r"^[#%^&*()]+", p) and re.match(r"^[a-zA-Z0-9._-]", p))):
                continue
            if p.startswith("~/"):
                full = os.path.join(home, p[2:])
            else:
                full = os.path.join(base_dir, p)
            full = os.path.normpath(full)
            if full not in found:
                found.append(full)
    return found


def _claude_file(d: Discovery, path: str, kind: str, settings: dict, seen: set, depth: int, parent: str | None,
                 home: str, label: str | None = None) -> None:
    max_depth = settings.get("importDepth", CLAUDE_IMPORT_DEPTH)
    key = os.path.realpath(path)
    name = label or (_label(path, d.root) if d.root else path)
    if depth >= max_depth:
        d.sources.append(Source(name, path, None, kind, parent=parent, depth=depth, status="depth-limit",
                                note=f"not loaded: imports stop at depth {max_depth}"))
        return
    if key in seen:
        if parent is not None:
            d.sources.append(Source(name, path, None, kind, parent=parent, depth=depth, status="cycle",
                                    note="already loaded (import cycle or repeated import): not loaded again"))
        return
    if not _is_file(path):
        if parent is not None:
            there = os.path.exists(path)  # a FIFO, a device, a directory: there, but no file to load
            d.sources.append(Source(name, path, None, kind, parent=parent, depth=depth, status="skipped" if there else "missing",
                                    note="not a regular file: not loaded" if there else "imported file not found"))
        return
    ext = os.path.splitext(path)[1]
    if parent is not None and ext and ext.lower() not in CLAUDE_TEXT_EXT and ext not in CLAUDE_TEXT_EXT:
        d.sources.append(Source(name, path, None, kind, parent=parent, depth=depth, status="skipped",
                                note="not a text file: Claude Code skips it"))
        return
    if os.path.getsize(path) > CLAUDE_MAX_BYTES:
        d.sources.append(Source(name, path, None, kind, parent=parent, depth=depth, status="skipped",
                                note=f"larger than {CLAUDE_MAX_BYTES:,} bytes: Claude Code skips it"))
        return
    seen.add(key)
    try:
        raw = _read_text(path)
    except InputError as e:
        if parent is None:
            raise
        # an import that cannot be read is one note on the importing file, not the end of the whole budget
        d.sources.append(Source(name, path, None, kind, parent=parent, depth=depth, status="skipped",
                                note=f"{e.reason}: not loaded (imported by {parent})"))
        return
    content, globs, skipped = claude_content(raw)
    if not content.strip():
        return
    src = Source(name, path, content, kind, parent=parent, depth=depth, line_offset=skipped)
    if globs is not None:
        src.status = "on-demand"
        src.note = f"rule with paths: {', '.join(globs)}: loaded only when a matching file is read"
    if d.root and not _inside(path, d.root) and parent is not None:
        src.note = (src.note + "; " if src.note else "") + "outside the project: Claude Code asks before loading it"
    d.sources.append(src)
    if "@" in content:
        for imp in claude_imports(content, os.path.dirname(path), home):
            _claude_file(d, imp, kind, settings, seen, depth + 1, path, home)


def _inside(path: str, root: str) -> bool:
    path, root = os.path.abspath(path), os.path.abspath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _claude_workspace(root: str, home: str, settings: dict) -> Discovery:
    d = Discovery("claude", root)
    seen: set = set()
    managed = settings.get("managedPath", CLAUDE_MANAGED)
    if managed and _is_file(managed):
        _claude_file(d, managed, "Managed", settings, seen, 0, None, home, managed)
    user = os.path.join(home, ".claude", "CLAUDE.md")
    _claude_file(d, user, "User", settings, seen, 0, None, home, "~/.claude/CLAUDE.md")
    _claude_rules(d, os.path.join(home, ".claude", "rules"), "User", settings, seen, home)
    chain = []
    cur = root
    while True:
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        chain.insert(0, cur)
        cur = parent
    for dir_ in chain:
        for rel in ("CLAUDE.md", os.path.join(".claude", "CLAUDE.md")):
            p = os.path.join(dir_, rel)
            _claude_file(d, p, "Project", settings, seen, 0, None, home, _label(p, root))
        _claude_rules(d, os.path.join(dir_, ".claude", "rules"), "Project", settings, seen, home, root)
        p = os.path.join(dir_, "CLAUDE.local.md")
        _claude_file(d, p, "Local", settings, seen, 0, None, home, _label(p, root))
    return d


def _label(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return rel if not rel.startswith("..") else path


def _claude_rules(d: Discovery, rules: str, kind: str, settings: dict, seen: set, home: str, root: str | None = None) -> None:
    if not os.path.isdir(rules):
        return
    for dirpath, dirnames, filenames in os.walk(rules):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(".md"):
                p = os.path.join(dirpath, fn)
                _claude_file(d, p, kind, settings, seen, 0, None, home, _label(p, root) if root else p)


# ------------------------------------------------------------------ codex


def _git_root(start: str) -> str | None:
    cur = start
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _codex_workspace(root: str, home: str, settings: dict) -> Discovery:
    d = Discovery("codex", root)
    codex_home = settings.get("codexHome") or os.path.join(home, ".codex")
    for name in CODEX_NAMES:
        p = os.path.join(codex_home, name)
        if _is_file(p):
            content = _read_text(p)
            if content and content.strip():
                d.sources.append(Source(f"~/.codex/{name}", p, content, "global",
                                        note="global instructions: outside project_doc_max_bytes"))
                break
    names = list(CODEX_NAMES) + [n for n in settings.get("fallbackFilenames", []) if n and n not in CODEX_NAMES]
    top = _git_root(root)
    dirs = [root]
    if top is not None:
        dirs, cur = [], root
        while True:
            dirs.insert(0, cur)
            if cur == top:
                break
            cur = os.path.dirname(cur)
    else:
        d.notes.append("no git root above the workspace: Codex reads only the workspace's own AGENTS.md")
    for dir_ in dirs:
        for name in names:
            p = os.path.join(dir_, name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    raw = f.read()
                d.sources.append(Source(_label(p, root), p, raw.decode("utf-8", "replace"), "project", raw=raw))
                break
    return d


# ------------------------------------------------------------------ aceclaw


def _ace_kind(path: str, home: str) -> str:
    name = os.path.basename(path)
    ace_home = os.path.join(home, ".aceclaw")
    if name == "SOUL.md":
        return "soul"
    if name == "managed-policy.md":
        return "policy"
    if name == "ACECLAW.md":
        return "user" if os.path.abspath(path) == os.path.join(ace_home, "ACECLAW.md") else "workspace"
    if name == "MEMORY.md":
        return "markdown"
    if name.endswith(".jsonl"):
        return "auto"
    if "journal" in path.split(os.sep) or re.match(r"^\d{4}-\d{2}-\d{2}\.md$", name):
        return "journal"
    return "workspace"


def _aceclaw_workspace(root: str, home: str, settings: dict) -> Discovery:
    d = Discovery("aceclaw", root)
    ace_home = settings.get("aceclawHome") or os.path.join(home, ".aceclaw")

    def add(key: str, paths: list[str]) -> None:
        tier, prio, prot = ACE_TIERS[key]
        parts, used = [], []
        for p in paths:
            if _is_file(p):
                c = _read_text(p)
                if c is not None and c.strip():
                    parts.append(c)
                    used.append(p)
        if parts:
            d.sources.append(Source(tier, used[0] if len(used) == 1 else " + ".join(used), "\n\n".join(parts), key, prio, prot))

    soul = os.path.join(root, ".aceclaw", "SOUL.md")
    add("soul", [soul] if _is_file(soul) and (_read_text(soul) or "").strip() else [os.path.join(ace_home, "SOUL.md")])
    add("policy", [os.path.join(ace_home, "managed-policy.md")])
    add("workspace", [os.path.join(root, "ACECLAW.md"), os.path.join(root, ".aceclaw", "ACECLAW.md")])
    add("user", [os.path.join(ace_home, "ACECLAW.md")])
    d.notes.append("Auto-Memory (60), Markdown Memory and the Daily Journal (50) live in AceClaw's own stores "
                   "(~/.aceclaw/workspaces/<hash>/memory/); pass their files to count them")
    return d


# ================================================================== settings


def resolve_settings(agent: str, overrides: dict | None = None, cfg: dict | None = None) -> dict:
    """Each agent's limits: defaults, then the agent's config file (``cfg``), then explicit overrides."""
    o = {k: v for k, v in (overrides or {}).items() if v is not None}
    if agent == "openclaw":
        s = {"maxChars": OC_MAX_CHARS, "totalMaxChars": OC_TOTAL_MAX_CHARS}
        d = ((cfg or {}).get("agents") or {}).get("defaults") or {}
        for key, cfg_key in (("maxChars", "bootstrapMaxChars"), ("totalMaxChars", "bootstrapTotalMaxChars")):
            v = d.get(cfg_key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
                s[key] = int(v)
    elif agent == "aceclaw":
        s = {"maxPerTierChars": ACE_PER_TIER, "maxTotalChars": ACE_TOTAL}
        ace = (cfg or {}).get("systemPromptBudget") or {}
        for key in ("maxPerTierChars", "maxTotalChars"):
            if isinstance(ace.get(key), int) and ace[key] > 0:
                s[key] = ace[key]
        if o.get("contextWindow"):
            s.update(ace_for_window(o.pop("contextWindow"), o.pop("maxOutput", 0) or 0))
        o.pop("maxOutput", None)
    elif agent == "codex":
        s = {"maxBytes": CODEX_MAX_BYTES, "fallbackFilenames": []}
        c = cfg or {}
        if isinstance(c.get("project_doc_max_bytes"), int) and c["project_doc_max_bytes"] >= 0:
            s["maxBytes"] = c["project_doc_max_bytes"]
        if isinstance(c.get("project_doc_fallback_filenames"), list):
            s["fallbackFilenames"] = [x for x in c["project_doc_fallback_filenames"] if isinstance(x, str)]
    else:
        s = {"importDepth": CLAUDE_IMPORT_DEPTH, "fileWarnChars": CLAUDE_FILE_WARN, "totalWarnChars": CLAUDE_TOTAL_WARN}
    s.update(o)
    for k, v in s.items():
        if isinstance(v, int) and not isinstance(v, bool) and v < 0:
            raise ConfigError(f"{k} must not be negative (got {v})")
        if k in ("maxChars", "totalMaxChars", "maxPerTierChars", "maxTotalChars") and v <= 0:
            raise ConfigError(f"{k} must be positive (got {v})")
    return s


def ace_for_window(context_tokens: int, max_output: int = 0) -> dict:
    """AceClaw's ``forContextWindow`` as the seed describes it: ~25% of (window - output) in chars
    (4 per token), clamped to 1K-150K in total and 1K-20K per tier."""
    effective = max(0, int(context_tokens) - int(max_output))
    total = int(effective * ACE_SHARE * ACE_CHARS_PER_TOKEN)
    total = min(max(total, ACE_MIN), ACE_TOTAL)
    per = min(max(min(total, ACE_PER_TIER), ACE_MIN), ACE_PER_TIER)
    return {"maxPerTierChars": per, "maxTotalChars": total}


# ================================================================== OpenClaw trimming


@dataclass
class Trim:
    content: str  # code units
    truncated: bool
    max_chars: int
    original: int  # code units after trimEnd
    head: int = 0  # code units of the original kept at the start
    tail: int = 0  # ... at the end
    digest_lines: int = 0


_OC_BULLET = re.compile(r"^(?:#{1,6}|" + utf16.JS_SPACE_CLASS + r"*[-*+]|" + utf16.JS_SPACE_CLASS + r"*[0-9]+[.)])"
                        + utf16.JS_SPACE_CLASS + "+" + utf16.JS_NONSPACE_CLASS)
_OC_WORDS = r"\b(?:AGENTS\.md|scoped|required|must|never|do not|before subtree|read scoped|owner|security|secret|credential|test|validation|command|commit|push|github|pr)\b"
_OC_HIGH_WORDS = r"\b(?:AGENTS\.md|scoped|required|must|never|do not|before subtree|read scoped|security|secret|credential)\b"
_OC_CJK = "|".join(utf16.units(x) for x in ("🔴", "禁止", "嚴禁", "不得", "絕不", "絕對不", "切勿", "必須", "務必", "一律", "紅線"))
_OC_HIGH_CJK = "|".join(utf16.units(x) for x in ("🔴", "禁止", "嚴禁", "不得", "絕不", "絕對不", "切勿"))
_OC_CANDIDATE = re.compile(f"{_OC_WORDS}|(?:{_OC_CJK})", re.I | re.A)
_OC_HIGH = re.compile(f"{_OC_HIGH_WORDS}|(?:{_OC_HIGH_CJK})", re.I | re.A)
_OC_FENCE = re.compile(r"^" + utf16.JS_SPACE_CLASS + r"*(?:`{3,}|~{3,})")
_OC_SPACES = re.compile(utf16.JS_SPACE_CLASS + "+")
_JS_FOLD = str.maketrans({"\u017f": "s", "\u212a": "k"})  # /iu case folding onto ASCII word characters


def _oc_match(rx, line: str) -> bool:
    return rx.search(line.translate(_JS_FOLD)) is not None


def _oc_digest_line(line: str) -> str:
    n = _OC_SPACES.sub(" ", utf16.trim(line))
    return n if len(n) <= OC_DIGEST_LINE_MAX else utf16.truncate_safe(n, OC_DIGEST_LINE_MAX - 1) + "…"


def _oc_digest(cands: list[tuple[str, bool]], budget: int) -> tuple[str, int, int]:
    if budget <= 0:
        return "", 0, 0
    chosen: set[int] = set()
    used = 0
    for want_high in (True, False):
        for i, (t, high) in enumerate(cands):
            if (want_high and not high) or i in chosen:
                continue
            sep = 1 if chosen else 0
            if used + sep + len(t) > budget:
                continue
            chosen.add(i)
            used += sep + len(t)
    text = "\n".join(t for i, (t, _) in enumerate(cands) if i in chosen)
    return text, max(0, len(cands) - len(chosen)), len(chosen)


def _oc_trim_agents(trimmed: str, max_chars: int, name: str = "AGENTS.md") -> Trim:
    head = math.floor(max_chars * OC_AGENTS_HEAD)
    tail = math.floor(max_chars * OC_AGENTS_TAIL)
    budget = math.floor(max_chars * OC_AGENTS_DIGEST)
    cands: list[tuple[str, bool]] = []
    if budget > 0:
        last = None
        for src in re.split(r"\r?\n", trimmed):
            line = _oc_digest_line(src)
            if not line:
                last = None
                continue
            if _OC_FENCE.match(line):
                last = None
            elif _OC_BULLET.match(line) or _oc_match(_OC_CANDIDATE, line):
                cands.append((line if last is None else f"{last}\n{line}", _oc_match(_OC_HIGH, line)))
                last = None
            else:
                last = line
    digest, omitted, picked = _oc_digest(cands, budget)
    n = len(trimmed)

    def render() -> str:
        parts = [utf16.safe_slice(trimmed, 0, head), "[...truncated, read AGENTS.md for full content...]",
                 "[Policy digest from AGENTS.md]" if digest else "", digest,
                 f"[...{omitted} more policy lines omitted...]" if omitted > 0 else "",
                 f"…(truncated AGENTS.md: kept {head}+policy {len(digest)}+{tail} chars of {n})…",
                 utf16.safe_slice(trimmed, -tail) if tail > 0 else ""]
        return "\n".join(p for p in parts if p)

    out = render()
    while len(out) > max_chars and (tail > 0 or head > 1 or budget > 0):
        over = len(out) - max_chars
        if tail > 0:
            tail = max(0, tail - over)
        elif head > 1:
            head = max(1, head - over)
        else:
            budget = max(0, budget - over)
            digest, omitted, picked = _oc_digest(cands, budget)
        out = render()
    if len(out) > max_chars:
        out = utf16.truncate_safe(out, max_chars)
    kept_head = len(utf16.safe_slice(trimmed, 0, head))
    kept_tail = len(utf16.safe_slice(trimmed, -tail)) if tail > 0 else 0
    return Trim(out, True, max_chars, n, kept_head, kept_tail, picked)


def openclaw_trim(content: str, name: str, max_chars: int) -> Trim:
    """OpenClaw's ``trimBootstrapContent`` on code units (``utf16.units``); ``name`` as a Python string."""
    trimmed = utf16.trim_end(content)
    n = len(trimmed)
    if n <= max_chars:
        return Trim(trimmed, False, max_chars, n, n, 0)
    if name.lower() == "agents.md":
        return _oc_trim_agents(trimmed, max_chars)
    uname = utf16.units(name)

    def full(h: int, t: int) -> str:
        return "\n".join(["", f"[...truncated, read {uname} for full content...]", f"…(truncated {uname}: kept {h}+{t} chars of {n})…", ""])

    def compact(h: int, t: int) -> str:
        return f"[…truncated {h}+{t}/{n}]"

    def seps(h: int, t: int, marker: str) -> int:
        return (int(h > 0) + int(t > 0)) if "\n" in marker else 0

    f0 = full(0, 0)
    tmpl = full if max_chars - len(f0) - seps(1, 1, f0) >= OC_MIN_TRIMMED else compact
    head = tail = 0
    marker = tmpl(0, 0)
    for _ in range(3):
        budget = max(0, max_chars - len(marker) - seps(head, tail, marker))
        nh, nt = math.floor(budget * OC_HEAD), math.floor(budget * OC_TAIL)
        nm = tmpl(nh, nt)
        if nh == head and nt == tail and len(nm) == len(marker):
            break
        head, tail, marker = nh, nt, nm
    size = head + tail + len(marker) + seps(head, tail, marker)
    while size > max_chars and (tail > 0 or head > 0):
        over = size - max_chars
        if tail > 0:
            tail = max(0, tail - over)
        else:
            head = max(0, head - over)
        marker = tmpl(head, tail)
        size = head + tail + len(marker) + seps(head, tail, marker)
    if head == 0 and tail == 0 and n > 0:
        single = tmpl(1, 0)
        if 1 + len(single) + seps(1, 0, single) <= max_chars:
            head, marker = 1, single
    h = utf16.safe_slice(trimmed, 0, head)
    t = utf16.safe_slice(trimmed, -tail) if tail > 0 else ""
    out = ("\n" if "\n" in marker else "").join(p for p in (h, marker, t) if p)
    if len(out) > max_chars:
        out = utf16.truncate_safe(out, max_chars)
    return Trim(out, True, max_chars, n, len(h), len(t))


def _clamp(content: str, budget: int) -> str:
    """OpenClaw's ``clampToBudget``."""
    if budget <= 0:
        return ""
    if len(content) <= budget:
        return content
    if budget <= 3:
        return utf16.truncate_safe(content, budget)
    return utf16.truncate_safe(content, budget - 1) + "…"


def openclaw_assemble(sources: list[Source], max_chars: int, total_max_chars: int) -> list[dict]:
    """OpenClaw's ``buildBootstrapContextFiles`` over the loaded sources; one row per source, in order."""
    remaining = max(1, math.floor(total_max_chars))
    rows = []
    stop = None
    for s in sources:
        row = _row(s)
        rows.append(row)
        if s.status in ("not-loaded", "on-demand"):
            continue
        if stop is not None:
            row.update(status="dropped", causes=["total-limit"], note=stop)
            continue
        if remaining <= 0:
            stop = "the total budget is used up"
            row.update(status="dropped", causes=["total-limit"], note=stop)
            continue
        if s.status == "missing":
            text = _clamp(utf16.units(f"[MISSING] Expected at: {s.path}"), remaining)
            if not text:
                stop = "the total budget is used up"
                row.update(status="dropped", causes=["total-limit"], note=stop)
                continue
            remaining = max(0, remaining - len(text))
            row.update(injected=text, injected_chars=len(text))
            continue
        if remaining < OC_MIN_FILE_BUDGET:
            stop = f"remaining bootstrap budget is {remaining} chars (<{OC_MIN_FILE_BUDGET}): OpenClaw skips the remaining files"
            row.update(status="dropped", causes=["total-limit"], note=stop)
            continue
        user = s.name.lower() == "user.md"
        limit = min(max_chars, OC_USER_MAX_CHARS) if user else max_chars
        file_max = max(1, min(limit, remaining))
        u = utf16.units(s.content or "")
        tr = openclaw_trim(u, s.name, file_max)
        within = _clamp(tr.content, remaining)
        row["chars"] = tr.original
        row["limit"] = limit
        if not within:
            row.update(status="dropped", causes=["total-limit"])
            continue
        # OpenClaw's own causes (analyzeBootstrapBudget): over the file's limit, and/or the total left was smaller
        causes = []
        truncated = tr.truncated or len(within) < len(tr.content)
        if truncated:
            if tr.original > limit:
                causes.append("per-file-limit")
            if remaining < limit and tr.original > remaining:
                causes.append("total-limit")
        head, tail = tr.head, tr.tail
        if len(within) < len(tr.content):  # clampToBudget (never cuts after the trim above: kept for fidelity)
            head, tail = max(0, len(within) - 1), 0
        remaining = max(0, remaining - len(within))
        row.update(injected=within, injected_chars=len(within), status="trimmed" if truncated else "kept",
                   causes=causes, digest_lines=tr.digest_lines)
        if truncated:
            row["cut"] = _cut(utf16.trim_end(u), head, tail, s.line_offset)
            if user and OC_USER_MAX_CHARS < max_chars:
                row["note"] = (row.get("note", "") + "; " if row.get("note") else "") + \
                    f"USER.md has a fixed {OC_USER_MAX_CHARS:,}-character cap that bootstrapMaxChars cannot raise"
    return rows


# ================================================================== AceClaw truncation


def aceclaw_truncate(content: str, max_chars: int) -> tuple[str, int, int]:
    """AceClaw's ``TierTruncator.truncateContent`` on code units: (text, head kept, tail kept)."""
    n = len(content)
    if n <= max_chars:
        return content, n, 0
    if max_chars <= 0:
        return "", 0, 0
    head = int(max_chars * 0.70)
    tail = int(max_chars * 0.20)
    marker = ACE_MARKER.format(n=n, h=head, t=tail)
    available = max_chars - len(marker)
    if available <= 0:
        return content[:max_chars], max_chars, 0
    head = min(head, int(available * 0.78))
    tail = min(tail, available - head)
    if tail <= 0:
        return content[:head] + marker, head, 0
    return content[:head] + marker + content[n - tail:], head, tail


def aceclaw_assemble(sources: list[Source], per_tier: int, total: int) -> list[dict]:
    """AceClaw's ``ContextAssemblyPlan.build``: per-tier cap, then the total cut from the lowest priority up."""
    rows = []
    state = []
    for s in sources:
        row = _row(s)
        rows.append(row)
        if s.content is None or not s.content.strip():
            row["status"] = s.status or "missing"
            continue
        u = utf16.units(s.content)
        row["chars"] = len(u)
        st = {"row": row, "orig": u, "text": u, "head": len(u), "tail": 0, "causes": []}
        if not s.protected and len(u) > per_tier:
            st["text"], st["head"], st["tail"] = aceclaw_truncate(u, per_tier)
            st["causes"].append("per-tier-limit")
        state.append(st)
    used = sum(len(st["text"]) for st in state)
    if used > total:
        order = sorted((st for st in state if not st["row"]["protected"]), key=lambda st: st["row"]["priority"])
        for st in order:
            used = sum(len(x["text"]) for x in state)
            if used <= total:
                break
            target = max(0, len(st["text"]) - (used - total))
            if target == 0:
                st["text"], st["head"], st["tail"] = "", 0, 0
                st["causes"].append("total-limit")
            elif target < len(st["text"]):
                before = st["text"]
                st["text"], h, t = aceclaw_truncate(before, target)
                if "per-tier-limit" in st["causes"]:  # cut again: what survives of the original is the first cut's head
                    st["head"], st["tail"] = min(st["head"], h), min(st["tail"], t)
                else:
                    st["head"], st["tail"] = h, t
                st["causes"].append("total-limit")
    for st in state:
        row = st["row"]
        row["injected"] = st["text"]
        row["injected_chars"] = len(st["text"])
        row["causes"] = st["causes"]
        if not st["text"].strip():
            row["status"] = "dropped"
            row["cut"] = _cut(st["orig"], 0, 0, 0)
        elif st["causes"]:
            row["status"] = "trimmed"
            row["cut"] = _cut(st["orig"], st["head"], st["tail"], 0)
        else:
            row["status"] = "kept"
    return rows


# ================================================================== Codex and Claude Code


def codex_assemble(sources: list[Source], max_bytes: int) -> list[dict]:
    """Codex's ``read_project_docs``: project docs read up to ``max_bytes`` in total, empty ones skipped."""
    rows = []
    remaining = max_bytes
    for s in sources:
        row = _row(s)
        rows.append(row)
        raw = s.raw if s.raw is not None else (s.content or "").encode("utf-8")
        row["chars"] = len(raw)
        row["unit"] = "bytes"
        if s.kind == "global":
            row.update(injected=s.content or "", injected_chars=len(raw), status="kept")
            continue
        if remaining <= 0:
            row.update(status="dropped", causes=["total-limit"], cut=_cut_bytes(raw, 0), injected_chars=0,
                       note="project_doc_max_bytes is used up: not read")
            continue
        data = raw[:remaining]
        text = data.decode("utf-8", "replace")
        if not text.strip():
            row.update(status="skipped", note="empty: Codex skips it", injected_chars=0)
            continue
        remaining -= len(data)
        row.update(injected=text, injected_chars=len(data), status="kept")
        if len(data) < len(raw):
            row.update(status="trimmed", causes=["total-limit"], cut=_cut_bytes(raw, len(data)))
    return rows


def claude_assemble(sources: list[Source], file_warn: int, total_warn: int) -> list[dict]:
    rows = []
    for s in sources:
        row = _row(s)
        rows.append(row)
        if s.content is None or s.status in ("cycle", "depth-limit", "missing", "skipped"):
            continue
        u = utf16.units(s.content)
        row["chars"] = len(u)
        if s.status == "on-demand":
            continue
        row.update(injected=utf16.trim(u), injected_chars=len(utf16.trim(u)), status="kept")
        if len(u) > file_warn:
            row["causes"] = ["file-warning"]
    return rows


# ================================================================== rows, cuts, report


def _row(s: Source) -> dict:
    return {"name": s.name, "path": s.path, "kind": s.kind, "priority": s.priority, "protected": s.protected,
            "parent": s.parent, "depth": s.depth, "status": s.status or "kept", "unit": "utf16",
            "chars": None, "injected_chars": 0, "injected": "", "causes": [], "cut": [], "note": s.note,
            "line_offset": s.line_offset, "digest_lines": 0,
            "raw_chars": len(utf16.units(s.content)) if s.content is not None else None}


def _cut(u: str, head: int, tail: int, line_offset: int) -> list[dict]:
    """Line ranges of ``u`` (code units) not kept when its first ``head`` and last ``tail`` units are."""
    n = len(u)
    lo, hi = head, n - tail
    if hi <= lo:
        return []
    first = utf16.line_of(u, lo) + line_offset
    last = utf16.line_of(u, hi - 1) + line_offset
    partial_first = lo > 0 and u[lo - 1] != "\n"
    partial_last = hi < n and u[hi - 1] != "\n"
    return [{"from_line": first, "to_line": last, "chars": hi - lo,
             "partial_first_line": partial_first, "partial_last_line": partial_last}]


def _cut_bytes(raw: bytes, kept: int) -> list[dict]:
    if kept >= len(raw):
        return []
    first = raw.count(b"\n", 0, kept) + 1
    last = raw.count(b"\n", 0, max(0, len(raw) - 1)) + 1
    return [{"from_line": first, "to_line": last, "chars": len(raw) - kept,
             "partial_first_line": kept > 0 and raw[kept - 1:kept] != b"\n", "partial_last_line": False}]


def assemble(d: Discovery, settings: dict, *, window: int = DEFAULT_WINDOW, counter=None) -> dict:
    """Apply the agent's limits to what ``discover`` found; the report as plain data."""
    a = d.agent
    if a == "openclaw":
        rows = openclaw_assemble(d.sources, settings["maxChars"], settings["totalMaxChars"])
    elif a == "aceclaw":
        rows = aceclaw_assemble(d.sources, settings["maxPerTierChars"], settings["maxTotalChars"])
    elif a == "codex":
        rows = codex_assemble(d.sources, settings["maxBytes"])
    else:
        rows = claude_assemble(d.sources, settings["fileWarnChars"], settings["totalWarnChars"])
    count = counter or (lambda t: heuristic_chars_tokens(len(utf16.units(t))))
    for r in rows:
        r["tokens"] = count(utf16.text(r["injected"])) if r["injected"] else 0
    limits = _limits(a, rows, settings)
    injected_chars = sum(r["injected_chars"] for r in rows)
    tokens = sum(r["tokens"] for r in rows)
    loaded = [r for r in rows if r["status"] in ("kept", "trimmed", "dropped")]
    report = {
        "agent": a,
        "root": d.root,
        "settings": settings,
        "files": rows,
        "totals": {
            "files": len(loaded),
            "chars": sum(r["chars"] or 0 for r in loaded),
            "injected_chars": injected_chars,
            "tokens": tokens,
            "trimmed": sum(1 for r in rows if r["status"] == "trimmed"),
            "dropped": sum(1 for r in rows if r["status"] == "dropped"),
        },
        "limits": limits,
        "window": window,
        "window_share": round(tokens / window, 6) if window else None,
        "notes": list(d.notes),
    }
    report["advice"] = advise(report)
    return report


def _limits(agent: str, rows: list[dict], s: dict) -> list[dict]:
    used = sum(r["injected_chars"] for r in rows)
    raw = sum(r["chars"] or 0 for r in rows if r["status"] in ("kept", "trimmed", "dropped"))
    if agent == "openclaw":
        biggest = max((r["chars"] or 0 for r in rows if r["status"] in ("kept", "trimmed")), default=0)
        return [{"name": "bootstrapMaxChars", "value": s["maxChars"], "used": biggest, "unit": "chars per file",
                 "over": any("per-file-limit" in r["causes"] for r in rows)},
                {"name": "bootstrapTotalMaxChars", "value": s["totalMaxChars"], "used": used, "raw": raw,
                 "unit": "chars in total", "over": raw > s["totalMaxChars"] or any("total-limit" in r["causes"] for r in rows)}]
    if agent == "aceclaw":
        biggest = max((r["chars"] or 0 for r in rows if not r["protected"] and r["chars"]), default=0)
        return [{"name": "maxPerTierChars", "value": s["maxPerTierChars"], "used": biggest, "unit": "chars per tier",
                 "over": biggest > s["maxPerTierChars"]},
                {"name": "maxTotalChars", "value": s["maxTotalChars"], "used": used, "raw": raw, "unit": "chars in total",
                 "over": raw > s["maxTotalChars"],
                 "note": "AceClaw counts its base prompt and rules in this total too; ctxtool sees the memory tiers only"}]
    if agent == "codex":
        proj = sum(r["chars"] or 0 for r in rows if r["kind"] == "project" and r["status"] != "skipped")
        return [{"name": "project_doc_max_bytes", "value": s["maxBytes"], "used": min(proj, s["maxBytes"]), "raw": proj,
                 "unit": "bytes", "over": proj > s["maxBytes"]}]
    counted = [r for r in rows if r["status"] == "kept"]
    biggest = max((r["chars"] or 0 for r in counted), default=0)
    total = sum(r["chars"] or 0 for r in counted if (r["chars"] or 0) <= s["fileWarnChars"])
    return [{"name": "large file warning", "value": s["fileWarnChars"], "used": biggest, "unit": "chars per file",
             "over": biggest > s["fileWarnChars"], "note": "Claude Code warns; it does not cut"},
            {"name": "total warning", "value": s["totalWarnChars"], "used": total, "unit": "chars in total",
             "over": total > s["totalWarnChars"], "note": "Claude Code warns; it does not cut"}]


def _lines(cut: list[dict]) -> str:
    if not cut:
        return ""
    c = cut[0]
    return f"line {c['from_line']}" if c["from_line"] == c["to_line"] else f"lines {c['from_line']}-{c['to_line']}"


def advise(report: dict) -> list[dict]:
    """Where a file is past a limit, and how to fix it."""
    out = []
    a = report["agent"]
    s = report["settings"]
    for r in report["files"]:
        where = _lines(r["cut"])
        if a == "openclaw" and r["status"] in ("trimmed", "dropped"):
            if "per-file-limit" in r["causes"]:
                if r["name"].lower() == "user.md" and r.get("limit") == OC_USER_MAX_CHARS:
                    fix = (f"USER.md has a fixed {OC_USER_MAX_CHARS:,}-character cap: keep only what the agent needs about you "
                           "and move the rest to a memory/ note it reads when relevant")
                else:
                    fix = (f"move sections the agent needs only sometimes into files it reads on demand (docs/*.md or memory/ "
                           f"notes named from {r['name']}), or raise agents.defaults.bootstrapMaxChars (now {s['maxChars']:,})")
                out.append({"file": r["name"], "problem": f"{r['chars']:,} chars, past the {r.get('limit', s['maxChars']):,} per-file limit: "
                            f"{where} cut", "fix": fix})
            elif "total-limit" in r["causes"]:
                out.append({"file": r["name"], "problem": f"the files before it used up bootstrapTotalMaxChars ({s['totalMaxChars']:,}): "
                            f"{where or 'all of it'} cut", "fix": "shrink the earlier files or raise agents.defaults.bootstrapTotalMaxChars"})
        elif a == "aceclaw" and r["status"] in ("trimmed", "dropped"):
            lim = ("total budget (lowest priority goes first)" if r["status"] == "dropped" or r["causes"] == ["total-limit"]
                   else "per-tier cap" + (" and the total budget" if "total-limit" in r["causes"] else ""))
            verb = "dropped" if r["status"] == "dropped" else "cut"
            out.append({"file": f"{r['name']} ({r['path']})", "problem": f"{r['chars']:,} chars, {verb} by the {lim}: {where or 'all of it'}",
                        "fix": "keep the tier short: move reference material into files the agent reads on demand, "
                               "or raise maxPerTierChars / maxTotalChars"})
        elif a == "codex" and r["status"] in ("trimmed", "dropped"):
            out.append({"file": r["name"], "problem": f"past project_doc_max_bytes ({s['maxBytes']:,} bytes for the whole chain): "
                        f"{where or 'all of it'} not read",
                        "fix": "split guidance into nested AGENTS.md files (read only when Codex runs inside that directory), "
                               "or raise project_doc_max_bytes in ~/.codex/config.toml"})
        elif a == "claude" and "file-warning" in r["causes"]:
            out.append({"file": r["name"], "problem": f"{r['chars']:,} chars, past Claude Code's {s['fileWarnChars']:,}-char "
                        "warning: all of it is sent with every request",
                        "fix": "move sections into .claude/rules/*.md with `paths:` frontmatter (loaded only when matching files "
                               "are read) or into docs the agent reads on demand (named without @: an @import is loaded eagerly)"})
    for lim in report["limits"]:
        if a == "claude" and lim["name"] == "total warning" and lim["over"]:
            out.append({"file": None, "problem": f"instruction files total {lim['used']:,} chars, past Claude Code's "
                        f"{lim['value']:,}-char warning", "fix": "move rarely needed sections into path-scoped rules or on-demand docs"})
    return out


def injected(report: dict, which: str) -> str:
    """The text the agent injects for one file (``--show``), by name or path."""
    for r in report["files"]:
        if which in (r["name"], r["path"]) or os.path.abspath(which) == r["path"]:
            if not r["injected"]:
                raise InputError(f"not injected ({r['status']})", path=which)
            return utf16.printable(utf16.text(r["injected"]))
    raise InputError("not one of the files this agent loads here", path=which)


def compare_session(report: dict, prof: dict) -> dict:
    """The computed budget against the fixed baseline ``profile`` measured from recorded usage."""
    base = (prof.get("tokens") or {}).get("baseline") or prof.get("baseline")
    out = {"budget_tokens": report["totals"]["tokens"], "baseline": base}
    if base and base.get("tokens") is not None:
        gap = base["tokens"] - report["totals"]["tokens"]
        out["gap_tokens"] = gap
        out["explained"] = ("the rest of the baseline is the agent's own system prompt and its tool schemas "
                            "(and skill lists, runtime info), which ctxtool cannot see" if gap >= 0 else
                            "the files count for more than the recorded baseline: they were trimmed more, changed since, "
                            "or this is not the workspace of that session")
    else:
        out["gap_tokens"] = None
        out["explained"] = "the session records no usage, so its baseline is unknown"
    return out
