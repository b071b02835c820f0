"""``Kept``: a file is read once while its size and mtime stay, again once either moves; a file that is gone, a
symlink or a directory gives None and keeps nothing."""

from __future__ import annotations

import os
from pathlib import Path

from omxfs.ui.files import read_part
from omxfs.ui.kept import Kept


def test_a_file_is_read_again_only_once_its_size_or_mtime_moved(tmp_path: Path) -> None:
    reads: list[tuple[str, int]] = []

    def read(rel: str, size: int) -> bytes:
        reads.append((rel, size))
        return read_part(tmp_path, rel)[0]

    kept = Kept(tmp_path, read)
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    assert kept.get("a.log") == b"one\n" and kept.get("a.log") == b"one\n"
    assert reads == [("a.log", 4)]
    log.write_bytes(b"two\n")  # the same size: its mtime moved
    os.utime(log, ns=(0, log.stat().st_mtime_ns + 1_000_000))
    assert kept.get("a.log") == b"two\n"
    log.write_bytes(b"three\n")
    assert kept.get("a.log") == b"three\n"
    assert reads == [("a.log", 4), ("a.log", 4), ("a.log", 6)]


def test_what_cannot_be_stated_or_read_gives_none_and_is_not_kept(tmp_path: Path) -> None:
    reads: list[str] = []

    def read(rel: str, size: int) -> bytes:
        reads.append(rel)
        return read_part(tmp_path, rel)[0]  # NotFound (an OmxError) on a symlink or a directory

    kept = Kept(tmp_path, read)
    (tmp_path / "target").write_bytes(b"secret\n")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "dir").mkdir()
    assert kept.get("gone") is None and kept.get("link") is None and kept.get("dir") is None
    assert kept.get("link") is None
    assert reads == ["link", "dir", "link"]  # "gone" is never read; a failed read is tried again
