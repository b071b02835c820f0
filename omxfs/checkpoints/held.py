"""Changes to a tree an agent can change meanwhile, made through directories held open: never through its paths.

A supervisor's command (accept, discard, restore) acts, often as root, on a zone whose agent may write it at the same
time, through a mount or a view. So every step here is relative to a directory descriptor: a trusted directory (the
zone's root, one of the store's own) is opened once, each component below it with ``O_NOFOLLOW | O_DIRECTORY`` and
only on that directory's own mount, and every create, rename, exchange, unlink, chmod, chown, time and attribute
change is an ``*at`` call in such a directory or an ``f*`` call on a descriptor. A symlink, a file or a mount point
put where a directory was stops the walk with ``PathBlocked``, which names what was met. A name the agent changes
after the walk only changes which name the held directory has, not which directory it is; and a directory cannot
leave its zone (a rename across zones is refused, a directory has no second name), so nothing outside the zone is
ever written, created, removed or changed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from omxfs.checkpoints.syscalls import renameat2
from omxfs.errors import NotFound, OmxError, PathBlocked, from_os_error
from omxfs.store.beneath import open_beneath

#: how often a name that another process keeps changing (a directory into a symlink) is removed again before giving up
_REMOVE_TRIES = 3

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a file" if stat.S_ISREG(mode) else "a special file"


def mount_of(fd: int) -> tuple[int, int]:
    """Which mount the open ``fd`` is on: its filesystem's device and the kernel's mount id (``/proc/self/fdinfo``;
    a bind mount of a directory of the same filesystem has the same device but a mount id of its own), or -1 for
    the id where ``/proc`` cannot tell."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as info:
            found = [int(line.split()[1]) for line in info if line.startswith(b"mnt_id:")]
    except OSError:
        found = []
    return os.fstat(fd).st_dev, found[0] if found else -1


