"""``omxfs snapshot WS``: the whole workspace recorded at once, by a supervisor.

In this order, each step by the store's own rules, so that a process killed at any point leaves the earlier
snapshots whole and no snapshot that names what is not there:

1. a checkpoint of every private zone (``ZoneHistory.make``, which reuses the latest when nothing changed);
2. every collaborative file's latest version (versions are immutable: naming one is enough);
3. every delivery in ``handoff/``, its record in the delivery history made if it has none (``HandoffZone.keep``);
4. every realtime document's merged state, held in the snapshot itself;
5. the snapshot file, created exclusively: the commit point. Killed before it, what steps 1 and 3 made is kept
   as it would be by any checkpoint or delivery (it is history, not debris).

The snapshot is of a moving workspace: each part is as it was when its step read it (a commit landing between
steps 2 and 5 is in the next snapshot), as ``tar`` of a live tree is.
"""

from __future__ import annotations

import os

from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.snapshots.record import KeptFile, KeptHandoff, Snapshot, Snapshots, require_supervisor
from omxfs.store.layout import AGENTS
from omxfs.store.records import HandoffMeta, utc_now
from omxfs.store.workspace import Workspace

#: the audit record's path for an action on the whole workspace
WHOLE = "."


def zone_owners(ws: Workspace) -> list[str]:
    """Every agent (supervisors too) that has a private zone."""
    config = ws.config
    names = dict.fromkeys([*config.agents, *config.supervisors])
    return sorted(n for n in names if (ws.root / AGENTS / n).is_dir())


def current_deliveries(ws: Workspace) -> list[HandoffMeta]:
    """Every delivery ``handoff/`` shows now, of every known recipient."""
    config = ws.config
    found: list[HandoffMeta] = []
    for recipient in sorted(dict.fromkeys([*config.agents, *config.supervisors])):
        found += ws.handoff.inbox(recipient)
    return found


def take(ws: Workspace, actor: str, message: str = "") -> Snapshot:
    require_supervisor(ws, actor)
    zones: dict[str, int] = {}
    for owner in zone_owners(ws):
        history = ZoneHistory(ws, owner)
        made = history.make(actor, f"snapshot: {message}" if message else "snapshot", only_if_changed=True)
        latest = made or history.latest()
        assert latest is not None  # made just now if there was none
        zones[owner] = latest.number
        crash_point("snapshot-zone")
    collaborative: dict[str, KeptFile] = {}
    for path in ws.collab.list():
        entry = ws.collab.latest(path)
        if entry is not None:
            collaborative[path] = KeptFile(entry.version, entry.sha256)
    handoffs: list[KeptHandoff] = []
    for meta in current_deliveries(ws):
        kept = ws.handoff.keep(meta.sender, meta.recipient, meta.filename)
        handoffs.append(
            KeptHandoff(meta.sender, meta.recipient, meta.filename, kept.number, kept.meta.sha256, kept.meta.message)
        )
        crash_point("snapshot-delivery")
    realtime = {doc_id: ws.realtime.load(doc_id).to_json() for doc_id in ws.realtime.list()}
    crash_point("snapshot-record")
    snapshot = Snapshots(ws).create(
        Snapshot(
            number=1,
            time=utc_now(),
            message=message,
            by=actor,
            uid=os.getuid(),
            zones=zones,
            collaborative=collaborative,
            handoffs=tuple(handoffs),
            realtime=realtime,
        )
    )
    ws.audit(actor, f"snapshot {snapshot.number}", WHOLE)
    return snapshot
