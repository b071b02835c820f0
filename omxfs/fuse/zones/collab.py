"""``collaborative/``: every write to ``current/<path>`` is a commit with compare-and-swap (SPEC §4).

The store does the versioning, the locking and the conflict records; this handler decides *which* version a
program's write is based on, because a program only says "open, write, close". Each agent has a **base version**
per file, the last of: the version it observed (opened the file for reading, or read ``user.omx.version``), the
version it declared (``setfattr -n user.omx.expected_version``, ``-1`` = do not check), the version it committed.

- Opening for writing checks the base at once, so ``echo x > plan.md`` on a stale or never-read file fails at
  ``open`` with EBUSY instead of losing the write at a ``close()`` the shell ignores. An existing file the agent
  never observed is a conflict too: detection is strict, 100 %.
- The content is staged in memory (``O_TRUNC``: empty, else the base version's content) and committed by
  ``flush`` (the ``close()``, or an ``fsync``) with ``expected_version=<base>``; a new file is created with
  expected version 0 (create-only). Once another commit is newer than the base, every ``write()`` fails with
  EBUSY (one lookup of the next version's entry each), since a shell ignores the ``close()`` of
  ``(slow; echo x) > f``; a commit that lost a race fails the ``close()`` with EBUSY. Either way the close keeps
  what was staged and the recovery info under ``.conflicts/<agent>/``. While the file is open its writer's
  getattr shows the staged size (the kernel takes ``fstat``, ``lseek(SEEK_END)`` and the ``O_APPEND`` offset from
  it; the last commit's size let a write after an ``fstat`` land over an acknowledged append), and ``O_APPEND``
  writes land at the staged end whatever offset the kernel sends. Shared ``mmap`` fails at ``mmap`` with ENODEV:
  staged files are direct I/O, with no page cache to share.
- Reads serve one version for the whole open (the immutable ``v<N>.txt`` of the version current at open).
- Deleting or renaming a versioned file is refused (EACCES: v1 has no delete); directories may be made and
  removed when empty.
- Scratch names (``scratch.py``) live in the agent's scratch area: renaming one onto a real name commits its
  content with the agent's base for that name (``sed -i``, vim and other write-to-temp-then-rename saves: one
  version each); renaming a versioned file to a scratch name copies it there and leaves it in place (vim's
  backup); the source of a rename must be a scratch file to become a version. A file created the way ``mkstemp``
  creates one (``is_work_file``: ``perl -pi``'s ``XXEvjlEY``, any ``tempfile`` prefix) is a scratch file whatever
  its name, so a save through it is one version and a work file left behind is its creator's to delete; a link of
  a versioned file to a scratch name (``perl -pi.bak``) is a private backup copy.

xattrs of a versioned file: ``user.omx.owner`` (author of the current version), ``user.omx.version``,
``user.omx.author``, ``user.omx.sha256``, ``user.omx.message`` (the last commit's; setting it sets the next
commit's, also on an open file before it is closed) and ``user.omx.expected_version`` (the caller's base).
Mode, owner and times of versioned files are those of the store and cannot be changed (setattr ignores them).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import (
    AlreadyExists,
    Conflict,
    InvalidInput,
    IsADirectory,
    NoAttribute,
    NotADirectory,
    NotEmpty,
    NotFound,
    NotSupported,
    OmxError,
    ZoneDenied,
)
from omxfs.fuse.provenance import READER, ProvenanceReader
from omxfs.fuse.zones.base import Attr, AttrChanges, BufferHandle, Caller, Handle, ViewPath
from omxfs.fuse.zones.notes import AgentNotes, Base, new_stamp
from omxfs.fuse.zones.scratch import (
    FileHandle,
    ScratchView,
    directory_attr,
    file_attr,
    new_file_attr,
    text_value,
)
from omxfs.fuse.zones.staging import StagedHandle, Staging
from omxfs.store.atomic import lstat, open_dir
from omxfs.store.collab import NO_CHECK
from omxfs.store.layout import (
    AUTHOR,
    CONFLICTS,
    CURRENT,
    EXPECTED,
    MESSAGE,
    OWNER,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    SHA256,
    VERSION,
    VERSIONS,
)
from omxfs.store.names import VERSIONED_ROOM, check_room, relative_path
from omxfs.store.records import VersionEntry
from omxfs.store.scratch import is_scratch_name, is_work_file
from omxfs.store.tree import open_in

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

READ_ONLY_XATTRS = (OWNER, VERSION, AUTHOR, SHA256)
_INTEGER = re.compile(r"-?[0-9]+")


# -- the handler --------------------------------------------------------------------------------------------------


@dataclass
class _Commit:
    """What a staged write commits to and on which base; the handle's ``on_flush``."""

    handler: CollabHandler
    path: ViewPath
    base: Base | None
    stamp: int
    #: the opener's omx run and step (``provenance.py``), read at open: the process may be gone at the close
    provenance: dict[str, str] | None = None

    def _base(self, agent: str) -> Base | None:
        latest = self.handler.notes.base(agent, self.path)
        # A base declared after the open (setfattr on the open file) wins over the one seen at open.
        return latest if latest is not None and latest.declared and latest.stamp > self.stamp else self.base

    def __call__(self, handle: BufferHandle) -> None:
        base = self._base(handle.caller.agent)
        data = bytes(handle.data)
        self.base = self.handler.commit(handle.caller.agent, self.path, data, base, provenance=self.provenance)
        self.stamp = self.base.stamp

    def check_write(self, handle: StagedHandle) -> None:
        """Refuse a write once a commit newer than the base exists, so the program learns at its ``write()``
        (which ``echo`` and ``cat`` report) and not only at the ``close()`` a shell ignores. The commit at close
        still keeps what was staged under ``.conflicts/``; a base that is current, or -1, is never refused."""
        base = self._base(handle.caller.agent)
        if base is not None and base.version == NO_CHECK:
            return
        rel = CollabHandler._rel(self.path)
        latest = self.handler.zone.latest(rel) if rel is not None else None
        seen = 0 if base is None else base.version
        if latest is not None and latest.version > seen:
            raise Conflict(
                f"conflict on {self.path}: version {latest.version} (by {latest.author}) was committed after "
                f"version {seen}, the base of this write: it cannot commit; what was written before this write is "
                "kept under collaborative/.conflicts/ at close",
                {},
            )


