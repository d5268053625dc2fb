"""What a command over one file leaves for the process's end, unfreed.

Freeing the index of a 500 MB session costs 0.04-0.14 s: every entry, string and number one by one (Codex
0.11-0.14 s, pi 0.04-0.09 s, Claude Code 0.04 s). A command run over one file has no use for that work: what the
library hands to ``keep`` stays referenced, and ``ctxtool.cli.main`` ends the process with ``os._exit`` once the
output is flushed, so the memory goes back to the system at once. This is off unless the CLI's entry point turned it
on (``start``), and off again as soon as a command goes over more than one file (``stop``): a library caller, a test
and a folder's run free as always."""

from __future__ import annotations

_kept: list | None = None


def start() -> None:
    """Keep what ``keep`` is given until the process ends (the CLI's entry point)."""
    global _kept
    _kept = []


def stop() -> None:
    """Free as always from now on (a command over several files); what was kept is let go."""
    global _kept
    _kept = None


def keep(obj) -> None:
    """Hold ``obj`` until the process ends, when ``start`` was called; nothing otherwise."""
    if _kept is not None:
        _kept.append(obj)


def holding() -> bool:
    """Whether something is held (the process should then end without freeing it)."""
    return bool(_kept)
