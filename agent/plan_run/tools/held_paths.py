"""Paths of the workspace changed through directory descriptors, never through a path used twice.

The workspace root is opened once; each directory on the way to a name is opened below it with ``O_NOFOLLOW``, so
a symlink on the way is refused rather than followed, and every rename, unlink, mkdir, symlink and open is an
``*at`` call relative to a descriptor held. The name acted on itself is never followed either: a symlink is
moved, copied or deleted as the link it is. A directory removed or copied whole is walked the same way and never
across a mount point. Failures are ``ToolFailure``s that say what was met and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.plan_run.tools.base import ToolFailure
from omxfs.checkpoints.held import mount_of
from omxfs.checkpoints.syscalls import renameat2

__all__ = ["Tally", "WorkspaceRoot", "copy_entry", "kind_of", "path_parts", "remove_entry", "rename_entry", "tally"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
RENAME_NOREPLACE = 1  # <linux/fs.h>
_CHUNK = 1 << 20


def path_parts(path: str) -> tuple[str, ...]:
    """The components of a plan's relative path (``()`` for the workspace root itself); ToolFailure for a path that
    is empty, absolute or climbs out with ``..``."""
    if not path or any(ord(c) < 0x20 for c in path):
        raise ToolFailure(
            f"invalid path {path!r}", "give a plain relative path such as 'data/notes.txt'", "InvalidPath"
        )
    if path.startswith(("/", "~")):
        raise ToolFailure(
            f"path {path!r} is absolute: paths are relative to the workspace root",
            "use a path relative to the workspace root, e.g. 'out/report.md'",
            "PathOutsideWorkspace",
        )
    parts = tuple(part for part in path.split("/") if part not in ("", "."))
    if ".." in parts:
        raise ToolFailure(
            f"path {path!r} uses '..': paths must stay inside the workspace root",
            "use a path relative to the workspace root, e.g. 'out/report.md'",
            "PathOutsideWorkspace",
        )
    return parts


def kind_of(st: os.stat_result) -> str:
    """What a file is, in words."""
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if stat.S_ISDIR(st.st_mode):
        return "directory"
    if stat.S_ISREG(st.st_mode):
        return "file"
    return "FIFO" if stat.S_ISFIFO(st.st_mode) else "special file"


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


class WorkspaceRoot:
    """The workspace root held open; ``parent(parts)`` opens the directory that holds ``parts[-1]``."""

    def __init__(self, workspace: Path) -> None:
        self.fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def __enter__(self) -> WorkspaceRoot:
        return self

    def __exit__(self, *_exc: object) -> None:
        os.close(self.fd)

    @contextlib.contextmanager
    def parent(self, parts: tuple[str, ...], *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory holding ``parts[-1]``, walked from the root without following a symlink;
        with ``create``, missing directories on the way are made (as ``mkdir -p``)."""
        fd = os.dup(self.fd)
        try:
            for depth, part in enumerate(parts[:-1], 1):
                shown = "/".join(parts[:depth])
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                child = _open_dir(fd, part, shown)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)


