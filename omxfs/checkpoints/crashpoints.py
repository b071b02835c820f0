"""Named points where a test kills a checkpoint or a restore with SIGKILL, to prove what a crash there leaves.

``OMXFS_CRASH_AT=NAME[:N]`` in the environment makes the N-th (default: first) passage of this process through
``crash_point(NAME)`` a ``kill -9`` of itself: a real crash at a chosen moment, which a test can repeat, where
killing from outside after a guessed delay would hit a different moment each run. Unset, a passage costs one
dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "OMXFS_CRASH_AT"
_passed: dict[str, int] = {}


def crash_point(name: str) -> None:
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point != name:
        return
    _passed[name] = _passed.get(name, 0) + 1
    if _passed[name] >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
