"""Ctrl-C and SIGTERM around the one moment a rewrite must not stop half way.

``held()``: while a rewrite exchanges its new file for the session and watches the old one for an agent's late
lines (``commit``), SIGINT and SIGTERM wait. The signal is taken as soon as the commit is whole, at most about a
second later (the watch's limit), so a line an agent wrote to the old file in that second is carried to the session,
not left behind in the backup. Before that moment a signal stops the rewrite at once (its temporary file removed,
the session untouched); after it, the rewrite is done. Only the main thread can take signals: elsewhere ``held``
does nothing.

``Terminated``: what SIGTERM raises once ``terminate_as_interrupt()`` was called (the command line does at its
start): the clean stop Ctrl-C makes (temporary files removed, the lock let go), where the default action would end
the process where it stands. A CI job's time limit and ``kill`` send it.
"""

from __future__ import annotations

import signal
import threading

HELD = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so every clean-up that runs for one runs for it."""


def interrupted_exit(e: KeyboardInterrupt) -> int:
    """The exit code of a command stopped by ``e``, as shells report a signal's: 130 (Ctrl-C), 143 (SIGTERM)."""
    return 128 + (signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT)


def stopped_by(e: KeyboardInterrupt) -> str:
    """How a person is told what stopped a command: "Terminated" (SIGTERM) or "Interrupted" (Ctrl-C)."""
    return "Terminated" if isinstance(e, Terminated) else "Interrupted"


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def terminate_as_interrupt() -> None:
    """SIGTERM raises ``Terminated`` from now on (where nobody chose another way to take it)."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_terminated)


_depth = 0  # holds inside one another (a commit's second write): the outermost one holds and lets go
_got: list[int] = []  # the signals that came while held, in order


def _note(signum, frame) -> None:
    _got.append(signum)


class held:
    """SIGINT and SIGTERM wait while held (``with held():``, or ``start()`` then ``stop()``), then are taken as they
    would have been: a signal ignored stays ignored, Ctrl-C raises KeyboardInterrupt where ``stop`` is called (an
    exception leaving the block is its context), SIGTERM ends the process by its default action where nothing takes
    it; where both came, SIGTERM. In a thread other than the main one, it does nothing."""

    def __init__(self):
        self._before: dict | None = None

    def start(self) -> "held":
        global _depth
        if self._before is not None or threading.current_thread() is not threading.main_thread():
            return self
        _depth += 1
        self._before = {}
        if _depth == 1:
            for sig in HELD:
                was = signal.getsignal(sig)
                if was not in (signal.SIG_IGN, None):  # (None: a handler not set from Python; left as it is)
                    self._before[sig] = was
                    signal.signal(sig, _note)
        return self

    def stop(self) -> None:
        global _depth
        if self._before is None:
            return
        before, self._before = self._before, None
        _depth -= 1
        # the signals noted and the handlers put back with the signals blocked: one that comes meanwhile can neither
        # stop the loop half way nor be noted after the last look (and stay noted for ever); it is taken once they are
        # unblocked, by the handler put back
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD) if hasattr(signal, "pthread_sigmask") and before else None
        came = None
        try:
            if _depth == 0 and _got:
                came = signal.SIGTERM if signal.SIGTERM in _got else _got[0]  # (both: the stronger one, a supervisor's)
                _got.clear()
            for sig, was in before.items():
                signal.signal(sig, was)
        finally:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if came is not None:
            signal.raise_signal(came)  # taken by the handler just put back, here (raise_signal checks at once)

    def __enter__(self) -> "held":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
