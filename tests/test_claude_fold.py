"""The compaction fold (``claude_chain._fold``, rule 3) on a built index: a boundary that lists its
kept messages makes the client re-link them after the summary and drop every row before the
boundary. The fold deletes the dropped rows when most rows stay and copies the survivors when
most go (a late boundary, as in a long session): both ways must give the same rows and links."""

from __future__ import annotations

import pytest

from ctxtool.claude_chain import _fold, chain
from ctxtool.model import BOUNDARY, MESSAGE, META, Entry


def _rows(fillers_before: int, fillers_after: int) -> tuple[list[Entry], Entry]:
    out: list[Entry] = []

    def add(uid, parent, kind=MESSAGE, type_="user", extra=None):
        role = type_ if type_ in ("user", "assistant") else None
        e = Entry(len(out), len(out) + 1, 0, 1, b"\n", kind, type_, uid, parent, role, extra=extra, ts=float(len(out)))
        out.append(e)
        return e

    add("a", None)
    add("b", "a", type_="assistant")
    add("c", "b")  # the kept message
    prev = "c"
    for k in range(fillers_before):
        prev = add(f"f{k}", prev, type_="assistant" if k % 2 else "user").id
    b = add("B", None, kind=BOUNDARY, type_="system", extra={"preserved": ("c",), "anchor": "S"})
    add("S", "B")  # the summary (the anchor)
    add("x", "S")  # hangs off the anchor: follows the kept message
    add("y", "b", type_="assistant")  # hung off a dropped row: follows the kept message
    add("z", "a", kind=META, type_="progress")  # a dropped parent, but not a message: left as it is
    prev = "y"
    for k in range(fillers_after):
        prev = add(f"g{k}", prev, type_="assistant" if k % 2 else "user").id
    return out, b


@pytest.mark.parametrize("before,after", [(0, 40), (40, 0), (5, 5), (200, 3)])
def test_fold_keeps_the_listed_message_and_relinks_what_hung_off_dropped_rows(before, after):
    entries, b = _rows(before, after)
    by_id = {e.id: e for e in entries}
    links, folded = _fold(by_id, b, b)
    assert folded
    assert links == {"c": "S", "x": "c", "y": "c"}
    assert list(by_id) == ["c", "B", "S", "x", "y", "z"] + [f"g{k}" for k in range(after)]
    assert all(by_id[u].id == u for u in by_id)


@pytest.mark.parametrize("before,after", [(0, 40), (200, 3)])
def test_chain_after_the_fold_sends_the_kept_message_after_the_summary(before, after):
    entries, _ = _rows(before, after)
    rows: dict = {}
    ids = [e.id for e in chain(entries, rows=rows)]
    tail = [f"g{k}" for k in range(after)]
    assert ids == ["B", "S", "c", "y"] + tail
    assert "a" not in rows and "f0" not in rows and rows["c"] is entries[2]
