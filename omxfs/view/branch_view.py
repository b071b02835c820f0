"""Which branch's view of a zone this process runs in (``omxfs run --branch``), if any.

In a branch's view the agent's zone is that branch's overlay, which hides the zone beneath it: what is read there as
"the zone" is the branch's composition, so the branch commands that compare a branch with the zone are told apart
there (``omxfs branches``, ``omxfs diff --branch``, the MCP branch tools). The mount table names the overlay's upper
layer, ``.omxfs/branches/ZONE/BRANCH/upper`` (``.omxfs/reviews/ZONE/upper`` for the review), in its options.
"""

from __future__ import annotations

import os
from pathlib import Path

from omxfs.checkpoints.review import pending_branches
from omxfs.mount_table import MOUNTINFO, mount_at
from omxfs.store.layout import AGENTS
from omxfs.store.workspace import Workspace

#: the kernel's name of the filesystem a branch's view shows the zone through
OVERLAY = "overlay"


def viewed_branch(ws: Workspace, zone: str, mountinfo: Path = MOUNTINFO) -> str | None:
    """The branch of ``zone`` whose view this process runs in; None outside one (a plain view, the host)."""
    entry = mount_at(os.path.realpath(ws.root / AGENTS / zone), mountinfo)
    if entry is None or entry.fstype != OVERLAY:
        return None
    uppers = [o.removeprefix("upperdir=") for o in entry.options if o.startswith("upperdir=")]
    for branch in pending_branches(ws, zone) if uppers else ():
        if uppers[0].endswith("/" + branch.upper.relative_to(ws.root).as_posix()):
            return branch.branch
    return None
