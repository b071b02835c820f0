"""Review before merge (issue 27, item 4): a review run's change to a zone, held apart until a person decides.

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
- ``discard``: the upper layer removed.

Both are the zone's owner's or a supervisor's to do, audited like restores, and refused while the review's view
still runs (its overlay holds the upper layer). A plain run of the zone is refused while a change is pending.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from omxfs.checkpoints import Entry, ZoneDiff, ZoneHistory
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.checkpoints.diff import compare
from omxfs.checkpoints.scan import scan_zone
from omxfs.checkpoints.views import views_running
from omxfs.errors import NotFound, OSFailure
from omxfs.store.atomic import read_bytes
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
        upper layer's root starts as the zone's root (mode, owner), which the overlay shows as the zone's."""
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
        return read_bytes(review.zone_dir, PurePosixPath(entry.path))

    def read_merged(entry: Entry) -> bytes:
        root = review.upper if entry.path in from_upper else review.zone_dir
        return read_bytes(root, PurePosixPath(entry.path))

    return compare(lower, merged, read_zone, read_merged, "zone", "review")


def _is_whiteout(entry: Entry) -> bool:
    return entry.type == "char" and entry.rdev == 0


def _is_opaque(entry: Entry) -> bool:
    return entry.type == "dir" and dict(entry.xattrs).get(OPAQUE) in (b"y", b"x")


# -- accept and discard ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    undo: int  # the checkpoint of the zone before the change, which restores it
    resumed: bool  # an interrupted accept was finished


def accept(review: Review, actor: str) -> Accepted:
    """Apply the pending change to the zone: a checkpoint first (the undo), then the upper layer moved in."""
    history = ZoneHistory(review.ws, review.zone)
    history.check_may_change(actor)
    review.require_pending()
    review.refuse_if_viewed("an accept")
    marker = review.dir / REVIEW_ACCEPTING
    resumed = marker.exists()
    if resumed:
        undo = int(json.loads(marker.read_text("utf-8"))["undo"])
    else:
        made = history.make(actor, "before accepting a review", only_if_changed=True)
        latest = made or history.latest()
        assert latest is not None  # made just now if there was none
        undo = latest.number
        _write_marker(marker, {"undo": undo, "by": actor})
    finish_accept(review)
    review.ws.audit(actor, f"accept review (undo: {undo})", f"{AGENTS}/{review.zone}")
    return Accepted(undo, resumed)


def finish_accept(review: Review) -> None:
    """Move what is left of the upper layer into the zone, then drop the review's directory (idempotent)."""
    if review.upper.is_dir():
        _apply_dir(review.upper, review.zone_dir)
        _copy_attributes(review.upper, review.zone_dir)
    _remove_tree(review.dir)


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
    _remove_tree(review.dir)
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


def _apply_dir(upper: Path, zone: Path) -> None:
    """Each name of the upper directory ``upper`` into the zone's ``zone``; the name leaves ``upper`` once applied."""
    for name in sorted(os.listdir(upper)):
        source, target = upper / name, zone / name
        st = os.lstat(source)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout: the name was deleted
            _remove_any(target)
            os.unlink(source)
        elif stat.S_ISDIR(st.st_mode) and not _opaque(source) and _is_dir(target):
            _apply_dir(source, target)  # merged with the zone's directory
            _copy_attributes(source, target)
            os.rmdir(source)
        elif stat.S_ISDIR(st.st_mode):  # replaces what the zone had (opaque, or over a non-directory): whole
            _strip_overlay(source)
            _remove_any(target)
            os.rename(source, target)
        else:
            _strip_xattrs(source)
            if _is_dir(target):
                _remove_any(target)
            os.rename(source, target)  # replaces a file atomically
        crash_point("accept-applied")


def _opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, OPAQUE, follow_symlinks=False) in (b"y", b"x")
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _strip_overlay(top: Path) -> None:
    """A directory about to move into the zone whole: its whiteouts and the overlay's attributes removed."""
    _strip_xattrs(top)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                os.unlink(path)
            else:
                _strip_xattrs(path)


def _strip_xattrs(path: Path) -> None:
    if os.path.islink(path):
        return  # user.* attributes live on files and directories only
    with contextlib.suppress(OSError):
        for name in os.listxattr(path, follow_symlinks=False):
            if name.startswith(OVERLAY_XATTRS):
                with contextlib.suppress(OSError):
                    os.removexattr(path, name, follow_symlinks=False)


def _copy_attributes(source: Path, target: Path) -> None:
    """A merged directory's mode, owner, ``user.*`` attributes and times as the review run left them."""
    st = os.lstat(source)
    os.chmod(target, stat.S_IMODE(st.st_mode))
    if os.geteuid() == 0:
        os.chown(target, st.st_uid, st.st_gid, follow_symlinks=False)
    names = {n for n in os.listxattr(source, follow_symlinks=False) if not n.startswith(OVERLAY_XATTRS)}
    for name in names:
        if name.startswith("user."):
            os.setxattr(target, name, os.getxattr(source, name, follow_symlinks=False), follow_symlinks=False)
    for name in os.listxattr(target, follow_symlinks=False):
        if name.startswith("user.") and name not in names:
            os.removexattr(target, name, follow_symlinks=False)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def _remove_any(path: Path) -> None:
    if _is_dir(path):
        _remove_tree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _remove_tree(path: Path) -> None:
    """``rm -rf``, through directories the overlay left without permissions (its ``work/work`` is mode 000)."""

    def writable(_func: object, failed: str, _exc: object) -> None:
        parent = os.path.dirname(failed)
        with contextlib.suppress(OSError):
            os.chmod(parent, 0o700)
        with contextlib.suppress(OSError):
            os.chmod(failed, 0o700)
        if os.path.isdir(failed) and not os.path.islink(failed):
            shutil.rmtree(failed, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(failed)

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=writable)


def interrupted(ws: Workspace) -> list[Review]:
    """The reviews whose accept was killed half-way (for ``omxfs fsck``)."""
    try:
        zones = sorted(os.listdir(ws.meta / REVIEWS))
    except OSError:
        return []
    return [Review(ws, zone) for zone in zones if (ws.meta / REVIEWS / zone / REVIEW_ACCEPTING).exists()]
