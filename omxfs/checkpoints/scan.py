"""A private zone as it is now, read into manifest entries (``manifest.Entry``).

The walk never follows a symlink (each directory is opened ``O_NOFOLLOW`` relative to its parent's descriptor) and
keeps what a zone holds: regular files, directories, symlinks, FIFOs, device nodes and sockets, with their modes,
owners, times and ``user.*`` attributes; a nested git repository is files and directories like any other. A second
name of a file already met (a hard link) is recorded as a link to the first. A file whose stat (inode, size, mtime,
ctime) is the one a previous manifest recorded for the same path is taken as unchanged without being read: any
change of content, mode, owner or attribute moves its ctime.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from omxfs.checkpoints.blobs import Extents, data_extents, hash_fd
from omxfs.checkpoints.manifest import BLOCK, CHAR, DIR, FIFO, FILE, SOCKET, SYMLINK, Entry
from omxfs.errors import from_os_error
from omxfs.store.layout import USER_XATTRS

#: how a regular file's content becomes a digest: stored as a blob (a checkpoint) or only hashed (a diff)
Content = Callable[[int, os.stat_result], tuple[str, Extents | None]]
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK


def hash_only(fd: int, st: os.stat_result) -> tuple[str, Extents | None]:
    extents = data_extents(fd, st)
    return hash_fd(fd, st.st_size, extents), extents


@dataclass
class Scan:
    """The result of one walk: the entries, and which files had to be read (not taken from the stat cache)."""

    entries: list[Entry] = field(default_factory=list)
    read: list[str] = field(default_factory=list)


def scan_zone(zone: str | os.PathLike[str], previous: dict[str, Entry] | None, content: Content = hash_only) -> Scan:
    """Every entry of the zone directory ``zone``, in walk order (sorted names, a directory before its content)."""
    result = Scan()
    links: dict[tuple[int, int], str] = {}
    try:
        root_fd = os.open(zone, _DIR_FLAGS)
    except OSError as exc:
        raise from_os_error(exc, zone, walking=True) from exc
    try:
        _Walker(result, previous or {}, content, links).walk(root_fd, ".", os.fstat(root_fd))
    finally:
        os.close(root_fd)
    return result


class _Walker:
    def __init__(
        self, result: Scan, previous: dict[str, Entry], content: Content, links: dict[tuple[int, int], str]
    ) -> None:
        self.result = result
        self.previous = previous
        self.content = content
        self.links = links

    def walk(self, dir_fd: int, path: str, st: os.stat_result) -> None:
        self.result.entries.append(self._entry(path, DIR, st, xattrs=self._xattrs(dir_fd, None, path, st)))
        with os.scandir(dir_fd) as found:
            names = sorted(e.name for e in found)
        for name in names:
            child = name if path == "." else f"{path}/{name}"
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while the walk runs
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                except FileNotFoundError:
                    continue
                try:
                    self.walk(fd, child, os.fstat(fd))
                finally:
                    os.close(fd)
            elif stat.S_ISREG(mode):
                self._file(dir_fd, name, child, st)
            elif stat.S_ISLNK(mode):
                with contextlib.suppress(FileNotFoundError):
                    target = os.readlink(name, dir_fd=dir_fd)
                    entry = self._entry(child, SYMLINK, st, xattrs=self._xattrs(dir_fd, name, child, st))
                    self.result.entries.append(replace(entry, target=target))
            else:
                kind = (
                    FIFO
                    if stat.S_ISFIFO(mode)
                    else CHAR
                    if stat.S_ISCHR(mode)
                    else BLOCK
                    if stat.S_ISBLK(mode)
                    else SOCKET
                )
                entry = self._entry(child, kind, st, xattrs=self._xattrs(dir_fd, name, child, st))
                self.result.entries.append(replace(entry, rdev=st.st_rdev if kind in (CHAR, BLOCK) else 0))

    def _file(self, dir_fd: int, name: str, path: str, st: os.stat_result) -> None:
        if st.st_nlink > 1:
            first = self.links.setdefault((st.st_dev, st.st_ino), path)
            if first != path:
                self.result.entries.append(replace(self._entry(path, FILE, st, xattrs=()), link=first, ino=0))
                return
        old = self.previous.get(path)
        if (
            old is not None
            and old.type == FILE
            and not old.link
            and (old.ino, old.size, old.mtime_ns, old.ctime_ns)
            == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        ):
            # built at once: this is the path of nearly every file, and dataclasses.replace was its largest cost
            self.result.entries.append(
                self._entry(path, FILE, st, xattrs=old.xattrs, size=old.size, sha256=old.sha256, data=old.data)
            )
            return
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return
        try:
            before = os.fstat(fd)
            digest, extents = self.content(fd, before)
            after = os.fstat(fd)
            xattrs = _list_xattrs(fd)
        finally:
            os.close(fd)
        entry = self._entry(path, FILE, before, xattrs=xattrs)
        if (after.st_mtime_ns, after.st_ctime_ns, after.st_size) != (
            before.st_mtime_ns,
            before.st_ctime_ns,
            before.st_size,
        ):
            entry = replace(entry, ctime_ns=0)  # written while read: never taken from the stat cache
        self.result.entries.append(replace(entry, size=before.st_size, sha256=digest, data=extents))
        self.result.read.append(path)

    def _entry(
        self, path: str, kind: str, st: os.stat_result, *, xattrs: tuple[tuple[str, bytes], ...], **more: Any
    ) -> Entry:
        return Entry(
            path=path,
            type=kind,
            mode=stat.S_IMODE(st.st_mode),
            uid=st.st_uid,
            gid=st.st_gid,
            mtime_ns=st.st_mtime_ns,
            atime_ns=st.st_atime_ns,
            xattrs=xattrs,
            ino=st.st_ino,
            ctime_ns=st.st_ctime_ns,
            **more,
        )

    def _xattrs(self, dir_fd: int, name: str | None, path: str, st: os.stat_result) -> tuple[tuple[str, bytes], ...]:
        old = self.previous.get(path)
        if old is not None and (old.ino, old.ctime_ns) == (st.st_ino, st.st_ctime_ns):
            return old.xattrs  # attributes move the ctime
        if name is None:
            return _list_xattrs(dir_fd)
        if stat.S_ISLNK(st.st_mode):
            return ()  # Linux keeps no user.* attribute on a symlink
        return _list_xattrs(f"/proc/self/fd/{dir_fd}/{name}", follow=False)


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells an unchanged file without reading it (see the module docstring)."""
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _list_xattrs(target: int | str, *, follow: bool = True) -> tuple[tuple[str, bytes], ...]:
    try:
        names = os.listxattr(target, follow_symlinks=follow)
    except OSError:  # ENOTSUP: a filesystem without attributes; ENOENT: gone meanwhile
        return ()
    found = []
    for name in names:
        if not name.startswith(USER_XATTRS):
            continue
        with contextlib.suppress(OSError):
            found.append((name, os.getxattr(target, name, follow_symlinks=follow)))
    return tuple(sorted(found))
