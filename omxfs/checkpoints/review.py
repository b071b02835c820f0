"""Review before merge: a review run's change to a zone, held apart until a person decides.

``omxfs run WS --as NAME --review`` shows the view NAME's zone through a kernel overlay mounted in a mount namespace
that only the view and its launcher hold (``omxfs.view.review_mount``): the zone is the overlay's lower layer,
untouched, and everything the run writes lands in ``.omxfs/reviews/<zone>/upper`` (``work`` beside it is the
overlay's scratch, ``merged`` its mountpoint). Everyone else (other views, the ``omxfs mount``, the host) sees the
zone as it was. The overlay is mounted with ``userxattr`` whoever runs the view, so the upper layer has one format:
a deleted name is a *whiteout* (a character device 0:0), a directory that replaced one of the zone is *opaque*
(``user.overlay.opaque`` = ``y``), and the overlay's own bookkeeping is ``user.overlay.*`` attributes, which are
never part of the change.

What this module does with a pending change, on the store, without mounting anything:

- ``pending_diff``: the zone now against the zone as the review run sees it (its entries composed from the zone's
  and the upper layer's), printed like ``omxfs diff``;
- ``accept``: a checkpoint of the zone first (the undo), then the upper layer moved into the zone, name by name
  (renames on one filesystem: no copying). Killed half-way, the zone holds part of the change; the ``accepting``
  marker says so, and ``omxfs accept`` again or ``omxfs fsck --repair`` finishes it: every step is idempotent
  (a step removes its name from the upper layer only once it is applied). A plain view is refused until then;
- ``discard``: the upper layer removed;
- ``settle``, when a review run ends: a review that holds none of the run's work is over at once. It holds nothing,
  or only new files under ``runs/``, omx's record of its runs (a declined or refused run writes nothing else):
  those land in the zone, where the record of every run is, instead of a review pending on a record alone.

Both are the zone's owner's or a supervisor's to do, audited like restores, and refused while the review's view
still runs (its overlay holds the upper layer). A plain run of the zone is refused while a change is pending.

A zone may hold several such changes at once, each a *branch* (``omxfs.checkpoints.branches``): the review is the
branch named ``review``; ``omxfs run --branch NAME`` makes others, under ``.omxfs/branches/<zone>/NAME/``, laid
out alike. Their views run side by side, each over the zone as its lower layer, which changes under none of them:
an accept (which changes the zone) waits for every view of the zone to end, and a plain view is refused while any
branch is pending. The first branch accepted wins: a sibling made before it whose change collides with it
(``branches.overlap``) is *conflicted*, kept, and refused by accept with the paths named; a sibling that changed
other paths is accepted after it as before. ``rebase`` moves the moment a branch is judged from to now: its content
needs no moving (its lower layer is the live zone already), and accepts made before it no longer conflict with it.

A branch may be made from another (``omxfs run --branch C --from P``, a *nested* branch): its view's lower layers
are P's upper layer over the zone, its change is judged against the zone as P has it, and an accept applies it into
P's upper layer (``finish_accept``), with the overlay's meaning kept: a deletion of what P's lower layers hold is a
whiteout there, of what only P's upper layer held its removal, an opaque directory replaces P's. Nothing of P moves
while C or any other view of the zone runs, and P is neither accepted nor discarded while it has pending branches.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from omxfs.checkpoints import Entry, ZoneDiff, ZoneHistory, branches
from omxfs.checkpoints.branches import BRANCHES, REVIEW
from omxfs.checkpoints.diff import compare
from omxfs.checkpoints.held import Held
from omxfs.checkpoints.layers import OPAQUE as OPAQUE  # where the mount's branch directories read them
from omxfs.checkpoints.layers import OVERLAY_XATTRS as OVERLAY_XATTRS
from omxfs.checkpoints.layers import apply_to_layer, apply_to_zone, layered, overlay, set_layer_attributes, user_xattrs
from omxfs.checkpoints.manifest import Manifest
from omxfs.checkpoints.records import read_accept_marker
from omxfs.checkpoints.scan import open_unread
from omxfs.checkpoints.views import views_running
from omxfs.errors import InvalidInput, NotFound, OmxError, OSFailure, PathBlocked, from_os_error
from omxfs.shell_line import shell_line
from omxfs.store.atomic import open_dir
from omxfs.store.layout import (
    AGENTS,
    META_DIR,
    REVIEW_ACCEPTING,
    REVIEW_MERGED,
    REVIEW_UPPER,
    REVIEW_WORK,
    REVIEWS,
)
from omxfs.store.stamps import utc_now
from omxfs.store.workspace import Workspace

#: the kernel's shorthand for a crash mid-accept in ``omxfs fsck``
INTERRUPTED = "interrupted-accept"
#: where omx keeps the records of its runs in a zone (``agent.record.runs_dir``): its trace, not the run's work
RUN_RECORDS = "runs"
#: the paths of a run's record: ``runs/<time>/``, its plan and trace, step outputs, earlier plans with theirs
RUN_RECORD = re.compile(
    rf"{RUN_RECORDS}(/\d{{8}}-\d{{6}}(-\d+)?(/(plan\.json|trace\.jsonl|outputs(/\d+\.txt)?"
    r"|plans(/\d+(/(plan\.json|outputs(/\d+\.txt)?))?)?))?)?"
)


@dataclass(frozen=True)
class Review:
    """The pending change of ``zone``'s review runs, under ``.omxfs/reviews/<zone>/``, or of its branch ``branch``
    under ``.omxfs/branches/<zone>/<branch>/`` (a plain name: ``branches.check_name``)."""

    ws: Workspace
    zone: str
    branch: str = REVIEW

    @property
    def is_review(self) -> bool:
        return self.branch == REVIEW

    @property
    def parent(self) -> Path:
        """The directory that holds the branch's own."""
        return self.ws.meta / REVIEWS if self.is_review else branches.zone_branches_dir(self.ws.meta, self.zone)

    @property
    def dir(self) -> Path:
        return self.parent / (self.zone if self.is_review else self.branch)

    @property
    def what(self) -> str:
        """How an audit line names it: "review", "branch b1"."""
        return "review" if self.is_review else f"branch {self.branch}"

    @property
    def called(self) -> str:
        """How messages name it: "alice's review", "alice's branch b1"."""
        return f"{self.zone}'s review" if self.is_review else f"{self.zone}'s branch {self.branch}"

    def options(self, verb: str) -> str:
        """What names this branch on an ``omxfs VERB WS ZONE`` line: ``--review`` for a review's diff (accept,
        discard and rebase take the review by default), ``--branch NAME`` for another branch."""
        if self.is_review:
            return " --review" if verb in ("diff", "run") else ""
        return f" --branch {self.branch}"

    def line(self, verb: str) -> str:
        """``omxfs VERB WS ZONE`` for this branch, to paste: an accept or a discard acts as the zone's owner."""
        acting = ("--as", self.zone) if verb in ("accept", "discard", "rebase") else ()
        return shell_line("omxfs", verb, self.ws.shown_as, self.zone, *self.options(verb).split(), *acting)

    @property
    def upper(self) -> Path:
        return self.dir / REVIEW_UPPER

    @property
    def work(self) -> Path:
        return self.dir / REVIEW_WORK

    @property
    def merged(self) -> Path:
        return self.dir / REVIEW_MERGED

    @property
    def zone_dir(self) -> Path:
        return self.ws.root / AGENTS / self.zone

    @property
    def pending(self) -> bool:
        return self.dir.is_dir()

    @property
    def made(self) -> branches.Made:
        """Its record (``branches.made``): when, by whom, from which branch."""
        return branches.made(self.dir)

    def ancestors(self) -> list[Review]:
        """The branch it was made from (``--from``), that one's, and so on, nearest first: empty for a branch of
        the zone itself."""
        return lineage(self.ws, self.zone, self.made.parent if self.pending else None)

    def descends_from(self, other: Review) -> bool:
        """Whether this branch was made from ``other``, or from a branch made from it...; False where its lineage
        cannot be read (a parent gone)."""
        with contextlib.suppress(NotFound, InvalidInput):
            return other in self.ancestors()
        return False

    def children(self) -> list[Review]:
        """The pending branches made from this one."""
        return [b for b in pending_branches(self.ws, self.zone) if b.made.parent == self.branch and b != self]

    def into(self) -> str:
        """What an accept applies it to, in words: "the zone", "branch P"."""
        parent = self.made.parent if self.pending else None
        return "the zone" if parent is None else f"branch {parent}"

    @property
    def accepting(self) -> bool:
        return (self.dir / REVIEW_ACCEPTING).exists()

    def shown(self) -> str:
        if self.is_review:
            return f"{META_DIR}/{REVIEWS}/{self.zone}"
        return f"{branches.shown_zone_branches(self.zone)}/{self.branch}"

    def run_parent(self, given: str | None) -> str | None:
        """The branch a run of this one is made from: its record's when it is pending (``given``, ``--from``, must
        then name the same), else ``given`` (which must be another pending branch of the zone). InvalidInput or
        NotFound otherwise."""
        recorded = self.made.parent if self.pending else None
        if self.pending:
            if given is not None and given != recorded:
                was = f"from branch {recorded}" if recorded else "from the zone itself"
                raise InvalidInput(
                    f"{self.called} was made {was}: run it again without --from {given}, or start another branch"
                )
            return recorded
        if given is None:
            return None
        if given == self.branch:
            raise InvalidInput(f"{self.called} cannot be made from itself: give --from another branch")
        Review(self.ws, self.zone, branches.check_name(given)).require_pending()
        return given

    def prepare(self, parent: str | None = None) -> None:
        """The overlay's layers, made for a first review run (kept for the next: it continues the same change), made
        from the branch ``parent`` if given (``run_parent``). The upper layer's root starts as the root the view
        shows (mode, owner, times): the zone's, or the parent's upper layer's. A new branch of the zone itself
        records its base, a checkpoint of the zone as it is now (``base_checkpoint``); a new nested branch its
        parent's change as it is now (``branches.record_parent_change``)."""
        self.refuse_if_half_accepted("a new review run")
        self.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.dir, 0o700)
        if not branches.is_made(self.dir):
            # between accepts, never during one: the base is the zone as an accept left it, and every accept after
            # the record is one made after the branch (``branches.conflicts``)
            with branches.no_accept_running(self.ws.meta, self.zone):
                base = None
                if parent is None:
                    base = base_checkpoint(self.ws, self.zone, f"{self.what} started")
                else:  # first: a record without it is one made before they were kept
                    parent_change = _change_of(Review(self.ws, self.zone, parent))
                    if parent_change is not None:
                        branches.record_parent_change(self.dir, parent_change)
                branches.record_made(self.dir, self.zone, parent, base)
        below = self.ancestors()
        st = os.stat(below[0].upper if below else self.zone_dir)
        for layer in (self.upper, self.work, self.merged):
            with contextlib.suppress(FileExistsError):
                os.mkdir(layer, 0o700)
                if layer == self.upper:
                    os.chmod(layer, stat.S_IMODE(st.st_mode))
                    if os.geteuid() == 0:
                        os.chown(layer, st.st_uid, st.st_gid)
                    os.utime(layer, ns=(st.st_atime_ns, st.st_mtime_ns))

    def refuse_plain_run(self) -> None:
        """Refused while any branch of the zone is pending: a plain view writes the zone, every branch's lower
        layer."""
        for branch in pending_branches(self.ws, self.zone):
            go_on = shell_line(
                "omxfs", "run", self.ws.shown_as, "--as", self.zone, *branch.options("run").split(), "--", "CMD"
            )
            if branch.is_review:
                raise OSFailure(
                    f"{self.zone} has a review pending ({branch.shown()}): continue it with `{go_on}`, "
                    f"or decide first: `{branch.line('diff')}`, then `{branch.line('accept')}` or "
                    f"`{branch.line('discard')}`",
                    errno.EBUSY,
                )
            listed = shell_line("omxfs", "branches", self.ws.shown_as, self.zone)
            raise OSFailure(
                f"{self.zone} has branch {branch.branch} pending ({branch.shown()}): continue it with `{go_on}`, or "
                f"decide first: `{branch.line('diff')}`, then `{branch.line('accept')}` or `{branch.line('discard')}`"
                f" (`{listed}` lists them all)",
                errno.EBUSY,
            )

    def refuse_if_viewed(self, doing: str) -> None:
        """Refused while any view of the zone runs: this branch's (its overlay holds the change), or another, whose
        overlay has the zone as its lower layer, which must not change under it."""
        self.refuse_if_running(doing)
        busy = views_running(self.ws.meta, self.zone)
        if busy:
            raise OSFailure(
                f"{busy}: {doing} changes the zone, which a running view shows (a branch's overlay as its lower "
                "layer): end it first",
                errno.EBUSY,
            )

    def refuse_if_half_accepted(self, before: str) -> None:
        """Refused while an accept of any branch of the zone (this one too) was interrupted: the zone holds part of a
        change then."""
        for branch in pending_branches(self.ws, self.zone):
            if branch.accepting:
                raise OSFailure(
                    f"an accept of {branch.called} was interrupted: finish it with `{branch.line('accept')}` "
                    f"(or `{shell_line('omxfs', 'fsck', self.ws.shown_as, '--repair')}`) before {before}",
                    errno.EBUSY,
                )

    def refuse_if_running(self, doing: str) -> None:
        """Refused while this branch's own view runs (``branches.hold_running``)."""
        pid = branches.running_pid(self.dir)
        if pid is not None:
            raise OSFailure(
                f"a view of {self.zone} is running (pid {pid}) on {self.called}: its overlay holds the pending "
                f"change, so {doing} now would miss what it writes next; end it first",
                errno.EBUSY,
            )

    def refuse_if_parent(self, doing: str) -> None:
        """Refused while branches made from this one are pending: their views have its upper layer as a lower one,
        and their changes are to go into it."""
        children = self.children()
        if children:
            first = children[0]
            raise OSFailure(
                f"{self.called} has {len(children)} branch(es) made from it pending "
                f"({', '.join(c.branch for c in children)}): {doing} of it would leave them without the branch they "
                f"change; accept each into it first (`{first.line('accept')}`) or discard it "
                f"(`{first.line('discard')}`)",
                errno.EBUSY,
            )

    def require_pending(self) -> None:
        if self.pending:
            return
        ws = self.ws.shown_as
        if self.is_review:
            start = shell_line("omxfs", "run", ws, "--as", self.zone, "--review", "--", "CMD")
            raise NotFound(f"{self.zone} has no review pending (start one with `{start}`)")
        start = shell_line("omxfs", "run", ws, "--as", self.zone, "--branch", self.branch, "--", "CMD")
        listed = shell_line("omxfs", "branches", ws, self.zone)
        raise NotFound(
            f"{self.zone} has no branch {self.branch} pending (`{listed}` lists its branches; start one with `{start}`)"
        )


