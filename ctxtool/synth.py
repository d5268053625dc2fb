"""Deterministic synthetic session transcripts for tests and benchmarks.

:func:`generate` streams raw JSONL lines (``bytes``) in one of four on-disk
shapes:

``"pi"``
    pi coding agent / OpenClaw session file, version 3: header, then
    ``model_change``, ``thinking_level_change``, ``custom`` model-snapshot,
    then ``message`` entries (user / assistant / toolResult / bashExecution)
    with 8-hex ``id`` and ``parentId`` chains, ``openclaw.cache-ttl`` custom
    entries after assistant turns and ``compaction`` entries.
``"pi-v1"``
    legacy linear pi file: header without ``version`` (carrying provider,
    modelId and thinkingLevel), entries without ``id``/``parentId``,
    compaction with ``firstKeptEntryIndex``.
``"claude"``
    Claude Code transcript: assistant responses split over several lines
    sharing ``message.id`` (placeholder usage and ``stop_reason: null`` on
    all but the last chunk), tool_result user lines whose ``parentUuid``
    points at the line holding the tool_use, progress,
    file-history-snapshot, summary, queue-operation, system
    stop_hook_summary and compact_boundary lines.
``"messages"``
    plain Anthropic Messages API JSONL: one ``{"role", "content"}`` object
    per line.

The same arguments always give the same bytes. Output is streamed with
memory bounded by one turn, so ``target_bytes`` can produce files of
hundreds of megabytes. Payload text (file contents, command output, prose)
is sliced from pools that are built once per process.

Corruptions (``corruptions=``) are injected once each at a deterministic
place and recorded with the 1-based line number where they appear; see
:data:`CORRUPTIONS` for the formats each one supports.
"""

from __future__ import annotations

import base64
import random
import struct
import uuid
import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import orjson

__all__ = [
    "CORRUPTIONS",
    "DEFAULT_START",
    "FORMATS",
    "SessionGenerator",
    "generate",
    "write_session",
]

FORMATS: tuple[str, ...] = ("pi", "pi-v1", "claude", "messages")

DEFAULT_START = datetime(2026, 3, 1, 9, 0, 0, tzinfo=timezone.utc)

_ALL = frozenset(FORMATS)
_PI = frozenset({"pi", "pi-v1"})
_TREE = frozenset({"pi", "claude"})

#: corruption name -> formats where it can be injected
CORRUPTIONS: dict[str, frozenset[str]] = {
    "torn_tail": _ALL,
    "bad_control_char": _ALL,
    "partial_json_call": _PI,
    "missing_result": _ALL,
    "orphan_result": _ALL,
    "duplicate_result": _ALL,
    "separated_result": _ALL,
    "missing_header": _PI,
    "invalid_header": _PI,
    "duplicate_id": _TREE,
    "dangling_parent": _TREE,
    "parent_cycle": _TREE,
    "blank_lines": _ALL,
    "crlf": _ALL,
    "bom": _ALL,
    "nul_bytes": _ALL,
    "invalid_utf8": _ALL,
    "empty_error_turn": _PI,
    "blank_user_turn": _ALL,
    "bad_tool_name": _ALL,
    "no_id_call": _ALL,
}

# Applied to the file as a whole rather than to one turn.
_FILE_LEVEL = frozenset({"torn_tail", "crlf", "bom", "missing_header", "invalid_header"})
# Per-turn corruptions that need a turn with at least one tool call.
_NEEDS_TOOLS = frozenset(
    {
        "invalid_utf8",
        "missing_result",
        "orphan_result",
        "duplicate_result",
        "separated_result",
        "bad_tool_name",
        "no_id_call",
    }
)

BAD_TOOL_NAME = "bad name!"
BOM = b"\xef\xbb\xbf"
_CTRL_SENTINEL = "@@SYNTH-CTRL@@"
_UTF8_SENTINEL = "@@SYNTH-UTF8@@"
_CTRL_BYTES = b"\t\x1b[0m"  # raw TAB and ESC inside a JSON string
_BAD_UTF8 = b"\xe4\xb8 \xff\xfe"  # truncated CJK sequence, then bytes never valid in UTF-8
_ERROR_FALLBACK = "[assistant turn failed before producing content]"

# --------------------------------------------------------------------------
# payload pools (built once per process, deterministic)
# --------------------------------------------------------------------------

_WORDS = (
    "session entry parse stream token buffer cache index record offset chunk reader "
    "writer config worker queue batch retry handler client server request response "
    "payload schema header metric sample window budget prune compact summary context "
    "message result tool call agent model provider usage cost limit path file line "
    "error status check build test deploy route store lock state event signal thread"
).split()
_TYPES = ("str", "int", "bytes", "dict[str, Any]", "list[str]", "Path", "bool", "float")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
_VERBS = (
    "reads", "rewrites", "drops", "keeps", "streams", "validates", "caches", "splits",
    "merges", "counts", "skips", "retries", "flushes", "sorts",
)
_CJK_SENTENCES = (
    "这个函数在读取大文件时会一次性加载全部内容，导致内存占用过高。",
    "我们需要先修复会话文件的头部，然后再处理工具调用的配对问题。",
    "测试在本地可以通过，但是在 CI 上因为时区不同而失败。",
    "压缩之后上下文从十六万个 token 降到了两万左右。",
    "请注意：日志中的时间戳是 UTC，而不是本地时间。",
    "セッションファイルの最後の行が途中で切れています。",
    "このツール呼び出しには対応する結果がありません。",
    "캐시 적중률이 낮아서 비용이 예상보다 높습니다.",
)
_CJK_PROMPTS = (
    "请帮我看看 {path} 里的这个错误是怎么回事？",
    "把 {func} 改成流式处理，不要一次性读入内存。",
    "为什么这个命令在 CI 上失败：`{cmd}`",
    "テストが失敗している原因を調べてください: {path}",
    "{path} の型エラーを直して、テストも追加してください。",
)
_PROMPTS = (
    "Can you fix the failing test in {path}?",
    "Run the test suite and tell me what breaks.",
    "Refactor {func} in {path} so it streams instead of loading everything into memory.",
    "Why does `{cmd}` fail on CI but not locally?",
    "Add a --{flag} option to the CLI and document it.",
    "Look at the logs and figure out why the {word} worker keeps restarting.",
    "continue",
    "ok, go ahead",
    "Please review the last change to {path} and suggest improvements.",
    "The build is broken again after the last merge, can you check {path}?",
    "Write a small benchmark for {func} and report the numbers.",
    "Search the repo for every caller of {func} and update them to the new signature.",
    "Fetch the upstream docs for the {word} API and check whether we use it correctly.",
)
_STEER = (
    "also check the {word} module while you're at it",
    "wait, don't touch {path}",
    "use the existing helper instead of writing a new one",
    "还有，顺便把 {path} 的注释也更新一下",
)
_OPENERS = (
    "I'll start by reading {path}.",
    "Let me run the tests to see the current state.",
    "Let me look for the callers of {func} first.",
    "I'll check the recent changes to {path}.",
    "Now I'll apply the fix.",
    "Let me verify that with a quick command.",
    "先看一下 {path} 的实现。",
)
_COMMANDS = (
    "pytest -q", "pytest -x tests/test_{w}.py", "npm test", "pnpm lint", "cargo build --release",
    "git status", "git diff --stat", "git log --oneline -20", "ls -la {d}", "rg -n '{w}' src",
    "python -m {w} --help", "make check", "du -sh {d}", "tail -n 200 logs/{w}.log",
    "node scripts/{w}.mjs", "wc -l {d}/*.py",
)
_EXTS = (".py", ".py", ".py", ".ts", ".ts", ".md", ".json", ".rs", ".toml", ".yaml")


def _pool_line(r: random.Random) -> str:
    w = _WORDS
    n = len(w)

    def rw() -> str:
        return w[r.randrange(n)]

    t = r.random()
    ind = "    " * r.randrange(4)
    if t < 0.30:
        k = r.randrange(10)
        if k == 0:
            return (
                f"{ind}def {rw()}_{rw()}(self, {rw()}: {r.choice(_TYPES)}, "
                f"{rw()}: int = {r.randrange(100)}) -> {r.choice(_TYPES)}:"
            )
        if k == 1:
            return f"{ind}{rw()}_{rw()} = self.{rw()}.get({rw()!r}, {r.randrange(1000)})"
        if k == 2:
            return f"{ind}if not {rw()} or len({rw()}_{rw()}) > {r.randrange(4096)}:"
        if k == 3:
            return f'{ind}return {{"{rw()}": {rw()}, "{rw()}": {r.randrange(100)}}}'
        if k == 4:
            return f"{ind}for {rw()} in self.{rw()}_{rw()}:"
        if k == 5:
            return f"{ind}const {rw()}{rw().title()} = await {rw()}.{rw()}({rw()}, {{ {rw()}: {r.randrange(100)} }});"
        if k == 6:
            return f'{ind}raise ValueError(f"invalid {rw()}: {{{rw()}!r}}")'
        if k == 7:
            return ""
        if k == 8:
            return f"from {rw()}.{rw()} import {rw().title()}{rw().title()}"
        return f"{ind}# {rw()} the {rw()} before {rw()}ing the {rw()}"
    if t < 0.50:
        return (
            f"2026-02-{r.randrange(1, 29):02d}T{r.randrange(24):02d}:{r.randrange(60):02d}:"
            f"{r.randrange(60):02d}.{r.randrange(1000):03d}Z {r.choice(_LEVELS)} [{rw()}-{r.randrange(8)}] "
            f"{rw()} {rw()} {r.choice(_VERBS)} {r.randrange(1, 5000)} {rw()}s in {r.randrange(1, 900)}ms "
            f"(id={r.getrandbits(32):08x})"
        )
    if t < 0.62:
        k = r.randrange(6)
        if k < 4:
            return f"tests/test_{rw()}.py::test_{rw()}_{rw()} PASSED [{r.randrange(101):3d}%]"
        if k == 4:
            return f"tests/test_{rw()}.py::test_{rw()}_{rw()} FAILED [{r.randrange(101):3d}%]"
        return f"E       AssertionError: assert {r.randrange(1000)} == {r.randrange(1000)}"
    if t < 0.72:
        return (
            f'{{"{rw()}": {r.randrange(10000)}, "{rw()}": "{rw()}-{rw()}", '
            f'"{rw()}": [{r.randrange(100)}, {r.randrange(100)}], "ok": {"true" if r.random() < 0.8 else "false"}}}'
        )
    if t < 0.80:
        return (
            f"-rw-r--r--  1 dev dev {r.randrange(100, 10**6):>8} Feb {r.randrange(1, 29):2d} "
            f"{r.randrange(24):02d}:{r.randrange(60):02d} {rw()}_{rw()}{r.choice(_EXTS)}"
        )
    if t < 0.95:
        return f"{ind}The {rw()} {rw()} {r.choice(_VERBS)} every {rw()} when the {rw()} is {rw()}."
    return r.choice(_CJK_SENTENCES) + f" ({rw()}={r.randrange(100)})"


