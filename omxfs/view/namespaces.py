"""A mount namespace of its own for a root launcher, so that what it mounts and unmounts stays its own.

Two reasons, both for root only:

- a workspace mounted in place hides its store under the shared daemon's mount, and bubblewrap binds directories
  by path (``--bind-fd`` too: it checks the fd against the path): in a private namespace the launcher detaches
  that mount from its own view of the tree (the host keeps it), and the store's path leads to the store;
- the view's daemon is mounted there too, out of the host's mount table, and goes with the namespace.

The namespace is a *slave* of the host's (``unshare -m --propagation slave``), not private: it starts as a copy
of every host mount, other workspaces' FUSE mounts among them, and a copy that the host's unmount does not reach
keeps that mount's FUSE connection, and its daemon, alive for as long as the view runs (``omxfs umount`` waited,
then failed). As a slave it receives the host's unmounts (and mounts) and sends none back. That needs the
host's mounts to be shared, which many containers' are not, so the launcher also detaches every FUSE mount of its
copy that the view does not show (``drop_fuse_mounts``): nothing of another workspace's daemon is held here.

An unprivileged launcher cannot do either (the mounts it would copy into a namespace of its own are locked), so
it stays in the host's namespace; its daemon's mount is a private 0700 directory, unmounted by ``cleanup.py``
should the launcher be killed.

``unshare(CLONE_NEWNS)`` must run before the process has a second thread (threads share a file-system context
with it); ``omxfs run`` calls it before trio or pyfuse3 start any.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from collections.abc import Iterable

from omxfs.errors import MountError
from omxfs.fuse.mounts import mount_table

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_SLAVE = 1 << 19
MNT_DETACH = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def private_mounts() -> None:
    """Enter a mount namespace of our own whose mounts propagate nowhere, and which the host's mounts and unmounts
    still reach (``unshare -m --propagation slave``)."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise _failure("unshare(CLONE_NEWNS)")
    if _libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None) != 0:
        raise _failure("making / a slave of the host's mounts")


def detach(path: str) -> None:
    """Unmount ``path`` in this namespace only (a slave's unmounts do not propagate)."""
    if _libc.umount2(os.fsencode(path), MNT_DETACH) != 0:
        raise _failure(f"detaching the mount on {path}")


def drop_fuse_mounts(shown: Iterable[str]) -> None:
    """Detach, in this namespace only, every FUSE mount that neither lies in nor holds a path of ``shown`` (what the
    view binds: system directories, omx's own, the caller's binds, the store): a copy here would keep its daemon
    serving after the host unmounted it. One that cannot be detached is left: the view works all the same."""
    keep = list(shown)
    for entry in mount_table():
        fuse = entry.fstype in ("fuse", "fuseblk") or entry.fstype.startswith("fuse.")
        point = entry.mountpoint
        if fuse and not any(_within(point, path) or _within(path, point) for path in keep):
            _libc.umount2(os.fsencode(point), MNT_DETACH)  # EINVAL: gone with a mount above it, detached first


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _failure(what: str) -> MountError:
    code = ctypes.get_errno()
    return MountError(f"cannot set up the view: {what}: {os.strerror(code)}", code or errno.EPERM)
