"""A snapshot of the whole workspace as data, and where snapshots are kept: ``.omxfs/snapshots/<N>.json``.

A snapshot holds no content of its own: it names what the store already keeps and never rewrites, so that it
stays small and a crash cannot leave it half written. It names each private zone's checkpoint (``omxfs
.checkpoints``), each collaborative file's version (immutable once committed), each handoff delivery's record in
the delivery history (``omxfs.store.delivery_history``), and holds each realtime document's state (a CRDT state
is its own whole record: no other place keeps a past one).

``N.json`` is created exclusively (``atomic.create_exclusive``: staged, fsynced, linked), so two supervisors
snapshotting at once, from several daemons or machines, take N and N + 1 with no lock; a writer killed at any
point leaves the earlier snapshots as they were and no partial one.

Who may: a supervisor, for the whole workspace is everyone's (``require_supervisor``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from omxfs.errors import InvalidInput, NotFound, StoreCorrupt, ZoneDenied
from omxfs.shell_line import shell_line
from omxfs.store.atomic import create_exclusive, read_bytes, sync_dir
from omxfs.store.layout import BLOB, META_DIR, SNAPSHOT_RECORD, SNAPSHOTS, TMP
from omxfs.store.names import check_agent, check_doc_id, relative_path
from omxfs.store.workspace import Workspace

FORMAT = 1


@dataclass(frozen=True)
class KeptFile:
    """A collaborative file as the snapshot has it: its version then."""

    version: int
    sha256: str


@dataclass(frozen=True)
class KeptHandoff:
    """A delivery as the snapshot has it: the ``number``-th delivery of ``filename`` from ``sender`` to
    ``recipient`` (its record in the delivery history holds the content)."""

    sender: str
    recipient: str
    filename: str
    number: int
    sha256: str
    message: str


@dataclass(frozen=True)
class Snapshot:
    number: int
    time: str
    message: str
    by: str
    uid: int
    zones: dict[str, int] = field(default_factory=dict)  # agent → checkpoint number
    collaborative: dict[str, KeptFile] = field(default_factory=dict)  # path → version
    handoffs: tuple[KeptHandoff, ...] = ()
    realtime: dict[str, Any] = field(default_factory=dict)  # document id → its CRDT state (``Document.to_json``)

    def counts(self) -> dict[str, int]:
        return {
            "zones": len(self.zones),
            "files": len(self.collaborative),
            "deliveries": len(self.handoffs),
            "documents": len(self.realtime),
        }

    def summary(self) -> dict[str, Any]:
        """What ``omxfs snapshots --json`` shows of it."""
        return {"id": self.number, "time": self.time, "message": self.message, "by": self.by, **self.counts()}

    def dump(self) -> bytes:
        data = {
            "format": FORMAT,
            "number": self.number,
            "time": self.time,
            "message": self.message,
            "by": self.by,
            "uid": self.uid,
            "zones": self.zones,
            "collaborative": {p: {"version": f.version, "sha256": f.sha256} for p, f in self.collaborative.items()},
            "handoffs": [
                {
                    "from": h.sender,
                    "to": h.recipient,
                    "filename": h.filename,
                    "number": h.number,
                    "sha256": h.sha256,
                    "message": h.message,
                }
                for h in self.handoffs
            ],
            "realtime": self.realtime,
        }
        return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def load_snapshot(raw: bytes, where: str) -> Snapshot:
    """A snapshot from its file's bytes, every field checked: the names that end up in a path (agents, a
    collaborative or delivered file's path, a document id) by the store's own name checks (``names``), a sha256 as
    64 lowercase hex digits, numbers as integers; StoreCorrupt naming ``where`` and the field otherwise."""
    try:
        data = json.loads(raw)
        if type(data) is not dict or data.get("format") != FORMAT or type(data["format"]) is not int:
            raise ValueError(f"format {shown(data.get('format') if type(data) is dict else data)} is not {FORMAT}")
        snapshot = Snapshot(
            number=_int(data["number"]),
            time=_text(data["time"], "time"),
            message=_text(data["message"], "message"),
            by=_text(data["by"], "by"),
            uid=_int(data["uid"], 0),
            zones={_name(check_agent, z, "zones"): _int(n) for z, n in _object(data["zones"], "zones").items()},
            collaborative={
                _path(p, "collaborative"): KeptFile(_int(f["version"]), _sha256(f["sha256"], p))
                for p, f in _object(data["collaborative"], "collaborative").items()
            },
            handoffs=tuple(_handoff(h) for h in _list(data["handoffs"], "handoffs")),
            realtime={
                _name(check_doc_id, d, "realtime"): _object(s, f"realtime: {d}")
                for d, s in _object(data["realtime"], "realtime").items()
            },
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StoreCorrupt(f"{where}: unreadable snapshot: {exc}") from exc
    return snapshot


def _handoff(h: Any) -> KeptHandoff:
    h = _object(h, "handoffs")
    filename = _path(h["filename"], "handoffs")
    return KeptHandoff(
        _name(check_agent, h["from"], f"handoffs: {filename}: from"),
        _name(check_agent, h["to"], f"handoffs: {filename}: to"),
        filename,
        _int(h["number"]),
        _sha256(h["sha256"], filename),
        _text(h["message"], "message"),
    )


def shown(value: Any) -> str:
    """``value`` as an error message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _int(value: Any, least: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"{shown(value)} is not an integer >= {least}")
    return value


