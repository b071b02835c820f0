"""``omxfs restore WS NAME CHECKPOINT [PATH...]``: a zone, or paths in it, exactly as a checkpoint holds them.

Every restore can be undone: first a checkpoint of what it replaces, whose id the result gives. For a restore of
the whole zone that is a checkpoint of the zone as it is (unless the latest checkpoint already is that state). For
a restore of paths it is a checkpoint of those paths only (``ZoneHistory.make_paths``: each path, or its outermost
parent the zone lacks and the restore will make), so a restore of a few files does not walk the whole zone; such a
checkpoint vouches for its paths only, and restoring it (``omxfs restore WS NAME UNDO``, no paths needed) puts
exactly those back as they were before the restore.

Never half-restored, even if killed: the new tree is built beside the zone, under
``.omxfs/checkpoints/<zone>/restoring/<token>/`` (the same filesystem), and then swapped with the zone in one
``renameat2(RENAME_EXCHANGE)``: before the swap the zone is the old one, after it the new one, and what is left
under ``restoring/`` (a tree half built, or the old zone swapped out) is debris that ``omxfs fsck`` reports and
``--repair`` removes. Where the filesystem has no exchange, the zone is renamed aside and the new tree renamed into
place; a crash between the two leaves the zone missing and the tree marked ``ready``, which ``fsck --repair`` moves
into place. A restore of given paths swaps each path the same way, one after the other: killed between two, the
first are restored and the rest not, each whole; running it again finishes it. The paths' trees are built before
their undo checkpoint is made, so a kill while building leaves the zone untouched; nothing of the zone changes
before that checkpoint is durable.

While a view of the zone runs (``omxfs run``), a restore is refused: the view holds the zone's directory itself
(a bind mount), so a swapped zone would leave it writing into the old tree (``views.py``). Stop the view first.
Writes through an ``omxfs mount`` during a restore land in the tree being replaced, as they would in a file
replaced by ``mv``; the checkpoint made first has the zone as it was before.
"""

from __future__ import annotations

import bisect
import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from omxfs.checkpoints.build import Builder, Built
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.checkpoints.held import Held, kept_times, remove_tree
from omxfs.checkpoints.history import ZoneHistory, subtree_end
from omxfs.checkpoints.links import link_across
from omxfs.checkpoints.manifest import DIR, Entry, Manifest, walk_key, within
from omxfs.checkpoints.syscalls import fsync_together
from omxfs.checkpoints.views import running_views, views_running
from omxfs.errors import InvalidInput, NotFound, OSFailure, PathBlocked, StoreCorrupt, from_os_error
from omxfs.shell_line import shell_line
from omxfs.store.layout import AGENTS, RENAME_EXCHANGE, RENAME_NOREPLACE, RESTORING
from omxfs.store.names import relative_path

#: the built tree and its marker, inside ``restoring/<token>/``
TREE = "tree"
READY = "ready"


@dataclass(frozen=True)
class Restored:
    checkpoint: int  # what was restored
    undo: int  # the checkpoint of the zone as it was before, which restores it back
    paths: tuple[str, ...]  # the paths restored, () for the whole zone
    files: int
    skipped: list[str] = field(default_factory=list)
    owners_kept: bool = True
    removed: tuple[str, ...] = ()  # paths the checkpoint does not hold: restored by removing them


def restore(history: ZoneHistory, actor: str, number: int, paths: tuple[str, ...] = ()) -> Restored:
    history.check_may_change(actor)
    _refuse_if_viewed(history)
    target = history.load(number)
    # a checkpoint of some paths only (the undo of an earlier restore of paths) vouches for those: restored whole,
    # it puts them back
    rels = tuple(str(relative_path(p)) for p in paths) or target.paths
    message = f"before restoring checkpoint {number}"
    roots = touched(history.zone_dir, rels)
    work = history.dir / RESTORING / os.urandom(8).hex()
    work.mkdir(parents=True)
    try:
        if rels:
            undo, built = _restore_paths(history, actor, message, target, rels, roots, work)
        else:
            whole = history.make(actor, message, only_if_changed=True) or history.latest()
            assert whole is not None  # made just now if there was none
            undo, built = whole, [_restore_zone(history, target, work)]
            _audit(history, actor, number, undo.number, rels)
    finally:
        remove_tree(work)  # the zone's old tree, swapped out (the agent's files); left for fsck where it cannot be
    removed = tuple(rel for rel in rels if target.entry(rel) is None)
    files = sum(b.files for b in built)
    skipped = [s for b in built for s in b.skipped]
    owners = all(b.owners_kept for b in built)
    return Restored(number, undo.number, rels, files, skipped, owners, removed)


