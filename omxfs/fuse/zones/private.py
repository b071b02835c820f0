"""Private zones through the mount, ``agents/<agent>/``: full POSIX for the owner, read-only for everyone else.

The owner (or a supervisor, whose every change is audited with ``ws.audit``) may do whatever a program does in
a directory of its own: create, write, truncate, rename over, link, symlink, chmod, touch, set ``user.*``
xattrs. Editors, git, sqlite and Python's tempfile-then-replace all need exactly that. Everyone else reads and
lists; each change fails with EACCES and leaves the disk untouched, because the rule is checked (by the
store's own ``ws.private.check_write``) before any system call that changes something.

``agents/`` itself only lists the zones: they are created by ``omxfs init WS --agent NAME``, never through the
mount, and a zone's root cannot be removed or renamed. Symlinks may be created with any target, because the
daemon never follows them (the walk in ``read_only.StoreTree`` refuses symlinks on the way); a client's kernel
resolves them, and the rules of wherever they lead apply there.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from typing import TYPE_CHECKING

from omxfs.errors import NoAttribute, NotPermitted, NotSupported, OmxError, ZoneDenied, from_os_error, os_errors
from omxfs.fuse.zones.base import AttrChanges, Caller, Handle, ViewPath
from omxfs.fuse.zones.read_only import INLINE_READS, FdHandle, ReadOnlyHandler, is_write
from omxfs.store import layout
from omxfs.store.layout import OMX_XATTRS, USER_XATTRS
from omxfs.store.names import AGENT_NAME, check_component

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

AGENTS = ViewPath(layout.AGENTS)
ZONE_DEPTH = 2  # agents/<owner>
_COMMON_FLAGS = os.O_ACCMODE | os.O_APPEND | os.O_SYNC | os.O_DSYNC | os.O_TRUNC
CREATE_FLAGS = _COMMON_FLAGS | os.O_EXCL
OPEN_FLAGS = _COMMON_FLAGS
#: changes that are one or two system calls on the store (when the owner makes them: no audit record to fsync)
INLINE_CHANGES = frozenset({"open-write", "create", "mkdir", "symlink", "setattr", "unlink"})
#: an unlink frees the file's blocks: only files up to this size are removed on the loop
INLINE_UNLINK_SIZE = 1 << 20
KEEP_CACHE_PATHS = 4096  # files whose last-open signature is remembered for keep_cache

_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = _libc.renameat2
_renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
_renameat2.restype = ctypes.c_int


def renameat2(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str, flags: int) -> None:
    """renameat2(2), which the os module lacks: RENAME_NOREPLACE and RENAME_EXCHANGE, atomically."""
    if _renameat2(src_dir_fd, os.fsencode(src), dst_dir_fd, os.fsencode(dst), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


class PrivateHandler(ReadOnlyHandler):
    """``agents/`` and below. Another daemon or the CLI may change a zone at any time: nothing here is stable."""

    def __init__(self, ws: Workspace) -> None:
        super().__init__(ws)
        self._opened: dict[ViewPath, tuple[int, int, int, int]] = {}
        self._opened_lock = threading.Lock()  # handlers run on the loop and in worker threads

    def _keep_cache(self, path: ViewPath, st: os.stat_result) -> bool:
        """Whether the kernel may keep this file's pages from earlier opens: only if the file is exactly as it
        was at its last open through this mount (same inode, size, mtime and ctime). A change made anywhere else,
        by another daemon or on the store directly, changes that signature, and the open then drops the cache."""
        signature = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with self._opened_lock:
            unchanged = self._opened.get(path) == signature
            self._opened.pop(path, None)
            if len(self._opened) >= KEEP_CACHE_PATHS:
                del self._opened[next(iter(self._opened))]
            self._opened[path] = signature
        return unchanged

    def is_stable(self, parts: tuple[str, ...], st: os.stat_result) -> bool:
        return False

    def owner_of(self, path: ViewPath) -> str | None:
        return path.parts[1] if len(path.parts) >= ZONE_DEPTH else None

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool:
        """Metadata reads, and the owner's small changes, run on the loop (``ops.Inline``).

        A supervisor's change appends (and fsyncs) an audit record, a truncation or a rename over a file may free
        many blocks, and so may the unlink of a large file: those go to a worker thread.
        """
        if op in INLINE_READS or op in ("getxattr", "listxattr"):  # the owner is the path's, no history to read
            return True
        if op not in INLINE_CHANGES or caller.agent != self.owner_of(path):
            return False
        if op == "unlink":
            try:
                st = self.tree.lstat(path)
            except OmxError:
                return True  # the unlink itself reports it
            return st.st_size <= INLINE_UNLINK_SIZE
        return True

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        return [n for n in self.tree.listdir(path) if self.shown(path, n)]

    def shown(self, path: ViewPath, name: str) -> bool:
        """In ``agents/`` only zones are listed: a stray file or a badly named directory on the store is no agent."""
        return path != AGENTS or AGENT_NAME.fullmatch(name) is not None

    # -- the rule ----------------------------------------------------------------------------------------------

    def _check(self, caller: Caller, path: ViewPath, *, entry: bool = True) -> str:
        """The owner of the zone ``path`` is in, once ``caller`` may change it; else ZoneDenied (EACCES).

        ``entry``: the change creates, removes or renames ``path`` itself, which must then be inside a zone
        (``agents/<owner>/...``), not a zone's root or ``agents/`` itself.
        """
        depth = len(path.parts)
        if depth < ZONE_DEPTH:
            raise ZoneDenied("agents/: zones are created with `omxfs init WS --agent NAME`, not through the mount")
        if entry and depth == ZONE_DEPTH:
            raise ZoneDenied(f"{path}: an agent's zone cannot be created, removed or renamed through the mount")
        owner = path.parts[1]
        self.ws.private.check_write(caller.agent, owner)
        return owner

    def _audit(self, caller: Caller, owner: str, action: str, path: ViewPath) -> None:
        if caller.agent != owner:
            self.ws.audit(caller.agent, action, str(path))

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        try:
            self._check(caller, path, entry=False)
        except OmxError:
            return False
        return True

    # -- files -------------------------------------------------------------------------------------------------

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        owner = self._check(caller, path) if is_write(flags) else None
        fd = self.tree.open(path, flags & OPEN_FLAGS)
        try:
            keep = self._keep_cache(path, os.fstat(fd)) and not flags & os.O_TRUNC
        except OSError:
            os.close(fd)
            raise
        if owner is not None:
            self._audit(caller, owner, "open for writing", path)
        return FdHandle(caller, fd, path, writable=(flags & os.O_ACCMODE) != os.O_RDONLY, keep_cache=keep)

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        owner = self._check(caller, path)
        check_component(path.name)
        perm = stat.S_IMODE(mode)
        base = (flags & CREATE_FLAGS) | os.O_NOFOLLOW | os.O_CLOEXEC
        with self.tree.parent(path) as dir_fd, os_errors(path):
            try:
                fd = os.open(path.name, base | os.O_CREAT | os.O_EXCL, perm, dir_fd=dir_fd)
                os.fchmod(fd, perm)  # the kernel applied the caller's umask; the daemon's must not apply again
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                fd = os.open(path.name, base, dir_fd=dir_fd)  # created meanwhile by someone else: open it
        self._audit(caller, owner, "create", path)
        return FdHandle(caller, fd, path, writable=(flags & os.O_ACCMODE) != os.O_RDONLY)

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> None:
        owner = self._check(caller, path, entry=False)
        st = self.tree.lstat(path)
        if (changes.uid is not None and changes.uid != st.st_uid) or (
            changes.gid is not None and changes.gid != st.st_gid
        ):
            raise NotPermitted(f"{path}: ownership is not changed through the mount")
        if changes.size is not None:
            self._truncate(path, changes.size, handle)
        with self.tree.parent(path) as dir_fd, os_errors(path):
            if changes.mode is not None:
                if stat.S_ISLNK(st.st_mode):
                    raise NotSupported(f"{path}: a symlink has no mode of its own")
                os.chmod(path.name, stat.S_IMODE(changes.mode), dir_fd=dir_fd, follow_symlinks=False)
            if changes.atime_ns is not None or changes.mtime_ns is not None:
                times = (
                    st.st_atime_ns if changes.atime_ns is None else changes.atime_ns,
                    st.st_mtime_ns if changes.mtime_ns is None else changes.mtime_ns,
                )
                os.utime(path.name, ns=times, dir_fd=dir_fd, follow_symlinks=False)
        self._audit(caller, owner, "setattr", path)

    def _truncate(self, path: ViewPath, size: int, handle: Handle | None) -> None:
        if isinstance(handle, FdHandle) and handle.writable:
            handle.truncate(size)
            return
        fd = self.tree.open(path, os.O_WRONLY)
        try:
            with os_errors(path):
                os.ftruncate(fd, size)
        finally:
            os.close(fd)

    # -- names -------------------------------------------------------------------------------------------------

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        owner = self._check(caller, path)
        check_component(path.name)
        with self.tree.parent(path) as dir_fd, os_errors(path):
            os.mkdir(path.name, stat.S_IMODE(mode), dir_fd=dir_fd)
            os.chmod(path.name, stat.S_IMODE(mode), dir_fd=dir_fd, follow_symlinks=False)
        self._audit(caller, owner, "mkdir", path)

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        owner = self._check(caller, path)
        with self.tree.parent(path) as dir_fd, os_errors(path):
            os.unlink(path.name, dir_fd=dir_fd)
        self._audit(caller, owner, "unlink", path)

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        owner = self._check(caller, path)
        with self.tree.parent(path) as dir_fd, os_errors(path):
            os.rmdir(path.name, dir_fd=dir_fd)
        self._audit(caller, owner, "rmdir", path)

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        old_owner = self._check(caller, old)
        new_owner = self._check(caller, new)
        check_component(new.name)
        with self.tree.parent(old) as src_fd, self.tree.parent(new) as dst_fd, os_errors(old):
            if flags:
                renameat2(src_fd, old.name, dst_fd, new.name, flags)
            else:
                os.rename(old.name, new.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        self._audit(caller, old_owner, f"rename to {new}", old)
        if new_owner != old_owner:
            self._audit(caller, new_owner, f"rename from {old}", new)

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        owner = self._check(caller, path)
        check_component(path.name)
        with self.tree.parent(path) as dir_fd, os_errors(path):
            os.symlink(target, os.fsencode(path.name), dir_fd=dir_fd)
        self._audit(caller, owner, "symlink", path)

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        owner = self._check(caller, new)
        check_component(new.name)
        if len(existing.parts) <= ZONE_DEPTH or existing.parts[1] != owner:
            # A link to another zone's file would let the owner of this zone write into that one.
            raise ZoneDenied(f"{new}: a hard link cannot join two zones ({existing} is not in agents/{owner}/)")
        with self.tree.parent(existing) as src_fd, self.tree.parent(new) as dst_fd, os_errors(new):
            os.link(existing.name, new.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        self._audit(caller, owner, f"link to {existing}", new)

    # -- extended attributes -----------------------------------------------------------------------------------

    def _xattr_check(self, caller: Caller, path: ViewPath, name: str) -> str:
        owner = self._check(caller, path, entry=False)
        if name.startswith(OMX_XATTRS):
            raise ZoneDenied(f"{path}: {name} is generated by omxfs and read-only")
        if not name.startswith(USER_XATTRS):
            raise NotSupported(f"{path}: only user.* attributes are kept ({name})")
        return owner

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        owner = self._xattr_check(caller, path, name)
        with self.tree.xattr_target(path) as target, os_errors(path):
            os.setxattr(target, name, value, follow_symlinks=False)
        self._audit(caller, owner, f"setxattr {name}", path)

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        owner = self._xattr_check(caller, path, name)
        with self.tree.xattr_target(path) as target:
            try:
                os.removexattr(target, name, follow_symlinks=False)
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    raise NoAttribute(f"{path}: no attribute {name}") from None
                raise from_os_error(exc, path) from exc
        self._audit(caller, owner, f"removexattr {name}", path)