def _open_dir(dir_fd: int, name: str, shown: str) -> int:
    """The directory ``name`` in ``dir_fd``, not followed if it is a symlink: ToolFailure for anything else."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise ToolFailure(f"{shown} does not exist", "check the path with list_dir", "NotFound") from None
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            st = lstat_at(dir_fd, name)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise ToolFailure(
                    f"{shown} is a symlink: omx does not follow symlinks on the way to a path",
                    "name the path without going through the symlink",
                    "SymlinkRefused",
                ) from None
            raise ToolFailure(f"{shown} is not a directory", "check the path with list_dir", "NotADirectory") from None
        raise


@dataclass
class Tally:
    """What a tree holds: files, directories below its top, symlinks, and the bytes of its files."""

    files: int = 0
    directories: int = 0
    symlinks: int = 0
    bytes: int = 0

    def words(self) -> str:
        counts = [(self.files, "file"), (self.directories, "directory"), (self.symlinks, "symlink")]
        shown = [f"{n} {what if n == 1 else ('directories' if what == 'directory' else what + 's')}"
                 for n, what in counts if n]  # fmt: skip
        return ", ".join(shown) or "empty"


def tally(dir_fd: int, name: str, shown: str, *, copying: bool = False) -> Tally:
    """Count what ``name`` holds (a directory's own entry aside), never crossing into another mount; with
    ``copying``, a FIFO, socket or device below it is refused (a copy makes files, directories and symlinks only)."""
    counted = Tally()
    _count(dir_fd, name, shown, counted, copying=copying, top=True)
    return counted


def _count(dir_fd: int, name: str, shown: str, counted: Tally, *, copying: bool, top: bool) -> None:
    st = lstat_at(dir_fd, name)
    if st is None:
        raise ToolFailure(f"{shown} does not exist", "check the path with list_dir", "NotFound")
    what = kind_of(st)
    if what == "file":
        counted.files += 1
        counted.bytes += st.st_size
    elif what == "symlink":
        counted.symlinks += 1
    elif what == "directory":
        counted.directories += not top
        with _below(dir_fd, name, shown) as below:
            for child in sorted(os.listdir(below)):
                _count(below, child, f"{shown}/{child}", counted, copying=copying, top=False)
    elif copying:
        raise ToolFailure(f"{shown} is a {what}: only files, directories and symlinks are copied",
                          "copy the files you need one by one", "NotCopyable")  # fmt: skip


@contextlib.contextmanager
def _below(dir_fd: int, name: str, shown: str) -> Iterator[int]:
    """The directory ``name`` of ``dir_fd``, refused when it is a mount point (its files are another mount's)."""
    fd = _open_dir(dir_fd, name, shown)
    try:
        if mount_of(fd) != mount_of(dir_fd):
            raise ToolFailure(f"{shown} is a mount point: omx does not act on another mount's files",
                              "leave it out, or act on the files beside it", "MountPoint")  # fmt: skip
        yield fd
    finally:
        os.close(fd)


def remove_entry(dir_fd: int, name: str, shown: str) -> None:
    """Remove ``name`` (a symlink itself, a directory with everything below it), never following a link and
    never into another mount."""
    st = lstat_at(dir_fd, name)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    with _below(dir_fd, name, shown) as below:
        for child in os.listdir(below):
            remove_entry(below, child, f"{shown}/{child}")
    os.rmdir(name, dir_fd=dir_fd)


def rename_entry(src_dir: int, name: str, dst_dir: int, to: str, *, replace: bool) -> None:
    """Rename ``name`` to ``to``; without ``replace`` an existing ``to`` is never replaced (``RENAME_NOREPLACE``,
    checked by lstat where the filesystem lacks the flag). The OSError of the rename on failure."""
    if replace:
        os.rename(name, to, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
        return
    try:
        renameat2(src_dir, name, dst_dir, to, RENAME_NOREPLACE)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
        if lstat_at(dst_dir, to) is not None:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), to) from None
        os.rename(name, to, src_dir_fd=src_dir, dst_dir_fd=dst_dir)


def copy_entry(
    src_dir: int, name: str, dst_dir: int, to: str, shown: str, *, replace: bool, atomic: bool, times: bool = False
) -> None:
    """Copy ``name`` to ``to``: a file's bytes and mode, a symlink as a symlink with the same target, a directory
    with everything below it. Only a file may replace a file (``replace``); nothing else is ever replaced.
    ``atomic``: a file is written beside its target and renamed into place (not on an omxfs mount, where a
    temporary file would become a version or a delivery). ``times``: files and directories keep their atime and
    mtime (a move made as a copy)."""
    st = lstat_at(src_dir, name)
    if st is None:
        raise ToolFailure(f"{shown} does not exist", "check the path with list_dir", "NotFound")
    what = kind_of(st)
    if what == "file":
        _copy_file(src_dir, name, dst_dir, to, st if times else None, replace=replace, atomic=atomic)
    elif what == "symlink":
        os.symlink(os.readlink(name, dir_fd=src_dir), to, dir_fd=dst_dir)
    elif what == "directory":
        os.mkdir(to, 0o700, dir_fd=dst_dir)
        with _below(src_dir, name, shown) as below, contextlib.ExitStack() as stack:
            made = _open_dir(dst_dir, to, to)
            stack.callback(os.close, made)
            for child in sorted(os.listdir(below)):
                copy_entry(below, child, made, child, f"{shown}/{child}", replace=False, atomic=atomic, times=times)
            with contextlib.suppress(OSError):  # the mode and times are kept where the filesystem lets them be set
                os.fchmod(made, stat.S_IMODE(st.st_mode))
                if times:
                    os.utime(made, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        raise ToolFailure(f"{shown} is a {what}: only files, directories and symlinks are copied",
                          "copy the files you need one by one", "NotCopyable")  # fmt: skip


def _copy_file(
    src_dir: int, name: str, dst_dir: int, to: str, times: os.stat_result | None, *, replace: bool, atomic: bool
) -> None:
    """A file's bytes and mode (and with ``times``, the atime and mtime it gives) copied to ``to``."""
    source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    try:
        st = os.fstat(source)
        if not stat.S_ISREG(st.st_mode):  # changed since it was looked at: copy nothing
            raise ToolFailure(f"{name} is no longer a file", "run the step again", "NotAFile")
        mode = stat.S_IMODE(st.st_mode)
        if not atomic:
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_TRUNC if replace else os.O_EXCL)
            target = os.open(to, flags, mode, dir_fd=dst_dir)
            try:
                _pour(source, target)
                _keep_times(target, times)
            finally:
                os.close(target)
            return
        tmp = f".{to}.{secrets.token_hex(4)}.omx-tmp"
        new = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        target = os.open(tmp, new, 0o600, dir_fd=dst_dir)
        try:
            try:
                _pour(source, target)
                os.fchmod(target, mode)
                _keep_times(target, times)
                os.fsync(target)
            finally:
                os.close(target)
            rename_entry(dst_dir, tmp, dst_dir, to, replace=replace)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dst_dir)
            raise
    finally:
        os.close(source)


def _keep_times(fd: int, st: os.stat_result | None) -> None:
    if st is not None:
        with contextlib.suppress(OSError):  # where the filesystem lets them be set
            os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))


def _pour(source: int, target: int) -> None:
    while chunk := os.read(source, _CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(target, view) :]
