"""Snapshots of the whole workspace (issue 27): every private zone's checkpoint, every collaborative file's version,
every handoff delivery and every realtime document's state, recorded by a supervisor (``take.py``) and brought
back forward (``bring_back.py``); the snapshot itself is one small file naming them (``record.py``), which
``omxfs fsck`` checks (``check.py``).
"""

from omxfs.snapshots.bring_back import Brought, restore_snapshot
from omxfs.snapshots.record import KeptFile, KeptHandoff, Snapshot, Snapshots, require_supervisor
from omxfs.snapshots.take import take

__all__ = [
    "Brought",
    "KeptFile",
    "KeptHandoff",
    "Snapshot",
    "Snapshots",
    "require_supervisor",
    "restore_snapshot",
    "take",
]
