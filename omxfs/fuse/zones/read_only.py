"""Store directories shown as they are on disk, read-only: ``.omxfs/**``, ``collaborative/.versions/**``,
``collaborative/.conflicts/**`` (SPEC §2-§4). The private zone builds its writes on the same walk.

There the view path *is* the store path, so serving a node is a passthrough. Every access walks from the store
root one directory descriptor at a time with ``O_NOFOLLOW`` (``omxfs.store.atomic.open_dir``) and acts on the
last component relative to its parent's descriptor without following it, so no symlink in the store, planted by
an agent or by anyone on the store directly, can make the daemon read or write outside the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from omxfs.errors import NoAttribute, OmxError, OSFailure, from_os_error, os_errors
from omxfs.fuse.zones.base import ROOT, Attr, AttrChanges, Caller, Handle, ViewPath, read_only
from omxfs.store.atomic import open_dir
from omxfs.store.layout import COLLABORATIVE, CONFLICTS, OMX_XATTRS, OWNER, USER_XATTRS, VERSION_FILE, VERSIONS
from omxfs.store.workspace import Workspace

#: what a lookup, stat, access check or readlink costs here: one walk and one system call, no lock
INLINE_READS = frozenset({"lookup", "getattr", "access", "opendir", "readlink", "open"})


def attr_of(st: os.stat_result, *, stable: bool = False) -> Attr:
    return Attr(
        mode=st.st_mode,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        atime_ns=st.st_atime_ns,
        nlink=st.st_nlink,
        uid=st.st_uid,
        gid=st.st_gid,
        stable=stable,
    )


def is_write(flags: int) -> bool:
    return (flags & os.O_ACCMODE) != os.O_RDONLY or bool(flags & os.O_TRUNC)


class StoreTree:
    """Walks view paths below a store root through directory descriptors, never following a symlink."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def parent(self, path: ViewPath) -> Iterator[int]:
        """A descriptor of ``path``'s parent directory, for the ``*at`` call on ``path.name``."""
        with os_errors(path):
            fd = open_dir(self.root, path.parent)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def directory(self, path: ViewPath) -> Iterator[int]:
        with os_errors(path):
            fd = open_dir(self.root, path)
        try:
            yield fd
        finally:
            os.close(fd)

    def lstat(self, path: ViewPath) -> os.stat_result:
        if path == ROOT:
            with os_errors(path):
                return os.stat(self.root)
        # Spelled out, not ``with self.parent(...)``: the mount stats on nearly every request.
        try:
            fd = open_dir(self.root, path.parent)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        try:
            return os.stat(path.name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(fd)

    def listdir(self, path: ViewPath) -> list[str]:
        with self.directory(path) as fd, os_errors(path):
            return sorted(os.listdir(fd))

    def listdir_stats(self, path: ViewPath) -> list[tuple[str, os.stat_result]]:
        """Names with their lstat, sorted, all through one descriptor of the directory: a listing costs one walk
        from the store root instead of one per entry. Entries that vanish meanwhile are left out."""
        found: list[tuple[str, os.stat_result]] = []
        with self.directory(path) as fd, os_errors(path), os.scandir(fd) as entries:
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
        return sorted(found, key=lambda item: item[0])

    def readlink(self, path: ViewPath) -> bytes:
        with self.parent(path) as fd, os_errors(path):
            return os.readlink(os.fsencode(path.name), dir_fd=fd)

    def open(self, path: ViewPath, flags: int, mode: int = 0o644) -> int:
        """Open a regular file (never a symlink, FIFO or device: O_NONBLOCK keeps a FIFO from blocking us)."""
        with self.parent(path) as dir_fd, os_errors(path):
            fd = os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode, dir_fd=dir_fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSFailure(f"{path}: not a regular file", errno.EINVAL)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def xattr_path(self, dir_fd: int, path: ViewPath) -> str:
        """A path that reaches ``path.name`` in ``dir_fd`` for the xattr calls, which have no ``dir_fd``."""
        return f"/proc/self/fd/{dir_fd}/{path.name}" if path != ROOT else f"/proc/self/fd/{dir_fd}"

    @contextlib.contextmanager
    def xattr_target(self, path: ViewPath) -> Iterator[str]:
        if path == ROOT:
            with self.directory(path) as fd:
                yield self.xattr_path(fd, path)
        else:
            with self.parent(path) as fd:
                yield self.xattr_path(fd, path)

    def user_xattrs(self, path: ViewPath) -> list[str]:
        with self.xattr_target(path) as target, os_errors(path):
            return [n for n in os.listxattr(target, follow_symlinks=False) if n.startswith(USER_XATTRS)]

    def get_xattr(self, path: ViewPath, name: str) -> bytes:
        with self.xattr_target(path) as target:
            try:
                return os.getxattr(target, name, follow_symlinks=False)
            except OSError as exc:
                if exc.errno in (errno.ENODATA, errno.ENOTSUP):
                    raise NoAttribute(f"{path}: no attribute {name}") from None
                raise from_os_error(exc, path) from exc


@dataclass(eq=False)
class FdHandle:
    """An open file of the store, served through its descriptor (reads and writes go straight to disk)."""

    caller: Caller
    fd: int
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
        with os_errors(self.path):
            return os.pread(self.fd, size, offset)

    def read_cached(self, offset: int, size: int) -> bytes | None:
        """The bytes if the page cache holds all of them, else None (read in a thread then): ``RWF_NOWAIT``
        makes the kernel refuse rather than wait for the disk, so a read on the event loop never stalls it."""
        buffer = bytearray(size)
        try:
            got = os.preadv(self.fd, [buffer], offset, os.RWF_NOWAIT)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EOPNOTSUPP):
                return None
            raise
        if got < size and offset + got < os.fstat(self.fd).st_size:
            return None  # partly cached: a short read here would look like the end of the file
        return bytes(buffer[:got])

    def write(self, offset: int, data: bytes) -> int:
        if not self.writable:
            raise read_only(self.path, "not open for writing")
        view = memoryview(data)
        with os_errors(self.path):
            while view:
                written = os.pwrite(self.fd, view, offset)
                view, offset = view[written:], offset + written
        return len(data)

    def truncate(self, size: int) -> None:
        if not self.writable:
            raise read_only(self.path, "not open for writing")
        with os_errors(self.path):
            os.ftruncate(self.fd, size)

    def flush(self) -> None:
        """Writes went to the file as they came; nothing is staged."""

    def fsync(self, datasync: bool) -> None:
        with os_errors(self.path):
            (os.fdatasync if datasync else os.fsync)(self.fd)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def getattr(self) -> Attr:
        with os_errors(self.path):
            return attr_of(os.fstat(self.fd), stable=self.stable)


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
        """Metadata reads run on the loop (``ops.Inline``); data and xattrs (``owner_of`` may read a history) do not."""
        return op in INLINE_READS

    def getattr(self, path: ViewPath) -> Attr:
        st = self.tree.lstat(path)
        return attr_of(st, stable=self.is_stable(path.parts, st))

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        return self.tree.listdir(path)

    def listdir_attrs(self, caller: Caller, path: ViewPath) -> list[tuple[str, Attr]]:
        """The listing with every entry's attributes (``ops.ListsWithAttrs``): what readdirplus needs, at once."""
        return [
            (name, attr_of(st, stable=self.is_stable((*path.parts, name), st)))
            for name, st in self.tree.listdir_stats(path)
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
        fd = self.tree.open(path, os.O_RDONLY)
        stable = self.is_stable(path.parts, os.fstat(fd))
        return FdHandle(caller, fd, path, writable=False, keep_cache=stable, stable=stable)

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

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> None:
        raise self.refuse(caller, path, "changing attributes")

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        raise self.refuse(caller, path, f"setting {name}")

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        raise self.refuse(caller, path, f"removing {name}")

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        """What ``access(W_OK)`` answers (the kernel checks no permission bits itself: no default_permissions)."""
        return False
