"""Durable, atomic file writes and cross-process locks: the only place the store touches raw I/O policy.

Every mutation writes a temporary file under ``WS/.omxfs/tmp/`` (same filesystem, invisible in the zones),
fsyncs it, renames it over the target and fsyncs the target's directory. A process killed at any point leaves
either the old or the new file, never a half one. Compare-and-swap sections hold an ``flock`` on a lock file
under ``WS/.omxfs/locks/``; flock is per open file description, so it serialises threads of one process as well
as separate processes and daemons sharing the store.

Paths are walked without following symlinks (``O_NOFOLLOW`` on every component), so a symlink planted inside a
zone can never redirect a store write outside it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

from omxfs.errors import InvalidInput, NotFound, OmxError, OSFailure, from_os_error
from omxfs.store.beneath import open_beneath

#: how often a read is tried again when a file replaced through another client of a shared filesystem still
#: answers from the inode it replaced (GlusterFS: ESTALE for 1-2 s; JuiceFS: ENOENT or EBADF for about 1 s):
#: waits of 5, 10, 20, 40, 80, then 100 ms, about 3 s in all
STALE_RETRIES = 34
#: errors of reading a file just opened whose inode another client removed by renaming a new file over it
_GONE_WHILE_OPEN = frozenset({errno.ENOENT, errno.EBADF, errno.ESTALE})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: a directory only named, for ``*at`` calls in it: no open of the directory itself (tmpfs allocates a readdir
#: cursor for each real open, and frees it at close: about half the cost of the walk), and no read permission
#: asked of it, only search, as POSIX asks of a directory one creates or stats a name in
_PATH_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def fsync_dir(path: Path) -> None:
    fd = os.open(path, _DIR_FLAGS)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_dir(dir_fd: int, what: Path) -> None:
    """fsync an open directory, so the names just made in it survive a crash; an OS error is an ``OSFailure``."""
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        raise from_os_error(exc, what, walking=True) from exc


_HELD_DIR = re.compile(r"/proc/self/fd/(\d+)((?:/[^/]+)*)/?")


def held_dir(path: Path | str) -> tuple[int, str] | None:
    """``(N, "rest")`` for a path ``/proc/self/fd/N/rest`` into a directory this process holds open, else None.

    The daemon addresses the store it mounts over through such a descriptor. Calls relative to ``N`` itself
    (``dir_fd=N``) skip resolving the magic link, the most expensive step of a short walk. ``rest`` is ``""``
    for the held directory itself.
    """
    return _held_dir(str(path))


@functools.lru_cache(maxsize=64)  # a handful of roots, parsed on every walk of the mount
def _held_dir(path: str) -> tuple[int, str] | None:
    held = _HELD_DIR.fullmatch(path)
    return None if held is None else (int(held.group(1)), held.group(2).lstrip("/"))


def open_dir(root: Path, relative: PurePosixPath | str, *, create: bool = False, path_only: bool = False) -> int:
    """A descriptor of ``root/relative``, walked without following symlinks.

    From a held root (``held_dir``) the whole path is one ``openat2`` (``beneath.open_beneath``) where the kernel
    allows it. Otherwise, and to ``create`` missing directories, it is walked one component at a time with
    ``O_NOFOLLOW``, from descriptor ``N`` itself when the root is exactly a held one. ``path_only``: an ``O_PATH``
    descriptor, good for ``*at`` calls and ``/proc/self/fd/N/name`` paths only (not for listing, ``fsync`` or
    ``f*xattr``). ``relative`` may be its string (``"."`` for ``root`` itself): the mount's walks have it at hand,
    and a parent path object made for each walk cost more than the ``openat2``.
    """
    flags = _PATH_DIR_FLAGS if path_only else _DIR_FLAGS
    if isinstance(relative, str):
        text = relative or "."
        parts: tuple[str, ...] = () if text == "." else tuple(text.split("/"))
    else:
        text, parts = str(relative), relative.parts
    if ".." in parts:  # never in a checked name; refused here too, so neither walk can climb out
        raise InvalidInput(f"{root / relative}: '..' is not walked")
    held = held_dir(root)
    if held is not None and not create:
        below = f"{held[1]}/{text}" if held[1] else text
        try:
            fd = open_beneath(held[0], below, flags)
        except OSError as exc:
            raise from_os_error(exc, root / relative, walking=True) from exc
        if fd is not None:
            return fd
    fd = held[0] if held is not None and not held[1] else None  # None: open root itself first
    if fd is None or not parts:
        try:
            fd = os.open(root if fd is None else ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
        except OSError as exc:
            raise from_os_error(exc, root, walking=True) from exc
        owned = True
    else:
        owned = False  # the held descriptor is the caller's: never closed here
    for depth, part in enumerate(parts, 1):
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            child = os.open(part, flags, dir_fd=fd)
        except OSError as exc:
            if owned:
                os.close(fd)
            raise from_os_error(exc, root.joinpath(*parts[:depth]), walking=True) from exc
        if owned:
            os.close(fd)
        fd, owned = child, True
    return fd


def read_bytes(root: Path, relative: PurePosixPath, *, known: bool = False) -> bytes:
    """The content of the regular file ``root/relative``; symlinks anywhere on the way are refused. ``known``: as
    for ``read_with_stat``."""
    return read_with_stat(root, relative, known=known)[0]


class _Vanished(Exception):
    """The file was there a moment ago (opened, or still named in the directory) but its inode answered ENOENT,
    EBADF or ESTALE: replaced through another client of a shared filesystem, whose new file is to be read."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause)
        self.cause = cause