def base_checkpoint(ws: Workspace, zone: str, message: str, actor: str | None = None) -> int | None:
    """The number of a checkpoint of the zone as it is now, made by ``actor`` (the zone's owner by default) unless
    nothing changed since the latest: a branch's base (``branches.Made.base``). None where none can be made (a full
    disk, a store this user cannot write): the branch then has no base, and only its siblings are checked, as for
    one made before bases."""
    history = ZoneHistory(ws, zone)
    try:
        made = history.make(actor or zone, message, only_if_changed=True)
        latest = made or history.latest()
    except (OmxError, OSError):
        return None
    return None if latest is None else latest.number


def branch_bases(ws: Workspace, zone: str) -> frozenset[int]:
    """The checkpoints the zone's pending branches are based on: a prune keeps them, or what the zone changed since
    could not be told."""
    return frozenset(b for branch in pending_branches(ws, zone) if (b := branch.made.base) is not None)


def lineage(ws: Workspace, zone: str, parent: str | None) -> list[Review]:
    """The pending branch ``parent`` of ``zone`` and the branches it was made from, nearest first (empty for None);
    NotFound if one of them is not pending, InvalidInput for a loop of records."""
    found: list[Review] = []
    while parent is not None:
        branch = Review(ws, zone, parent)
        branch.require_pending()
        if branch in found:
            raise InvalidInput(f"{zone}'s branch {parent} is made from itself, through {len(found)} branch(es)")
        found.append(branch)
        parent = branch.made.parent
    return found


