"""A zone's pending branches on the mount, read-only: ``agents/<zone>/@<branch>/`` (``@review`` is the review).

Each shows the zone as that branch's run sees it, composed here as the kernel's overlay composes it
(``omxfs.checkpoints.layers``): the branch's upper layer over those of the branches it was made from (``--from``)
over the zone, a whiteout (a character device 0:0) hiding a name of the layers below, an opaque directory
(``user.overlay.opaque``) hiding their directory, the overlay's ``user.overlay.*`` bookkeeping never shown. So
``diff -r agents/bob/@first agents/bob/@rival`` compares two attempts with ordinary tools. Every change there is
refused with EROFS: a branch is decided by ``omxfs accept`` or ``discard``, never edited through the mount.

A zone's top-level names that start with ``@`` are the mount's: the router sends them here, a creation of one is
refused like any change here, and the zone's own such names (made natively in a view, or on the store) are not
listed on the mount (``PrivateHandler.shown``), so no agent can put a directory there that passes for a branch.

Every layer may be written by the agent: they are walked without following a symlink (``StoreTree``), and a
symlink in them is shown as a symlink, which the reader's kernel resolves. Who may read is the zone's rule: the
upper layers' roots are opened as the daemon (they lie under ``.omxfs``, closed to everyone), the zone and
everything below those roots are read as the caller (``fs_user.acting_as``), as the private zone reads them.
Nothing here is cached long: the branches come and go behind the daemon's back (nodes here carry no store inode
number, so the watch's long timeouts never apply: ``Operations._watched``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from omxfs.checkpoints.branches import NAME, REVIEW
from omxfs.checkpoints.review import OPAQUE, OVERLAY_XATTRS, Review, pending_branches
from omxfs.errors import NoAttribute, NotADirectory, NotFound, OmxError, OSFailure
from omxfs.fuse.zones.base import Attr, AttrChanges, Caller, Handle, ViewPath
from omxfs.fuse.zones.read_only import FdHandle, attr_of
from omxfs.store import layout
from omxfs.store.atomic import open_dir
from omxfs.store.fs_user import FsUser, acting_as, caller_user
from omxfs.store.tree import StoreTree, is_write
from omxfs.store.workspace import Workspace

#: the depth of ``agents/<zone>/@<branch>`` in a view path
BRANCH_DEPTH = 3


def is_branch_path(parts: tuple[str, ...]) -> bool:
    """Whether a view path's components lead to ``agents/<zone>/@...`` or below: this module's."""
    return len(parts) >= BRANCH_DEPTH and parts[0] == layout.AGENTS and parts[2].startswith(layout.BRANCH_MARK)


def branch_of(ws: Workspace, zone: str, shown: str) -> Review | None:
    """The branch ``@NAME`` names (``@review``: the review), or None where ``shown`` names no branch at all."""
    name = shown[len(layout.BRANCH_MARK) :]
    if name == REVIEW:
        return Review(ws, zone)
    return Review(ws, zone, name) if NAME.fullmatch(name) else None


def branch_entries(ws: Workspace, zone: str) -> list[tuple[str, Attr]]:
    """``@NAME`` with its attributes (its upper layer's root, which the overlay shows as the zone's root) for each
    pending branch of ``zone``, read as the daemon; a branch whose layer is not there (being made, or ended
    meanwhile) is left out."""
    found = []
    for branch in pending_branches(ws, zone):
        with contextlib.suppress(OmxError, OSError):
            fd = open_dir(branch.upper, ".", path_only=True)
            try:
                found.append((layout.BRANCH_MARK + branch.branch, _attr(os.fstat(fd))))
            finally:
                os.close(fd)
    return found


def _attr(st: os.stat_result) -> Attr:
    """A node's attributes without its store inode number: a branch's file is not the zone's file of that name,
    and must not share its node (a write through the zone's name would then reach it through this one)."""
    return attr_of(st)._replace(ino=0)


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


#: a directory of one layer: the layer's tree and the directory's path in it
Dir = tuple[StoreTree, PurePosixPath]


@dataclass(frozen=True)
class Found:
    """A node of a branch: the layer that holds it, its path there and its ``lstat``; for a directory, ``merged`` is
    each layer's directory that the overlay merges into it, the top first (the node's own among them)."""

    tree: StoreTree
    path: PurePosixPath
    st: os.stat_result
    merged: tuple[Dir, ...] = ()


@dataclass(frozen=True)
class Layers:
    """A branch's layers, open for one request: ``uppers`` its upper layer and those of the branches it was made
    from (``--from``), the top first, each rooted at its layer (a held descriptor); below them the zone, at
    ``zone_root`` of the store's tree ``zone``."""

    uppers: tuple[StoreTree, ...]
    zone: StoreTree
    zone_root: PurePosixPath

    def resolve(self, rel: tuple[str, ...]) -> Found:
        """The node at ``rel`` (components below the branch's root), looked up as the overlay looks it up: the top
        layer's entry wins; a whiteout hides the name from the layers below it, a non-directory or an opaque
        directory everything below it; directories of one name merge down to there."""
        self.zone.lstat(self.zone_root)  # the zone's rule first: whoever cannot reach the zone sees no branch of it
        top = self.uppers[0]
        root = PurePosixPath(".")
        dirs: tuple[Dir, ...] = (*((tree, root) for tree in self.uppers), (self.zone, self.zone_root))
        found = Found(top, root, top.lstat(root), dirs)  # the root merges every layer's (never opaque)
        for depth, name in enumerate(rel, 1):
            shown = "/".join(rel[:depth])
            if not stat.S_ISDIR(found.st.st_mode):
                raise NotADirectory(f"{shown}: not a directory")
            node: tuple[StoreTree, PurePosixPath, os.stat_result] | None = None
            merged: list[Dir] = []
            for tree, directory in found.merged:
                path = directory / name
                st = self._lstat(tree, path)
                if st is None:
                    continue
                if _whiteout(st) or (node is not None and not stat.S_ISDIR(st.st_mode)):
                    break  # deleted here, or a non-directory under a directory: nothing below shows
                if node is None:
                    node = (tree, path, st)
                if not stat.S_ISDIR(st.st_mode):
                    break
                merged.append((tree, path))
                if tree is not self.zone and self.opaque(tree, path):
                    break
            if node is None:
                raise NotFound(f"{shown}: no such file or directory")
            found = Found(*node, tuple(merged))
        return found

    @staticmethod
    def opaque(tree: StoreTree, path: PurePosixPath) -> bool:
        try:
            return tree.get_xattr(path, OPAQUE) in (b"y", b"x")
        except NoAttribute:
            return False

    @staticmethod
    def _lstat(tree: StoreTree, path: PurePosixPath) -> os.stat_result | None:
        try:
            return tree.lstat(path)
        except NotFound:
            return None

    def listing(self, found: Found) -> list[tuple[str, os.stat_result]]:
        """A directory's entries with their ``lstat``: each name from the top layer that has it, none that a
        whiteout there deletes, through every directory ``resolve`` found merged into it."""
        seen: dict[str, os.stat_result | None] = {}
        for tree, directory in found.merged:
            for name, st in tree.listdir_stats(directory) or []:
                if name not in seen:
                    seen[name] = None if _whiteout(st) else st
        return [(name, st) for name, st in sorted(seen.items()) if st is not None]


_DESCRIPTOR_PATH = re.compile(r"/proc/self/fd/\d+/?")


def shown_without_descriptors(message: str, named: dict[str, str]) -> str:
    """``message`` with each ``/proc/self/fd/N`` path that ``named`` knows replaced by the store path it stands for
    (``""`` for the store's root: ``/proc/self/fd/N/agents/bob`` reads ``agents/bob``); a descriptor is matched
    whole, so ``/proc/self/fd/1`` never rewrites ``/proc/self/fd/12``."""

    def shown(match: re.Match[str]) -> str:
        text = match.group(0)
        held = named.get(text.rstrip("/"))
        if held is None:
            return text
        return f"{held}/" if held and text.endswith("/") else held

    return _DESCRIPTOR_PATH.sub(shown, message)


class BranchDirsHandler:
    """``agents/<zone>/@<branch>/`` and below: the branches, read-only. Their names are listed with the zone's own
    (``PrivateHandler``); everything below is answered here."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tree = StoreTree(ws.root)

    # -- finding a node ----------------------------------------------------------------------------------------

    def user_of(self, caller: Caller | None) -> FsUser | None:
        """Whom the store sees reading for ``caller``: the private zone's rule (``PrivateHandler.user_of``); None,
        the daemon, where there is no caller (a getattr, as the private zone's)."""
        if caller is None:
            return None
        return caller_user(caller.uid, caller.gid, caller.pid, lambda uid: uid in self.ws.config.uids)

    @contextlib.contextmanager
    def layers(self, path: ViewPath, caller: Caller | None) -> Iterator[tuple[Layers, tuple[str, ...]]]:
        """The layers of the branch ``path`` is in, read as ``caller`` for the block, with ``path``'s components
        below the branch's root. NotFound where it names no pending branch."""
        parts = path.parts
        zone, shown = parts[1], parts[2]
        branch = branch_of(self.ws, zone, shown)
        if branch is None or not branch.pending:
            raise NotFound(f"{path}: {zone} has no branch {shown[len(layout.BRANCH_MARK) :]!r} pending")
        with contextlib.ExitStack() as held:
            uppers, named = [], {str(self.ws.root): ""}
            for layer in (branch, *branch.ancestors()):  # as the daemon: the upper layers lie under .omxfs
                fd = open_dir(layer.upper, ".", path_only=True)
                held.callback(os.close, fd)
                uppers.append(StoreTree(Path(f"/proc/self/fd/{fd}")))
                named[f"/proc/self/fd/{fd}"] = f"{layer.shown()}/{layout.REVIEW_UPPER}"
            try:
                with acting_as(self.user_of(caller)):
                    zone_root = PurePosixPath(layout.AGENTS, zone)
                    yield Layers(tuple(uppers), self.tree, zone_root), parts[BRANCH_DEPTH:]
            except OmxError as exc:  # the mount's log names a layer as the store does, never by a descriptor
                exc.message = shown_without_descriptors(exc.message, named)
                exc.args = (exc.message,)
                raise

    def find(self, path: ViewPath, caller: Caller | None = None) -> Found:
        with self.layers(path, caller) as (layers, rel):
            return layers.resolve(rel)

    def refuse(self, path: ViewPath, what: str) -> OSFailure:
        return OSFailure(
            f"{path}: read-only: names starting with {layout.BRANCH_MARK!r} at the top of a zone show its branches, "
            f"decided by omxfs accept or discard ({what} refused)",
            errno.EROFS,
        )

    # -- reads -------------------------------------------------------------------------------------------------

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool:
        """A few walks per request, or a refusal, on the loop; a listing (two directories merged) in a thread."""
        return op not in ("readdir", "listdir")

    def getattr(self, path: ViewPath) -> Attr:
        return _attr(self.find(path).st)

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        return [name for name, _ in self.listdir_attrs(caller, path)]

    def listdir_attrs(self, caller: Caller, path: ViewPath) -> list[tuple[str, Attr]]:
        with self.layers(path, caller) as (layers, rel):
            found = layers.resolve(rel)
            if not stat.S_ISDIR(found.st.st_mode):
                raise NotADirectory(f"{path}: not a directory")
            return [(name, _attr(st)) for name, st in layers.listing(found)]

    def readlink(self, path: ViewPath) -> bytes:
        with self.layers(path, None) as (layers, rel):
            found = layers.resolve(rel)
            return found.tree.readlink(found.path)

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        if is_write(flags):
            raise self.refuse(path, "opening for writing")
        with self.layers(path, caller) as (layers, rel):
            found = layers.resolve(rel)
            file = found.tree.open(found.path, os.O_RDONLY)
        return FdHandle(caller, file, path, writable=False)

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes:
        if name == layout.OWNER:
            self.find(path, caller)
            return path.parts[1].encode("utf-8")
        if not name.startswith(layout.USER_XATTRS) or name.startswith((layout.OMX_XATTRS, OVERLAY_XATTRS)):
            raise NoAttribute(f"{path}: no attribute {name}")
        with self.layers(path, caller) as (layers, rel):
            found = layers.resolve(rel)
            return found.tree.get_xattr(found.path, name)

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        with self.layers(path, caller) as (layers, rel):
            found = layers.resolve(rel)
            names = found.tree.user_xattrs(found.path)
        return [n for n in names if not n.startswith((layout.OMX_XATTRS, OVERLAY_XATTRS))]

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        return False

    # -- changes: all refused ----------------------------------------------------------------------------------

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        raise self.refuse(path, "creating a file")

    def mknod(self, caller: Caller, path: ViewPath, mode: int, rdev: int) -> None:
        raise self.refuse(path, "creating a node")

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        raise self.refuse(path, "creating a directory")

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        raise self.refuse(path, "deleting")

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        raise self.refuse(path, "removing a directory")

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        raise self.refuse(old if is_branch_path(old.parts) else new, f"renaming {old} to {new}")

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        raise self.refuse(path, "creating a symlink")

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        raise self.refuse(new if is_branch_path(new.parts) else existing, f"linking {new} to {existing}")

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> Attr | None:
        raise self.refuse(path, "changing attributes")

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        raise self.refuse(path, f"setting {name}")

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        raise self.refuse(path, f"removing {name}")