def read_with_stat(root: Path, relative: PurePosixPath, *, known: bool = False) -> tuple[bytes, os.stat_result]:
    """``read_bytes``, and the ``fstat`` of the very file read (what a later ``lstat`` can be compared with).

    A file replaced (renamed over) through another client of a shared filesystem can, in this client, answer for
    a moment from the inode it replaced: GlusterFS answers ESTALE for a second or two, JuiceFS ENOENT (at open,
    through the name its kernel still caches) or EBADF and ENOENT (reading a file opened just before) for about a
    second, its entry cache's timeout. Such a read is tried again, up to ``STALE_RETRIES`` times (3 s), whenever
    the file was there a moment ago: it was opened, or the directory still names it. ``known``: the caller knows
    the file exists (it was just listed or stat'ed, and files of its kind are replaced, never removed), so ENOENT
    at open is such a moment too. Otherwise a file that is not there is ``NotFound`` at once: a real "not found"
    costs an ``lstat`` and a listing of its directory more, never a wait."""
    delay = 0.005
    for attempt in range(STALE_RETRIES + 1):
        try:
            return _read_with_stat(root, relative, known=known)
        except _Vanished as vanished:
            if attempt == STALE_RETRIES:
                raise from_os_error(vanished.cause, root / relative, walking=True) from vanished.cause
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _read_with_stat(root: Path, relative: PurePosixPath, *, known: bool) -> tuple[bytes, os.stat_result]:
    try:
        dir_fd = open_dir(root, relative.parent)
    except OSFailure as exc:
        if exc.errno == errno.ESTALE:  # the directory itself, replaced elsewhere (GlusterFS)
            raise _Vanished(OSError(exc.errno, os.strerror(exc.errno))) from exc
        raise
    try:
        raw, st = _read_once(dir_fd, relative.name, known=known)
    except OSError as exc:
        raise from_os_error(exc, root / relative, walking=True) from exc
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(st.st_mode):
        raise NotFound(f"{root / relative}: not a regular file")
    return raw, st


def read_at(dir_fd: int, name: str, *, known: bool = False) -> tuple[bytes, os.stat_result]:
    """The content and ``fstat`` of ``name`` (not followed if a symlink) in the open directory ``dir_fd``, read
    again as ``read_with_stat`` reads a file replaced through another client. Errors are the system calls'
    ``OSError`` (``FileNotFoundError``: not there); the caller checks the file's type in the ``fstat``."""
    delay = 0.005
    for attempt in range(STALE_RETRIES + 1):
        try:
            return _read_once(dir_fd, name, known=known)
        except _Vanished as vanished:
            if attempt == STALE_RETRIES:
                raise vanished.cause from vanished
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _read_once(dir_fd: int, name: str, *, known: bool) -> tuple[bytes, os.stat_result]:
    """One open and read of ``name``; ``_Vanished`` where its file was there a moment ago (see ``read_with_stat``)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError as exc:
        if known or _still_named(dir_fd, name):
            raise _Vanished(exc) from exc
        raise
    except OSError as exc:
        if exc.errno == errno.ESTALE:
            raise _Vanished(exc) from exc
        raise
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            return (f.read() if stat.S_ISREG(st.st_mode) else b""), st
    except OSError as exc:
        if exc.errno in _GONE_WHILE_OPEN:
            raise _Vanished(exc) from exc
        raise


def _still_named(dir_fd: int, name: str) -> bool:
    """Whether ``name`` is still in the directory although its open said ENOENT: its file was replaced rather
    than removed. ``lstat`` answers from this client's cache while it lasts; once that expired, ``lstat`` of the
    cached name asks for the removed inode (ENOENT again), so the listing, which a client reads from the server,
    decides."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        pass
    else:
        return True
    try:
        return name in os.listdir(dir_fd)
    except OSError:
        return False