def pending_branches(ws: Workspace, zone: str) -> list[Review]:
    """The zone's pending branches: its review first, then the others by name."""
    found = [Review(ws, zone)] if Review(ws, zone).pending else []
    with contextlib.suppress(OSError):
        names = sorted(os.listdir(branches.zone_branches_dir(ws.meta, zone)))
        found += [Review(ws, zone, name) for name in names if branches.NAME.fullmatch(name) and name != REVIEW]
    return [branch for branch in found if branch.pending]


# -- the pending change as a diff ------------------------------------------------------------------------------


def pending_diff(review: Review) -> ZoneDiff:
    """The zone now (``zone``) against the zone as its review run sees it (``review``), like ``omxfs diff``."""
    return _composed(review).diff


@dataclass(frozen=True)
class Composed:
    """A pending branch read from the store: its change against what it is accepted into (the zone, or its parent
    branch as it is), every entry of that as it is now (``lower``), every entry as the branch's run sees it, and,
    for a nested branch, every entry of what its parent is accepted into (``below``; None for a branch of the
    zone)."""

    diff: ZoneDiff
    lower: dict[str, Entry]
    merged: dict[str, Entry]
    below: dict[str, Entry] | None = None

    def change(self) -> dict[str, Entry | None]:
        """Each path the change adds, modifies or deletes, with its entry as the branch has it (None: deleted)."""
        diff, merged = self.diff, self.merged
        return {path: merged.get(path) for path in (*diff.added, *diff.modified, *diff.deleted)}


