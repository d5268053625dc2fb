"""The ``ctxtool`` command's entry point, kept apart from the command line's modules: Ctrl-C while they load (the
first ~50 ms of a run) ends the run as Ctrl-C does later, "Interrupted." and exit 130, where it printed a traceback
from inside click's import (found by a review)."""

import sys


def main():
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        try:
            sys.stderr.write("Interrupted.\n")
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):  # (no standard error to write to)
            pass
        raise SystemExit(130) from None
    return run()
