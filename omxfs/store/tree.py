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
import itertools
import os
import stat
from collections.abc import Iterable, Iterator
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


_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_SYS_FCHMODAT2 = 452  # Linux 6.6+; the same number on every architecture (added after the tables were unified)
_AT_SYMLINK_NOFOLLOW = 0x100


class _Fchmodat2:
    """Whether the kernel (and any seccomp filter) allows ``fchmodat2``: asked by the first call."""

    available = True


def chmod_at(dir_fd: int, name: str, mode: int) -> None:
    """chmod of ``name`` in the directory ``dir_fd``, never following a symlink (EOPNOTSUPP for one).

    One ``fchmodat2(AT_SYMLINK_NOFOLLOW)`` where the kernel has it: glibc before 2.39 does ``os.chmod(...,
    follow_symlinks=False)`` with four calls (an ``O_PATH`` open, a stat, a chmod of its ``/proc/self/fd`` magic
    link, a close), and Python takes its EOPNOTSUPP for a symlink for a ValueError. Elsewhere, that."""
    if _Fchmodat2.available:
        if _syscall(_SYS_FCHMODAT2, dir_fd, os.fsencode(name), mode, _AT_SYMLINK_NOFOLLOW) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EPERM):
            raise OSError(code, os.strerror(code), name)
        if code == errno.ENOSYS:  # an older kernel: glibc's way from now on
            _Fchmodat2.available = False
        # EPERM: not the owner, or a seccomp filter refusing the call; glibc's way below tells which
    try:
        os.chmod(name, mode, dir_fd=dir_fd, follow_symlinks=False)
    except ValueError:  # Python's reading of EOPNOTSUPP: a symlink has no mode of its own
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP), name) from None
    _Fchmodat2.available = False  # glibc's way worked where fchmodat2 said EPERM: a filter refuses it


#: ``statfs.f_type`` of the filesystems kept in memory (<linux/magic.h>): a read of them never waits for a disk
_MEMORY_FILESYSTEMS = frozenset({0x01021994, 0x858458F6})  # tmpfs, ramfs
_fstatfs = _libc.fstatfs
_fstatfs.argtypes = [ctypes.c_int, ctypes.c_char_p]
_fstatfs.restype = ctypes.c_int


#: st_dev -> whether that filesystem lives in memory (``in_memory``), learned at the first file read there: every
#: file of a filesystem answers ``RWF_NOWAIT`` alike, so each new open need not be refused once more first
_MEMORY_DEVICES: dict[int, bool] = {}


def in_memory(fd: int) -> bool:
    """Whether the file open as ``fd`` lives in memory (tmpfs, ramfs), so that reading it does not wait for a disk
    (short of swap).

    Asked where ``RWF_NOWAIT`` is refused: tmpfs answers EOPNOTSUPP, and without this every read of a store on
    tmpfs would go to a thread."""
    buffer = ctypes.create_string_buffer(128)  # struct statfs: 120 bytes on 64-bit Linux; f_type comes first
    if _fstatfs(fd, buffer) != 0:
        return False
    return int.from_bytes(buffer.raw[: ctypes.sizeof(ctypes.c_long)], "little", signed=True) in _MEMORY_FILESYSTEMS


