"""The two Linux calls the os module lacks: ``syncfs(2)`` and ``renameat2(2)``, through the interpreter's libc."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omxfs.errors import from_os_error

_AT_FDCWD = -100


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)  # the interpreter links libc: no search (as omxfs.fuse.guardian does)
    libc.syncfs.argtypes = [ctypes.c_int]
    libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return libc


def syncfs(path: Path) -> None:
    """Write back everything of the filesystem ``path`` is on (``os.sync()`` where ``syncfs`` fails)."""
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if _libc().syncfs(fd) != 0:
                os.sync()
        finally:
            os.close(fd)


def renameat2(old: Path, new: Path, flags: int) -> None:
    """``renameat2(old, new, flags)``; an ``OmxError`` carrying the errno on failure."""
    if _libc().renameat2(_AT_FDCWD, os.fsencode(old), _AT_FDCWD, os.fsencode(new), flags) != 0:
        code = ctypes.get_errno()
        raise from_os_error(OSError(code, os.strerror(code), str(new)), new, walking=True)


#: the threads ``fsync_together`` issues its fsyncs from, started once per process (starting them per call cost
#: as much as the fsyncs of a few small files)
FSYNC_THREADS = 16


_pools: dict[int, ThreadPoolExecutor] = {}


def _fsync_pool() -> ThreadPoolExecutor:
    # per process: a child forked after a checkpoint inherits the pool but none of its threads
    pid = os.getpid()
    pool = _pools.get(pid)
    if pool is None:
        pool = _pools[pid] = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="omxfs-fsync")
    return pool


def fsync_together(paths: Sequence[str | Path]) -> None:
    """fsync each of ``paths`` (files or directories), all at once from threads: the filesystem commits them in one
    journal transaction where one after the other would wait for one each."""
    if len(paths) == 1:
        fsync_path(Path(paths[0]))
    elif paths:
        list(_fsync_pool().map(fsync_path, paths))


def fsync_path(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
