"""The collaborative zone: version-controlled files with compare-and-swap (SPEC §4, seed FR-3).

On disk, for a file ``<path>``::

    collaborative/current/<path>                  the current content (for people and tools with no omx code)
    collaborative/.versions/<path>/v<N>.txt       every version, immutable
    collaborative/.versions/<path>/history.json   [{version, author, message, timestamp, sha256}], ascending
    collaborative/.conflicts/<agent>/<path>       the last rejected content of <agent> for <path>
    collaborative/.conflicts/<agent>/<path>.json  what that writer needs to recover

A commit holds the file's OS lock while it checks the caller's expected version against the history and
writes, in this order, the version file, the history and the current file. ``history.json`` is therefore the
truth: a reader takes its last entry and reads that version's file, which always exists by then, so readers
need no lock, and a crash at any point leaves the previous version fully readable.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from omxfs.errors import Conflict, InvalidInput, NotFound, StoreCorrupt
from omxfs.store.atomic import DiskError, FileWrite, exists, list_files, lstat, read_bytes, read_with_stat
from omxfs.store.names import check_agent, relative_path
from omxfs.store.records import (
    VersionEntry,
    append_history,
    dump_history,
    dump_json,
    extend_history,
    sha256,
    utc_now,
)

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

NO_CHECK = -1  # expected_version that skips the check (seed C-8)
HISTORY = "history.json"
HISTORY_CACHE_SIZE = 256  # parsed histories kept per zone object


@dataclass(frozen=True)
class CollabFile:
    path: str
    content: bytes
    entry: VersionEntry

    @property
    def version(self) -> int:
        return self.entry.version


def version_name(n: int) -> str:
    return f"v{n}.txt"


def _is_int(value: object) -> bool:
    """An int that is not a bool: ``True`` is no version number."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Parsed:
    """A history file as last read: its bytes, its entries, and its ``(ino, size, mtime, ctime)`` if known."""

    raw: bytes
    entries: tuple[VersionEntry, ...]
    key: tuple[int, int, int, int] | None = None


def _file_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


