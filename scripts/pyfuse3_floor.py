"""The floor of pyfuse3 + trio: a passthrough filesystem that does as little per request as a pyfuse3 daemon can.

Not a product, not part of omx: ``scripts/bench_fs.py`` mounts it beside libfuse's C example ``passthrough_ll``
and omx, so that one run separates three costs. passthrough_ll is the limit of FUSE itself on the machine; this
daemon adds only what the binding costs (pyfuse3's dispatch into Python, a coroutine and trio's loop per request,
Python objects for each reply, no splice); what omx takes beyond it is omx's own code.

It behaves as passthrough_ll with its defaults (``cache=auto``, no ``-o xattr``, no ``-o writeback``): an inode is
the source's ``st_ino`` and holds an ``O_PATH`` descriptor of the file (which keeps the number from being reused
while the kernel knows it), lookups are counted and the descriptor closed when the kernel forgets the inode;
entry and attribute timeouts of 1.0 s; no ``keep_cache`` (the kernel drops the page cache at every open); no
writeback cache; readdirplus for every listing (pyfuse3 turns the kernel's adaptive readdirplus off, so every
listed entry is looked up and counted); pyfuse3's default mount options without ``default_permissions``, plus
``fsname``; umask 0 (the kernel has applied the caller's). Symlink and readlink are there because real work
makes links (``python -m venv`` in ``bench_real.py``). Xattrs, access, link, mknod, fsyncdir, locks and fallocate
are not implemented: pyfuse3 answers ENOSYS and the kernel stops asking, as it does for passthrough_ll's xattrs.
Flush is a no-op (passthrough_ll's is ``close(dup(fh))``), and listings leave out ``.`` and ``..`` (two entries,
never looked up).

``--xattr`` adds extended attributes, as passthrough_ll's ``-o xattr`` does (through ``/proc/self/fd/N``): the
kernel then asks ``security.capability`` before every write, and ``cp -a`` copies xattrs, requests omx must
answer (it keeps ``user.*`` attributes) and the floor without xattrs never gets. ``bench_real.py``'s target
``pyfuse3_floor_xattr`` mounts it: the cost of the binding for the requests omx receives.

Every handler runs inline on the trio loop of ``pyfuse3.main()`` with its default tasks, as omx's does: no
threads, no awaits, as few Python statements per request as the job allows. A failed call answers its errno.

    python scripts/pyfuse3_floor.py [--xattr] SOURCE MOUNTPOINT   # foreground; SIGTERM, SIGINT or fusermount3 -u
                                                                  # unmounts
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence

import pyfuse3
import trio
from pyfuse3 import EntryAttributes, FileInfo, FUSEError, ReaddirToken, SetattrFields, StatvfsData
from pyfuse3 import RequestContext as Ctx

TIMEOUT = 1.0  # passthrough_ll's entry and attribute timeouts with cache=auto
NOT_NOFOLLOW = ~os.O_NOFOLLOW
ROOT = pyfuse3.ROOT_INODE


def error(exc: OSError) -> FUSEError:
    return FUSEError(exc.errno or errno.EIO)


def attributes(st: os.stat_result, inode: int) -> EntryAttributes:
    attr = EntryAttributes()
    attr.st_ino, attr.st_mode, attr.st_nlink, attr.st_uid = inode, st.st_mode, st.st_nlink, st.st_uid
    attr.st_gid, attr.st_rdev, attr.st_size, attr.st_blksize = st.st_gid, st.st_rdev, st.st_size, st.st_blksize
    attr.st_blocks, attr.st_atime_ns, attr.st_mtime_ns = st.st_blocks, st.st_atime_ns, st.st_mtime_ns
    attr.st_ctime_ns = st.st_ctime_ns
    attr.entry_timeout = attr.attr_timeout = TIMEOUT
    return attr


class Floor(pyfuse3.Operations):
    def __init__(self, source: str) -> None:
        super().__init__()
        self.fds = {ROOT: os.open(source, os.O_PATH | os.O_DIRECTORY)}  # inode -> O_PATH descriptor
        self.lookups = {ROOT: 2}  # inode -> the kernel's lookup count (the root's never reaches 0)
        self.dirs: dict[int, tuple[int, list[bytes]]] = {}  # opendir handle -> (directory's descriptor, listing)
        self.last_dir = 0

    def _lookup(self, parent_fd: int, name: bytes) -> EntryAttributes:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=parent_fd)
        st = os.stat(fd)
        inode = st.st_ino
        if inode in self.lookups:
            os.close(fd)
            self.lookups[inode] += 1
        else:
            self.fds[inode] = fd
            self.lookups[inode] = 1
        return attributes(st, inode)

    def _forget(self, inode: int, n: int) -> None:
        if left := self.lookups[inode] - n:
            self.lookups[inode] = left
        else:
            del self.lookups[inode]
            os.close(self.fds.pop(inode))

    async def lookup(self, parent_inode: int, name: bytes, ctx: Ctx) -> EntryAttributes:
        try:
            return self._lookup(self.fds[parent_inode], name)
        except OSError as exc:
            raise error(exc) from None

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, n in inode_list:
            self._forget(inode, n)

    async def getattr(self, inode: int, ctx: Ctx) -> EntryAttributes:
        try:
            return attributes(os.stat(self.fds[inode]), inode)
        except OSError as exc:
            raise error(exc) from None

    async def setattr(
        self, inode: int, attr: EntryAttributes, fields: SetattrFields, fh: int | None, ctx: Ctx
    ) -> EntryAttributes:
        fd = self.fds[inode]
        target: int | str = f"/proc/self/fd/{fd}" if fh is None else fh
        try:
            if fields.update_mode:
                os.chmod(target, attr.st_mode)
            if fields.update_uid or fields.update_gid:
                os.chown(target, attr.st_uid if fields.update_uid else -1, attr.st_gid if fields.update_gid else -1)
            if fields.update_size:
                os.truncate(target, attr.st_size)
            if fields.update_atime or fields.update_mtime:  # os.utime has no UTIME_OMIT: keep the other as it is
                old = os.stat(fd)
                atime = attr.st_atime_ns if fields.update_atime else old.st_atime_ns
                os.utime(target, ns=(atime, attr.st_mtime_ns if fields.update_mtime else old.st_mtime_ns))
            return attributes(os.stat(fd), inode)
        except OSError as exc:
            raise error(exc) from None

    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Ctx
    ) -> tuple[FileInfo, EntryAttributes]:
        parent = self.fds[parent_inode]
        try:
            fd = os.open(name, (flags | os.O_CREAT) & NOT_NOFOLLOW, mode, dir_fd=parent)
            return FileInfo(fh=fd, keep_cache=False), self._lookup(parent, name)
        except OSError as exc:
            raise error(exc) from None

    async def open(self, inode: int, flags: int, ctx: Ctx) -> FileInfo:
        try:
            return FileInfo(fh=os.open(f"/proc/self/fd/{self.fds[inode]}", flags & NOT_NOFOLLOW), keep_cache=False)
        except OSError as exc:
            raise error(exc) from None

    async def read(self, fh: int, off: int, size: int) -> bytes:
        try:
            return os.pread(fh, size, off)
        except OSError as exc:
            raise error(exc) from None

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        try:
            return os.pwrite(fh, buf, off)
        except OSError as exc:
            raise error(exc) from None

    async def flush(self, fh: int) -> None:
        pass

    async def release(self, fh: int) -> None:
        os.close(fh)

    async def fsync(self, fh: int, datasync: bool) -> None:
        try:
            (os.fdatasync if datasync else os.fsync)(fh)
        except OSError as exc:
            raise error(exc) from None

    async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Ctx) -> EntryAttributes:
        parent = self.fds[parent_inode]
        try:
            os.mkdir(name, mode, dir_fd=parent)
            return self._lookup(parent, name)
        except OSError as exc:
            raise error(exc) from None

    async def symlink(self, parent_inode: int, name: bytes, target: bytes, ctx: Ctx) -> EntryAttributes:
        parent = self.fds[parent_inode]
        try:
            os.symlink(target, name, dir_fd=parent)
            return self._lookup(parent, name)
        except OSError as exc:
            raise error(exc) from None

    async def readlink(self, inode: int, ctx: Ctx) -> bytes:
        try:
            return os.readlink(b"", dir_fd=self.fds[inode])  # the O_PATH descriptor is the link itself
        except OSError as exc:
            raise error(exc) from None

    async def unlink(self, parent_inode: int, name: bytes, ctx: Ctx) -> None:
        try:
            os.unlink(name, dir_fd=self.fds[parent_inode])
        except OSError as exc:
            raise error(exc) from None

    async def rmdir(self, parent_inode: int, name: bytes, ctx: Ctx) -> None:
        try:
            os.rmdir(name, dir_fd=self.fds[parent_inode])
        except OSError as exc:
            raise error(exc) from None

    async def rename(self, old_parent: int, old: bytes, new_parent: int, new: bytes, flags: int, ctx: Ctx) -> None:
        if flags:  # RENAME_EXCHANGE or RENAME_NOREPLACE: refused, as passthrough_ll does
            raise FUSEError(errno.EINVAL)
        try:
            os.rename(old, new, src_dir_fd=self.fds[old_parent], dst_dir_fd=self.fds[new_parent])
        except OSError as exc:
            raise error(exc) from None

    async def opendir(self, inode: int, ctx: Ctx) -> int:
        self.last_dir += 1
        self.dirs[self.last_dir] = (self.fds[inode], [])
        return self.last_dir

    async def readdir(self, fh: int, start_id: int, token: ReaddirToken) -> None:
        fd, names = self.dirs[fh]
        if not start_id:  # the first call, or a rewind: list the directory now, as passthrough_ll's seekdir(0)
            try:
                names = os.listdir(b"/proc/self/fd/%d" % fd)
            except OSError as exc:
                raise error(exc) from None
            self.dirs[fh] = (fd, names)
        for i in range(start_id, len(names)):
            try:
                attr = self._lookup(fd, names[i])
            except OSError:
                continue  # removed since the listing
            if not pyfuse3.readdir_reply(token, names[i], attr, i + 1):
                self._forget(attr.st_ino, 1)  # did not fit: the kernel will not count it
                return

    async def releasedir(self, fh: int) -> None:
        del self.dirs[fh]

    async def statfs(self, ctx: Ctx) -> StatvfsData:
        st = os.statvfs(self.fds[ROOT])
        data = StatvfsData()
        data.f_bsize, data.f_frsize, data.f_namemax = st.f_bsize, st.f_frsize, st.f_namemax
        data.f_blocks, data.f_bfree, data.f_bavail = st.f_blocks, st.f_bfree, st.f_bavail
        data.f_files, data.f_ffree, data.f_favail = st.f_files, st.f_ffree, st.f_favail
        return data


class XattrFloor(Floor):
    """The floor with passthrough_ll's ``-o xattr``: every xattr call on the node's ``/proc/self/fd/N``."""

    def _node(self, inode: int) -> str:
        return f"/proc/self/fd/{self.fds[inode]}"

    async def getxattr(self, inode: int, name: bytes, ctx: Ctx) -> bytes:
        try:
            return os.getxattr(self._node(inode), name)
        except OSError as exc:
            raise error(exc) from None

    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: Ctx) -> None:
        try:
            os.setxattr(self._node(inode), name, value)
        except OSError as exc:
            raise error(exc) from None

    async def listxattr(self, inode: int, ctx: Ctx) -> Sequence[bytes]:
        try:
            return [os.fsencode(name) for name in os.listxattr(self._node(inode))]
        except OSError as exc:
            raise error(exc) from None

    async def removexattr(self, inode: int, name: bytes, ctx: Ctx) -> None:
        try:
            os.removexattr(self._node(inode), name)
        except OSError as exc:
            raise error(exc) from None


async def terminate_on(signals: AsyncIterator[int]) -> None:
    async for _ in signals:
        pyfuse3.terminate()  # main() returns, and serve() unmounts
        return


async def serve(ops: Floor, mountpoint: str) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        pyfuse3.init(ops, mountpoint, (set(pyfuse3.default_options) - {"default_permissions"}) | {"fsname=floor"})
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(terminate_on, signals)
                await pyfuse3.main()  # returns once terminated, or unmounted from outside
                nursery.cancel_scope.cancel()
        finally:
            pyfuse3.close(unmount=True)


def main(argv: list[str]) -> int:
    xattr = argv[:1] == ["--xattr"]
    if xattr:
        argv = argv[1:]
    if len(argv) != 2:
        print("usage: pyfuse3_floor.py [--xattr] SOURCE MOUNTPOINT", file=sys.stderr)
        return 2
    os.umask(0)  # the kernel has applied the caller's umask to every mode we get
    try:
        ops = (XattrFloor if xattr else Floor)(argv[0])
    except OSError as exc:
        print(f"pyfuse3_floor: cannot open the source: {exc}", file=sys.stderr)
        return 1
    trio.run(serve, ops, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
