"""What ``omxfs fsck`` checks of the snapshots (``.omxfs/snapshots/``) and the delivery history
(``.omxfs/deliveries/``), one finding per problem.

    debris (repairable)
    ├── stray-snapshot              a file in snapshots/ that is no snapshot (made by hand, or a torn one's leftover
    │                               where the filesystem has no hard links): removed once old
    └── unreferenced-delivery-blob  a delivered content no record names (a delivery killed before its record):
                                    removed once old
    corruption (reported)
    ├── bad-snapshot                a snapshot file that does not parse, or says it is another one
    ├── dangling-snapshot           a snapshot names what is not there: a checkpoint (pruned since), a collaborative
    │                               version, a delivery record, or a realtime state that does not parse
    ├── bad-delivery-record         a delivery record that does not parse, or says it is another one
    ├── missing-delivery-blob       a delivery record whose content is not there
    └── bad-delivery-blob           a delivered content whose sha256 is not its name, or a file in blobs/ that is none
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable

from omxfs.checkpoints import ZoneHistory
from omxfs.crdt import Document
from omxfs.errors import OmxError
from omxfs.snapshots.record import Snapshot, Snapshots
from omxfs.store.delivery_history import DeliveryHistory, record_dir
from omxfs.store.findings import Found
from omxfs.store.layout import (
    BLOB,
    BLOBS,
    DELIVERIES,
    DELIVERY_RECORD,
    META_DIR,
    SNAPSHOT_RECORD,
    SNAPSHOTS,
    blob_path,
)
from omxfs.store.names import handoff_dir_name, shared_path
from omxfs.store.records import sha256
from omxfs.store.workspace import Workspace

Count = Callable[[str], None]


def check_snapshots(ws: Workspace, found: Found, count: Count, *, repair: bool, grace: float) -> None:
    _deliveries(ws, found, count, repair=repair, grace=grace)
    snapshots = Snapshots(ws)
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(snapshots.dir)):
            if not SNAPSHOT_RECORD.fullmatch(name):
                path = snapshots.dir / name
                age = _age(path)
                old = age > grace
                if repair and old:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                found("stray-snapshot", f"{META_DIR}/{SNAPSHOTS}/{name}", "no snapshot's name", repair and old, age=age)
    verified: dict[tuple[str, int], str | None] = {}  # (path, version) → the problem with it, once per fsck
    for number in snapshots.numbers():
        count("snapshots")
        where = f"{META_DIR}/{SNAPSHOTS}/{number}.json"
        try:
            snapshot = snapshots.load(number)
        except OmxError as exc:
            found("bad-snapshot", where, exc.message, False)
            continue
        for problem in _dangling(ws, snapshot, verified):
            found("dangling-snapshot", where, problem, False)


def _dangling(ws: Workspace, snapshot: Snapshot, verified: dict[tuple[str, int], str | None]) -> list[str]:
    """What ``snapshot`` names that is not there (a version is read once however many snapshots name it)."""
    problems: list[str] = []
    for zone, number in snapshot.zones.items():
        try:
            ZoneHistory(ws, zone).load(number)
        except OmxError as exc:
            problems.append(f"checkpoint {number} of {zone}: {exc.message}")
    for path, kept in snapshot.collaborative.items():
        if (path, kept.version) not in verified:
            verified[(path, kept.version)] = _version_problem(ws, path, kept.version, kept.sha256)
        if (problem := verified[(path, kept.version)]) is not None:
            problems.append(problem)
    history = ws.handoff.history
    for h in snapshot.handoffs:
        box = handoff_dir_name(h.sender, h.recipient)
        try:
            record = history.load(box, shared_path(h.filename), h.number)
            if record.meta.sha256 != h.sha256:
                problems.append(f"delivery {h.number} of handoff/{box}/{h.filename} is not the one the snapshot names")
        except OmxError as exc:
            problems.append(f"delivery {h.number} of handoff/{box}/{h.filename}: {exc.message}")
    for doc_id, state in snapshot.realtime.items():
        try:
            Document.from_json(state)
        except OmxError as exc:
            problems.append(f"realtime/{doc_id}: {exc.message}")
    return problems


def _version_problem(ws: Workspace, path: str, version: int, digest: str) -> str | None:
    try:
        if sha256(ws.collab.read_version(path, version)) != digest:
            return f"collaborative/{path} version {version} is not the content the snapshot names"
    except OmxError as exc:
        return f"collaborative/{path} version {version}: {exc.message}"
    return None


def _deliveries(ws: Workspace, found: Found, count: Count, *, repair: bool, grace: float) -> None:
    history = DeliveryHistory(ws.meta)
    top = f"{META_DIR}/{DELIVERIES}"
    named: set[str] = set()
    for box, rel in history.boxes():
        directory = history.root / record_dir(box, rel)
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for name in sorted(os.listdir(directory)):
                where = f"{top}/{record_dir(box, rel)}/{name}"
                match = DELIVERY_RECORD.fullmatch(name)
                if match is None:
                    found("bad-delivery-record", where, "no delivery record's name", False)
                    continue
                try:
                    record = history.load(box, rel, int(match.group(1)))
                except OmxError as exc:
                    found("bad-delivery-record", where, exc.message, False)
                    continue
                named.add(record.meta.sha256)
                if not (history.blobs / blob_path(record.meta.sha256)).is_file():
                    found("missing-delivery-blob", where, f"its content {record.meta.sha256} is not there", False)
    for name, path in history.blob_names():
        shown = f"{top}/{BLOBS}/{path.parent.name}/{name}"
        if not BLOB.fullmatch(name) or path.parent.name != name[:2]:
            found("bad-delivery-blob", shown, "no delivered content's name", False)
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            found("bad-delivery-blob", shown, exc.strerror or "unreadable", False)
            continue
        if sha256(data) != name:
            found("bad-delivery-blob", shown, "its content is not its name's sha256", False)
        elif name not in named:
            age = _age(path)
            old = age > grace
            if repair and old:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            found("unreferenced-delivery-blob", shown, "no delivery record names it", repair and old, age=age)


def _age(path: os.PathLike[str]) -> float:
    """Seconds since ``path`` last changed (0 for one removed meanwhile: too young to remove, as it is gone)."""
    try:
        return time.time() - os.lstat(path).st_mtime
    except FileNotFoundError:
        return 0.0
