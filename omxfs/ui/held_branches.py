"""What a feed's poll finds of the zones' branches (``.omxfs/branches/<zone>/<name>/``): a branch newly held (its
directory made by its first run), and a run of a branch that ended (what it holds is then complete).

A poll stats ``.omxfs/branches`` and each zone's directory in it, and lists only those whose stamp moved (or is
younger than ``SETTLE``): making or removing a branch's directory moves its zone's. A branch is new once; one that
ended is forgotten, so that a branch made again under its name is new again. A run's end is seen the same way, by
the zone's directory of view records (``.omxfs/views/<zone>/``, a record removed as its view ends): once it moved,
each branch whose ``running`` lock is free and whose ``running`` file (the pid, written as each run starts) is not
the one seen free before had a run end. Only the store's own records are read, nothing a branch's agent wrote.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from omxfs.checkpoints.branches import BRANCH_RUNNING, BRANCHES, NAME, REVIEW, running_pid
from omxfs.store.layout import VIEWS
from omxfs.ui.stamps import SETTLE


@dataclass(frozen=True)
class Found:
    zone: str
    name: str
    ran: bool  # False: newly held; True: a run of it ended
    epoch: float
    key: str  # what it is, once


class HeldBranches:
    def __init__(self, meta: Path) -> None:
        self.top = meta / BRANCHES
        self.views = meta / VIEWS
        self._stamps: dict[str, int] = {}  # a directory's key → its mtime_ns when last listed
        self._zones: list[str] = []
        self._held: dict[str, set[str]] = {}  # zone → the names of its branches held when last listed
        self._free: dict[str, int] = {}  # "zone/name" → its running file's mtime_ns when last seen not running

    def poll(self) -> list[Found]:
        """The branches held and the branch runs ended since the last call (the first call's: every branch held)."""
        if self._moved("", self.top):
            self._zones = sorted(_subdirs(self.top))
            for gone in set(self._held) - set(self._zones):
                del self._held[gone]
                self._stamps.pop(gone, None)
        found = []
        for zone in self._zones:
            if self._moved(zone, self.top / zone):
                listed = {n: st for n, st in _subdirs(self.top / zone).items() if NAME.fullmatch(n) and n != REVIEW}
                known = self._held.get(zone, set())
                for name, st in sorted(listed.items()):
                    if name not in known:
                        self._seen_free(zone, name)
                        found.append(Found(zone, name, False, st.st_mtime, f"branch:{zone}/{name}:{st.st_ino}"))
                for name in known - set(listed):
                    self._free.pop(f"{zone}/{name}", None)
                self._held[zone] = set(listed)
            if self._held.get(zone) and self._moved(f"{VIEWS}/{zone}", self.views / zone):
                for name in sorted(self._held[zone]):
                    stamp = self._seen_free(zone, name)
                    if stamp is not None:
                        found.append(Found(zone, name, True, time.time(), f"branch-ran:{zone}/{name}:{stamp}"))
        return found

    def _seen_free(self, zone: str, name: str) -> int | None:
        """The stamp of the branch's last run start if no run of it is going and that run was not seen ended
        before (None otherwise); remembered."""
        branch = self.top / zone / name
        try:
            stamp = os.lstat(branch / BRANCH_RUNNING).st_mtime_ns
        except OSError:
            return None
        key = f"{zone}/{name}"
        if running_pid(branch) is not None or self._free.get(key) == stamp:
            return None
        self._free[key] = stamp
        return stamp

    def _moved(self, key: str, path: Path) -> bool:
        """Whether the directory ``path`` is to be listed again (its stamp moved or is recent). A top that is gone
        is (as empty, so its zones are forgotten); another directory that is gone is not."""
        try:
            st = os.lstat(path)
        except OSError:
            self._stamps.pop(key, None)
            return key == ""
        if self._stamps.get(key) == st.st_mtime_ns and st.st_mtime < time.time() - SETTLE:
            return False
        self._stamps[key] = st.st_mtime_ns
        return True


def _subdirs(path: Path) -> dict[str, os.stat_result]:
    """The directories in ``path`` (never through a symlink), each with its stat; none where it cannot be listed."""
    found: dict[str, os.stat_result] = {}
    with contextlib.suppress(OSError), os.scandir(path) as listing:
        for entry in listing:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    found[entry.name] = entry.stat(follow_symlinks=False)
    return found
