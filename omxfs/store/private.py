"""Private zones, ``agents/<agent>/``: only the owner writes, everyone reads (SPEC §4, seed FR-1).

Two ways in: whole files by zone-relative path (``write``, ``read``, ``delete``: the CLI and the tools), and the
zone as a tree of real files for the mount (``open_file``, ``mkdir``, ``rename``…: full POSIX for the owner, by
store path ``agents/<owner>/...``). Both check the same rule, and a supervisor's every change is audited.

Through the mount the zone is a POSIX filesystem (issue 15): the zone rule decides *which agent* may change it,
and each change is then made as the calling user (``fs_user.acting_as``), so mode bits, ownership, ``chown``,
sticky directories and set-ID bits between the uids that reach the zone are exactly the store filesystem's.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import NoAttribute, NotFound, NotSupported, OmxError, OSFailure, ZoneDenied
from omxfs.store.acl import equivalent_mode
from omxfs.store.atomic import list_files, open_dir, read_bytes
from omxfs.store.fs_user import FsUser, acting_as
from omxfs.store.layout import ACCESS_ACL, AGENTS, DEFAULT_ACL, OMX_XATTRS, USER_XATTRS
from omxfs.store.names import check_posix_name, relative_path
from omxfs.store.tree import OpenFile, StoreTree, is_write

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

ZONE_DEPTH = 2  # agents/<owner>
_COMMON_FLAGS = os.O_ACCMODE | os.O_APPEND | os.O_SYNC | os.O_DSYNC | os.O_TRUNC
#: the open flags a program's create and open pass on to the store's file (the rest are the daemon's to choose)
CREATE_FLAGS = _COMMON_FLAGS | os.O_EXCL
OPEN_FLAGS = _COMMON_FLAGS


#: how close to the clock both times of a setattr must be to be taken for ``UTIME_NOW`` (see ``_now``)
NOW_WINDOW_NS = 100_000_000


def _now(times: tuple[int, int] | None) -> bool:
    """Whether a setattr's times are "now": pyfuse3 turns ``UTIME_NOW`` into the clock's time before we see it, yet
    only "now" may be set by a user who merely has write permission (an explicit time needs the owner). Both
    times at the clock, within a tenth of a second, are taken for it; a program that gives exactly that time on
    purpose without owning the file then succeeds where the store would refuse it (EPERM)."""
    if times is None:
        return False
    clock = time.time_ns()
    return all(abs(clock - t) < NOW_WINDOW_NS for t in times)


def _drops_set_id(st: os.stat_result | None, mode: int | None) -> bool:
    """Whether ``mode`` is the file's mode with its set-user/group-ID bits cleared: what the kernel asks (as the
    writer) before a write or truncate by a user other than the owner. The store would clear them itself for a
    write made by that user; the daemon writes as root, so it clears them as root, once the writer has shown it
    may write the file."""
    set_id = stat.S_ISUID | stat.S_ISGID
    return (
        mode is not None
        and st is not None  # not stat'ed: no mode was given
        and stat.S_ISREG(st.st_mode)
        and bool(st.st_mode & set_id)
        and stat.S_IMODE(mode) == stat.S_IMODE(st.st_mode) & ~set_id
    )


class PrivateZone:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.root / AGENTS
        self.tree = StoreTree(ws.root)

    def check_write(self, actor: str, owner: str) -> None:
        """The owner writes its own zone; a supervisor anywhere (audited); everyone else is refused."""
        self.ws.require_actor(actor)
        if actor == owner:  # the owner is the actor just checked: no second config read (the mount's hot path)
            return
        self.ws.require_known(owner)
        if not self.ws.is_supervisor(actor):
            raise ZoneDenied(f"{actor} may not write in agents/{owner}/: only {owner} writes there")

    def write(self, actor: str, owner: str, path: str, data: bytes) -> None:
        """Create or overwrite ``agents/<owner>/<path>`` atomically."""
        rel = relative_path(path)
        self.check_write(actor, owner)
        self.ws.writer.write(self.dir, PurePosixPath(owner) / rel, data)
        if actor != owner:
            self.ws.audit(actor, "write", f"agents/{owner}/{rel}")

    def read(self, owner: str, path: str) -> bytes:
        self.ws.require_known(owner)
        return read_bytes(self.dir, PurePosixPath(owner) / relative_path(path))

    def delete(self, actor: str, owner: str, path: str) -> None:
        rel = relative_path(path)
        self.check_write(actor, owner)
        dir_fd = open_dir(self.dir, PurePosixPath(owner) / rel.parent)
        try:
            os.unlink(rel.name, dir_fd=dir_fd)
        except FileNotFoundError:
            raise NotFound(f"agents/{owner}/{rel}: no such file") from None
        finally:
            os.close(dir_fd)
        if actor != owner:
            self.ws.audit(actor, "delete", f"agents/{owner}/{rel}")

    def list(self, owner: str) -> list[str]:
        """Every regular file in the zone, as sorted paths relative to it (symlinks are not followed)."""
        self.ws.require_known(owner)
        return sorted(str(p) for p in list_files(self.dir / owner))

    # -- the zone as a tree of real files (the mount's passthrough) ------------------------------------------------
    # Paths here are store paths, ``agents/<owner>/...``: the mount shows the zone as it is on disk.

    def owner_for(self, actor: str, path: PurePosixPath, *, entry: bool = True) -> str:
        """The owner of the zone ``path`` is in, once ``actor`` may change it; else ZoneDenied (EACCES).

        ``entry``: the change creates, removes or renames ``path`` itself, which must then be inside a zone
        (``agents/<owner>/...``), not a zone's root or ``agents/`` itself.
        """
        depth = len(path.parts)
        if depth < ZONE_DEPTH:
            raise ZoneDenied("agents/: zones are created with `omxfs init WS --agent NAME`, not through the mount")
        if entry and depth == ZONE_DEPTH:
            raise ZoneDenied(f"{path}: an agent's zone cannot be created, removed or renamed through the mount")
        owner = path.parts[1]
        self.check_write(actor, owner)
        return owner

    def may_write(self, actor: str, path: PurePosixPath) -> bool:
        try:
            self.owner_for(actor, path, entry=False)
        except OmxError:
            return False
        return True

    def _audit(self, actor: str, owner: str, action: str, path: PurePosixPath) -> None:
        if actor != owner:
            self.ws.audit(actor, action, str(path))

    def open_file(self, actor: str, path: PurePosixPath, flags: int, user: FsUser | None = None) -> OpenFile:
        """Open for reading by anyone, for writing (or ``O_TRUNC``) by who may write the zone (audited)."""
        owner = self.owner_for(actor, path) if is_write(flags) else None
        with acting_as(user):
            file = self.tree.open(path, flags & OPEN_FLAGS)
        if owner is not None:
            self._audit(actor, owner, "open for writing", path)
        return file

    def create_file(
        self, actor: str, path: PurePosixPath, mode: int, flags: int, user: FsUser | None = None
    ) -> OpenFile:
        owner = self.owner_for(actor, path)
        check_posix_name(path.name)
        with acting_as(user):
            file = self.tree.create(path, flags & CREATE_FLAGS, stat.S_IMODE(mode))
        self._audit(actor, owner, "create", path)
        return file

    def change(
        self,
        actor: str,
        path: PurePosixPath,
        *,
        uid: int | None = None,
        gid: int | None = None,
        size: int | None = None,
        mode: int | None = None,
        atime_ns: int | None = None,
        mtime_ns: int | None = None,
        open_file: OpenFile | None = None,
        user: FsUser | None = None,
    ) -> os.stat_result:
        """setattr, as the store's filesystem allows it to ``user`` (chown included); ``size`` truncates through
        ``open_file`` when the caller has the file open for writing, else through a new descriptor. Returns the
        node's lstat after the change.

        The node is stat'ed first only where the change depends on it (a mode: not on a symlink, nor where it only
        drops set-ID bits; one time of two: the other is kept): ``touch``, ``tar`` and ``cp -a`` set both times."""
        owner = self.owner_for(actor, path, entry=False)
        st = self.tree.lstat(path) if mode is not None or (atime_ns is None) != (mtime_ns is None) else None
        if st is not None and mode is not None and stat.S_ISLNK(st.st_mode):
            raise NotSupported(f"{path}: a symlink has no mode of its own")
        times = None
        if atime_ns is not None and mtime_ns is not None:
            times = (atime_ns, mtime_ns)
        elif st is not None and (atime_ns is not None or mtime_ns is not None):
            times = (st.st_atime_ns if atime_ns is None else atime_ns, st.st_mtime_ns if mtime_ns is None else mtime_ns)
        chown = None if uid is None and gid is None else (-1 if uid is None else uid, -1 if gid is None else gid)
        drop_set_id = False
        with acting_as(user):
            if size is not None:
                if open_file is not None:
                    open_file.truncate(size)
                else:
                    self.tree.truncate(path, size)
            try:
                changed = self.tree.change(
                    path, mode=mode, times_ns=times, owner=chown, now=user is not None and _now(times)
                )
            except OSFailure as exc:
                if exc.errno != errno.EPERM or user is None or times or chown or not _drops_set_id(st, mode):
                    raise
                self.tree.open(path, os.O_WRONLY).close()  # only a user who may write the file drops its set-ID bits
                drop_set_id = True
        if drop_set_id:
            changed = self.tree.change(path, mode=mode, times_ns=None)  # as the daemon: see _drops_set_id
        self._audit(actor, owner, "setattr", path)
        return changed

    def mkdir(self, actor: str, path: PurePosixPath, mode: int, user: FsUser | None = None) -> None:
        owner = self.owner_for(actor, path)
        check_posix_name(path.name)
        with acting_as(user):
            self.tree.mkdir(path, stat.S_IMODE(mode))
        self._audit(actor, owner, "mkdir", path)

    def mknod(self, actor: str, path: PurePosixPath, mode: int, rdev: int, user: FsUser | None = None) -> None:
        """A FIFO, a UNIX socket (``bind``) or a device node, where the store's filesystem allows it."""
        owner = self.owner_for(actor, path)
        check_posix_name(path.name)
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
            raise NotSupported(f"{path}: mknod makes FIFOs, sockets and device nodes (mode {mode:o})")
        with acting_as(user):
            self.tree.mknod(path, mode, rdev)
        self._audit(actor, owner, "mknod", path)

    def unlink(self, actor: str, path: PurePosixPath, user: FsUser | None = None, *, most: int | None = None) -> bool:
        """Remove ``path``; with ``most``, only if it is no larger than ``most`` bytes (``StoreTree.unlink``):
        False, and nothing done or audited, if it is."""
        owner = self.owner_for(actor, path)
        with acting_as(user):
            if not self.tree.unlink(path, most):
                return False
        self._audit(actor, owner, "unlink", path)
        return True

    def rmdir(self, actor: str, path: PurePosixPath, user: FsUser | None = None) -> None:
        owner = self.owner_for(actor, path)
        with acting_as(user):
            self.tree.rmdir(path)
        self._audit(actor, owner, "rmdir", path)

    def rename(
        self, actor: str, old: PurePosixPath, new: PurePosixPath, flags: int, user: FsUser | None = None
    ) -> None:
        old_owner = self.owner_for(actor, old)
        new_owner = self.owner_for(actor, new)
        check_posix_name(new.name)
        with acting_as(user):
            self.tree.rename(old, new, flags)
        self._audit(actor, old_owner, f"rename to {new}", old)
        if new_owner != old_owner:
            self._audit(actor, new_owner, f"rename from {old}", new)

    def symlink(self, actor: str, path: PurePosixPath, target: bytes, user: FsUser | None = None) -> None:
        owner = self.owner_for(actor, path)
        check_posix_name(path.name)
        with acting_as(user):
            self.tree.symlink(path, target)
        self._audit(actor, owner, "symlink", path)

    def link(self, actor: str, existing: PurePosixPath, new: PurePosixPath, user: FsUser | None = None) -> None:
        owner = self.owner_for(actor, new)
        check_posix_name(new.name)
        if len(existing.parts) <= ZONE_DEPTH or existing.parts[1] != owner:
            # A link to another zone's file would let the owner of this zone write into that one.
            raise ZoneDenied(f"{new}: a hard link cannot join two zones ({existing} is not in agents/{owner}/)")
        with acting_as(user):
            self.tree.link(existing, new)
        self._audit(actor, owner, f"link to {existing}", new)

    def _xattr_owner(self, actor: str, path: PurePosixPath, name: str) -> str:
        owner = self.owner_for(actor, path, entry=False)
        if not name.startswith(USER_XATTRS):
            raise NotSupported(f"{path}: only user.* attributes are kept ({name})")
        return owner

    def set_xattr(self, actor: str, path: PurePosixPath, name: str, value: bytes, user: FsUser | None = None) -> None:
        """Set a ``user.*`` attribute. The generated ``user.omx.*`` ones are never listed, so no copy sees them, but
        a copy made from a zone that lists them (or a program that names one) sets them here: accepted and
        ignored, since omxfs generates them (issue 15: an xattr-preserving copy must never fail on them).
        An access ACL that is only a mode (how ``cp -a`` sets modes) is that chmod (``omxfs.store.acl``)."""
        mode = equivalent_mode(value) if name == ACCESS_ACL else None
        if mode is not None:
            self.change(actor, path, mode=stat.S_IMODE(self.tree.lstat(path).st_mode) & ~0o777 | mode, user=user)
            return
        owner = self._xattr_owner(actor, path, name)
        if name.startswith(OMX_XATTRS):
            return
        with acting_as(user):
            self.tree.set_xattr(path, name, value)
        self._audit(actor, owner, f"setxattr {name}", path)

    def remove_xattr(self, actor: str, path: PurePosixPath, name: str, user: FsUser | None = None) -> None:
        if name in (ACCESS_ACL, DEFAULT_ACL):  # none is kept (see ``set_xattr``): ``cp -a`` removes a directory's
            self.owner_for(actor, path, entry=False)  # default ACL after setting its mode, and must hear "none"
            raise NoAttribute(f"{path}: no ACL is kept ({name})")
        owner = self._xattr_owner(actor, path, name)
        if name.startswith(OMX_XATTRS):
            return  # generated, not stored: nothing to remove (see ``set_xattr``)
        with acting_as(user):
            self.tree.remove_xattr(path, name)
        self._audit(actor, owner, f"removexattr {name}", path)