def _prose_sentence(r: random.Random) -> str:
    w = _WORDS
    if r.random() < 0.08:
        return r.choice(_CJK_SENTENCES)
    a, b, c, d, e = (w[r.randrange(len(w))] for _ in range(5))
    k = r.randrange(5)
    if k == 0:
        return f"The {a} {b} {r.choice(_VERBS)} the {c} before the {d} is flushed."
    if k == 1:
        return f"I checked `{a}_{b}` and it {r.choice(_VERBS)} each {c} twice, which explains the {d} {e}."
    if k == 2:
        return f"So the fix is to keep the {a} {b} and only drop the {c} when the {d} is stale."
    if k == 3:
        return f"That means `{a}.{b}()` must not touch the {c} until the {d} {e} finishes."
    return f"Next I'll verify that the {a} {b} still {r.choice(_VERBS)} {r.randrange(2, 500)} {c}s."


def _png(r: random.Random, w: int, h: int) -> bytes:
    raw = b"".join(b"\x00" + r.randbytes(w * 3) for _ in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


class _Pools:
    __slots__ = ("text", "prose", "b64", "b62", "images")

    def __init__(self) -> None:
        r = random.Random(0x5EED5)
        lines: list[str] = []
        size = 0
        while size < 2_000_000:
            line = _pool_line(r)
            lines.append(line)
            size += len(line) + 1
        self.text = "\n".join(lines) + "\n"
        parts: list[str] = []
        size = 0
        while size < 400_000:
            s = _prose_sentence(r)
            parts.append(s)
            parts.append("\n\n" if r.random() < 0.15 else " ")
            size += len(s) + 1
        self.prose = "".join(parts)
        self.b64 = base64.b64encode(r.randbytes(96_000)).decode("ascii")
        self.b62 = "".join(r.choices(_B62, k=65_536))
        self.images = [
            ("image/png", base64.b64encode(_png(r, w, h)).decode("ascii"))
            for w, h in ((8, 8), (24, 16), (48, 32))
        ]


_POOLS: _Pools | None = None


def _pools() -> _Pools:
    global _POOLS
    if _POOLS is None:
        _POOLS = _Pools()
    return _POOLS


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

_M32 = 0xFFFFFFFF
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _result_order(n_calls: int, target: str | None) -> tuple[list[int], int | None]:
    """Which calls get a result line, in order, and the one whose result is written late,
    for the corruption being injected into this turn."""
    order = list(range(n_calls))
    if target == "missing_result":
        order.pop()
    elif target == "no_id_call":
        order.remove(0)
    moved = order.pop() if target == "separated_result" else None
    return order, moved


def _plain_args(call, old_key: str, new_key: str) -> dict[str, Any]:
    """Tool arguments as pi and plain Messages tools take them (edits name their keys differently)."""
    kind = call.kind
    if kind == "read":
        return {"path": call.path}
    if kind == "write":
        return {"path": call.path, "content": call.arg}
    if kind == "edit":
        return {"path": call.path, old_key: call.arg, new_key: call.arg2}
    if kind == "exec":
        return {"command": call.arg}
    if kind == "grep":
        return {"pattern": call.arg, "path": call.path}
    return {"url": call.arg}


def _mix32(x: int) -> int:
    """A bijection on 32-bit ints (distinct inputs give distinct ids)."""
    x &= _M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _M32
    x ^= x >> 16
    return x


def _numbered(text: str, first: int = 1) -> str:
    """``cat -n`` style numbering, as Claude Code's Read tool returns it."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.split("\n"), first))


class _Call:
    __slots__ = ("kind", "path", "arg", "arg2", "out", "err", "image", "ms", "cid", "name", "noid")

    def __init__(self, kind: str, path: str, arg: str, arg2: str, out: str, err: bool, image: Any, ms: int):
        self.kind = kind
        self.path = path
        self.arg = arg
        self.arg2 = arg2
        self.out = out
        self.err = err
        self.image = image
        self.ms = ms
        self.cid: str | None = None
        self.name: str | None = None  # overrides the format's tool name (bad_tool_name)
        self.noid = False


class _Step:
    __slots__ = ("thinking", "text", "calls", "stop")

    def __init__(self, thinking: str | None, text: str | None, calls: list[_Call], stop: str):
        self.thinking = thinking
        self.text = text
        self.calls = calls
        self.stop = stop  # toolUse | stop | error | aborted | partial


class _Turn:
    __slots__ = ("prompts", "steps", "corruption", "target")

    def __init__(self) -> None:
        self.prompts: list[tuple[str, Any]] = []
        self.steps: list[_Step] = []
        self.corruption: str | None = None
        self.target = -1  # index of the step that carries a tool corruption


_PI_NAMES = {"read": "read", "write": "write", "edit": "edit", "exec": "exec", "grep": "grep", "web_fetch": "web_fetch"}
_CL_NAMES = {"read": "Read", "write": "Write", "edit": "Edit", "exec": "Bash", "grep": "Grep", "web_fetch": "WebFetch"}
_MS_NAMES = {"read": "read", "write": "write", "edit": "edit", "exec": "bash", "grep": "grep", "web_fetch": "web_fetch"}
_TOOL_KINDS = ("read", "exec", "edit", "write", "grep", "web_fetch")
_TOOL_WEIGHTS = (30, 30, 12, 8, 12, 8)
_TOOL_CUM = tuple(sum(_TOOL_WEIGHTS[: i + 1]) for i in range(len(_TOOL_WEIGHTS)))

# pi providers: (api, provider, model, $/M rates (input, output, cacheRead, cacheWrite), id style, cache ttl ms)
_PI_PROVIDERS = (
    ("anthropic-messages", "anthropic", "claude-sonnet-4-6", (3.0, 15.0, 0.3, 3.75), "toolu", 5 * 60_000),
    ("openai-completions", "vllm", "qwen3.5-9b", (0.0, 0.0, 0.0, 0.0), "indexed", 0),
)
_CLAUDE_MODEL = "claude-opus-4-6"
_CLAUDE_VERSION = "2.1.39"
_CLAUDE_CACHE_TTL = 60 * 60_000


def _as_utc_ms(start: datetime) -> int:
    if start.tzinfo is None:
        start = start.replace(tzinfo=timezone.utc)
    return int(start.timestamp() * 1000)


# --------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------


class SessionGenerator:
    """Iterable of JSONL lines; after a full iteration, :attr:`stats` holds the counts.

    Iterating again restarts from scratch and yields the same bytes.
    """

    def __init__(
        self,
        fmt: str,
        *,
        seed: int = 0,
        turns: int = 20,
        target_bytes: int | None = None,
        tool_ratio: float = 0.6,
        parallel_calls: bool = True,
        compactions: int = 0,
        start: datetime = DEFAULT_START,
        corruptions: Sequence[str] = (),
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        if isinstance(corruptions, str):
            corruptions = (corruptions,)
        corruptions = tuple(corruptions)
        seen: set[str] = set()
        for name in corruptions:
            if name not in CORRUPTIONS:
                raise ValueError(f"unknown corruption {name!r}; expected one of {', '.join(CORRUPTIONS)}")
            if fmt not in CORRUPTIONS[name]:
                supported = ", ".join(f for f in FORMATS if f in CORRUPTIONS[name])
                raise ValueError(f"corruption {name!r} does not apply to format {fmt!r} (supported: {supported})")
            if name in seen:
                raise ValueError(f"corruption {name!r} given twice")
            seen.add(name)
        if "missing_header" in seen and "invalid_header" in seen:
            raise ValueError("corruptions 'missing_header' and 'invalid_header' exclude each other")
        if not isinstance(turns, int) or turns < 1:
            raise ValueError(f"turns must be a positive integer, got {turns!r}")
        if target_bytes is not None and (not isinstance(target_bytes, int) or target_bytes < 1):
            raise ValueError(f"target_bytes must be a positive integer, got {target_bytes!r}")
        if not 0.0 <= tool_ratio <= 1.0:
            raise ValueError(f"tool_ratio must be in [0, 1], got {tool_ratio!r}")
        if not isinstance(compactions, int) or compactions < 0:
            raise ValueError(f"compactions must be a non-negative integer, got {compactions!r}")
        if compactions and fmt == "messages":
            raise ValueError("format 'messages' has no compaction record; use compactions=0")
        self.fmt = fmt
        self.seed = seed
        self.turns = turns
        self.target_bytes = target_bytes
        self.tool_ratio = float(tool_ratio)
        self.parallel_calls = bool(parallel_calls)
        self.compactions = compactions
        self.start = start
        self.corruptions = corruptions
        self.stats: dict[str, Any] | None = None

    # ------------------------------------------------------------------ setup

    def _reset(self) -> None:
        fmt = self.fmt
        self.rng = rng = random.Random(f"ctxtool.synth:{fmt}:{self.seed}")
        self._rnd = rng.random
        self.P = _pools()
        self._v1 = fmt == "pi-v1"
        self._clock = _as_utc_ms(self.start)
        self._day = -1
        self._day_prefix = ""
        # emission state
        self._lineno = 0
        self._bytes = 0
        self._counts: Counter[str] = Counter()
        self._records: list[dict[str, Any]] = []
        self._eol = b"\r\n" if "crlf" in self.corruptions else b"\n"
        self._bom = "bom" in self.corruptions
        self._torn = "torn_tail" in self.corruptions
        self._held: tuple[bytes, Any] | None = None
        self._type_key = "role" if fmt == "messages" else "type"
        # ids and tree
        self._id_salt = rng.getrandbits(32)
        self._id_n = 0
        self._dangling_n = 0
        self._b62_n = 0
        self._leaf: str | None = None
        self._v1_index = 0
        # session identity
        proj = self._pick(("ctx-service", "clawd", "webapp", "pipeline", "infra-tools", "notes-api"))
        self._cwd = f"/home/dev/projects/{proj}"
        self._session_id = self._uuid()
        pkg = proj.replace("-", "_")
        self._paths = [
            f"{d}/{self._pick(_WORDS)}_{self._pick(_WORDS)}{self._pick(_EXTS)}"
            for d in (f"src/{pkg}", f"src/{pkg}", "src/lib", "tests", "scripts", "docs")
            for _ in range(6)
        ]
        self._funcs = [f"{self._pick(_WORDS)}_{self._pick(_WORDS)}" for _ in range(20)]
        self._read_files: dict[str, None] = {}
        self._modified_files: dict[str, None] = {}
        # model / usage
        self._prov = 0
        self._thinking_level = self._pick(("low", "medium", "medium", "high"))
        self._base_ctx = 9_000 + self._ri(0, 6_000)
        self._ctx = self._base_ctx
        self._cached = 0
        self._last_call_ms = 0
        self._turn_tokens = 0
        self._turn_first_id: str | None = None
        self._turn_first_index = 0
        self._pending_missing_header = False
        # turn scheduling
        self._budget: int | None = None  # bytes left before target_bytes (byte mode only)
        self._dup = 3 if fmt == "claude" else 1  # Claude lines repeat tool output in toolUseResult
        self._tool_calls = 0
        self._tool_results = 0
        self._turns_done = 0
        self._compactions_done = 0
        turn_kinds = [c for c in self.corruptions if c not in _FILE_LEVEL]
        self._turn_kinds = turn_kinds
        k, n = len(turn_kinds), self.compactions
        if self.target_bytes is None:
            t = max(self.turns, k + 2 if k else 1, n + 1)
            self._T = t
            self._corr_at = {1 + (i * (t - 2)) // k: kind for i, kind in enumerate(turn_kinds)} if k else {}
            self._compact_at = {(i * t) // (n + 1) for i in range(1, n + 1)}
        else:
            tb = self.target_bytes
            self._T = 0
            self._corr_queue = [((i + 1) * tb // (k + 1), kind) for i, kind in enumerate(turn_kinds)]
            self._compact_queue = [(i * tb) // (n + 1) for i in range(1, n + 1)]

    # ------------------------------------------------------------ primitives

    def _iso(self, ms: int) -> str:
        day, rem = divmod(ms, 86_400_000)
        if day != self._day:
            self._day = day
            self._day_prefix = datetime.fromtimestamp(day * 86_400, tz=timezone.utc).strftime("%Y-%m-%dT")
        s, msec = divmod(rem, 1000)
        h, s = divmod(s, 3600)
        m, s = divmod(s, 60)
        return f"{self._day_prefix}{h:02d}:{m:02d}:{s:02d}.{msec:03d}Z"

    def _ri(self, a: int, b: int) -> int:
        """Uniform int in [a, b); much cheaper than ``Random.randrange``."""
        return a + int(self._rnd() * (b - a))

    def _pick(self, seq: Sequence[Any]) -> Any:
        return seq[int(self._rnd() * len(seq))]

    def _tick(self, ms: int) -> int:
        self._clock += ms
        return self._clock

    def _user_gap(self) -> int:
        r = self._rnd()
        if self._turns_done == 0:
            return self._ri(300, 4_000)
        if r < 0.70:
            return self._ri(4_000, 120_000)
        if r < 0.90:
            return self._ri(120_000, 900_000)
        if r < 0.98:
            return self._ri(1_800_000, 10_800_000)  # idle, then a burst
        return self._ri(28_800_000, 72_000_000)  # overnight

    def _pid(self) -> str:
        self._id_n += 1
        return f"{_mix32(self._id_salt + self._id_n):08x}"

    def _missing_pid(self) -> str:
        # from a counter range the session never reaches: guaranteed absent
        self._dangling_n += 1
        return f"{_mix32(self._id_salt + 0x80000000 + self._dangling_n):08x}"

    def _uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def _b62(self, k: int) -> str:
        """Random-looking base62 id of length ``k``, unique within the session.

        The head is a random slice of a base62 pool; the last 8 characters come
        from a 32-bit bijection of a counter, so two calls never collide.
        """
        pool = self.P.b62
        self._b62_n += 1
        s = self._ri(0, len(pool) - k)
        return pool[s : s + k - 8] + f"{_mix32((self._id_salt ^ 0x2545F491) + self._b62_n):08x}"

    def _slice(self, src: str, n: int) -> str:
        size = len(src)
        if n > size // 2:
            n = size // 2
        s = src.find("\n", self._ri(0, size - n)) + 1
        e = src.rfind("\n", s, s + n)
        if e <= s:
            e = s + n
        return src[s:e]

    def _prose(self, n: int) -> str:
        src = self.P.prose
        if self._budget is not None:
            room = max(256, self._budget // 10)
            if n > room:
                n = room
            self._budget -= n
        size = len(src)
        if n > size // 2:
            n = size // 2
        s = src.find(". ", self._ri(0, size - n)) + 2
        e = src.rfind(".", s, s + n)
        if e <= s:
            e = s + n - 1
        return src[s : e + 1].strip()

    def _sig(self) -> str:
        b = self.P.b64
        n = self._ri(280, 1200) & ~3
        s = self._ri(0, len(b) - n) & ~3
        return b[s : s + n]

    def _size(self) -> int:
        r = self._rnd()
        if r < 0.50:
            n = self._ri(60, 2_000)
        elif r < 0.85:
            n = self._ri(2_000, 20_000)
        elif r < 0.98:
            n = self._ri(20_000, 80_000)
        else:
            n = self._ri(100_000, 400_000)
        if self._budget is not None:
            room = max(256, self._budget // 10)
            if n > room:
                n = room
            self._budget -= n * self._dup
        return n

    def _path(self) -> str:
        return self._paths[self._ri(0, len(self._paths))]

    def _func(self) -> str:
        return self._funcs[self._ri(0, len(self._funcs))]

    def _fill(self, template: str) -> str:
        cmd = self._pick(_COMMANDS).format(w=self._pick(_WORDS), d=self._path().rsplit("/", 1)[0])
        return template.format(
            path=self._path(), func=self._func(), cmd=cmd, flag=self._pick(_WORDS), word=self._pick(_WORDS)
        )

    # -------------------------------------------------------------- planning

    def _plan(self, corruption: str | None) -> _Turn:
        plan = _Turn()
        plan.corruption = corruption
        n_prompts = 2 if self._rnd() < 0.08 else 1
        for _ in range(n_prompts):
            r = self._rnd()
            if r < 0.12:
                text = self._fill(self._pick(_CJK_PROMPTS))
            elif r < 0.4:
                text = self._fill(self._pick(_PROMPTS)) + "\n\n" + self._prose(self._ri(80, 1500))
            else:
                text = self._fill(self._pick(_PROMPTS))
            image = self.P.images[self._ri(0, 3)] if self._rnd() < 0.04 else None
            plan.prompts.append((text, image))
        needs_tools = corruption in _NEEDS_TOOLS or (corruption == "bad_control_char" and not self.fmt.startswith("pi"))
        r = self._rnd()
        ending = "stop"
        if corruption == "empty_error_turn":
            ending = "error"
        elif corruption == "partial_json_call" or (corruption == "bad_control_char" and self.fmt.startswith("pi")):
            ending = "partial"
        elif corruption is not None:
            pass  # keep a corrupted turn otherwise ordinary
        elif r < 0.035:
            ending = "error"
        elif r < 0.06:
            ending = "aborted"
        steps = plan.steps
        # close to target_bytes: fewer tool steps, so the overshoot stays small
        max_steps = 6 if self._budget is None else min(6, self._budget // (6_000 * self._dup))
        while (needs_tools and not steps) or (len(steps) < max_steps and self._rnd() < self.tool_ratio):
            two = not steps and self.parallel_calls and corruption in ("missing_result", "no_id_call")
            min_calls = 2 if two else 1
            steps.append(self._tool_step(min_calls))
        if needs_tools:
            plan.target = 0
            if corruption in ("invalid_utf8", "bad_control_char"):
                steps[0].calls[0] = self._make_call("exec")
        thinking = self._prose(self._ri(60, 2500)) if self._rnd() < 0.5 else None
        if ending == "stop":
            text = self._prose(self._ri(80, 3000))
            if self._rnd() < 0.3:
                text = "## Summary\n\n" + text + "\n\n- " + self._fill("`{path}`") + "\n- " + self._fill("`{func}`")
            steps.append(_Step(thinking, text, [], "stop"))
        elif ending == "aborted":
            steps.append(_Step(thinking, self._prose(self._ri(20, 300)), [], "aborted"))
        elif ending == "error":
            steps.append(_Step(None, None, [], "error"))
        else:  # partial tool call left by an interrupted stream
            call = self._make_call("exec")
            steps.append(_Step(thinking, self._fill(self._pick(_OPENERS)), [call], "partial"))
        return plan

    def _tool_step(self, min_calls: int) -> _Step:
        n = 1
        if self.parallel_calls and self._rnd() < 0.3:
            n = self._ri(2, 5)
        n = max(n, min_calls)
        thinking = self._prose(self._ri(40, 1800)) if self._rnd() < 0.45 else None
        text = self._fill(self._pick(_OPENERS)) if self._rnd() < 0.6 else None
        calls = []
        for _ in range(n):
            x = self._ri(0, _TOOL_CUM[-1])
            kind = "web_fetch"
            for k, c in zip(_TOOL_KINDS, _TOOL_CUM):
                if x < c:
                    kind = k
                    break
            calls.append(self._make_call(kind))
        return _Step(thinking, text, calls, "toolUse")

    def _make_call(self, kind: str) -> _Call:
        path = self._path()
        err = self._rnd() < (0.12 if kind == "exec" else 0.05)
        arg = arg2 = ""
        image = None
        ms = self._ri(15, 1_500)
        if kind == "read":
            if self._rnd() < 0.03:
                path = path.rsplit(".", 1)[0] + ".png"
                image = self.P.images[self._ri(0, 3)]
                out = f"Read image file [{image[0]}]"
            else:
                out = (
                    f"ENOENT: no such file or directory, access '{self._cwd}/{path}'"
                    if err
                    else self._slice(self.P.text, self._size())
                )
            self._read_files[path] = None
        elif kind == "write":
            arg = self._slice(self.P.text, min(self._size(), 12_000))
            out = (
                f"EACCES: permission denied, open '{self._cwd}/{path}'"
                if err
                else f"Successfully wrote {len(arg)} bytes to {path}"
            )
            self._modified_files[path] = None
        elif kind == "edit":
            arg = self._slice(self.P.text, self._ri(40, 1200))
            arg2 = self._slice(self.P.text, self._ri(40, 1600))
            out = (
                f"Could not find the exact text in {path}. "
                "The old text must match exactly including all whitespace and newlines."
                if err
                else f"Successfully replaced text in {path}."
            )
            self._modified_files[path] = None
        elif kind == "exec":
            arg = self._pick(_COMMANDS).format(w=self._pick(_WORDS), d=path.rsplit("/", 1)[0])
            out = self._slice(self.P.text, self._size())
            ms = self._ri(40, 45_000)
            if err:
                out += "\n\nCommand exited with code 1"
        elif kind == "grep":
            arg = self._pick(_WORDS) + ("_" + self._pick(_WORDS) if self._rnd() < 0.5 else "")
            path = path.rsplit("/", 1)[0]
            out = (
                f"grep: {path}/missing: No such file or directory"
                if err
                else self._slice(self.P.text, min(self._size(), 30_000))
            )
        else:  # web_fetch
            arg = f"https://docs.example.com/{self._pick(_WORDS)}/{self._pick(_WORDS)}"
            out = "Fetch failed: HTTP 404 Not Found" if err else self._prose(min(self._size(), 60_000))
            ms = self._ri(300, 8_000)
        return _Call(kind, path, arg, arg2, out, err, image, ms)

    # ------------------------------------------------------------ usage model

    def _usage_numbers(self, out_chars: int, ttl: int, cache: bool) -> tuple[int, int, int, int]:
        """(input, output, cacheRead, cacheWrite) for an assistant call now."""
        prefix = self._ctx
        out = out_chars // 4 + self._ri(1, 40)
        if cache:
            fresh = self._last_call_ms and (self._clock - self._last_call_ms) <= ttl
            cr = min(self._cached, prefix) if fresh else 0
            inp = self._ri(1, 12)
            cw = max(0, prefix - cr - inp)
            self._cached = prefix
        else:
            inp, cr, cw = prefix, 0, 0
        self._last_call_ms = self._clock
        self._grow(out_chars)
        return inp, out, cr, cw

    def _grow(self, chars: int) -> None:
        t = chars // 4
        self._ctx += t
        self._turn_tokens += t

    # ------------------------------------------------------------- emission

    def _emit(self, items: list[list[Any]]) -> Iterator[bytes]:
        dumps = orjson.dumps
        eol = self._eol
        key = self._type_key
        counts = self._counts
        for obj, tag, mangle in items:
            if obj.__class__ is bytes:
                data = obj
            else:
                data = dumps(obj)
                counts[obj.get(key, "?")] += 1
            if mangle is not None:
                if mangle == "ctrl":
                    data = data.replace(_CTRL_SENTINEL.encode(), _CTRL_BYTES)
                elif mangle == "utf8":
                    data = data.replace(_UTF8_SENTINEL.encode(), _BAD_UTF8)
                elif mangle == "nul":
                    data = b"\x00" * 24 + data
            self._lineno += 1
            if tag is not None:
                self._records.append({"kind": tag[0], "line": self._lineno, "id": tag[1], "detail": tag[2]})
            line = data + eol
            if self._lineno == 1 and self._bom:
                line = BOM + line
            self._bytes += len(line)
            if self._torn:
                held = self._held
                self._held = (line, obj)
                if held is not None:
                    yield held[0]
            else:
                yield line

    def _finish(self) -> Iterator[bytes]:
        if self._torn and self._held is not None:
            line, obj = self._held
            body = line[: -len(self._eol)]
            cut = body[: max(1, len(body) // 2)]
            self._bytes -= len(line) - len(cut)
            ident = None
            if isinstance(obj, dict):
                ident = obj.get("uuid") or obj.get("id")
            detail = f"last line cut to {len(cut)} of {len(body)} bytes, no newline"
            self._records.append({"kind": "torn_tail", "line": self._lineno, "id": ident, "detail": detail})
            self._held = None
            yield cut

    def _run(self) -> Iterator[bytes]:
        self._reset()
        if "crlf" in self.corruptions:
            self._records.append({"kind": "crlf", "line": 1, "id": None, "detail": "every line ends with CRLF"})
        if self._bom:
            self._records.append({"kind": "bom", "line": 1, "id": None, "detail": "UTF-8 BOM before the first line"})
        yield from self._emit(self._preamble())
        turn = 0
        by_bytes = self.target_bytes is not None
        last_corrupted = False
        while True:
            if by_bytes:
                tb = self.target_bytes
                assert tb is not None
                if self._bytes >= tb and not self._corr_queue and not self._compact_queue and not last_corrupted:
                    break
                self._budget = tb - self._bytes
                compact = turn > 0 and bool(self._compact_queue) and self._bytes >= self._compact_queue[0]
                if compact:
                    self._compact_queue.pop(0)
                corr = None
                if turn > 0 and self._corr_queue and (self._bytes >= self._corr_queue[0][0] or self._bytes >= tb):
                    corr = self._corr_queue.pop(0)[1]
            else:
                if turn >= self._T:
                    break
                compact = turn in self._compact_at
                corr = self._corr_at.get(turn)
            if compact:
                yield from self._emit(self._compaction())
            yield from self._emit(self._turn(self._plan(corr)))
            last_corrupted = corr is not None
            turn += 1
        yield from self._finish()
        self.stats = {
            "format": self.fmt,
            "seed": self.seed,
            "bytes": self._bytes,
            "lines": self._lineno,
            "turns": turn,
            "entries": dict(sorted(self._counts.items())),
            "tool_calls": self._tool_calls,
            "tool_results": self._tool_results,
            "compactions": self._compactions_done,
            "corruptions": sorted(self._records, key=lambda r: (r["line"], r["kind"])),
        }

    def __iter__(self) -> Iterator[bytes]:
        return self._run()

    # ------------------------------------------------------------- dispatch

    def _preamble(self) -> list[list[Any]]:
        if self.fmt in _PI:
            return self._pi_preamble()
        if self.fmt == "claude":
            return self._cl_preamble()
        return []

    def _turn(self, plan: _Turn) -> list[list[Any]]:
        self._turn_tokens = 0
        if self.fmt == "claude":
            items = self._cl_turn(plan)
        elif self.fmt == "messages":
            items = self._ms_turn(plan)
        else:
            items = self._pi_turn(plan)
        return items

    def _compaction(self) -> list[list[Any]]:
        self._compactions_done += 1
        if self.fmt == "claude":
            return self._cl_compaction()
        return self._pi_compaction()

    def _summary_text(self) -> str:
        files = list(self._modified_files)[-6:] or [self._path()]
        return (
            "## Goal\n" + self._prose(self._ri(100, 600))
            + "\n\n## Progress\n### Done\n"
            + "\n".join(f"- [x] {self._prose(self._ri(40, 200))}" for _ in range(self._ri(2, 6)))
            + "\n\n## Key Decisions\n" + self._prose(self._ri(200, 2500))
            + "\n\n## Files\n" + "\n".join(f"- {p}" for p in files)
            + "\n\n## Next Steps\n" + self._prose(self._ri(80, 800))
        )

    # -------------------------------------------------------------- pi / v1

    def _pi_wrap(self, typ: str, ms: int, extra: dict[str, Any]) -> dict[str, Any]:
        if self._v1:
            self._v1_index += 1
            e = {"type": typ, "timestamp": self._iso(ms)}
        else:
            eid = self._pid()
            e = {"type": typ, "id": eid, "parentId": self._leaf, "timestamp": self._iso(ms)}
            self._leaf = eid
        e.update(extra)
        return e

    def _pi_msg(self, msg: dict[str, Any], ms: int) -> dict[str, Any]:
        if self._v1:
            self._v1_index += 1
            return {"type": "message", "timestamp": self._iso(ms), "message": msg}
        eid = self._pid()
        e = {"type": "message", "id": eid, "parentId": self._leaf, "timestamp": self._iso(ms), "message": msg}
        self._leaf = eid
        return e

    def _pi_preamble(self) -> list[list[Any]]:
        api, provider, model = _PI_PROVIDERS[0][:3]
        ms = self._clock
        ts = self._iso(ms)
        header_id = self._uuid()
        items: list[list[Any]] = []
        if self._v1:
            header = {"type": "session", "id": header_id, "timestamp": ts, "cwd": self._cwd,
                      "provider": provider, "modelId": model, "thinkingLevel": self._thinking_level}
        else:
            header = {"type": "session", "version": 3, "id": header_id, "timestamp": ts, "cwd": self._cwd}
        if "missing_header" in self.corruptions:
            pass
        elif "invalid_header" in self.corruptions:
            bad = dict(header)
            bad["id"] = ""
            items.append([bad, ("invalid_header", None, "first line is JSON with type 'session' but an empty id"), None])
        else:
            items.append([header, None, None])
        if self._v1:
            self._v1_index = 0  # the header is entry 0
        else:
            ms = self._tick(1)
            items.append([self._pi_wrap("model_change", ms, {"provider": provider, "modelId": model}), None, None])
            items.append([self._pi_wrap("thinking_level_change", ms, {"thinkingLevel": self._thinking_level}), None, None])
            ms = self._tick(3)
            items.append([self._pi_wrap("custom", ms, {"customType": "model-snapshot", "data": {
                "timestamp": ms, "provider": provider, "modelApi": api, "modelId": model}}), None, None])
        if "missing_header" in self.corruptions:
            first = items[0][0] if items else None
            ident = first.get("id") if first else None
            if first is None:
                # v1 has nothing but the header before the first turn; tag the first turn's first line later
                self._pending_missing_header = True
            else:
                items[0][1] = ("missing_header", ident, "no session header; the file starts with an entry")
        return items

    def _pi_call_block(self, call: _Call, j: int, id_style: str) -> dict[str, Any]:
        kind = call.kind
        args = _plain_args(call, "oldText", "newText")
        name = call.name or _PI_NAMES[kind]
        if call.noid:
            return {"type": "toolCall", "name": name, "arguments": args}
        cid = f"{_PI_NAMES[kind]}_{j}" if id_style == "indexed" else "toolu_01" + self._b62(22)
        call.cid = cid
        return {"type": "toolCall", "id": cid, "name": name, "arguments": args}

    def _pi_usage(self, nums: tuple[int, int, int, int], rates: tuple[float, float, float, float]) -> dict[str, Any]:
        i, o, cr, cw = nums
        ci, co, ccr, ccw = i * rates[0] / 1e6, o * rates[1] / 1e6, cr * rates[2] / 1e6, cw * rates[3] / 1e6
        return {"input": i, "output": o, "cacheRead": cr, "cacheWrite": cw, "totalTokens": i + o + cr + cw,
                "cost": {"input": round(ci, 8), "output": round(co, 8), "cacheRead": round(ccr, 8),
                         "cacheWrite": round(ccw, 8), "total": round(ci + co + ccr + ccw, 8)}}

    def _pi_result(self, call: _Call, ms: int, orphan_id: str | None = None) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": call.out}]
        if call.image is not None:
            content.append({"type": "image", "data": call.image[1], "mimeType": call.image[0]})
        msg: dict[str, Any] = {"role": "toolResult", "toolCallId": orphan_id or call.cid,
                               "toolName": call.name or _PI_NAMES[call.kind], "content": content}
        if call.kind == "exec":
            msg["details"] = {"status": "failed" if call.err else "completed", "exitCode": 1 if call.err else 0,
                              "durationMs": call.ms, "cwd": self._cwd}
        msg["isError"] = call.err
        msg["timestamp"] = ms
        self._grow(len(call.out))
        self._tool_results += 1
        return self._pi_msg(msg, ms)

    def _pi_user(self, text: str, image: Any, ms: int, as_string: bool = False) -> dict[str, Any]:
        content: Any
        if as_string:
            content = text
        else:
            content = [{"type": "text", "text": text}]
            if image is not None:
                content.append({"type": "image", "data": image[1], "mimeType": image[0]})
        self._grow(len(text) + (1600 if image is not None else 0))
        return self._pi_msg({"role": "user", "content": content, "timestamp": ms}, ms)

    def _pi_turn(self, plan: _Turn) -> list[list[Any]]:
        rng = self.rng
        c = plan.corruption
        items: list[list[Any]] = []
        v1 = self._v1
        # occasional model switch (the second provider reuses indexed tool ids like "exec_0")
        if self._turns_done > 0 and self._rnd() < 0.08:
            self._prov ^= 1
            api, provider, model = _PI_PROVIDERS[self._prov][:3]
            ms = self._tick(self._ri(500, 5_000))
            items.append([self._pi_wrap("model_change", ms, {"provider": provider, "modelId": model}), None, None])
            if not v1:
                items.append([self._pi_wrap("custom", ms + 2, {"customType": "model-snapshot", "data": {
                    "timestamp": ms + 2, "provider": provider, "modelApi": api, "modelId": model}}), None, None])
        api, provider, model, rates, id_style, ttl = _PI_PROVIDERS[self._prov]
        cache = id_style == "toolu"
        if self._rnd() < 0.03:
            ms = self._tick(self._user_gap())
            cmd = self._pick(_COMMANDS).format(w=self._pick(_WORDS), d="src")
            out = self._slice(self.P.text, self._ri(50, 4_000))
            items.append([self._pi_msg({"role": "bashExecution", "command": cmd, "output": out, "exitCode": 0,
                                        "cancelled": False, "truncated": False, "timestamp": ms}, ms), None, None])
            self._grow(len(out))
        # prompts
        first_prompt = len(items)
        first_index = self._v1_index + 1
        for k, (text, image) in enumerate(plan.prompts):
            ms = self._tick(self._user_gap() if k == 0 else self._ri(2_000, 40_000))
            if c == "blank_user_turn" and k == 0:
                as_string = self._rnd() < 0.5
                e = self._pi_user("   \n  ", None, ms, as_string=as_string)
                items.append([e, ("blank_user_turn", e.get("id"), "user message with whitespace-only content"), None])
            else:
                items.append([self._pi_user(text, image, ms), None, None])
        self._turn_first_id = items[first_prompt][0].get("id")
        self._turn_first_index = first_index
        if c == "blank_lines":
            items.append([b"", ("blank_lines", None, "an empty line and a whitespace-only line"), None])
            items.append([b"   ", None, None])
        first_asst = -1
        for si, step in enumerate(plan.steps):
            target = c if si == plan.target else None
            ms = self._tick(self._ri(1_200, 25_000))
            blocks: list[dict[str, Any]] = []
            out_chars = 0
            if step.stop == "error":
                empty = c == "empty_error_turn"
                err_msg = self._pick(("terminated", "overloaded_error: Overloaded", "fetch failed",
                                      "Request timed out after 600000ms"))
                msg = {"role": "assistant",
                       "content": [] if empty else [{"type": "text", "text": _ERROR_FALLBACK}],
                       "api": api, "provider": provider, "model": model, "usage": self._pi_usage((0, 0, 0, 0), rates),
                       "stopReason": "error", "errorMessage": err_msg, "timestamp": ms}
                e = self._pi_msg(msg, ms)
                tag = None
                if empty:
                    tag = ("empty_error_turn", e.get("id"), "assistant with content [] and stopReason 'error'")
                items.append([e, tag, None])
                if first_asst < 0:
                    first_asst = len(items) - 1
                if not v1:
                    ms2 = self._tick(5)
                    items.append([self._pi_wrap("custom", ms2, {"customType": "openclaw:prompt-error", "data": {
                        "timestamp": ms2, "runId": self._uuid(), "sessionId": self._session_id, "provider": provider,
                        "model": model, "api": api, "error": err_msg}}), None, None])
                break
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking,
                               "thinkingSignature": self._sig() if cache else "reasoning_content"})
                out_chars += len(step.thinking)
            if step.text:
                blocks.append({"type": "text", "text": step.text})
                out_chars += len(step.text)
            calls = step.calls
            if target == "bad_tool_name":
                calls[0].name = BAD_TOOL_NAME
                calls[0].err = True
                calls[0].out = f"Tool {BAD_TOOL_NAME} not found"
                calls[0].image = None
            elif target == "no_id_call":
                calls[0].noid = True
            for j, call in enumerate(calls):
                blocks.append(self._pi_call_block(call, j, id_style))
                out_chars += len(call.arg) + len(call.arg2) + 40
            tag = None
            mangle = None
            stop = step.stop
            if stop == "partial":
                call = calls[0]
                blk = blocks[-1]
                blk["arguments"] = {}
                partial = orjson.dumps({"command": call.arg}).decode()[: self._ri(8, 14)]
                if c == "bad_control_char":
                    partial += _CTRL_SENTINEL + "echo done"
                    mangle = "ctrl"
                    tag = ("bad_control_char", call.cid, "raw TAB/ESC bytes inside the partialJson string")
                else:
                    tag = ("partial_json_call", call.cid, "toolCall with partialJson and empty arguments")
                blk["partialJson"] = partial
                stop = self._pick(("aborted", "error"))
            self._tool_calls += len(calls)
            nums = self._usage_numbers(out_chars, ttl, cache)
            if stop == "aborted" and step.stop != "partial":
                nums = (nums[0], max(1, nums[1] // 3), nums[2], nums[3])
            msg = {"role": "assistant", "content": blocks, "api": api, "provider": provider, "model": model,
                   "usage": self._pi_usage(nums, rates), "stopReason": stop}
            if stop in ("aborted", "error") and step.stop in ("aborted", "partial"):
                msg["errorMessage"] = "Request was aborted" if stop == "aborted" else "terminated"
            msg["timestamp"] = ms
            msg["responseId"] = ("msg_01" + self._b62(22)) if cache else f"chatcmpl-{rng.getrandbits(32):08x}"
            e = self._pi_msg(msg, ms)
            if target == "bad_tool_name":
                tag = ("bad_tool_name", calls[0].cid, f"toolCall named {BAD_TOOL_NAME!r}")
            elif target == "no_id_call":
                tag = ("no_id_call", None, "toolCall without an id (its result is absent)")
            elif target == "missing_result":
                tag = ("missing_result", calls[-1].cid, "toolCall whose toolResult line was removed")
            items.append([e, tag, mangle])
            if first_asst < 0:
                first_asst = len(items) - 1
            if stop != "toolUse":
                continue
            # results
            order, moved = _result_order(len(calls), target)
            for j in order:
                call = calls[j]
                ms = self._tick(call.ms)
                r_tag = None
                r_mangle = None
                if target == "invalid_utf8" and j == order[0]:
                    call.out = call.out[: len(call.out) // 2] + _UTF8_SENTINEL + call.out[len(call.out) // 2 :]
                    r_mangle = "utf8"
                e = self._pi_result(call, ms)
                if r_mangle:
                    r_tag = ("invalid_utf8", call.cid, "invalid UTF-8 bytes inside a toolResult text")
                items.append([e, r_tag, r_mangle])
            if moved is not None:
                ms = self._tick(self._ri(1_000, 20_000))
                items.append([self._pi_user(self._fill(self._pick(_STEER)), None, ms), None, None])
                call = calls[moved]
                ms = self._tick(call.ms)
                e = self._pi_result(call, ms)
                items.append([e, ("separated_result", call.cid, "toolResult written after a later user message"), None])
            if target == "duplicate_result":
                call = calls[order[0]]
                ms = self._tick(self._ri(5, 200))
                e = self._pi_result(call, ms)
                detail = "second toolResult for the same toolCallId in one turn"
                items.append([e, ("duplicate_result", call.cid, detail), None])
            elif target == "orphan_result":
                call = self._make_call("exec")
                oid = "toolu_01" + self._b62(22) if cache else f"call_{rng.getrandbits(64):016x}"
                ms = self._tick(call.ms)
                e = self._pi_result(call, ms, orphan_id=oid)
                items.append([e, ("orphan_result", oid, "toolResult whose toolCall is not in the session"), None])
        if plan.steps and plan.steps[-1].stop != "error" and not v1:
            ms = self._tick(self._ri(5, 60))
            items.append([self._pi_wrap("custom", ms, {"customType": "openclaw.cache-ttl", "data": {
                "timestamp": ms, "provider": provider, "modelId": model}}), None, None])
        self._tree_corruption(items, c, first_asst, "id", "parentId")
        if c == "nul_bytes" and first_asst >= 0:
            it = items[first_asst]
            it[1] = ("nul_bytes", it[0].get("id"), "line starts with a run of NUL bytes")
            it[2] = "nul"
        if self._pending_missing_header:
            self._pending_missing_header = False
            items[0][1] = ("missing_header", None, "no session header; the file starts with an entry")
        self._turns_done += 1
        return items

    def _tree_corruption(self, items: list[list[Any]], c: str | None, b: int, id_key: str, parent_key: str) -> None:
        """duplicate_id / dangling_parent / parent_cycle on the first assistant line ``b`` and its predecessor."""
        if c not in ("duplicate_id", "dangling_parent", "parent_cycle") or b < 1:
            return
        a = b - 1
        while a >= 0 and not (isinstance(items[a][0], dict) and id_key in items[a][0]):
            a -= 1
        A, B = items[a][0], items[b][0]
        if c == "duplicate_id":
            old, new = B[id_key], A[id_key]
            B[id_key] = new
            for obj, _, _ in items[b + 1 :]:
                if isinstance(obj, dict):
                    if obj.get(parent_key) == old:
                        obj[parent_key] = new
                    if obj.get("sourceToolAssistantUUID") == old:
                        obj["sourceToolAssistantUUID"] = new
            if self._leaf == old:
                self._leaf = new
            items[b][1] = ("duplicate_id", new, "entry reuses the id of the entry before it")
        elif c == "dangling_parent":
            missing = self._missing_pid() if id_key == "id" else self._uuid()
            B[parent_key] = missing
            items[b][1] = ("dangling_parent", B[id_key], f"{parent_key} {missing} does not exist")
        else:
            A[parent_key] = B[id_key]
            items[a][1] = ("parent_cycle", A[id_key], f"{A[id_key]} and {B[id_key]} are each other's parent")

    def _pi_compaction(self) -> list[list[Any]]:
        ms = self._tick(self._ri(2_000, 60_000))
        summary = self._summary_text()
        before = self._ctx
        if self._v1:
            e = self._pi_wrap("compaction", ms, {"summary": summary, "firstKeptEntryIndex": self._turn_first_index,
                                                  "tokensBefore": before})
        else:
            extra: dict[str, Any] = {"summary": summary, "firstKeptEntryId": self._turn_first_id, "tokensBefore": before,
                                     "details": {"readFiles": list(self._read_files)[-12:],
                                                 "modifiedFiles": list(self._modified_files)[-12:]}}
            if self._rnd() < 0.5:
                extra["fromHook"] = True
            e = self._pi_wrap("compaction", ms, extra)
        self._ctx = self._base_ctx + len(summary) // 4 + self._turn_tokens
        self._cached = 0
        return [[e, None, None]]

    # --------------------------------------------------------------- claude

    def _cl_line(self, typ: str, parent: str | None, uid: str, ms: int, message: dict[str, Any]) -> dict[str, Any]:
        return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": self._cwd,
                "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main", "type": typ,
                "message": message, "uuid": uid, "timestamp": self._iso(ms)}

    def _cl_preamble(self) -> list[list[Any]]:
        items: list[list[Any]] = []
        if self._rnd() < 0.5:
            items.append([{"type": "summary", "summary": self._fill(self._pick(_PROMPTS))[:80],
                           "leafUuid": self._uuid()}, None, None])
        return items

    def _cl_user(self, content: Any, ms: int, grow: int) -> dict[str, Any]:
        uid = self._uuid()
        e = self._cl_line("user", self._leaf, uid, ms, {"role": "user", "content": content})
        e["permissionMode"] = "default"
        self._leaf = uid
        self._grow(grow)
        return e

    def _cl_input(self, call: _Call) -> tuple[str, dict[str, Any]]:
        kind = call.kind
        abspath = f"{self._cwd}/{call.path}"
        if kind == "read":
            inp: dict[str, Any] = {"file_path": abspath}
        elif kind == "write":
            inp = {"file_path": abspath, "content": call.arg}
        elif kind == "edit":
            inp = {"file_path": abspath, "old_string": call.arg, "new_string": call.arg2}
        elif kind == "exec":
            inp = {"command": call.arg, "description": f"Run {call.arg.split(' ', 1)[0]}"}
        elif kind == "grep":
            inp = {"pattern": call.arg, "path": abspath, "output_mode": "content", "-n": True}
        else:
            inp = {"url": call.arg, "prompt": "Summarize the relevant API details"}
        return call.name or _CL_NAMES[kind], inp

    def _cl_result(self, call: _Call, holder: str, ms: int, orphan_id: str | None = None) -> dict[str, Any]:
        kind = call.kind
        abspath = f"{self._cwd}/{call.path}"
        out = call.out
        tur: Any
        if call.name == BAD_TOOL_NAME:
            text = f"<tool_use_error>Error: No such tool available: {BAD_TOOL_NAME}</tool_use_error>"
            tur = f"Error: No such tool available: {BAD_TOOL_NAME}"
        elif call.err:
            if kind == "exec":
                text = "Exit code 1\n" + out
            else:
                text = f"<tool_use_error>{out}</tool_use_error>"
            tur = "Error: " + out
        elif kind == "read":
            if call.image is not None:
                text = None
                tur = {"type": "image", "file": {"base64": call.image[1], "type": call.image[0]}}
            else:
                text = _numbered(out)
                n = out.count("\n") + 1
                tur = {"type": "text", "file": {"filePath": abspath, "content": out, "numLines": n,
                                                "startLine": 1, "totalLines": n}}
        elif kind == "write":
            text = f"File created successfully at: {abspath}"
            tur = {"type": "create", "filePath": abspath, "content": call.arg, "structuredPatch": [], "originalFile": None}
        elif kind == "edit":
            snippet = call.arg2
            text = (f"The file {abspath} has been updated. "
                    "Here's the result of running `cat -n` on a snippet of the edited file:\n" + _numbered(snippet, 40))
            original = self._slice(self.P.text, min(self._size(), 30_000))
            old_lines = call.arg.split("\n")
            new_lines = snippet.split("\n")
            tur = {"filePath": abspath, "oldString": call.arg, "newString": call.arg2, "originalFile": original,
                   "structuredPatch": [{"oldStart": 40, "oldLines": len(old_lines),
                                        "newStart": 40, "newLines": len(new_lines),
                                        "lines": ["-" + x for x in old_lines] + ["+" + x for x in new_lines]}],
                   "userModified": False, "replaceAll": False}
        elif kind == "exec":
            text = out
            tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        elif kind == "grep":
            text = out
            tur = {"mode": "content", "numFiles": 0, "filenames": [], "content": out, "numLines": out.count("\n") + 1}
        else:
            text = out
            tur = {"bytes": len(out.encode()), "code": 200, "codeText": "OK", "result": out,
                   "durationMs": call.ms, "url": call.arg}
        content: Any = text
        if call.image is not None and not call.err:
            content = [{"type": "image", "source": {"type": "base64", "media_type": call.image[0], "data": call.image[1]}}]
        block: dict[str, Any] = {"tool_use_id": orphan_id or call.cid, "type": "tool_result", "content": content}
        if call.err or call.name == BAD_TOOL_NAME:
            block["is_error"] = True
        uid = self._uuid()
        e = self._cl_line("user", holder, uid, ms, {"role": "user", "content": [block]})
        e["toolUseResult"] = tur
        e["sourceToolAssistantUUID"] = holder
        self._leaf = uid
        self._grow(len(text) if text else 1600)
        self._tool_results += 1
        return e

    def _cl_usage(self, nums: tuple[int, int, int, int], out_override: int | None = None) -> dict[str, Any]:
        i, o, cr, cw = nums
        return {"input_tokens": i, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr,
                "output_tokens": o if out_override is None else out_override,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": cw},
                "service_tier": "standard"}

    def _cl_turn(self, plan: _Turn) -> list[list[Any]]:
        c = plan.corruption
        items: list[list[Any]] = []
        for k, (text, image) in enumerate(plan.prompts):
            ms = self._tick(self._user_gap() if k == 0 else self._ri(2_000, 40_000))
            if k > 0:
                items.append([{"type": "queue-operation", "operation": "enqueue", "timestamp": self._iso(ms - 1500),
                               "sessionId": self._session_id, "content": text}, None, None])
                items.append([{"type": "queue-operation", "operation": "dequeue", "timestamp": self._iso(ms - 2),
                               "sessionId": self._session_id}, None, None])
            blank = c == "blank_user_turn" and k == 0
            content: Any = "  \n " if blank else text
            if image is not None and not blank:
                content = [{"type": "text", "text": text},
                           {"type": "image", "source": {"type": "base64", "media_type": image[0], "data": image[1]}}]
            e = self._cl_user(content, ms, len(text) + (1600 if image is not None else 0))
            if k == 0:
                snap = {"type": "file-history-snapshot", "messageId": e["uuid"], "snapshot": {
                    "messageId": e["uuid"],
                    "trackedFileBackups": {
                        p: {"backupFileName": f"{_mix32(_hash_path(p)):08x}{_mix32(_hash_path(p) + 1):08x}@v{i + 1}",
                            "version": i + 1, "backupTime": self._iso(ms - 10)}
                        for i, p in enumerate(list(self._modified_files)[-4:])},
                    "timestamp": self._iso(ms - 5)}, "isSnapshotUpdate": False}
                items.append([snap, None, None])
            tag = ("blank_user_turn", e["uuid"], "user message with whitespace-only content") if blank else None
            items.append([e, tag, None])
        if c == "blank_lines":
            items.append([b"", ("blank_lines", None, "an empty line and a whitespace-only line"), None])
            items.append([b"   ", None, None])
        first_asst = -1
        ttl = _CLAUDE_CACHE_TTL
        for si, step in enumerate(plan.steps):
            target = c if si == plan.target else None
            ms = self._tick(self._ri(1_200, 25_000))
            if step.stop == "error":
                uid = self._uuid()
                err = self._pick(('529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                                  "Request timed out.", "Connection error."))
                msg = {"id": self._uuid(), "container": None, "model": "<synthetic>", "role": "assistant",
                       "stop_reason": "stop_sequence", "stop_sequence": "", "type": "message",
                       "usage": self._cl_usage((0, 0, 0, 0)), "content": [{"type": "text", "text": f"API Error: {err}"}]}
                e = self._cl_line("assistant", self._leaf, uid, ms, msg)
                e["isApiErrorMessage"] = True
                self._leaf = uid
                items.append([e, None, None])
                if first_asst < 0:
                    first_asst = len(items) - 1
                break
            blocks: list[dict[str, Any]] = []
            out_chars = 0
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking, "signature": self._sig()})
                out_chars += len(step.thinking)
            if step.text:
                blocks.append({"type": "text", "text": step.text})
                out_chars += len(step.text)
            calls = step.calls
            if target == "bad_tool_name":
                calls[0].name = BAD_TOOL_NAME
                calls[0].err = True
                calls[0].image = None
            elif target == "no_id_call":
                calls[0].noid = True
            call_block_at: list[int] = []
            for call in calls:
                name, inp = self._cl_input(call)
                if call.noid:
                    blk = {"type": "tool_use", "name": name, "input": inp}
                else:
                    call.cid = "toolu_01" + self._b62(22)
                    blk = {"type": "tool_use", "id": call.cid, "name": name, "input": inp}
                call_block_at.append(len(blocks))
                blocks.append(blk)
                out_chars += len(call.arg) + len(call.arg2) + 40
            self._tool_calls += len(calls)
            nums = self._usage_numbers(out_chars, ttl, True)
            complete = step.stop != "aborted"
            final_stop = "tool_use" if calls else "end_turn"
            msg_id = "msg_01" + self._b62(22)
            req_id = "req_011" + self._b62(21)
            u_final = self._cl_usage(nums)
            u_partial = self._cl_usage(nums, self._ri(1, 12))
            holders: list[str] = []
            nblocks = len(blocks)
            for bi, blk in enumerate(blocks):
                last = bi == nblocks - 1 and complete
                ms = self._tick(self._ri(30, 2_500)) if bi else ms
                uid = self._uuid()
                msg = {"model": _CLAUDE_MODEL, "id": msg_id, "type": "message", "role": "assistant", "content": [blk],
                       "stop_reason": final_stop if last else None, "stop_sequence": None,
                       "usage": u_final if last else u_partial}
                e = self._cl_line("assistant", self._leaf, uid, ms, msg)
                e["requestId"] = req_id
                self._leaf = uid
                holders.append(uid)
                items.append([e, None, None])
                if first_asst < 0:
                    first_asst = len(items) - 1
                if call_block_at and bi == call_block_at[0]:
                    if target == "bad_tool_name":
                        items[-1][1] = ("bad_tool_name", calls[0].cid, f"tool_use named {BAD_TOOL_NAME!r}")
                    elif target == "no_id_call":
                        items[-1][1] = ("no_id_call", None, "tool_use without an id (its result is absent)")
                if target == "missing_result" and call_block_at and bi == call_block_at[-1]:
                    items[-1][1] = ("missing_result", calls[-1].cid, "tool_use whose tool_result line was removed")
            if not complete:
                ms = self._tick(self._ri(200, 3_000))
                e = self._cl_user([{"type": "text", "text": "[Request interrupted by user]"}], ms, 30)
                items.append([e, None, None])
                continue
            if not calls:
                continue
            # progress lines for some Bash calls
            for j, call in enumerate(calls):
                if call.kind == "exec" and self._rnd() < 0.5 and not call.noid:
                    holder = holders[call_block_at[j]]
                    items.append([{"parentUuid": holder, "isSidechain": False, "userType": "external", "cwd": self._cwd,
                                   "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main",
                                   "type": "progress", "data": {"type": "hook_progress", "hookEvent": "PreToolUse",
                                                                "hookName": "PreToolUse:Bash", "command": "guard.sh"},
                                   "toolUseID": call.cid, "parentToolUseID": call.cid, "uuid": self._uuid(),
                                   "timestamp": self._iso(self._tick(self._ri(5, 80)))}, None, None])
            order, moved = _result_order(len(calls), target)
            for j in order:
                call = calls[j]
                ms = self._tick(call.ms)
                mangle = None
                tag = None
                if target == "invalid_utf8" and j == order[0] or target == "bad_control_char" and j == order[0]:
                    sent = _UTF8_SENTINEL if target == "invalid_utf8" else _CTRL_SENTINEL
                    call.out = call.out[: len(call.out) // 2] + sent + call.out[len(call.out) // 2 :]
                    call.image = None
                    mangle = "utf8" if target == "invalid_utf8" else "ctrl"
                e = self._cl_result(call, holders[call_block_at[j]], ms)
                if mangle == "utf8":
                    tag = ("invalid_utf8", call.cid, "invalid UTF-8 bytes inside a tool_result string")
                elif mangle == "ctrl":
                    tag = ("bad_control_char", call.cid, "raw TAB/ESC bytes inside a tool_result string")
                items.append([e, tag, mangle])
            if moved is not None:
                ms = self._tick(self._ri(1_000, 20_000))
                steer = self._fill(self._pick(_STEER))
                items.append([self._cl_user(steer, ms, len(steer)), None, None])
                call = calls[moved]
                e = self._cl_result(call, holders[call_block_at[moved]], self._tick(call.ms))
                items.append([e, ("separated_result", call.cid, "tool_result written after a later user message"), None])
            if target == "duplicate_result":
                call = calls[order[0]]
                e = self._cl_result(call, holders[call_block_at[order[0]]], self._tick(self._ri(5, 200)))
                items.append([e, ("duplicate_result", call.cid, "second tool_result for the same tool_use_id"), None])
            elif target == "orphan_result":
                call = self._make_call("exec")
                oid = "toolu_01" + self._b62(22)
                e = self._cl_result(call, self._leaf or holders[-1], self._tick(call.ms), orphan_id=oid)
                e["sourceToolAssistantUUID"] = holders[-1]
                items.append([e, ("orphan_result", oid, "tool_result whose tool_use is not in the session"), None])
        if plan.steps and plan.steps[-1].stop == "stop" and self._rnd() < 0.3:
            uid = self._uuid()
            items.append([{"parentUuid": self._leaf, "isSidechain": False, "userType": "external", "cwd": self._cwd,
                           "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main",
                           "type": "system", "subtype": "stop_hook_summary", "hookCount": 1,
                           "hookInfos": [{"command": "notify.sh"}], "hookErrors": [], "preventedContinuation": False,
                           "stopReason": "", "hasOutput": False, "level": "suggestion",
                           "timestamp": self._iso(self._tick(self._ri(20, 400))), "uuid": uid}, None, None])
            self._leaf = uid
        self._tree_corruption(items, c, first_asst, "uuid", "parentUuid")
        if c == "nul_bytes" and first_asst >= 0:
            it = items[first_asst]
            it[1] = ("nul_bytes", it[0].get("uuid"), "line starts with a run of NUL bytes")
            it[2] = "nul"
        self._turns_done += 1
        return items

    def _cl_compaction(self) -> list[list[Any]]:
        ms = self._tick(self._ri(2_000, 60_000))
        uid = self._uuid()
        before = self._ctx
        boundary = {"parentUuid": None, "logicalParentUuid": self._leaf, "isSidechain": False, "userType": "external",
                    "cwd": self._cwd, "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main",
                    "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
                    "timestamp": self._iso(ms), "uuid": uid, "level": "info",
                    "compactMetadata": {"trigger": "auto", "preTokens": before}}
        self._leaf = uid
        summary = ("This session is being continued from a previous conversation that ran out of context. "
                   "The summary below covers the earlier portion of the conversation.\n\nSummary:\n" + self._summary_text())
        sid = self._uuid()
        line = self._cl_line("user", uid, sid, self._tick(self._ri(5, 50)), {"role": "user", "content": summary})
        line["isVisibleInTranscriptOnly"] = True
        line["isCompactSummary"] = True
        self._leaf = sid
        self._ctx = self._base_ctx + len(summary) // 4
        self._cached = 0
        return [[boundary, None, None], [line, None, None]]

    # ------------------------------------------------------------- messages

    def _ms_result_block(self, call: _Call, orphan_id: str | None = None) -> dict[str, Any]:
        if call.image is not None and not call.err:
            source = {"type": "base64", "media_type": call.image[0], "data": call.image[1]}
            content: Any = [{"type": "text", "text": call.out}, {"type": "image", "source": source}]
        else:
            content = call.out
        b: dict[str, Any] = {"type": "tool_result", "tool_use_id": orphan_id or call.cid, "content": content}
        if call.err:
            b["is_error"] = True
        self._grow(len(call.out))
        self._tool_results += 1
        return b

    def _ms_turn(self, plan: _Turn) -> list[list[Any]]:
        c = plan.corruption
        items: list[list[Any]] = []
        for k, (text, image) in enumerate(plan.prompts):
            if c == "blank_user_turn" and k == 0:
                tag = ("blank_user_turn", None, "user message with whitespace-only content")
                items.append([{"role": "user", "content": " \n  "}, tag, None])
                continue
            content: Any = text
            if image is not None:
                content = [{"type": "text", "text": text},
                           {"type": "image", "source": {"type": "base64", "media_type": image[0], "data": image[1]}}]
            self._grow(len(text))
            items.append([{"role": "user", "content": content}, None, None])
        if c == "blank_lines":
            items.append([b"", ("blank_lines", None, "an empty line and a whitespace-only line"), None])
            items.append([b"   ", None, None])
        first_asst = -1
        for si, step in enumerate(plan.steps):
            target = c if si == plan.target else None
            if step.stop == "error":
                break  # an errored request leaves nothing in the API history
            blocks: list[dict[str, Any]] = []
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking, "signature": self._sig()})
            if step.text:
                blocks.append({"type": "text", "text": step.text})
            calls = step.calls
            if target == "bad_tool_name":
                calls[0].name = BAD_TOOL_NAME
                calls[0].err = True
                calls[0].out = f"Error: tool {BAD_TOOL_NAME!r} not found"
                calls[0].image = None
            elif target == "no_id_call":
                calls[0].noid = True
            for call in calls:
                kind = call.kind
                inp = _plain_args(call, "old_text", "new_text")
                name = call.name or _MS_NAMES[kind]
                if call.noid:
                    blocks.append({"type": "tool_use", "name": name, "input": inp})
                else:
                    call.cid = "toolu_01" + self._b62(22)
                    blocks.append({"type": "tool_use", "id": call.cid, "name": name, "input": inp})
            self._tool_calls += len(calls)
            self._grow(sum(len(b.get("text", b.get("thinking", ""))) for b in blocks))
            tag = None
            if target == "bad_tool_name":
                tag = ("bad_tool_name", calls[0].cid, f"tool_use named {BAD_TOOL_NAME!r}")
            elif target == "no_id_call":
                tag = ("no_id_call", None, "tool_use without an id (its result is absent)")
            elif target == "missing_result":
                tag = ("missing_result", calls[-1].cid, "tool_use whose tool_result is missing from the next message")
            items.append([{"role": "assistant", "content": blocks}, tag, None])
            if first_asst < 0:
                first_asst = len(items) - 1
            if not calls:
                continue
            order, moved = _result_order(len(calls), target)
            results: list[dict[str, Any]] = []
            mangle = None
            r_tag = None
            for j in order:
                call = calls[j]
                if target in ("invalid_utf8", "bad_control_char") and j == order[0]:
                    sent = _UTF8_SENTINEL if target == "invalid_utf8" else _CTRL_SENTINEL
                    call.out = call.out[: len(call.out) // 2] + sent + call.out[len(call.out) // 2 :]
                    call.image = None
                    mangle = "utf8" if target == "invalid_utf8" else "ctrl"
                    r_tag = (target, call.cid, "invalid UTF-8 bytes inside a tool_result string" if mangle == "utf8"
                             else "raw TAB/ESC bytes inside a tool_result string")
                results.append(self._ms_result_block(call))
            if target == "duplicate_result":
                results.append(self._ms_result_block(calls[order[0]]))
                r_tag = ("duplicate_result", calls[order[0]].cid, "two tool_result blocks with the same tool_use_id")
            elif target == "orphan_result":
                oid = "toolu_01" + self._b62(22)
                results.append(self._ms_result_block(self._make_call("exec"), orphan_id=oid))
                r_tag = ("orphan_result", oid, "tool_result whose tool_use is not in the previous message")
            if results:
                items.append([{"role": "user", "content": results}, r_tag, mangle])
            if moved is not None:
                self._grow(40)
                items.append([{"role": "user", "content": self._fill(self._pick(_STEER))}, None, None])
                call = calls[moved]
                items.append([{"role": "user", "content": [self._ms_result_block(call)]},
                              ("separated_result", call.cid, "tool_result sent after a later user message"), None])
        if c == "nul_bytes" and first_asst >= 0:
            it = items[first_asst]
            it[1] = ("nul_bytes", None, "line starts with a run of NUL bytes")
            it[2] = "nul"
        self._turns_done += 1
        return items


def _hash_path(p: str) -> int:
    """Stable 32-bit hash of a string (Python's str hash is salted per process)."""
    return zlib.crc32(p.encode())


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def generate(
    fmt: str,
    *,
    seed: int = 0,
    turns: int = 20,
    target_bytes: int | None = None,
    tool_ratio: float = 0.6,
    parallel_calls: bool = True,
    compactions: int = 0,
    start: datetime = DEFAULT_START,
    corruptions: Sequence[str] = (),
) -> Iterator[bytes]:
    """Yield the lines of a synthetic session as raw bytes.

    Every line ends with ``b"\\n"`` (``b"\\r\\n"`` with ``crlf``), except the
    last one under ``torn_tail``.

    :param fmt: ``"pi"``, ``"pi-v1"``, ``"claude"`` or ``"messages"``.
    :param seed: any int; the same arguments always give the same bytes.
    :param turns: number of user turns (ignored when ``target_bytes`` is set).
        Raised when needed so that every per-turn corruption gets its own turn
        (never the first or the last) and every compaction its own boundary.
    :param target_bytes: keep generating turns until at least this many bytes
        were produced (payload sizes shrink near the end so the overshoot stays small).
    :param tool_ratio: probability that an assistant message makes tool calls
        (at most 6 tool rounds per turn).
    :param parallel_calls: allow several tool calls in one assistant message.
    :param compactions: number of compaction records, evenly spaced.
    :param start: timestamp of the first line (naive means UTC).
    :param corruptions: names from :data:`CORRUPTIONS`, each injected once.
    :raises ValueError: bad format, unknown corruption, or a corruption that
        does not apply to ``fmt``. Raised at call time, before any line.
    """
    gen = SessionGenerator(fmt, seed=seed, turns=turns, target_bytes=target_bytes, tool_ratio=tool_ratio,
                           parallel_calls=parallel_calls, compactions=compactions, start=start, corruptions=corruptions)
    return iter(gen)


CODEX_MODEL = "gpt-5.5"
CODEX_AUTO_COMPACT = 244_800  # Codex compacts the history itself past this (gpt-5.5)


def codex_rollout(*, seed: int = 0, turns: int = 20, target_bytes: int | None = None,
                  compactions: int = 0, start: datetime = DEFAULT_START) -> Iterator[bytes]:
    """Yield the lines of a synthetic Codex CLI rollout in the shapes Codex 0.169 writes (a
    paginated file: ``ordinal`` on every line, ``metadata`` and the internal passthrough on
    response items): per turn a ``turn_context``, the prompt, tool rounds of reasoning (encrypted),
    parallel ``exec_command`` calls and their outputs, ``token_count`` events with the running
    usage, and the reply. ``compactions``: that many ``compacted`` lines (with a replacement
    history), evenly spaced; with ``target_bytes`` one every ~``target_bytes / (compactions+1)``;
    and, as Codex does, one whenever the history passes its auto-compaction threshold."""
    rng = random.Random(f"ctxtool.synth:codex:{seed}")
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    t = start.replace(tzinfo=timezone.utc) if start.tzinfo is None else start
    ordinal = 0
    size = 0
    total_in = 0
    history_tokens = 6000
    recent_users: list[str] = []

    def line(kind: str, payload: dict) -> bytes:
        nonlocal ordinal, t, size
        t += timedelta(milliseconds=rng.randint(5, 4000))
        obj = {"timestamp": t.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "ordinal": ordinal,
               "type": kind, "payload": payload}
        ordinal += 1
        b = orjson.dumps(obj) + b"\n"
        size += len(b)
        return b

    def text(n: int) -> str:
        words = []
        k = 0
        while k < n:
            w = rng.choice(_WORDS)
            words.append(w)
            k += len(w) + 1
        return " ".join(words)

    base = ("You are Codex, a coding agent based on GPT-5. " + text(20_000))
    yield line("session_meta", {"session_id": sid, "id": sid, "timestamp": t.isoformat(), "cwd": "/work/app",
                                "originator": "codex_exec", "cli_version": "0.169.0", "source": "exec",
                                "model_provider": "openai", "base_instructions": {"text": base},
                                "history_mode": "paginated"})
    every = None
    if compactions and target_bytes:
        every = target_bytes // (compactions + 1)
    elif compactions:
        every_turns = max(1, turns // (compactions + 1))
    done_comp = 0
    turn = 0
    while (target_bytes is not None and size < target_bytes) or (target_bytes is None and turn < turns):
        turn += 1
        tid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        yield line("event_msg", {"type": "task_started", "turn_id": tid, "model_context_window": 258400})
        yield line("turn_context", {"turn_id": tid, "cwd": "/work/app", "approval_policy": "never",
                                    "sandbox_policy": {"type": "danger-full-access"}, "model": CODEX_MODEL,
                                    "effort": "medium", "summary": "auto"})
        prompt = text(rng.randint(40, 600))
        recent_users = (recent_users + [prompt])[-8:]
        yield line("response_item", {"type": "message", "id": f"msg_{rng.getrandbits(64):016x}", "role": "user",
                                     "content": [{"type": "input_text", "text": prompt}],
                                     "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
        yield line("event_msg", {"type": "user_message", "message": prompt, "images": []})
        history_tokens += len(prompt) // 4
        for _round in range(rng.randint(0, 6)):
            enc = "gAAAA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
                                    for _ in range(rng.randint(800, 3000)))
            yield line("response_item", {"type": "reasoning", "id": f"rs_{rng.getrandbits(64):016x}",
                                         "summary": [{"type": "summary_text", "text": "**" + text(rng.randint(20, 200)) + "**"}],
                                         "content": None, "encrypted_content": enc})
            calls = []
            for _k in range(rng.choice((1, 1, 1, 2, 3))):
                cid = f"call_{rng.getrandbits(96):024x}"
                calls.append(cid)
                cmd = f"rg -n {rng.choice(_WORDS)} src/ | head -{rng.randint(5, 80)}"
                yield line("response_item", {"type": "function_call", "id": f"fc_{rng.getrandbits(64):016x}",
                                             "name": "exec_command", "arguments": orjson.dumps({"cmd": cmd}).decode(),
                                             "call_id": cid, "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
            for cid in calls:
                n = int(rng.lognormvariate(7.5, 1.2))
                out = (f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: 0.{rng.randint(0, 9999):04d} seconds\n"
                       f"Process exited with code 0\nOriginal token count: {n // 4}\nOutput:\n" + text(min(n, 40_000)))
                history_tokens += len(out) // 4
                yield line("response_item", {"type": "function_call_output", "id": f"fco_{rng.getrandbits(64):016x}",
                                             "call_id": cid, "output": out,
                                             "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
            yield _codex_count(line, history_tokens, total_in)
            total_in += history_tokens
        reply = text(rng.randint(20, 1500))
        history_tokens += len(reply) // 4
        yield line("response_item", {"type": "message", "id": f"msg_{rng.getrandbits(64):016x}", "role": "assistant",
                                     "content": [{"type": "output_text", "text": reply, "annotations": []}],
                                     "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
        yield _codex_count(line, history_tokens, total_in)
        total_in += history_tokens
        yield line("event_msg", {"type": "task_complete", "turn_id": tid, "last_agent_message": reply[:80]})
        due = (every is not None and size >= every * (done_comp + 1)) or \
            (every is None and compactions and turn % every_turns == 0)
        if (due and done_comp < compactions) or history_tokens > CODEX_AUTO_COMPACT:
            done_comp += 1
            summary = "Another language model started to solve this problem\n" + text(3000)
            rh = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": u}]} for u in recent_users]
            rh.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]})
            yield line("compacted", {"message": summary, "replacement_history": rh})
            history_tokens = 6000 + sum(len(u) for u in recent_users) // 4 + 750


def _codex_count(line, history_tokens: int, total_in: int) -> bytes:
    last = {"input_tokens": history_tokens, "cached_input_tokens": history_tokens * 9 // 10, "output_tokens": 120,
            "reasoning_output_tokens": 64, "total_tokens": history_tokens + 120}
    total = {"input_tokens": total_in + history_tokens, "cached_input_tokens": (total_in + history_tokens) * 9 // 10,
             "output_tokens": 120, "reasoning_output_tokens": 64, "total_tokens": total_in + history_tokens + 120}
    return line("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                                               "model_context_window": 258400}, "rate_limits": None})


def write_session(path: str | Path, fmt: str, **kw: Any) -> dict[str, Any]:
    """Write a synthetic session to ``path`` and return its stats.

    Keyword arguments are those of :func:`generate`. The returned dict has
    ``path``, ``format``, ``seed``, ``bytes``, ``lines``, ``turns``,
    ``entries`` (count per line ``type``; per ``role`` for ``messages``),
    ``tool_calls``, ``tool_results``, ``compactions`` and ``corruptions``
    (a list of ``{"kind", "line", "id", "detail"}``, sorted by line).
    """
    if fmt == "codex":
        gen = codex_rollout(**{k: v for k, v in kw.items() if k in ("seed", "turns", "target_bytes", "compactions", "start")})
        return _write_lines(path, gen, {"format": "codex", "seed": kw.get("seed", 0)})
    gen = SessionGenerator(fmt, **kw)
    buf: list[bytes] = []
    size = 0
    with open(path, "wb") as fh:
        for line in gen:
            buf.append(line)
            size += len(line)
            if size >= 1 << 20:
                fh.write(b"".join(buf))
                buf.clear()
                size = 0
        if buf:
            fh.write(b"".join(buf))
    stats = dict(gen.stats or {})
    stats["path"] = str(path)
    return stats


def _write_lines(path, lines, stats: dict) -> dict[str, Any]:
    n = size = 0
    with open(path, "wb") as fh:
        buf: list[bytes] = []
        pending = 0
        for b in lines:
            buf.append(b)
            pending += len(b)
            n += 1
            size += len(b)
            if pending >= 1 << 20:
                fh.write(b"".join(buf))
                buf.clear()
                pending = 0
        fh.write(b"".join(buf))
    return dict(stats, path=str(path), bytes=size, lines=n)
