"""Scratch files through the mount, and the staged writes of the zones whose writes are commits.

Editors' temporary files (``is_scratch_name``: the name rule, in ``omxfs.store.scratch``) live as real files in the
store's scratch area, one per agent; ``ScratchView`` shows them to the zone handlers with the mount's attributes and
handles, and the zone handler decides what a rename between a scratch name and a real name means (for the
collaborative zone: a commit of the scratch file's content). The same zones stage their writes in memory and commit
them at the right close: ``StagedHandle`` and ``Staging`` (why a flush alone must not always commit: see
``StagedHandle``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from omxfs.errors import InvalidInput, NotFound, NotSupported, OmxError
from omxfs.fuse.zones.base import Attr, AttrChanges, BufferHandle, Caller, ViewPath, dir_attr
from omxfs.fuse.zones.read_only import attr_of
from omxfs.store.scratch import ScratchArea
from omxfs.store.tree import OpenFile


def file_attr(st: os.stat_result, perm: int = 0o644) -> Attr:
    """A store file shown with the mode of its zone (the store's own modes say nothing about who may write)."""
    return Attr(
        mode=stat.S_IFREG | perm,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_mtime_ns,
        atime_ns=st.st_atime_ns,
        uid=st.st_uid,
        gid=st.st_gid,
    )


def new_file_attr() -> Attr:
    """A file created through the mount and not committed yet: empty, made now."""
    now = time.time_ns()
    return Attr(mode=stat.S_IFREG | 0o644, mtime_ns=now, ctime_ns=now, atime_ns=now, uid=os.getuid(), gid=os.getgid())


def directory_attr(st: os.stat_result | None, *, writable: bool) -> Attr:
    if st is None:
        return dir_attr(writable=writable)
    return dir_attr(st.st_mtime_ns, writable=writable, uid=st.st_uid, gid=st.st_gid)


class FileHandle:
    """An open real file, read and written in place (scratch files, snapshots of immutable store files).

    ``direct_io``: one view path can be a different file for each agent (scratch) or a different version for
    each open (snapshots), so the kernel's page cache, shared by all opens of an inode, must not be used.
    """

    def __init__(self, caller: Caller, file: OpenFile, *, writable: bool) -> None:
        self.caller = caller
        self.file = file
        self.writable = writable
        self.keep_cache = False
        self.direct_io = True

    def read(self, offset: int, size: int) -> bytes:
        return self.file.pread(offset, size)

    def write(self, offset: int, data: bytes) -> int:
        if not self.writable:
            raise NotSupported("this file is not open for writing")
        return self.file.pwrite(offset, data)

    def truncate(self, size: int) -> None:
        self.file.truncate(size)

    def flush(self) -> None:
        """Nothing is staged: writes went to the file."""

    def fsync(self, datasync: bool) -> None:
        self.file.fsync(datasync)

    def release(self) -> None:
        self.file.close()

    def getattr(self) -> Attr:
        return attr_of(self.file.fstat())


class ScratchView(ScratchArea):
    """The scratch area as the zone handlers serve it: handles and attributes of the callers' scratch files."""

    def getattr(self, agent: str, path: ViewPath) -> Attr:
        st = self.lstat(agent, path)
        if st is None:
            raise NotFound(f"{path}: no such file")
        return attr_of(st)

    def open(self, caller: Caller, path: ViewPath, flags: int) -> FileHandle:
        file = self.open_file(caller.agent, path, flags & ~os.O_CREAT)
        return FileHandle(caller, file, writable=(flags & os.O_ACCMODE) != os.O_RDONLY)

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> FileHandle:
        file = self.open_file(caller.agent, path, flags | os.O_CREAT, stat.S_IMODE(mode) & ~caller.umask)
        return FileHandle(caller, file, writable=(flags & os.O_ACCMODE) != os.O_RDONLY)

    def setattr(self, agent: str, path: ViewPath, changes: AttrChanges) -> None:
        self.change(
            agent, path, size=changes.size, mode=changes.mode, atime_ns=changes.atime_ns, mtime_ns=changes.mtime_ns
        )


# -- staged writes: what the zones whose writes are commits share ---------------------------------------------


@dataclass
class StagedHandle(BufferHandle):
    """A staged file that commits at the right close.

    The kernel sends a flush at *every* close of a descriptor, and shells open a file, ``dup2`` it to stdout and
    close the original before the command writes anything. So ``flush`` commits only after the program wrote
    (``write``, ``ftruncate``) since the last commit; a change that was never written by the program (a file
    created and closed empty, ``O_TRUNC`` alone) is committed at ``release``, whose errors the ops layer logs
    but the kernel cannot report. A failed commit is not retried at release (its content is kept by the store).
    """

    on_release: Callable[[StagedHandle], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: bool = False
    #: closed once since the last write: its uncommitted change waits for the release
    settled: bool = False

    def inline(self, op: str, end: int = 0) -> bool:
        """As a buffer's, except that a close commits when the program wrote since the last one (``flush``) or
        left anything uncommitted (``release``), and waits for a commit running in another thread."""
        if op in ("flush", "release"):
            return not (self.written if op == "flush" else self.dirty) and not self.lock.locked()
        return super().inline(op, end)

    def write(self, offset: int, data: bytes) -> int:
        n = super().write(offset, data)
        self.written, self.settled = True, False
        return n

    def truncate(self, size: int) -> None:
        super().truncate(size)
        self.written, self.settled = True, False

    def flush(self) -> None:
        with self.lock:
            if self.written:
                self._commit()
            else:
                self.settled = True

    def settle(self) -> None:
        """Commit now a change that waits for the release (``touch x; cat x``: the release may come later than the
        next request); its failure was the closed program's, so it is not raised here (the store kept it)."""
        with self.lock:
            if self.settled and self.dirty:
                with contextlib.suppress(OmxError):
                    self._commit()

    def _commit(self) -> None:
        try:
            if self.dirty and self.on_flush is not None:
                self.on_flush(self)
        finally:
            self.dirty = self.written = False

    def release(self) -> None:
        try:
            with self.lock:
                self._commit()
        finally:
            if self.on_release is not None:
                self.on_release(self)
            super().release()


class Staging:
    """The open staged handles per view path. A file created through this mount exists (for getattr and listings)
    from its creation on, though the store sees it only when it is committed at close."""

    def __init__(self) -> None:
        self._open: dict[ViewPath, list[StagedHandle]] = {}
        self._lock = threading.Lock()

    def track(self, path: ViewPath, handle: StagedHandle) -> StagedHandle:
        """Register ``handle`` until it is released."""
        handle.on_release = lambda h: self.remove(path, h)
        with self._lock:
            self._open.setdefault(path, []).append(handle)
        return handle

    def remove(self, path: ViewPath, handle: StagedHandle) -> None:
        with self._lock:
            handles = [h for h in self._open.get(path, []) if h is not handle]
            if handles:
                self._open[path] = handles
            else:
                self._open.pop(path, None)

    def settle(self, path: ViewPath) -> None:
        """Commit the closed-but-not-released files at ``path`` before another request looks at it."""
        with self._lock:
            handles = list(self._open.get(path, []))
        for handle in handles:
            handle.settle()

    def pending(self, path: ViewPath) -> bool:
        """Whether ``settle(path)`` would commit something (a request that settles then must not run inline)."""
        with self._lock:
            return any(h.settled and h.dirty for h in self._open.get(path, []))

    def get(self, path: ViewPath) -> StagedHandle | None:
        with self._lock:
            handles = self._open.get(path)
            return handles[-1] if handles else None

    def names_in(self, directory: ViewPath) -> list[str]:
        with self._lock:
            return [p.name for p in self._open if p.parent == directory]

    def held_by(self, agent: str, path: ViewPath) -> bool:
        with self._lock:
            return any(h.caller.agent == agent for h in self._open.get(path, []))


def text_value(name: str, value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} must be UTF-8 text") from None
