"""``StoreTree``'s creations with exactly the mode asked for, whatever the daemon's umask, and its unlink and
listing that leave a large file or directory for a worker thread."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from omxfs.errors import NotFound
from omxfs.store import tree
from omxfs.store.tree import StoreTree


@pytest.fixture
def umask() -> Iterator[None]:
    """Restores the process's umask (and the store's reading of it) after a test that changes both."""
    before = os.umask(0o022)
    os.umask(before)
    saved = tree.DAEMON_UMASK
    yield
    os.umask(before)
    tree.DAEMON_UMASK = saved


def daemon_umask(mask: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon as if started under ``mask``."""
    os.umask(mask)
    monkeypatch.setattr(tree, "DAEMON_UMASK", tree._read_umask())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_umask_read_is_the_process_s(umask: None) -> None:
    for mask in (0o027, 0o002, 0):
        os.umask(mask)
        assert tree._read_umask() == mask


@pytest.mark.parametrize("mask", [0o077, 0o022, 0])
@pytest.mark.parametrize("perm", [0o644, 0o600, 0o777, 0o2755, 0o4711, 0o1777])
def test_creations_have_exactly_the_mode_asked_for(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch, mask: int, perm: int
) -> None:
    """The kernel applied the caller's umask; the daemon's (restrictive or not) must not apply again."""
    daemon_umask(mask, monkeypatch)
    store = StoreTree(tmp_path)
    store.create(PurePosixPath("f"), os.O_WRONLY | os.O_EXCL, perm).close()
    assert mode(tmp_path / "f") == perm
    store.mkdir(PurePosixPath("d"), perm)
    assert mode(tmp_path / "d") == perm
    store.mknod(PurePosixPath("p"), stat.S_IFIFO | perm, 0)
    assert mode(tmp_path / "p") == perm


def test_a_directory_made_in_a_set_group_id_one_keeps_the_bit(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon_umask(0o022, monkeypatch)
    (tmp_path / "g").mkdir()
    os.chmod(tmp_path / "g", 0o2775)
    StoreTree(tmp_path).mkdir(PurePosixPath("g/d"), 0o755)
    assert mode(tmp_path / "g/d") == 0o2755


def test_unlink_leaves_a_file_larger_than_asked(tmp_path: Path) -> None:
    store = StoreTree(tmp_path)
    (tmp_path / "big").write_bytes(b"x" * 101)
    (tmp_path / "small").write_bytes(b"x" * 100)
    assert store.unlink(PurePosixPath("big"), 100) is False and (tmp_path / "big").exists()
    assert store.unlink(PurePosixPath("small"), 100) is True and not (tmp_path / "small").exists()
    assert store.unlink(PurePosixPath("big")) is True and not (tmp_path / "big").exists()
    with pytest.raises(NotFound):
        store.unlink(PurePosixPath("big"), 100)


def test_a_listing_gives_up_on_a_directory_larger_than_asked_before_any_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Giving up must cost little, whatever the directory's size: the names are counted, no entry is stat'ed."""
    (tmp_path / "d").mkdir()
    for i in range(5):
        (tmp_path / "d" / f"f{i}").write_bytes(b"x" * i)
    stats: list[str] = []
    real_scandir = os.scandir

    class Counted:
        def __init__(self, entry: os.DirEntry[str]) -> None:
            self.entry, self.name = entry, entry.name

        def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
            stats.append(self.name)
            return self.entry.stat(follow_symlinks=follow_symlinks)

    @contextlib.contextmanager
    def scandir(fd: int) -> Iterator[Iterator[Counted]]:
        with real_scandir(fd) as entries:
            yield (Counted(entry) for entry in entries)

    monkeypatch.setattr(os, "scandir", scandir)
    store, d = StoreTree(tmp_path), PurePosixPath("d")
    assert store.listdir_stats(d, 4) is None and stats == []
    for most in (5, None):
        listed = store.listdir_stats(d, most)
        assert listed is not None and [(name, st.st_size) for name, st in listed] == [(f"f{i}", i) for i in range(5)]
    with pytest.raises(NotFound):
        store.listdir_stats(PurePosixPath("gone"), 4)


@pytest.fixture(params=["fchmodat2", "glibc"])
def chmod_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``chmod_at`` by its one system call, and as where the kernel lacks it."""
    monkeypatch.setattr(tree._Fchmodat2, "available", request.param == "fchmodat2")
    return str(request.param)


def test_chmod_at_changes_the_file_never_a_symlink_s_target(tmp_path: Path, chmod_way: str) -> None:
    (tmp_path / "f").write_bytes(b"x")
    (tmp_path / "link").symlink_to("f")
    fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    try:
        tree.chmod_at(fd, "f", 0o604)
        assert mode(tmp_path / "f") == 0o604
        with pytest.raises(OSError) as err:
            tree.chmod_at(fd, "link", 0o600)
        assert err.value.errno == errno.EOPNOTSUPP and mode(tmp_path / "f") == 0o604
        with pytest.raises(FileNotFoundError):
            tree.chmod_at(fd, "absent", 0o600)
    finally:
        os.close(fd)
    assert tree._Fchmodat2.available is (chmod_way == "fchmodat2")
