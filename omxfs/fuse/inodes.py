"""Inode numbers ↔ view paths, with the kernel's lookup counts (pyfuse3 ``developer-notes/lookup_counts.rst``).

The store has no inode numbers of its own that survive its atomic renames, so the mount numbers the paths it
hands to the kernel. A number is valid while the kernel knows it: every reply that returns an entry (lookup,
create, mkdir, symlink, link, mknod, each readdirplus entry) adds one to its lookup count, ``forget`` takes
counts away, and at zero the number is purged unless a file is still open on it. The root is pinned.

Numbers are never reused (a counter), so the generation is always 0. A number whose path was unlinked or
replaced by a rename is *detached*: it keeps its last path for the log, no longer answers lookups, and
``getattr`` on it must be served from an open handle.
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from omxfs.errors import NotFound
from omxfs.fuse.zones.base import ROOT, ViewPath

ROOT_INODE = 1  # pyfuse3.ROOT_INODE, fixed by the FUSE protocol


@dataclass
class _Node:
    path: ViewPath
    fmt: int  # S_IFMT bits: a path that changes type behind our back gets a new number
    lookups: int = 0
    opened: int = 0
    detached: bool = False


class InodeTable:
    """Thread-safe: ops run on the trio thread, but readdir batches and tests may use it from others."""

    def __init__(self) -> None:
        self._nodes: dict[int, _Node] = {ROOT_INODE: _Node(ROOT, stat.S_IFDIR, lookups=1)}
        self._by_path: dict[ViewPath, int] = {ROOT: ROOT_INODE}
        # The same index by directory and name, so a listing finds the numbers of names it has handed out before
        # without making and hashing a path object per entry (most of a repeated listing's cost).
        self._children: dict[ViewPath, dict[str, int]] = {}
        self._next = ROOT_INODE + 1
        self._lock = threading.RLock()

    # -- queries -----------------------------------------------------------------------------------------------

    def path(self, inode: int) -> ViewPath:
        """The view path of a live number; NotFound for numbers the kernel should no longer use."""
        with self._lock:
            node = self._nodes.get(inode)
            if node is None:
                raise NotFound(f"inode {inode} is not known (forgotten)")
            return node.path

    def fmt(self, inode: int) -> int:
        """The file type (S_IFMT bits) the kernel was told for this number."""
        with self._lock:
            node = self._nodes.get(inode)
            if node is None:
                raise NotFound(f"inode {inode} is not known (forgotten)")
            return node.fmt

    def is_detached(self, inode: int) -> bool:
        with self._lock:
            node = self._nodes.get(inode)
            return node is None or node.detached

    def inode_of(self, path: ViewPath) -> int | None:
        with self._lock:
            return self._by_path.get(path)

    def lookup_count(self, inode: int) -> int:
        with self._lock:
            node = self._nodes.get(inode)
            return 0 if node is None else node.lookups

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[int]:
        with self._lock:
            return iter(list(self._nodes))

    # -- lookup counts -----------------------------------------------------------------------------------------

    def number(self, path: ViewPath, mode: int) -> int:
        """The number for ``path`` (allocated if new) *without* counting a lookup; pair with ``remember``.

        readdirplus needs the number before it knows whether the kernel takes the entry; ``discard`` drops a
        number nobody took.
        """
        fmt = stat.S_IFMT(mode)
        with self._lock:
            inode = self._by_path.get(path)
            if inode is not None:
                node = self._nodes[inode]
                if node.fmt == fmt or inode == ROOT_INODE:
                    return inode
                # Replaced by another type behind our back (e.g. a file became a directory): the kernel would
                # mark an inode whose type changes as bad, so the old number is detached and a new one given.
                self._detach(inode)
            inode = self._next
            self._next += 1
            self._nodes[inode] = _Node(path, fmt)
            self._index(path, inode)
            return inode

    def remember(self, path: ViewPath, mode: int) -> int:
        """Count one lookup of ``path``; returns its number."""
        with self._lock:
            inode = self.number(path, mode)
            self._nodes[inode].lookups += 1
            return inode

    def remember_entry(self, directory: ViewPath, name: str, mode: int) -> int:
        """``remember(directory / name, mode)``, without making the path when the name already has a number."""
        with self._lock:
            children = self._children.get(directory)
            inode = children.get(name) if children is not None else None
            if inode is None or self._nodes[inode].fmt != stat.S_IFMT(mode):
                inode = self.number(directory / name if directory != ROOT else ViewPath(name), mode)
            self._nodes[inode].lookups += 1
            return inode

    def add_lookup(self, inode: int) -> None:
        with self._lock:
            self._nodes[inode].lookups += 1

    def discard(self, inode: int) -> None:
        """Drop a number handed out by ``number`` that the kernel did not take."""
        with self._lock:
            self._purge_if_unused(inode)

    def forget(self, inode: int, count: int) -> None:
        with self._lock:
            node = self._nodes.get(inode)
            if node is None or inode == ROOT_INODE:
                return
            node.lookups = max(0, node.lookups - count)
            self._purge_if_unused(inode)

    # -- open files --------------------------------------------------------------------------------------------

    def opened(self, inode: int) -> None:
        with self._lock:
            self._nodes[inode].opened += 1

    def closed(self, inode: int) -> None:
        with self._lock:
            node = self._nodes.get(inode)
            if node is not None:
                node.opened = max(0, node.opened - 1)
                self._purge_if_unused(inode)

    # -- namespace changes -------------------------------------------------------------------------------------

    def unlinked(self, path: ViewPath) -> None:
        """``path`` (and, for a directory, everything below it) no longer exists."""
        with self._lock:
            for inode in self._subtree(path):
                self._detach(inode)

    def renamed(self, old: ViewPath, new: ViewPath) -> None:
        """``old`` is now ``new``: the number moves, descendants follow, whatever ``new`` was is detached."""
        with self._lock:
            self.unlinked(new)
            moving = self._subtree(old)
            for inode in moving:
                self._unindex(self._nodes[inode].path)
            for inode in moving:
                node = self._nodes[inode]
                node.path = new if node.path == old else new / node.path.relative_to(old)
                self._index(node.path, inode)

    def exchanged(self, a: ViewPath, b: ViewPath) -> None:
        """RENAME_EXCHANGE: the two subtrees swap places."""
        with self._lock:
            parked = ViewPath(f".omx-exchange-{self._next}")
            self._next += 1
            self.renamed(a, parked)
            self.renamed(b, a)
            self.renamed(parked, b)

    # -- internals ---------------------------------------------------------------------------------------------

    def _subtree(self, path: ViewPath) -> list[int]:
        """The numbers of ``path`` and below; only directories need the scan of the whole table."""
        inode = self._by_path.get(path)
        if path == ROOT:
            return []
        if inode is not None and self._nodes[inode].fmt != stat.S_IFDIR:
            return [inode]
        return [
            inode
            for p, inode in self._by_path.items()
            if p == path or (len(p.parts) > len(path.parts) and p.parts[: len(path.parts)] == path.parts)
        ]

    def _index(self, path: ViewPath, inode: int) -> None:
        self._by_path[path] = inode
        self._children.setdefault(path.parent, {})[path.name] = inode

    def _unindex(self, path: ViewPath) -> None:
        del self._by_path[path]
        siblings = self._children[path.parent]
        del siblings[path.name]
        if not siblings:
            del self._children[path.parent]

    def _detach(self, inode: int) -> None:
        node = self._nodes[inode]
        if self._by_path.get(node.path) == inode:
            self._unindex(node.path)
        node.detached = True
        self._purge_if_unused(inode)

    def _purge_if_unused(self, inode: int) -> None:
        node = self._nodes.get(inode)
        if node is None or inode == ROOT_INODE or node.lookups > 0 or node.opened > 0:
            return
        del self._nodes[inode]
        if self._by_path.get(node.path) == inode:
            self._unindex(node.path)

    def check(self) -> None:
        """Invariants, for tests: the path index and the nodes agree, the root is pinned."""
        with self._lock:
            assert self._nodes[ROOT_INODE].path == ROOT
            for path, inode in self._by_path.items():
                node = self._nodes[inode]
                assert node.path == path and not node.detached, (path, inode, node)
            for inode, node in self._nodes.items():
                assert inode == ROOT_INODE or node.lookups > 0 or node.opened > 0, (inode, node)
            by_name = {d / name: inode for d, names in self._children.items() for name, inode in names.items()}
            assert by_name == {path: inode for path, inode in self._by_path.items() if path != ROOT}, "name index"
            assert all(self._children.values()), "an empty name index is kept"