def _restore_paths(
    history: ZoneHistory,
    actor: str,
    message: str,
    target: Manifest,
    rels: tuple[str, ...],
    roots: list[str],
    work: Path,
) -> tuple[Manifest, list[Built]]:
    """Restore ``rels`` (``roots``: what that replaces, ``touched``) from ``target``. The new trees are built first,
    beside the zone, in ``work``; then the checkpoint of ``roots`` is made (the undo, which also reads the files
    changed since the latest checkpoint and makes them durable); nothing of the zone changes before it is durable.
    The audit record is written as the zone begins to change (a restore that fails half-way is audited too); then
    each path is swapped in, one after the other, and the swaps are made durable together."""
    by_path = target.by_path_view()
    for rel in rels:  # before anything is made
        if rel not in by_path and not os.path.lexists(history.zone_dir / rel) and not _absent_in(target, rel):
            raise NotFound(f"{rel}: neither in checkpoint {target.number} nor in {history.zone}'s zone")
    built = [_build_path(history, target, rel, work, str(index)) for index, rel in enumerate(rels)]
    undo = history.make_paths(actor, message, roots)
    _audit(history, actor, target.number, undo.number, rels)
    held: list[Held] = []
    try:
        with Held.open(history.zone_dir, f"{AGENTS}/{history.zone}") as zone, Held.open(work, RESTORING) as work_dir:
            for index, (rel, root) in enumerate(zip(rels, roots, strict=True)):
                # the directory whose names the swap changes keeps its times: only the paths named change (and an
                # undo then leaves the zone exactly as before)
                holder = zone.walk(root.rpartition("/")[0])
                held.append(holder)
                with kept_times(holder):
                    held.append(_place_path(history, target, by_path, rel, root, holder, work_dir, str(index)))
                crash_point("restore-swapped")
            fsync_together([h.fd for h in held])  # each swap is whole at once; made durable together
    except (PathBlocked, NotFound) as exc:  # a directory on the way replaced or removed since it was looked at
        raise PathBlocked(
            f"{exc.message}: the zone changed while the restore ran, which stopped there (nothing outside the zone "
            f"was touched; the paths before it are restored). Run it again, or undo it with "
            f"`{shell_line('omxfs', 'restore', history.ws.shown_as, history.zone, undo.number, '--as', history.zone)}`"
        ) from exc
    finally:
        for h in held:
            h.close()
    return undo, built


def _audit(history: ZoneHistory, actor: str, number: int, undo: int, rels: tuple[str, ...]) -> None:
    shown = ", ".join(f"{AGENTS}/{history.zone}/{r}" for r in rels) or f"{AGENTS}/{history.zone}"
    history.ws.audit(actor, f"restore checkpoint {number} (undo: {undo})", shown)


def _refuse_if_viewed(history: ZoneHistory) -> None:
    busy = views_running(history.ws.meta, history.zone)
    if busy:
        raise OSFailure(
            f"{busy}: it holds the zone itself, so a restore now would leave it writing into the replaced tree; "
            "end it first",
            errno.EBUSY,
        )


def _restore_zone(history: ZoneHistory, target: Manifest, work: Path) -> Built:
    tree = work / TREE
    tree.mkdir(mode=0o700)
    built = _build(history, target.entries, tree, {})
    _mark_ready(history, work)
    crash_point("restore-built")
    with Held.open(work, RESTORING) as work_dir, Held.open(history.zone_dir.parent, AGENTS) as agents:
        exchanged = swap(work_dir, TREE, agents, history.zone)
        os.fsync(agents.fd)
        crash_point("restore-swapped")
        if exchanged and running_views(history.ws.meta, history.zone):  # a view started meanwhile: put it back
            swap(work_dir, TREE, agents, history.zone)
            _refuse_if_viewed(history)
    return built


def touched(zone_dir: Path, rels: tuple[str, ...]) -> list[str]:
    """What a restore of ``rels`` replaces: each path, or its outermost parent the zone lacks (made by the
    restore, so removed by its undo). A parent that is a symlink, a file or a mount point is refused before anything
    is made: the restore would write where it points, outside the zone."""
    found = []
    with Held.open(zone_dir, f"{AGENTS}/{zone_dir.name}") as zone:
        for rel in rels:
            parts = rel.split("/")
            current = zone.walk(".")
            try:
                for depth in range(1, len(parts)):
                    prefix = "/".join(parts[:depth])
                    if current.lstat(parts[depth - 1]) is None:
                        found.append(prefix)
                        break
                    try:
                        below = current.sub(parts[depth - 1])
                    except PathBlocked as exc:
                        raise InvalidInput(
                            f"{rel}: {prefix} is no directory in {zone_dir.name}'s zone now ({exc.message}): "
                            f"restore {prefix} itself"
                        ) from exc
                    current.close()
                    current = below
                else:
                    found.append(rel)
            finally:
                current.close()
    return found


def _build_path(history: ZoneHistory, target: Manifest, rel: str, work: Path, slot: str) -> Built:
    """``rel``'s subtree as in ``target``, built as ``work/slot`` (nothing if ``target`` lacks ``rel``); the zone
    is not touched."""
    entries = _subtree(target.entries, rel) if target.entry(rel) is not None else []
    if not entries:
        return Built()
    rebased = [_rebase(e, rel, slot) for e in entries]
    # a second name of a file whose first name is outside the path: built as a file of its own, from the first
    outside: dict[str, Entry] = {}
    for e in entries:
        if e.link and not within(e.link, rel):
            first = target.entry(e.link)
            if first is None:
                raise StoreCorrupt(f"{e.path}: a link to {e.link}, which checkpoint {target.number} lacks")
            outside["/" + e.link] = first
    built = _build(history, rebased, work, outside)
    # and a link again, where the other name still holds the checkpoint's file
    link_across(history.zone_dir, target, rel, entries, work / slot)
    return built


