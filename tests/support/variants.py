"""Variants of a parsed line for the tests that compare the C part with the Python: each value, at any depth, given
another value or removed."""

from __future__ import annotations

import copy


def paths(v, path=(), depth=0):
    """The paths (key and index tuples) of ``v``'s values, itself first, to depth 5, the first 3 items of a list."""
    yield path
    if depth >= 5:
        return
    if type(v) is dict:
        for k, x in v.items():
            yield from paths(x, path + (k,), depth + 1)
    elif type(v) is list:
        for i, x in enumerate(v[:3]):
            yield from paths(x, path + (i,), depth + 1)


def with_value(obj, path, value):
    """A copy of ``obj`` with the value at ``path`` replaced (the value itself for the empty path)."""
    out = copy.deepcopy(obj)
    if not path:
        return value
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


def without(obj, path):
    """A copy of ``obj`` with the value at ``path`` (not empty) removed."""
    out = copy.deepcopy(obj)
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    if type(cur) is dict:
        del cur[path[-1]]
    else:
        cur.pop(path[-1])
    return out


def variants(obj, values):
    """Every variant of ``obj``: each of its values (``paths``) given each of ``values``, and removed."""
    for path in list(paths(obj)):
        for v in values:
            yield with_value(obj, path, v)
        if path:
            yield without(obj, path)


def tally(objs, values, check) -> tuple[int, int]:
    """``(made, declined)``: how many ``variants`` of the ``objs`` ``check`` (which asserts what it compares) took and
    how many it declined."""
    made = declined = 0
    for obj in objs:
        for v in variants(obj, values):
            if check(v):
                made += 1
            else:
                declined += 1
    return made, declined


def streamed(path, monkeypatch, native: bool, workers: int) -> list:
    """The entry tuples a streaming pass (profile's) over ``path`` is handed, with the C part on or off; each entry is
    checked to come without its object and blocks."""
    from ctxtool import transcript
    from ctxtool.model import entry_to_tuple

    monkeypatch.setenv("CTXTOOL_NATIVE", "1" if native else "0")
    got = []

    def on_entry(e):
        assert e.obj is None and e.blocks is None
        got.append(entry_to_tuple(e))

    transcript.scan(str(path), on_entry=on_entry, keep_index=False, blocks=False, lazy=True, workers=workers,
                    split_min_bytes=0)
    return got


def corrupted_session(path, seed: int, target_bytes: int, most: int) -> str:
    """A generated session with up to ``most`` corruptions its format can have, chosen by ``seed``: pi, Claude Code or
    Messages JSONL by turns."""
    import random

    from ctxtool import synth
    from ctxtool.synth.catalog import CORRUPTIONS

    rng = random.Random(seed)
    fmt = ("pi", "claude", "messages")[seed % 3]
    kinds = [k for k, fmts in sorted(CORRUPTIONS.items()) if fmt in fmts]
    synth.write_session(str(path), fmt, seed=seed, target_bytes=target_bytes, corruptions=rng.sample(kinds, min(most, len(kinds))))
    return str(path)