class CollabZone:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.root / "collaborative"
        self.current_dir = self.dir / "current"
        self.versions_dir = self.dir / ".versions"
        self.conflicts_dir = self.dir / ".conflicts"
        self._parsed: dict[PurePosixPath, _Parsed] = {}
        self._parsed_lock = threading.Lock()  # the mount calls the store from many worker threads

    # -- reading (lock-free) ------------------------------------------------------------------------------------

    def history(self, path: str) -> builtins.list[VersionEntry]:
        """Every commit of ``path``, ascending; empty if the file was never committed."""
        return list(self._history(relative_path(path))[1])

    def _history(self, rel: PurePosixPath) -> tuple[bytes, tuple[VersionEntry, ...]]:
        """The raw history file and its entries.

        Not even read while an ``lstat`` says its file is the one last read or written here: a commit never changes
        a history file in place, it renames a longer one over it (a new inode, a new size and ctime), so the same
        ``(ino, size, mtime, ctime)`` is the same content. A few system calls instead of reading every version's
        line is what lets the mount answer lookups on its event loop, and keeps a commit's cost from growing with
        the number of versions. Otherwise it is parsed only past what was parsed before, when the bytes read extend
        the ones known."""
        with self._parsed_lock:
            cached = self._parsed.get(rel)
        if cached is not None and cached.key is not None:
            st = lstat(self.versions_dir, rel / HISTORY)
            if st is not None and cached.key == _file_key(st):
                return cached.raw, cached.entries
        try:
            raw, st = read_with_stat(self.versions_dir, rel / HISTORY)
        except NotFound:
            return b"", ()
        if cached is not None and cached.raw == raw:
            entries = cached.entries
        else:
            where = f"collaborative/.versions/{rel}/{HISTORY}"
            known = cached or _Parsed(b"", ())
            entries = extend_history(raw, known.raw, known.entries, where)
        self._remember(rel, _Parsed(raw, entries, _file_key(st)))
        return raw, entries

    def _remember(self, rel: PurePosixPath, parsed: _Parsed) -> None:
        with self._parsed_lock:
            self._parsed.pop(rel, None)
            while len(self._parsed) >= HISTORY_CACHE_SIZE:
                del self._parsed[next(iter(self._parsed))]
            self._parsed[rel] = parsed

    def latest(self, path: str) -> VersionEntry | None:
        """The last commit of ``path``, None if it has none; what the mount asks on every lookup (cheap: see
        ``_history``)."""
        entries = self._history(relative_path(path))[1]
        return entries[-1] if entries else None

    def current_version(self, path: str) -> int:
        """The latest version number, 0 if the file does not exist."""
        history = self._history(relative_path(path))[1]
        return history[-1].version if history else 0

    def read(self, path: str) -> CollabFile:
        """The current content with its version (seed C-2, FR-3.2)."""
        rel = relative_path(path)
        history = self._history(rel)[1]
        if not history:
            raise NotFound(f"collaborative/{rel}: no such file")
        entry = history[-1]
        return CollabFile(str(rel), self.read_version(path, entry.version), entry)

    def read_version(self, path: str, version: int) -> bytes:
        rel = relative_path(path)
        if not _is_int(version) or version < 1:
            raise InvalidInput(f"version must be a positive integer, not {version!r}")
        try:
            return read_bytes(self.versions_dir, rel / version_name(version))
        except NotFound:
            raise NotFound(f"collaborative/{rel} has no version {version}") from None

    def list(self) -> list[str]:
        """Every collaborative file (those with a history), sorted."""
        return sorted(str(p.parent) for p in list_files(self.versions_dir) if p.name == HISTORY)

    # -- committing (under the file's lock) ---------------------------------------------------------------------

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
        ``.conflicts/<actor>/`` and leaves the file unchanged (seed C-3).
        """
        rel = relative_path(path)
        self.ws.require_actor(actor)
        if not _is_int(expected_version) or expected_version < NO_CHECK:
            raise InvalidInput(f"expected_version must be an integer >= -1, not {expected_version!r}")
        self._check_shape(rel)
        with self.ws.locks.hold(f"collab:{rel}"):
            raw, history = self._history(rel)
            current = history[-1].version if history else 0
            if expected_version != NO_CHECK and expected_version != current:
                raise self._conflict(actor, rel, content, expected_version, history)
            entry = VersionEntry(
                version=current + 1,
                author=actor,
                message=message if message is not None else f"write by {actor}",
                timestamp=utc_now(),
                sha256=sha256(content),
                provenance=provenance,
            )
            new_raw = append_history(raw, entry) if raw else dump_history([entry])
            self._install(rel, entry, content, new_raw)
            # The next read need not read or parse what this commit wrote: the file under the lock is ours.
            installed = lstat(self.versions_dir, rel / HISTORY)
            key = _file_key(installed) if installed is not None and installed.st_size == len(new_raw) else None
            self._remember(rel, _Parsed(new_raw, (*history, entry), key))
        return entry

    def _install(self, rel: PurePosixPath, entry: VersionEntry, content: bytes, history: bytes) -> None:
        """Write the version file, the history and the current copy, in that order, as one change: a full disk
        fails the commit before anything changed, never after the history took it (a commit reported as failed
        that happened anyway). The version file and the history share a directory: the history's directory
        fsync covers both."""
        self.ws.writer.write_together(
            [
                FileWrite(self.versions_dir, rel / version_name(entry.version), content, mode=0o444, sync_dir=False),
                FileWrite(self.versions_dir, rel / HISTORY, history),
                FileWrite(self.current_dir, rel, content),
            ]
        )

    def rollback(
        self,
        actor: str,
        path: str,
        to_version: int,
        *,
        message: str | None = None,
        expected_version: int = NO_CHECK,
    ) -> VersionEntry:
        """A new version whose content is an old one's; history is never rewritten (seed C-6)."""
        old = self.read_version(path, to_version)
        note = message if message is not None else f"rollback to version {to_version}"
        return self.write(actor, path, old, expected_version=expected_version, message=note)

    def conflict_record(self, agent: str, path: str) -> dict[str, Any]:
        """The recovery info of ``agent``'s last rejected write to ``path``, as kept on disk."""
        rel = relative_path(path)
        raw = read_bytes(self.conflicts_dir, PurePosixPath(check_agent(agent)) / rel.with_name(rel.name + ".json"))
        record: dict[str, Any] = json.loads(raw)
        return record

    # -- helpers ------------------------------------------------------------------------------------------------

    def _check_shape(self, rel: PurePosixPath) -> None:
        """A collaborative path cannot be both a file and a directory of other files."""
        for parent in list(reversed(rel.parents))[1:]:
            if exists(self.versions_dir, parent / HISTORY):
                raise InvalidInput(f"collaborative/{parent} is a file, so {rel} cannot be created under it")
        target = self.current_dir / rel
        if target.is_dir() and not target.is_symlink():
            raise InvalidInput(f"collaborative/{rel} is a directory")

    def _conflict(
        self, actor: str, rel: PurePosixPath, content: bytes, base: int, history: tuple[VersionEntry, ...]
    ) -> Conflict:
        if history:
            head = history[-1]
            current_content = _text(self.read_version(str(rel), head.version))
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
        info: dict[str, Any] = {
            "path": str(rel),
            "current_version": current_version,
            "current_content": current_content,
            "current_author": current_author,
            "your_content": _text(content),
            "your_base": base,
            "suggestion": suggestion,
            "timestamp": utc_now(),
        }
        self._keep_rejected(actor, rel, content, info)
        return Conflict(f"conflict on collaborative/{rel}: {suggestion}", info)

    def _keep_rejected(self, actor: str, rel: PurePosixPath, content: bytes, info: dict[str, Any]) -> None:
        """Keep the rejected write and note where in ``info["kept_at"]``; nothing is lost, even when the usual
        place cannot hold it.

        Records live at ``.conflicts/<agent>/<path>``, but paths that never became files can clash there (a
        rejected ``a/b`` makes ``a`` a directory, and a later rejected ``a`` cannot be a file): such a record
        is kept under a flat name instead.
        """
        for kept in (PurePosixPath(actor) / rel, PurePosixPath(actor) / (str(rel).replace("/", "%2F") + ".conflict")):
            try:
                self.ws.writer.write(self.conflicts_dir, kept, content)
            except (InvalidInput, DiskError):
                continue
            info["kept_at"] = f"collaborative/.conflicts/{kept}"
            self.ws.writer.write(self.conflicts_dir, kept.with_name(kept.name + ".json"), dump_json(info))
            return
        raise StoreCorrupt(f"collaborative/.conflicts/{actor}/ cannot hold the rejected write of {rel}")


__all__ = ["NO_CHECK", "CollabFile", "CollabZone", "version_name"]
