"""The kernel's inotify, through libc with ctypes: what the zones' watch needs of it, and no more.

Why not a library: none is installed, and the few calls used here (init, add, remove, read a batch of events,
never block) are fewer lines than wrapping a library's own thread or loop; ``omxfs.fuse.watch`` calls the same
three functions the same way (it is not imported: it brings pyfuse3 and the mount's inode table with it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import weakref

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
#: a name made, removed or renamed in the directory
NAMES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
#: a file's content or attributes changed in place
CONTENT = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
#: the watch is gone (the directory removed, or moved away from the path it was watched at)
LOST = IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF
MASK = NAMES | CONTENT | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name


class WatchLimit(Exception):
    """inotify_add_watch said ENOSPC: the user's watches are all taken (``fs.inotify.max_user_watches``)."""


class Inotify:
    """One inotify instance, non-blocking; closed when it is collected (or by ``close``)."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._libc.inotify_init1.argtypes = [ctypes.c_int]
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_init1: {os.strerror(code)}")
        self.fd = fd
        self.close = weakref.finalize(self, os.close, fd)

    def add(self, path: str, extra: int = 0) -> int:
        """A watch of the directory ``path`` (its descriptor: raises ``WatchLimit`` at the limit, ``OSError``
        when it cannot be watched)."""
        wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(path), MASK | extra))
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                raise WatchLimit(path)
            raise OSError(code, os.strerror(code), path)
        return wd

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)  # EINVAL: gone already (its IN_IGNORED is on the way)

    def read(self) -> list[tuple[int, int, str]]:
        """Every event queued now, as (watch, mask, name); none waited for."""
        chunks = []
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        data, offset, events = b"".join(chunks), 0, []
        while offset + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            events.append((wd, mask, os.fsdecode(name)))
        return events
