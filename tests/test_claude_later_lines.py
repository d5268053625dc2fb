"""``claude_chain._LaterLines``: where the client puts a response's line that is off the chain (the first chain line
after the response's first whose file position is later). It walks a few lines, then answers from a table of maxima;
property: both ways give the plain walk's answer on random chains, and many lines far from their response do not each
walk the chain."""

from __future__ import annotations

import random

import pytest

from ctxtool.claude_chain import _LaterLines


class _Line:
    def __init__(self, index: int):
        self.index = index


def _walked(seq: list, at: int, pos: int) -> int:
    q = pos + 1
    while q < len(seq) and seq[q].index < at:
        q += 1
    return q


@pytest.mark.parametrize("walk", [0, 1, 3, 64])
def test_it_gives_the_plain_walks_answer(walk):
    rng = random.Random(walk)
    for _ in range(200):
        n = rng.randrange(1, 300)
        seq = [_Line(rng.randrange(0, 1000)) for _ in range(n)]
        later = _LaterLines(seq, lambda e: e.index)
        later.WALK = walk
        for _ in range(40):
            pos, at = rng.randrange(-1, n), rng.randrange(0, 1100)
            assert later.after(at, pos) == _walked(seq, at, pos), (n, pos, at)


def test_lines_far_from_their_response_do_not_each_walk_the_chain():
    seq = [_Line(i) for i in range(20_000)]
    seen = []

    def where(e):
        seen.append(e)
        return e.index

    later = _LaterLines(seq, where)
    assert [later.after(19_990, 5) for _ in range(1_000)] == [19_990] * 1_000
    assert len(seen) < 20_000 + 1_000 * (_LaterLines.WALK + 1)  # the table once, then a short walk each
