"""Loading ``omxfs``: a Ctrl-C while its modules load ends it with one line and status 130, nothing done.

Python turns a Ctrl-C into ``KeyboardInterrupt`` wherever the interpreter is, and one in the middle of an import
printed that import's traceback. ``cli.omxfs`` imports this module before any other and puts the previous handler
back once it is loaded (``done``); it stands again while a command's module loads, when that command runs
(``again``). A command that handles signals itself (``omxfs mount``) takes them over then.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator


def _stop(signum: int, frame: object) -> None:
    sys.stderr.write("omxfs: interrupted while starting; nothing was done\n")
    raise SystemExit(128 + signum)


try:
    _previous = signal.signal(signal.SIGINT, _stop)
except ValueError:  # imported by a thread other than the main one, which alone may set handlers
    _previous = None


def done() -> None:
    """Put back the handler that was there before loading (Python's: ``KeyboardInterrupt``)."""
    if _previous is not None and signal.getsignal(signal.SIGINT) is _stop:
        signal.signal(signal.SIGINT, _previous)


@contextlib.contextmanager
def again() -> Iterator[None]:
    """Loading more (a command's module, imported when the command runs): a Ctrl-C meanwhile ends it the same way."""
    try:
        before = signal.signal(signal.SIGINT, _stop)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is _stop:
            signal.signal(signal.SIGINT, before)
