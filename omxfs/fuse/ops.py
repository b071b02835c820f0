"""The pyfuse3 ``Operations``: thin, async, no policy (STYLE lessons 1-3).

Each op resolves the caller (pyfuse3 gives a request context to lookup, getattr, setattr, readlink, mknod,
mkdir, unlink, rmdir, symlink, rename, link, open, opendir, create, access, statfs and the xattr ops; not to
read, write, flush, fsync, release, readdir, releasedir, fsyncdir, forget, so open/create/opendir record the
caller on the handle), turns the inode into a view path, asks the router for the zone handler and runs it in a
worker thread: handlers touch the disk and may wait on a store lock, and the trio loop that serves every other
request must never wait with them. The exception is work a handler vouches is cheap (``Inline``: a few system
calls on the local store, no lock, no fsync, no large I/O): a thread hop costs far more than such work, so it
runs on the loop.

Errors are translated in one place, ``_failure``: an ``OmxError`` becomes its errno, and every refusal is one
log line ``agent=<a> op=<op> path=<p> errno=<name>: <reason>``; anything else is a bug, logged with its
traceback and answered with EIO so the daemon never dies of it.

Lookup counts are kept in ``inodes.InodeTable``; every reply that carries an entry counts one.

Kernel caching: nodes that cannot change behind the kernel's back (``Attr.stable``) are cached for a minute,
with their pages; everything else for half a second, since other daemons and the CLI write the store directly;
nodes whose handler shows each caller its own (``getattr(path, caller=...)``) not at all, since the kernel's
caches are shared by all callers.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import logging
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, cast, runtime_checkable

import pyfuse3
import trio

from omxfs.errors import NotFound, NotSupported, OmxError
from omxfs.fuse.identity import IdentityResolver
from omxfs.fuse.inodes import InodeTable
from omxfs.fuse.router import Router, view_path
from omxfs.fuse.zones.base import ROOT, Attr, AttrChanges, Caller, Handle, ViewPath, ZoneHandler
from omxfs.store.layout import USER_XATTRS

T = TypeVar("T")

#: attribute and entry timeouts (seconds) of nodes that cannot change behind the kernel's back
STABLE_TIMEOUT = 60.0
#: ... and of everything else: other daemons and the CLI change the store directly (SPEC: visible within 1 s)
VOLATILE_TIMEOUT = 0.5
#: readdirplus entries whose attributes are fetched in one worker-thread trip
READDIR_BATCH = 64
#: reads and writes up to this size on a handle that allows it run on the loop (page-cache speed)
INLINE_IO = 64 * 1024
#: errnos that answer a question rather than refuse a request: not worth a log line each
QUIET_ERRNOS = frozenset({errno.ENOENT, errno.ENODATA, errno.EEXIST, errno.EOPNOTSUPP})

_USER_XATTRS = USER_XATTRS.encode()

ReaddirReply = Callable[[pyfuse3.ReaddirToken, bytes, pyfuse3.EntryAttributes, int], bool]


@runtime_checkable
class Inline(Protocol):
    """A zone handler that can say which of its operations are cheap enough to run on the trio loop.

    ``op`` is the ops-layer name (``lookup``, ``getattr``, ``create``…). True only where the work is a few system
    calls on the local store that never wait on a lock, fsync or move much data; handlers without this method
    always run in a worker thread.
    """

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool: ...


@runtime_checkable
class WriteChecker(Protocol):
    """A zone handler that can say whether a caller may change a node, for ``access(W_OK)``."""

    def may_write(self, caller: Caller, path: ViewPath) -> bool: ...


class _CallerViews(Protocol):
    """A zone handler whose nodes may depend on who looks (``getattr`` takes the caller) or exist only for a while,
    and which says which nodes the kernel must therefore not cache (``uncached``)."""

    def getattr(self, path: ViewPath, caller: Caller | None = None) -> Attr: ...

    def uncached(self, path: ViewPath) -> bool: ...


@functools.cache
def _views_per_caller(handler_type: type) -> bool:
    try:
        return "caller" in inspect.signature(getattr(handler_type, "getattr")).parameters  # noqa: B009
    except (AttributeError, TypeError, ValueError):
        return False


def _uncached(handler: ZoneHandler, path: ViewPath) -> bool:
    """Whether the kernel must not cache the entry of ``path`` (see ``_CallerViews``)."""
    return _views_per_caller(type(handler)) and cast(_CallerViews, handler).uncached(path)


@runtime_checkable
class ListsWithAttrs(Protocol):
    """A handler that lists a directory with its entries' attributes in one go (readdirplus needs both)."""

    def listdir_attrs(self, caller: Caller, path: ViewPath) -> list[tuple[str, Attr]]: ...


