"""Mutated session files for the fuzz test (``tests/test_fuzz.py``).

``cases(seed, n)`` yields ``(name, bytes)``: real fixtures and generated sessions
(``ctxtool.synth``, clean and with its own corruptions), each changed by one to three mutations: byte flips, truncations,
line deletions and duplications, and values replaced inside a parsed line by odd types,
absurd numbers (``1e400``, 39 digits, ``1`` and 400 zeros), lone surrogates and deep
nesting. Values JSON libraries cannot write (``1e400``, ``\\ud800``) are spliced in as
raw text. The same seed always gives the same cases.
"""

from __future__ import annotations

import os
import random

import orjson

from ctxtool import synth

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
FIXTURES = os.path.join(ROOT, "fixtures")
MAX_FIXTURE_BYTES = 64 << 10  # small files: the cases stay fast
SYNTH_BYTES = 30_000

# raw JSON texts spliced in for a value
ODD_VALUES = (
    "[]", "{}", "null", "true", "0", "-1", '""', '" "', "1.5",
    "1e400", "-1e400", "9" * 39, "1" + "0" * 400,
    '"\\ud800"', '"a\\udfffb"', '"2026-13-45T99:99:99Z"',
    '[{"type":[]}]', '{"type":{}}', '[1,"x",null]',
)
KEYS = ("type", "role", "content", "message", "timestamp", "usage", "id", "parentId", "parentUuid", "uuid",
        "toolCallId", "toolName", "tool_use_id", "input", "arguments", "name", "stopReason", "stop_reason",
        "text", "summary", "firstKeptEntryId", "firstKeptEntryIndex", "tokensBefore", "cacheRead", "output_tokens",
        "input_tokens", "totalTokens", "contextWindow", "model", "isSidechain", "subtype", "data", "details")
SENTINEL = "\x00fuzz-value\x00"


def sources() -> list[tuple[str, bytes]]:
    """Small real fixtures, then a generated session of each format."""
    out = []
    for root, _, names in sorted(os.walk(FIXTURES)):
        for n in sorted(names):
            p = os.path.join(root, n)
            if n.endswith(".jsonl") and ".expected" not in n and os.path.getsize(p) <= MAX_FIXTURE_BYTES:
                with open(p, "rb") as f:
                    out.append((os.path.relpath(p, FIXTURES), f.read()))
    for fmt in synth.FORMATS:
        out.append((f"synth-{fmt}", b"".join(synth.generate(fmt, seed=7, turns=6))))
        damage = [c for c in sorted(synth.CORRUPTIONS) if fmt in synth.CORRUPTIONS[c] and c != "missing_header"]
        for k in range(0, len(damage), 3):  # the generator's own damage, three kinds per session
            data = synth.generate(fmt, seed=7, target_bytes=SYNTH_BYTES, corruptions=damage[k:k + 3])
            out.append((f"synth-{fmt}-damaged{k // 3}", b"".join(data)))
    return out


def _deep(depth: int) -> str:
    return '{"a":' * (depth - 1) + "[]" + "}" * (depth - 1)


