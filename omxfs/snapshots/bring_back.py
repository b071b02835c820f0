"""``omxfs snapshot restore WS ID [--zone Z]``: the workspace brought back to a snapshot, *forward*.

Nothing is rewritten: a collaborative file gets a new version with the snapshot's content (its history keeps every
version between), a realtime field gets new operations by the acting supervisor that make its value the
snapshot's, a delivery is delivered again (the one it replaces stays in the delivery history), and a private zone
is restored by ``omxfs.checkpoints.restore``, which checkpoints the zone first. Before all that, a snapshot of the
workspace as it is, whose id the result gives: restoring it undoes the restore. What is the same as in the
snapshot is left alone (no new version, no new delivery), and so is what the snapshot does not name (a file or a
document made since, a delivery made since): shared things are never removed, only brought back.

Each step is one of the store's own atomic changes, so a restore killed at any point leaves each thing either as
it was or as in the snapshot, and running it again finishes it (what is back already is left alone). A zone whose
view is running is not restored (``restore`` refuses: the view holds the zone itself): the rest is, and the result
says which zone to restore once its view has ended (``--zone``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omxfs.checkpoints import Manifest, ZoneHistory, restore
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.crdt import Document
from omxfs.errors import Conflict, NotFound, OmxError
from omxfs.snapshots.record import KeptFile, KeptHandoff, Snapshot, Snapshots, require_supervisor
from omxfs.snapshots.take import WHOLE, take
from omxfs.store.layout import AGENTS
from omxfs.store.workspace import Workspace

#: commits another writer wins in a row before the restore of a collaborative file gives up on it
MAX_RACES = 8


@dataclass
class Brought:
    """What a snapshot restore did, counted, and how to undo it."""

    snapshot: int
    undo_snapshot: int | None  # the snapshot made first (a whole restore): restoring it undoes this one
    zones: dict[str, int] = field(default_factory=dict)  # zone restored → its checkpoint that undoes it
    zones_unchanged: int = 0
    files: int = 0  # collaborative files given a new version
    files_unchanged: int = 0
    deliveries: int = 0  # deliveries delivered again
    deliveries_unchanged: int = 0
    documents: int = 0  # realtime documents given new operations
    fields: int = 0
    documents_unchanged: int = 0
    not_restored: dict[str, str] = field(default_factory=dict)  # what could not be, and why
    newer: dict[str, int] = field(default_factory=dict)  # what the snapshot does not name, left as it is


def restore_snapshot(ws: Workspace, actor: str, number: int, *, zone: str | None = None) -> Brought:
    require_supervisor(ws, actor)
    snapshot = Snapshots(ws).load(number)
    if zone is not None:
        return _one_zone(ws, actor, snapshot, zone)
    undo = take(ws, actor, f"before restoring snapshot {number}")
    brought = Brought(number, undo.number)
    _zones(ws, actor, snapshot, brought)
    _collaborative(ws, actor, snapshot, brought)
    _handoffs(ws, actor, snapshot, brought)
    _realtime(ws, actor, snapshot, brought)
    brought.newer = {
        "files": len(set(undo.collaborative) - set(snapshot.collaborative)),
        "deliveries": len({_key(h) for h in undo.handoffs} - {_key(h) for h in snapshot.handoffs}),
        "documents": len(set(undo.realtime) - set(snapshot.realtime)),
    }
    ws.audit(actor, f"restore snapshot {number} (undo: snapshot {undo.number})", WHOLE)
    return brought


def _key(h: KeptHandoff) -> tuple[str, str, str]:
    return h.sender, h.recipient, h.filename


def _one_zone(ws: Workspace, actor: str, snapshot: Snapshot, zone: str) -> Brought:
    if zone not in snapshot.zones:
        named = ", ".join(sorted(snapshot.zones)) or "none"
        raise NotFound(f"snapshot {snapshot.number} has no zone {zone!r} (its zones: {named})")
    done = restore(ZoneHistory(ws, zone), actor, snapshot.zones[zone])
    ws.audit(
        actor, f"restore snapshot {snapshot.number} zone {zone} (undo: checkpoint {done.undo})", f"{AGENTS}/{zone}"
    )
    return Brought(snapshot.number, None, zones={zone: done.undo})


def _same_zone(a: Manifest, b: Manifest) -> bool:
    mine, theirs = a.by_path(), b.by_path()
    return mine.keys() == theirs.keys() and all(mine[p].same_node(theirs[p]) for p in mine)


def _zones(ws: Workspace, actor: str, snapshot: Snapshot, brought: Brought) -> None:
    for owner, number in snapshot.zones.items():
        where = f"{AGENTS}/{owner}/"
        try:
            history = ZoneHistory(ws, owner)
            latest = history.latest()  # the snapshot made first checkpointed the zone as it is
            if latest is not None and (latest.number == number or _same_zone(latest, history.load(number))):
                brought.zones_unchanged += 1
                continue
            done = restore(history, actor, number)
        except OmxError as exc:
            brought.not_restored[where] = exc.message
            continue
        brought.zones[owner] = done.undo
        crash_point("snapshot-restore-step")


def _collaborative(ws: Workspace, actor: str, snapshot: Snapshot, brought: Brought) -> None:
    for path, kept in snapshot.collaborative.items():
        try:
            changed = _collab_file(ws, actor, snapshot.number, path, kept)
        except OmxError as exc:
            brought.not_restored[f"collaborative/{path}"] = exc.message
            continue
        if changed:
            brought.files += 1
            crash_point("snapshot-restore-step")
        else:
            brought.files_unchanged += 1


def _collab_file(ws: Workspace, actor: str, number: int, path: str, kept: KeptFile) -> bool:
    content = ws.collab.read_version(path, kept.version)
    for _ in range(MAX_RACES):
        now = ws.collab.latest(path)
        if now is not None and now.sha256 == kept.sha256:
            return False
        try:
            ws.collab.write(
                actor,
                path,
                content,
                expected_version=0 if now is None else now.version,
                message=f"restore of snapshot {number}: version {kept.version}",
                provenance={"snapshot": str(number), "version": str(kept.version)},
            )
        except Conflict:
            continue  # another writer committed meanwhile: look again
        return True
    raise Conflict(f"collaborative/{path}: other writers kept committing; run the restore again", {})


def _handoffs(ws: Workspace, actor: str, snapshot: Snapshot, brought: Brought) -> None:
    for kept in snapshot.handoffs:
        where = f"handoff/{kept.sender}_to_{kept.recipient}/{kept.filename}"
        try:
            try:
                now = ws.handoff.meta(kept.sender, kept.recipient, kept.filename)
            except NotFound:
                now = None  # retracted since
            if now is not None and now.sha256 == kept.sha256 and now.message == kept.message:
                brought.deliveries_unchanged += 1
                continue
            delivery = ws.handoff.kept(kept.sender, kept.recipient, kept.filename, kept.number)
            ws.handoff.deliver(
                actor,
                kept.recipient,
                kept.filename,
                delivery.content,
                delivery.meta.message,
                sender=kept.sender,
                provenance={"snapshot": str(snapshot.number), "delivery": str(kept.number)},
            )
        except OmxError as exc:
            brought.not_restored[where] = exc.message
            continue
        brought.deliveries += 1
        crash_point("snapshot-restore-step")


def _realtime(ws: Workspace, actor: str, snapshot: Snapshot, brought: Brought) -> None:
    for doc_id, state in snapshot.realtime.items():
        try:
            fields = _document(ws, actor, doc_id, Document.from_json(state))
        except OmxError as exc:
            brought.not_restored[f"realtime/{doc_id}"] = exc.message
            continue
        if fields:
            brought.documents += 1
            brought.fields += fields
            crash_point("snapshot-restore-step")
        else:
            brought.documents_unchanged += 1


def _document(ws: Workspace, actor: str, doc_id: str, target: Document) -> int:
    """New operations by ``actor`` that make each field of ``doc_id`` read as in ``target``: how many fields."""
    texts = {name: target.field(name).render() for name in target.schema}
    if not ws.realtime.exists(doc_id):
        ws.realtime.create(actor, doc_id, target.schema)
    now = ws.realtime.load(doc_id)
    if all(now.field(name).render() == text for name, text in texts.items()):
        return 0

    def change(doc: Document, replica: str) -> int:
        changed = 0
        for name, text in texts.items():
            live = doc.field(name)
            if live.render() != text:
                live.write_text(live.base(), text, replica)
                changed += 1
        return changed

    return ws.realtime.update(actor, doc_id, change)
