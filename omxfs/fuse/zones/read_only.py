"""Store directories shown as they are on disk, read-only: ``.omxfs/**``, ``collaborative/.versions/**``,
``collaborative/.conflicts/**`` (SPEC §2-§4). The private zone builds its writes on the same walk.

There the view path *is* the store path, so serving a node is a passthrough: ``omxfs.store.tree.StoreTree`` walks
it without following any symlink and does the disk I/O; this module builds attributes and handles.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass

import trio

from omxfs.errors import NoAttribute, OmxError
from omxfs.fuse.capabilities import NotInline
from omxfs.fuse.zones.base import Attr, AttrChanges, Caller, Handle, ViewPath, read_only
from omxfs.store.layout import COLLABORATIVE, CONFLICTS, OMX_XATTRS, OWNER, USER_XATTRS, VERSION_FILE, VERSIONS
from omxfs.store.tree import OpenFile, StoreTree, is_write
from omxfs.store.workspace import Workspace

#: what a lookup, stat, access check or readlink costs here: one walk and one system call, no lock
INLINE_READS = frozenset({"lookup", "getattr", "access", "opendir", "readlink", "open"})
#: a listing with attributes costs a stat and an ``Attr`` per entry, about 5 us: a directory of up to this many
#: entries is listed on the loop where a handler lists there. That keeps the loop at most 1-2 ms, less than a worker
#: thread holding the GIL may keep it waiting anyway (``sys.getswitchinterval()``, 5 ms); a larger one goes there
INLINE_LISTING = 256


def attr_of(st: os.stat_result, *, stable: bool = False) -> Attr:
    # By position, in Attr's field order: a named tuple binds twelve keywords in half again the time (a getattr
    # makes one, a listing one per entry).
    return Attr(
        st.st_mode,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_atime_ns,
        st.st_nlink,
        st.st_uid,
        st.st_gid,
        stable,
        st.st_ino,
        st.st_rdev,
        st.st_blocks,
    )


@dataclass(eq=False)
class FdHandle:
    """An open file of the store, served through its descriptor (reads and writes go straight to disk)."""

    caller: Caller
    file: OpenFile
    path: ViewPath
    writable: bool
    keep_cache: bool = False
    direct_io: bool = False
    #: the content never changes (a version file): long attribute timeouts
    stable: bool = False

    def inline(self, op: str, end: int = 0) -> bool:
        """Small reads (from the page cache only), writes, flush (nothing is staged) and release (a close) are
        cheap enough for the loop (``ops._inline_io``)."""
        return True

    def read(self, offset: int, size: int) -> bytes:
        return self.file.pread(offset, size)

    def read_cached(self, offset: int, size: int) -> bytes | None:
        """The bytes if the page cache holds all of them, else None (``OpenFile.read_cached``)."""
        return self.file.read_cached(offset, size)

    def write(self, offset: int, data: bytes) -> int:
        if not self.writable:
            raise read_only(self.path, "not open for writing")
        self.file.write_all(offset, data)
        return len(data)

    def truncate(self, size: int) -> None:
        if not self.writable:
            raise read_only(self.path, "not open for writing")
        self.file.truncate(size)

    def flush(self) -> None:
        """Writes went to the file as they came; nothing is staged."""

    def fsync(self, datasync: bool) -> None:
        self.file.fsync(datasync)

    def release(self) -> None:
        self.file.close()

    def getattr(self) -> Attr:
        return attr_of(self.file.fstat(), stable=self.stable)


class ReadOnlyHandler:
    """Serves store directories as they are; every change is refused with EACCES (SPEC §3: ``.omxfs/``)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tree = StoreTree(ws.root)

    # -- hooks the private zone overrides ----------------------------------------------------------------------

    def is_stable(self, parts: tuple[str, ...], st: os.stat_result) -> bool:
        """Only version files never change once written: the kernel may cache them for long.

        Asked with the node's path components, which a path keeps and a listing makes without a path object.
        """
        return (
            stat.S_ISREG(st.st_mode)
            and parts[:2] == (COLLABORATIVE, VERSIONS)
            and VERSION_FILE.fullmatch(parts[-1]) is not None
        )

    def owner_of(self, path: ViewPath) -> str | None:
        """``user.omx.owner``: the agent a conflict record belongs to, the author of a version."""
        parts = path.parts
        if parts[:2] == (COLLABORATIVE, CONFLICTS) and len(parts) > 2:
            return parts[2]
        if parts[:2] == (COLLABORATIVE, VERSIONS) and len(parts) > 3 and VERSION_FILE.fullmatch(path.name):
            number = int(path.name[1:-4])
            with contextlib.suppress(OmxError):
                for entry in self.ws.collab.history("/".join(parts[2:-1])):
                    if entry.version == number:
                        return entry.author
        return None

    def refuse(self, caller: Caller, path: ViewPath, what: str) -> OmxError:
        return read_only(path, f"read-only: {what} refused")

    # -- reads -------------------------------------------------------------------------------------------------

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool:
        """Metadata reads run on the loop (``Inline``); data and xattrs (``owner_of`` may read a history) do not."""
        return op in INLINE_READS

    def getattr(self, path: ViewPath) -> Attr:
        st = self.tree.lstat(path)
        return attr_of(st, stable=self.is_stable(path.parts, st))

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        return self.tree.listdir(path)

    def listdir_attrs(self, caller: Caller, path: ViewPath) -> list[tuple[str, Attr]]:
        """The listing with every entry's attributes (``ListsWithAttrs``): what readdirplus needs, at once.

        On the loop (where ``inline("readdir")`` sends it) only a directory of up to ``INLINE_LISTING`` entries is
        listed: a larger one raises ``NotInline`` once its names are counted, and the runner lists it in a thread.
        """
        most = INLINE_LISTING if trio.lowlevel.in_trio_run() else None  # a worker thread has no trio run
        listing = self.tree.listdir_stats(path, most)
        if listing is None:
            raise NotInline(f"{path}: more than {INLINE_LISTING} entries")
        return [
            (name, attr_of(st, stable=self.is_stable((*path.parts, name), st)))
            for name, st in listing
            if self.shown(path, name)
        ]

    def shown(self, path: ViewPath, name: str) -> bool:
        """Whether ``name`` in the directory ``path`` is listed (all are, here)."""
        return True

    def readlink(self, path: ViewPath) -> bytes:
        return self.tree.readlink(path)

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        if is_write(flags):
            raise self.refuse(caller, path, "opening for writing")
        file = self.tree.open(path, os.O_RDONLY)
        try:
            stable = self.is_stable(path.parts, file.opened or file.fstat())
        except BaseException:
            file.close()
            raise
        return FdHandle(caller, file, path, writable=False, keep_cache=stable, stable=stable)

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes:
        if name == OWNER:
            owner = self.owner_of(path)
            if owner is None:
                raise NoAttribute(f"{path}: no owner")
            return owner.encode("utf-8")
        if not name.startswith(USER_XATTRS) or name.startswith(OMX_XATTRS):
            raise NoAttribute(f"{path}: no attribute {name}")
        return self.tree.get_xattr(path, name)

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        names = [n for n in self.tree.user_xattrs(path) if not n.startswith(OMX_XATTRS)]
        if self.owner_of(path) is not None:
            names.append(OWNER)
        return names

    # -- writes: all refused -----------------------------------------------------------------------------------

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        raise self.refuse(caller, path, "creating a file")

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        raise self.refuse(caller, path, "creating a directory")

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        raise self.refuse(caller, path, "deleting")

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        raise self.refuse(caller, path, "removing a directory")

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        raise self.refuse(caller, old, f"renaming to {new}")

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        raise self.refuse(caller, path, "creating a symlink")

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        raise self.refuse(caller, new, f"linking to {existing}")

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> Attr | None:
        raise self.refuse(caller, path, "changing attributes")

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        raise self.refuse(caller, path, f"setting {name}")

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        raise self.refuse(caller, path, f"removing {name}")

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        """What ``access(W_OK)`` answers (the kernel checks no permission bits itself: no default_permissions)."""
        return False