class CollabHandler:
    """The ``collaborative`` zone directory and ``current/`` below it (``.versions``/``.conflicts`` are not ours)."""

    def __init__(self, ws: Workspace, provenance: ProvenanceReader = READER) -> None:
        self.ws = ws
        self.zone = ws.collab
        self.provenance = provenance
        self.scratch = ScratchView(ws)
        self.notes = AgentNotes()
        #: files being created (they exist for getattr and listings from their creation on)
        self.staging = Staging()
        #: versioned files open for writing: their writer sees the staged size (``getattr``)
        self.writers = Staging()
        #: work files (scratch files with ordinary names, ``is_work_file``) this mount has shown: never cached
        self.work_names: set[ViewPath] = set()

    # -- paths ----------------------------------------------------------------------------------------------------

    @staticmethod
    def _rel(path: ViewPath) -> str | None:
        """The store path of a view path below ``collaborative/current/``; None for the zone directories."""
        parts = path.parts
        if len(parts) <= 2:
            if parts[1:] not in ((), (CURRENT,)):
                raise NotFound(f"{path}: no such file or directory")
            return None
        if parts[1] != CURRENT:
            raise NotFound(f"{path}: no such file or directory")
        return "/".join(parts[2:])

    def _file(self, path: ViewPath) -> tuple[str, VersionEntry] | None:
        """The store path and latest commit of a versioned file, None if ``path`` is none."""
        rel = self._rel(path)
        if rel is None:
            return None
        try:
            entry = self.zone.latest(rel)
        except InvalidInput:
            return None
        return (rel, entry) if entry is not None else None

    def _dir_stat(self, path: ViewPath) -> os.stat_result | None:
        rel = self._rel(path)
        st = lstat(self.zone.current_dir, PurePosixPath(rel or ""))
        return st if st is not None and stat.S_ISDIR(st.st_mode) else None

    def _is_scratch(self, caller: Caller | None, path: ViewPath) -> bool:
        return caller is not None and len(path.parts) > 2 and self.scratch.exists(caller.agent, path)

    def _require_dir(self, path: ViewPath) -> None:
        if self._dir_stat(path) is None:
            raise NotFound(f"{path}: no such directory")

    def _settle(self, path: ViewPath) -> None:
        """Commit the closed-but-not-released files at ``path`` before a request looks at it."""
        self.staging.settle(path)
        self.writers.settle(path)

    def _own_staged(self, caller: Caller, path: ViewPath) -> StagedHandle | None:
        """The file ``caller`` has open for writing at ``path``, whose size its fstat and lseek must see."""
        return self.writers.of(caller.agent, path) or self.staging.of(caller.agent, path)

    # -- what runs where -----------------------------------------------------------------------------------------

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool:
        """Lookups, attributes, reading opens and opens that start a rewrite run on the trio loop (``Inline``):
        a few system calls and the cached history (``CollabZone.latest``). Whatever commits (a close waiting for
        its release, a conflict, which writes its record) or copies a file's content goes to a worker thread."""
        if self.staging.pending(path) or self.writers.pending(path):
            return False
        if op in ("lookup", "getattr", "access", "opendir", "getxattr", "listxattr", "open"):
            return True
        if op == "create":
            return self._is_scratch(caller, path) or self._file(path) is None
        if op == "truncate" and not self._is_scratch(caller, path):
            found = self._file(path)
            return found is not None and self._base_fits(self.notes.base(caller.agent, path), found[1])
        return False

    def uncached(self, path: ViewPath) -> bool:
        """Nodes the kernel must not cache (``ops``): scratch names, which show each agent its own file, files
        being created, which exist only once their first commit succeeds, and files open for writing, whose writer
        sees its staged size and everyone else the last commit."""
        if len(path.parts) <= 2:
            return False
        if is_scratch_name(path.name) or path in self.work_names:
            return True
        return self.staging.get(path) is not None or self.writers.get(path) is not None

    # -- nodes ----------------------------------------------------------------------------------------------------

    def getattr(self, path: ViewPath, caller: Caller | None = None) -> Attr:
        """``caller`` says whose scratch files to show; without it a scratch name shows the first holder's."""
        rel = self._rel(path)
        if rel is None:
            zone_dir = self.zone.dir if len(path.parts) == 1 else self.zone.current_dir
            return directory_attr(os.stat(zone_dir), writable=len(path.parts) == 2)
        if is_scratch_name(path.name):
            holders = [caller.agent] if caller is not None else self.scratch.owners(path)
            for agent in holders:
                if self.scratch.exists(agent, path):
                    return self.scratch.getattr(agent, path)
        own = self._own_staged(caller, path) if caller is not None else None
        if own is not None:
            return own.getattr()
        found = self._file(path)
        if found is not None:
            rel, entry = found
            st = lstat(self.zone.versions_dir, self.zone.version_file(rel, entry.version))
            if st is not None:
                return file_attr(st)
        elif caller is not None and self.scratch.exists(caller.agent, path):
            self.work_names.add(path)  # a work file: its creator's alone, like a scratch name
            return self.scratch.getattr(caller.agent, path)
        staged = self.staging.get(path)
        if staged is not None:
            return staged.getattr()
        st = self._dir_stat(path)
        if st is not None:
            return directory_attr(st, writable=True)
        raise NotFound(f"{path}: no such file or directory")

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        rel = self._rel(path)
        if len(path.parts) == 1:
            return [CURRENT, VERSIONS, CONFLICTS]
        names: set[str] = set()
        try:
            dir_fd = open_dir(self.zone.current_dir, PurePosixPath(rel or ""))
        except InvalidInput:
            raise NotADirectory(f"{path}: not a directory") from None
        try:
            with os.scandir(dir_fd) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        finally:
            os.close(dir_fd)
        for name, is_dir in entries:
            if is_dir or self._file(path / name) is not None:
                names.add(name)
        names.update(self.scratch.names(caller.agent, path))
        names.update(self.staging.names_in(path))
        return sorted(names)

    def readlink(self, path: ViewPath, caller: Caller | None = None) -> bytes:
        """Only scratch files can be symlinks (emacs's ``.#file`` locks)."""
        for agent in [caller.agent] if caller is not None else self.scratch.owners(path):
            if self.scratch.exists(agent, path):
                return self.scratch.readlink(agent, path)
        raise InvalidInput(f"{path}: not a symbolic link")

    # -- opening --------------------------------------------------------------------------------------------------

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        self._settle(path)
        if self._is_scratch(caller, path):
            return self.scratch.open(caller, path, flags)
        found = self._file(path)
        if found is None:
            if self._rel(path) is None or self._dir_stat(path) is not None:
                raise IsADirectory(f"{path}: is a directory")
            raise NotFound(f"{path}: no such file (or it is still being written by its creator)")
        rel, entry = found
        if flags & os.O_ACCMODE == os.O_RDONLY:
            # A snapshot: the immutable file of the version current now, whatever is committed while it is open.
            file = open_in(self.zone.versions_dir, self.zone.version_file(rel, entry.version))
            self.notes.set_base(caller.agent, path, entry.version)
            return FileHandle(caller, file, writable=False)
        return self._open_for_write(caller, path, rel, entry, flags)

    def _open_for_write(self, caller: Caller, path: ViewPath, rel: str, entry: VersionEntry, flags: int) -> Handle:
        self.ws.require_actor(caller.agent)
        base = self.check_base(caller.agent, path, rel, entry)
        data = b"" if flags & os.O_TRUNC else self.zone.read_version(rel, entry.version)
        st = lstat(self.zone.versions_dir, self.zone.version_file(rel, entry.version))
        commit = _Commit(self, path, base, base.stamp, self.provenance.of(caller.pid))
        attr = file_attr(st) if st else new_file_attr()
        handle = StagedHandle(caller, bytearray(data), attr, writable=True, append=bool(flags & os.O_APPEND))
        handle.on_flush = commit
        handle.before_write = commit.check_write
        handle.dirty = bool(flags & os.O_TRUNC)
        return self.writers.track(path, handle)

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        rel = self._rel_below_current(path, "create files")
        self._require_dir(path.parent)
        if is_scratch_name(path.name):
            self.ws.require_actor(caller.agent)
            return self.scratch.create(caller, path, mode, flags)
        if self._file(path) is not None:  # created meanwhile by another process or daemon
            if flags & os.O_EXCL:
                raise AlreadyExists(f"{path}: exists")
            return self.open(caller, path, flags)
        if self._dir_stat(path) is not None:
            raise AlreadyExists(f"{path}: is a directory")
        # odd names now rather than at close, and room for its conflict records' names
        check_room(relative_path(rel), VERSIONED_ROOM, "its conflict records <name>.rejected-<K>.json")
        self.ws.require_actor(caller.agent)
        if is_work_file(mode, flags):  # mkstemp's (perl -pi's XXEvjlEY): one save once renamed onto a name
            self.work_names.add(path)
            return self.scratch.create(caller, path, mode, flags)
        base = self.notes.base(caller.agent, path)
        handle = StagedHandle(
            caller, bytearray(), new_file_attr(), writable=True, dirty=True, append=bool(flags & os.O_APPEND)
        )
        stamp = base.stamp if base else new_stamp()
        commit = _Commit(self, path, base, stamp, self.provenance.of(caller.pid))
        handle.on_flush = commit
        handle.before_write = commit.check_write
        return self.staging.track(path, handle)

    # -- committing -----------------------------------------------------------------------------------------------

    def check_base(self, agent: str, path: ViewPath, rel: str, entry: VersionEntry) -> Base:
        """The agent's base for a write to an existing file, or a Conflict now (kept under .conflicts/)."""
        base = self.notes.base(agent, path)
        if base is not None and self._base_fits(base, entry):
            return base
        if base is None:
            why = f"{agent} has not read {path} (version {entry.version}): read it first, then write"
        else:
            why = f"{path} is at version {entry.version} but {agent} last saw version {base.version}"
        info = self.zone.refused_at_open(agent, rel, 0 if base is None else base.version)
        raise Conflict(f"conflict on {path}: {why}; nothing was written (see {info.get('kept_at')}.json)", info)

    @staticmethod
    def _base_fits(base: Base | None, entry: VersionEntry) -> bool:
        """Whether a write on ``base`` may replace ``entry``: its agent saw that version, or declared no check."""
        return base is not None and base.version in (NO_CHECK, entry.version)

    def commit(
        self, agent: str, path: ViewPath, content: bytes, base: Base | None, *, provenance: dict[str, str] | None = None
    ) -> Base:
        """Commit ``content`` on ``base`` (none: create-only); the new version becomes the agent's base."""
        rel = self._rel(path)
        if rel is None:
            raise IsADirectory(f"{path}: is a directory")
        message = self.notes.message(agent, path)
        expected = 0 if base is None else base.version
        try:
            entry = self.zone.write(
                agent, rel, content, expected_version=expected, message=message, provenance=provenance
            )
        except Conflict as exc:
            hint = "" if base is not None else f" ({agent} had not read it: read it first)"
            raise Conflict(f"{exc.message}{hint}", exc.info) from exc
        self.notes.used_message(agent, path, message)
        return self.notes.set_base(agent, path, entry.version)

    # -- changing the tree ----------------------------------------------------------------------------------------

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        rel = self._rel_below_current(path, "create directories")
        self.ws.require_actor(caller.agent)
        self._require_dir(path.parent)
        if self._file(path) is not None or self.staging.get(path) is not None:
            raise AlreadyExists(f"{path}: a file of that name exists")
        self.zone.make_dir(caller.agent, rel)

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        rel = self._rel_below_current(path, "remove directories")
        self.ws.require_actor(caller.agent)
        self._require_dir(path)
        if self.scratch.has_files(caller.agent, path) or self.staging.names_in(path):
            raise NotEmpty(f"{path}: directory not empty")
        self.zone.remove_dir(caller.agent, rel)
        self.scratch.remove_dir(caller.agent, path)

    @staticmethod
    def _rel_below_current(path: ViewPath, what: str) -> str:
        parts = path.parts
        if len(parts) < 3 or parts[1] != CURRENT:
            raise ZoneDenied(f"{path}: collaborative/ and collaborative/current/ are fixed; {what} below current/")
        return "/".join(parts[2:])

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        self._settle(path)
        if self._is_scratch(caller, path):
            self.scratch.unlink(caller.agent, path)
            self.work_names.discard(path)
            return
        if self._file(path) is not None or self.staging.get(path) is not None:
            raise ZoneDenied(f"{path}: versioned files cannot be deleted (no delete in v1); write new content instead")
        raise NotFound(f"{path}: no such file")

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        """scratch → scratch moves it; scratch → name commits it; versioned → scratch copies it; else refused."""
        self._settle(old)
        self._settle(new)
        agent = caller.agent
        self._rel_below_current(old, "rename files")
        self._rel_below_current(new, "rename files")
        if flags & RENAME_EXCHANGE:
            raise InvalidInput("RENAME_EXCHANGE is not supported in collaborative/")
        self.ws.require_actor(agent)
        self._require_dir(new.parent)
        if old == new:
            self.getattr(old, caller)
            return
        target_exists = self._is_scratch(caller, new) or self._file(new) is not None or self._dir_stat(new) is not None
        if flags & RENAME_NOREPLACE and target_exists:
            raise AlreadyExists(f"{new}: exists")
        if self._dir_stat(new) is not None:
            raise IsADirectory(f"{new}: is a directory")
        if self._is_scratch(caller, old):
            if is_scratch_name(new.name):
                self.scratch.rename(agent, old, new)
            else:
                self._commit_scratch(agent, old, new, self.provenance.of(caller.pid))
            self.work_names.discard(old)
            return
        found = self._file(old)
        if found is not None and is_scratch_name(new.name):
            # vim's backup by rename: the backup is a private copy; the versioned file stays (and is not observed).
            self.scratch.write(agent, new, self.zone.read_version(found[0], found[1].version))
            return
        if found is not None or self._dir_stat(old) is not None or self.staging.get(old) is not None:
            raise ZoneDenied(f"cannot rename {old}: versioned files and their directories stay where they are in v1")
        raise NotFound(f"{old}: no such file")

    def _commit_scratch(
        self, agent: str, old: ViewPath, new: ViewPath, provenance: dict[str, str] | None = None
    ) -> None:
        """``rename(temp, name)``: the temp file's content becomes the next version of ``name``."""
        content = self.scratch.read(agent, old)
        moved = self.notes.message(agent, old)
        carried = self.notes.message(agent, new) is None and moved is not None
        if carried:
            self.notes.set_message(agent, new, moved)
        try:
            self.commit(agent, new, content, self.notes.base(agent, new), provenance=provenance)
        except OmxError:
            if carried:  # the message stays the temp file's, for a retry of this rename, not the name's next save
                self.notes.set_message(agent, new, None)
            raise
        self.notes.set_message(agent, old, None)
        self.scratch.unlink(agent, old)

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        self._rel_below_current(path, "create links")
        if not is_scratch_name(path.name):
            raise ZoneDenied(f"{path}: symbolic links cannot be versioned (only editors' lock links are kept)")
        self.ws.require_actor(caller.agent)
        self._require_dir(path.parent)
        self.scratch.symlink(caller.agent, path, target)

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        """A link of a versioned file to a scratch name is a backup (``perl -pi.bak``: ``link(f, f.bak)``, then the
        work file renamed over ``f``): a private copy, as vim's backup by rename; other hard links are refused."""
        self._rel_below_current(new, "create links")
        found = None if self._is_scratch(caller, existing) else self._file(existing)
        if found is None or not is_scratch_name(new.name):
            raise ZoneDenied(f"{new}: hard links are not supported in collaborative/ (only backups to a scratch name)")
        self.ws.require_actor(caller.agent)
        self._require_dir(new.parent)
        if self._is_scratch(caller, new):
            raise AlreadyExists(f"{new}: exists")
        self.scratch.write(caller.agent, new, self.zone.read_version(found[0], found[1].version))

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> None:
        """Truncation is a write (staged on an open file, committed at once by path); the rest is ignored."""
        self._settle(path)
        if self._is_scratch(caller, path):
            if isinstance(handle, FileHandle) and changes.size is not None:
                handle.truncate(changes.size)
                changes = AttrChanges(mode=changes.mode, atime_ns=changes.atime_ns, mtime_ns=changes.mtime_ns)
            self.scratch.setattr(caller.agent, path, changes)
            return
        if changes.size is None:
            return  # mode, owner and times belong to the store (vim's chmod after a save must not fail)
        if isinstance(handle, BufferHandle) and handle.writable:
            handle.truncate(changes.size)
            return
        found = self._file(path)
        if found is None:
            raise NotFound(f"{path}: no such file")
        staged = self._open_for_write(caller, path, found[0], found[1], os.O_WRONLY)
        try:
            staged.truncate(changes.size)
            staged.flush()
        finally:
            staged.release()

    # -- xattrs ---------------------------------------------------------------------------------------------------

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes:
        self._settle(path)
        agent = caller.agent
        if name == MESSAGE and (self._is_scratch(caller, path) or self.staging.get(path) is not None):
            pending = self.notes.message(agent, path)
            if pending is not None:
                return pending.encode("utf-8")
        found = None if self._is_scratch(caller, path) else self._file(path)
        if found is None:
            raise NoAttribute(f"{path} has no attribute {name}")
        _, entry = found
        if name == VERSION:
            self.notes.set_base(agent, path, entry.version)  # reading the version observes it
            return str(entry.version).encode()
        if name == EXPECTED:
            base = self.notes.base(agent, path)
            if base is None:
                raise NoAttribute(f"{agent} has no base version for {path}: read the file or {VERSION}")
            return str(base.version).encode()
        values = {OWNER: entry.author, AUTHOR: entry.author, SHA256: entry.sha256, MESSAGE: entry.message}
        if name not in values:
            raise NoAttribute(f"{path} has no attribute {name}")
        return values[name].encode("utf-8")

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        self._settle(path)
        if self._is_scratch(caller, path) or self.staging.get(path) is not None:
            return [MESSAGE] if self.notes.message(caller.agent, path) is not None else []
        if self._file(path) is None:
            return []
        names = [OWNER, VERSION, AUTHOR, SHA256, MESSAGE]
        return [*names, EXPECTED] if self.notes.base(caller.agent, path) is not None else names

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        self._settle(path)
        if name in READ_ONLY_XATTRS:
            raise ZoneDenied(f"{name} is read-only: it describes the current version")
        if name not in (MESSAGE, EXPECTED):
            raise NotSupported(f"{name}: only {MESSAGE} and {EXPECTED} can be set in collaborative/")
        self.ws.require_actor(caller.agent)
        scratch = self._is_scratch(caller, path)
        found = None if scratch else self._file(path)
        if found is None and not scratch and self.staging.get(path) is None:
            if self._dir_stat(path) is not None:
                raise NotSupported(f"{path}: directories carry no omx attributes")
            raise NotFound(f"{path}: no such file")
        text = text_value(name, value)
        if name == MESSAGE:
            self.notes.set_message(caller.agent, path, text)
            return
        if not _INTEGER.fullmatch(text.strip()):
            raise InvalidInput(f"{EXPECTED} must be an integer (-1: do not check), not {text!r}")
        version = int(text.strip())
        # A version the file has not reached is declared too, as the store's ``expected_version`` takes it: the
        # commit on it is a conflict, kept under .conflicts/ with its content, not a write refused before it.
        if version < NO_CHECK:
            raise InvalidInput(f"{EXPECTED} must be -1 or a version, not {version}")
        self.notes.set_base(caller.agent, path, version, declared=True)

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        if name in READ_ONLY_XATTRS:
            raise ZoneDenied(f"{name} is read-only: it describes the current version")
        if name == MESSAGE:
            self.notes.set_message(caller.agent, path, None)
        elif name == EXPECTED:
            self.notes.forget_base(caller.agent, path)
        else:
            raise NoAttribute(f"{path} has no attribute {name}")