def _read_umask() -> int | None:
    """This process's umask, from ``/proc/self/status`` (``Umask:``, Linux 4.7+); None where it cannot be read.

    Not with ``umask(2)``, which can only read it by setting it: every thread of the daemon would create files
    under the other mask for that moment."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


#: The daemon's umask, read once when the store is first imported. Safe to keep: no code of the daemon changes
#: its umask (a umask is per process, or per thread only after ``unshare(CLONE_FS)``, which it never makes), and a
#: library that set a narrower one for a moment (``umask(0)`` and back) would only make the creation exact anyway.
DAEMON_UMASK = _read_umask()
#: bits a creation may drop or keep by rules of its own (set-ID bits, on a directory or outside the group)
_SET_ID = stat.S_ISUID | stat.S_ISGID


def _made_exact(perm: int) -> bool:
    """Whether creating a node with permission bits ``perm`` (``open(O_CREAT|O_EXCL)``, ``mkdir``, ``mknod``)
    made exactly ``perm``, so no ``fchmod`` (or ``stat`` and ``chmod``) must follow it: the daemon's umask clears
    none of its bits and it asks for no set-ID bit. The kernel applies the daemon's umask, not the caller's,
    which it applied itself before the request came (FUSE), and it must not apply twice.

    Where a directory has a default ACL (set on the store directly: the mount refuses ``system.posix_acl_default``),
    the kernel applies no umask there but the ACL's bits, and such a creation keeps them, as on the store's own
    filesystem; the ``fchmod`` made it exactly ``perm``."""
    return DAEMON_UMASK is not None and not perm & (DAEMON_UMASK | _SET_ID)


def is_write(flags: int) -> bool:
    """Whether an open with ``flags`` changes the file (written, or truncated at open)."""
    return (flags & os.O_ACCMODE) != os.O_RDONLY or bool(flags & os.O_TRUNC)


class OpenFile:
    """A file of the store open for the mount: reads and writes go straight to disk through its descriptor.

    ``what`` names it in errors. ``fd`` is -1 once closed. ``opened``: its ``fstat`` when ``StoreTree.open``
    opened it (the check that it is a regular file made it; the mount's open reads it again for the page cache).
    Two are equal only if they are the same object.
    """

    def __init__(
        self,
        fd: int,
        what: object,
        memory: bool | None = None,  # on tmpfs or ramfs (read on the loop, ``read_cached``); None: not asked yet
        opened: os.stat_result | None = None,
    ) -> None:
        self.fd, self.what, self.memory, self.opened = fd, what, memory, opened

    def __repr__(self) -> str:
        return f"OpenFile(fd={self.fd!r}, what={self.what!r}, memory={self.memory!r}, opened={self.opened!r})"

    def pread(self, offset: int, size: int) -> bytes:
        with os_errors(self.what):
            return os.pread(self.fd, size, offset)

    def read_cached(self, offset: int, size: int) -> bytes | None:
        """The bytes if the page cache holds all of them, else None (read in a thread then): ``RWF_NOWAIT``
        makes the kernel refuse rather than wait for the disk, so a read on the event loop never stalls it.
        A filesystem that refuses ``RWF_NOWAIT`` itself is read at once if it lives in memory (known per device
        once one of its files was read: ``_MEMORY_DEVICES``)."""
        if self.memory is None and self.opened is not None:
            self.memory = _MEMORY_DEVICES.get(self.opened.st_dev)
        if self.memory:
            return self.pread(offset, size)
        buffer = bytearray(size)
        try:
            got = os.preadv(self.fd, [buffer], offset, os.RWF_NOWAIT)
        except OSError as exc:
            if exc.errno == errno.EOPNOTSUPP and self.memory is None:
                self.memory = in_memory(self.fd)
                if self.opened is not None:
                    _MEMORY_DEVICES[self.opened.st_dev] = self.memory
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

    def _parent(self, path: PurePosixPath) -> tuple[int, str]:
        """A descriptor of ``path``'s parent directory (``O_PATH``, the caller closes it) and ``path``'s name, for
        the ``*at`` call on it. ``open_dir`` raises the workspace's errors itself.

        A plain call with ``try``/``finally`` around it at each use, not a ``contextmanager``: its generator cost
        more than the ``openat2`` it wraps, on every request of the mount."""
        parent, _, name = str(path).rpartition("/")
        return open_dir(self.root, parent, path_only=True), name

    @contextlib.contextmanager
    def parent(self, path: PurePosixPath) -> Iterator[int]:
        """``_parent`` as a context manager, for the calls made less often than every request."""
        fd = self._parent(path)[0]
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
        fd, name = self._parent(path)
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(fd)

    def listdir(self, path: PurePosixPath) -> list[str]:
        with self.directory(path) as fd, os_errors(path):
            return sorted(os.listdir(fd))

    def listdir_stats(self, path: PurePosixPath, most: int | None = None) -> list[tuple[str, os.stat_result]] | None:
        """Names with their lstat, sorted, all through one descriptor of the directory: a listing costs one walk
        from the store root instead of one per entry. Entries that vanish meanwhile are left out.

        With ``most``: None if the directory holds more than ``most`` entries. The names are counted before any is
        stat'ed, and reading a name costs a fraction of its stat, so giving up on a large directory costs little."""
        found: list[tuple[str, os.stat_result]] = []
        with self.directory(path) as fd, os_errors(path), os.scandir(fd) as scan:
            entries: Iterable[os.DirEntry[str]] = scan
            if most is not None:
                entries = list(itertools.islice(scan, most + 1))
                if len(entries) > most:
                    return None
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
        return sorted(found, key=lambda item: item[0])

    def readlink(self, path: PurePosixPath) -> bytes:
        with self.parent(path) as fd, os_errors(path):
            return os.readlink(os.fsencode(path.name), dir_fd=fd)

    def open(self, path: PurePosixPath, flags: int, mode: int = 0o644) -> OpenFile:
        """Open a regular file (never a symlink, FIFO or device: O_NONBLOCK keeps a FIFO from blocking us); the
        file's ``opened`` is its ``fstat`` at the open."""
        dir_fd, name = self._parent(path)
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSFailure(f"{path}: not a regular file", errno.EINVAL)
        except BaseException:
            os.close(fd)
            raise
        return OpenFile(fd, path, opened=st)

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
        apply again, ``_made_exact``); without ``O_EXCL`` in ``flags``, a file created meanwhile by someone else is
        opened."""
        base = flags | os.O_NOFOLLOW | os.O_CLOEXEC
        dir_fd, name = self._parent(path)
        try:
            try:
                fd = os.open(name, base | os.O_CREAT | os.O_EXCL, perm, dir_fd=dir_fd)
                if not _made_exact(perm):
                    os.fchmod(fd, perm)
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                fd = os.open(name, base, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        return OpenFile(fd, path)

    def change(
        self,
        path: PurePosixPath,
        *,
        mode: int | None,
        times_ns: tuple[int, int] | None,
        owner: tuple[int, int] | None = None,
        now: bool = False,
    ) -> os.stat_result:
        """chown (``owner``: uid, gid, -1 to keep one), chmod and utimes of ``path``, none following a symlink;
        ``now``: set both times to the kernel's now (``UTIME_NOW``, which write permission allows), not ``times_ns``.
        Returns the node's lstat after the changes, from the same walk (the mount answers a setattr with it).

        The owner changes first: a chown clears the set-id bits, a mode given with it must win."""
        dir_fd, name = self._parent(path)
        try:
            if owner is not None:
                os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)
            if mode is not None:
                chmod_at(dir_fd, name, stat.S_IMODE(mode))
            if now:
                os.utime(name, dir_fd=dir_fd, follow_symlinks=False)
            elif times_ns is not None:
                os.utime(name, ns=times_ns, dir_fd=dir_fd, follow_symlinks=False)
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

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
        set-group-ID bit; no call at all where the creation made ``perm`` exactly (``_made_exact``), no chmod when
        nothing differs."""
        if _made_exact(perm):
            return
        have = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        want = perm | (have & stat.S_ISGID)
        if have != want:
            chmod_at(dir_fd, name, want)

    def unlink(self, path: PurePosixPath, most: int | None = None) -> bool:
        """Remove the name ``path``. With ``most``, only if it is not larger than ``most`` bytes (freeing a large
        file's blocks may take long): False, and nothing done, if it is. Both in one walk to the parent."""
        dir_fd, name = self._parent(path)
        try:
            if most is not None:
                try:
                    size = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
                except OSError:
                    size = 0  # the unlink reports what is wrong, with its own errno
                if size > most:
                    return False
            os.unlink(name, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        return True

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
