"""What every zone handler offers: the synchronous semantics of the nodes of one zone.

The async ops layer resolves the caller and the view path, asks the router for the handler, and calls it in a
worker thread. Handlers talk to the store (never to pyfuse3) and raise ``omxfs.errors`` exceptions; the ops
layer maps those to errnos. A view path is a ``PurePosixPath`` relative to the mount's root (``PurePosixPath(".")``
is the root itself).

Handles are the open files. pyfuse3 gives no request context to read, write, flush and release, so a handle
remembers its caller from open/create. ``flush`` is the commit point of zones whose writes are staged
(handoff, collaborative, realtime): its error reaches the ``close()`` of the program that wrote.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import NamedTuple, Protocol

from omxfs.errors import FileTooLarge, ZoneDenied

ViewPath = PurePosixPath
ROOT = PurePosixPath(".")
#: the largest content a staged (in-memory) file may have: one ``pwrite`` at offset 1 TiB must not make the
#: daemon allocate a terabyte (it did: MemoryError, answered EIO); versions, deliveries and fields are kept
#: whole in memory and on disk, so files this large are no use in those zones anyway
MAX_STAGED = 1 << 30
#: how far past its end a write to a staged file may land and still run on the loop (the gap is allocated)
MAX_INLINE_GROWTH = 1 << 20


def read_only(path: ViewPath, why: str = "read-only") -> ZoneDenied:
    return ZoneDenied(f"{path}: {why}")


class Caller(NamedTuple):
    """Who makes a request: the agent the identity resolver settled on, and the kernel's view of the process.

    A named tuple, as ``Attr``: one is made per request, and a frozen dataclass costs three times as much to make.
    """

    agent: str
    uid: int
    gid: int
    pid: int
    umask: int = 0o022


class Attr(NamedTuple):
    """The attributes of a node, as the ops layer turns them into ``EntryAttributes``.

    ``stable`` says the content cannot change behind the kernel's back except through this mount, so the kernel
    may cache attributes and pages for long (timeouts, keep_cache); nodes that other daemons, processes on the
    store or CRDT merges can change are not stable.

    A named tuple rather than a frozen dataclass: a listing makes one per entry, and a frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field) costs twice as much.
    """

    mode: int
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    atime_ns: int = 0
    nlink: int = 1
    uid: int = 0
    gid: int = 0
    stable: bool = False
    #: the store's inode number where the node is a store file (names of one file share one number: hard links)
    ino: int = 0
    #: the device number of a device node
    rdev: int = 0
    #: the 512-byte blocks the node takes where it is a store file (a sparse file's holes take none); None for
    #: nodes held in memory or generated, which count as fully allocated
    blocks: int | None = None

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


def dir_attr(mtime_ns: int = 0, *, writable: bool = False, uid: int = 0, gid: int = 0) -> Attr:
    return Attr(
        mode=stat.S_IFDIR | (0o755 if writable else 0o555),
        nlink=2,
        mtime_ns=mtime_ns,
        ctime_ns=mtime_ns,
        atime_ns=mtime_ns,
        uid=uid,
        gid=gid,
    )


@dataclass(frozen=True)
class AttrChanges:
    """What a setattr asks to change (None: leave it)."""

    size: int | None = None
    mode: int | None = None
    uid: int | None = None
    gid: int | None = None
    atime_ns: int | None = None
    mtime_ns: int | None = None


class Handle(Protocol):
    """An open file."""

    caller: Caller
    #: keep the kernel's page cache across opens (content cannot change behind its back)
    keep_cache: bool
    #: bypass the page cache (content is generated or can change at any time)
    direct_io: bool

    def read(self, offset: int, size: int) -> bytes: ...

    def write(self, offset: int, data: bytes) -> int: ...

    def truncate(self, size: int) -> None: ...

    def flush(self) -> None:
        """Commit staged writes; called at every close() of a descriptor of this open file."""

    def fsync(self, datasync: bool) -> None: ...

    def release(self) -> None:
        """The last descriptor is gone; free everything (after a final flush, which already committed)."""

    def getattr(self) -> Attr: ...


class ZoneHandler(Protocol):
    """The nodes of one zone. Every method may raise ``OmxError``; none may block forever."""

    def getattr(self, path: ViewPath) -> Attr: ...

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]: ...

    def readlink(self, path: ViewPath) -> bytes: ...

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle: ...

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle: ...

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None: ...

    def unlink(self, caller: Caller, path: ViewPath) -> None: ...

    def rmdir(self, caller: Caller, path: ViewPath) -> None: ...

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        """Both paths are in this handler's zone (the router refuses others with CrossZone)."""

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None: ...

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None: ...

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> Attr | None:
        """The node's attributes after the change where the change's own walk has them (never from a handler that
        shows callers different nodes, ``CallerViews``); None: the ops layer asks ``getattr``."""

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes: ...

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None: ...

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]: ...

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None: ...


@dataclass
class BufferHandle:
    """A handle over bytes in memory: generated content to read, or staged writes committed by ``on_flush``.

    Zones whose writes are commits (handoff, collaborative, realtime) stage a whole new content here and turn
    it into one store operation when the program closes the file.
    """

    caller: Caller
    data: bytearray
    attr_template: Attr
    writable: bool = False
    keep_cache: bool = False
    direct_io: bool = True
    dirty: bool = False
    on_flush: Callable[[BufferHandle], None] | None = None

    def inline(self, op: str, end: int = 0) -> bool:
        """Reads and writes are memory copies, cheap enough for the loop unless a write far past the end would
        allocate its gap; a close is cheap when it has nothing to commit (``ops._inline_io``)."""
        if op in ("read", "write"):
            return end <= len(self.data) + MAX_INLINE_GROWTH
        return not self.dirty

    def read(self, offset: int, size: int) -> bytes:
        return bytes(self.data[offset : offset + size])

    def write(self, offset: int, data: bytes) -> int:
        if not self.writable:
            raise ZoneDenied("this file is not open for writing")
        _check_size(offset + len(data))
        if offset > len(self.data):
            self.data.extend(b"\0" * (offset - len(self.data)))
        self.data[offset : offset + len(data)] = data
        self.dirty = True
        return len(data)

    def truncate(self, size: int) -> None:
        if not self.writable:
            raise ZoneDenied("this file is not open for writing")
        _check_size(size)
        if size < len(self.data):
            del self.data[size:]
        else:
            self.data.extend(b"\0" * (size - len(self.data)))
        self.dirty = True

    def flush(self) -> None:
        if self.dirty and self.on_flush is not None:
            self.on_flush(self)
            self.dirty = False

    def fsync(self, datasync: bool) -> None:
        self.flush()

    def release(self) -> None:
        self.data = bytearray()

    def getattr(self) -> Attr:
        t = self.attr_template
        return Attr(
            mode=t.mode,
            size=len(self.data),
            mtime_ns=t.mtime_ns,
            ctime_ns=t.ctime_ns,
            atime_ns=t.atime_ns,
            nlink=t.nlink,
            uid=t.uid,
            gid=t.gid,
            stable=t.stable,
        )


def _check_size(size: int) -> None:
    if size > MAX_STAGED:
        raise FileTooLarge(f"{size} bytes: files in this zone are staged whole, at most {MAX_STAGED} bytes")
