"""The two Linux calls the os module lacks: ``syncfs(2)`` and ``renameat2(2)``, through the interpreter's libc.

``fsync_together`` issues its fsyncs from threads of its own (``threading`` alone: ``concurrent.futures`` would
load ``queue`` and ``logging`` with it into every command that checkpoints).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path


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


class _Batch:
    """The fsyncs of one ``fsync_together`` call: how many are left, and the first failure of each path."""

    def __init__(self, count: int) -> None:
        self.left = count
        self.failures: dict[int, BaseException] = {}
        self.done = threading.Condition()

    def run(self, index: int, path: str | Path | int) -> None:
        try:
            fsync_path(path)
        except BaseException as exc:
            self.failures[index] = exc
        with self.done:
            self.left -= 1
            if not self.left:
                self.done.notify()

    def wait(self) -> None:
        with self.done:
            self.done.wait_for(lambda: not self.left)
        if self.failures:
            raise self.failures[min(self.failures)]


class _Threads:
    """Up to ``FSYNC_THREADS`` threads that run the fsyncs put on one queue, started as calls need them."""

    def __init__(self) -> None:
        self.work: deque[tuple[_Batch, int, str | Path | int]] = deque()
        self.ready = threading.Condition()
        self.started = 0

    def run(self, paths: Sequence[str | Path | int]) -> None:
        batch = _Batch(len(paths))
        with self.ready:
            while self.started < min(len(paths), FSYNC_THREADS):
                threading.Thread(target=self._serve, name=f"omxfs-fsync_{self.started}", daemon=True).start()
                self.started += 1
            self.work.extend((batch, index, path) for index, path in enumerate(paths))
            self.ready.notify(len(paths))
        batch.wait()

    def _serve(self) -> None:
        while True:
            with self.ready:
                self.ready.wait_for(lambda: self.work)
                batch, index, path = self.work.popleft()
            batch.run(index, path)


_threads: dict[int, _Threads] = {}


def fsync_together(paths: Sequence[str | Path | int]) -> None:
    """fsync each of ``paths`` (files or directories, or descriptors open on them), all at once from threads: the
    filesystem commits them in one journal transaction where one after the other would wait for one each. Returns
    once every fsync has returned; the first failure (in the order of ``paths``) is raised then."""
    if len(paths) == 1:
        fsync_path(paths[0])
    elif paths:
        # per process: a child forked after a checkpoint inherits the threads' record but none of the threads
        threads = _threads.setdefault(os.getpid(), _Threads())
        threads.run(paths)


def fsync_path(path: str | Path | int) -> None:
    if isinstance(path, int):
        os.fsync(path)
        return
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
