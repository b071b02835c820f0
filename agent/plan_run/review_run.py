"""Whether omx runs in a review run of its agent's zone (``omx --as NAME --review``, ``omxfs run --review``) or in
another branch of it (``omxfs run --branch``, ``omx --attempts``).

In one, NAME's view shows the zone through the branch's overlay, whose upper layer is the branch's
(``omxfs.checkpoints.review``): everything written in the zone is held apart until a person accepts it. The view's
processes can mount nothing, so the overlay in the process's own mount table is a fact, not a claim (an
environment variable would be one any program could make).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent.view import in_view
from omxfs.store.layout import META_DIR, REVIEW_UPPER, REVIEWS

__all__ = ["HELD", "held", "review_zone"]

#: why a write of the zone is no risk in a review, as the plan shows it
HELD = "in a review: nothing lands before you accept"
MOUNTINFO = Path("/proc/self/mountinfo")


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline, backslash (and, in options, comma) as ``\\ooo``."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def review_zone(workspace: Path, agent: str | None, mountinfo: Path = MOUNTINFO) -> Path | None:
    """``agent``'s zone when this process runs in a review run of it and ``workspace`` holds that zone or lies in
    it; None otherwise (no agent, not in its view, no overlay of a review or another branch of the zone)."""
    if agent is None or in_view() != agent:
        return None
    from omxfs.checkpoints.branches import BRANCHES, NAME  # a package omx needs only in a view

    zone = re.escape(agent)
    upper_end = re.compile(
        rf"/{re.escape(META_DIR)}/({REVIEWS}/{zone}|{BRANCHES}/{zone}/{NAME.pattern})/{REVIEW_UPPER}$"
    )
    try:
        lines = mountinfo.read_text("utf-8", "surrogateescape").splitlines()
    except OSError:
        return None
    root = os.path.normpath(os.path.abspath(workspace))
    for line in lines:
        fields, _, after = line.partition(" - ")
        mountpoint = _unescape(fields.split()[4]) if len(fields.split()) > 4 else ""
        fstype, _, rest = after.partition(" ")
        options = rest.partition(" ")[2].split(",")
        uppers = [_unescape(o.removeprefix("upperdir=")) for o in options if o.startswith("upperdir=")]
        if fstype != "overlay" or not uppers or not upper_end.search(uppers[0]):
            continue
        if os.path.basename(mountpoint) == agent and (_within(root, mountpoint) or _within(mountpoint, root)):
            return Path(mountpoint)
    return None


def held(path: str, workspace: Path, zone: Path | None) -> bool:
    """Whether a write of ``path`` (relative to ``workspace``) lands in the review's ``zone``, held apart."""
    if zone is None:
        return False
    return _within(os.path.normpath(os.path.join(os.path.abspath(workspace), path)), str(zone))


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")
