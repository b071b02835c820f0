"""``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``: a whole relative path opened in one system call.

The store walks paths one component at a time with ``O_NOFOLLOW`` so a symlink planted in a zone can never
redirect it. The kernel can enforce the same rule itself since Linux 5.6: ``RESOLVE_NO_SYMLINKS`` refuses a
symlink anywhere on the way (ELOOP, or ENOTDIR for the last one under ``O_NOFOLLOW``), ``RESOLVE_BENEATH``
refuses absolute paths and ``..`` above the start (EXDEV). That is one syscall instead of an open and a close
per component: the mount walks a path on nearly every request, so this is its cheapest possible walk.

Python has no binding (as of 3.13), so this calls ``syscall(SYS_openat2, ...)`` through ctypes. Where the kernel
or a seccomp filter refuses the call (ENOSYS, EPERM), ``open_beneath`` says so once by returning None, and the
callers keep their component-by-component walk for good.
"""

from __future__ import annotations

import ctypes
import errno
import os

#: the syscall number is the same on every Linux architecture (it was added after the tables were unified)
_SYS_OPENAT2 = 437
_RESOLVE_NO_XDEV = 0x01
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    """``struct open_how`` of ``linux/openat2.h``."""

    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_HOW_SIZE = ctypes.sizeof(_OpenHow)


class _Openat2:
    def __init__(self) -> None:
        self.available = True
        try:
            syscall = ctypes.CDLL(None, use_errno=True).syscall
        except (OSError, AttributeError):
            self.available = False
            return
        syscall.restype = ctypes.c_long
        self._syscall = syscall
        self._hows: dict[tuple[int, bool], tuple[_OpenHow, ctypes._CArgObject]] = {}

    def how(self, flags: int, same_mount: bool) -> ctypes._CArgObject:
        """A pointer to the ``open_how`` of ``flags``, made once per flag set (the walk's few) and kept."""
        found = self._hows.get((flags, same_mount))
        if found is None:
            resolve = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
            how = _OpenHow(flags, 0, resolve | (_RESOLVE_NO_XDEV if same_mount else 0))
            found = self._hows[flags, same_mount] = (how, ctypes.byref(how))  # the pointer keeps no reference
        return found[1]

    def __call__(self, dir_fd: int, path: str, flags: int, same_mount: bool = False) -> int | None:
        # Plain ints and bytes convert to C int and char* by themselves: no ctypes objects made per call.
        how = self.how(flags, same_mount)
        fd: int = self._syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), how, _HOW_SIZE)
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code in (errno.ENOSYS, errno.EPERM):  # an old kernel, or a sandbox's seccomp filter: walk instead
            self.available = False
            return None
        if code == errno.EAGAIN:  # a concurrent rename made the kernel unsure: the walk decides
            return None
        raise OSError(code, os.strerror(code), path)


_openat2 = _Openat2()


def open_beneath(dir_fd: int, path: str, flags: int, *, same_mount: bool = False) -> int | None:
    """Open ``path`` (relative, no ``..``) below the directory ``dir_fd`` without following any symlink; with
    ``same_mount``, without crossing a mount point either (``RESOLVE_NO_XDEV``: a bind mount too).

    ``flags`` are ``open(2)`` flags without ``O_CREAT``. Returns the new descriptor; raises OSError as ``open``
    would (ELOOP or ENOTDIR for a symlink on the way, EXDEV for a path that leaves ``dir_fd`` or its mount);
    returns None when ``openat2`` cannot be used here, and the caller walks the path itself.
    """
    if not _openat2.available:
        return None
    return _openat2(dir_fd, path, flags, same_mount)


def available() -> bool:
    """Whether ``open_beneath`` still uses ``openat2`` (False once the kernel refused it)."""
    return _openat2.available


def disable() -> None:
    """Use the component-by-component walk from now on (tests of that walk)."""
    _openat2.available = False


def enable() -> None:
    """Undo ``disable`` (the next call finds out again whether the kernel allows it)."""
    _openat2.available = hasattr(_openat2, "_syscall")
