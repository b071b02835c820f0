"""Build a tree from manifest entries and blobs: what a restore puts in place of a zone (or of a path in it).

Entries come in walk order (a directory before its content), so the builder keeps only the descriptors of the
directories on the current path, each opened ``O_NOFOLLOW`` in its parent: a symlink the tree holds is never
followed. A directory gets its mode, owner, attributes and times once everything in it is made (its mtime would
move otherwise, and a read-only mode would refuse its content). A file is copied from its blob range by range
(``copy_file_range``: in the kernel, a reflink where the filesystem has them), only its data extents for a sparse
one, then truncated to its size, so its holes are holes again. Owners are restored where this process may set them
(root); otherwise each node is this process's user's, and the result says so.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from omxfs.checkpoints.blobs import BlobStore
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.checkpoints.manifest import BLOCK, CHAR, DIR, FIFO, FILE, SOCKET, SYMLINK, Entry
from omxfs.errors import StoreCorrupt, from_os_error

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Built:
    files: int = 0
    skipped: list[str] = field(default_factory=list)  # entries this process cannot make (sockets; devices unless root)
    owners_kept: bool = True  # False: not root, so owners other than this process's were not restored


class Builder:
    """Makes ``entries`` (paths relative to the directory ``root_fd``, ``"."`` for the root itself) from ``blobs``.
    ``primaries``: the first name of each hard-linked file, for a second name whose first is not built here (a
    restore of one path): it is then built as a file of its own."""

    def __init__(self, blobs: BlobStore, root_fd: int, primaries: dict[str, Entry] | None = None) -> None:
        self.blobs = blobs
        self.root_fd = root_fd
        self.primaries = primaries or {}
        self.built_paths: set[str] = set()
        self.result = Built()
        self.root_user = os.geteuid() == 0

    def build(self, entries: Sequence[Entry]) -> Built:
        stack: list[tuple[str, int, Entry | None]] = [(".", self.root_fd, None)]
        root_entry: Entry | None = None
        try:
            for entry in entries:
                if entry.path == ".":
                    root_entry = entry
                    continue
                parent, _, name = entry.path.rpartition("/")
                parent = parent or "."
                while stack[-1][0] != parent:
                    if len(stack) == 1:
                        raise StoreCorrupt(f"{entry.path}: listed before its directory {parent}")
                    self._finish_dir(*stack.pop())
                fd = stack[-1][1]
                if entry.type == DIR:
                    os.mkdir(name, 0o700, dir_fd=fd)
                    stack.append((entry.path, os.open(name, _DIR_FLAGS, dir_fd=fd), entry))
                else:
                    self._node(fd, name, entry)
                self.built_paths.add(entry.path)
            while len(stack) > 1:
                self._finish_dir(*stack.pop())
        except OSError as exc:
            raise from_os_error(exc, "the restored tree", walking=True) from exc
        finally:
            for _, fd, _ in stack[1:]:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if root_entry is not None:
            self._attributes(self.root_fd, None, root_entry)
        return self.result

    def _finish_dir(self, _path: str, fd: int, entry: Entry | None) -> None:
        try:
            if entry is not None:
                self._attributes(fd, None, entry)
        finally:
            os.close(fd)

    def _node(self, dir_fd: int, name: str, entry: Entry) -> None:
        if entry.type == FILE:
            if entry.link and entry.link in self.built_paths:
                os.link(entry.link, name, src_dir_fd=self.root_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                return
            source = self.primaries.get(entry.link, entry) if entry.link else entry
            self._file(dir_fd, name, source)
        elif entry.type == SYMLINK:
            os.symlink(entry.target, name, dir_fd=dir_fd)
            self._attributes(dir_fd, name, entry)
        elif entry.type == FIFO:
            os.mkfifo(name, 0o600, dir_fd=dir_fd)
            self._attributes(dir_fd, name, entry)
        elif entry.type in (CHAR, BLOCK) and self.root_user:
            kind = stat.S_IFCHR if entry.type == CHAR else stat.S_IFBLK
            os.mknod(name, kind | 0o600, entry.rdev, dir_fd=dir_fd)
            self._attributes(dir_fd, name, entry)
        else:  # a socket is made by bind(2), by the program that listens on it; a device node only by root
            assert entry.type in (SOCKET, CHAR, BLOCK)
            self.result.skipped.append(entry.path)

    def _file(self, dir_fd: int, name: str, entry: Entry) -> None:
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            if entry.size:
                try:
                    blob = os.open(self.blobs.path(entry.sha256), os.O_RDONLY | os.O_CLOEXEC)
                except FileNotFoundError:
                    raise StoreCorrupt(f"{entry.path}: its content (blob {entry.sha256}) is missing") from None
                try:
                    for offset, length in entry.data if entry.data is not None else ((0, entry.size),):
                        at, end = offset, offset + length
                        while at < end:
                            n = os.copy_file_range(blob, out, end - at, at, at)
                            if n == 0:
                                raise StoreCorrupt(f"{entry.path}: blob {entry.sha256} is shorter than the file")
                            at += n
                finally:
                    os.close(blob)
                os.ftruncate(out, entry.size)
            self._attributes(out, None, entry)
        finally:
            os.close(out)
        self.result.files += 1
        crash_point("restore-file")

    def _attributes(self, fd: int, name: str | None, entry: Entry) -> None:
        """Owner, then attributes and mode (a chown clears set-ID bits), then times; of ``fd`` or ``name`` in it."""
        symlink = entry.type == SYMLINK
        where: int | str = fd if name is None else f"/proc/self/fd/{fd}/{name}"
        if self.root_user:
            if name is None:
                os.fchown(fd, entry.uid, entry.gid)
            else:
                os.chown(name, entry.uid, entry.gid, dir_fd=fd, follow_symlinks=False)
        elif (entry.uid, entry.gid) != (os.geteuid(), os.getegid()):
            self.result.owners_kept = False
        if not symlink:
            for key, value in entry.xattrs:  # before the mode: a read-only mode refuses them to its owner
                os.setxattr(where, key, value, follow_symlinks=name is None)  # a path's last name: never followed
            if name is None:
                os.fchmod(fd, entry.mode)
            else:
                os.chmod(name, entry.mode, dir_fd=fd)
        times = (entry.atime_ns, entry.mtime_ns)
        if name is None:
            os.utime(fd, ns=times)
        else:
            os.utime(name, ns=times, dir_fd=fd, follow_symlinks=False)
