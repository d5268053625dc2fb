"""The scan pauses the cyclic garbage collector (``scanloop.no_gc``) and, after a pass whose results live on (an
index, or what a streaming pass's consumer kept), moves them out of its reach (``gc.freeze``), so that its first
collection does not walk them all; the collector runs again afterwards, as it did before."""

from __future__ import annotations

import gc

import pytest

from ctxtool import synth
from ctxtool.transcript import scan


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("split", [None, 1])  # serial, and split among helpers
def test_what_a_streaming_pass_kept_is_frozen(tmp_path, unfrozen, split):
    p = str(tmp_path / "s.jsonl")
    synth.write_session(p, "pi", seed=2, target_bytes=300_000)
    kept = []
    assert gc.isenabled()
    scan(p, None, on_entry=lambda e: kept.append((e.id, (e.index,))), keep_index=False, blocks=False, lazy=True,
         split_min_bytes=split, workers=2 if split else 1)
    assert gc.isenabled()
    assert len(kept) > 100
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept) * 2  # each record and its inner tuple
    gc.unfreeze()


def test_a_pass_that_keeps_nothing_leaves_the_collector_as_it_was(tmp_path, unfrozen):
    p = str(tmp_path / "s.jsonl")
    synth.write_session(p, "pi", seed=2, target_bytes=100_000)
    gc.disable()
    try:
        scan(p, None, keep_index=False, on_entry=lambda e: None, blocks=False, lazy=True)
        assert not gc.isenabled()
    finally:
        gc.enable()