def _paths(obj, prefix=(), depth=0):
    """Every (container, key) inside obj, to a few levels."""
    if depth > 5:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield obj, k
            yield from _paths(v, prefix + (k,), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield obj, i
            yield from _paths(v, prefix + (i,), depth + 1)


def _spot(r: random.Random, line: bytes) -> tuple | None:
    """``(obj, holder, key)``: ``line`` parsed and a place in it, a known key's mostly; None for no such place."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    spots = list(_paths(obj))
    if not spots:
        return None
    preferred = [s for s in spots if isinstance(s[1], str) and s[1] in KEYS]
    holder, key = r.choice(preferred if preferred and r.random() < 0.8 else spots)
    return obj, holder, key


def _replace_value(r: random.Random, line: bytes) -> bytes | None:
    found = _spot(r, line)
    if found is None:
        return None
    obj, holder, key = found
    raw = _deep(r.choice((300, 1000))) if r.random() < 0.08 else r.choice(ODD_VALUES)
    holder[key] = SENTINEL
    try:
        out = orjson.dumps(obj).replace(orjson.dumps(SENTINEL), raw.encode(), 1)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (an earlier mutation)
        return None
    return out + (b"\r\n" if line.endswith(b"\r\n") else b"\n")


def _id_like(key) -> bool:
    return isinstance(key, str) and key.lower().endswith(("id", "uuid"))


def _ids(lines: list[bytes]) -> list[str]:
    """Every string value of an id-like key (``uuid``, ``parentUuid``, ``tool_use_id``, ``call_id``...) in the file."""
    out = []
    for line in lines:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        out.extend(h[k] for h, k in _paths(obj) if _id_like(k) and isinstance(h[k], str))
    return out


def _dumped(obj, line: bytes) -> bytes | None:
    """``obj`` written as ``line`` was ended; None when nested deeper than orjson writes (an earlier mutation)."""
    try:
        return orjson.dumps(obj) + (b"\r\n" if line.endswith(b"\r\n") else b"\n")
    except orjson.JSONEncodeError:
        return None


def _relink(r: random.Random, line: bytes, ids: list[str]) -> bytes | None:
    """An id-like value of ``line`` made another id of the file: links to other lines, cycles, ids written twice."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    spots = [(h, k) for h, k in _paths(obj) if _id_like(k) and isinstance(h[k], str)]
    others = [i for i in ids if not spots or i not in {h[k] for h, k in spots}]
    if not spots or not (others or ids):
        return None
    holder, key = r.choice(spots)
    holder[key] = r.choice(others or ids)
    return _dumped(obj, line)


def _drop(r: random.Random, line: bytes) -> bytes | None:
    """A key (or a list's item) left out of ``line``: what an older or newer writer does not write."""
    found = _spot(r, line)
    if found is None:
        return None
    obj, holder, key = found
    del holder[key]
    return _dumped(obj, line)


# mutations of what a crash or a second writer leaves, in the judge fuzz from this seed on (``mutate``'s
# ``extended``); earlier seeds keep the cases they always gave
EXTENDED = ("drop", "relink", "torn", "nul")


def mutate(r: random.Random, data: bytes, extended: bool = False, op: str | None = None) -> bytes:
    """One mutation of ``data``. ``extended`` adds ``EXTENDED``: a key left out, an id made another line's
    (``relink``), a line torn where the next one was appended on after it (``torn``: a writer killed mid-line, then
    another append), and a line's bytes, its newline with them, made NULs (``nul``: what a crash leaves where a
    write's data never reached the disk, the file's size already grown). ``op``: this mutation, not one drawn."""
    lines = data.splitlines(keepends=True)
    ops = ("value", "value", "value", "flip", "truncate", "delete", "duplicate", "swap", "keep-one")
    op = op or r.choice(ops + EXTENDED if extended else ops)
    if not lines:
        return data
    k = r.randrange(len(lines))
    if op == "drop":
        new = _drop(r, lines[k])
        if new is not None:
            lines[k] = new
    elif op == "relink":
        new = _relink(r, lines[k], _ids(lines))
        if new is not None:
            lines[k] = new
    elif op == "torn" and len(lines[k]) > 2:
        lines[k] = lines[k][: r.randrange(1, len(lines[k]) - 1)]
    elif op == "nul":
        lines[k] = b"\0" * len(lines[k])
    elif op == "value":
        new = _replace_value(r, lines[k])
        if new is not None:
            lines[k] = new
    elif op == "flip" and data:
        pos = r.randrange(len(data))
        return data[:pos] + bytes([r.randrange(256)]) + data[pos + 1:]
    elif op == "truncate" and data:
        return data[: r.randrange(len(data))]
    elif op == "delete":
        del lines[k]
    elif op == "duplicate":
        lines.insert(r.randrange(len(lines) + 1), lines[k])
    elif op == "swap" and len(lines) > 1:
        j = r.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
    elif op == "keep-one":
        lines = [lines[k]]
    return b"".join(lines)


def cases(seed: int, n: int):
    r = random.Random(seed)
    srcs = sources()
    for i in range(n):
        name, data = srcs[i % len(srcs)]
        for _ in range(r.choice((1, 1, 2, 3))):
            data = mutate(r, data)
        yield f"{i:05d}-{name.replace(os.sep, '_')}", data