def _composed(review: Review) -> Composed:
    """``review`` composed from the zone and the upper layers, as the kernel's overlay shows it to its run. The zone
    is read as a checkpoint reads it: a file whose stat is the latest checkpoint's is taken from it unread."""
    review.require_pending()
    lower, lower_from, below = _stacked(review.ws, review.zone, review.ancestors())
    merged, merged_from = dict(lower), dict(lower_from)
    overlay(merged, merged_from, review.upper)
    base = review.made.parent or "zone"
    diff = compare(lower, merged, _reader(review, lower_from), _reader(review, merged_from), base, review.branch)
    return Composed(diff, lower, merged, below)


def _stacked(
    ws: Workspace, zone: str, lineage: list[Review]
) -> tuple[dict[str, Entry], dict[str, Path], dict[str, Entry] | None]:
    """The zone with the upper layers of ``lineage`` (nearest first) over it: each entry and the layer of each that is
    not the zone's, as ``layered`` gives them; and the entries without the nearest's layer (None for no lineage)."""
    uppers = [branch.upper for branch in reversed(lineage)]
    entries, source = layered(ws.root / AGENTS / zone, uppers[:-1], _latest(ws, zone))
    if not uppers:
        return entries, source, None
    below = entries
    entries, source = dict(below), dict(source)
    overlay(entries, source, uppers[-1])
    return entries, source, below


def _change_of(branch: Review) -> dict[str, tuple[str, bool] | None] | None:
    """The pending ``branch``'s change against what it is accepted into, as ``branches.change_record`` gives it: what a
    branch made from it records (``branches.parent_change``). Its entries only: no file is read to compare. None
    where it cannot be read (a layer gone or unreadable): the branch made from it is then checked against its siblings
    only, as one made before such records."""
    try:
        entries, _, below = _stacked(branch.ws, branch.zone, [branch, *branch.ancestors()])
    except (OmxError, OSError):
        return None
    assert below is not None  # a lineage of one at least
    return branches.change_record(branches.changed(below, entries))