def lstat(root: Path, relative: PurePosixPath) -> os.stat_result | None:
    """``lstat`` of ``root/relative`` walking no symlink on the way (the last component itself is not
    followed either); None if it is absent or the walk is refused."""
    try:
        dir_fd = open_dir(root, relative.parent)
    except OmxError:
        return None
    try:
        return os.stat(relative.name, dir_fd=dir_fd, follow_symlinks=False) if relative.name else os.fstat(dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)


def exists(root: Path, relative: PurePosixPath) -> bool:
    return lstat(root, relative) is not None


def list_files(root: Path) -> list[PurePosixPath]:
    """Every regular file below ``root`` as paths relative to it; symlinks are not followed, and a file removed
    while the walk runs (other writers share the store) is left out."""
    found: list[PurePosixPath] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = PurePosixPath(os.path.relpath(dirpath, root))
        for name in filenames:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.lstat(os.path.join(dirpath, name)).st_mode):
                    found.append(PurePosixPath(name) if rel_dir == PurePosixPath(".") else rel_dir / name)
        dirnames.sort()
    return found


class FileWrite:
    """One file of a change written with ``AtomicWriter.write_together``."""

    __slots__ = ("data", "mode", "relative", "root", "sync_dir")

    def __init__(
        self, root: Path, relative: PurePosixPath, data: bytes, mode: int = 0o644, sync_dir: bool = True
    ) -> None:
        self.root, self.relative, self.data, self.mode, self.sync_dir = root, relative, data, mode, sync_dir