class Held:
    """A directory held open by descriptor (``fd``), shown as ``shown`` in messages; ``mount`` (``mount_of``) is the
    mount the walk stays on. A context manager that closes the descriptor."""

    def __init__(self, fd: int, shown: str, mount: tuple[int, int]) -> None:
        self.fd = fd
        self.shown = shown
        self.mount = mount

    @classmethod
    def open(cls, path: Path, shown: str | None = None) -> Held:
        """Open a directory the caller trusts (the zone's root, a directory of the store's own)."""
        try:
            fd = os.open(path, _DIR)
        except OSError as exc:
            raise from_os_error(exc, path, walking=True) from exc
        return cls(fd, shown or str(path), mount_of(fd))

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def name(self, name: str) -> str:
        return name if self.shown in ("", ".") else f"{self.shown}/{name}"

    # -- walking down ------------------------------------------------------------------------------------------

    def sub(self, name: str) -> Held:
        """The directory ``name`` in this one, opened without following a symlink and only on the same mount:
        ``PathBlocked`` for anything else there, ``NotFound`` if nothing is."""
        shown = self.name(name)
        try:
            fd = open_beneath(self.fd, name, _DIR, same_mount=True)
            if fd is None:  # no openat2 here: the mount is told by its id
                fd = os.open(name, _DIR, dir_fd=self.fd)
                if mount_of(fd) != self.mount:
                    os.close(fd)
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), shown)
        except FileNotFoundError:
            raise NotFound(f"{shown}: not there") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise PathBlocked(f"{shown}: {self.what(name)} where a directory was") from None
            if exc.errno == errno.EXDEV:
                raise PathBlocked(f"{shown}: a mount point where a directory was") from None
            raise from_os_error(exc, shown, walking=True) from exc
        return Held(fd, shown, self.mount)

    def walk(self, relative: str) -> Held:
        """``relative`` below this directory (``""`` or ``"."``: itself, opened again), component by component."""
        held = Held(os.dup(self.fd), self.shown, self.mount)
        for part in relative.split("/") if relative not in ("", ".") else ():
            if part in ("", ".", ".."):
                held.close()
                raise PathBlocked(f"{relative}: not a plain relative path")
            try:
                below = held.sub(part)
            finally:
                held.close()
            held = below
        return held

    def what(self, name: str) -> str:
        """What ``name`` is now, in words (for messages)."""
        st = self.lstat(name)
        return "nothing" if st is None else _kind(st.st_mode)

    # -- looking ----------------------------------------------------------------------------------------------

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def stat(self) -> os.stat_result:
        return os.fstat(self.fd)

    def names(self) -> list[str]:
        """This directory's names, sorted."""
        return sorted(os.listdir(self.fd))

    def is_dir(self, name: str) -> bool:
        st = self.lstat(name)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def proc(self, name: str) -> str:
        """A path to ``name`` in this directory for the calls that take no directory descriptor (``*xattr``): the
        directory is the held one, and the caller must not follow ``name`` itself (``follow_symlinks=False``)."""
        return f"/proc/self/fd/{self.fd}/{name}"

    # -- changing ---------------------------------------------------------------------------------------------

    def mkdir(self, name: str, mode: int) -> None:
        os.mkdir(name, mode, dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        """Remove the non-directory ``name`` (a symlink itself, never what it names); nothing if absent."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def remove(self, name: str) -> None:
        """Remove ``name`` whatever it is, a directory with everything below it (``rm -rf --one-file-system``, through
        directories left without permissions); nothing if absent. A mount point below is ``PathBlocked``, and so is
        a name another process keeps changing into another kind of file (a directory into a symlink) meanwhile."""
        for _ in range(_REMOVE_TRIES):
            st = self.lstat(name)
            if st is None:
                return
            try:
                if not stat.S_ISDIR(st.st_mode):
                    self.unlink(name)
                    return
                with self._sub_for_removal(name) as below:
                    for child in below.names():
                        below.remove(child)
                os.rmdir(name, dir_fd=self.fd)
                return
            except OSError as exc:  # changed since the lstat: another kind of file, or something put back in it
                if exc.errno not in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY, errno.EEXIST):
                    raise from_os_error(exc, self.name(name), walking=True) from exc
            except NotFound:
                return  # removed meanwhile
            except PathBlocked:
                now = self.lstat(name)
                if now is not None and stat.S_ISDIR(now.st_mode):  # a mount point, not a change of kind
                    raise
        raise PathBlocked(f"{self.name(name)}: changed into another kind of file while it was removed, again and again")

    def _sub_for_removal(self, name: str) -> Held:
        try:
            return self.sub(name)
        except OmxError as exc:
            if exc.errno != errno.EACCES:
                raise
        # a directory without search or read permission (an overlay's work/work is mode 000): opened O_PATH, its
        # mode set through the descriptor's magic link, which names the very directory, never a symlink
        fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
        try:
            if mount_of(fd) != self.mount:
                raise PathBlocked(f"{self.name(name)}: a mount point where a directory was")
            os.chmod(f"/proc/self/fd/{fd}", 0o700)
        finally:
            os.close(fd)
        return self.sub(name)

    def rename(self, name: str, to: Held, to_name: str, flags: int = 0) -> None:
        """``renameat2`` of ``name`` here to ``to_name`` in ``to`` (``RENAME_EXCHANGE``, ``RENAME_NOREPLACE``)."""
        if flags == 0:
            os.rename(name, to_name, src_dir_fd=self.fd, dst_dir_fd=to.fd)
            return
        renameat2(self.fd, name, to.fd, to_name, flags)

    def set_attributes(self, st: os.stat_result, xattrs: dict[str, bytes], *, owner: bool) -> None:
        """This directory's mode, owner (if ``owner``), ``user.*`` attributes (exactly ``xattrs``) and times as ``st``
        has them; through the descriptor."""
        if owner:
            os.fchown(self.fd, st.st_uid, st.st_gid)
        for key, value in xattrs.items():
            os.setxattr(self.fd, key, value)
        for key in os.listxattr(self.fd):
            if key.startswith("user.") and key not in xattrs:
                os.removexattr(self.fd, key)
        os.fchmod(self.fd, stat.S_IMODE(st.st_mode))
        os.utime(self.fd, ns=(st.st_atime_ns, st.st_mtime_ns))


@contextlib.contextmanager
def kept_times(held: Held) -> Iterator[os.stat_result]:
    """Run the block, then put ``held``'s atime and mtime back as they were before it."""
    before = held.stat()
    try:
        yield before
    finally:
        os.utime(held.fd, ns=(before.st_atime_ns, before.st_mtime_ns))


def remove_tree(path: Path) -> bool:
    """``path`` removed with everything below it as ``Held.remove`` does (never following a symlink, never into
    another mount), from its parent, which the caller trusts: False, and what was left stays, where it could not be."""
    try:
        with Held.open(path.parent) as parent:
            parent.remove(path.name)
    except (OmxError, OSError):
        return False
    return True
