"""``claude_chain._leaf_marks`` reads the leaf's marks from the end of the file; the client reads
them front to back as it loads rows (the forward reading below, written as the client's loader
does it). Property: both give the same marks on random line sequences. Beside a checkpoint, a silent
response (rule 42) is no last row unless every row is one (judge fuzz seed 899)."""

from __future__ import annotations

import random

import pytest

from ctxtool.claude_chain import _BRIDGED_TYPES, _file_snapshot, _leaf_marks
from ctxtool.model import BOUNDARY, MESSAGE, META, SILENT_RESPONSE, Entry


def forward(main, has_checkpoint):
    last = row = cp = quiet = None
    explicit = ever = snaps = quiet_snaps = False
    for e in main:
        if e.id is not None:
            last = e
            if _file_snapshot(e):
                snaps = quiet_snaps = True
            elif e.type in _BRIDGED_TYPES and has_checkpoint and (e.extra or {}).get(SILENT_RESPONSE):
                quiet, explicit, quiet_snaps = e, False, False
            elif e.type in _BRIDGED_TYPES:
                row, explicit, snaps = e, False, False
            if e.kind == BOUNDARY:
                cp, explicit, ever = None, False, False
        elif e.type == "last-prompt":
            x = e.extra
            lp = x.get("leaf") if x else None
            if lp:
                explicit = bool(x.get("explicit")) or (explicit and lp == cp)
                ever = bool(x.get("explicit")) or (ever and lp == cp)
                cp = lp
    if row is None and quiet is not None:
        row, snaps = quiet, quiet_snaps
    return last, row, snaps, cp, explicit, ever


def random_lines(rng, n):
    out = []
    for k in range(n):
        r = rng.random()
        if r < 0.05:
            e = Entry(k, k + 1, 0, 0, b"\n", MESSAGE, "assistant", id=f"u{k}", extra={SILENT_RESPONSE: True})
        elif r < 0.35:
            e = Entry(k, k + 1, 0, 0, b"\n", MESSAGE, rng.choice(["user", "assistant"]), id=f"u{k}")
        elif r < 0.45:
            e = Entry(k, k + 1, 0, 0, b"\n", META, "system", id=f"u{k}",
                      extra={"subtype": rng.choice(["file_snapshot", "turn_duration"])})
        elif r < 0.5:
            e = Entry(k, k + 1, 0, 0, b"\n", BOUNDARY, "system", id=f"u{k}")
        elif r < 0.6:
            e = Entry(k, k + 1, 0, 0, b"\n", META, "progress", id=f"u{k}")
        elif r < 0.85:
            e = Entry(k, k + 1, 0, 0, b"\n", META, "last-prompt",
                      extra={"leaf": rng.choice(["a", "b", "c"]), "explicit": rng.random() < 0.3})
        else:
            e = Entry(k, k + 1, 0, 0, b"\n", META, "queue-operation")
        out.append(e)
    return out


@pytest.mark.parametrize("seed", range(400))
def test_marks_read_from_the_end_are_the_loaders(seed):
    rng = random.Random(seed)
    main = random_lines(rng, rng.randrange(0, 40))
    has_checkpoint = any(e.type == "last-prompt" for e in main)
    assert _leaf_marks(main, has_checkpoint) == forward(main, has_checkpoint)
