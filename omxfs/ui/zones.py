"""Writes in the private zones, as the store learns them: by looking at the stamps of each zone's directories and
files, since nothing tells it (a view writes its agent's zone natively, no daemon on the path).

**Names made, removed or renamed** move their directory's mtime, so each poll stats every directory of every zone
(one ``stat`` each, no listing) and lists again only those whose stamp moved (or is younger than ``SETTLE``, as in
the feed): a file created, deleted or renamed into place (an editor's save) shows at the next poll. Only the new
names are stat-ed then, so a write in a directory of thousands of files costs one listing.

**A file rewritten in place** moves no directory's stamp: a sweep finds it, stat-ing at most ``FILES_PER_POLL`` of
the known files per poll, round robin over every zone, so that a poll costs the same however big the zones grow (a
zone of 3,600 files is swept in four polls, 0.8 s; fifty of them in 36 s). What ``scripts/bench_ui.py`` measures.

**Not walked:** a nested git repository's ``.git`` (thousands of objects, git's own business): it counts as one
entry, changed when its top directory's stamp moves (every ``git add`` and commit renames the index there); and a
zone's ``runs/``, omx's record of its runs, which the feed shows line by line as run events.

What the zones hold when the feed starts is learned without events: the timeline shows the writes from then on.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from omxfs.errors import OmxError
from omxfs.store.atomic import open_dir
from omxfs.ui.stamps import SETTLE

#: known files (and ``.git`` directories) stat-ed per poll by the sweep that finds files rewritten in place
FILES_PER_POLL = 1_000
#: a directory not walked, but seen as one entry: a nested git repository
OPAQUE = frozenset({".git"})
#: a zone's directory of omx run records (``feed.RUNS``), not walked: the feed reads it
SKIPPED_AT_TOP = frozenset({"runs"})
#: names a summary lists per kind of change, at most
NAMED = 5

Stamp = tuple[int, int, int, int]  # (inode, size, mtime_ns, ctime_ns)


@dataclass
class Changes:
    """What one poll found changed in one zone, as paths relative to it."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    latest: float = 0.0  # the newest mtime among the added and modified files

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.deleted)

    def summary(self) -> str:
        parts = []
        for verb, names in (("added", self.added), ("modified", self.modified), ("deleted", self.deleted)):
            if names:
                more = f" (+{len(names) - NAMED} more)" if len(names) > NAMED else ""
                parts.append(f"{verb} {', '.join(sorted(names)[:NAMED])}{more}")
        return "; ".join(parts)


