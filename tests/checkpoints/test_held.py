"""Directories held open (``omxfs.checkpoints.held``) on real files: what a walk refuses, what a removal never does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from omxfs.checkpoints.held import Held, remove_tree
from omxfs.errors import NotFound, PathBlocked


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A tree outside the zone, which nothing may change."""
    path = tmp_path / "outside"
    (path / "sub").mkdir(parents=True)
    (path / "victim.conf").write_text("root's\n")
    (path / "sub/deep.txt").write_text("deep\n")
    return path


def _state(tree: Path) -> list[tuple[str, int, bytes]]:
    found = []
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            st = path.lstat()
            found.append((str(path.relative_to(tree)), st.st_mode, path.read_bytes() if path.is_file() else b""))
    return sorted(found)


def test_a_walk_refuses_a_symlink_a_file_and_a_fifo_where_a_directory_was(tmp_path: Path, outside: Path) -> None:
    zone = tmp_path / "zone"
    (zone / "d").mkdir(parents=True)
    (zone / "link").symlink_to(outside)
    (zone / "file").write_text("x")
    os.mkfifo(zone / "fifo")
    with Held.open(zone, "agents/bob") as held:
        for name, what in (("link", "a symlink"), ("file", "a file"), ("fifo", "a FIFO")):
            with pytest.raises(PathBlocked, match=f"agents/bob/{name}: {what} where a directory was"):
                held.sub(name)
        with pytest.raises(PathBlocked):
            held.walk("link/sub")
        with pytest.raises(NotFound):
            held.walk("d/absent")
        with held.walk("d") as d:
            assert d.shown == "agents/bob/d"


def test_a_held_directory_stays_the_same_one_when_the_agent_exchanges_its_name(tmp_path: Path, outside: Path) -> None:
    zone = tmp_path / "zone"
    (zone / "d").mkdir(parents=True)
    (zone / "evil").symlink_to(outside)
    source = tmp_path / "source"
    source.mkdir()
    (source / "victim.conf").write_text("the agent's\n")
    before = _state(outside)
    with Held.open(zone) as held, held.sub("d") as d, Held.open(source) as src:
        held.rename("d", held, "evil", 2)  # RENAME_EXCHANGE, as the agent would through its mount
        src.rename("victim.conf", d, "victim.conf")
    assert _state(outside) == before
    assert (zone / "evil/victim.conf").read_text() == "the agent's\n"  # the held directory, now named evil


def test_a_removal_removes_symlinks_never_their_targets_and_stops_at_a_mount_point(
    tmp_path: Path, outside: Path
) -> None:
    zone = tmp_path / "zone"
    (zone / "tree/locked").mkdir(parents=True)
    (zone / "tree/to-outside").symlink_to(outside)
    (zone / "tree/locked/to-file").symlink_to(outside / "victim.conf")
    (zone / "tree/locked").chmod(0)
    before = _state(outside)
    with Held.open(zone) as held:
        held.remove("tree")
    assert not (zone / "tree").exists() and _state(outside) == before
    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    (zone / "mnt/point").mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(outside), str(zone / "mnt/point")], check=True)
    try:
        with Held.open(zone) as held, pytest.raises(PathBlocked, match="a mount point"):
            held.remove("mnt")
        assert not remove_tree(zone / "mnt")  # a restore's clean-up leaves it for fsck instead
        assert (zone / "mnt/point/victim.conf").exists()
    finally:
        subprocess.run(["umount", str(zone / "mnt/point")], check=True)
    assert _state(outside) == before
