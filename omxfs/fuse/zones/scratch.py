"""Scratch files through the mount, and what the zones whose writes are commits share to show files.

Editors' temporary files (``is_scratch_name``: the name rule, in ``omxfs.store.scratch``) live as real files in the
store's scratch area, one per agent; ``ScratchView`` shows them to the zone handlers with the mount's attributes and
handles, and the zone handler decides what a rename between a scratch name and a real name means (for the
collaborative zone: a commit of the scratch file's content). The same zones stage their writes in memory
(``staging``).
"""

from __future__ import annotations

import os
import stat
import time

from omxfs.errors import InvalidInput, NotFound, NotSupported
from omxfs.fuse.zones.base import Attr, AttrChanges, Caller, ViewPath, dir_attr
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


def text_value(name: str, value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} must be UTF-8 text") from None
