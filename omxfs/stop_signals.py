"""The stop signals ``omxfs mount`` receives while it starts a mount: noted, never raised in the middle of a step.

A Ctrl-C raised as ``KeyboardInterrupt`` lands wherever the command happens to be: between spawning the daemon and
learning its pid, or while the daemon is mounting, and the mount then comes up with nobody to report it.
``StopSignals`` replaces the handlers of SIGINT, SIGTERM and SIGHUP with one that only notes the first signal and
makes ``fd`` readable; the command asks at the points where it can still stop cleanly (``check``), or waits on
``fd`` beside what it waits for. The previous handlers come back on exit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from omxfs.errors import MountError

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: the exit status of a command a signal stopped, as a shell shows it for one the signal killed
EXIT_STATUS = 128 + signal.SIGINT

Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class StopSignals:
    """Notes the first stop signal while it is entered (main thread only); ``signum`` is that signal, or None."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Handler] = {}
        self._read, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    @property
    def fd(self) -> int:
        """Readable once a stop signal came (select on it beside what the command waits for)."""
        return self._read

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        with contextlib.suppress(OSError):  # full: it is readable already
            os.write(self._write, b"\0")

    def check(self, what: str) -> None:
        """Raise ``MountError`` (EINTR) saying ``what`` if a stop signal came: "SIGINT: <what>"."""
        if self.signum is not None:
            raise MountError(f"{self.name}: {what}", errno.EINTR)

    def finish(self) -> None:
        """The command did what it started and said so, and exits next: a stop signal from now on changes nothing
        (ignored, also on exit, where one would otherwise end the process in its last steps with a false status)."""
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        self._previous.clear()

    def __enter__(self) -> StopSignals:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._note)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: not set from Python
        os.close(self._read)
        os.close(self._write)


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is the error a stop signal ended the start of a mount with."""
    return isinstance(exc, MountError) and exc.errno == errno.EINTR
