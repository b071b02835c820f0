"""Private zones through the mount, ``agents/<agent>/``: full POSIX for the owner, read-only for everyone else.

The owner (or a supervisor, whose every change is audited with ``ws.audit``) may do whatever a program does in
a directory of its own: create, write, truncate, rename over, link, symlink, mknod, chmod, chown, touch, set
``user.*`` xattrs. Editors, git, sqlite, tar and Python's tempfile-then-replace all need exactly that. Everyone
else reads and lists; each change fails with EACCES and leaves the disk untouched, because the store checks the rule
(``PrivateZone.owner_for``) before any system call that changes something, and does the change itself.

Between uids the zone is a POSIX filesystem: a caller whose uid the uid map is silent on acts on the
store as itself (``user_of``, ``omxfs.store.fs_user``), so mode bits, ownership and ``chown`` are the store's;
``user.omx.owner`` is read by name but never listed, so copies that keep xattrs neither fail on it nor carry it
away.

``agents/`` itself only lists the zones: they are created by ``omxfs init WS --agent NAME``, never through the
mount, and a zone's root cannot be removed or renamed. Symlinks may be created with any target, because the
daemon never follows them (the walk in ``omxfs.store.tree.StoreTree`` refuses symlinks on the way); a client's kernel
resolves them, and the rules of wherever they lead apply there.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import trio

from omxfs.errors import OmxError
from omxfs.fuse.capabilities import NotInline
from omxfs.fuse.zones.base import Attr, AttrChanges, Caller, Handle, ViewPath
from omxfs.fuse.zones.branch_dirs import branch_entries
from omxfs.fuse.zones.read_only import INLINE_READS, FdHandle, ReadOnlyHandler, attr_of
from omxfs.store import layout
from omxfs.store.fs_user import FsUser, acting_as, caller_user, may_write
from omxfs.store.layout import BRANCH_MARK, OMX_XATTRS
from omxfs.store.names import AGENT_NAME
from omxfs.store.private import ZONE_DEPTH

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

AGENTS = ViewPath(layout.AGENTS)
#: changes that are one or two system calls on the store (when the owner makes them: no audit record to fsync)
INLINE_CHANGES = frozenset(
    {"open-write", "create", "mkdir", "symlink", "link", "setattr", "setxattr", "unlink", "rmdir"}
)
#: an unlink frees the file's blocks: only files up to this size are removed on the loop
INLINE_UNLINK_SIZE = 1 << 20
KEEP_CACHE_PATHS = 4096  # files whose last-open signature is remembered for keep_cache


class PrivateHandler(ReadOnlyHandler):
    """``agents/`` and below. Another daemon or the CLI may change a zone at any time: nothing here is stable."""

    def __init__(self, ws: Workspace) -> None:
        super().__init__(ws)
        #: by path string (hashed and compared in C, as a path object is not), oldest first: the C ``OrderedDict``
        #: drops its oldest entry at once, where a dict's first entry is found past every one deleted before it
        self._opened: OrderedDict[str, tuple[int, int, int, int]] = OrderedDict()
        self._opened_lock = threading.Lock()  # handlers run on the loop and in worker threads

    def _keep_cache(self, path: ViewPath, st: os.stat_result) -> bool:
        """Whether the kernel may keep this file's pages from earlier opens: only if the file is exactly as it
        was at its last open through this mount (same inode, size, mtime and ctime). A change made anywhere else,
        by another daemon or on the store directly, changes that signature, and the open then drops the cache."""
        signature = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        key = str(path)
        with self._opened_lock:
            unchanged = self._opened.pop(key, None) == signature
            self._opened[key] = signature  # the newest, at the end
            if len(self._opened) > KEEP_CACHE_PATHS:
                self._opened.popitem(last=False)
        return unchanged

    def is_stable(self, parts: tuple[str, ...], st: os.stat_result) -> bool:
        return False

    def user_of(self, caller: Caller) -> FsUser | None:
        """Whom the store's filesystem sees making ``caller``'s request: a uid the uid map is silent on as itself
        (its uid, gid and groups), anyone else as the daemon (``fs_user.caller_user``)."""
        return caller_user(caller.uid, caller.gid, caller.pid, self._mapped)

    def _mapped(self, uid: int) -> bool:
        return uid in self.ws.config.uids

    def _give_to_mapped_uid(self, caller: Caller, path: ViewPath) -> None:
        """What a uid the uid map names creates is its own. Such a uid acts as the daemon (the zone rule is its whole
        check, so it writes its zone although ``omxfs init`` made it root's), but a node owned by root in its own
        zone broke its tools: git refuses a repository its user does not own ("dubious ownership"), as ssh refuses
        keys and ``find -user`` finds nothing. Only a daemon running as root can give a node away."""
        if caller.uid != 0 and os.geteuid() == 0 and self._mapped(caller.uid):
            self.tree.change(path, mode=None, times_ns=None, owner=(caller.uid, caller.gid))

    def owner_of(self, path: ViewPath) -> str | None:
        return path.parts[1] if len(path.parts) >= ZONE_DEPTH else None

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool:
        """Metadata reads, and the owner's small changes, run on the loop (``Inline``).

        A supervisor's change appends (and fsyncs) an audit record, a truncation or a rename over a file may free
        many blocks: those go to a worker thread. So may the unlink of a large file, which only the unlink's own
        walk finds out: it then leaves the file and raises ``NotInline`` (see ``unlink``). A listing (``readdir``)
        likewise gives up on a large directory once it has counted the names (``listdir_attrs``).
        """
        if op in INLINE_READS or op in ("readdir", "getxattr", "listxattr"):  # xattrs: owner from the path, no history
            return True
        return op in INLINE_CHANGES and caller.agent == self.owner_of(path)

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        with acting_as(self.user_of(caller)):
            names = [n for n in self.tree.listdir(path) if self.shown(path, n)]
        if len(path.parts) == ZONE_DEPTH:
            names = sorted(names + [name for name, _ in branch_entries(self.ws, path.parts[1])])
        return names

    def listdir_attrs(self, caller: Caller, path: ViewPath) -> list[tuple[str, Attr]]:
        """The zone's entries, and in a zone's root its pending branches, ``@NAME`` (``branch_dirs``): read after
        the zone's own, so that whoever may not list the zone learns none of its branches either."""
        with acting_as(self.user_of(caller)):
            listing = super().listdir_attrs(caller, path)
        if len(path.parts) == ZONE_DEPTH:
            listing = sorted(listing + branch_entries(self.ws, path.parts[1]), key=lambda entry: entry[0])
        return listing

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        """The stored ``user.*`` attributes; the generated ``user.omx.owner`` is read by name only, so no copy
        carries it (an xattr-preserving copy out of the mount is a plain file)."""
        return [n for n in self.tree.user_xattrs(path) if not n.startswith(OMX_XATTRS)]

    def shown(self, path: ViewPath, name: str) -> bool:
        """In ``agents/`` only zones are listed: a stray file or a badly named directory on the store is no agent. In a
        zone's root a name starting with ``@`` is not: those names show the zone's branches (``branch_dirs``), and one
        the zone has itself (made natively in a view) must not pass for one."""
        if path == AGENTS:
            return AGENT_NAME.fullmatch(name) is not None
        return not name.startswith(BRANCH_MARK) or len(path.parts) != ZONE_DEPTH

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        """The zone rule for the agent, then, for a uid that acts as itself, the write bit that applies to it."""
        if not self.ws.private.may_write(caller.agent, path):
            return False
        user = self.user_of(caller)
        if user is None:
            return True
        try:
            return may_write(user, self.tree.lstat(path))
        except OmxError:
            return False

    # -- files -------------------------------------------------------------------------------------------------

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        file = self.ws.private.open_file(caller.agent, path, flags, self.user_of(caller))
        try:
            keep = self._keep_cache(path, file.opened or file.fstat()) and not flags & os.O_TRUNC
        except OmxError:
            file.close()
            raise
        return FdHandle(caller, file, path, writable=(flags & os.O_ACCMODE) != os.O_RDONLY, keep_cache=keep)

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        file = self.ws.private.create_file(caller.agent, path, mode, flags, self.user_of(caller))
        self._give_to_mapped_uid(caller, path)
        return FdHandle(caller, file, path, writable=(flags & os.O_ACCMODE) != os.O_RDONLY)

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> Attr:
        """The change, answered with the node's attributes from its own walk (the ops layer needs no getattr)."""
        st = self.ws.private.change(
            caller.agent,
            path,
            uid=changes.uid,
            gid=changes.gid,
            size=changes.size,
            mode=changes.mode,
            atime_ns=changes.atime_ns,
            mtime_ns=changes.mtime_ns,
            open_file=handle.file if isinstance(handle, FdHandle) and handle.writable else None,
            user=self.user_of(caller),
        )
        return attr_of(st)

    # -- names -------------------------------------------------------------------------------------------------

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        self.ws.private.mkdir(caller.agent, path, mode, self.user_of(caller))
        self._give_to_mapped_uid(caller, path)

    def mknod(self, caller: Caller, path: ViewPath, mode: int, rdev: int) -> None:
        self.ws.private.mknod(caller.agent, path, mode, rdev, self.user_of(caller))
        self._give_to_mapped_uid(caller, path)

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        """On the loop only a file up to ``INLINE_UNLINK_SIZE`` is removed (stat and unlink from one walk); a larger
        one raises ``NotInline``, and the runner runs the request again in a worker thread."""
        most = INLINE_UNLINK_SIZE if trio.lowlevel.in_trio_run() else None  # a worker thread has no trio run
        if not self.ws.private.unlink(caller.agent, path, self.user_of(caller), most=most):
            raise NotInline(f"{path}: larger than {INLINE_UNLINK_SIZE} bytes")

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        self.ws.private.rmdir(caller.agent, path, self.user_of(caller))

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        self.ws.private.rename(caller.agent, old, new, flags, self.user_of(caller))

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        self.ws.private.symlink(caller.agent, path, target, self.user_of(caller))
        self._give_to_mapped_uid(caller, path)

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        self.ws.private.link(caller.agent, existing, new, self.user_of(caller))

    # -- extended attributes -----------------------------------------------------------------------------------

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        self.ws.private.set_xattr(caller.agent, path, name, value, self.user_of(caller))

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        self.ws.private.remove_xattr(caller.agent, path, name, self.user_of(caller))
