"""The store watched for changes made behind the daemon's back, so the kernel may cache the private zones for long.

Issue 16: a private zone changes through this mount, but also behind it: another daemon on the same store, an
agent view writing its own zone natively (the store's directory bound into the view), the CLI. The kernel may keep
entries and attributes of a private-zone node for a minute (``entries.WATCHED_TIMEOUT``) only because each of
those changes is learned from the store itself and invalidated within ``COALESCE_S``, well inside the promised
second.

Why inotify on the store's directories rather than a change journal: every writer of a private zone (a view's
programs among them) writes the store's files with plain system calls, so only the kernel sees them all; a journal
would need every writer's cooperation. inotify sees a change however it was made, from any mount of the store's
filesystem (bind mounts included), not from another machine: a store on a network or FUSE filesystem (NFS, CIFS,
GlusterFS, another omxfs) is not watched at all (``local_store``), and keeps the short timeouts.

What is watched: each directory of a private zone (``agents/<agent>/`` and below, and the root and ``agents/``
above them) just before the daemon answers
a lookup, a listing or a creation in it (``ensure``: watch first, then stat, so no change falls between), and only
while the watch holds: a directory whose watch could not be added (inotify's limit), was removed or moved away keeps
the short timeouts for its entries (``covers``). An event on a name invalidates the kernel's entry for it (removed,
renamed, or created where the kernel was told the name is absent: ``absent``) and the node's attributes (written,
chmod, touch, xattrs); events of the daemon's own changes invalidate
too, which costs the kernel a lookup or getattr it would have made anyway with short timeouts. Pages are never
dropped here: a file changed elsewhere is opened without ``keep_cache`` (the private zone compares the file with
its last open), and the kernel drops the pages of a file held open once a fresh getattr shows another mtime
(libfuse's default ``auto_inval_data``); dropping them at each write event would also drop the pages the daemon's
own writes left, which make a re-read as fast as native.
A file with several names (hard links) is never cached long: a write through a name in another directory is
reported to that directory only.

The invalidations run in this module's own thread, never on the trio thread that answers requests: pyfuse3's
``invalidate_entry`` waits while the kernel handles a request on the same directory, and that request needs the
loop (pyfuse3 releases the GIL while it waits). For the same reason the session ends with the watch stopped
first (``daemon.end_session``), and the watch runs only where the daemon's guardian can abort the connection
(``guardian.py``): a killed daemon's thread waiting there would otherwise never exit, nor free the mount.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyfuse3

from omxfs.errors import NotFound
from omxfs.fuse.entries import WATCHED_TIMEOUT
from omxfs.fuse.inodes import InodeTable
from omxfs.fuse.mounts import mount_table
from omxfs.fuse.zones.base import ViewPath
from omxfs.inotify import (
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_DONT_FOLLOW,
    IN_EXCL_UNLINK,
    IN_IGNORED,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
    IN_Q_OVERFLOW,
    Inotify,
    RawEvent,
    WatchLimit,
)
from omxfs.store import layout

#: events are gathered this long before the kernel is told, so that a burst costs one invalidation per node
COALESCE_S = 0.1
#: the watch thread's nice value (a Linux thread has its own)
WATCH_NICE = 10
#: filesystems whose changes this machine's inotify sees: every writer of the store runs here
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "bcachefs", "zfs", "jfs"})

#: what a directory is watched for
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
#: the name no longer leads where the kernel may believe it does (a name that existed before its creation was removed
#: or renamed first, with its own event)
GONE = IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE
#: the name now exists: the kernel's entry for it is wrong only where it was told the name is absent (``absent``)
APPEARED = IN_CREATE | IN_MOVED_TO
#: the directory's entries changed: its mtime and link count
NAMESPACE = GONE | IN_CREATE

#: negative entries (names the kernel was told are absent) remembered at once; past it, absences are not cached
MAX_ABSENT = 1 << 16
#: ... each for as long as the kernel may hold it after the lookup's reply, and a second to spare
ABSENT_KEPT_S = WATCHED_TIMEOUT + 1.0

#: not errors for an invalidation: the kernel does not hold that node or entry, or the session is ending
QUIET = frozenset({errno.ENOENT, errno.ENOTCONN, errno.ENODEV, errno.EBADF})

Invalidate = Callable[[int, bytes | None], None]


def local_store(root: Path) -> bool:
    """Whether every change to the store is made on this machine's kernel, where inotify sees it."""
    dev = os.stat(root).st_dev
    types = [e.fstype for e in mount_table() if e.dev == dev]
    return bool(types) and types[-1] in LOCAL_FILESYSTEMS


