"""Hard links across the edge of a restored path: kept where the zone still allows it.

A restore of some paths builds them beside the zone (``restore.py``). A file the checkpoint also names outside those
paths (``a/x`` restored, ``b/x`` another name of the same file) is built as a file of its own, since ``b/x`` is not
restored. But where the zone's ``b/x`` is still exactly the checkpoint's file (content, mode, owner, mtime,
attributes: what a diff compares), the restored names are made links to it instead, so the restore gives back the
link too: the common case of an agent's ``sed -i a/x``, which replaced ``a/x`` with a new file and left ``b/x`` as
it was. Where ``b/x`` changed too, the names stay a file of their own and ``b/x`` is left as it is.

The outside name is reached from the zone down, each directory opened ``O_NOFOLLOW`` (a symlink put where a
directory was never leads a restore out of the zone), and the link is checked to be the very inode that was
compared before it replaces the file built in its place.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from omxfs.checkpoints.manifest import FILE, Entry, Manifest, within
from omxfs.checkpoints.scan import scan_paths
from omxfs.errors import OmxError
from omxfs.store.atomic import open_dir


def link_across(zone_dir: Path, target: Manifest, rel: str, subtree: Sequence[Entry], built: Path) -> int:
    """Make the names in ``rel`` (``subtree``: its entries in ``target``, built as ``built``) of each file that
    ``target`` also names outside ``rel`` links to such an outside name, where the zone's is still ``target``'s
    file: how many names were linked."""
    inside: dict[str, list[str]] = {}  # a file's first name -> its names within rel
    for entry in subtree:
        if entry.type == FILE:
            inside.setdefault(entry.link or entry.path, []).append(entry.path)
    outside: dict[str, list[str]] = {first: [first] for first in inside if not within(first, rel)}
    for entry in target.linked:
        if entry.link in inside and not within(entry.path, rel):
            outside.setdefault(entry.link, []).append(entry.path)
    linked = 0
    for first, others in outside.items():
        held = target.entry(first)
        if held is None:  # a manifest this module did not write: the names stay files of their own
            continue
        wanted = held.replace(link="")
        for other in others:
            if _link_if_same(zone_dir, other, wanted, [_built_path(built, rel, name) for name in inside[first]]):
                linked += len(inside[first])
                break
    return linked


def _link_if_same(zone_dir: Path, other: str, wanted: Entry, names: list[Path]) -> bool:
    """Link each of ``names`` (built files) to the zone's ``other`` if that is ``wanted`` exactly."""
    found = scan_paths(zone_dir, [other], {})[other]
    if not found or found[0].type != FILE or not found[0].same_node(wanted):
        return False
    parent, _, name = other.rpartition("/")
    try:
        fd = open_dir(zone_dir, parent or ".")  # never through a symlink
    except OmxError:
        return False
    try:
        for built in names:
            fresh = built.with_name(built.name + ".link")
            times = os.lstat(built.parent)  # as built: the checkpoint's, unless built is the restored path itself
            os.link(name, fresh, src_dir_fd=fd, follow_symlinks=False)
            try:
                if os.lstat(fresh).st_ino != found[0].ino:  # replaced since it was compared: keep the built file
                    os.unlink(fresh)
                    return False
                os.replace(fresh, built)
            finally:
                os.utime(built.parent, ns=(times.st_atime_ns, times.st_mtime_ns), follow_symlinks=False)
    finally:
        os.close(fd)
    return True


def _built_path(built: Path, rel: str, name: str) -> Path:
    return built if name == rel else built / name[len(rel) + 1 :]
