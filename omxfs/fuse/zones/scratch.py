"""Editor temp files, swap files and write-to-temp-then-rename saves: kept per agent, never versioned or delivered.

Zones whose writes are commits (collaborative, handoff, realtime) would turn every ``.plan.md.swp`` or
``sedAb12Cd`` into a version or a delivery of its own. Such names are *scratch*: the file lives as a real,
ordinary file at ``WS/.omxfs/scratch/<agent>/<view path>``, only its agent sees it (in listings of the
directory it was made in), and the zone handler decides what a rename between a scratch name and a real name
means (for the collaborative zone: a commit of the scratch file's content). Scratch files are private to one
agent because two agents editing the same file must not share one swap file.

The rule is a name rule, because it is the only thing a handler knows when a program creates a file: ``sed -i``
closes its temp file *before* renaming it onto the target, so "created, closed, then renamed" cannot be told from
an ordinary ``cp`` at close time. The names, and who makes them:

=====================================  ===============================================================
``.*.sw?`` ``.*.sv?`` (``.x.swp``,     vim swap files and vim's "can I write here" probe (``.swx``);
``.swo`` …, ``.swx``)                  also nano's lock file
``4913``, ``5036``, … (4913 + 123·k)   vim's probe for "may I create a file with the same owner"
``*~``                                 vim, emacs, nano backups
``.#*``, ``#*#``                       emacs lock (a symlink) and auto-save files
``*.swp`` ``*.tmp`` ``*.bak``          common temp and backup suffixes (``sed -i.bak`` backups too)
``*.orig`` ``*.rej``                   ``patch`` leftovers
``.~lock.*#``, ``~$*``                 LibreOffice and Microsoft Office lock files
``.goutputstream-*``                   GLib/GIO atomic saves (gedit, GNOME apps)
``sedXXXXXX``                          GNU ``sed -i`` (``sed`` + 6 of ``[A-Za-z0-9]``, from mkostemp)
``tmpXXXXXXXX``                        Python ``tempfile`` (``tmp`` + 8 of ``[a-z0-9_]``)
``.<name>.XXXXXX``                     rsync's temp files (6 of ``[A-Za-z0-9]`` after a dotted name)
``*.omx-tmp``                          ``omx``'s own file tools (``.<name>.XXXXXXXX.omx-tmp``)
=====================================  ===============================================================

Only the last component of a path counts; a directory is never scratch. API for zone handlers:
``is_scratch_name(name)`` and ``ScratchArea`` (one per handler, over the workspace). The same zones stage their
writes in memory and commit them at the right close: ``StagedHandle`` and ``Staging`` at the end of this module
are for them too (why a flush alone must not always commit: see ``StagedHandle``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import AlreadyExists, InvalidInput, NotFound, NotSupported, OmxError, from_os_error
from omxfs.fuse.zones.base import Attr, AttrChanges, BufferHandle, Caller, ViewPath, dir_attr
from omxfs.fuse.zones.read_only import attr_of
from omxfs.store.atomic import open_dir
from omxfs.store.layout import SCRATCH
from omxfs.store.names import check_agent

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace


_SCRATCH = re.compile(
    r"""
      \..+\.s[vw][a-z]            # vim swap files and probes: .x.swp .x.swo … .x.swx .x.svz
    | .+~                         # backups: vim, emacs, nano
    | \.\#.+ | \#.+\#             # emacs lock and auto-save
    | .+\.(?:swp|tmp|bak|orig|rej|omx-tmp)
    | \.~lock\..+\# | ~\$.+       # office lock files
    | \.goutputstream-.+          # GLib atomic save
    | sed[A-Za-z0-9]{6}           # GNU sed -i
    | tmp[a-z0-9_]{8}             # Python tempfile
    | \..+\.[A-Za-z0-9]{6}        # rsync
    """,
    re.VERBOSE,
)
_VIM_PROBE_FIRST, _VIM_PROBE_STEP = 4913, 123


def is_scratch_name(name: str) -> bool:
    """Whether a file named ``name`` is an editor's or a tool's temporary file (the table in this module's doc)."""
    if name.isdigit() and name.isascii():
        n = int(name)
        return n >= _VIM_PROBE_FIRST and (n - _VIM_PROBE_FIRST) % _VIM_PROBE_STEP == 0
    return _SCRATCH.fullmatch(name) is not None


def open_in(root: Path, rel: PurePosixPath) -> int:
    """A read-only descriptor of the regular file ``root/rel``, no symlink followed."""
    dir_fd = open_dir(root, rel.parent)
    try:
        return os.open(rel.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise NotFound(f"{rel}: {os.strerror(exc.errno or errno.EIO)}") from exc
    finally:
        os.close(dir_fd)


def file_attr(st: os.stat_result, perm: int = 0o644) -> Attr:
    """A store file shown with the mode of its zone (the store's own modes say nothing about who may write)."""
    return Attr(
        mode=stat.S_IFREG | perm,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_mtime_ns,
        atime_ns=st.st_atime_ns,
        uid=st.st_uid,
        gid=st.st_gid,
    )


def new_file_attr() -> Attr:
    """A file created through the mount and not committed yet: empty, made now."""
    now = time.time_ns()
    return Attr(mode=stat.S_IFREG | 0o644, mtime_ns=now, ctime_ns=now, atime_ns=now, uid=os.getuid(), gid=os.getgid())


def directory_attr(st: os.stat_result | None, *, writable: bool) -> Attr:
    if st is None:
        return dir_attr(writable=writable)
    return dir_attr(st.st_mtime_ns, writable=writable, uid=st.st_uid, gid=st.st_gid)


class FileHandle:
    """An open real file, read and written in place (scratch files, snapshots of immutable store files).

    ``direct_io``: one view path can be a different file for each agent (scratch) or a different version for
    each open (snapshots), so the kernel's page cache, shared by all opens of an inode, must not be used.
    """

    def __init__(self, caller: Caller, fd: int, *, writable: bool) -> None:
        self.caller = caller
        self.fd = fd
        self.writable = writable
        self.keep_cache = False
        self.direct_io = True

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def write(self, offset: int, data: bytes) -> int:
        if not self.writable:
            raise NotSupported("this file is not open for writing")
        try:
            return os.pwrite(self.fd, data, offset)
        except OSError as exc:
            raise from_os_error(exc, "write") from exc

    def truncate(self, size: int) -> None:
        try:
            os.ftruncate(self.fd, size)
        except OSError as exc:
            raise from_os_error(exc, "truncate") from exc

    def flush(self) -> None:
        """Nothing is staged: writes went to the file."""

    def fsync(self, datasync: bool) -> None:
        (os.fdatasync if datasync else os.fsync)(self.fd)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1

    def getattr(self) -> Attr:
        return attr_of(os.fstat(self.fd))


class ScratchArea:
    """The scratch files of every agent of one workspace, at ``WS/.omxfs/scratch/<agent>/<view path>``.

    Every call names the agent whose scratch it touches; the view path is the path the agent sees on the mount.
    Paths are walked without following symlinks (emacs's lock symlinks are scratch files themselves).
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.root = ws.meta / SCRATCH

    def _rel(self, agent: str, path: ViewPath) -> PurePosixPath:
        check_agent(agent)
        if path.is_absolute() or ".." in path.parts:
            raise InvalidInput(f"{path}: not a view path")
        return PurePosixPath(agent) / path

    def _dir_fd(self, agent: str, path: ViewPath, *, create: bool = False) -> int:
        """A descriptor of the real directory that holds ``path``'s scratch file (made on demand to create one)."""
        if create:
            self.root.mkdir(mode=0o755, exist_ok=True)
        return open_dir(self.root, self._rel(agent, path).parent, create=create)

    def lstat(self, agent: str, path: ViewPath) -> os.stat_result | None:
        """The scratch file's status, or None if the agent has no scratch file (a directory does not count)."""
        try:
            dir_fd = self._dir_fd(agent, path)
        except OmxError:
            return None
        try:
            st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(dir_fd)
        return None if stat.S_ISDIR(st.st_mode) else st

    def exists(self, agent: str, path: ViewPath) -> bool:
        return self.lstat(agent, path) is not None

    def getattr(self, agent: str, path: ViewPath) -> Attr:
        st = self.lstat(agent, path)
        if st is None:
            raise NotFound(f"{path}: no such file")
        return attr_of(st)

    def owners(self, path: ViewPath) -> list[str]:
        """The agents that have a scratch file at ``path`` (for requests that do not say who asks)."""
        try:
            agents = sorted(e.name for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False))
        except OSError:
            return []
        return [a for a in agents if self.exists(a, path)]

    def names(self, agent: str, directory: ViewPath) -> list[str]:
        """The agent's scratch files in the view directory ``directory`` (sub-directories only mirror it)."""
        try:
            dir_fd = open_dir(self.root, self._rel(agent, directory))
        except OmxError:
            return []
        try:
            with os.scandir(dir_fd) as it:
                return sorted(e.name for e in it if not e.is_dir(follow_symlinks=False))
        finally:
            os.close(dir_fd)

    def open(self, caller: Caller, path: ViewPath, flags: int) -> FileHandle:
        return self._open(caller, path, flags & ~os.O_CREAT, 0)

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> FileHandle:
        return self._open(caller, path, flags | os.O_CREAT, stat.S_IMODE(mode) & ~caller.umask)

    def _open(self, caller: Caller, path: ViewPath, flags: int, mode: int) -> FileHandle:
        keep = os.O_ACCMODE | os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_APPEND
        dir_fd = self._dir_fd(caller.agent, path, create=bool(flags & os.O_CREAT))
        try:
            fd = os.open(path.name, (flags & keep) | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        return FileHandle(caller, fd, writable=(flags & os.O_ACCMODE) != os.O_RDONLY)

    def read(self, agent: str, path: ViewPath) -> bytes:
        dir_fd = self._dir_fd(agent, path)
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def write(self, agent: str, path: ViewPath, data: bytes) -> None:
        """Replace the agent's scratch file at ``path`` with ``data`` (atomically: it may be a backup)."""
        self.root.mkdir(mode=0o755, exist_ok=True)
        self.ws.writer.write(self.root, self._rel(agent, path), data)

    def unlink(self, agent: str, path: ViewPath) -> None:
        dir_fd = self._dir_fd(agent, path)
        try:
            os.unlink(path.name, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def rename(self, agent: str, old: ViewPath, new: ViewPath, *, noreplace: bool = False) -> None:
        """Rename one scratch file of ``agent`` to another scratch name."""
        old_fd = self._dir_fd(agent, old)
        try:
            new_fd = self._dir_fd(agent, new, create=True)
        except OmxError:
            os.close(old_fd)
            raise
        try:
            if noreplace and self.exists(agent, new):
                raise AlreadyExists(f"{new}: exists")
            os.rename(old.name, new.name, src_dir_fd=old_fd, dst_dir_fd=new_fd)
        except OSError as exc:
            raise from_os_error(exc, old) from exc
        finally:
            os.close(old_fd)
            os.close(new_fd)

    def symlink(self, agent: str, path: ViewPath, target: bytes) -> None:
        dir_fd = self._dir_fd(agent, path, create=True)
        try:
            os.symlink(target, path.name.encode("utf-8", "surrogateescape"), dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def readlink(self, agent: str, path: ViewPath) -> bytes:
        dir_fd = self._dir_fd(agent, path)
        try:
            return os.readlink(path.name.encode("utf-8", "surrogateescape"), dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def setattr(self, agent: str, path: ViewPath, changes: AttrChanges) -> None:
        """truncate, chmod and utimes on the scratch file; ownership stays the daemon's (the store is its)."""
        dir_fd = self._dir_fd(agent, path)
        try:
            st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
            if changes.size is not None and stat.S_ISREG(st.st_mode):
                fd = os.open(path.name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
                try:
                    os.ftruncate(fd, changes.size)
                finally:
                    os.close(fd)
            if changes.mode is not None and stat.S_ISREG(st.st_mode):
                os.chmod(path.name, stat.S_IMODE(changes.mode), dir_fd=dir_fd)
            if changes.atime_ns is not None or changes.mtime_ns is not None:
                times = (
                    st.st_atime_ns if changes.atime_ns is None else changes.atime_ns,
                    st.st_mtime_ns if changes.mtime_ns is None else changes.mtime_ns,
                )
                os.utime(path.name, ns=times, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def has_files(self, agent: str, directory: ViewPath) -> bool:
        return bool(self.names(agent, directory))

    def remove_dir(self, agent: str, directory: ViewPath) -> None:
        """Drop the agent's (empty) mirror of a view directory that is being removed; best effort."""
        with contextlib.suppress(OmxError, OSError):
            parent = open_dir(self.root, self._rel(agent, directory).parent)
            try:
                os.rmdir(directory.name, dir_fd=parent)
            finally:
                os.close(parent)


# -- staged writes: what the zones whose writes are commits share ---------------------------------------------


@dataclass
class StagedHandle(BufferHandle):
    """A staged file that commits at the right close.

    The kernel sends a flush at *every* close of a descriptor, and shells open a file, ``dup2`` it to stdout and
    close the original before the command writes anything. So ``flush`` commits only after the program wrote
    (``write``, ``ftruncate``) since the last commit; a change that was never written by the program (a file
    created and closed empty, ``O_TRUNC`` alone) is committed at ``release``, whose errors the ops layer logs
    but the kernel cannot report. A failed commit is not retried at release (its content is kept by the store).
    """

    on_release: Callable[[StagedHandle], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: bool = False
    #: closed once since the last write: its uncommitted change waits for the release
    settled: bool = False

    def inline(self, op: str, end: int = 0) -> bool:
        """As a buffer's, except that a close commits when the program wrote since the last one (``flush``) or
        left anything uncommitted (``release``), and waits for a commit running in another thread."""
        if op in ("flush", "release"):
            return not (self.written if op == "flush" else self.dirty) and not self.lock.locked()
        return super().inline(op, end)

    def write(self, offset: int, data: bytes) -> int:
        n = super().write(offset, data)
        self.written, self.settled = True, False
        return n

    def truncate(self, size: int) -> None:
        super().truncate(size)
        self.written, self.settled = True, False

    def flush(self) -> None:
        with self.lock:
            if self.written:
                self._commit()
            else:
                self.settled = True

    def settle(self) -> None:
        """Commit now a change that waits for the release (``touch x; cat x``: the release may come later than the
        next request); its failure was the closed program's, so it is not raised here (the store kept it)."""
        with self.lock:
            if self.settled and self.dirty:
                with contextlib.suppress(OmxError):
                    self._commit()

    def _commit(self) -> None:
        try:
            if self.dirty and self.on_flush is not None:
                self.on_flush(self)
        finally:
            self.dirty = self.written = False

    def release(self) -> None:
        try:
            with self.lock:
                self._commit()
        finally:
            if self.on_release is not None:
                self.on_release(self)
            super().release()


class Staging:
    """The open staged handles per view path. A file created through this mount exists (for getattr and listings)
    from its creation on, though the store sees it only when it is committed at close."""

    def __init__(self) -> None:
        self._open: dict[ViewPath, list[StagedHandle]] = {}
        self._lock = threading.Lock()

    def track(self, path: ViewPath, handle: StagedHandle) -> StagedHandle:
        """Register ``handle`` until it is released."""
        handle.on_release = lambda h: self.remove(path, h)
        with self._lock:
            self._open.setdefault(path, []).append(handle)
        return handle

    def remove(self, path: ViewPath, handle: StagedHandle) -> None:
        with self._lock:
            handles = [h for h in self._open.get(path, []) if h is not handle]
            if handles:
                self._open[path] = handles
            else:
                self._open.pop(path, None)

    def settle(self, path: ViewPath) -> None:
        """Commit the closed-but-not-released files at ``path`` before another request looks at it."""
        with self._lock:
            handles = list(self._open.get(path, []))
        for handle in handles:
            handle.settle()

    def pending(self, path: ViewPath) -> bool:
        """Whether ``settle(path)`` would commit something (a request that settles then must not run inline)."""
        with self._lock:
            return any(h.settled and h.dirty for h in self._open.get(path, []))

    def get(self, path: ViewPath) -> StagedHandle | None:
        with self._lock:
            handles = self._open.get(path)
            return handles[-1] if handles else None

    def names_in(self, directory: ViewPath) -> list[str]:
        with self._lock:
            return [p.name for p in self._open if p.parent == directory]

    def held_by(self, agent: str, path: ViewPath) -> bool:
        with self._lock:
            return any(h.caller.agent == agent for h in self._open.get(path, []))


def text_value(name: str, value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} must be UTF-8 text") from None