def _latest(ws: Workspace, zone: str) -> Manifest | None:
    """The zone's latest checkpoint, or None where there is none to read (a store this user cannot read)."""
    with contextlib.suppress(OmxError, OSError):
        return ZoneHistory(ws, zone).latest()
    return None


def _reader(review: Review, source: dict[str, Path]) -> Callable[[Entry], bytes]:
    """How to read a file of a composed view, from the layer that holds it."""

    def read(entry: Entry) -> bytes:
        return _read_unread(source.get(entry.path, review.zone_dir), entry.path)

    return read


def branches_diff(source: Review, target: Review) -> ZoneDiff:
    """Two pending branches of one zone against each other: the zone as ``source``'s run sees it, then as
    ``target``'s does, like ``omxfs diff`` (what accepting ``target`` instead of ``source`` would give)."""
    if source.zone != target.zone:
        raise InvalidInput(f"branches of two zones: {source.zone} and {target.zone}")
    source.require_pending()
    target.require_pending()
    known = _latest(source.ws, source.zone)
    old, old_from = layered(source.zone_dir, [b.upper for b in reversed([source, *source.ancestors()])], known)
    new, new_from = layered(target.zone_dir, [b.upper for b in reversed([target, *target.ancestors()])], known)
    return compare(old, new, _reader(source, old_from), _reader(target, new_from), source.branch, target.branch)


def _read_unread(root: Path, relative: str) -> bytes:
    """The regular file ``root/relative``, walked without following symlinks and read without moving its atime
    (which the review run may have set, and the accept then keeps)."""
    parent, _, name = relative.rpartition("/")
    dir_fd = open_dir(root, parent or ".")
    try:
        fd = open_unread(name, dir_fd=dir_fd)
    except OSError as exc:
        raise from_os_error(exc, root / relative, walking=True) from exc
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotFound(f"{root / relative}: not a regular file")
        return f.read()


def records_only(change: ZoneDiff) -> bool:
    """Whether ``change`` adds only what omx writes as the record of a run, and does nothing else (nothing at all
    too): ``runs/<time>/`` with its plan, trace, step outputs and earlier plans (``agent.record.trace``), as
    directories and plain files no one can execute. Anything else under ``runs/`` (a script, a set-ID file, a
    name omx never writes) keeps the review pending, like any other change."""
    return (
        not change.modified
        and not change.deleted
        and all(_run_record(p, change.details.get(p, {})) for p in change.added)
    )


def _run_record(path: str, detail: dict[str, object]) -> bool:
    if not RUN_RECORD.fullmatch(path) or "link" in detail:
        return False
    kind = detail.get("type")
    if kind == "dir":
        return not path.endswith((".json", ".jsonl", ".txt"))
    return kind == "file" and path.endswith((".json", ".jsonl", ".txt")) and not int(str(detail["mode"]), 8) & 0o7111


def settle(review: Review) -> tuple[ZoneDiff, bool]:
    """When a review run has ended: the change it holds, and whether it is pending. It is not when it holds none of
    the run's work: nothing, or only omx's records of its runs, which are then moved into the zone (a record is no
    change to decide on, and a review pending on one alone kept the zone from every plain run until someone dropped
    the run's trace with it) and the review is over (a nested branch's records go into its parent). Call once the
    review's view has ended."""
    change = pending_diff(review)
    if review.accepting or not records_only(change) or views_running(review.ws.meta, review.zone):
        return change, True  # held while a sibling branch runs too: the zone is its lower layer
    if review.children():
        return change, True  # the branches made from it change it
    finish_accept(review)
    return change, False


# -- accept and discard ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    undo: int  # the checkpoint of the zone before the change, which restores it
    resumed: bool  # an interrupted accept was finished
    into: str | None = None  # the branch it went into (a nested branch's parent), None for the zone


def accept(review: Review, actor: str) -> Accepted:
    """Apply the pending change to the zone: a checkpoint first (the undo), then the upper layer moved in. An entry of
    the zone that the agent changes into something else meanwhile (a symlink or file where a directory was) stops the
    accept there with ``PathBlocked``, half-applied and resumable, never followed (``held.py``).

    A branch that collides with one accepted after it was made is refused (``conflicted``), and kept. The accept is
    logged, with the paths it changes, before anything is applied: a sibling is checked against it from then on.

    A nested branch goes into its parent branch's upper layer instead (``finish_accept``), the zone unchanged; a
    branch with pending branches made from it is refused (``Review.refuse_if_parent``)."""
    history = ZoneHistory(review.ws, review.zone)
    history.check_may_change(actor)
    review.require_pending()
    review.refuse_if_parent("an accept")
    with branches.accepting_alone(review.ws.meta, review.zone):
        return _accept(review, actor, history)


