"""Writes in the private zones, as the store learns them: a view writes its agent's zone natively (no daemon on the
path), so the zones' files are watched, two ways that each see what the other cannot.

**inotify, for the writes made on this machine** (every view's, the CLI's, a local daemon's): one watch per directory
of every zone (and ``agents/`` itself), added when the directory is first listed, before its names are read, so that
nothing made between the two is missed. Each poll reads the events queued since the last one: a directory with a
name made, removed or renamed is listed again; a file modified, closed after writing or chmod-ed is stat-ed again.
A write shows at the next poll, however many zones and files there are. A queue that overflowed (``IN_Q_OVERFLOW``:
the kernel dropped events) costs one full re-scan: every directory listed, every file stat-ed. Past the user's watch
limit (``ENOSPC``) the directories left without a watch are found by the stamps below alone; said once in the log
and on the Activity page (``notice``).

**Stamps, for what inotify cannot see**: the writes other machines make to a store on a shared filesystem (sshfs,
NFS, JuiceFS, GlusterFS), and the directories without a watch. **Names made, removed or renamed** move their
directory's mtime, so each poll stats every directory of every zone (one ``stat`` each, no listing) and lists again
only those whose stamp moved (or is younger than ``SETTLE``, as in the feed). **A file rewritten in place** moves no
directory's stamp: a sweep stats at most ``FILES_PER_POLL`` of the known files per poll, round robin over every
zone, so that a poll costs the same however big the zones grow (fifty zones of 3,600 files are swept in 36 s: the
pace of a rewrite made by another machine; this machine's are inotify's). A change both ways see is reported once:
each file's stamp is kept, and only a stamp that moved is a change.

**Not walked:** a nested git repository's ``.git`` (thousands of objects, git's own business): it counts as one
entry, changed when its top directory's stamp moves (every ``git add`` and commit renames the index there); its top
directory alone is watched, so that git's work shows at the next poll without a watch for each of its hundreds of
object directories (the user's watches are shared with every other inotify user of the machine). And a zone's
``runs/``, omx's record of its runs, which the feed shows line by line as run events.

What the zones hold when the feed starts is learned without events: the timeline shows the writes from then on.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from omxfs import inotify
from omxfs.errors import OmxError
from omxfs.inotify import Inotify, WatchLimit
from omxfs.store.atomic import open_dir
from omxfs.ui.stamps import SETTLE

log = logging.getLogger(__name__)

#: known files (and ``.git`` directories) stat-ed per poll by the sweep that finds files rewritten in place
FILES_PER_POLL = 1_000
#: a directory not walked, but seen as one entry: a nested git repository
OPAQUE = frozenset({".git"})
#: a zone's directory of omx run records (``feed.RUNS``), not walked: the feed reads it
SKIPPED_AT_TOP = frozenset({"runs"})
#: names a summary lists per kind of change, at most
NAMED = 5

#: inotify: a name made, removed or renamed in the directory
NAMES = inotify.IN_CREATE | inotify.IN_DELETE | inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO
#: ... a file's content or attributes changed in place
CONTENT = inotify.IN_MODIFY | inotify.IN_ATTRIB | inotify.IN_CLOSE_WRITE
#: ... the watch is gone (the directory removed, or moved away from the path it was watched at)
LOST = inotify.IN_IGNORED | inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF
#: ... what a directory is watched for
MASK = NAMES | CONTENT | inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF | inotify.IN_ONLYDIR

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
    stamp: tuple[int, int]  # (inode, mtime_ns): a directory swapped for another is listed again
    files: set[str]  # names of the files (and opaque directories) in it
    subdirs: set[str]


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class PrivateZones:
    """The files of every zone under ``agents`` (the store's ``agents/``), and what changed since the last poll.

    ``watch=False``: stamps only (no inotify). ``max_watches``: at most this many watches, as if the kernel's limit
    were reached past them (the tests' way to reach it)."""

    def __init__(self, agents: Path, *, watch: bool = True, max_watches: int | None = None) -> None:
        self.agents = agents
        self._top_stamp: int | None = None
        self._zones: set[str] = set()
        self._dirs: dict[str, _Dir] = {}  # "<agent>/<dir>" → what it held when last listed
        self._files: dict[str, Stamp] = {}  # "<agent>/<path>" → its stamp when last seen
        self._sweep: list[tuple[str, str]] = []  # (key, path) of the files the sweep goes through, in turn
        self._cursor = 0
        self.stats = 0  # stat calls of the last poll (for the benchmark and the tests)
        self._inotify: Inotify | None = None
        self.notice: str | None = None  # what the person should know of the watch (no inotify, its limit), once
        if watch:
            try:
                self._inotify = Inotify()
            except OSError as exc:  # no inotify here (or no instance left): the stamps alone
                self.notice = f"no inotify ({exc.strerror}): a rewrite in place shows within a sweep of every zone"
                self._say(f"private zones: {self.notice}")
        self._max_watches = max_watches
        self._watched: dict[int, tuple[str, bool]] = {}  # watch → (key: "" for agents/ itself, opaque)
        self._watch_of: dict[str, int] = {}  # key → its watch
        self.overflows = 0  # inotify's queue overflowed this many times (each a full re-scan)

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()

    def watches(self) -> int:
        """How many directories inotify watches now."""
        return len(self._watch_of)

    def sweep_order(self) -> list[str]:
        """The known files, as the sweep goes through them from where it is now (for the tests and the benchmark)."""
        ahead = [key for key, _ in self._sweep[self._cursor :] + self._sweep[: self._cursor]]
        return [key for key in ahead if key in self._files]

    def poll(self, *, quiet: bool = False) -> dict[str, Changes]:
        """agent → what changed in its zone since the last poll (nothing reported with ``quiet``: learned only)."""
        self.stats = 0
        found: dict[str, Changes] = {}
        dirs, files, rescan = self._events()
        self._find_zones(found, rescan or "" in dirs)
        for key in list(self._dirs):
            self._look_at_dir(key, found, force=rescan or key in dirs)
        for key in list(self._files) if rescan else sorted(files):
            if key in self._files:
                self._check(key, os.path.join(self.agents, key), found)
        self._sweep_files(found)
        return {} if quiet else {agent: changes for agent, changes in found.items() if changes}

    # -- inotify ----------------------------------------------------------------------------------------------

    def _events(self) -> tuple[set[str], set[str], bool]:
        """What inotify saw since the last poll: the directories to list again, the files to stat again, and
        whether events were lost (then everything is looked at again)."""
        dirs: set[str] = set()
        files: set[str] = set()
        if self._inotify is None:
            return dirs, files, False
        rescan = False
        for wd, mask, raw in self._inotify.read():
            if mask & inotify.IN_Q_OVERFLOW:
                rescan = True
                continue
            watched = self._watched.get(wd)
            if watched is None:  # a watch forgotten meanwhile
                continue
            key, opaque = watched
            if mask & LOST:  # removed, or moved away: looked at again (its parent's listing says which)
                self._unwatch(key, remove=not mask & inotify.IN_IGNORED)
                (files if opaque else dirs).add(key)
                dirs.add(key.rpartition("/")[0] if "/" in key else "")
            elif opaque:  # a change in a nested repository's top: the one entry it counts as
                files.add(key)
            else:
                if mask & NAMES:
                    dirs.add(key)
                if raw and mask & CONTENT:
                    name = os.fsdecode(raw)
                    files.add(f"{key}/{name}" if key else name)
        if rescan:
            self.overflows += 1
            log.warning("private zones: inotify's queue overflowed (events lost): every zone looked at again")
        return dirs, files, rescan

    def _watch(self, key: str, path: str, *, opaque: bool = False, extra: int = 0) -> None:
        """Watch the directory at ``path`` (``/proc/self/fd/N`` of a descriptor walked without following symlinks,
        so that the directory watched is the one listed) as ``key``."""
        if self._inotify is None or key in self._watch_of:
            return
        try:
            if self._max_watches is not None and len(self._watch_of) >= self._max_watches:
                raise WatchLimit(path)
            wd = self._inotify.add(path, MASK | extra)
        except WatchLimit:
            if self.notice is None:
                self.notice = (
                    f"inotify's watch limit is reached ({len(self._watch_of)} directories watched): the others' "
                    "writes are found by polling, a rewrite in place there within a sweep of every zone's files "
                    "(raise fs.inotify.max_user_watches)"
                )
                self._say(f"private zones: {self.notice}")
            return
        except OSError:
            return  # gone meanwhile: its parent's next listing says so
        old = self._watched.get(wd)
        if old is not None:  # the same directory under another key (moved): the newest counts
            self._watch_of.pop(old[0], None)
        self._watched[wd] = (key, opaque)
        self._watch_of[key] = wd

    def _watch_at(self, key: str, fd: int, *, opaque: bool = False) -> None:
        self._watch(key, f"/proc/self/fd/{fd}", opaque=opaque)

    def _unwatch(self, key: str, *, remove: bool = True) -> None:
        wd = self._watch_of.pop(key, None)
        if wd is None:
            return
        self._watched.pop(wd, None)
        if remove and self._inotify is not None:
            self._inotify.remove(wd)

    @staticmethod
    def _say(message: str) -> None:
        log.warning("%s", message)

    # -- the zones --------------------------------------------------------------------------------------------

    def _find_zones(self, found: dict[str, Changes], force: bool) -> None:
        try:
            st = os.stat(self.agents, follow_symlinks=False)
        except OSError:
            return
        self.stats += 1
        if not force and st.st_mtime_ns == self._top_stamp and st.st_mtime < time.time() - SETTLE:
            return
        self._top_stamp = st.st_mtime_ns
        # the store's own directory (no agent names it): watched by its path, before it is listed
        self._watch("", str(self.agents), extra=inotify.IN_DONT_FOLLOW)
        try:
            with os.scandir(self.agents) as listing:
                zones = {e.name for e in listing if e.is_dir(follow_symlinks=False)}
        except OSError:
            return
        for gone in self._zones - zones:
            self._forget_dir(gone, found.setdefault(gone, Changes()))
        for new in zones - self._zones:
            self._dirs[new] = _Dir((0, 0), set(), set())  # listed (its files found) by the directory pass
        self._zones = zones

    # -- directories: names made, removed, renamed ------------------------------------------------------------

    def _look_at_dir(self, key: str, found: dict[str, Changes], *, force: bool = False) -> None:
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
        stamp = (st.st_ino, st.st_mtime_ns)
        if not force and stamp == known.stamp and st.st_mtime < time.time() - SETTLE:
            return
        known.stamp = stamp
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
            self._watch_at(key, fd)  # watched before it is listed: a name made in between is an event
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
            self._dirs[f"{key}/{name}"] = _Dir((0, 0), set(), set())
            self._look_at_dir(f"{key}/{name}", found)  # a new directory's files, found in this poll

    def _forget_dir(self, key: str, changes: Changes) -> None:
        """A directory gone (or no directory any more): its files deleted, its subdirectories forgotten too."""
        known = self._dirs.pop(key, None)
        self._unwatch(key)
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
        if stat.S_ISDIR(st.st_mode):  # a nested repository's .git: its top watched, as one entry
            watched = self._watch_opaque(key)
            if watched is None:
                return  # swapped for a symlink meanwhile: met again at its directory's next listing
            st = watched
        self._files[key] = _stamp(st)
        self._sweep.append((key, os.path.join(self.agents, key)))
        changes.added.append(key.split("/", 1)[1])
        changes.latest = max(changes.latest, st.st_mtime)

    def _watch_opaque(self, key: str) -> os.stat_result | None:
        """Watch the top of a nested repository (``.git``), and its stat then (after the watch: no change falls
        between); None when it is no directory now."""
        try:
            fd = open_dir(self.agents, key)
        except (OmxError, OSError):
            return None
        try:
            self._watch_at(key, fd, opaque=True)
            return os.fstat(fd)
        finally:
            os.close(fd)

    def _gone(self, key: str, changes: Changes) -> None:
        if self._files.pop(key, None) is not None:
            self._unwatch(key)
            changes.deleted.append(key.split("/", 1)[1])

    def _check(self, key: str, path: str, found: dict[str, Changes]) -> None:
        """A known file stat-ed again: modified if its stamp moved."""
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return  # gone: its directory's listing says so
        self.stats += 1
        if stat.S_ISDIR(st.st_mode) and self._inotify is not None and key not in self._watch_of:
            # a .git whose watch was lost (removed and made again, as ``rm -rf .git; git init`` does): watched anew
            st = self._watch_opaque(key) or st
        if _stamp(st) != self._files[key]:
            self._files[key] = _stamp(st)
            changes = found.setdefault(key.split("/", 1)[0], Changes())
            changes.modified.append(key.split("/", 1)[1])
            changes.latest = max(changes.latest, st.st_mtime)

    def _sweep_files(self, found: dict[str, Changes]) -> None:
        """Stat the next ``FILES_PER_POLL`` known files (each at most once): those rewritten in place since the
        sweep last came by (by another machine, or in a directory without a watch)."""
        for _ in range(min(FILES_PER_POLL, len(self._files))):
            if self._cursor >= len(self._sweep):  # once round: begin again, the files deleted meanwhile dropped
                self._sweep, self._cursor = [(k, os.path.join(self.agents, k)) for k in self._files], 0
            key, path = self._sweep[self._cursor]
            self._cursor += 1
            if key in self._files:
                self._check(key, path, found)
