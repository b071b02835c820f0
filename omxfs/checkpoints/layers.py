"""An overlay's upper layer on disk, as ``omxfs run --review`` and ``--branch`` leave it (``userxattr`` mode): a
deleted name is a whiteout (a character device 0:0), a directory that hides what lies below it is opaque
(``user.overlay.opaque``), the rest of ``user.overlay.*`` is the overlay's bookkeeping.

``layered`` composes layers as the kernel does, to read a branch without mounting it; ``apply_to_zone`` moves an upper
layer into the zone below it, ``apply_to_layer`` into another upper layer (a nested branch's into its parent's), each
name by name through held directories (``held.py``), so that a crash leaves it half applied and resumable.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from omxfs.checkpoints import Entry
from omxfs.checkpoints.crashpoints import crash_point
from omxfs.checkpoints.held import Held, kept_times
from omxfs.checkpoints.manifest import Manifest
from omxfs.checkpoints.scan import scan_zone
from omxfs.errors import PathBlocked, from_os_error

#: the overlay's own attributes in ``userxattr`` mode (opaque, impure, origin, uuid...): bookkeeping, not content
OVERLAY_XATTRS = "user.overlay."
OPAQUE = "user.overlay.opaque"


def layered(
    zone_dir: Path, uppers: Sequence[Path], known: Manifest | None = None
) -> tuple[dict[str, Entry], dict[str, Path]]:
    """The zone as an overlay of ``uppers`` (the lowest first) over ``zone_dir`` shows it: each entry, and the layer
    each one that is not the zone's comes from. ``known``: a checkpoint of the zone, whose entries stand for the
    files whose stat is still the one it recorded, unread, as a checkpoint's scan takes them; the upper layers are
    read whole."""
    if known is None:
        scan = scan_zone(zone_dir, None)
    else:
        scan = scan_zone(zone_dir, known.by_path_view(), listings=known.listings, cached=known.stat_cache)
    merged = {e.path: e for e in scan.entries}
    source: dict[str, Path] = {}
    for upper in uppers:
        overlay(merged, source, upper)
    return merged, source


def overlay(merged: dict[str, Entry], source: dict[str, Path], upper: Path) -> None:
    """``upper`` laid over ``merged`` in place as the kernel's overlay does: a whiteout deletes, an opaque directory
    or an entry of another type hides what lay under its path, the rest is merged name by name."""
    mine: set[str] = set()
    for entry in scan_zone(upper, None).entries:  # walk order: a directory before what it holds
        path = entry.path
        if path != "." and (is_whiteout(entry) or is_opaque(entry) or merged.get(path, entry).type != entry.type):
            for gone in [p for p in merged if p.startswith(path + "/") and p not in mine]:
                del merged[gone]
                source.pop(gone, None)
        if is_whiteout(entry):
            merged.pop(path, None)
            source.pop(path, None)
            continue
        merged[path] = entry.replace(xattrs=tuple(x for x in entry.xattrs if not x[0].startswith(OVERLAY_XATTRS)))
        source[path] = upper
        mine.add(path)


def is_whiteout(entry: Entry) -> bool:
    return entry.type == "char" and entry.rdev == 0


def is_opaque(entry: Entry) -> bool:
    return entry.type == "dir" and dict(entry.xattrs).get(OPAQUE) in (b"y", b"x")


def apply_to_zone(upper: Held, zone: Held) -> None:
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
                before, xattrs = source.stat(), user_xattrs(source.fd)
                apply_to_zone(source, target)
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


def apply_to_layer(upper: Held, target: Held) -> None:
    """Each name of the upper directory ``upper`` laid into the parent branch's upper directory ``target``, keeping
    what the overlay shows. A whiteout moves in as it is, whatever lies below: over a name of the parent's layer or
    of the zone it hides it, over nothing it is nothing (the zone is not read, so an agent changing it meanwhile
    cannot make a deletion look like one of a name nobody has). A name leaves ``upper`` once applied."""
    root = os.geteuid() == 0
    for name in upper.names():
        st = upper.lstat(name)
        if st is None:
            continue
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # deleted: hidden from every layer below
            _move_in(upper, name, target, replace_any=True)
        elif stat.S_ISDIR(st.st_mode) and not _opaque(upper, name) and target.is_dir(name):
            with upper.sub(name) as source, target.sub(name) as into:  # merged with the parent's directory
                before, xattrs = source.stat(), user_xattrs(source.fd)
                apply_to_layer(source, into)
                set_layer_attributes(into, before, xattrs, owner=root)
            os.rmdir(name, dir_fd=upper.fd)
        elif stat.S_ISDIR(st.st_mode):  # whole: over nothing of the parent's, or replacing what it had (opaque)
            replaces = target.lstat(name) is not None
            with upper.sub(name) as source:
                _strip_overlay(source, layer=True)
                if replaces:
                    with kept_times(source):
                        os.setxattr(source.fd, OPAQUE, b"y")
            _move_in(upper, name, target, replace_any=True)
        else:
            _strip_xattrs(upper, name)
            _move_in(upper, name, target, replace_any=False)
        crash_point("accept-applied")


def set_layer_attributes(target: Held, st: os.stat_result, xattrs: dict[str, bytes], *, owner: bool) -> None:
    """``Held.set_attributes`` on a directory of an upper layer, which keeps the overlay's own attributes."""
    kept = {name: os.getxattr(target.fd, name) for name in _overlay_xattrs(target.fd)}
    target.set_attributes(st, {**xattrs, **kept}, owner=owner)


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


def user_xattrs(fd: int) -> dict[str, bytes]:
    """The ``user.*`` attributes of the open ``fd``, without the overlay's own."""
    names = [n for n in os.listxattr(fd) if n.startswith("user.") and not n.startswith(OVERLAY_XATTRS)]
    return {name: os.getxattr(fd, name) for name in names}


def _strip_overlay(top: Held, *, layer: bool = False) -> None:
    """A directory about to move into the zone whole: its whiteouts and the overlay's attributes removed, each
    directory's times kept. With ``layer``, one moving into another upper layer: its whiteouts and opaque marks,
    which say what it hides there, are kept."""
    with kept_times(top):
        for name in _overlay_xattrs(top.fd):
            if not (layer and name == OPAQUE):
                os.removexattr(top.fd, name)
        for name in top.names():
            st = top.lstat(name)
            if st is None:
                continue
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                if not layer:
                    top.unlink(name)
            elif stat.S_ISDIR(st.st_mode):
                with top.sub(name) as below:
                    _strip_overlay(below, layer=layer)
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
