"""The two Linux calls the os module lacks: ``syncfs(2)`` and ``renameat2(2)``, through the interpreter's libc.

The fsync threads' ``concurrent.futures`` (with ``logging``) is imported when a first pool starts: the commands that
only read the history (``omxfs diff``, ``checkpoints``) do not load it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor


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


def renameat2(old_dir_fd: int, old: str, new_dir_fd: int, new: str, flags: int) -> None:
    """``renameat2(old_dir_fd, old, new_dir_fd, new, flags)``; the ``OSError`` of the call on failure."""
    if _libc().renameat2(old_dir_fd, os.fsencode(old), new_dir_fd, os.fsencode(new), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), new)


#: the threads ``fsync_together`` issues its fsyncs from, started once per process (starting them per call cost
#: as much as the fsyncs of a few small files)
FSYNC_THREADS = 16


_pools: dict[int, ThreadPoolExecutor] = {}


def _fsync_pool() -> ThreadPoolExecutor:
    # per process: a child forked after a checkpoint inherits the pool but none of its threads
    pid = os.getpid()
    pool = _pools.get(pid)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = _pools[pid] = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="omxfs-fsync")
    return pool


def fsync_together(paths: Sequence[str | Path | int]) -> None:
    """fsync each of ``paths`` (files or directories, or descriptors open on them), all at once from threads: the
    filesystem commits them in one journal transaction where one after the other would wait for one each."""
    if len(paths) == 1:
        fsync_path(paths[0])
    elif paths:
        list(_fsync_pool().map(fsync_path, paths))


def fsync_path(path: str | Path | int) -> None:
    if isinstance(path, int):
        os.fsync(path)
        return
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