@functools.cache
def _has_inline(handler_type: type) -> bool:
    return callable(getattr(handler_type, "inline", None))


@dataclass(frozen=True)
class Request:
    """The kernel's view of a caller, copied out of pyfuse3's RequestContext."""

    uid: int
    gid: int
    pid: int
    umask: int

    @classmethod
    def of(cls, ctx: pyfuse3.RequestContext) -> Request:
        return cls(ctx.uid, ctx.gid, ctx.pid, ctx.umask)


@dataclass(frozen=True, slots=True)
class _Target:
    """What a request is about, for its log line: kept as parts, made text only if a line is written."""

    base: ViewPath | None
    name: bytes | None = None
    inode: int = 0

    def __str__(self) -> str:
        if self.base is None:
            return f"<inode {self.inode}>"
        if self.name is None:
            return str(self.base)
        return str(self.base / os.fsdecode(self.name)) if self.base != ROOT else os.fsdecode(self.name)


@dataclass(eq=False)
class _OpenFile:
    inode: int
    handle: Handle


@dataclass(eq=False)
class _OpenDir:
    inode: int
    caller: Caller
    #: the listing taken at the first readdir (and again at a rewind): offsets index it, so they stay stable
    names: list[str] | None = None
    #: the attributes of ``names``, when the handler gave them with the listing (``ListsWithAttrs``)
    attrs: list[Attr] | None = None