@dataclass
class _Dir:
    stamp: int
    files: set[str]  # names of the files (and opaque directories) in it
    subdirs: set[str]


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class PrivateZones:
    """The files of every zone under ``agents`` (the store's ``agents/``), and what changed since the last poll."""

    def __init__(self, agents: Path) -> None:
        self.agents = agents
        self._top_stamp: int | None = None
        self._zones: set[str] = set()
        self._dirs: dict[str, _Dir] = {}  # "<agent>/<dir>" → what it held when last listed
        self._files: dict[str, Stamp] = {}  # "<agent>/<path>" → its stamp when last seen
        self._sweep: list[tuple[str, str]] = []  # (key, path) of the files the sweep goes through, in turn
        self._cursor = 0
        self.stats = 0  # stat calls of the last poll (for the benchmark and the tests)

    def poll(self, *, quiet: bool = False) -> dict[str, Changes]:
        """agent → what changed in its zone since the last poll (nothing reported with ``quiet``: learned only)."""
        self.stats = 0
        found: dict[str, Changes] = {}
        self._find_zones(found)
        for key in list(self._dirs):
            self._look_at_dir(key, found)
        self._sweep_files(found)
        return {} if quiet else {agent: changes for agent, changes in found.items() if changes}

    # -- the zones --------------------------------------------------------------------------------------------

    def _find_zones(self, found: dict[str, Changes]) -> None:
        try:
            st = os.stat(self.agents, follow_symlinks=False)
        except OSError:
            return
        self.stats += 1
        if st.st_mtime_ns == self._top_stamp and st.st_mtime < time.time() - SETTLE:
            return
        self._top_stamp = st.st_mtime_ns
        try:
            with os.scandir(self.agents) as listing:
                zones = {e.name for e in listing if e.is_dir(follow_symlinks=False)}
        except OSError:
            return
        for gone in self._zones - zones:
            self._forget_dir(gone, found.setdefault(gone, Changes()))
        for new in zones - self._zones:
            self._dirs[new] = _Dir(0, set(), set())  # listed (its files found) by the directory pass
        self._zones = zones

    # -- directories: names made, removed, renamed ------------------------------------------------------------

    def _look_at_dir(self, key: str, found: dict[str, Changes]) -> None:
        known = self._dirs.get(key)
        if known is None:  # forgotten meanwhile (its parent lost it)
            return
        path = os.path.join(self.agents, key)
        try:
            st = os.stat(path, follow_symlinks=False)
            self.stats += 1
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(path)
        except OSError:
            self._forget_dir(key, found.setdefault(key.split("/", 1)[0], Changes()))
            return
        if st.st_mtime_ns == known.stamp and st.st_mtime < time.time() - SETTLE:
            return
        known.stamp = st.st_mtime_ns
        agent, top = key.split("/", 1)[0], "/" not in key
        changes = found.setdefault(agent, Changes())
        files: set[str] = set()
        subdirs: set[str] = set()
        try:
            # listed through a descriptor walked without following a symlink: an agent that swaps a directory of
            # its zone for a symlink between two looks must not have the names of a directory outside listed
            fd = open_dir(self.agents, key)
        except (OmxError, OSError):
            return  # gone, or a symlink now: its parent's listing forgets it
        try:
            with os.scandir(fd) as listing:
                for entry in listing:
                    if top and entry.name in SKIPPED_AT_TOP:
                        continue
                    walked = entry.is_dir(follow_symlinks=False) and entry.name not in OPAQUE
                    (subdirs if walked else files).add(entry.name)
        except OSError:
            return
        finally:
            os.close(fd)
        for name in files:  # the new names, and any a look missed (gone at its stat, back since)
            if f"{key}/{name}" not in self._files:
                self._met(f"{key}/{name}", changes)
        for name in known.files - files:
            self._gone(f"{key}/{name}", changes)
        for name in known.subdirs - subdirs:
            self._forget_dir(f"{key}/{name}", changes)
        known.files, known.subdirs = files, known.subdirs & subdirs
        for name in sorted(subdirs - known.subdirs):
            known.subdirs.add(name)
            self._dirs[f"{key}/{name}"] = _Dir(0, set(), set())
            self._look_at_dir(f"{key}/{name}", found)  # a new directory's files, found in this poll

    def _forget_dir(self, key: str, changes: Changes) -> None:
        """A directory gone (or no directory any more): its files deleted, its subdirectories forgotten too."""
        known = self._dirs.pop(key, None)
        if known is None:
            return
        for name in known.files:
            self._gone(f"{key}/{name}", changes)
        for name in known.subdirs:
            self._forget_dir(f"{key}/{name}", changes)

    # -- files: seen, rewritten, gone -------------------------------------------------------------------------

    def _met(self, key: str, changes: Changes) -> None:
        try:
            st = os.stat(os.path.join(self.agents, key), follow_symlinks=False)
        except OSError:
            return  # gone again already
        self.stats += 1
        self._files[key] = _stamp(st)
        self._sweep.append((key, os.path.join(self.agents, key)))
        changes.added.append(key.split("/", 1)[1])
        changes.latest = max(changes.latest, st.st_mtime)

    def _gone(self, key: str, changes: Changes) -> None:
        if self._files.pop(key, None) is not None:
            changes.deleted.append(key.split("/", 1)[1])

    def _sweep_files(self, found: dict[str, Changes]) -> None:
        """Stat the next ``FILES_PER_POLL`` known files (each at most once): those rewritten in place since the
        sweep last came by."""
        for _ in range(min(FILES_PER_POLL, len(self._files))):
            if self._cursor >= len(self._sweep):  # once round: begin again, the files deleted meanwhile dropped
                self._sweep, self._cursor = [(k, os.path.join(self.agents, k)) for k in self._files], 0
            key, path = self._sweep[self._cursor]
            self._cursor += 1
            known = self._files.get(key)
            if known is None:
                continue
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                continue  # gone: its directory's listing says so
            self.stats += 1
            if _stamp(st) != known:
                self._files[key] = _stamp(st)
                changes = found.setdefault(key.split("/", 1)[0], Changes())
                changes.modified.append(key.split("/", 1)[1])
                changes.latest = max(changes.latest, st.st_mtime)
