"""The overlay through which a branch's view sees its agent's zone: mounted before bubblewrap starts, by no process
of its own, and seen by that view and its launcher alone (the host, the shared mount and other views keep the zone
as it was).

Its layers (``omxfs.checkpoints.review``): the zone lowest; a nested branch's middle layers above it (its parent's
upper layer, that one's parent's..., the topmost first: the kernel honours their whiteouts and opaque directories);
the branch's upper layer on top, which takes the run's writes; and where the zone has other pending branches, a
topmost lower layer of empty ``@<sibling>`` directories (``REVIEW_MARKS``), on which the view binds each sibling
read-only, so that nothing is written into the branch to show them.

Mounted with ``userxattr`` and ``index=off`` (which a user namespace's mount always has) whoever runs the view, so
that the upper layer has one format, the one ``omxfs diff --branch`` and ``omxfs accept`` read: whiteouts as 0:0
character devices, opaque directories and the overlay's bookkeeping as ``user.overlay.*`` attributes (root's mount
may record a copied-up file's origin there, bookkeeping no reader looks at). The kernel keeps the run's reads and
writes native: only the first write of a file of the zone copies it up.

Where it is mounted:

- root's launcher has a mount namespace of its own already (``namespaces.private_mounts``): ``Overlay.mount``
  mounts it there, on the branch's own empty directory, and the view binds its root (``--bind-fd``);
- an unprivileged user may mount an overlay only in a user namespace it owns (Linux 5.11), which a process with
  threads cannot enter: ``Overlay.in_namespace_of_its_own`` is run by the view's first process between its fork and
  its exec (``preexec_fn``). It enters a user and a mount namespace, maps its own uid and gid, mounts, and puts the
  overlay's root under the zone's descriptor number, which bwrap binds. It makes system calls only: nothing there
  takes a lock another thread of the launcher could have held at the fork (no import, no logging, no buffered I/O).

The zone is named by path (the kernel refuses a layer named by a descriptor of another mount namespace) and checked
after the mount against the descriptor the launcher opened, by device and inode: a path swapped meanwhile is refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass

from omxfs.errors import MountError

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_SLAVE = 1 << 19
MNT_DETACH = 2
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: the process's own symbols, the C library's among them (``find_library`` would start ``ldconfig``)
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Overlay:
    """A branch's overlay of a zone: its layers, by path, and where it is mounted."""

    lower: str  # the zone (checked against the zone's descriptor)
    upper: str
    work: str
    target: str  # the branch's own empty directory
    middle: tuple[str, ...] = ()  # a nested branch's: its parent's upper layer, that one's parent's... over the zone
    marks: str | None = None  # the topmost lower layer: the mountpoints of the branch's siblings (``REVIEW_MARKS``)

    def options(self) -> bytes:
        marks = () if self.marks is None else (self.marks,)
        lowers = ":".join(_escape(layer) for layer in (*marks, *self.middle, self.lower))
        upper, work = _escape(self.upper), _escape(self.work)
        return f"lowerdir={lowers},upperdir={upper},workdir={work},userxattr,index=off".encode()

    def mount(self, zone_fd: int) -> int:
        """Mount the overlay on ``target`` in this process's mount namespace, which must be its own; a descriptor of
        the overlay's root (``O_PATH``, closed on exec). ``zone_fd`` is the zone, as the launcher opened it."""
        if _libc.mount(b"overlay", os.fsencode(self.target), b"overlay", 0, self.options()) != 0:
            raise self.refused(ctypes.get_errno())
        try:
            zone, seen = os.fstat(zone_fd), os.stat(self.lower)
            if (seen.st_dev, seen.st_ino) != (zone.st_dev, zone.st_ino):
                raise MountError(f"{self.lower} changed while the view started: try again", errno.EAGAIN)
            return os.open(self.target, _DIR)
        except BaseException:
            self.unmount()
            raise

    def unmount(self) -> None:
        """Detach the overlay from ``target`` (a view still running keeps its own copy until it ends)."""
        _libc.umount2(os.fsencode(self.target), MNT_DETACH)

    def in_namespace_of_its_own(self, zone_fd: int, report_fd: int, process_limit: int | None) -> Callable[[], None]:
        """What the view's first process runs between its fork and its exec (``preexec_fn``): enter a user and mount
        namespace, mount the overlay there and give its root the number ``zone_fd``. On failure it writes the
        one-line reason to ``report_fd`` and raises (``subprocess`` then raises ``SubprocessError``): ``reported``
        makes the launcher's error of it.

        ``process_limit`` (``RLIMIT_NPROC``), if any, is taken before the user namespace is made: the kernel holds the
        uid's processes in a namespace to the limit its maker had then, and ``cgroups`` sets the limit only once the
        process has started."""
        uid, gid = os.getuid(), os.getgid()
        maps = (
            ("/proc/self/setgroups", b"deny"),
            ("/proc/self/uid_map", f"{uid} {uid} 1".encode()),
            ("/proc/self/gid_map", f"{gid} {gid} 1".encode()),
        )

        def enter_and_mount() -> None:
            try:
                if process_limit is not None:
                    _lower(resource.RLIMIT_NPROC, process_limit)
                if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
                    raise self.refused(ctypes.get_errno(), "entering a user namespace of its own")
                try:
                    for path, text in maps:
                        _write(path, text)
                except OSError as exc:
                    raise self.refused(exc.errno or errno.EPERM, "mapping its uid and gid") from None
                if _libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None) != 0:  # nothing mounted here goes out
                    raise self.refused(ctypes.get_errno(), "making its mounts slaves")
                root = self.mount(zone_fd)
                os.dup2(root, zone_fd)  # inheritable: bwrap's --bind-fd binds the overlay where it would the zone
                os.close(root)
            except MountError as exc:
                os.write(report_fd, exc.message.encode(errors="replace"))
                raise
            except Exception as exc:
                os.write(
                    report_fd, f"cannot set up the branch's overlay of {self.lower}: {exc}".encode(errors="replace")
                )
                raise

        return enter_and_mount

    def reported(self, report: bytes) -> MountError:
        """The launcher's error for a mount its view's first process reported refused (``report``: its reason)."""
        return MountError(report.decode(errors="replace") or str(self.refused(errno.EPERM)), errno.EPERM)

    def refused(self, code: int, step: str = "") -> MountError:
        where = f" ({step})" if step else ""
        return MountError(
            f"cannot mount the branch's overlay of {self.lower}{where}: {os.strerror(code)}; {_NEEDS}", code
        )


#: what the overlay needs of the machine
_NEEDS = (
    "a branch's view needs overlayfs (in a user namespace of its own, Linux 5.11, when not run as root) and user.* "
    "attributes on the store's filesystem"
)


def _lower(which: int, value: int) -> None:
    """Set this process's limit ``which`` to ``value``, soft and hard, never above the hard limit it has."""
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _escape(path: str) -> str:
    # overlayfs splits its options at commas and lower layers at colons: both escaped with a backslash
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")