def _accept(review: Review, actor: str, history: ZoneHistory) -> Accepted:
    review.require_pending()  # again: an accept this one waited for may have applied it
    review.refuse_if_viewed("an accept")
    review.refuse_if_parent("an accept")
    into = review.made.parent
    marker = review.dir / REVIEW_ACCEPTING
    resumed = marker.exists()
    if resumed:
        undo = read_accept_marker(marker)
    else:
        review.refuse_if_half_accepted(f"accepting {review.called}")
        composed = _composed(review)
        change = composed.change()
        collided = conflicted(review, composed)
        if collided:
            raise OSFailure(
                f"{review.called} is conflicted: {_collisions(review, collided)}. It is kept as it is: see both "
                f"sides with `{review.line('diff')}`, then take it as it is now with `{review.line('rebase')}` (its "
                f"accept then overwrites theirs) or drop it with `{review.line('discard')}`",
                errno.EBUSY,
            )
        made = history.make(actor, f"before accepting {review.called}", only_if_changed=True)
        latest = made or history.latest()
        assert latest is not None  # made just now if there was none
        undo = latest.number
        ended = branches.ended_now(
            review.branch, "accepted", actor, branches.made(review.dir), branches.change_record(change)
        )
        branches.log_ended(review.ws.meta, review.zone, ended)
        _write_marker(marker, {"undo": undo, "by": actor})
    shown = f"{AGENTS}/{review.zone}"
    what = review.what
    if into is not None:
        what += f" into branch {into}"
    try:
        finish_accept(review)
    except (PathBlocked, NotFound) as exc:  # a directory of the zone replaced or removed since it was looked at
        review.ws.audit(actor, f"accept {what} stopped half-way (undo: {undo})", shown)
        if into is not None:
            raise PathBlocked(
                f"{exc.message}: branch {into} changed while the accept ran, which stopped there with part of the "
                f"change applied (the zone was not touched). Finish it with `{review.line('accept')}`"
            ) from exc
        undo_line = shell_line("omxfs", "restore", review.ws.shown_as, review.zone, undo, "--as", review.zone)
        raise PathBlocked(
            f"{exc.message}: the zone changed while the accept ran, which stopped there with part of the change "
            f"applied (nothing outside the zone was touched). Finish it with `{review.line('accept')}`, or "
            f"undo it with `{undo_line}`"
        ) from exc
    review.ws.audit(actor, f"accept {what} (undo: {undo})", shown)
    return Accepted(undo, resumed, into)


def conflicted(review: Review, composed: Composed | None = None) -> dict[str | None, list[str]]:
    """What the change of ``review`` (``composed``, else as it is now) collides with (``branches.overlap``), each with
    the paths: each branch accepted into what it goes into since it was made (or rebased), by name; then what that
    itself changed since where no such branch explains it: under None the zone's change since the branch's base (a
    write through a mount, a restore), or, for a nested branch, under its parent's name the parent's change since
    (a later run of it: ``branches.parent_change``). Empty if nothing does.

    A nested branch has no base (what it goes into is its parent's upper layer, of which no checkpoint is made):
    what the zone changed is checked when the parent is accepted. A branch recorded before branches had bases, or a
    nested one before they recorded their parent's change, is checked against its siblings only. A base that is
    gone (pruned) tells nothing of the zone since: every path of the change counts as changed by the zone
    (``base_gone``)."""
    if composed is None:
        composed = _composed(review)
    change = composed.change()
    made = branches.made(review.dir)
    found: dict[str | None, list[str]] = {}
    found.update(branches.conflicts(review.ws.meta, review.zone, review.branch, made, change))
    if not change:
        return found
    explained = {path for paths in found.values() for path in paths}
    if made.parent is None and made.base is not None:
        own = [p for p in _zone_collisions(review, made.base, composed.lower, change) if p not in explained]
        if own:
            found[None] = own
    elif made.parent is not None and composed.below is not None:
        then = branches.parent_change_made(review.dir)
        if then is not None:
            since = branches.parent_change(then, composed.below, composed.lower, change)
            own = [p for p in branches.overlap(branches.change_record(since), change) if p not in explained]
            if own:
                found.setdefault(made.parent, []).extend(own)
    return found


def _zone_collisions(review: Review, base: int, now: dict[str, Entry], change: dict[str, Entry | None]) -> list[str]:
    """The paths of ``change`` that what the zone changed from its checkpoint ``base`` to ``now`` collides with; all
    of them if ``base`` is gone."""
    try:
        before = ZoneHistory(review.ws, review.zone).load(base).by_path_view()
    except NotFound:
        return sorted(change)
    return branches.overlap(branches.change_record(branches.zone_change(before, now, change)), change)


def base_gone(review: Review) -> int | None:
    """The number of the branch's base if that checkpoint is gone (pruned), else None."""
    base = review.made.base
    if base is None or base in ZoneHistory(review.ws, review.zone).numbers():
        return None
    return base


