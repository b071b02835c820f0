"""Review before merge: a review run's change to a zone, held apart until a person decides.

``omxfs run WS --as NAME --review`` shows the view NAME's zone through a kernel overlay mounted in the view's own
namespaces (``omxfs.view.review_mount``): the zone is the overlay's lower layer, untouched, and everything the run
writes lands in ``.omxfs/reviews/<zone>/upper`` (``work`` beside it is the overlay's scratch, ``merged`` its
mountpoint). Everyone else (other views, the ``omxfs mount``, the host) sees the zone as it was. The overlay runs
in a user namespace with ``userxattr``, as root too, so the upper layer has one format: a deleted name is a
*whiteout* (a character device 0:0), a directory that replaced one of the zone is *opaque* (``user.overlay.opaque``
= ``y``), and the overlay's own bookkeeping is ``user.overlay.*`` attributes, which are never part of the change.

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
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from omxfs.checkpoints import Entry, ZoneDiff, ZoneHistory
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.checkpoints.diff import compare
from omxfs.checkpoints.held import Held, kept_times
from omxfs.checkpoints.records import read_accept_marker
from omxfs.checkpoints.scan import open_unread, scan_zone
from omxfs.checkpoints.views import views_running
from omxfs.errors import NotFound, OSFailure, PathBlocked, from_os_error
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
from omxfs.store.workspace import Workspace

#: the overlay's own attributes in ``userxattr`` mode (opaque, impure, origin, uuid...): bookkeeping, not content
OVERLAY_XATTRS = "user.overlay."
OPAQUE = "user.overlay.opaque"
#: the kernel's shorthand for a crash mid-accept in ``omxfs fsck``
INTERRUPTED = "interrupted-accept"
#: where omx keeps the records of its runs in a zone (``agent.record.runs_dir``): its trace, not the run's work
RUN_RECORDS = "runs"


@dataclass(frozen=True)
class Review:
    """The pending change of ``zone``'s review runs, under ``.omxfs/reviews/<zone>/``."""

    ws: Workspace
    zone: str

    @property
    def dir(self) -> Path:
        return self.ws.meta / REVIEWS / self.zone

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
    def accepting(self) -> bool:
        return (self.dir / REVIEW_ACCEPTING).exists()

    def shown(self) -> str:
        return f"{META_DIR}/{REVIEWS}/{self.zone}"

    def prepare(self) -> None:
        """The overlay's layers, made for a first review run (kept for the next: it continues the same change). The
        upper layer's root starts as the zone's root (mode, owner, times), which the overlay shows as the zone's."""
        if self.accepting:
            raise OSFailure(
                f"an accept of {self.zone}'s review was interrupted: finish it with `omxfs accept WS {self.zone}` "
                "(or `omxfs fsck WS --repair`) before a new review run",
                errno.EBUSY,
            )
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.stat(self.zone_dir)
        for layer in (self.upper, self.work, self.merged):
            with contextlib.suppress(FileExistsError):
                os.mkdir(layer, 0o700)
                if layer == self.upper:
                    os.chmod(layer, stat.S_IMODE(st.st_mode))
                    if os.geteuid() == 0:
                        os.chown(layer, st.st_uid, st.st_gid)
                    os.utime(layer, ns=(st.st_atime_ns, st.st_mtime_ns))

    def refuse_plain_run(self) -> None:
        if self.pending:
            raise OSFailure(
                f"{self.zone} has a review pending ({self.shown()}): continue it with `omxfs run --review`, or "
                f"decide first: `omxfs diff WS {self.zone} --review`, then `omxfs accept WS {self.zone}` or "
                f"`omxfs discard WS {self.zone}`",
                errno.EBUSY,
            )

    def refuse_if_viewed(self, doing: str) -> None:
        busy = views_running(self.ws.meta, self.zone)
        if busy:
            raise OSFailure(
                f"{busy}: its overlay holds the pending change, so {doing} now would miss what it writes next; "
                "end it first",
                errno.EBUSY,
            )

    def require_pending(self) -> None:
        if not self.pending:
            raise NotFound(
                f"{self.zone} has no review pending (start one with `omxfs run WS --as {self.zone} --review -- CMD`)"
            )


# -- the pending change as a diff ------------------------------------------------------------------------------