def _text(value: Any, field: str) -> str:
    if type(value) is not str:
        raise ValueError(f"{field}: {shown(value)} is no string")
    return value


def _object(value: Any, field: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise ValueError(f"{field}: {shown(value)} is no JSON object")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if type(value) is not list:
        raise ValueError(f"{field}: {shown(value)} is no list")
    return value


def _name(check: Callable[[str], str], value: Any, field: str) -> str:
    """``value`` if the store's own check of such names (an agent's, a document id) takes it."""
    try:
        return check(value)
    except InvalidInput as exc:
        raise ValueError(f"{field}: {exc.message}") from None


def _path(value: Any, field: str) -> str:
    """A file's path in a shared zone, as the store writes it: ``names.relative_path`` of it is itself."""
    try:
        normal = str(relative_path(value))
    except InvalidInput as exc:
        raise ValueError(f"{field}: {exc.message}") from None
    if normal != value:
        raise ValueError(f"{field}: {shown(value)} is not a normalized path")
    return normal


def _sha256(value: Any, path: str) -> str:
    if type(value) is not str or not BLOB.fullmatch(value):
        raise ValueError(f"{shown(path)}: sha256 {shown(value)} is not 64 lowercase hex digits")
    return value


def require_supervisor(ws: Workspace, actor: str) -> str:
    """Snapshots and their restores change every zone: a supervisor's alone, said in one line otherwise."""
    supervisors = ws.config.supervisors
    if not supervisors:
        raise ZoneDenied(
            "this workspace has no supervisor, and only a supervisor snapshots or restores the whole workspace: "
            f"add one with `{shell_line('omxfs', 'init', ws.shown_as, '--supervisor', 'NAME')}`"
        )
    ws.require_actor(actor)
    if actor not in supervisors:
        raise ZoneDenied(
            f"{actor} is no supervisor of this workspace: only {', '.join(supervisors)} may snapshot or restore it"
        )
    return actor


class Snapshots:
    """The snapshots of the workspace ``ws``."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.meta / SNAPSHOTS

    def numbers(self) -> list[int]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for name in names if (m := SNAPSHOT_RECORD.fullmatch(name)))

    def load(self, number: int) -> Snapshot:
        where = f"{META_DIR}/{SNAPSHOTS}/{number}.json"
        try:
            raw = read_bytes(self.dir, PurePosixPath(f"{number}.json"))
        except NotFound:
            raise NotFound(
                f"this workspace has no snapshot {number} (see `{shell_line('omxfs', 'snapshots', self.ws.shown_as)}`)"
            ) from None
        snapshot = load_snapshot(raw, where)
        if snapshot.number != number:
            raise StoreCorrupt(f"{where}: the file says it is snapshot {snapshot.number}")
        return snapshot

    def all(self) -> list[Snapshot]:
        found = []
        for number in self.numbers():
            try:
                found.append(self.load(number))
            except NotFound:
                continue
        return found

    def checkpoints_named(self, zone: str) -> frozenset[int]:
        """The checkpoints of ``zone`` that some snapshot names: a prune keeps them, or the snapshot could not
        bring that zone back. A snapshot that does not parse stops the prune (StoreCorrupt) rather than lose one."""
        return frozenset(s.zones[zone] for s in self.all() if zone in s.zones)

    def resolve(self, text: str) -> int:
        """A snapshot as a user names it: its id, or ``last``."""
        numbers = self.numbers()
        if text in ("last", "latest"):
            if not numbers:
                raise NotFound(
                    "this workspace has no snapshot yet "
                    f"(make one with `{shell_line('omxfs', 'snapshot', self.ws.shown_as)}`)"
                )
            return numbers[-1]
        try:
            value = int(text)
        except ValueError:
            raise InvalidInput(f"{text!r} names no snapshot: give its id (a number) or 'last'") from None
        if value not in numbers:
            raise NotFound(
                f"this workspace has no snapshot {text} (see `{shell_line('omxfs', 'snapshots', self.ws.shown_as)}`)"
            )
        return value

    def create(self, snapshot: Snapshot) -> Snapshot:
        """Store ``snapshot`` under the next free number (its own, or the first after it another writer left)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        snapshot = replace(snapshot, number=max(snapshot.number, (self.numbers() or [0])[-1] + 1))
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            while not create_exclusive(
                fd, f"{snapshot.number}.json", snapshot.dump(), staging=self.ws.meta / TMP, mode=0o444
            ):
                snapshot = replace(snapshot, number=snapshot.number + 1)
            sync_dir(fd, self.dir)
        finally:
            os.close(fd)
        return snapshot
