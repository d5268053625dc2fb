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

from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Sequence

from .catalog import BAD_TOOL_NAME, BOM, CORRUPTIONS, DEFAULT_START, FORMATS
from .codex import codex_rollout
from .generator import SessionGenerator

__all__ = [
    "BAD_TOOL_NAME",
    "BOM",
    "CORRUPTIONS",
    "DEFAULT_START",
    "FORMATS",
    "SessionGenerator",
    "codex_rollout",
    "generate",
    "write_session",
]



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
