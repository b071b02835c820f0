"""The branch tools' work on the acting agent's own zone, the same for every backend: the store's ``Workspace`` in,
the backend protocol's plain records out. Each calls what its command calls (``omxfs branches``: ``branch_states``;
``omxfs diff --branch``: ``pending_diff``, ``branches_diff``; ``omxfs run --branch``: ``Review.run_parent`` and
``Review.prepare``), so a tool and its command agree.

In a view (``omxfs run``, ``omxfs mcp``) ``.omxfs/`` is read-only, so no branch is made there, and a branch's view
shows the zone as that branch's overlay, which hides the zone beneath it: there the branches are listed from their
records alone, and compared on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.workspace_tools.backend import BranchChanges, BranchForked, BranchInfo, BranchListing
from agent.workspace_tools.zone_history import diff_text
from omxfs.checkpoints.branches import check_name
from omxfs.checkpoints.review import Review, branch_states, branches_diff, lineage, pending_diff
from omxfs.checkpoints.views import views_running
from omxfs.errors import AlreadyExists, NotSupported
from omxfs.mount_table import MOUNTINFO
from omxfs.shell_line import shell_line
from omxfs.store.workspace import Workspace
from omxfs.view.branch_view import viewed_branch


@dataclass(frozen=True)
class InView:
    """The tools run in a view of the zone (``omxfs run``, ``omxfs mcp``), whose ``.omxfs/`` is read-only."""

    branch: str | None  # the branch whose view it is (the zone is that branch's overlay); None: a plain view


def in_view(ws: Workspace, zone: str, mountinfo: Path = MOUNTINFO) -> InView:
    """Which view of ``zone`` this process runs in, for a process in one (``viewed_branch``)."""
    return InView(viewed_branch(ws, zone, mountinfo))


def listing(ws: Workspace, zone: str, view: InView | None) -> BranchListing:
    """``omxfs branches``' rows; in a branch's view from the records alone (``branch_states(counted=False)``)."""
    current = None if view is None else view.branch
    rows = [
        BranchInfo(row.name, row.parent, row.created, row.by, row.stat, row.state, row.detail)
        for row in branch_states(ws, zone, counted=current is None)
    ]
    if current is None:
        return BranchListing(rows, None, True, "")
    listed = shell_line("omxfs", "branches", ws.shown_as, zone)
    note = (
        f"branch {current}'s view shows your zone as the branch, hiding the zone beneath it: pending branches are not "
        f"counted here (stat '?') nor checked for conflicts; `{listed}` on the host counts them"
    )
    return BranchListing(rows, current, False, note)


def compare(ws: Workspace, zone: str, branch: str, other: str | None, view: InView | None) -> BranchChanges:
    """``omxfs diff WS ZONE --branch BRANCH [--branch OTHER]``; refused in a branch's view, with that command."""
    first = Review(ws, zone, check_name(branch))
    second = Review(ws, zone, check_name(other)) if other is not None else None
    if view is not None and view.branch is not None:
        named = [option for b in (first, second) if b is not None for option in ("--branch", b.branch)]
        command = shell_line("omxfs", "diff", ws.shown_as, zone, *named)
        raise NotSupported(
            f"branch {view.branch}'s view shows your zone as the branch, hiding the zone beneath it, so branches are "
            f"compared on the host: `{command}` (diff_my_zone compares your zone as this branch has it with its "
            "latest checkpoint)"
        )
    found = pending_diff(first) if second is None else branches_diff(first, second)
    return BranchChanges(found.source, found.target, found.added, found.modified, found.deleted, diff_text(found))


def fork(ws: Workspace, zone: str, branch: str, from_branch: str | None, view: InView | None) -> BranchForked:
    """A new branch ``branch`` of the zone, or of its pending branch ``from_branch``, made as ``omxfs run --branch
    BRANCH [--from FROM]`` makes one (``Review.run_parent``, ``Review.prepare``) and nothing run in it. In a view,
    refused with the host command that makes it (``NotSupported``)."""
    new = Review(ws, zone, check_name(branch))
    if from_branch is not None:
        check_name(from_branch)
    if new.pending:
        raise AlreadyExists(
            f"{new.called} is pending already: work in it with `{_run(new, None)}` (`{new.line('diff')}` shows it)"
        )
    parent = new.run_parent(from_branch)
    if view is not None:
        raise NotSupported(_made_on_the_host(new, parent, view))
    new.prepare(parent)
    made = new.made
    return BranchForked(
        new.branch,
        made.parent,
        made.created,
        made.by or new.zone,
        _run(new, None),
        _serve(new),
        new.line("diff"),
        new.line("accept"),
        new.line("discard"),
        _pending_note(new, parent),
    )


def _run(branch: Review, parent: str | None) -> str:
    held = ("--branch", branch.branch, *(("--from", parent) if parent is not None else ()))
    return shell_line("omxfs", "run", branch.ws.shown_as, "--as", branch.zone, *held, "--", "CMD")


def _serve(branch: Review) -> str:
    return shell_line("omxfs", "mcp", branch.ws.shown_as, "--as", branch.zone, "--branch", branch.branch)


def _made_on_the_host(new: Review, parent: str | None, view: InView) -> str:
    """Where and when the branch is made instead: ``omxfs run --branch`` on the host makes it as it runs CMD in it,
    beside a sibling branch's view, but not beside a plain view of the zone, nor beside a view of a branch it is made
    from."""
    relatives = [b.branch for b in lineage(new.ws, new.zone, parent)]
    if view.branch is None:
        when = "once this view ends (a branch's view never runs beside a plain view of its zone)"
    elif view.branch in relatives:
        when = "once this view ends (a branch's view never runs beside a view of the branch it is made from)"
    else:
        when = "now"
    serve = f", or `{_serve(new)}` serves these tools in it" if parent is None else ""
    return (
        f"a branch is made outside {new.zone}'s view, where this server runs (its .omxfs/ is read-only): on the host, "
        f"{when}, `{_run(new, parent)}` makes it and runs CMD in it{serve}; while it is pending, a plain view of "
        "your zone is refused"
    )


def _pending_note(new: Review, parent: str | None) -> str:
    plain = shell_line("omxfs", "run", new.ws.shown_as, "--as", new.zone, "--", "CMD")
    served = shell_line("omxfs", "mcp", new.ws.shown_as, "--as", new.zone)
    made = f"from branch {parent}" if parent is not None else "from your zone"
    note = (
        f"{new.called} is made {made}, empty, and nothing runs in it: work in it with `run` or `serve` (a run that "
        f"changes nothing ends it); a person then accepts or discards it. While it is pending a plain view of your "
        f"zone is refused (`{plain}`, `{served}`); these tools go on acting on your zone itself, not the branch: "
        "leave the zone alone while the branch's view runs"
    )
    busy = views_running(new.ws.meta, new.zone)
    if busy:
        note += f". {busy}: a view of the branch starts once it ends"
    return note
