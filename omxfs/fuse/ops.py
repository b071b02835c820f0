"""The pyfuse3 ``Operations``: thin, async, no policy (STYLE lessons 1-3).

Each op resolves the caller (pyfuse3 gives a request context to lookup, getattr, setattr, readlink, mknod,
mkdir, unlink, rmdir, symlink, rename, link, open, opendir, create, access, statfs and the xattr ops; not to
read, write, flush, fsync, release, readdir, releasedir, fsyncdir, forget, so open/create/opendir record the
caller on the handle), turns the inode into a view path, asks the router for the zone handler and has
``runner.Runner`` run it: in a worker thread, or on the loop where the handler vouches the work is cheap
(``capabilities.Inline``). Errors are translated there, in one place.

Lookup counts are kept in ``inodes.InodeTable``; every reply that carries an entry counts one.

Every request is counted by operation (``requests``), before any work: the root's virtual xattr
``user.omx.requests`` answers the counts as JSON, uncounted itself and never listed.

Kernel caching: nodes that cannot change behind the kernel's back (``Attr.stable``) are cached for a minute,
with their pages; so are nodes named in a directory the ``StoreWatch`` watches (the private zones on a local
store: every change, also those made behind the daemon's back, is invalidated explicitly within 0.2 s; the
directory is watched before its entries are read), and there the absence of a name too (a negative entry, which the
watch invalidates when the name is created behind the daemon's back); everything else for half a second, since
other daemons and the CLI write the store directly;
nodes whose handler shows each caller its own (``getattr(path, caller=...)``) not at all, since the kernel's
caches are shared by all callers.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast

import pyfuse3

from omxfs.errors import NotFound, NotSupported, OmxError
from omxfs.fuse.capabilities import (
    CallerViews,
    Inline,
    ListsWithAttrs,
    NodeMaker,
    WriteChecker,
    has_inline,
    is_uncached,
    views_per_caller,
)
from omxfs.fuse.entries import OpenDir, OpenFile, Request, Target, absent_entry, entry_attributes
from omxfs.fuse.identity import Identity
from omxfs.fuse.inodes import ROOT_INODE, InodeTable, NodeState
from omxfs.fuse.router import Router, view_path
from omxfs.fuse.runner import Runner
from omxfs.fuse.watch import StoreWatch
from omxfs.fuse.zones.base import ROOT, Attr, AttrChanges, Caller, Handle, ViewPath
from omxfs.store.layout import REQUESTS, USER_XATTRS

T = TypeVar("T")

#: readdirplus entries whose attributes are fetched in one worker-thread trip
READDIR_BATCH = 64
#: reads and writes up to this size on a handle that allows it run on the loop (page-cache speed)
INLINE_IO = 64 * 1024

_USER_XATTRS = USER_XATTRS.encode()
_REQUESTS = REQUESTS.encode()

ReaddirReply = Callable[[pyfuse3.ReaddirToken, bytes, pyfuse3.EntryAttributes, int], bool]


class Operations(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False  # every write reaches the store before write() returns to the program
    enable_acl = False

    def __init__(
        self,
        router: Router,
        identity: Identity,
        inodes: InodeTable,
        log: logging.Logger,
        *,
        store_root: Path | None = None,
        readdir_reply: ReaddirReply | None = None,
        thread_limit: int = 64,
        on_init: Callable[[], None] | None = None,
        watch: StoreWatch | None = None,
    ) -> None:
        super().__init__()
        self.router = router
        self.identity = identity
        self.inodes = inodes
        self.log = log
        self.store_root = store_root
        self._reply: ReaddirReply = readdir_reply or pyfuse3.readdir_reply
        self._files: dict[int, OpenFile] = {}
        self._dirs: dict[int, OpenDir] = {}
        self._next_fh = 1
        self.runner = Runner(identity, log, thread_limit)
        self._on_init = on_init
        self.watch = watch
        #: requests received, by operation: what a workload costs the daemon, read through the root's
        #: virtual ``REQUESTS`` xattr and logged at unmount; one dict increment per request
        self.requests: Counter[str] = Counter()

    def init(self) -> None:
        """The kernel's INIT request arrived (its reply follows): from now on the mount answers."""
        if self._on_init is not None:
            self._on_init()

    # -- helpers -----------------------------------------------------------------------------------------------

    def _inline(self, op: str, path_of: Callable[[], ViewPath]) -> Callable[[Caller], bool]:
        """Whether the handler of ``path_of()`` runs ``op`` for a caller on the loop (see ``Inline``)."""

        def decide(caller: Caller) -> bool:
            path = path_of()
            handler = self.router.route(path)
            return has_inline(type(handler)) and cast(Inline, handler).inline(op, caller, path)

        return decide

    @staticmethod
    def _inline_io(handle: Handle, op: str, size: int = 0, end: int = 0) -> bool:
        """Whether a handle's small ``op`` (read, write, flush, release) runs on the loop: the handle's own
        ``inline(op, end)`` says so (``end``: where a write ends), handles without one always use a thread. A store
        file's handle reads only from the page cache there (``read_cached``) and writes to the page cache
        (buffered writes cannot be asked not to wait on this kernel's ext4, so heavy dirty-page throttling is the
        one wait left); a staged file's reads and writes are memory copies, its closes cheap unless they commit."""
        inline = getattr(handle, "inline", None)
        return size <= INLINE_IO and inline is not None and inline(op, end) is True

    def _child(self, parent: int, name: bytes) -> ViewPath:
        base = self.inodes.path(parent)
        if name == b".":
            return base
        if name == b"..":
            return base.parent if base != ROOT else ROOT
        return view_path(base, name)

    def _child_once(self, parent: int, name: bytes) -> Callable[[], ViewPath]:
        """``_child(parent, name)``, made on first use and kept: the inline decision and the work both need it.
        (A closure rather than ``functools.cache``, whose wrapper costs more to make than the path.)"""
        made: list[ViewPath] = []

        def child() -> ViewPath:
            if not made:
                made.append(self._child(parent, name))
            return made[0]

        return child

    def _describe(self, inode: int, name: bytes | None = None) -> Target:
        """The path for the log line, taken on the trio thread before the work starts (a rename may follow)."""
        try:
            return Target(self.inodes.path(inode), name)
        except NotFound:
            return Target(None, name, inode)

    def _stat(self, path: ViewPath, caller: Caller) -> tuple[Attr, bool]:
        """The node's attributes as ``caller`` sees them, and whether another caller may see it otherwise.

        A handler whose ``getattr`` takes a ``caller`` keyword may show callers different nodes under one name (an
        agent's own editor scratch files), or nodes that exist only while staged; its ``uncached`` says where. Such
        entries must not be cached by the kernel, which shares its caches between all callers.
        """
        handler = self.router.route(path)
        if views_per_caller(type(handler)):
            views = cast(CallerViews, handler)
            return views.getattr(path, caller=caller), views.uncached(path)
        return handler.getattr(path), False

    def _attr(self, inode: int, caller: Caller, state: NodeState | None = None) -> tuple[Attr, bool]:
        """Attributes by path; an unlinked inode that is still open answers from its handle. ``state``: the node's
        ``InodeTable.state``, where the caller has it already."""
        path, detached = (state.path, state.detached) if state is not None else self.inodes.attached_path(inode)
        if detached:
            for f in list(self._files.values()):
                if f.inode == inode:
                    return f.handle.getattr(), False
            raise NotFound(f"{path}: deleted")
        return self._stat(path, caller)

    def _remember(
        self, path: ViewPath, attr: Attr, uncached: bool = False, parent: int | None = None
    ) -> pyfuse3.EntryAttributes:
        """Count a lookup of ``path`` (named in the directory node ``parent``, if known) and make its entry."""
        inode = self.inodes.remember(path, attr.mode, attr.ino, self._same_file(attr))
        if parent is not None and self.watch is not None:  # the kernel's entry for the name is positive now
            self.watch.present(parent, os.fsencode(path.name))
        return entry_attributes(inode, attr, uncached=uncached, watched=self._watched(parent, inode, attr))

    def _ensure_watched(self, directory: int) -> None:
        """Watch ``directory``'s store directory before its entries are read for the kernel (``StoreWatch``)."""
        watch = self.watch
        if watch is not None and not watch.covers(directory):  # nearly always watched already: no path needed
            watch.ensure(directory, self.inodes.path(directory))

    def _watched(self, directory: int | None, inode: int, attr: Attr) -> tuple[bool, bool]:
        """Whether the kernel may cache long the entry of ``inode`` (named in ``directory``), and its attributes:
        every change to them is learned and invalidated (``StoreWatch``).

        The name: its directory is watched, and it is the file's only name (a change made through a name in another
        directory is reported to that directory only). The attributes: a file's go with its name; a directory's
        only where the directory itself is watched, since its mtime and link count change with its entries, which
        only its own watch reports. A node without a store inode number (a branch's, ``branch_dirs``) never.
        """
        watch = self.watch
        if watch is None or not attr.ino:  # a node that is no store file: nothing the watch sees says it changed
            return False, False
        name = directory is not None and watch.covers(directory) and (attr.nlink < 2 or attr.is_dir)
        return name, watch.covers(inode) if attr.is_dir else name

    def _same_file(self, attr: Attr) -> Callable[[ViewPath], bool] | None:
        """For a store file with several names (hard links), whether another known path still names it: the
        names then share one number (``InodeTable.number``)."""
        if attr.nlink < 2 or not attr.ino or attr.is_dir:
            return None

        def same_file(other: ViewPath) -> bool:
            try:
                return self.router.route(other).getattr(other).ino == attr.ino
            except OmxError:
                return False

        return same_file

    def _open_file(self, inode: int, handle: Handle) -> pyfuse3.FileInfo:
        fh = self._next_fh
        self._next_fh += 1
        self._files[fh] = OpenFile(inode, handle)
        self.inodes.opened(inode)
        return pyfuse3.FileInfo(fh=fh, keep_cache=handle.keep_cache, direct_io=handle.direct_io)

    def _file(self, fh: int) -> OpenFile:
        f = self._files.get(fh)
        if f is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return f

    # -- names -------------------------------------------------------------------------------------------------

    async def lookup(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        self.requests["lookup"] += 1
        child = self._child_once(parent_inode, name)

        parent = parent_inode if name not in (b".", b"..") else None

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = child()
            if parent is None:
                return self._remember(path, *self._stat(path, caller))
            self._ensure_watched(parent)
            # git and build tools probe many absent names (.gitignore in every directory): where a creation behind
            # the daemon's back is invalidated, the kernel may remember the absence instead of asking each time.
            # Only the private zone's names are all store files the watch sees made (a branch appears elsewhere).
            watch = self.watch
            private = self.router.route(path) is self.router.private
            absence = watch is not None and private and watch.absent(parent, path, name)
            try:
                found = self._stat(path, caller)
            except NotFound:
                if absence and watch is not None and watch.still_absent(parent, name):
                    return absent_entry()
                raise
            return self._remember(path, *found, parent=parent)

        inline = self._inline("lookup", child)
        return await self.runner.run("lookup", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        self.requests["forget"] += 1
        for inode, count in inode_list:
            self.inodes.forget(inode, count)

    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        self.requests["getattr"] += 1

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            state = self.inodes.state(inode)
            attr, uncached = self._attr(inode, caller, state)
            if stat.S_IFMT(attr.mode) != state.fmt:
                raise NotFound(f"{state.path}: replaced by a node of another type")
            return entry_attributes(inode, attr, uncached=uncached, watched=self._watched(state.parent, inode, attr))

        inline = self._inline("getattr", lambda: self.inodes.path(inode))
        return await self.runner.run("getattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        self.requests["setattr"] += 1
        changes = AttrChanges(
            size=attr.st_size if fields.update_size else None,
            mode=attr.st_mode if fields.update_mode else None,
            uid=attr.st_uid if fields.update_uid else None,
            gid=attr.st_gid if fields.update_gid else None,
            atime_ns=attr.st_atime_ns if fields.update_atime else None,
            mtime_ns=attr.st_mtime_ns if fields.update_mtime else None,
        )
        handle = self._files[fh].handle if fh is not None and fh in self._files else None

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path, detached = self.inodes.attached_path(inode)
            if detached:  # unlinked but open: only ftruncate still means something
                if handle is None or changes != AttrChanges(size=changes.size):
                    raise NotFound(f"{path}: deleted")
                if changes.size is not None:
                    handle.truncate(changes.size)
                return entry_attributes(inode, handle.getattr())
            handler = self.router.route(path)
            changed = handler.setattr(caller, path, changes, handle)
            if handle is not None:
                return entry_attributes(inode, handle.getattr(), uncached=is_uncached(handler, path))
            attr, uncached = (changed, False) if changed is not None else self._attr(inode, caller)
            return entry_attributes(
                inode, attr, uncached=uncached, watched=self._watched(self.inodes.parent(inode), inode, attr)
            )

        op = "truncate" if changes.size is not None else "setattr"
        inline = self._inline(op, lambda: self.inodes.path(inode))
        return await self.runner.run("setattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        self.requests["readlink"] += 1

        def work(caller: Caller) -> bytes:
            path = self.inodes.path(inode)
            return self.router.route(path).readlink(path)

        inline = self._inline("readlink", lambda: self.inodes.path(inode))
        return await self.runner.run("readlink", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        self.requests["mknod"] += 1

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = self._child(parent_inode, name)
            handler = self.router.route(path)
            self._ensure_watched(parent_inode)
            if not stat.S_ISREG(mode):
                if not isinstance(handler, NodeMaker):
                    raise NotSupported(f"{path}: only regular files can be created here (no FIFOs, sockets, devices)")
                handler.mknod(caller, path, mode, rdev)
                return self._remember(path, *self._stat(path, caller), parent=parent_inode)
            handle = handler.create(caller, path, mode, os.O_WRONLY | os.O_EXCL)
            try:
                handle.flush()
            finally:
                handle.release()
            return self._remember(path, *self._stat(path, caller), parent=parent_inode)

        return await self.runner.run("mknod", Request.of(ctx), self._describe(parent_inode, name), work)

    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        self.requests["mkdir"] += 1
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = child()
            handler = self.router.route(path)
            self._ensure_watched(parent_inode)
            handler.mkdir(caller, path, mode)
            return self._remember(path, *self._stat(path, caller), parent=parent_inode)

        inline = self._inline("mkdir", child)
        return await self.runner.run("mkdir", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self.requests["unlink"] += 1
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> None:
            path = child()
            self.router.route(path).unlink(caller, path)
            self.inodes.unlinked(path)

        # A large file is found by the unlink's own walk on the loop (NotInline): its blocks are freed in a thread.
        inline = self._inline("unlink", child)
        await self.runner.run("unlink", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self.requests["rmdir"] += 1
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> None:
            path = child()
            self.router.route(path).rmdir(caller, path)
            self.inodes.unlinked(path)

        inline = self._inline("rmdir", child)
        await self.runner.run("rmdir", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        self.requests["symlink"] += 1
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = child()
            handler = self.router.route(path)
            self._ensure_watched(parent_inode)
            handler.symlink(caller, path, target)
            return self._remember(path, *self._stat(path, caller), parent=parent_inode)

        inline = self._inline("symlink", child)
        return await self.runner.run(
            "symlink", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline
        )

    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        self.requests["rename"] += 1

        def work(caller: Caller) -> None:
            old = self._child(parent_inode_old, name_old)
            new = self._child(parent_inode_new, name_new)
            self.router.route_pair(old, new).rename(caller, old, new, flags)
            if flags & pyfuse3.RENAME_EXCHANGE:
                self.inodes.exchanged(old, new)
            else:
                self.inodes.renamed(old, new)
            if self.watch is not None:  # the kernel moved its entry over any negative one of the new name
                self.watch.present(parent_inode_new, name_new)

        target = f"{self._describe(parent_inode_old, name_old)} -> {self._describe(parent_inode_new, name_new)}"
        await self.runner.run("rename", Request.of(ctx), target, work)

    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        self.requests["link"] += 1
        child = self._child_once(new_parent_inode, new_name)

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            existing = self.inodes.path(inode)
            new = child()
            handler = self.router.route_pair(existing, new)
            self._ensure_watched(new_parent_inode)
            handler.link(caller, existing, new)
            # Where the handler serves store files, the new name shares the number of the file (``_same_file``).
            return self._remember(new, *self._stat(new, caller), parent=new_parent_inode)

        target = f"{self._describe(new_parent_inode, new_name)} -> {self._describe(inode)}"
        # git links every object it writes to its final name: one system call, on the loop where the zone says so
        return await self.runner.run("link", Request.of(ctx), target, work, inline=self._inline("link", child))

    # -- files -------------------------------------------------------------------------------------------------

    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        self.requests["open"] += 1

        def work(caller: Caller) -> Handle:
            path = self.inodes.path(inode)
            return self.router.route(path).open(caller, path, flags)

        kind = "truncate" if flags & os.O_TRUNC else "open-write" if flags & os.O_ACCMODE != os.O_RDONLY else "open"
        inline = self._inline(kind, lambda: self.inodes.path(inode))
        handle = await self.runner.run("open", Request.of(ctx), self._describe(inode), work, inline=inline)
        return self._open_file(inode, handle)

    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        self.requests["create"] += 1
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> tuple[Handle, pyfuse3.EntryAttributes]:
            path = child()
            handler = self.router.route(path)
            self._ensure_watched(parent_inode)
            handle = handler.create(caller, path, mode, flags)
            try:
                return handle, self._remember(path, handle.getattr(), is_uncached(handler, path), parent_inode)
            except BaseException:
                handle.release()
                raise

        inline = self._inline("create", child)
        handle, entry = await self.runner.run(
            "create", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline
        )
        return self._open_file(entry.st_ino, handle), entry

    async def read(self, fh: int, off: int, size: int) -> bytes:
        self.requests["read"] += 1
        f = self._file(fh)
        if self._inline_io(f.handle, "read", size):
            # A store file is read on the loop only if the page cache holds the data (``read_cached``; a read that
            # would wait for the disk goes to a thread); a staged file's read is a memory copy.
            read_cached = getattr(f.handle, "read_cached", f.handle.read)
            cached = await self.runner.run(
                "read", f.handle.caller, self._describe(f.inode), lambda _: read_cached(off, size), inline=True
            )
            if cached is not None:
                return cast(bytes, cached)
        return await self.runner.run(
            "read", f.handle.caller, self._describe(f.inode), lambda _: f.handle.read(off, size)
        )

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        self.requests["write"] += 1
        f = self._file(fh)
        inline = self._inline_io(f.handle, "write", len(buf), off + len(buf))
        return await self.runner.run(
            "write", f.handle.caller, self._describe(f.inode), lambda _: f.handle.write(off, buf), inline=inline
        )

    async def flush(self, fh: int) -> None:
        self.requests["flush"] += 1
        f = self._file(fh)
        inline = self._inline_io(f.handle, "flush")
        await self.runner.run(
            "flush", f.handle.caller, self._describe(f.inode), lambda _: f.handle.flush(), inline=inline
        )

    async def fsync(self, fh: int, datasync: bool) -> None:
        self.requests["fsync"] += 1
        f = self._file(fh)
        await self.runner.run("fsync", f.handle.caller, self._describe(f.inode), lambda _: f.handle.fsync(datasync))

    async def release(self, fh: int) -> None:
        self.requests["release"] += 1
        f = self._files.pop(fh, None)
        if f is None:
            return
        # Said on the loop, before the next request is read: a request of the program that closed the file may
        # reach the handler before the release runs in its thread, and must find what the release commits done.
        requested = getattr(f.handle, "release_requested", None)
        if requested is not None:
            requested()
        # The close of the last descriptor of an unlinked file frees its blocks: that may take long.
        inline = self._inline_io(f.handle, "release") and not self.inodes.is_detached(f.inode)
        try:
            await self.runner.run(
                "release", f.handle.caller, self._describe(f.inode), lambda _: f.handle.release(), inline=inline
            )
        finally:
            self.inodes.closed(f.inode)

    async def close_all(self) -> None:
        """At unmount: commit and release whatever is still open, so nothing written is left staged."""
        for fh in list(self._files):
            with contextlib.suppress(pyfuse3.FUSEError):  # logged by _run
                await self.flush(fh)
            with contextlib.suppress(pyfuse3.FUSEError):
                await self.release(fh)

    # -- directories -------------------------------------------------------------------------------------------

    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        self.requests["opendir"] += 1

        def work(caller: Caller) -> Caller:
            path = self.inodes.path(inode)
            if not self._stat(path, caller)[0].is_dir:
                raise NotFound(f"{path}: not a directory")
            return caller

        inline = self._inline("opendir", lambda: self.inodes.path(inode))
        caller = await self.runner.run("opendir", Request.of(ctx), self._describe(inode), work, inline=inline)
        fh = self._next_fh
        self._next_fh += 1
        self._dirs[fh] = OpenDir(inode, caller)
        self.inodes.opened(inode)
        return fh

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        self.requests["readdir"] += 1
        d = self._dirs.get(fh)
        if d is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        where = self._describe(d.inode)
        if start_id == 0 or d.names is None:
            path = self.inodes.path(d.inode)
            handler = self.router.route(path)
            if self.watch is not None:  # before the listing: no change falls between it and the watch
                self.watch.ensure(d.inode, path)
            # A listing with attributes only where no entry depends on who lists (the caller's scratch files).
            same_for_all = not views_per_caller(type(handler))
            if isinstance(handler, ListsWithAttrs) and same_for_all:
                # On the loop where the handler says so (``Inline``): its listing raises ``NotInline`` for a large
                # directory, which the runner then lists in a worker thread.
                inline = self._inline("readdir", lambda: path)
                listing = await self.runner.run(
                    "readdir", d.caller, where, lambda c: handler.listdir_attrs(c, path), inline=inline
                )
                d.names, d.attrs = [name for name, _ in listing], [attr for _, attr in listing]
            else:
                d.names = await self.runner.run("readdir", d.caller, where, lambda c: handler.listdir(c, path))
                d.attrs = None
        names = d.names
        index = start_id
        while index < len(names):
            entries = functools.partial(self._entries, d, names, index)
            # With the attributes at hand a batch is only inode-table work: on the loop, no thread trip.
            batch = await self.runner.run("readdir", d.caller, where, entries, inline=d.attrs is not None)
            for position, (offset, name, entry) in enumerate(batch):
                if not self._reply(token, os.fsencode(name), entry, offset):
                    for _, _, unused in batch[position:]:  # not taken by the kernel: give their counts back
                        self.inodes.forget(unused.st_ino, 1)
                    return
            index += READDIR_BATCH

    def _entries(
        self, d: OpenDir, names: list[str], start: int, caller: Caller
    ) -> list[tuple[int, str, pyfuse3.EntryAttributes]]:
        """Entries ``start`` .. ``start + READDIR_BATCH`` as (next offset, name, entry), one lookup counted each.

        Counting here, before the reply, keeps a racing ``forget`` from purging a number we are about to hand
        out; ``readdir`` gives back the counts of entries the kernel did not take. An entry's offset is its
        index in the handle's listing, so entries that vanished meanwhile are skipped without shifting others.
        """
        base = self.inodes.path(d.inode)
        out: list[tuple[int, str, pyfuse3.EntryAttributes]] = []
        if d.attrs is not None:  # the hot case: no path object per entry, see InodeTable.remember_entry
            for index, name in enumerate(names[start : start + READDIR_BATCH], start):
                attr = d.attrs[index]
                inode = self.inodes.remember_entry(base, name, attr.mode, attr.ino, self._same_file(attr))
                watched = self._watched(d.inode, inode, attr)
                out.append((index + 1, name, entry_attributes(inode, attr, watched=watched)))
            return out
        for index, name in enumerate(names[start : start + READDIR_BATCH], start):
            child = base / name if base != ROOT else ViewPath(name)
            try:
                attr, uncached = self._stat(child, caller)
            except OmxError:
                continue
            out.append((index + 1, name, self._remember(child, attr, uncached, d.inode)))
        return out

    async def releasedir(self, fh: int) -> None:
        self.requests["releasedir"] += 1
        d = self._dirs.pop(fh, None)
        if d is not None:
            self.inodes.closed(d.inode)

    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        """Every change of a directory entry is made durable by the store (or by the program's own fsync)."""
        self.requests["fsyncdir"] += 1

    # -- attributes and the rest -------------------------------------------------------------------------------

    async def access(self, inode: int, mode: int, ctx: pyfuse3.RequestContext) -> bool:
        self.requests["access"] += 1

        def work(caller: Caller) -> bool:
            path = self.inodes.path(inode)
            handler = self.router.route(path)
            attr = self._attr(inode, caller)[0]
            if mode & os.W_OK:
                may = handler.may_write(caller, path) if isinstance(handler, WriteChecker) else attr.mode & 0o222
                if not may:
                    return False
            return not (mode & os.X_OK and not attr.is_dir and not attr.mode & 0o111)

        inline = self._inline("access", lambda: self.inodes.path(inode))
        return await self.runner.run("access", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        self.requests["statfs"] += 1
        root = self.store_root
        if root is None:
            raise pyfuse3.FUSEError(errno.ENOSYS)

        def work(caller: Caller) -> pyfuse3.StatvfsData:
            st = os.statvfs(root)
            data = pyfuse3.StatvfsData()
            for name in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail"):
                setattr(data, name, getattr(st, name))
            data.f_namemax = st.f_namemax
            return data

        return await self.runner.run("statfs", Request.of(ctx), "/", work)

    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        if name == _REQUESTS and inode == ROOT_INODE:  # read by benchmarks around a workload: not counted itself
            return json.dumps(self.requests, sort_keys=True, separators=(",", ":")).encode()
        self.requests["getxattr"] += 1
        if not name.startswith(_USER_XATTRS):
            # No zone keeps any other namespace, and the kernel asks for security.capability before every write():
            # answered here, before the caller or the path is even looked at.
            raise pyfuse3.FUSEError(errno.ENODATA)

        def work(caller: Caller) -> bytes:
            path = self.inodes.path(inode)
            return self.router.route(path).getxattr(caller, path, os.fsdecode(name))

        inline = self._inline("getxattr", lambda: self.inodes.path(inode))
        return await self.runner.run("getxattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext) -> None:
        self.requests["setxattr"] += 1

        def work(caller: Caller) -> None:
            path = self.inodes.path(inode)
            self.router.route(path).setxattr(caller, path, os.fsdecode(name), value)

        inline = self._inline("setxattr", lambda: self.inodes.path(inode))
        await self.runner.run("setxattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> Sequence[bytes]:
        self.requests["listxattr"] += 1

        def work(caller: Caller) -> list[bytes]:
            path = self.inodes.path(inode)
            return [os.fsencode(n) for n in self.router.route(path).listxattr(caller, path)]

        inline = self._inline("listxattr", lambda: self.inodes.path(inode))
        return await self.runner.run("listxattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self.requests["removexattr"] += 1

        def work(caller: Caller) -> None:
            path = self.inodes.path(inode)
            self.router.route(path).removexattr(caller, path, os.fsdecode(name))

        await self.runner.run("removexattr", Request.of(ctx), self._describe(inode), work)
