"""Conflict records: every write the collaborative zone refused, kept under
``collaborative/.conflicts/<agent>/`` so that nothing an agent wrote is lost (seed FR-3.5).

Each refused write has a record of its own that is never overwritten, ``<path>.rejected-<K>`` (the content) and
its ``.json`` (the recovery info), K taken by exclusive create; ``<path>`` and ``<path>.json`` are copies of the
latest. The rules that decide a conflict are ``collab.CollabZone``'s; this module only keeps and finds records.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from omxfs.errors import InvalidInput, OmxError, OSFailure, StoreCorrupt
from omxfs.store.atomic import create_exclusive, open_dir, read_bytes, sync_dir
from omxfs.store.layout import COLLABORATIVE, CONFLICTS, REJECTED
from omxfs.store.names import check_agent, relative_path
from omxfs.store.records import dump_json

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace


class ConflictRecords:
    def __init__(self, ws: Workspace, directory: Path) -> None:
        self.ws = ws
        self.dir = directory

    def latest(self, agent: str, path: str) -> dict[str, Any]:
        """The recovery info of ``agent``'s latest refused write to ``path``, as kept on disk."""
        rel = relative_path(path)
        raw = read_bytes(self.dir, PurePosixPath(check_agent(agent)) / rel.with_name(rel.name + ".json"))
        record: dict[str, Any] = json.loads(raw)
        return record

    def all(self, agent: str, path: str) -> list[dict[str, Any]]:
        """Every rejected write of ``agent`` to ``path``, oldest first: each record's recovery info, with
        ``kept_at`` naming the file that holds the rejected content."""
        rel = relative_path(path)
        found: list[tuple[int, dict[str, Any]]] = []
        for kept in self._record_places(check_agent(agent), rel):
            try:
                dir_fd = open_dir(self.dir, kept.parent)
            except OmxError:
                continue
            try:
                for number in self._rejected_numbers(dir_fd, kept.name):
                    name = f"{kept.name}{REJECTED}{number}.json"
                    with contextlib.suppress(OmxError, ValueError):
                        record = json.loads(read_bytes(self.dir, kept.parent / name))
                        if isinstance(record, dict):
                            found.append((number, record))
            finally:
                os.close(dir_fd)
        return [record for _, record in sorted(found, key=lambda item: (str(item[1].get("timestamp")), item[0]))]

    @staticmethod
    def _record_places(actor: str, rel: PurePosixPath) -> tuple[PurePosixPath, PurePosixPath]:
        """Where ``actor``'s records for ``rel`` go: ``<actor>/<path>``, or, where paths that never became files
        clash there (a rejected ``a/b`` makes ``a`` a directory, so a rejected ``a`` cannot be a file), a flat
        name."""
        return PurePosixPath(actor) / rel, PurePosixPath(actor) / (str(rel).replace("/", "%2F") + ".conflict")

    def keep(
        self, actor: str, rel: PurePosixPath, content: bytes, info: dict[str, Any], *, latest: bool = True
    ) -> None:
        """Keep the rejected write in a record of its own, never overwritten (``<path>.rejected-<K>`` and its
        ``.json``, K taken by exclusive create), and copy it to ``<path>(.json)``, the latest (unless not
        ``latest``); ``info["kept_at"]`` names the record. Nothing is lost, even when the usual place cannot hold
        it."""
        for kept in self._record_places(actor, rel):
            try:
                if latest:
                    self.ws.writer.write(self.dir, kept, content)
                dir_fd = open_dir(self.dir, kept.parent, create=True)
            except (InvalidInput, OSFailure):
                continue
            try:
                number = max(self._rejected_numbers(dir_fd, kept.name), default=0) + 1
                while not create_exclusive(
                    dir_fd, f"{kept.name}{REJECTED}{number}", content, staging=self.ws.writer.tmp_dir, mode=0o444
                ):
                    number += 1
                name = f"{kept.name}{REJECTED}{number}"
                info["kept_at"] = f"{COLLABORATIVE}/{CONFLICTS}/{kept.parent / name}"
                create_exclusive(dir_fd, f"{name}.json", dump_json(info), staging=self.ws.writer.tmp_dir, mode=0o444)
                sync_dir(dir_fd, self.dir / kept.parent)
            finally:
                os.close(dir_fd)
            if latest:
                self.ws.writer.write(self.dir, kept.with_name(kept.name + ".json"), dump_json(info))
            return
        raise StoreCorrupt(f"{COLLABORATIVE}/{CONFLICTS}/{actor}/ cannot hold the rejected write of {rel}")

    @staticmethod
    def _rejected_numbers(dir_fd: int, name: str) -> list[int]:
        prefix = f"{name}{REJECTED}"
        numbers = []
        for entry in os.listdir(dir_fd):
            number = entry[len(prefix) :] if entry.startswith(prefix) else ""
            if number.isdigit():
                numbers.append(int(number))
        return numbers