def pending_diff(review: Review) -> ZoneDiff:
    """The zone now (``zone``) against the zone as its review run sees it (``review``), like ``omxfs diff``."""
    review.require_pending()
    lower = {e.path: e for e in scan_zone(review.zone_dir, None).entries}
    upper = {e.path: e for e in scan_zone(review.upper, None).entries}
    merged = dict(lower)
    from_upper: set[str] = set()
    for path, entry in upper.items():  # walk order: a directory before what it holds
        if path != "." and (_is_whiteout(entry) or _is_opaque(entry) or lower.get(path, entry).type != entry.type):
            for gone in [p for p in merged if p.startswith(path + "/") and p not in from_upper]:
                del merged[gone]
        if _is_whiteout(entry):
            merged.pop(path, None)
            continue
        merged[path] = replace(entry, xattrs=tuple(x for x in entry.xattrs if not x[0].startswith(OVERLAY_XATTRS)))
        from_upper.add(path)

    def read_zone(entry: Entry) -> bytes:
        return _read_unread(review.zone_dir, entry.path)

    def read_merged(entry: Entry) -> bytes:
        return _read_unread(review.upper if entry.path in from_upper else review.zone_dir, entry.path)

    return compare(lower, merged, read_zone, read_merged, "zone", "review")


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


def _is_whiteout(entry: Entry) -> bool:
    return entry.type == "char" and entry.rdev == 0


def _is_opaque(entry: Entry) -> bool:
    return entry.type == "dir" and dict(entry.xattrs).get(OPAQUE) in (b"y", b"x")


def records_only(change: ZoneDiff) -> bool:
    """Whether ``change`` adds files and directories under ``runs/`` and does nothing else (nothing at all too)."""
    under = [p for p in change.added if p == RUN_RECORDS or p.startswith(f"{RUN_RECORDS}/")]
    kinds = {change.details.get(p, {}).get("type") for p in under}
    return not change.modified and not change.deleted and len(under) == len(change.added) and kinds <= {"file", "dir"}


def settle(review: Review) -> tuple[ZoneDiff, bool]:
    """When a review run has ended: the change it holds, and whether it is pending. It is not when it holds none of
    the run's work: nothing, or only omx's records of its runs, which are then moved into the zone (a record is no
    change to decide on, and a review pending on one alone kept the zone from every plain run until someone dropped
    the run's trace with it) and the review is over. Call once the review's view has ended."""
    change = pending_diff(review)
    if review.accepting or not records_only(change):
        return change, True
    finish_accept(review)
    return change, False


# -- accept and discard ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    undo: int  # the checkpoint of the zone before the change, which restores it
    resumed: bool  # an interrupted accept was finished


def accept(review: Review, actor: str) -> Accepted:
    """Apply the pending change to the zone: a checkpoint first (the undo), then the upper layer moved in. An entry of
    the zone that the agent changes into something else meanwhile (a symlink or file where a directory was) stops the
    accept there with ``PathBlocked``, half-applied and resumable, never followed (``held.py``)."""
    history = ZoneHistory(review.ws, review.zone)
    history.check_may_change(actor)
    review.require_pending()
    review.refuse_if_viewed("an accept")
    marker = review.dir / REVIEW_ACCEPTING
    resumed = marker.exists()
    if resumed:
        undo = read_accept_marker(marker)
    else:
        made = history.make(actor, "before accepting a review", only_if_changed=True)
        latest = made or history.latest()
        assert latest is not None  # made just now if there was none
        undo = latest.number
        _write_marker(marker, {"undo": undo, "by": actor})
    shown = f"{AGENTS}/{review.zone}"
    try:
        finish_accept(review)
    except (PathBlocked, NotFound) as exc:  # a directory of the zone replaced or removed since it was looked at
        review.ws.audit(actor, f"accept review stopped half-way (undo: {undo})", shown)
        raise PathBlocked(
            f"{exc.message}: the zone changed while the accept ran, which stopped there with part of the change "
            f"applied (nothing outside the zone was touched). Finish it with `omxfs accept WS {review.zone}`, or "
            f"undo it with `omxfs restore WS {review.zone} {undo}`"
        ) from exc
    review.ws.audit(actor, f"accept review (undo: {undo})", shown)
    return Accepted(undo, resumed)


def finish_accept(review: Review) -> None:
    """Move what is left of the upper layer into the zone, then drop the review's directory (idempotent). Each
    directory of the change keeps the mode, owner, ``user.*`` attributes and times the review run left it."""
    if review.upper.is_dir():
        upper_shown, zone_shown = f"{review.shown()}/{REVIEW_UPPER}", f"{AGENTS}/{review.zone}"
        with Held.open(review.upper, upper_shown) as upper, Held.open(review.zone_dir, zone_shown) as zone:
            before, xattrs = upper.stat(), _user_xattrs(upper.fd)
            _apply_dir(upper, zone)
            zone.set_attributes(before, xattrs, owner=os.geteuid() == 0)
    _remove_review(review)


def discard(review: Review, actor: str) -> None:
    """Drop the pending change: the zone stays as it is."""
    ZoneHistory(review.ws, review.zone).check_may_change(actor)
    review.require_pending()
    review.refuse_if_viewed("a discard")
    if review.accepting:
        raise OSFailure(
            f"an accept of {review.zone}'s review was interrupted half-way: finish it (`omxfs accept WS "
            f"{review.zone}`), then undo it with the restore it prints",
            errno.EBUSY,
        )
    _remove_review(review)
    review.ws.audit(actor, "discard review", f"{AGENTS}/{review.zone}")


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


