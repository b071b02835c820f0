"""A zone's branches side by side (``omxfs run --branch``): what the zone's branches page shows.

Each pending branch comes with its change against the zone now, read as ``omxfs diff --branch`` reads it (the
checkpoint scan); a conflicted one also with both sides of each path it collides on (a sibling accepted since, or the
zone itself since the branch's base, changed it too): what the zone has now, what the branch has. A branch's upper
layer is written by its agent, so a side is read through descriptors walked from the layer's root without following a
symlink (``atomic.open_dir``), the file opened ``O_NOFOLLOW`` and without moving its atime (an accept keeps the times
the run left), and only as much as a page shows.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path, PurePosixPath

from omxfs.checkpoints import ZoneDiff
from omxfs.checkpoints.review import (
    BranchState,
    Review,
    branch_states,
    changed_by,
    conflicted,
    pending_branches,
    pending_diff,
)
from omxfs.checkpoints.scan import open_unread
from omxfs.errors import NotFound, OmxError
from omxfs.store.atomic import open_dir
from omxfs.store.layout import AGENTS
from omxfs.store.workspace import Workspace
from omxfs.ui import shown
from omxfs.ui.pages import Diffed, classed

#: lines of one branch's diff shown at most (several branches share the page)
DIFF_LINES = 600
#: paths of one branch's file list shown at most
FILES = 200
#: the file-list word of each kind of change
ADDED, CHANGED, REMOVED = "added", "changed", "removed"
#: the kinds of node ``stat`` tells apart, as a side names what is not a regular file
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"))


@dataclass(frozen=True)
class Changed:
    kind: str  # ADDED, CHANGED or REMOVED
    path: str
    note: str  # what a path that is no plain file change is ("dir", "file -> symlink"), else ""


@dataclass(frozen=True)
class Sides:
    """A path the branch collides on: the zone's content now beside the branch's."""

    path: str
    why: str  # who changed it since the branch was made (``changed_by``): "branch NAME, accepted since", ...
    zone: str
    branch: str


@dataclass(frozen=True)
class Column:
    """One branch as its column shows it."""

    name: str
    parent: str  # what it branched from: the zone, as it was when it was made
    created: str
    by: str
    state: str  # pending, conflicted, accepted, discarded (``BranchState``)
    stat: str
    detail: str
    files: list[Changed] = field(default_factory=list)
    more_files: int = 0  # paths changed beyond ``FILES``
    diff: Diffed | None = None
    sides: list[Sides] = field(default_factory=list)
    error: str = ""  # its change could not be read (a running view changing it): said, not raised

    @property
    def decidable(self) -> bool:
        """Whether it is still to be decided: pending, or conflicted (discard only)."""
        return self.state in ("pending", "conflicted")


def zone_branches(ws: Workspace, agent: str) -> list[Column]:
    """``agent``'s branches as ``omxfs branches`` lists them (pending first, then the last that ended of each name),
    each pending one with its change."""
    zone = ws.require_known(agent)
    return [_column(ws, zone, row) for row in branch_states(ws, zone)]


def pending_names(ws: Workspace, agent: str) -> list[str]:
    """The names of ``agent``'s pending branches, ``review`` first (a listing only: nothing of them is read)."""
    return [branch.branch for branch in pending_branches(ws, agent)]


def _column(ws: Workspace, zone: str, row: BranchState) -> Column:
    parent = f"{AGENTS}/{zone}"
    base = Column(row.name, parent, row.created, row.by or "-", row.state, row.stat, row.detail)
    if not base.decidable:
        return base
    review = Review(ws, zone, row.name)
    try:
        change = pending_diff(review)
        collided = conflicted(review) if row.state == "conflicted" else {}
        sides = [
            Sides(
                path,
                changed_by(review, name),
                _side(review.zone_dir, path, "not in the zone"),
                _branch_side(review, change, path),
            )
            for name, paths in collided.items()
            for path in paths
        ]
    except (OmxError, OSError) as exc:  # a layer changing under the read, a file gone mid-read
        return replace(base, error=exc.message if isinstance(exc, OmxError) else str(exc))
    files = _files(change)
    texts = [change.details[p]["diff"] for p in change.modified + change.added + change.deleted
             if change.details[p].get("diff")]  # fmt: skip
    lines = list(islice((part for text in texts for part in text.rstrip("\n").splitlines()), DIFF_LINES + 1))
    return replace(
        base, files=files[:FILES], more_files=max(len(files) - FILES, 0), diff=classed(lines, DIFF_LINES), sides=sides
    )


def _files(change: ZoneDiff) -> list[Changed]:
    found = []
    for kind, paths in ((ADDED, change.added), (CHANGED, change.modified), (REMOVED, change.deleted)):
        for path in paths:
            detail = change.details.get(path, {})
            kind_of = detail.get("type")  # a pair where the path changed its kind
            note = " -> ".join(kind_of) if isinstance(kind_of, list) else "" if kind_of in (None, "file") else kind_of
            found.append(Changed(kind, path, str(note)))
    return found


def _branch_side(review: Review, change: ZoneDiff, path: str) -> str:
    if path in change.deleted:
        return "(removed by the branch)"
    if path not in change.added and path not in change.modified:
        return _side(review.zone_dir, path, "not in the branch")  # the branch left it as the zone has it
    return _side(review.upper, path, "not in the branch")


def _side(root: Path, path: str, absent: str) -> str:
    """The first bytes of the regular file ``root/path`` as a page shows them, or what is there instead."""
    rel = PurePosixPath(path)
    try:
        dir_fd = open_dir(root, rel.parent)
    except NotFound:
        return f"({absent})"
    except OmxError as exc:  # a symlink or a file where a directory was: not followed
        return f"({exc.message})"
    try:
        try:
            fd = open_unread(rel.name, dir_fd=dir_fd)
        except FileNotFoundError:
            return f"({absent})"
        except OSError:
            st = os.stat(rel.name, dir_fd=dir_fd, follow_symlinks=False)
            return f"({_kind(st.st_mode)})"
    except OSError:
        return f"({absent})"
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"({_kind(st.st_mode)})"  # a whiteout is a removal, said above; a FIFO is opened non-blocking
        data = os.pread(fd, min(shown.READ_LIMIT, st.st_size), 0)
        return shown.content(data, st.st_size)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")