def watched_zone(directory: ViewPath) -> bool:
    """What the watch covers: the private zones (``agents/<agent>/`` and below), and the two directories above
    them, whose entries change only when a zone is added."""
    parts = directory.parts
    return not parts or parts[0] == layout.AGENTS


def kernel_invalidate(inode: int, name: bytes | None) -> None:
    """Tell the kernel: forget the entry ``name`` of directory ``inode``, or the attributes of ``inode``.
    A node or entry the kernel does not hold is not an error."""
    try:
        if name is not None:
            pyfuse3.invalidate_entry(inode, name)
        else:
            pyfuse3.invalidate_inode(inode, attr_only=True)
    except OSError as exc:
        if exc.errno not in QUIET:
            raise


class StoreWatch:
    """inotify on the private zones' directories the kernel holds entries of; invalidates what changes."""

    def __init__(
        self, store_root: Path, inodes: InodeTable, log: logging.Logger, invalidate: Invalidate = kernel_invalidate
    ) -> None:
        self.root = str(store_root)
        self.inodes = inodes
        self.log = log
        self._invalidate = invalidate
        self._inotify = Inotify()
        self._lock = threading.Lock()
        self._wd_of: dict[int, int] = {}  # directory node number -> watch descriptor
        self._dir_of: dict[int, int] = {}  # watch descriptor -> directory node number
        # (directory node number, name) -> until when the kernel may hold a negative entry for it (monotonic s)
        self._absent: dict[tuple[int, bytes], float] = {}
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, name="omxfs-store-watch", daemon=True)
        self._full = False  # inotify's watch limit was reached once: logged once
        self._stopped = False
        # what the watch cost, logged when it stops: events read, invalidations sent, seconds spent on them
        self._events = self._invalidations = 0
        self._busy_s = 0.0

    # -- the request side (trio thread and worker threads) -----------------------------------------------------

    def ensure(self, directory: int, path: ViewPath) -> None:
        """Watch the store directory of ``path`` (node ``directory``) before its entries are read for the kernel."""
        if not watched_zone(path):
            return
        with self._lock:
            if directory in self._wd_of:
                return
        try:
            wd = self._inotify.add(f"{self.root}/{path}", MASK)
        except WatchLimit:
            if not self._full:
                self._full = True
                self.log.warning("inotify's watch limit is reached: more directories keep 0.5 s caches")
            return
        except OSError:
            return  # gone meanwhile, or no directory: its entries keep the short timeouts
        with self._lock:
            old = self._dir_of.get(wd)
            if old is not None:  # the same directory under a new number (moved behind our back): the newest counts
                self._wd_of.pop(old, None)
            self._wd_of[directory] = wd
            self._dir_of[wd] = directory

    def covers(self, directory: int) -> bool:
        """Whether the entries of node ``directory`` may be cached long: its store directory is watched."""
        return directory in self._wd_of

    def absent(self, directory: int, path: ViewPath, name: bytes) -> bool:
        """Before a lookup of ``name`` (at ``path``) in ``directory`` reads the store: whether the kernel may be told
        the name is absent, for ``WATCHED_TIMEOUT``; then a creation of it behind the daemon's back invalidates that
        entry. Noted before the store is read, so a creation between the read and the reply is not missed (the
        lookup then asks ``still_absent``). Only in the private zones, whose every name is a store file."""
        parts = path.parts  # the name's: its directory is in the private zones (``agents/`` or below)
        if len(parts) < 2 or parts[0] != layout.AGENTS or not self.covers(directory):
            return False
        now = time.monotonic()
        with self._lock:
            if len(self._absent) >= MAX_ABSENT:  # those the kernel no longer holds go first; if none, not cached
                self._absent = {key: until for key, until in self._absent.items() if until > now}
                if len(self._absent) >= MAX_ABSENT:
                    return False
            self._absent[directory, name] = now + ABSENT_KEPT_S
        return True

    def still_absent(self, directory: int, name: bytes) -> bool:
        """Whether no creation of ``name`` was reported since ``absent``: the negative entry may go to the kernel,
        which keeps it ``WATCHED_TIMEOUT`` from now (however long the lookup took), so it is remembered as long."""
        with self._lock:
            if (directory, name) not in self._absent:
                return False
            self._absent[directory, name] = time.monotonic() + ABSENT_KEPT_S
            return True

    def present(self, directory: int, name: bytes) -> None:
        """The kernel holds a positive entry for ``name`` now (looked up, or made through the mount): its creation
        event needs no invalidation."""
        if self._absent:
            with self._lock:
                self._absent.pop((directory, name), None)

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop invalidating (before the FUSE session closes) and release the inotify descriptor; once."""
        if self._stopped:
            return
        self._stopped = True
        os.close(self._stop_w)  # the thread's select sees the pipe's end (readable, EOF)
        if self._thread.is_alive():
            self._thread.join()
            self.log.info(
                "store watch: %d events, %d invalidations, %.3f s; %d directories watched",
                self._events,
                self._invalidations,
                self._busy_s,
                len(self._dir_of),
            )
        self._inotify.close()
        os.close(self._stop_r)

    # -- the watch thread --------------------------------------------------------------------------------------

    def _run(self) -> None:
        # Requests come first: this thread's work can wait a little (the promise is a second, not 0.1 s).
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WATCH_NICE)
        while True:
            ready, _, _ = select.select([self._inotify.fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            time.sleep(COALESCE_S)  # the rest of a burst joins this batch
            started = time.perf_counter()
            try:
                self._apply(self._inotify.read())
            except Exception:  # a bug here must not stop the watch: the next change is still learned
                self.log.exception("store watch: invalidation failed")
            self._busy_s += time.perf_counter() - started

    def _apply(self, events: list[RawEvent]) -> None:
        entries: set[tuple[int, bytes]] = set()
        nodes: set[int] = set()
        # One name's events of a batch are one: a write is a create, several modifies and an attrib or two, and
        # every invalidation they call for is the same (all of them at worst).
        masks: dict[tuple[int, bytes], int] = {}
        for wd, mask, name in events:
            self._events += 1
            if mask & IN_Q_OVERFLOW:
                self._overflowed(entries, nodes)
                continue
            key = (wd, name)
            masks[key] = masks.get(key, 0) | mask
        for (wd, name), mask in masks.items():
            self._event(wd, mask, name, entries, nodes)
        for directory, entry in entries:
            self._invalidate(directory, entry)
        for node in nodes:
            self._invalidate(node, None)
        self._invalidations += len(entries) + len(nodes)

    def _event(self, wd: int, mask: int, name: bytes, entries: set[tuple[int, bytes]], nodes: set[int]) -> None:
        with self._lock:
            directory = self._dir_of.get(wd)
            if directory is not None and mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                # Gone or moved: its entries are no longer watched at this path; the kernel forgets those it
                # holds, and the next lookup in it watches it again.
                del self._dir_of[wd]
                self._wd_of.pop(directory, None)
                if mask & IN_MOVE_SELF:
                    self._inotify.remove(wd)
                entries.update(self._take_absent(directory))
                self._forget_children(directory, entries, nodes)
                nodes.add(directory)
                return
        if directory is None:
            return
        if not name:
            nodes.add(directory)
            return
        if mask & NAMESPACE:
            nodes.add(directory)
        if mask & APPEARED and self._absent:
            with self._lock:
                if self._absent.pop((directory, name), None) is not None:
                    entries.add((directory, name))  # a negative entry: the kernel would not see the new name
        # The kernel holds a positive entry only for a name it looked up, which the inode table then knows; a name
        # the daemon itself removed or renamed away is gone from the table, and the kernel already forgot it.
        child = self.inodes.child(directory, os.fsdecode(name))
        if child is not None:
            nodes.add(child)
            if mask & GONE:
                entries.add((directory, name))

    def _forget_children(self, directory: int, entries: set[tuple[int, bytes]], nodes: set[int]) -> None:
        """The kernel forgets the entries it holds in ``directory``, and their nodes' attributes (the negative
        entries are ``_take_absent``'s)."""
        try:
            path = self.inodes.path(directory)
        except NotFound:
            return
        for name, child in self.inodes.children(path):
            entries.add((directory, os.fsencode(name)))
            nodes.add(child)

    def _take_absent(self, directory: int) -> list[tuple[int, bytes]]:
        """The negative entries the kernel may hold in ``directory``, forgotten here (the lock is held)."""
        absent = [key for key in self._absent if key[0] == directory]
        for key in absent:
            del self._absent[key]
        return absent

    def _overflowed(self, entries: set[tuple[int, bytes]], nodes: set[int]) -> None:
        """inotify lost events: the kernel forgets every watched directory's entries."""
        self.log.warning("store watch: inotify's queue overflowed; the kernel forgets every private-zone entry")
        with self._lock:
            directories = list(self._wd_of)
            entries.update(self._absent)
            self._absent.clear()
        for directory in directories:
            self._forget_children(directory, entries, nodes)
            nodes.add(directory)
