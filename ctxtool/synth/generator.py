"""The synthetic session generator: setup, planning, usage model and emission; the format
emitters are mixins (``pi_lines``, ``claude_lines``, ``messages_lines``)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Iterator, Sequence

import orjson

from .catalog import BOM, CORRUPTIONS, DEFAULT_START, FORMATS, _BAD_UTF8, _CTRL_BYTES, _CTRL_SENTINEL, _FILE_LEVEL, _NEEDS_TOOLS, _PI, _UTF8_SENTINEL
from .claude_lines import ClaudeLines
from .messages_lines import MessagesLines
from .pi_lines import PiLines
from .plan import _Call, _Step, _TOOL_CUM, _TOOL_KINDS, _Turn, _as_utc_ms, _mix32
from .text import _CJK_PROMPTS, _COMMANDS, _EXTS, _OPENERS, _PROMPTS, _WORDS, _pools


# --------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------


class SessionGenerator(PiLines, ClaudeLines, MessagesLines):
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
