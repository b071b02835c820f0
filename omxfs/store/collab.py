"""The collaborative zone: version-controlled files with compare-and-swap (SPEC §4).

On disk, for a file ``<path>``::

    collaborative/.versions/<path>/v<N>.json      version N's entry: created once, exclusively (the commit point)
    collaborative/.versions/<path>/v<N>.txt       version N's content, immutable
    collaborative/.versions/<path>/history.json   [{version, author, message, timestamp, sha256}], ascending:
                                                  the entries of the v<N>.json, kept for people and jq
    collaborative/current/<path>                  the latest content (for people and tools with no omx code)
    collaborative/.conflicts/<agent>/<path>.rejected-<K>(.json)
                                                  every rejected write of <agent>, each in a record of its own
    collaborative/.conflicts/<agent>/<path>(.json)
                                                  a copy of the latest record, where the recovery info is looked up

**What a commit rests on.** The store may live on a shared filesystem whose clients share no locks and cache
attributes (SPEC §1), so no lock and no re-read decides a race. A commit of version N creates ``v<N>.json``
exclusively (``atomic.create_exclusive``): of any number of writers on any number of machines exactly one
creates it, and that one's commit is version N; the others lost to it and see a conflict (or, writing with no
check, try N + 1). Before that, the content is written under a private staged name (``.v<N>.<token>.staged``,
named in the entry); after it, renamed to ``v<N>.txt``. Everything else is derived from what exists:
``history.json`` and ``current/`` are brought up to date after each commit (a writer that finds a newer commit
once it is done brings them up to that one), and a crash at any point leaves only what ``fsck --repair``
completes: a staged file its entry names, a history or current copy behind the last entry.

**Reading** needs no lock either: entries never change once created, so the ones known are kept, and the latest
is found by looking for the next entry file (one failed lookup per question, which is what the mount asks on
every request). A store written before entry files existed has its versions only in ``history.json``: they are
read from there, and entry files continue after them.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import stat
import threading
import time
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from omxfs.errors import (
    AlreadyExists,
    Conflict,
    InvalidInput,
    NotEmpty,
    NotFound,
    OmxError,
    StoreCorrupt,
)
from omxfs.plain_record import PlainRecord
from omxfs.store.atomic import (
    create_exclusive,
    exists,
    list_files,
    lstat,
    open_dir,
    read_bytes,
    read_with_stat,
    sync_dir,
)
from omxfs.store.conflicts import ConflictRecords
from omxfs.store.layout import (
    COLLABORATIVE,
    CONFLICTS,
    CURRENT,
    HISTORY,
    VERSIONS,
    entry_name,
    staged_name,
    version_name,
)
from omxfs.store.names import VERSIONED_ROOM, check_room, shared_path
from omxfs.store.records import (
    VersionEntry,
    VersionRecord,
    append_history,
    dump_history,
    dump_version_record,
    extend_history,
    load_history,
    load_version_record,
    sha256,
    utc_now,
)
from omxfs.store.tree import remove_empty_dir

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

NO_CHECK = -1  # expected_version that skips the check
HISTORY_CACHE_SIZE = 256  # histories kept per zone object
#: commits a writer with no check loses in a row before it gives up (each loss is another writer's success)
MAX_RACES = 64
#: how long a writer that lost a race waits to see the winner's entry (a shared filesystem's caches may hide
#: it for a second or two; on a local one it is there at once)
VISIBLE_WITHIN = 3.0


class CollabFile(PlainRecord):
    """A version of a collaborative file: its path, its content and its history entry."""

    __slots__ = ("content", "entry", "path")
    FIELDS = ("path", "content", "entry")

    def __init__(self, path: str, content: bytes, entry: VersionEntry) -> None:
        self.path, self.content, self.entry = path, content, entry

    @property
    def version(self) -> int:
        return self.entry.version


def _is_int(value: object) -> bool:
    """An int that is not a bool: ``True`` is no version number."""
    return isinstance(value, int) and not isinstance(value, bool)


class _Parsed:
    """``history.json`` as last read or written here: its bytes, its entries, its ``(ino, size, mtime, ctime)``."""

    __slots__ = ("entries", "key", "raw")

    def __init__(
        self, raw: bytes, entries: tuple[VersionEntry, ...], key: tuple[int, int, int, int] | None = None
    ) -> None:
        self.raw, self.entries, self.key = raw, entries, key


def _file_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _unlink_quietly(dir_fd: int, name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=dir_fd)


class CollabZone:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.root / COLLABORATIVE
        self.current_dir = self.dir / CURRENT
        self.versions_dir = self.dir / VERSIONS
        self.conflicts_dir = self.dir / CONFLICTS
        self.records = ConflictRecords(ws, self.conflicts_dir)
        self._known: dict[PurePosixPath, tuple[VersionEntry, ...]] = {}
        self._history_files: dict[PurePosixPath, _Parsed] = {}
        self._lock = threading.Lock()  # the mount calls the store from many worker threads

    # -- reading (lock-free) ------------------------------------------------------------------------------------

    def history(self, path: str) -> builtins.list[VersionEntry]:
        """Every commit of ``path``, ascending; empty if the file was never committed."""
        return list(self._entries(shared_path(path)))

    def _entries(self, rel: PurePosixPath) -> tuple[VersionEntry, ...]:
        """Every version of ``rel`` committed as far as this process can see: the ones known, then any entry files
        after them (usually one lookup that finds nothing)."""
        with self._lock:
            known = self._known.get(rel)
        if known is None:
            known = self._read_history_file(rel)
        more = self._beyond(rel, len(known))
        if more or rel not in self._known:
            known = (*known, *more)
            self._remember(self._known, rel, known)
        return known

    def _beyond(self, rel: PurePosixPath, n: int) -> builtins.list[VersionEntry]:
        """The entries of the versions after ``n`` whose entry files exist."""
        more: builtins.list[VersionEntry] = []
        while (record := self._record(rel, n + len(more) + 1)) is not None:
            more.append(record.entry())
        return more

    def _record(self, rel: PurePosixPath, n: int, *, wait: float = 0.0) -> VersionRecord | None:
        """Version ``n``'s entry file, None if it does not exist (after waiting up to ``wait`` seconds for it)."""
        if not wait and lstat(self.versions_dir, rel / entry_name(n)) is None:
            return None  # asked on every lookup of the mount: the usual answer, without an exception's cost
        where = f"{COLLABORATIVE}/{VERSIONS}/{rel}/{entry_name(n)}"
        deadline = time.monotonic() + wait
        torn_until: float | None = None
        delay = 0.001
        while True:
            try:
                record = load_version_record(read_bytes(self.versions_dir, rel / entry_name(n)), where)
            except (NotFound, InvalidInput):
                if time.monotonic() >= deadline:
                    return None
            except StoreCorrupt:
                # created in place where the filesystem has no hard links (``create_exclusive``): give its
                # writer a moment to finish it before calling it corrupt
                torn_until = torn_until or time.monotonic() + 0.5
                if time.monotonic() >= torn_until:
                    raise
            else:
                if record.version != n:
                    raise StoreCorrupt(f"{where}: it is the entry of version {record.version}")
                return record
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _read_history_file(self, rel: PurePosixPath) -> tuple[VersionEntry, ...]:
        """The entries ``history.json`` holds (none if absent). Where it does not parse but the entry files begin
        at version 1, they are the history and it is only a copy (``fsck`` reports it)."""
        try:
            raw, st = read_with_stat(self.versions_dir, rel / HISTORY)
        except NotFound:
            return ()
        try:
            entries = tuple(load_history(raw, f"{COLLABORATIVE}/{VERSIONS}/{rel}/{HISTORY}"))
        except StoreCorrupt:
            if self._record(rel, 1) is None:
                raise
            return ()
        self._remember(self._history_files, rel, _Parsed(raw, entries, _file_key(st)))
        return entries

    def _remember(self, table: dict[PurePosixPath, Any], rel: PurePosixPath, value: Any) -> None:
        with self._lock:
            table.pop(rel, None)
            while len(table) >= HISTORY_CACHE_SIZE:
                del table[next(iter(table))]
            table[rel] = value

    def latest(self, path: str) -> VersionEntry | None:
        """The last commit of ``path``, None if it has none; what the mount asks on every lookup (cheap: see
        ``_entries``)."""
        entries = self._entries(shared_path(path))
        return entries[-1] if entries else None

    def current_version(self, path: str) -> int:
        """The latest version number, 0 if the file does not exist."""
        return len(self._entries(shared_path(path)))

    def read(self, path: str) -> CollabFile:
        """The current content with its version."""
        rel = shared_path(path)
        history = self._entries(rel)
        if not history:
            raise NotFound(f"collaborative/{rel}: no such file")
        entry = history[-1]
        return CollabFile(str(rel), self.read_version(path, entry.version), entry)

    def read_version(self, path: str, version: int) -> bytes:
        if not _is_int(version) or version < 1:
            raise InvalidInput(f"version must be a positive integer, not {version!r}")
        return read_bytes(self.versions_dir, self.version_file(path, version))

    def version_file(self, path: str, version: int) -> PurePosixPath:
        """Where version ``version``'s content is, relative to ``.versions/``: ``<path>/v<N>.txt``, or the staged
        name its entry gives while its commit has not renamed it yet (or was killed before)."""
        rel = shared_path(path)
        final = rel / version_name(version)
        if exists(self.versions_dir, final):
            return final
        record = self._record(rel, version)
        if record is not None and record.staged is not None and exists(self.versions_dir, rel / record.staged):
            return rel / record.staged
        if record is not None and exists(self.versions_dir, final):  # renamed between the two looks
            return final
        raise NotFound(f"collaborative/{rel} has no version {version}")

    def list(self) -> list[str]:
        """Every collaborative file (those with a history), sorted."""
        marks = (HISTORY, entry_name(1))
        return sorted({str(p.parent) for p in list_files(self.versions_dir) if p.name in marks})

    # -- committing ---------------------------------------------------------------------------------------------

    def write(
        self,
        actor: str,
        path: str,
        content: bytes,
        *,
        expected_version: int,
        message: str | None = None,
        provenance: dict[str, str] | None = None,
    ) -> VersionEntry:
        """Commit ``content`` as the next version if ``expected_version`` is the current one (or ``-1``).

        On a mismatch raises ``Conflict`` with the recovery info, keeps the rejected content under
        ``.conflicts/<actor>/`` and leaves the file unchanged.
        """
        rel = shared_path(path)
        self.ws.require_actor(actor)
        if not _is_int(expected_version) or expected_version < NO_CHECK:
            raise InvalidInput(f"expected_version must be an integer >= -1, not {expected_version!r}")
        self._check_shape(rel)
        if not self._entries(rel):
            check_room(rel, VERSIONED_ROOM, "its conflict records <name>.rejected-<K>.json")
        # The lock only keeps this machine's writers from losing races to each other: the exclusive create decides.
        with self.ws.locks.hold(f"collab:{rel}"):
            for _ in range(MAX_RACES):
                history = self._entries(rel)
                current = len(history)
                if expected_version not in (NO_CHECK, current):
                    raise self._conflict(actor, rel, content, expected_version, history)
                entry = VersionEntry(
                    version=current + 1,
                    author=actor,
                    message=message if message is not None else f"write by {actor}",
                    timestamp=utc_now(),
                    sha256=sha256(content),
                    provenance=provenance,
                )
                if self._create_version(rel, entry, content):
                    self._remember(self._known, rel, (*history, entry))
                    self._derive(rel, entry, content)
                    return entry
                if self._record(rel, current + 1, wait=VISIBLE_WITHIN) is None:
                    raise self._unseen_conflict(actor, rel, content, expected_version, current + 1)
            raise self._conflict(actor, rel, content, expected_version, self._entries(rel))

    def _create_version(self, rel: PurePosixPath, entry: VersionEntry, content: bytes) -> bool:
        """Commit ``entry`` if its version is still free: the content staged, the entry created exclusively (the
        commit point), the content renamed into place, all durable before it returns True. False: another writer
        has that version, and nothing of this attempt is left."""
        dir_fd = open_dir(self.versions_dir, rel, create=True)
        try:
            # staged whole in the store's temp directory first: a writer killed at any point leaves no half file
            # in .versions/, at most a whole staged one no entry names (fsck removes it once old)
            staged = staged_name(entry.version, os.urandom(8).hex())
            self.ws.writer.write(self.versions_dir, rel / staged, content, mode=0o444, sync_dir=False)
            record = entry.staged_as(staged)
            try:
                won = create_exclusive(
                    dir_fd,
                    entry_name(entry.version),
                    dump_version_record(record),
                    staging=self.ws.writer.tmp_dir,
                    mode=0o444,
                )
            except BaseException:
                _unlink_quietly(dir_fd, staged)
                raise
            if not won:
                _unlink_quietly(dir_fd, staged)
                return False
            with contextlib.suppress(OSError):  # committed already; until renamed, readers use the staged name
                os.rename(staged, version_name(entry.version), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            sync_dir(dir_fd, self.versions_dir / rel)
            return True
        finally:
            os.close(dir_fd)

    def _derive(self, rel: PurePosixPath, entry: VersionEntry, content: bytes) -> None:
        """Bring ``history.json`` and ``current/`` up to the newest commit. Another writer may finish after this
        one with an older view; whoever sees a newer commit once done writes again, so the last to finish leaves
        the newest. A failure here (a full disk) is not the commit's: they stay behind until the next commit or
        ``fsck --repair``."""
        newest, data = entry, content
        for _ in range(MAX_RACES):
            try:
                self._sync_history(rel)
                self.ws.writer.write(self.current_dir, rel, data, durable=False)
            except OmxError:
                return
            more = self._beyond(rel, newest.version)
            if not more:
                return
            newest = more[-1]
            try:
                data = self.read_version(str(rel), newest.version)
            except OmxError:
                return

    def _sync_history(self, rel: PurePosixPath) -> None:
        """Append to ``history.json`` the entries it lacks; nothing it holds is ever dropped."""
        with self._lock:
            cached = self._history_files.get(rel)
        st = lstat(self.versions_dir, rel / HISTORY)
        if st is None:
            on_disk = _Parsed(b"", ())
        elif cached is not None and cached.key == _file_key(st):
            on_disk = cached
        else:
            raw, st = read_with_stat(self.versions_dir, rel / HISTORY)
            known = cached or _Parsed(b"", ())
            where = f"{COLLABORATIVE}/{VERSIONS}/{rel}/{HISTORY}"
            on_disk = _Parsed(raw, extend_history(raw, known.raw, known.entries, where), _file_key(st))
        entries = self._entries(rel)
        if len(on_disk.entries) >= len(entries):
            self._remember(self._history_files, rel, on_disk)
            return
        raw = on_disk.raw
        for entry in entries[len(on_disk.entries) :]:
            raw = append_history(raw, entry) if raw else dump_history([entry])
        # Only a copy of the entry files, unless it holds versions from before they existed: then it is their
        # one record and must be as durable as a commit.
        copy = exists(self.versions_dir, rel / entry_name(1))
        self.ws.writer.write(self.versions_dir, rel / HISTORY, raw, durable=not copy)
        installed = lstat(self.versions_dir, rel / HISTORY)
        key = _file_key(installed) if installed is not None and installed.st_size == len(raw) else None
        self._remember(self._history_files, rel, _Parsed(raw, entries, key))

    def rollback(
        self,
        actor: str,
        path: str,
        to_version: int,
        *,
        message: str | None = None,
        expected_version: int = NO_CHECK,
    ) -> VersionEntry:
        """A new version whose content is an old one's; history is never rewritten."""
        old = self.read_version(path, to_version)
        note = message if message is not None else f"rollback to version {to_version}"
        return self.write(actor, path, old, expected_version=expected_version, message=note)

    # -- directories of current/ ----------------------------------------------------------------------------------

    def make_dir(self, actor: str, path: str) -> None:
        """A directory in ``current/``: no version of its own, it only holds files."""
        self.ws.require_actor(actor)
        rel = shared_path(path)
        dir_fd = open_dir(self.current_dir, rel.parent)
        try:
            os.mkdir(rel.name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            raise AlreadyExists(f"{COLLABORATIVE}/{CURRENT}/{rel}: exists") from None
        finally:
            os.close(dir_fd)

    def remove_dir(self, actor: str, path: str) -> None:
        """Remove an empty directory of ``current/``; one whose files have (or had) versions is not empty."""
        self.ws.require_actor(actor)
        rel = shared_path(path)
        versions = lstat(self.versions_dir, rel)
        if versions is not None and stat.S_ISDIR(versions.st_mode) and any((self.versions_dir / rel).iterdir()):
            raise NotEmpty(f"{COLLABORATIVE}/{CURRENT}/{rel}: directory not empty")
        remove_empty_dir(self.current_dir, rel, f"{COLLABORATIVE}/{CURRENT}/{rel}")

    # -- conflicts ----------------------------------------------------------------------------------------------

    def conflict_record(self, agent: str, path: str) -> dict[str, Any]:
        """The recovery info of ``agent``'s latest refused write to ``path``, as kept on disk."""
        return self.records.latest(agent, path)

    def conflicts(self, agent: str, path: str) -> builtins.list[dict[str, Any]]:
        """Every rejected write of ``agent`` to ``path``, oldest first: each record's recovery info, with
        ``kept_at`` naming the file that holds the rejected content."""
        return self.records.all(agent, path)

    def refused_at_open(self, actor: str, path: str, base: int) -> dict[str, Any]:
        """A write refused when its file was opened, on ``base`` (0: never read), before any content: kept in a
        record of its own like every refused write, with no content; it becomes the latest record unless that
        holds a rejected write's content (which a record with none must not hide)."""
        rel = shared_path(path)
        self.ws.require_actor(actor)
        info = self._recovery_info(rel, base, self._entries(rel))
        info["your_content"] = ""
        info["suggestion"] = _nothing_written(rel, base, info)
        try:
            earlier = self.conflict_record(actor, str(rel))
        except (OmxError, ValueError):
            earlier = {}
        self.records.keep(actor, rel, b"", info, latest=not earlier.get("your_content"))
        return info

    def _conflict(
        self, actor: str, rel: PurePosixPath, content: bytes, base: int, history: tuple[VersionEntry, ...]
    ) -> Conflict:
        info = self._recovery_info(rel, base, history)
        info["your_content"] = _text(content)
        self.records.keep(actor, rel, content, info)
        return Conflict(f"conflict on collaborative/{rel}: {info['suggestion']}", info)

    def _unseen_conflict(self, actor: str, rel: PurePosixPath, content: bytes, base: int, taken: int) -> Conflict:
        """Another writer created version ``taken`` but this machine cannot see it yet (a shared filesystem's
        caches): a conflict all the same, whose current content is not known here."""
        info: dict[str, Any] = {
            "path": str(rel),
            "current_version": taken,
            "current_content": "",
            "current_author": "",
            "your_content": _text(content),
            "your_base": base,
            "suggestion": (
                f"another writer committed version {taken} of {rel}, not yet visible here: read it again in a "
                f"moment, merge your changes into it, and write again with expected_version={taken}. "
                "Your rejected content is kept (see kept_at)."
            ),
            "timestamp": utc_now(),
        }
        self.records.keep(actor, rel, content, info)
        return Conflict(f"conflict on collaborative/{rel}: {info['suggestion']}", info)

    def _recovery_info(self, rel: PurePosixPath, base: int, history: tuple[VersionEntry, ...]) -> dict[str, Any]:
        if history:
            head = history[-1]
            try:
                current_content = _text(self.read_version(str(rel), head.version))
            except NotFound:
                current_content = ""
            suggestion = (
                f"{rel} is at version {head.version} (by {head.author}) but you wrote on version {base}. "
                f"Read the current version (current_content), merge your changes into it, and write again "
                f"with expected_version={head.version}. "
                "Your rejected content is kept (see kept_at)."
            )
            current_version, current_author = head.version, head.author
        else:
            current_content, current_version, current_author = "", 0, ""
            suggestion = (
                f"{rel} does not exist yet, but you wrote expecting version {base}. "
                f"Write again with expected_version=0 (create) or -1 (no check)."
            )
        return {
            "path": str(rel),
            "current_version": current_version,
            "current_content": current_content,
            "current_author": current_author,
            "your_base": base,
            "suggestion": suggestion,
            "timestamp": utc_now(),
        }

    # -- helpers ------------------------------------------------------------------------------------------------

    def _check_shape(self, rel: PurePosixPath) -> None:
        """A collaborative path cannot be both a file and a directory of other files."""
        for parent in list(reversed(rel.parents))[1:]:
            if self._entries(parent):
                raise InvalidInput(f"collaborative/{parent} is a file, so {rel} cannot be created under it")
        target = self.current_dir / rel
        if target.is_dir() and not target.is_symlink():
            raise InvalidInput(f"collaborative/{rel} is a directory")
        # the current copy is written after the commit point: a symlink or file in its way is refused before it
        with contextlib.suppress(NotFound):
            os.close(open_dir(self.current_dir, rel.parent))


def _nothing_written(rel: PurePosixPath, base: int, info: dict[str, Any]) -> str:
    """The suggestion of a write refused at open: no content ever reached the file, so none is kept (the record's
    ``kept_at`` file is empty), and what to do instead."""
    current = f"version {info['current_version']} (by {info['current_author']})"
    if base == 0:
        why = f"you opened {rel} for writing without having read it, and it is at {current}"
    else:
        why = f"you opened {rel} for writing on version {base}, but it is at {current}"
    return (
        f"Nothing was written: {why}, so the open was refused (EBUSY) before any content, lest the write replace "
        "changes you have not seen; the record (kept_at) is empty. Read the current version (current_content), "
        "merge your changes into it, and write again."
    )


__all__ = ["NO_CHECK", "CollabFile", "CollabZone", "entry_name", "version_name"]
