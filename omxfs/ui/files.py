"""Reading files an agent may have laid out to mislead: a run's ``trace.jsonl`` in a private zone could be a
symlink to a secret of the person running the app, so every read walks its path without following a symlink
(``atomic.open_dir``) and opens the file itself with ``O_NOFOLLOW``, and reads only as much as a page shows."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from omxfs.errors import NotFound
from omxfs.store.atomic import open_dir


def read_part(root: Path, rel: str, offset: int = 0, limit: int | None = None) -> tuple[bytes, int]:
    """(up to ``limit`` bytes from ``offset``, the file's size) of the regular file ``root/rel``."""
    path = PurePosixPath(rel)
    dir_fd = open_dir(root, path.parent)
    try:
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as exc:
            raise NotFound(f"{rel}: {exc.strerror}") from None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotFound(f"{rel}: not a regular file")
        want = st.st_size - offset if limit is None else min(limit, st.st_size - offset)
        return (os.pread(fd, want, offset) if want > 0 else b""), st.st_size
    finally:
        os.close(fd)
