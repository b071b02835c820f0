"""``syscalls.fsync_together``: every path is fsynced from the threads before it returns, the first failure in the
order of the paths is raised once all are done, and a child forked after a first call still has threads to run
its own."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from omxfs.checkpoints import syscalls


def files(tmp_path: Path, count: int) -> list[Path]:
    made = []
    for n in range(count):
        (tmp_path / f"f{n}").write_text(f"{n}\n")
        made.append(tmp_path / f"f{n}")
    return made


def test_every_path_is_synced_from_the_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[tuple[str, str]] = []
    real = syscalls.fsync_path

    def fsync_path(path: str | Path | int) -> None:
        real(path)
        synced.append((str(path), threading.current_thread().name))

    monkeypatch.setattr(syscalls, "fsync_path", fsync_path)  # records the real fsyncs, which still run
    paths = [*files(tmp_path, 40), tmp_path]
    syscalls.fsync_together(paths)
    assert sorted(p for p, _ in synced) == sorted(map(str, paths))
    assert all(name.startswith("omxfs-fsync") for _, name in synced)
    threads = {t.name for t in threading.enumerate() if t.name.startswith("omxfs-fsync")}
    assert 1 < len(threads) <= syscalls.FSYNC_THREADS


def test_the_first_failure_is_raised_after_all_are_done(tmp_path: Path) -> None:
    paths = files(tmp_path, 20)
    gone = [tmp_path / "missing-1", tmp_path / "missing-2"]
    closed = 1 << 20  # above any descriptor this process has open
    with pytest.raises(FileNotFoundError) as raised:
        syscalls.fsync_together([*paths[:5], gone[0], *paths[5:], closed, gone[1]])
    assert raised.value.filename == str(gone[0])
    with pytest.raises(OSError) as bad_fd:
        syscalls.fsync_together([*paths, closed, gone[1]])
    assert bad_fd.value.filename is None  # the descriptor's EBADF, listed before the missing file
    syscalls.fsync_together(paths)  # the threads serve the next call as before


def test_a_forked_child_syncs_with_threads_of_its_own(tmp_path: Path) -> None:
    paths = files(tmp_path, 10)
    syscalls.fsync_together(paths)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports by its status
        try:
            syscalls.fsync_together(paths)
            os._exit(0 if any(t.name.startswith("omxfs-fsync") for t in threading.enumerate()) else 3)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