def changed_by(review: Review, name: str | None) -> str:
    """Who made a change ``review`` collides with (a key of ``conflicted``): "the zone itself", "branch P, its parent,
    changed since" (a nested branch's parent), or "branch NAME, accepted since"."""
    if name is None:
        return "the zone itself"
    return (
        f"branch {name}, its parent, changed since" if name == review.made.parent else f"branch {name}, accepted since"
    )


def _collisions(review: Review, collided: dict[str | None, list[str]]) -> str:
    shown = []
    made = review.made
    since = "rebased" if made.rebased_ns is not None else "made"
    for name, paths in collided.items():
        listed = ", ".join(paths[:8]) + (f" and {len(paths) - 8} more" if len(paths) > 8 else "")
        if name is not None and name == made.parent:
            on = "on" if made.rebased_ns is not None else "from"
            shown.append(f"branch {name} changed {listed} since {review.what} was {since} {on} it")
            continue
        if name is not None:
            shown.append(f"branch {name}, accepted after it was made, changed {listed} too")
            continue
        gone = base_gone(review)
        if gone is not None:
            shown.append(
                f"its base, checkpoint {gone} of the zone, is gone (pruned), so what the zone changed since "
                f"{review.what} was {since} cannot be told: {listed} may have changed"
            )
        else:
            shown.append(f"the zone changed {listed} since {review.what} was {since}")
    return "; ".join(shown)


def finish_accept(review: Review) -> None:
    """Move what is left of the upper layer into the zone (a nested branch's: into its parent's upper layer,
    ``_finish_into``), then drop the review's directory (idempotent). Each directory of the change keeps the mode,
    owner, ``user.*`` attributes and times the review run left it."""
    above = review.ancestors()
    if above:
        _finish_into(review, above)
        return
    if review.upper.is_dir():
        upper_shown, zone_shown = f"{review.shown()}/{REVIEW_UPPER}", f"{AGENTS}/{review.zone}"
        with Held.open(review.upper, upper_shown) as upper, Held.open(review.zone_dir, zone_shown) as zone:
            before, xattrs = upper.stat(), user_xattrs(upper.fd)
            apply_to_zone(upper, zone)
            zone.set_attributes(before, xattrs, owner=os.geteuid() == 0)
    _remove_review(review)


def discard(review: Review, actor: str) -> None:
    """Drop the pending change: the zone stays as it is."""
    ZoneHistory(review.ws, review.zone).check_may_change(actor)
    review.require_pending()
    review.refuse_if_running("a discard")  # its siblings may run: a discard changes nothing they see
    review.refuse_if_parent("a discard")
    if review.accepting:
        raise OSFailure(
            f"an accept of {review.called} was interrupted half-way: finish it (`{review.line('accept')}`), then "
            "undo it with the restore it prints",
            errno.EBUSY,
        )
    made = branches.made(review.dir)
    with branches.hold_running(review.dir, review.called):  # its view, started after the check above, waits
        _remove_review(review)
    ended = branches.ended_now(review.branch, "discarded", actor, made, {})
    branches.log_ended(review.ws.meta, review.zone, ended)
    review.ws.audit(actor, f"discard {review.what}", f"{AGENTS}/{review.zone}")


def rebase(review: Review, actor: str) -> dict[str | None, list[str]]:
    """Judge the pending branch from now on against what it goes into as it is now: accepts made before now no longer
    conflict with it, nor what the zone changed before now (its base becomes a checkpoint of the zone now), nor, for a
    nested branch, what its parent changed before now (its record of the parent's change is the parent's now), and an
    accept of it applies what ``pending_diff`` shows, overwriting what they changed. Its content does not move (its
    lower layers are the live zone and its parent's upper layer already). Returns what it was conflicted with
    (``conflicted``: the paths it will overwrite). Refused while any view of the zone runs or an accept is half
    done."""
    ZoneHistory(review.ws, review.zone).check_may_change(actor)
    review.require_pending()
    with branches.accepting_alone(review.ws.meta, review.zone):  # no accept logged between the check and the record
        review.require_pending()
        review.refuse_if_viewed("a rebase")
        review.refuse_if_half_accepted(f"rebasing {review.called}")
        composed = _composed(review)
        overwritten = conflicted(review, composed)
        base = None
        if review.made.parent is None:
            base = base_checkpoint(review.ws, review.zone, f"{review.what} rebased", actor)
        elif composed.below is not None:
            branches.record_parent_change(
                review.dir, branches.change_record(branches.changed(composed.below, composed.lower))
            )
        branches.record_rebased(review.dir, base)
    review.ws.audit(actor, f"rebase {review.what} on {review.into()}", f"{AGENTS}/{review.zone}")
    return overwritten


