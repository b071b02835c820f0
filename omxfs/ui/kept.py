"""What was read of a file, kept while its size and mtime stay: the pages read every daemon log and every run's trace
at each event, and most of them have not changed since."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from omxfs.errors import OmxError

T = TypeVar("T")


class Kept(Generic[T]):
    """``read(rel, size)`` of each file ``root/rel``, read again only once its size or mtime (``lstat``'s) moved.

    ``get`` gives None, and keeps nothing, where the file cannot be stat'ed or ``read`` raises OSError or OmxError
    (``files.read_part``'s: gone, a symlink, not a regular file). Safe from several threads: the lock guards the
    table, not the reading, so two threads may both read one change; either value is kept."""

    def __init__(self, root: Path, read: Callable[[str, int], T]) -> None:
        self.root = root
        self.read = read
        self._kept: dict[str, tuple[tuple[int, int], T]] = {}
        self._lock = threading.Lock()

    def get(self, rel: str) -> T | None:
        try:
            st = os.stat(os.path.join(self.root, rel), follow_symlinks=False)
        except OSError:
            return None
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            kept = self._kept.get(rel)
        if kept is not None and kept[0] == key:
            return kept[1]
        try:
            value = self.read(rel, st.st_size)
        except (OSError, OmxError):
            return None
        with self._lock:
            self._kept[rel] = (key, value)
        return value