def _apply_dir(upper: Held, zone: Held) -> None:
    """Each name of the upper directory ``upper`` into the zone's ``zone``; the name leaves ``upper`` once applied."""
    root = os.geteuid() == 0
    for name in upper.names():
        st = upper.lstat(name)
        if st is None:
            continue
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout: the name was deleted
            zone.remove(name)
            upper.unlink(name)
        elif stat.S_ISDIR(st.st_mode) and not _opaque(upper, name) and zone.is_dir(name):
            with upper.sub(name) as source, zone.sub(name) as target:  # merged with the zone's directory
                before, xattrs = source.stat(), _user_xattrs(source.fd)
                _apply_dir(source, target)
                target.set_attributes(before, xattrs, owner=root)
            os.rmdir(name, dir_fd=upper.fd)
        elif stat.S_ISDIR(st.st_mode):  # replaces what the zone had (opaque, or over a non-directory): whole
            with upper.sub(name) as source:
                _strip_overlay(source)
            _move_in(upper, name, zone, replace_any=True)
        else:
            _strip_xattrs(upper, name)
            _move_in(upper, name, zone, replace_any=False)  # replaces a file atomically
        crash_point("accept-applied")


#: how often a name the agent keeps putting back in the way of a rename is removed again before the accept stops
_MOVE_TRIES = 3


def _move_in(upper: Held, name: str, zone: Held, *, replace_any: bool) -> None:
    """Rename ``name`` from ``upper`` into ``zone`` over what is there: a directory there is removed first (and
    anything, where ``replace_any``: a directory is renamed only over an empty one)."""
    for _ in range(_MOVE_TRIES):
        if replace_any or zone.is_dir(name):
            zone.remove(name)
        try:
            upper.rename(name, zone, name)
            return
        except OSError as exc:
            if exc.errno not in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY, errno.EEXIST):
                raise from_os_error(exc, zone.name(name), walking=True) from exc
    raise PathBlocked(f"{zone.name(name)}: {zone.what(name)} kept being put there while it was replaced")


def _opaque(held: Held, name: str) -> bool:
    try:
        return os.getxattr(held.proc(name), OPAQUE, follow_symlinks=False) in (b"y", b"x")
    except OSError:
        return False


def _user_xattrs(fd: int) -> dict[str, bytes]:
    """The ``user.*`` attributes of the open ``fd``, without the overlay's own."""
    names = [n for n in os.listxattr(fd) if n.startswith("user.") and not n.startswith(OVERLAY_XATTRS)]
    return {name: os.getxattr(fd, name) for name in names}


def _strip_overlay(top: Held) -> None:
    """A directory about to move into the zone whole: its whiteouts and the overlay's attributes removed, each
    directory's times kept."""
    with kept_times(top):
        for name in _overlay_xattrs(top.fd):
            os.removexattr(top.fd, name)
        for name in top.names():
            st = top.lstat(name)
            if st is None:
                continue
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                top.unlink(name)
            elif stat.S_ISDIR(st.st_mode):
                with top.sub(name) as below:
                    _strip_overlay(below)
            else:
                _strip_xattrs(top, name)


def _overlay_xattrs(target: int | str) -> list[str]:
    """The overlay's attribute names on the open ``target``, or on the path ``target`` (its last name not followed)."""
    with contextlib.suppress(OSError):
        names = os.listxattr(target) if isinstance(target, int) else os.listxattr(target, follow_symlinks=False)
        return [n for n in names if n.startswith(OVERLAY_XATTRS)]
    return []


def _strip_xattrs(held: Held, name: str) -> None:
    st = held.lstat(name)
    if st is None or stat.S_ISLNK(st.st_mode):
        return  # user.* attributes live on files and directories only
    path = held.proc(name)
    for key in _overlay_xattrs(path):
        with contextlib.suppress(OSError):
            os.removexattr(path, key, follow_symlinks=False)


def _remove_review(review: Review) -> None:
    """The review's directory removed, through directories the overlay left without permissions."""
    with contextlib.suppress(NotFound), Held.open(review.ws.meta / REVIEWS) as reviews:
        reviews.remove(review.zone)


def interrupted(ws: Workspace) -> list[Review]:
    """The reviews whose accept was killed half-way (for ``omxfs fsck``)."""
    try:
        zones = sorted(os.listdir(ws.meta / REVIEWS))
    except OSError:
        return []
    return [Review(ws, zone) for zone in zones if (ws.meta / REVIEWS / zone / REVIEW_ACCEPTING).exists()]
