"""Which lines the Python reads where the C part declines them (test support for the C-vs-Python tests)."""

from __future__ import annotations

import hashlib


def count_normalized(monkeypatch) -> list[int]:
    """Wrap ``formats.claude.normalize`` for the test: the list it returns gets the line number of every line
    the Python reads whole (a line the C part declined, or every line with ``CTXTOOL_NATIVE=0``)."""
    from ctxtool.formats import claude

    real = claude.normalize
    seen: list[int] = []

    def counted(obj, e, *a, **kw):
        seen.append(e.lineno)
        return real(obj, e, *a, **kw)

    monkeypatch.setattr(claude, "normalize", counted)
    return seen


def index_digest(path: str) -> str:
    """A digest of the whole index of ``path`` (every entry's fields), scanned in this process."""
    from ctxtool import transcript
    from ctxtool.model import entry_to_tuple

    h = hashlib.md5()
    for e in transcript.scan(str(path), workers=1).entries:
        h.update(repr(entry_to_tuple(e)).encode())
    return h.hexdigest()
