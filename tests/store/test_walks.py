"""``open_dir`` walks below a held store descriptor never follow a symlink, with ``openat2`` and without it.

The daemon addresses the store as ``/proc/self/fd/N``; there ``open_dir`` asks the kernel for the whole path in
one ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``. Where the kernel refuses that call it walks one component
at a time. Both must answer every path the same way, so every case runs both ways.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from omxfs.errors import InvalidInput, NotFound
from omxfs.store import beneath
from omxfs.store.atomic import held_dir, open_dir


@pytest.fixture(params=["openat2", "walk"])
def way(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "walk":
        beneath.disable()
    else:
        beneath.enable()
        if not beneath.available():
            pytest.fail("openat2 is refused on this machine: the fast walk is not what runs here")
    try:
        yield request.param
    finally:
        beneath.enable()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the real directory, its /proc/self/fd/N name), with a tree, a symlink to a directory outside and a file."""
    real = tmp_path / "store"
    (real / "agents/alice/notes/deeper").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", real / "agents/alice/out")
    os.symlink("notes", real / "agents/alice/inside")  # relative and still inside: refused all the same
    (real / "agents/alice/file.md").write_text("x")
    fd = os.open(real, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield real, Path(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def same_dir(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    finally:
        os.close(fd)
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@pytest.mark.parametrize("relative", ["", "agents", "agents/alice/notes"])
def test_directories_below_a_held_root_are_opened(way: str, store: tuple[Path, Path], relative: str) -> None:
    real, held = store
    assert same_dir(open_dir(held, PurePosixPath(relative)), real / relative)


def test_a_root_below_a_held_descriptor_is_walked_from_it(way: str, store: tuple[Path, Path]) -> None:
    real, held = store
    assert same_dir(open_dir(held / "agents", PurePosixPath("alice/notes")), real / "agents/alice/notes")


@pytest.mark.parametrize(
    "relative", ["agents/alice/out", "agents/alice/out/x", "agents/alice/inside", "agents/alice/inside/deeper"]
)
def test_symlinks_on_the_way_are_refused(way: str, store: tuple[Path, Path], relative: str) -> None:
    _, held = store
    with pytest.raises(InvalidInput, match="symlink or non-directory"):
        open_dir(held, PurePosixPath(relative))


def test_a_file_on_the_way_is_refused(way: str, store: tuple[Path, Path]) -> None:
    _, held = store
    with pytest.raises(InvalidInput):
        open_dir(held, PurePosixPath("agents/alice/file.md/x"))


def test_a_missing_directory_is_not_found(way: str, store: tuple[Path, Path]) -> None:
    _, held = store
    with pytest.raises(NotFound, match="agents/alice/nope"):
        open_dir(held, PurePosixPath("agents/alice/nope/deeper"))


@pytest.mark.parametrize("relative", ["../..", "agents/../..", "agents/.."])
def test_dot_dot_is_never_walked(way: str, store: tuple[Path, Path], relative: str) -> None:
    """Checked names never hold ``..``; if one slipped through, neither walk may climb with it."""
    _, held = store
    with pytest.raises(InvalidInput, match=r"'\.\.' is not walked"):
        open_dir(held, PurePosixPath(relative))
    with pytest.raises(InvalidInput, match=r"'\.\.' is not walked"):
        open_dir(held, PurePosixPath(relative), create=True)


def test_create_makes_the_missing_directories(way: str, store: tuple[Path, Path]) -> None:
    real, held = store
    assert same_dir(open_dir(held, PurePosixPath("agents/bob/new"), create=True), real / "agents/bob/new")


def test_held_dir_names_the_descriptor_and_the_rest() -> None:
    assert held_dir("/proc/self/fd/7") == (7, "")
    assert held_dir(Path("/proc/self/fd/7/.")) == (7, "")
    assert held_dir("/proc/self/fd/7/collaborative/current") == (7, "collaborative/current")
    assert held_dir("/srv/ws") is None
    assert held_dir("/proc/self/fd/x") is None
