"""The store directory as a tree of real files, for the zones served as they are on disk (the private zones,
``.omxfs/``, ``collaborative/.versions`` and ``.conflicts``): what the mount's passthrough does to the disk.

Every access walks from the store root one directory descriptor at a time with ``O_NOFOLLOW``
(``atomic.open_dir``) and acts on the last component relative to its parent's descriptor without following it,
so no symlink in the store, planted by an agent or by anyone on the store directly, can make the daemon read or
write outside the workspace. OS errors keep their errno (``errors.from_os_error``): a passthrough answers what
the kernel would. Paths are relative to the store root; who may change what is the zones' business.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from omxfs.errors import NoAttribute, NotEmpty, NotFound, OSFailure, from_os_error, os_errors
from omxfs.store.atomic import open_dir
from omxfs.store.layout import USER_XATTRS

ROOT = PurePosixPath(".")

_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = _libc.renameat2
_renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
_renameat2.restype = ctypes.c_int


def renameat2(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str, flags: int) -> None:
    """renameat2(2), which the os module lacks: RENAME_NOREPLACE and RENAME_EXCHANGE, atomically."""
    if _renameat2(src_dir_fd, os.fsencode(src), dst_dir_fd, os.fsencode(dst), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


#: ``statfs.f_type`` of the filesystems kept in memory (<linux/magic.h>): a read of them never waits for a disk
_MEMORY_FILESYSTEMS = frozenset({0x01021994, 0x858458F6})  # tmpfs, ramfs
_fstatfs = _libc.fstatfs
_fstatfs.argtypes = [ctypes.c_int, ctypes.c_char_p]
_fstatfs.restype = ctypes.c_int


def in_memory(fd: int) -> bool:
    """Whether the file open as ``fd`` lives in memory (tmpfs, ramfs), so that reading it does not wait for a disk
    (short of swap).

    Asked where ``RWF_NOWAIT`` is refused: tmpfs answers EOPNOTSUPP, and without this every read of a store on
    tmpfs would go to a thread."""
    buffer = ctypes.create_string_buffer(128)  # struct statfs: 120 bytes on 64-bit Linux; f_type comes first
    if _fstatfs(fd, buffer) != 0:
        return False
    return int.from_bytes(buffer.raw[: ctypes.sizeof(ctypes.c_long)], "little", signed=True) in _MEMORY_FILESYSTEMS


def is_write(flags: int) -> bool:
    """Whether an open with ``flags`` changes the file (written, or truncated at open)."""
    return (flags & os.O_ACCMODE) != os.O_RDONLY or bool(flags & os.O_TRUNC)


@dataclass(eq=False)
class OpenFile:
    """A file of the store open for the mount: reads and writes go straight to disk through its descriptor.

    ``what`` names it in errors. ``fd`` is -1 once closed.
    """

    fd: int
    what: object
    memory: bool | None = None  # on tmpfs or ramfs (read on the loop, ``read_cached``); None: not asked yet

    def pread(self, offset: int, size: int) -> bytes:
        with os_errors(self.what):
            return os.pread(self.fd, size, offset)

    def read_cached(self, offset: int, size: int) -> bytes | None:
        """The bytes if the page cache holds all of them, else None (read in a thread then): ``RWF_NOWAIT``
        makes the kernel refuse rather than wait for the disk, so a read on the event loop never stalls it.
        A filesystem that refuses ``RWF_NOWAIT`` itself is read at once if it lives in memory."""
        if self.memory:
            return self.pread(offset, size)
        buffer = bytearray(size)
        try:
            got = os.preadv(self.fd, [buffer], offset, os.RWF_NOWAIT)
        except OSError as exc:
            if exc.errno == errno.EOPNOTSUPP and self.memory is None:
                self.memory = in_memory(self.fd)
                if self.memory:
                    return self.pread(offset, size)
            if exc.errno in (errno.EAGAIN, errno.EOPNOTSUPP):
                return None
            raise
        if got < size and offset + got < os.fstat(self.fd).st_size:
            return None  # partly cached: a short read here would look like the end of the file
        return bytes(buffer[:got])

    def pwrite(self, offset: int, data: bytes) -> int:
        """One ``pwrite``: the count it wrote."""
        with os_errors(self.what):
            return os.pwrite(self.fd, data, offset)

    def write_all(self, offset: int, data: bytes) -> None:
        view = memoryview(data)
        with os_errors(self.what):
            while view:
                written = os.pwrite(self.fd, view, offset)
                view, offset = view[written:], offset + written

    def truncate(self, size: int) -> None:
        with os_errors(self.what):
            os.ftruncate(self.fd, size)

    def fsync(self, datasync: bool) -> None:
        with os_errors(self.what):
            (os.fdatasync if datasync else os.fsync)(self.fd)

    def fstat(self) -> os.stat_result:
        with os_errors(self.what):
            return os.fstat(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


class StoreTree:
    """Walks paths below a store root through directory descriptors, never following a symlink."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def parent(self, path: PurePosixPath) -> Iterator[int]:
        """A descriptor of ``path``'s parent directory, for the ``*at`` call on ``path.name`` (``O_PATH``)."""
        with os_errors(path):
            fd = open_dir(self.root, str(path).rpartition("/")[0], path_only=True)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def directory(self, path: PurePosixPath) -> Iterator[int]:
        with os_errors(path):
            fd = open_dir(self.root, path)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- reads ---------------------------------------------------------------------------------------------------

    def lstat(self, path: PurePosixPath) -> os.stat_result:
        if not path.parts:  # the root (``parts`` is cached on the path object; a pathlib ``==`` is not)
            with os_errors(path):
                return os.stat(self.root)
        # Spelled out, not ``with self.parent(...)``: the mount stats on nearly every request.
        parent, _, name = str(path).rpartition("/")
        try:
            fd = open_dir(self.root, parent, path_only=True)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(fd)

    def listdir(self, path: PurePosixPath) -> list[str]:
        with self.directory(path) as fd, os_errors(path):
            return sorted(os.listdir(fd))

    def listdir_stats(self, path: PurePosixPath) -> list[tuple[str, os.stat_result]]:
        """Names with their lstat, sorted, all through one descriptor of the directory: a listing costs one walk
        from the store root instead of one per entry. Entries that vanish meanwhile are left out."""
        found: list[tuple[str, os.stat_result]] = []
        with self.directory(path) as fd, os_errors(path), os.scandir(fd) as entries:
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
        return sorted(found, key=lambda item: item[0])

    def readlink(self, path: PurePosixPath) -> bytes:
        with self.parent(path) as fd, os_errors(path):
            return os.readlink(os.fsencode(path.name), dir_fd=fd)

    def open(self, path: PurePosixPath, flags: int, mode: int = 0o644) -> OpenFile:
        """Open a regular file (never a symlink, FIFO or device: O_NONBLOCK keeps a FIFO from blocking us)."""
        with self.parent(path) as dir_fd, os_errors(path):
            fd = os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode, dir_fd=dir_fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSFailure(f"{path}: not a regular file", errno.EINVAL)
        except BaseException:
            os.close(fd)
            raise
        return OpenFile(fd, path)

    @staticmethod
    def _xattr_path(dir_fd: int, path: PurePosixPath) -> str:
        """A path that reaches ``path.name`` in ``dir_fd`` for the xattr calls, which have no ``dir_fd``."""
        return f"/proc/self/fd/{dir_fd}/{path.name}" if path != ROOT else f"/proc/self/fd/{dir_fd}"

    @contextlib.contextmanager
    def _xattr_target(self, path: PurePosixPath) -> Iterator[str]:
        with self.directory(path) if path == ROOT else self.parent(path) as fd:
            yield self._xattr_path(fd, path)

    def user_xattrs(self, path: PurePosixPath) -> list[str]:
        with self._xattr_target(path) as target, os_errors(path):
            return [n for n in os.listxattr(target, follow_symlinks=False) if n.startswith(USER_XATTRS)]

    def get_xattr(self, path: PurePosixPath, name: str) -> bytes:
        with self._xattr_target(path) as target:
            try:
                return os.getxattr(target, name, follow_symlinks=False)
            except OSError as exc:
                if exc.errno in (errno.ENODATA, errno.ENOTSUP):
                    raise NoAttribute(f"{path}: no attribute {name}") from None
                raise from_os_error(exc, path) from exc

    # -- changes -------------------------------------------------------------------------------------------------

    def create(self, path: PurePosixPath, flags: int, perm: int) -> OpenFile:
        """Create ``path`` with exactly ``perm`` (the kernel applied the caller's umask; the daemon's must not
        apply again); without ``O_EXCL`` in ``flags``, a file created meanwhile by someone else is opened."""
        base = flags | os.O_NOFOLLOW | os.O_CLOEXEC
        with self.parent(path) as dir_fd, os_errors(path):
            try:
                fd = os.open(path.name, base | os.O_CREAT | os.O_EXCL, perm, dir_fd=dir_fd)
                os.fchmod(fd, perm)
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                fd = os.open(path.name, base, dir_fd=dir_fd)
        return OpenFile(fd, path)

    def change(
        self,
        path: PurePosixPath,
        *,
        mode: int | None,
        times_ns: tuple[int, int] | None,
        owner: tuple[int, int] | None = None,
        now: bool = False,
    ) -> None:
        """chown (``owner``: uid, gid, -1 to keep one), chmod and utimes of ``path``, none following a symlink;
        ``now``: set both times to the kernel's now (``UTIME_NOW``, which write permission allows), not ``times_ns``.

        The owner changes first: a chown clears the set-id bits, a mode given with it must win."""
        with self.parent(path) as dir_fd, os_errors(path):
            if owner is not None:
                os.chown(path.name, *owner, dir_fd=dir_fd, follow_symlinks=False)
            if mode is not None:
                os.chmod(path.name, stat.S_IMODE(mode), dir_fd=dir_fd, follow_symlinks=False)
            if now:
                os.utime(path.name, dir_fd=dir_fd, follow_symlinks=False)
            elif times_ns is not None:
                os.utime(path.name, ns=times_ns, dir_fd=dir_fd, follow_symlinks=False)

    def truncate(self, path: PurePosixPath, size: int) -> None:
        file = self.open(path, os.O_WRONLY)
        try:
            file.truncate(size)
        finally:
            file.close()

    def mkdir(self, path: PurePosixPath, perm: int) -> None:
        """A directory with exactly ``perm`` (see ``create``), plus the set-group-ID bit it inherits from a parent
        that has it, as the store's filesystem gives it."""
        with self.parent(path) as dir_fd, os_errors(path):
            os.mkdir(path.name, perm, dir_fd=dir_fd)
            self._exact_mode(dir_fd, path.name, perm)

    def mknod(self, path: PurePosixPath, mode: int, rdev: int) -> None:
        """A FIFO, UNIX socket or device node with exactly the permission bits of ``mode`` (see ``create``)."""
        with self.parent(path) as dir_fd, os_errors(path):
            os.mknod(path.name, mode, rdev, dir_fd=dir_fd)
            self._exact_mode(dir_fd, path.name, stat.S_IMODE(mode))

    @staticmethod
    def _exact_mode(dir_fd: int, name: str, perm: int) -> None:
        """Undo the daemon's umask on a node just made (the kernel applied the caller's), keeping an inherited
        set-group-ID bit; no call at all when nothing differs, the common case."""
        have = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        want = perm | (have & stat.S_ISGID)
        if have != want:
            os.chmod(name, want, dir_fd=dir_fd, follow_symlinks=False)

    def unlink(self, path: PurePosixPath) -> None:
        with self.parent(path) as dir_fd, os_errors(path):
            os.unlink(path.name, dir_fd=dir_fd)

    def rmdir(self, path: PurePosixPath) -> None:
        with self.parent(path) as dir_fd, os_errors(path):
            os.rmdir(path.name, dir_fd=dir_fd)

    def rename(self, old: PurePosixPath, new: PurePosixPath, flags: int = 0) -> None:
        """``flags``: renameat2's (``layout.RENAME_NOREPLACE``, ``RENAME_EXCHANGE``)."""
        with self.parent(old) as src_fd, self.parent(new) as dst_fd, os_errors(old):
            if flags:
                renameat2(src_fd, old.name, dst_fd, new.name, flags)
            else:
                os.rename(old.name, new.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def symlink(self, path: PurePosixPath, target: bytes) -> None:
        with self.parent(path) as dir_fd, os_errors(path):
            os.symlink(target, os.fsencode(path.name), dir_fd=dir_fd)

    def link(self, existing: PurePosixPath, new: PurePosixPath) -> None:
        with self.parent(existing) as src_fd, self.parent(new) as dst_fd, os_errors(new):
            os.link(existing.name, new.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)

    def set_xattr(self, path: PurePosixPath, name: str, value: bytes) -> None:
        with self._xattr_target(path) as target, os_errors(path):
            os.setxattr(target, name, value, follow_symlinks=False)

    def remove_xattr(self, path: PurePosixPath, name: str) -> None:
        with self._xattr_target(path) as target:
            try:
                os.removexattr(target, name, follow_symlinks=False)
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    raise NoAttribute(f"{path}: no attribute {name}") from None
                raise from_os_error(exc, path) from exc


def open_in(root: Path, rel: PurePosixPath) -> OpenFile:
    """The regular file ``root/rel`` open for reading, no symlink followed; any failure is ``NotFound``."""
    dir_fd = open_dir(root, rel.parent)
    try:
        return OpenFile(os.open(rel.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd), rel)
    except OSError as exc:
        raise NotFound(f"{rel}: {os.strerror(exc.errno or errno.EIO)}") from exc
    finally:
        os.close(dir_fd)


def remove_empty_dir(root: Path, rel: PurePosixPath, shown: str) -> None:
    """Remove the directory ``root/rel`` if it is empty (``NotEmpty`` if not, ``NotFound`` for anything else the
    OS answers); ``shown`` names it in the error."""
    dir_fd = open_dir(root, rel.parent)
    try:
        os.rmdir(rel.name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise NotEmpty(f"{shown}: directory not empty") from None
        raise NotFound(f"{shown}: {os.strerror(exc.errno or errno.EIO)}") from None
    finally:
        os.close(dir_fd)