def _place_path(
    history: ZoneHistory,
    target: Manifest,
    by_path: Mapping[str, Entry],
    rel: str,
    root: str,
    holder: Held,
    work: Held,
    slot: str,
) -> Held:
    """Put ``work/slot`` (``_build_path``'s tree of ``rel``) in the place of ``rel`` in the zone, in one swap; or, where
    the checkpoint lacks ``rel``, remove it from the zone (renamed to ``work/slot``, removed with the work directory).
    ``holder`` is the zone's directory above ``root`` (what the restore replaces: ``rel`` or its outermost parent the
    zone lacks), held open; the parents between are made as the checkpoint has them. Returns ``rel``'s parent, held
    open, for the caller to make durable. ``by_path``: ``target``'s entries by path."""
    parent = _make_parents(target, by_path, holder, root.rpartition("/")[0], rel.rpartition("/")[0])
    name = rel.rpartition("/")[2]
    present = parent.lstat(name) is not None
    held = rel in by_path
    try:
        if not held and not present:
            if _absent_in(target, rel):
                return parent  # absent, as the checkpoint (of some paths, this one among them) says it was
            raise NotFound(f"{rel}: neither in checkpoint {target.number} nor in {history.zone}'s zone")
        if held and present:
            swap(work, slot, parent, name)
        elif held:
            work.rename(slot, parent, name, RENAME_NOREPLACE)
        else:
            parent.rename(name, work, slot, RENAME_NOREPLACE)  # out of the zone in one step; removed with work/
    except OSError as exc:
        parent.close()
        raise from_os_error(exc, f"{AGENTS}/{history.zone}/{rel}", walking=True) from exc
    except BaseException:
        parent.close()
        raise
    return parent


def _absent_in(target: Manifest, rel: str) -> bool:
    """Whether ``target`` says that ``rel``, which it lacks, was absent: a checkpoint of some paths vouches for
    those only."""
    return any(rel == p or rel.startswith(p + "/") for p in target.paths)


def _subtree(entries: tuple[Entry, ...], rel: str) -> list[Entry]:
    """``rel`` (which ``entries`` hold) and everything under it: in walk order a subtree is one run of entries."""
    start = bisect.bisect_left(entries, walk_key(rel), key=lambda e: walk_key(e.path))
    return list(entries[start : subtree_end(entries, start)])


def _rebase(entry: Entry, rel: str, slot: str) -> Entry:
    """``entry`` (``rel`` or below it) with ``rel`` renamed ``slot``; a link to a name outside ``rel`` gets a path
    no built one equals (``"/"`` first), so ``Builder`` makes a file of its own from the primaries."""
    link = entry.link
    if link:
        link = slot + link[len(rel) :] if within(link, rel) else "/" + link
    return entry.replace(path=slot + entry.path[len(rel) :], link=link)


def _make_parents(target: Manifest, by_path: Mapping[str, Entry], holder: Held, below: str, parent: str) -> Held:
    """``parent`` held open, walked down from ``holder`` (the zone's ``below``); the directories the zone lacks on the
    way are made as the checkpoint has them."""
    current = holder.walk(".")
    for rel in _prefixes(parent)[len(_prefixes(below)) :]:
        name = rel.rpartition("/")[2]
        try:
            if current.lstat(name) is None:
                entry = by_path.get(rel)
                if entry is None or entry.type != DIR:
                    raise NotFound(f"{rel}: not a directory in checkpoint {target.number}")
                current.mkdir(name, entry.mode)
            below_dir = current.sub(name)
        finally:
            current.close()
        current = below_dir
    return current


def _prefixes(rel: str) -> list[str]:
    """``a``, ``a/b``, ``a/b/c`` of ``a/b/c``; none of ``""``."""
    parts = rel.split("/") if rel else []
    return ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]


def _build(
    history: ZoneHistory, entries: list[Entry] | tuple[Entry, ...], into: Path, primaries: dict[str, Entry]
) -> Built:
    fd = os.open(into, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return Builder(history.blobs, fd, primaries).build(entries)
    finally:
        os.close(fd)


def _mark_ready(history: ZoneHistory, work: Path) -> None:
    """The tree is complete: durable before the swap, and marked so that ``fsck --repair`` may move it in."""
    history.blobs.sync()  # the same filesystem as the tree
    fd = os.open(work / READY, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    os.fsync(fd)
    os.close(fd)


def swap(new_dir: Held, new: str, live_dir: Held, live: str) -> bool:
    """Exchange ``new`` and ``live`` atomically: True. Where the filesystem cannot, ``live`` is renamed aside (to
    ``new`` + ``.old``, in ``new_dir``) and ``new`` into its place: False."""
    try:
        new_dir.rename(new, live_dir, live, RENAME_EXCHANGE)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
    live_dir.rename(live, new_dir, new + ".old")
    crash_point("restore-aside")
    new_dir.rename(new, live_dir, live)
    return False
