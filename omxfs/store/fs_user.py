"""Acting on the store as the user who asked: the kernel's permission checks for another uid in a private zone.

A private zone is a POSIX filesystem: between the uids that reach it, mode bits, ownership, sticky
directories and ``chown`` must behave as on the store's own filesystem. Rather than re-implementing those rules,
the daemon makes each change with the caller's filesystem identity, so the store's kernel applies them: the
thread's fsuid, fsgid and supplementary groups are switched for the system calls and switched back after.

All three calls act on the calling thread only (``setfsuid``/``setfsgid`` by nature, ``setgroups`` when made as a
raw system call: glibc's wrapper would change every thread of the daemon), so requests served at the same time
by other threads keep their own identity. Only a daemon running as root can take another identity; any other
daemon acts as itself, as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import platform
import stat
from collections.abc import Callable, Iterator

from omxfs.errors import OSFailure
from omxfs.plain_record import PlainRecord

_libc = ctypes.CDLL(None, use_errno=True)
#: setgroups(2)'s system call number, by machine (the os module has no per-thread setgroups)
_SETGROUPS = {"x86_64": 116, "aarch64": 159, "arm64": 159}.get(platform.machine())


class FsUser(PlainRecord):
    """The filesystem identity of a caller: its uid, gid and supplementary groups."""

    __slots__ = ("gid", "groups", "uid")
    FIELDS = ("uid", "gid", "groups")

    def __init__(self, uid: int, gid: int, groups: tuple[int, ...] = ()) -> None:
        self.uid, self.gid, self.groups = uid, gid, groups


def can_switch() -> bool:
    """Whether this process may act as another user (it runs as root, on a machine whose calls we know)."""
    return os.geteuid() == 0 and _SETGROUPS is not None


def _set_groups(groups: tuple[int, ...]) -> None:
    array = (ctypes.c_uint * max(1, len(groups)))(*groups)
    if _libc.syscall(_SETGROUPS, len(groups), array) != 0:
        code = ctypes.get_errno()
        raise OSFailure(f"setgroups: {os.strerror(code)}", code)


def _set_fs_ids(uid: int, gid: int) -> None:
    _libc.setfsgid(gid)
    _libc.setfsuid(uid)
    # Both calls answer the previous id whatever happens: asking again (-1 changes nothing) says if they took.
    if _libc.setfsuid(-1) != uid or _libc.setfsgid(-1) != gid:
        raise OSFailure(f"cannot act as uid {uid} gid {gid}", errno.EPERM)


def acting_as(user: FsUser | None) -> contextlib.AbstractContextManager[None]:
    """Run the block's system calls as ``user`` on this thread (None: as the daemon), then switch back.

    None, by far the common case (every request of the daemon's own user), costs a shared no-op context."""
    return _AS_DAEMON if user is None else _switched(user)


_AS_DAEMON = contextlib.nullcontext()


@contextlib.contextmanager
def _switched(user: FsUser) -> Iterator[None]:
    own = FsUser(os.geteuid(), os.getegid(), tuple(os.getgroups()))
    try:
        _set_groups(user.groups)
        _set_fs_ids(user.uid, user.gid)
        yield
    finally:
        _set_fs_ids(own.uid, own.gid)
        _set_groups(own.groups)


def groups_of(pid: int, gid: int) -> tuple[int, ...]:
    """The supplementary groups of process (or thread) ``pid``, from ``/proc/<pid>/status``; just ``gid`` if the
    process is gone, so a late request gets no group it might not have had."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"Groups:"):
                    return tuple(int(g) for g in line.split()[1:])
    except (OSError, ValueError):
        pass
    return (gid,)


@functools.cache
def _own_ids() -> tuple[int, int]:
    """The daemon's effective uid and gid: it never changes them (only the per-thread fs ids, and back)."""
    return os.geteuid(), os.getegid()


def caller_user(uid: int, gid: int, pid: int, mapped: Callable[[int], bool]) -> FsUser | None:
    """The identity to act as for a request from ``uid``/``gid``/``pid``: None where the daemon acts as itself,
    for its own user, for a uid the workspace's uid map names (``mapped``: that uid *is* an agent, whose zone and
    rights the zone rule alone decides, as before), or when the daemon cannot switch."""
    if (uid, gid) == _own_ids() or not can_switch() or mapped(uid):
        return None
    return FsUser(uid, gid, groups_of(pid, gid))


def may_write(user: FsUser, st: os.stat_result) -> bool:
    """What ``access(W_OK)`` answers ``user`` for a node with ``st`` on the store: the mode's owner, group or other
    write bit that applies (``access(2)`` checks the real ids, which switching the fs ids would not change)."""
    if user.uid == 0:
        return True
    if st.st_uid == user.uid:
        return bool(st.st_mode & stat.S_IWUSR)
    if st.st_gid == user.gid or st.st_gid in user.groups:
        return bool(st.st_mode & stat.S_IWGRP)
    return bool(st.st_mode & stat.S_IWOTH)
