"""The suite split over N processes (``tests/run_suite.py``): which tests each shard runs.

Every process collects the whole suite and keeps its share (``tests/conftest.py``, with ``CTXTOOL_TEST_SHARD=i/n``),
so the shares must be computed from the collection alone, the same in each. A test file is a unit, weighed by its
recorded seconds (``tests/durations.json``; a file with none weighs ``DEFAULT_SECONDS`` a test); a file heavier than
a share's half is cut into ``n`` units by its tests' node ids (its tests are alike: parametrized cases), so one long
file does not decide the whole run's length. Units go heaviest first to the lightest shard (longest processing time
first), ties to the lower shard.
"""

from __future__ import annotations

import json
import os
import zlib

DURATIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "durations.json")
DEFAULT_SECONDS = 0.2  # a test of a file not yet timed
ENV = "CTXTOOL_TEST_SHARD"


def parse(spec: str) -> tuple[int, int]:
    """``"i/n"`` (1-based) as ``(i - 1, n)``; ValueError when it is not one."""
    i, _, n = spec.partition("/")
    k, total = int(i), int(n)
    if not 1 <= k <= total:
        raise ValueError(f"{ENV}={spec!r}: want i/n with 1 <= i <= n")
    return k - 1, total


def load_durations(path: str = DURATIONS) -> dict[str, float]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.get("seconds", {}).items()} if isinstance(data, dict) else {}


def assign(files: list[tuple[str, int]], n: int, seconds: dict[str, float]) -> list[list[tuple[str, int, int]]]:
    """``files``: (file, number of its tests). Per shard, its units ``(file, part, parts)``: the file's tests whose
    node id's CRC-32 is ``part`` modulo ``parts`` (``part_of``)."""
    files = sorted(files)
    weights = {f: seconds.get(f, DEFAULT_SECONDS * count) for f, count in files}
    share = sum(weights.values()) / n if n else 0
    units = []  # (weight, order, file, start, step)
    for order, (f, count) in enumerate(files):
        w = weights[f]
        parts = n if n > 1 and w > share / 2 and count >= n else 1
        for start in range(parts):
            units.append((w / parts, order, f, start, parts))
    units.sort(key=lambda u: (-u[0], u[1], u[3]))
    loads = [0.0] * n
    out: list[list[tuple[str, int, int]]] = [[] for _ in range(n)]
    for w, _, f, start, step in units:
        k = min(range(n), key=lambda j: (loads[j], j))
        loads[k] += w
        out[k].append((f, start, step))
    return out


def kept(items: list, index: int, n: int, seconds: dict[str, float], key=lambda item: item.nodeid.split("::")[0]) -> list:
    """The items of shard ``index`` of ``n``, in collection order. Each process computes this from its own collection:
    a file's tests are told apart by node id, not by place (a parametrization over a set is ordered by the process's
    string hashes)."""
    by_file: dict[str, list] = {}
    for it in items:
        by_file.setdefault(key(it), []).append(it)
    keep = set()
    for f, part, parts in assign([(f, len(v)) for f, v in by_file.items()], n, seconds)[index]:
        keep.update(id(x) for x in by_file[f] if parts == 1 or part_of(x.nodeid, parts) == part)
    return [it for it in items if id(it) in keep]


def part_of(nodeid: str, parts: int) -> int:
    """Which part of a cut file a test is in: the same in every process."""
    return zlib.crc32(nodeid.encode("utf-8")) % parts
