"""The store's long lists a page shows, kept between requests (``stamps.StampedTree``): the collaborative files with
their latest version, the rejected writes, the deliveries in ``handoff/`` and every delivery the store kept of each
file (``.omxfs/deliveries/``, the earlier ones a re-delivery replaced, from before the server started too)."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from omxfs.errors import OmxError
from omxfs.store.delivery_history import KeptDelivery
from omxfs.store.handoff import is_meta
from omxfs.store.layout import BLOBS, DELIVERIES, HANDOFF, HISTORY, REJECTED, entry_name
from omxfs.store.names import parse_handoff_dir
from omxfs.store.records import HandoffMeta, VersionEntry
from omxfs.store.workspace import Workspace
from omxfs.ui.files import read_part
from omxfs.ui.stamps import StampedTree

#: bytes of a conflict record read at most (a record is a few hundred bytes; an agent's could be anything)
RECORD_LIMIT = 1 << 20


@dataclass(frozen=True)
class Delivered:
    """One file of a handoff box: the delivery there now (None once retracted) and the earlier ones kept."""

    filename: str
    current: HandoffMeta | None
    earlier: list[KeptDelivery]  # newest first


class Lists:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._versions = StampedTree(ws.collab.versions_dir, self._latest)
        self._conflicts = StampedTree(ws.collab.conflicts_dir, self._rejected)
        self._handoff = StampedTree(ws.root / HANDOFF, self._delivered)
        self._kept = StampedTree(ws.meta / DELIVERIES, self._history, frozenset({BLOBS}))

    # -- what the pages ask -----------------------------------------------------------------------------------

    def collab_files(self) -> list[dict[str, Any]]:
        """Every collaborative file with its latest version, sorted by path."""
        found = [{"path": rel, "latest": latest} for rel, latest in self._versions.walk() if latest is not None]
        return sorted(found, key=lambda f: str(f["path"]))

    def conflicts(self) -> list[dict[str, Any]]:
        """Every rejected write of every agent, newest first: where its record is, and what it says."""
        found = [c for _, records in self._conflicts.walk() for c in records]
        return sorted(found, key=lambda c: str(c["info"].get("timestamp")), reverse=True)

    def handoffs(self) -> list[dict[str, Any]]:
        """Per box (``<sender>_to_<recipient>``), every file delivered: now, and earlier (newest first)."""
        current: dict[tuple[str, str], HandoffMeta] = {}
        for rel, metas in self._handoff.walk():
            for name, meta in metas:
                box, _, sub = os.path.join(rel, name).partition("/")
                current[(box, sub)] = meta
        kept: dict[tuple[str, str], list[KeptDelivery]] = {}
        for rel, history in self._kept.walk():
            parts = rel.split("/")
            if len(parts) == 2 and history:
                kept[(parts[0], unquote(parts[1]))] = history
        boxes: dict[str, list[Delivered]] = {}
        for box, filename in sorted(set(current) | set(kept)):
            now = current.get((box, filename))
            earlier = [k for k in reversed(kept.get((box, filename), [])) if now is None or k.meta != now]
            boxes.setdefault(box, []).append(Delivered(filename, now, earlier))
        found = []
        for box, files in boxes.items():
            pair = parse_handoff_dir(box)
            if pair is not None:
                files.sort(key=lambda d: d.current.timestamp if d.current else "", reverse=True)
                found.append({"name": box, "sender": pair[0], "recipient": pair[1], "files": files})
        return found

    # -- what is read of one directory ------------------------------------------------------------------------

    def _latest(self, rel: str, entries: list[os.DirEntry[str]]) -> VersionEntry | None:
        """The latest version of the file whose versions are in ``.versions/<rel>/``, None if it holds none."""
        names = {e.name for e in entries}
        if rel == "." or not names & {HISTORY, entry_name(1)}:
            return None
        with contextlib.suppress(OmxError):
            return self.ws.collab.latest(rel)
        return None

    def _rejected(self, rel: str, entries: list[os.DirEntry[str]]) -> list[dict[str, Any]]:
        top = self.ws.collab.conflicts_dir
        found = []
        for entry in entries:
            if (
                not entry.name.endswith(".json")
                or REJECTED not in entry.name
                or not entry.is_file(follow_symlinks=False)
            ):
                continue
            record = os.path.normpath(os.path.join(rel, entry.name))
            with contextlib.suppress(OSError, ValueError, OmxError):
                info = json.loads(read_part(top, record, 0, RECORD_LIMIT)[0])
                if isinstance(info, dict):
                    found.append({"record": record, "agent": record.split("/", 1)[0], "info": info})
        return found

    def _delivered(self, rel: str, entries: list[os.DirEntry[str]]) -> list[tuple[str, HandoffMeta]]:
        """(name, its delivery's metadata) of each file delivered in ``handoff/<rel>/``."""
        box, _, sub = rel.partition("/")
        pair = parse_handoff_dir(box)
        if pair is None or (self.ws.root / HANDOFF / box).is_symlink():
            return []
        found = []
        for entry in entries:
            if is_meta(entry.name) or not entry.is_file(follow_symlinks=False):
                continue
            with contextlib.suppress(OmxError, OSError):
                found.append((entry.name, self.ws.handoff.meta(pair[0], pair[1], str(PurePosixPath(sub, entry.name)))))
        return found

    def _history(self, rel: str, entries: list[os.DirEntry[str]]) -> list[KeptDelivery]:
        """Every delivery kept of one file (``deliveries/<box>/<quoted file>/``), oldest first."""
        parts = rel.split("/")
        if len(parts) != 2:
            return []
        with contextlib.suppress(OmxError, OSError):
            return self.ws.handoff.history.all(parts[0], PurePosixPath(unquote(parts[1])))
        return []