class Operations(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False  # every write reaches the store before write() returns to the program
    enable_acl = False

    def __init__(
        self,
        router: Router,
        identity: IdentityResolver,
        inodes: InodeTable,
        log: logging.Logger,
        *,
        store_root: Path | None = None,
        readdir_reply: ReaddirReply | None = None,
        thread_limit: int = 64,
        on_init: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.router = router
        self.identity = identity
        self.inodes = inodes
        self.log = log
        self.store_root = store_root
        self._reply: ReaddirReply = readdir_reply or pyfuse3.readdir_reply
        self._files: dict[int, _OpenFile] = {}
        self._dirs: dict[int, _OpenDir] = {}
        self._next_fh = 1
        self._limiter = trio.CapacityLimiter(thread_limit)
        self._on_init = on_init

    def init(self) -> None:
        """The kernel's INIT request arrived (its reply follows): from now on the mount answers."""
        if self._on_init is not None:
            self._on_init()

    # -- the one place where requests run and errors are translated --------------------------------------------

    async def _run(
        self,
        op: str,
        who: Request | Caller,
        target: _Target | str,
        work: Callable[[Caller], T],
        *,
        inline: Callable[[Caller], bool] | bool = False,
    ) -> T:
        """Run ``work`` for the caller, in a worker thread unless ``inline`` says it is cheap (see ``Inline``).

        Resolving the caller reads a small virtual file of /proc at most, so it is done on the loop whenever the
        decision to stay there depends on who asks.
        """
        caller: Caller | None = who if isinstance(who, Caller) else None
        if inline is not False:
            try:
                if caller is None:
                    assert isinstance(who, Request)
                    caller = self.caller(who)
                if inline is True or inline(caller):
                    return work(caller)
            except Exception as exc:
                raise self._failure(op, caller, who, target, exc) from None

        def in_thread() -> T:
            nonlocal caller
            try:
                if caller is None:
                    assert isinstance(who, Request)
                    caller = self.caller(who)
                return work(caller)
            except Exception as exc:
                raise self._failure(op, caller, who, target, exc) from None

        return await trio.to_thread.run_sync(in_thread, limiter=self._limiter)

    def caller(self, request: Request) -> Caller:
        agent = self.identity.resolve(request.uid, request.pid)
        return Caller(agent, request.uid, request.gid, request.pid, request.umask)

    def _failure(
        self, op: str, caller: Caller | None, who: Request | Caller, target: _Target | str, exc: Exception
    ) -> pyfuse3.FUSEError:
        agent = caller.agent if caller is not None else f"?(uid={who.uid},pid={who.pid})"
        if isinstance(exc, pyfuse3.FUSEError):
            return exc
        if isinstance(exc, OmxError | OSError):
            code = exc.errno or errno.EIO
            if code not in QUIET_ERRNOS:
                reason = exc.message if isinstance(exc, OmxError) else str(exc)
                self.log.warning(
                    "agent=%s op=%s path=%s errno=%s: %s", agent, op, target, errno.errorcode.get(code, code), reason
                )
            return pyfuse3.FUSEError(code)
        self.log.error("agent=%s op=%s path=%s errno=EIO: internal error", agent, op, target, exc_info=exc)
        return pyfuse3.FUSEError(errno.EIO)

    # -- helpers -----------------------------------------------------------------------------------------------

    def _inline(self, op: str, path_of: Callable[[], ViewPath]) -> Callable[[Caller], bool]:
        """Whether the handler of ``path_of()`` runs ``op`` for a caller on the loop (see ``Inline``)."""

        def decide(caller: Caller) -> bool:
            path = path_of()
            handler = self.router.route(path)
            return _has_inline(type(handler)) and cast(Inline, handler).inline(op, caller, path)

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

    def entry(self, inode: int, attr: Attr, *, uncached: bool = False) -> pyfuse3.EntryAttributes:
        e = pyfuse3.EntryAttributes()
        e.st_ino = inode
        e.generation = 0
        timeout = STABLE_TIMEOUT if attr.stable else 0.0 if uncached else VOLATILE_TIMEOUT
        e.entry_timeout = timeout
        e.attr_timeout = timeout
        e.st_mode = attr.mode
        e.st_nlink = attr.nlink
        e.st_uid = attr.uid
        e.st_gid = attr.gid
        e.st_size = attr.size
        e.st_blksize = 4096
        e.st_blocks = (attr.size + 511) // 512
        e.st_atime_ns = attr.atime_ns
        e.st_mtime_ns = attr.mtime_ns
        e.st_ctime_ns = attr.ctime_ns
        return e

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

    def _describe(self, inode: int, name: bytes | None = None) -> _Target:
        """The path for the log line, taken on the trio thread before the work starts (a rename may follow)."""
        try:
            return _Target(self.inodes.path(inode), name)
        except NotFound:
            return _Target(None, name, inode)

    def _stat(self, path: ViewPath, caller: Caller) -> tuple[Attr, bool]:
        """The node's attributes as ``caller`` sees them, and whether another caller may see it otherwise.

        A handler whose ``getattr`` takes a ``caller`` keyword may show callers different nodes under one name (an
        agent's own editor scratch files), or nodes that exist only while staged; its ``uncached`` says where. Such
        entries must not be cached by the kernel, which shares its caches between all callers.
        """
        handler = self.router.route(path)
        if _views_per_caller(type(handler)):
            views = cast(_CallerViews, handler)
            return views.getattr(path, caller=caller), views.uncached(path)
        return handler.getattr(path), False

    def _attr(self, inode: int, caller: Caller) -> tuple[Attr, bool]:
        """Attributes by path; an unlinked inode that is still open answers from its handle."""
        path = self.inodes.path(inode)
        if self.inodes.is_detached(inode):
            for f in list(self._files.values()):
                if f.inode == inode:
                    return f.handle.getattr(), False
            raise NotFound(f"{path}: deleted")
        return self._stat(path, caller)

    def _remember(self, path: ViewPath, attr: Attr, uncached: bool = False) -> pyfuse3.EntryAttributes:
        return self.entry(self.inodes.remember(path, attr.mode), attr, uncached=uncached)

    def _open_file(self, inode: int, handle: Handle) -> pyfuse3.FileInfo:
        fh = self._next_fh
        self._next_fh += 1
        self._files[fh] = _OpenFile(inode, handle)
        self.inodes.opened(inode)
        return pyfuse3.FileInfo(fh=fh, keep_cache=handle.keep_cache, direct_io=handle.direct_io)

    def _file(self, fh: int) -> _OpenFile:
        f = self._files.get(fh)
        if f is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return f

    # -- names -------------------------------------------------------------------------------------------------

    async def lookup(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = child()
            return self._remember(path, *self._stat(path, caller))

        inline = self._inline("lookup", child)
        return await self._run("lookup", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.inodes.forget(inode, count)

    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            attr, uncached = self._attr(inode, caller)
            if stat.S_IFMT(attr.mode) != self.inodes.fmt(inode):
                raise NotFound(f"{self.inodes.path(inode)}: replaced by a node of another type")
            return self.entry(inode, attr, uncached=uncached)

        inline = self._inline("getattr", lambda: self.inodes.path(inode))
        return await self._run("getattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
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
            path = self.inodes.path(inode)
            if self.inodes.is_detached(inode):  # unlinked but open: only ftruncate still means something
                if handle is None or changes != AttrChanges(size=changes.size):
                    raise NotFound(f"{path}: deleted")
                if changes.size is not None:
                    handle.truncate(changes.size)
                return self.entry(inode, handle.getattr())
            self.router.route(path).setattr(caller, path, changes, handle)
            if handle is not None:
                return self.entry(inode, handle.getattr(), uncached=_uncached(self.router.route(path), path))
            attr, uncached = self._attr(inode, caller)
            return self.entry(inode, attr, uncached=uncached)

        op = "truncate" if changes.size is not None else "setattr"
        inline = self._inline(op, lambda: self.inodes.path(inode))
        return await self._run("setattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        def work(caller: Caller) -> bytes:
            path = self.inodes.path(inode)
            return self.router.route(path).readlink(path)

        inline = self._inline("readlink", lambda: self.inodes.path(inode))
        return await self._run("readlink", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = self._child(parent_inode, name)
            if not stat.S_ISREG(mode):
                raise NotSupported(f"{path}: only regular files can be created here (no FIFOs, sockets, devices)")
            handler = self.router.route(path)
            handle = handler.create(caller, path, mode, os.O_WRONLY | os.O_EXCL)
            try:
                handle.flush()
            finally:
                handle.release()
            return self._remember(path, *self._stat(path, caller))

        return await self._run("mknod", Request.of(ctx), self._describe(parent_inode, name), work)

    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = child()
            handler = self.router.route(path)
            handler.mkdir(caller, path, mode)
            return self._remember(path, *self._stat(path, caller))

        inline = self._inline("mkdir", child)
        return await self._run("mkdir", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> None:
            path = child()
            self.router.route(path).unlink(caller, path)
            self.inodes.unlinked(path)

        inline = self._inline("unlink", child)
        await self._run("unlink", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        def work(caller: Caller) -> None:
            path = self._child(parent_inode, name)
            self.router.route(path).rmdir(caller, path)
            self.inodes.unlinked(path)

        await self._run("rmdir", Request.of(ctx), self._describe(parent_inode, name), work)

    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            path = child()
            handler = self.router.route(path)
            handler.symlink(caller, path, target)
            return self._remember(path, *self._stat(path, caller))

        inline = self._inline("symlink", child)
        return await self._run("symlink", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline)

    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        def work(caller: Caller) -> None:
            old = self._child(parent_inode_old, name_old)
            new = self._child(parent_inode_new, name_new)
            self.router.route_pair(old, new).rename(caller, old, new, flags)
            if flags & pyfuse3.RENAME_EXCHANGE:
                self.inodes.exchanged(old, new)
            else:
                self.inodes.renamed(old, new)

        target = f"{self._describe(parent_inode_old, name_old)} -> {self._describe(parent_inode_new, name_new)}"
        await self._run("rename", Request.of(ctx), target, work)

    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        def work(caller: Caller) -> pyfuse3.EntryAttributes:
            existing = self.inodes.path(inode)
            new = self._child(new_parent_inode, new_name)
            handler = self.router.route_pair(existing, new)
            handler.link(caller, existing, new)
            # The new name gets a number of its own: the table maps one path to one number.
            return self._remember(new, *self._stat(new, caller))

        target = f"{self._describe(new_parent_inode, new_name)} -> {self._describe(inode)}"
        return await self._run("link", Request.of(ctx), target, work)

    # -- files -------------------------------------------------------------------------------------------------

    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        def work(caller: Caller) -> Handle:
            path = self.inodes.path(inode)
            return self.router.route(path).open(caller, path, flags)

        kind = "truncate" if flags & os.O_TRUNC else "open-write" if flags & os.O_ACCMODE != os.O_RDONLY else "open"
        inline = self._inline(kind, lambda: self.inodes.path(inode))
        handle = await self._run("open", Request.of(ctx), self._describe(inode), work, inline=inline)
        return self._open_file(inode, handle)

    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        child = self._child_once(parent_inode, name)

        def work(caller: Caller) -> tuple[Handle, pyfuse3.EntryAttributes]:
            path = child()
            handler = self.router.route(path)
            handle = handler.create(caller, path, mode, flags)
            try:
                return handle, self._remember(path, handle.getattr(), _uncached(handler, path))
            except BaseException:
                handle.release()
                raise

        inline = self._inline("create", child)
        handle, entry = await self._run(
            "create", Request.of(ctx), self._describe(parent_inode, name), work, inline=inline
        )
        return self._open_file(entry.st_ino, handle), entry

    async def read(self, fh: int, off: int, size: int) -> bytes:
        f = self._file(fh)
        if self._inline_io(f.handle, "read", size):
            # A store file is read on the loop only if the page cache holds the data (``read_cached``; a read that
            # would wait for the disk goes to a thread); a staged file's read is a memory copy.
            read_cached = getattr(f.handle, "read_cached", f.handle.read)
            cached = await self._run(
                "read", f.handle.caller, self._describe(f.inode), lambda _: read_cached(off, size), inline=True
            )
            if cached is not None:
                return cast(bytes, cached)
        return await self._run("read", f.handle.caller, self._describe(f.inode), lambda _: f.handle.read(off, size))

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        f = self._file(fh)
        inline = self._inline_io(f.handle, "write", len(buf), off + len(buf))
        return await self._run(
            "write", f.handle.caller, self._describe(f.inode), lambda _: f.handle.write(off, buf), inline=inline
        )

    async def flush(self, fh: int) -> None:
        f = self._file(fh)
        inline = self._inline_io(f.handle, "flush")
        await self._run("flush", f.handle.caller, self._describe(f.inode), lambda _: f.handle.flush(), inline=inline)

    async def fsync(self, fh: int, datasync: bool) -> None:
        f = self._file(fh)
        await self._run("fsync", f.handle.caller, self._describe(f.inode), lambda _: f.handle.fsync(datasync))

    async def release(self, fh: int) -> None:
        f = self._files.pop(fh, None)
        if f is None:
            return
        # The close of the last descriptor of an unlinked file frees its blocks: that may take long.
        inline = self._inline_io(f.handle, "release") and not self.inodes.is_detached(f.inode)
        try:
            await self._run(
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
        def work(caller: Caller) -> Caller:
            path = self.inodes.path(inode)
            if not self._stat(path, caller)[0].is_dir:
                raise NotFound(f"{path}: not a directory")
            return caller

        inline = self._inline("opendir", lambda: self.inodes.path(inode))
        caller = await self._run("opendir", Request.of(ctx), self._describe(inode), work, inline=inline)
        fh = self._next_fh
        self._next_fh += 1
        self._dirs[fh] = _OpenDir(inode, caller)
        self.inodes.opened(inode)
        return fh

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        d = self._dirs.get(fh)
        if d is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        where = self._describe(d.inode)
        if start_id == 0 or d.names is None:
            path = self.inodes.path(d.inode)
            handler = self.router.route(path)
            # A listing with attributes only where no entry depends on who lists (the caller's scratch files).
            same_for_all = not _views_per_caller(type(handler))
            if isinstance(handler, ListsWithAttrs) and same_for_all:
                listing = await self._run("readdir", d.caller, where, lambda c: handler.listdir_attrs(c, path))
                d.names, d.attrs = [name for name, _ in listing], [attr for _, attr in listing]
            else:
                d.names = await self._run("readdir", d.caller, where, lambda c: handler.listdir(c, path))
                d.attrs = None
        names = d.names
        index = start_id
        while index < len(names):
            entries = functools.partial(self._entries, d, names, index)
            # With the attributes at hand a batch is only inode-table work: on the loop, no thread trip.
            batch = await self._run("readdir", d.caller, where, entries, inline=d.attrs is not None)
            for position, (offset, name, entry) in enumerate(batch):
                if not self._reply(token, os.fsencode(name), entry, offset):
                    for _, _, unused in batch[position:]:  # not taken by the kernel: give their counts back
                        self.inodes.forget(unused.st_ino, 1)
                    return
            index += READDIR_BATCH

    def _entries(
        self, d: _OpenDir, names: list[str], start: int, caller: Caller
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
                out.append((index + 1, name, self.entry(self.inodes.remember_entry(base, name, attr.mode), attr)))
            return out
        for index, name in enumerate(names[start : start + READDIR_BATCH], start):
            child = base / name if base != ROOT else ViewPath(name)
            try:
                attr, uncached = self._stat(child, caller)
            except OmxError:
                continue
            out.append((index + 1, name, self._remember(child, attr, uncached)))
        return out

    async def releasedir(self, fh: int) -> None:
        d = self._dirs.pop(fh, None)
        if d is not None:
            self.inodes.closed(d.inode)

    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        """Every change of a directory entry is made durable by the store (or by the program's own fsync)."""

    # -- attributes and the rest -------------------------------------------------------------------------------

    async def access(self, inode: int, mode: int, ctx: pyfuse3.RequestContext) -> bool:
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
        return await self._run("access", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
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

        return await self._run("statfs", Request.of(ctx), "/", work)

    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        if not name.startswith(_USER_XATTRS):
            # No zone keeps any other namespace, and the kernel asks for security.capability before every write():
            # answered here, before the caller or the path is even looked at.
            raise pyfuse3.FUSEError(errno.ENODATA)

        def work(caller: Caller) -> bytes:
            path = self.inodes.path(inode)
            return self.router.route(path).getxattr(caller, path, os.fsdecode(name))

        inline = self._inline("getxattr", lambda: self.inodes.path(inode))
        return await self._run("getxattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext) -> None:
        def work(caller: Caller) -> None:
            path = self.inodes.path(inode)
            self.router.route(path).setxattr(caller, path, os.fsdecode(name), value)

        await self._run("setxattr", Request.of(ctx), self._describe(inode), work)

    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> Sequence[bytes]:
        def work(caller: Caller) -> list[bytes]:
            path = self.inodes.path(inode)
            return [os.fsencode(n) for n in self.router.route(path).listxattr(caller, path)]

        inline = self._inline("listxattr", lambda: self.inodes.path(inode))
        return await self._run("listxattr", Request.of(ctx), self._describe(inode), work, inline=inline)

    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        def work(caller: Caller) -> None:
            path = self.inodes.path(inode)
            self.router.route(path).removexattr(caller, path, os.fsdecode(name))

        await self._run("removexattr", Request.of(ctx), self._describe(inode), work)
