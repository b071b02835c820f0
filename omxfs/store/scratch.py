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

A name rule cannot know every tool: ``perl -pi`` makes ``XXEvjlEY``, a program may ask ``mkstemp`` for any
template. So a file is also scratch, whatever its name, when it is created the way ``mkstemp`` creates one
(``is_work_file``: read-write, exclusive, mode 0600), which ``cp`` (write-only), shells (no ``O_EXCL``) and editors
writing in place never do; it is a *work file*, kept and shown like the named ones until it is renamed onto a name.

Only the last component of a path counts; a directory is never scratch. ``is_scratch_name(name)`` is the rule;
``ScratchArea`` (over one workspace) keeps the files, and ``fsck`` checks the area (``stray-scratch``). The mount
shows them through ``omxfs.fuse.zones.scratch``.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import AlreadyExists, InvalidInput, OmxError, from_os_error
from omxfs.store.atomic import open_dir
from omxfs.store.layout import SCRATCH
from omxfs.store.names import check_agent
from omxfs.store.tree import OpenFile

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


def is_work_file(mode: int, flags: int) -> bool:
    """Whether a create with ``mode`` and open ``flags`` is ``mkstemp``'s (glibc, perl, Python's ``tempfile``, sed):
    ``O_RDWR | O_CREAT | O_EXCL`` with permissions 0600. ``cp -a`` also creates with 0600 and ``O_EXCL``, but
    write-only, so a copied file still becomes a version or a delivery at its close."""
    exclusive = bool(flags & os.O_EXCL)  # a create: O_CREAT is implied
    return exclusive and flags & os.O_ACCMODE == os.O_RDWR and stat.S_IMODE(mode) == 0o600


class ScratchArea:
    """The scratch files of every agent of one workspace, at ``WS/.omxfs/scratch/<agent>/<view path>``.

    Every call names the agent whose scratch it touches; the view path is the path the agent sees on the mount.
    Paths are walked without following symlinks (emacs's lock symlinks are scratch files themselves).
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.root = ws.meta / SCRATCH

    def _rel(self, agent: str, path: PurePosixPath) -> PurePosixPath:
        check_agent(agent)
        if path.is_absolute() or ".." in path.parts:
            raise InvalidInput(f"{path}: not a view path")
        return PurePosixPath(agent) / path

    def _dir_fd(self, agent: str, path: PurePosixPath, *, create: bool = False) -> int:
        """A descriptor of the real directory that holds ``path``'s scratch file (made on demand to create one)."""
        if create:
            self.root.mkdir(mode=0o755, exist_ok=True)
        return open_dir(self.root, self._rel(agent, path).parent, create=create)

    def lstat(self, agent: str, path: PurePosixPath) -> os.stat_result | None:
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

    def exists(self, agent: str, path: PurePosixPath) -> bool:
        return self.lstat(agent, path) is not None

    def owners(self, path: PurePosixPath) -> list[str]:
        """The agents that have a scratch file at ``path`` (for requests that do not say who asks)."""
        try:
            agents = sorted(e.name for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False))
        except OSError:
            return []
        return [a for a in agents if self.exists(a, path)]

    def names(self, agent: str, directory: PurePosixPath) -> list[str]:
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

    def open_file(self, agent: str, path: PurePosixPath, flags: int, mode: int = 0) -> OpenFile:
        """Open (with ``O_CREAT`` in ``flags``: create, with ``mode``) the agent's scratch file at ``path``."""
        keep = os.O_ACCMODE | os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_APPEND
        dir_fd = self._dir_fd(agent, path, create=bool(flags & os.O_CREAT))
        try:
            fd = os.open(path.name, (flags & keep) | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        return OpenFile(fd, path)

    def read(self, agent: str, path: PurePosixPath) -> bytes:
        dir_fd = self._dir_fd(agent, path)
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def write(self, agent: str, path: PurePosixPath, data: bytes) -> None:
        """Replace the agent's scratch file at ``path`` with ``data`` (atomically: it may be a backup)."""
        self.root.mkdir(mode=0o755, exist_ok=True)
        self.ws.writer.write(self.root, self._rel(agent, path), data)

    def unlink(self, agent: str, path: PurePosixPath) -> None:
        dir_fd = self._dir_fd(agent, path)
        try:
            os.unlink(path.name, dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def rename(self, agent: str, old: PurePosixPath, new: PurePosixPath, *, noreplace: bool = False) -> None:
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

    def symlink(self, agent: str, path: PurePosixPath, target: bytes) -> None:
        dir_fd = self._dir_fd(agent, path, create=True)
        try:
            os.symlink(target, path.name.encode("utf-8", "surrogateescape"), dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def readlink(self, agent: str, path: PurePosixPath) -> bytes:
        dir_fd = self._dir_fd(agent, path)
        try:
            return os.readlink(path.name.encode("utf-8", "surrogateescape"), dir_fd=dir_fd)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def change(
        self,
        agent: str,
        path: PurePosixPath,
        *,
        size: int | None = None,
        mode: int | None = None,
        atime_ns: int | None = None,
        mtime_ns: int | None = None,
    ) -> None:
        """truncate, chmod and utimes on the scratch file; ownership stays the daemon's (the store is its)."""
        dir_fd = self._dir_fd(agent, path)
        try:
            st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
            if size is not None and stat.S_ISREG(st.st_mode):
                fd = os.open(path.name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
            if mode is not None and stat.S_ISREG(st.st_mode):
                os.chmod(path.name, stat.S_IMODE(mode), dir_fd=dir_fd)
            if atime_ns is not None or mtime_ns is not None:
                times = (
                    st.st_atime_ns if atime_ns is None else atime_ns,
                    st.st_mtime_ns if mtime_ns is None else mtime_ns,
                )
                os.utime(path.name, ns=times, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise from_os_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    def has_files(self, agent: str, directory: PurePosixPath) -> bool:
        return bool(self.names(agent, directory))

    def remove_dir(self, agent: str, directory: PurePosixPath) -> None:
        """Drop the agent's (empty) mirror of a view directory that is being removed; best effort."""
        with contextlib.suppress(OmxError, OSError):
            parent = open_dir(self.root, self._rel(agent, directory).parent)
            try:
                os.rmdir(directory.name, dir_fd=parent)
            finally:
                os.close(parent)

    def agents(self) -> list[str]:
        """The names of the directories of the area, one per agent that has had scratch files (for ``fsck``)."""
        try:
            with os.scandir(self.root) as entries:
                return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            return []
