"""What a page read of each directory of a tree, kept between requests and read again only where the directory's
stamp moved.

A page that lists the collaborative files, the conflicts or the deliveries used to walk its whole tree on every
request (10,000 versions: a ``.versions/`` of 20,000 files, each ``lstat``-ed); under load that made ``/collab``
take a second. The store only ever adds, removes or renames names in these trees (a version's entry, a rejected
write's record, a delivery's record are each a new name; ``history.json`` and a delivery's ``.meta.json`` are
replaced by a rename), and each of those moves the directory's mtime. So a request stats every directory of the
tree (one ``stat`` each, no listing) and reads again only those whose stamp moved; what it read of the others is
the same. As in the feed (``feed.SETTLE``), a directory whose stamp is younger than ``SETTLE`` seconds is read
again each time: two changes within one timestamp tick leave one stamp.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

#: a directory changed this recently is read again next time: two changes within one timestamp tick leave one stamp
SETTLE = 1.0


@dataclass(frozen=True)
class _Read(Generic[T]):
    stamp: int  # the directory's mtime_ns when it was read
    subdirs: tuple[str, ...]  # its subdirectories' names, sorted
    value: T  # what ``read`` made of its entries


class StampedTree(Generic[T]):
    """``read(relative directory, its entries)`` of every directory under ``root`` (but names in ``skip``, and
    never through a symlink), remembered by each directory's stamp. Safe to call from several threads."""

    def __init__(
        self, root: Path, read: Callable[[str, list[os.DirEntry[str]]], T], skip: frozenset[str] = frozenset()
    ) -> None:
        self.root = root
        self.read = read
        self.skip = skip
        self._known: dict[str, _Read[T]] = {}
        self._lock = threading.Lock()
        self.listed = 0  # directories read again, in all (for the tests: an unchanged tree is not read)

    def walk(self) -> list[tuple[str, T]]:
        """(directory relative to the root, its value) of every directory of the tree, in sorted walk order."""
        with self._lock:
            found: list[tuple[str, T]] = []
            seen: set[str] = set()
            recent = time.time() - SETTLE
            stack = ["."]
            while stack:
                rel = stack.pop()
                path = os.path.join(self.root, rel) if rel != "." else str(self.root)
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                known = self._known.get(rel)
                if known is None or known.stamp != st.st_mtime_ns or st.st_mtime >= recent:
                    try:
                        known = self._list(path, st.st_mtime_ns, rel)
                    except (FileNotFoundError, NotADirectoryError):
                        continue
                    self._known[rel] = known
                seen.add(rel)
                found.append((rel, known.value))
                stack += [os.path.join(rel, d) if rel != "." else d for d in reversed(known.subdirs)]
            for gone in set(self._known) - seen:
                del self._known[gone]
            return found

    def _list(self, path: str, stamp: int, rel: str) -> _Read[T]:
        with os.scandir(path) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        self.listed += 1
        subdirs = tuple(e.name for e in entries if e.name not in self.skip and _is_dir(e))
        return _Read(stamp, subdirs, self.read(rel, entries))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
