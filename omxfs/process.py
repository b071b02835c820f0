"""Facts about other processes that both the mount's lifecycle and ``omx`` need, with no FUSE import."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (another user's counts; a zombie, which has exited, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited: it only waits for its parent
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False
