"""Inode numbers ↔ view paths, with the kernel's lookup counts (pyfuse3 ``developer-notes/lookup_counts.rst``).

The store has no inode numbers of its own that survive its atomic renames, so the mount numbers the paths it
hands to the kernel. A number is valid while the kernel knows it: every reply that returns an entry (lookup,
create, mkdir, symlink, link, mknod, each readdirplus entry) adds one to its lookup count, ``forget`` takes
counts away, and at zero the number is purged unless a file is still open on it. The root is pinned.

Numbers come from a counter, so the generation is always 0; once the kernel has forgotten a number, it is kept
for its store file (by the file's type and store inode number, ``RETIRED``) and handed out again if that file is
looked up again: a file keeps its ``st_ino`` while it exists, though the kernel forgets its inode whenever its
entry is invalidated (``omxfs.fuse.watch``) or memory is short. A store inode number reused by another file gives
that file the old number, which the kernel no longer knows: as on any filesystem. A number whose paths were all
unlinked or replaced by a rename is *detached*: it keeps its last path for the log, no longer answers lookups, and
``getattr`` on it must be served from an open handle.

Hard links (issue 15): the names of one store file share one number, so the kernel keeps one inode for them, with
one ``st_nlink`` and one page cache (a read through one name sees an append through the other). A node therefore
has every path it is known by; all but directories are also indexed by their store inode number, and a new name
whose file has ``st_nlink > 1`` joins the node of a known name of that file, once the caller confirmed that the
known name still is that file (``same_file``: an inode number freed and reused behind our back must not join two
files).
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from omxfs.errors import NotFound
from omxfs.fuse.zones.base import ROOT, ViewPath

ROOT_INODE = 1  # pyfuse3.ROOT_INODE, fixed by the FUSE protocol
RETIRED = 1 << 16  # forgotten numbers kept for their store files (the oldest is dropped first)


@dataclass
class _Node:
    paths: list[ViewPath]  # every live name; empty once detached
    fmt: int  # S_IFMT bits: a path that changes type behind our back gets a new number
    last: ViewPath  # the path it was last known by, for the log once detached
    lookups: int = 0
    opened: int = 0
    ino: int = 0  # the store's inode number, 0 if not known or a directory
    store_ino: int = 0  # the store's inode number, directories too: the number is kept for it once forgotten
    #: ``paths[0]`` and its parent, kept together: getattr asks for the parent on every request, and a new parent
    #: object each time costs its making and its hash (a path object computes its hash once, then keeps it)
    _parent_of: tuple[ViewPath, ViewPath] | None = None

    @property
    def path(self) -> ViewPath:
        return self.paths[0] if self.paths else self.last

    def parent_path(self) -> ViewPath:
        """The parent of ``paths[0]`` (the node must not be detached); valid while ``paths[0]`` is the same object,
        so no change of ``paths`` needs to clear it."""
        first = self.paths[0]
        kept = self._parent_of
        if kept is None or kept[0] is not first:
            kept = self._parent_of = (first, first.parent)
        return kept[1]

    @property
    def detached(self) -> bool:
        return not self.paths


class NodeState(NamedTuple):
    """What getattr needs to know of a number, from one look at the table (``InodeTable.state``)."""

    path: ViewPath
    detached: bool
    fmt: int
    #: the number of the directory the node is named in, if known (never for the root or a detached node)
    parent: int | None


class InodeTable:
    """Thread-safe: ops run on the trio thread, but readdir batches and tests may use it from others."""

    def __init__(self) -> None:
        self._nodes: dict[int, _Node] = {ROOT_INODE: _Node([ROOT], stat.S_IFDIR, ROOT, lookups=1)}
        self._by_path: dict[ViewPath, int] = {ROOT: ROOT_INODE}
        self._by_ino: dict[int, int] = {}  # store inode number -> our number, for live nodes but directories
        # The same index by directory and name, so a listing finds the numbers of names it has handed out before
        # without making and hashing a path object per entry (most of a repeated listing's cost).
        self._children: dict[ViewPath, dict[str, int]] = {}
        self._next = ROOT_INODE + 1
        self._retired: dict[tuple[int, int], int] = {}  # (S_IFMT bits, store inode number) -> forgotten number
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

    def attached_path(self, inode: int) -> tuple[ViewPath, bool]:
        """``path(inode)``, and whether the node is detached (``is_detached``): one look at the table for both."""
        with self._lock:
            node = self._nodes.get(inode)
            if node is None:
                raise NotFound(f"inode {inode} is not known (forgotten)")
            return node.path, not node.paths

    def state(self, inode: int) -> NodeState:
        """``attached_path``, ``fmt`` and ``parent`` of a live number at once; NotFound for a forgotten one."""
        with self._lock:
            node = self._nodes.get(inode)
            if node is None:
                raise NotFound(f"inode {inode} is not known (forgotten)")
            if not node.paths:
                return NodeState(node.last, True, node.fmt, None)
            parent = self._by_path.get(node.parent_path()) if inode != ROOT_INODE else None
            return NodeState(node.paths[0], False, node.fmt, parent)

    def parent(self, inode: int) -> int | None:
        """The number of the directory ``inode`` is named in, if that directory is known (never for the root or a
        detached node)."""
        with self._lock:
            node = self._nodes.get(inode)
            if node is None or not node.paths or inode == ROOT_INODE:
                return None
            return self._by_path.get(node.parent_path())

    def inode_of(self, path: ViewPath) -> int | None:
        with self._lock:
            return self._by_path.get(path)

    def child(self, directory: int, name: str) -> int | None:
        """The number of ``name`` in the directory numbered ``directory``, if known."""
        with self._lock:
            node = self._nodes.get(directory)
            if node is None or node.detached:
                return None
            names = self._children.get(node.path)
            return names.get(name) if names is not None else None

    def children(self, directory: ViewPath) -> list[tuple[str, int]]:
        """The names known in ``directory``, with their numbers."""
        with self._lock:
            return list(self._children.get(directory, {}).items())

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

    def number(
        self, path: ViewPath, mode: int, ino: int = 0, same_file: Callable[[ViewPath], bool] | None = None
    ) -> int:
        """The number for ``path`` (allocated if new) *without* counting a lookup; pair with ``remember``.

        ``ino``: the store's inode number (ignored for directories, which have no links). ``same_file``: given when
        the file has several names; says whether another known path still is this file, so ``path`` may share that
        path's number.
        readdirplus needs the number before it knows whether the kernel takes the entry; ``discard`` drops a
        number nobody took.
        """
        fmt = stat.S_IFMT(mode)
        store_ino = ino
        ino = ino if fmt != stat.S_IFDIR else 0
        with self._lock:
            inode = self._by_path.get(path)
            if inode is not None:
                node = self._nodes[inode]
                if store_ino:
                    node.store_ino = store_ino
                # A regular file replaced behind our back keeps the number of its only name; one name of a linked
                # file that now names another file does not.
                same = not ino or node.ino in (0, ino) or len(node.paths) == 1
                if inode == ROOT_INODE or (node.fmt == fmt and same):
                    if ino:
                        self._set_ino(inode, ino)
                    return inode
                # Replaced by another type (e.g. a file became a directory; the kernel would mark an inode whose
                # type changes as bad), or a linked file's name now names another file: a new number.
                self._drop_path(path, inode)
            twin = self._by_ino.get(ino) if ino and same_file is not None else None
            if twin is not None:
                node = self._nodes[twin]
                if node.fmt == fmt and same_file is not None and same_file(node.path):
                    node.paths.append(path)
                    self._index(path, twin)
                    return twin
                self._set_ino(twin, 0)  # that number's file is gone: its store inode number means nothing now
            inode = self._retired.pop((fmt, store_ino), 0) if store_ino else 0
            if not inode:
                inode = self._next
                self._next += 1
            self._nodes[inode] = _Node([path], fmt, path, store_ino=store_ino)
            self._index(path, inode)
            self._set_ino(inode, ino)
            return inode

    def remember(
        self, path: ViewPath, mode: int, ino: int = 0, same_file: Callable[[ViewPath], bool] | None = None
    ) -> int:
        """Count one lookup of ``path``; returns its number."""
        with self._lock:
            inode = self.number(path, mode, ino, same_file)
            self._nodes[inode].lookups += 1
            return inode

    def remember_entry(
        self,
        directory: ViewPath,
        name: str,
        mode: int,
        ino: int = 0,
        same_file: Callable[[ViewPath], bool] | None = None,
    ) -> int:
        """``remember(directory / name, ...)``, without making the path when the name already has a number."""
        with self._lock:
            children = self._children.get(directory)
            inode = children.get(name) if children is not None else None
            if inode is None or not self._matches(self._nodes[inode], mode, ino):
                path = directory / name if directory != ROOT else ViewPath(name)
                inode = self.number(path, mode, ino, same_file)
            self._nodes[inode].lookups += 1
            return inode

    @staticmethod
    def _matches(node: _Node, mode: int, ino: int) -> bool:
        fmt = stat.S_IFMT(mode)
        return node.fmt == fmt and (not ino or node.ino == ino)

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
        """``path`` (and, for a directory, everything below it) no longer exists; other names of a file stay."""
        with self._lock:
            for p, inode in self._subtree(path):
                self._drop_path(p, inode)

    def renamed(self, old: ViewPath, new: ViewPath) -> None:
        """``old`` is now ``new``: the number moves, descendants follow, whatever ``new`` was loses that name."""
        with self._lock:
            inode = self._by_path.get(old)
            if inode is not None and inode == self._by_path.get(new):
                return  # two names of one file: rename(2) does nothing at all
            self.unlinked(new)
            moving = self._subtree(old)
            for p, _ in moving:
                self._unindex(p)
            for p, inode in moving:
                node = self._nodes[inode]
                moved = new if p == old else new / p.relative_to(old)
                node.paths[node.paths.index(p)] = moved
                node.last = moved
                self._index(moved, inode)

    def exchanged(self, a: ViewPath, b: ViewPath) -> None:
        """RENAME_EXCHANGE: the two subtrees swap places."""
        with self._lock:
            parked = ViewPath(f".omx-exchange-{self._next}")
            self._next += 1
            self.renamed(a, parked)
            self.renamed(b, a)
            self.renamed(parked, b)

    # -- internals ---------------------------------------------------------------------------------------------

    def _subtree(self, path: ViewPath) -> list[tuple[ViewPath, int]]:
        """``path`` and the paths below it, with their numbers; only directories need the scan of the table."""
        if not path.parts:  # the root (``parts`` is cached on the path object; a pathlib ``==`` is not)
            return []
        inode = self._by_path.get(path)
        if inode is not None and self._nodes[inode].fmt != stat.S_IFDIR:
            return [(path, inode)]
        # Down the name index, not a scan of every known path: ``rm -rf`` removes hundreds of directories while
        # thousands of paths are known (a scan each made it quadratic).
        found = [(path, inode)] if inode is not None else []
        below = [path]
        while below:
            directory = below.pop()
            for name, child in self._children.get(directory, {}).items():
                p = directory / name
                found.append((p, child))
                if p in self._children:
                    below.append(p)
        return found

    def _index(self, path: ViewPath, inode: int) -> None:
        self._by_path[path] = inode
        self._children.setdefault(path.parent, {})[path.name] = inode

    def _unindex(self, path: ViewPath) -> None:
        del self._by_path[path]
        siblings = self._children[path.parent]
        del siblings[path.name]
        if not siblings:
            del self._children[path.parent]

    def _set_ino(self, inode: int, ino: int) -> None:
        """Record the store inode number of a node that is not a directory (0: none), keeping the index in step."""
        node = self._nodes[inode]
        if node.ino == ino or node.fmt == stat.S_IFDIR:
            return
        if node.ino and self._by_ino.get(node.ino) == inode:
            del self._by_ino[node.ino]
        node.ino = ino
        if ino:
            self._by_ino[ino] = inode

    def _drop_path(self, path: ViewPath, inode: int) -> None:
        """``path`` no longer names ``inode``'s node; a node left without names is detached."""
        node = self._nodes[inode]
        if self._by_path.get(path) == inode:
            self._unindex(path)
        if path in node.paths:
            node.paths.remove(path)
            node.last = path
        if not node.paths:
            self._set_ino(inode, 0)
            self._purge_if_unused(inode)

    def _purge_if_unused(self, inode: int) -> None:
        node = self._nodes.get(inode)
        if node is None or inode == ROOT_INODE or node.lookups > 0 or node.opened > 0:
            return
        del self._nodes[inode]
        if node.store_ino:
            key = (node.fmt, node.store_ino)
            self._retired.pop(key, None)  # re-inserted last: the oldest is dropped first
            self._retired[key] = inode
            if len(self._retired) > RETIRED:
                del self._retired[next(iter(self._retired))]
        if node.ino and self._by_ino.get(node.ino) == inode:
            del self._by_ino[node.ino]
        for path in node.paths:
            if self._by_path.get(path) == inode:
                self._unindex(path)

    def check(self) -> None:
        """Invariants, for tests: the path, name and file indexes agree with the nodes, the root is pinned."""
        with self._lock:
            assert self._nodes[ROOT_INODE].path == ROOT
            for path, inode in self._by_path.items():
                node = self._nodes[inode]
                assert path in node.paths, (path, inode, node)
            for inode, node in self._nodes.items():
                assert inode == ROOT_INODE or node.lookups > 0 or node.opened > 0, (inode, node)
                assert all(self._by_path.get(p) == inode for p in node.paths), (inode, node)
            for ino, inode in self._by_ino.items():
                assert self._nodes[inode].ino == ino and not self._nodes[inode].detached, (ino, inode)
            by_name = {d / name: inode for d, names in self._children.items() for name, inode in names.items()}
            assert by_name == {path: inode for path, inode in self._by_path.items() if path != ROOT}, "name index"
            assert all(self._children.values()), "an empty name index is kept"