def _write_marker(path: Path, data: dict[str, object]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, json.dumps(data).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _finish_into(review: Review, above: list[Review]) -> None:
    """A nested branch's upper layer moved into its parent's (``above[0]``; ``above`` is its lineage), name by name,
    so that the parent's view then shows what the branch's did; then the branch's directory dropped."""
    parent = above[0]
    if review.upper.is_dir():
        root = os.geteuid() == 0
        with (
            Held.open(review.upper, f"{review.shown()}/{REVIEW_UPPER}") as upper,
            Held.open(parent.upper, f"{parent.shown()}/{REVIEW_UPPER}") as target,
        ):
            before, xattrs = upper.stat(), user_xattrs(upper.fd)
            apply_to_layer(upper, target)
            set_layer_attributes(target, before, xattrs, owner=root)
    _remove_review(review)


def _remove_review(review: Review) -> None:
    """The review's directory removed, through directories the overlay left without permissions."""
    with contextlib.suppress(NotFound), Held.open(review.parent) as parent:
        parent.remove(review.dir.name)


def interrupted(ws: Workspace) -> list[Review]:
    """The reviews and branches whose accept was killed half-way (for ``omxfs fsck``)."""
    found: list[Review] = []
    for top in (REVIEWS, BRANCHES):
        with contextlib.suppress(OSError):
            for zone in sorted(os.listdir(ws.meta / top)):
                if top == REVIEWS:
                    found.append(Review(ws, zone))
                else:
                    with contextlib.suppress(OSError):
                        found += [Review(ws, zone, name) for name in sorted(os.listdir(ws.meta / top / zone))
                                  if branches.NAME.fullmatch(name)]  # fmt: skip
    return [review for review in found if review.accepting]


# -- a zone's branches, listed -----------------------------------------------------------------------------------


def _collision_detail(branch: Review, name: str | None, paths: list[str]) -> str:
    """What a row of ``omxfs branches`` says of one collision: "with NAME: PATHS", or the zone's own change, or a
    nested branch's parent's."""
    if name is not None and name == branch.made.parent:
        return f"branch {name} changed since: {', '.join(paths)}"
    if name is not None:
        return f"with {name}: {', '.join(paths)}"
    gone = base_gone(branch)
    if gone is not None:
        return f"its base, checkpoint {gone}, is gone (pruned): {', '.join(paths)} may have changed in the zone"
    return f"the zone changed since: {', '.join(paths)}"


@dataclass(frozen=True)
class BranchState:
    """A row of ``omxfs branches``: a pending branch, or the last one of its name that ended."""

    name: str
    created: str
    by: str | None
    stat: str  # "+A ~M -D" of a pending change, "N path(s)" of an accepted one
    state: str  # pending, conflicted, accepted or discarded
    detail: str  # what else there is to know: running, what it collides with, who decided
    parent: str | None = None  # the branch it was made from (``--from``) and goes into; None: the zone

    def summary(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "parent": self.parent,
            "created": self.created,
            "by": self.by,
            "stat": self.stat,
            "state": self.state,
            "detail": self.detail,
        }


def branch_states(ws: Workspace, zone: str, *, counted: bool = True) -> list[BranchState]:
    """The zone's pending branches (review first, then by name), then those that ended, the last of each name.

    ``counted=False``: from the records alone, for where the zone cannot be read (a view of one of its branches,
    whose zone is that branch's overlay): a pending branch's change is neither counted (its stat is "?") nor checked
    for conflicts."""
    rows: list[BranchState] = []
    for branch in pending_branches(ws, zone):
        made = branches.made(branch.dir)
        try:
            if counted:
                composed = _composed(branch)
            else:
                branch.ancestors()  # NotFound as composing it would be
        except NotFound:  # made from a branch that is gone (removed by hand): nothing to compose it over
            gone = f"made from {made.parent}, which is gone: drop it with `{branch.line('discard')}`"
            rows.append(BranchState(branch.branch, made.created, made.by, "?", "orphaned", gone, made.parent))
            continue
        stat_line, collided = "?", {}
        if counted:
            change = composed.diff
            stat_line = f"+{len(change.added)} ~{len(change.modified)} -{len(change.deleted)}"
            collided = conflicted(branch, composed)
        details = [f"running (pid {pid})"] if (pid := branches.running_pid(branch.dir)) else []
        if branch.accepting:
            details.append("accept interrupted: accept it again")
        details += [_collision_detail(branch, name, paths) for name, paths in collided.items()]
        if made.rebased_ns is not None:
            details.append(f"rebased {utc_now(made.rebased_ns / 1e9)}")
        state = "conflicted" if collided else "pending"
        rows.append(
            BranchState(branch.branch, made.created, made.by, stat_line, state, "; ".join(details), made.parent)
        )
    live = {row.name for row in rows}
    last: dict[str, branches.Ended] = {}
    for ended in branches.ended_branches(ws.meta, zone):
        last[ended.name] = ended
    for name, ended in last.items():
        if name in live:
            continue
        created, by, parent = (
            (ended.made.created, ended.made.by, ended.made.parent) if ended.made else ("-", None, None)
        )
        detail = f"by {ended.by} at {ended.at}"
        rows.append(BranchState(name, created, by, ended.summary(), ended.state, detail, parent))
    return rows