class AtomicWriter:
    """Writes files atomically into a store whose scratch directory is ``tmp_dir``.

    ``write`` is staging (temp file, fsync) then installing (rename, directory fsync). ``write_together`` does
    that for the several files of one change (a commit, a delivery) so that a full disk (ENOSPC) or an I/O error
    fails before anything visible changed: only renames, which need no new data blocks, are left for the end.
    """

    def __init__(self, tmp_dir: Path) -> None:
        self.tmp_dir = tmp_dir

    def write(
        self,
        root: Path,
        relative: PurePosixPath,
        data: bytes,
        *,
        mode: int = 0o644,
        sync_dir: bool = True,
        durable: bool = True,
    ) -> None:
        """Replace ``root/relative`` with ``data``: temp file, fsync, rename, directory fsync.

        The rename goes through a descriptor of the target's directory, so a symlink on the way is refused and
        a symlink at the target itself is replaced, never followed. ``sync_dir=False`` leaves the directory's
        fsync to a following write into the same directory, which makes both renames durable at once.
        ``durable=False`` skips both fsyncs, for copies derived from files that are durable (a crash of the
        machine may leave such a copy behind or empty; readers do not rest on it and ``fsck --repair`` redoes it):
        a process killed at any point still leaves the old or the new file whole.
        """
        tmp = self.stage(data, root / relative, mode=mode, durable=durable)
        self.install(tmp, root, relative, sync_dir=sync_dir and durable)

    def write_together(self, files: Sequence[FileWrite], *, before_install: Callable[[], None] | None = None) -> None:
        """Write ``files`` in their order as one change: their directories are made and every file is staged
        before the first rename; ``before_install`` runs between. A failure before the renames leaves nothing;
        one during them leaves the files installed so far (callers order files so that such a prefix is
        consistent) and removes the rest."""
        for f in files:
            os.close(open_dir(f.root, f.relative.parent, create=True))
        staged: list[Path] = []
        try:
            for f in files:
                staged.append(self.stage(f.data, f.root / f.relative, mode=f.mode))
            if before_install is not None:
                before_install()
        except BaseException:
            for tmp in staged:
                self.discard(tmp)
            raise
        for index, (f, tmp) in enumerate(zip(files, staged, strict=True)):
            try:
                self.install(tmp, f.root, f.relative, sync_dir=f.sync_dir)
            except BaseException:
                for rest in staged[index + 1 :]:
                    self.discard(rest)
                raise

    def stage(self, data: bytes, what: Path, *, mode: int = 0o644, durable: bool = True) -> Path:
        """``data`` in a new temp file, fsynced unless not ``durable``, named after ``what``; on an OS error
        nothing is left behind."""
        tmp = self.tmp_dir / f"{what.name[:40]}.{os.urandom(8).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self.discard(tmp)
            raise from_os_error(exc, what, walking=True) from exc
        return tmp

    def install(self, tmp: Path, root: Path, relative: PurePosixPath, *, sync_dir: bool = True) -> None:
        """Rename a staged file over ``root/relative`` (see ``write``); on an OS error the staged file is removed."""
        try:
            dir_fd = open_dir(root, relative.parent, create=True)
        except OmxError:
            self.discard(tmp)
            raise
        try:
            os.replace(tmp, relative.name, dst_dir_fd=dir_fd)
            if sync_dir:
                os.fsync(dir_fd)
        except OSError as exc:
            self.discard(tmp)
            raise from_os_error(exc, root / relative, walking=True) from exc
        finally:
            os.close(dir_fd)

    @staticmethod
    def discard(tmp: Path) -> None:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_new(dir_fd: int, name: str, data: bytes, *, mode: int = 0o644) -> None:
    """Create ``name`` in ``dir_fd`` with ``data``, fsynced; EEXIST if it exists. On an OS error nothing is left.

    Only for names no other writer uses (they carry a random token): the content is visible while written."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise from_os_error(exc, Path(name), walking=True) from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise from_os_error(exc, Path(name), walking=True) from exc
    os.close(fd)


#: link(2) refused by the filesystem itself (not by the race): fall back to an O_EXCL create of the name
NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK})


def create_exclusive(dir_fd: int, name: str, data: bytes, *, staging: Path, mode: int = 0o644) -> bool:
    """Create ``name`` in ``dir_fd`` holding ``data`` unless it exists: True if this call created it.

    The one primitive every compare-and-swap of the store rests on (SPEC §1): of any number of writers, in any
    number of processes or machines sharing the directory, exactly one creates a given name, with no lock
    shared between them. The content is written and fsynced under a private name in ``staging`` (the store's
    temp directory, on the same filesystem: a writer killed meanwhile leaves nothing in the zones) and then
    ``link``ed to ``name``, so the name never shows half a file. Where the filesystem has no hard links the name
    is created with ``O_EXCL`` and written in place (a reader may then briefly see it short and must wait).
    The caller fsyncs the directory to make the name durable.
    """
    tmp = f"{name[:40]}.{os.urandom(8).hex()}.tmp"
    staging_fd = os.open(staging, _DIR_FLAGS)
    try:
        write_new(staging_fd, tmp, data, mode=mode)
        try:
            os.link(tmp, name, src_dir_fd=staging_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in NO_LINK:
                raise from_os_error(exc, Path(name), walking=True) from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=staging_fd)
    finally:
        os.close(staging_fd)
    try:
        write_new(dir_fd, name, data, mode=mode)
    except OSFailure as exc:
        if exc.errno == errno.EEXIST:
            return False  # another writer has it
        raise
    return True


class Locks:
    """Named exclusive locks shared by every process using one store.

    An optimisation only: they keep the writers of one machine from racing (and losing) exclusive creates, but
    correctness never rests on them, since clients of a shared filesystem may share no locks (SPEC §1)."""

    def __init__(self, lock_dir: Path) -> None:
        self.lock_dir = lock_dir

    @contextlib.contextmanager
    def hold(self, name: str) -> Iterator[None]:
        # Lock files are named by a hash so that any resource name (paths with slashes, long names) fits.
        import hashlib  # here: a command that only reads takes no lock, and loads no hashlib (OpenSSL's)

        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        fd = os.open(self.lock_dir / f"{digest}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock
