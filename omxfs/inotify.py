"""The kernel's inotify, through libc with ctypes: an instance that never blocks, its watches, and its events as
the kernel queued them (names as bytes, as the directory holds them).

Two watches use it, each with its own mask and its own reading of the events: the daemon's
(``omxfs.fuse.watch``: the kernel's caches of the private zones invalidated on a change behind the mount's back)
and the supervisor UI's (``omxfs.ui.zones``: the writes in the private zones as events). It sits beside both, not
in ``fuse/``, because the UI must run without the FUSE stack (``omxfs.fuse`` brings pyfuse3).

Why not a library: none is installed, and the few calls used here (init, add, remove, read a batch of events,
never block) are fewer lines than wrapping a library's own thread or loop.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import weakref
from typing import NamedTuple

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name


class WatchLimit(Exception):
    """inotify_add_watch said ENOSPC: the user's watches are all taken (``fs.inotify.max_user_watches``)."""


class RawEvent(NamedTuple):
    wd: int  # the watch it came by (-1 for IN_Q_OVERFLOW)
    mask: int
    name: bytes  # in the watched directory; empty for the directory itself


class Inotify:
    """One inotify instance, non-blocking; closed by ``close`` (once, however often it is called) or when it is
    collected."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._libc.inotify_init1.argtypes = [ctypes.c_int]
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_init1: {os.strerror(code)}")
        self.fd = fd  # readable when events are queued (for select)
        self.close = weakref.finalize(self, os.close, fd)

    def add(self, path: str, mask: int) -> int:
        """A watch of ``path`` for the events of ``mask`` (its descriptor: raises ``WatchLimit`` at the limit,
        ``OSError`` when it cannot be watched)."""
        wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask))
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                raise WatchLimit(path)
            raise OSError(code, os.strerror(code), path)
        return wd

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)  # EINVAL: gone already (its IN_IGNORED is on the way)

    def read(self) -> list[RawEvent]:
        """Every event queued now, oldest first; none waited for."""
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
            events.append(RawEvent(wd, mask, name))
        return events
