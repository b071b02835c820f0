"""A private mount namespace for a root launcher, so that what it mounts and unmounts stays its own.

Two reasons, both for root only:

- a workspace mounted in place hides its store under the shared daemon's mount, and bubblewrap binds directories
  by path (``--bind-fd`` too: it checks the fd against the path): in a private namespace the launcher detaches
  that mount from its own view of the tree (the host keeps it), and the store's path leads to the store;
- the view's daemon is mounted there too, out of the host's mount table, and goes with the namespace.

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

from omxfs.errors import MountError

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def private_mounts() -> None:
    """Enter a mount namespace of our own whose mounts propagate nowhere (``unshare -m --propagation private``)."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise _failure("unshare(CLONE_NEWNS)")
    if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise _failure("making / private")


def detach(path: str) -> None:
    """Unmount ``path`` in this (private) namespace only."""
    if _libc.umount2(os.fsencode(path), MNT_DETACH) != 0:
        raise _failure(f"detaching the mount on {path}")


def _failure(what: str) -> MountError:
    code = ctypes.get_errno()
    return MountError(f"cannot set up the view: {what}: {os.strerror(code)}", code or errno.EPERM)
