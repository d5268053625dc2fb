"""Payload pools for synthetic sessions: file contents, command output and prose, built once per process."""

from __future__ import annotations

import base64
import random
import struct
import zlib

from .plan import _B62


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
