"""A full disk under the store (SPEC §7: nothing acknowledged is lost by a full disk).

The store is a small tmpfs, filled on the store directly until only ``SLACK`` bytes are free: enough for the
daemon's log lines, not for the 1 MiB writes the tests make. Every such write must fail with ENOSPC at the
system call that reports it (``write`` for the private zone, ``close`` for the zones whose writes are commits),
leave the previous content, version, metadata and CRDT state exactly as they were, leave no debris that fsck
would call corrupt, be logged, and the daemon must keep serving: once space is freed the same write succeeds.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from omxfs.errors import OSFailure
from omxfs.store import Workspace, collab
from omxfs.store.fsck import fsck
from tests.fuse.conftest import Mount

SIZE = "8m"
SLACK = 96 * 1024
BIG = b"x" * (1 << 20)


@pytest.fixture
def small_store(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of ``SIZE`` where the mount fixture puts its store (``tmp_path/ws``); always unmounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    store = tmp_path / "ws"
    store.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=755", "tmpfs", str(store)], check=True)
    try:
        yield store
    finally:
        subprocess.run(["umount", str(store)], check=False)
        if os.path.ismount(store):
            subprocess.run(["umount", "-l", str(store)], check=False)


@pytest.fixture
def m(small_store: Path, mount: Callable[..., Mount]) -> Mount:
    """Set up after ``small_store`` so that it is torn down (unmounted) before the tmpfs goes."""
    m = mount(agents=("alice", "bob"), default="alice")
    assert m.store == small_store
    return m


class Filler:
    """Fills the store's filesystem on the store directly, leaving ``SLACK`` bytes, and frees it again."""

    def __init__(self, store: Path) -> None:
        self.path = store / "agents" / "bob" / "filler"

    def __enter__(self) -> Filler:
        with open(self.path, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                f.truncate(max(0, f.tell() - SLACK))
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink()


def write_and_close(path: Path, data: bytes, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int | None:
    """The errno with which writing ``data`` and closing failed, None if both succeeded."""
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
    except OSError as exc:
        os.close(fd)
        return exc.errno
    try:
        os.close(fd)
    except OSError as exc:
        return exc.errno
    return None


def no_corruption(m: Mount) -> None:
    report = fsck(m.ws, temp_grace=0)
    assert report.clean, [f.line() for f in report.findings]


def test_private_write_hits_ENOSPC_and_the_previous_file_stays(m: Mount) -> None:
    keep = m.path("agents/alice/keep.txt")
    keep.write_bytes(b"the acknowledged content")
    with Filler(m.store):
        # An editor's save: temp file, then rename over the original. The temp write fails; the original stays.
        tmp = m.path("agents/alice/.keep.txt.swp")
        assert write_and_close(tmp, BIG) == errno.ENOSPC
        assert keep.read_bytes() == b"the acknowledged content"
        # An in-place append fails too, and the file keeps what it had.
        assert write_and_close(keep, BIG, os.O_WRONLY | os.O_APPEND) == errno.ENOSPC
        assert keep.read_bytes().startswith(b"the acknowledged content")
        assert sorted(os.listdir(m.path("agents/alice"))) == [".keep.txt.swp", "keep.txt"]  # still serving
        tmp.unlink()
    assert write_and_close(m.path("agents/alice/big.bin"), BIG) is None
    assert m.path("agents/alice/big.bin").stat().st_size == len(BIG)
    assert "agent=alice op=write path=agents/alice/.keep.txt.swp errno=ENOSPC" in m.log()


def test_collaborative_commit_hits_ENOSPC_and_no_version_is_made(m: Mount) -> None:
    plan = m.path("collaborative/current/plan.md")
    plan.write_bytes(b"v1")
    before = m.ws.collab.history("plan.md")
    with Filler(m.store):
        assert os.getxattr(plan, "user.omx.version") == b"1"
        assert write_and_close(plan, BIG) == errno.ENOSPC
        assert m.ws.collab.history("plan.md") == before
        assert plan.read_bytes() == b"v1"
        assert sorted(os.listdir(m.store / "collaborative/.versions/plan.md")) == ["history.json", "v1.json", "v1.txt"]
        assert os.listdir(m.store / ".omxfs/tmp") == []
        no_corruption(m)
    assert write_and_close(plan, BIG) is None  # the base is still v1: the retry commits as v2
    assert [e.version for e in m.ws.collab.history("plan.md")] == [1, 2]
    assert "op=flush path=collaborative/current/plan.md errno=ENOSPC" in m.log()


def test_handoff_redelivery_hits_ENOSPC_and_the_delivery_stays(m: Mount) -> None:
    box = m.path("handoff/alice_to_bob")
    (box / "d.txt").write_bytes(b"first")
    os.setxattr(box / "d.txt", "user.omx.message", b"read me")
    meta = m.ws.handoff.meta("alice", "bob", "d.txt")
    with Filler(m.store):
        assert write_and_close(box / "d.txt", BIG) == errno.ENOSPC
        assert (box / "d.txt").read_bytes() == b"first"
        assert m.ws.handoff.meta("alice", "bob", "d.txt") == meta
        assert json.loads((box / "d.txt.meta.json").read_bytes())["message"] == "read me"
        no_corruption(m)
    assert write_and_close(box / "d.txt", BIG) is None
    assert m.ws.handoff.read("alice", "bob", "d.txt").content == BIG


def test_realtime_edit_hits_ENOSPC_and_the_state_stays(m: Mount) -> None:
    m.ws.realtime.create("alice", "board", {"body": "rga", "count": "pn_counter"})
    body = m.path("realtime/board/body")
    body.write_bytes(b"hello")
    state = (m.store / "realtime/.crdt_state/board.crdt.json").read_bytes()
    with Filler(m.store):
        assert body.read_bytes() == b"hello"
        assert write_and_close(body, b"hello " + BIG, os.O_WRONLY | os.O_TRUNC) == errno.ENOSPC
        assert (m.store / "realtime/.crdt_state/board.crdt.json").read_bytes() == state
        assert body.read_bytes() == b"hello"
        no_corruption(m)
    assert write_and_close(m.path("realtime/board/count"), b"+1", os.O_WRONLY | os.O_APPEND) is None
    assert m.ws.realtime.snapshot("board")["fields"] == {"body": "hello", "count": 1}


def test_a_completely_full_disk_refuses_and_the_daemon_keeps_serving(m: Mount) -> None:
    m.path("agents/alice/keep.txt").write_bytes(b"kept")
    with Filler(m.store):
        filler = m.store / "agents/bob/filler"
        with open(filler, "ab", buffering=0) as f:  # take the slack too: not even a log line fits now
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        assert write_and_close(m.path("agents/alice/new.txt"), b"x" * 8192) == errno.ENOSPC
        assert write_and_close(m.path("collaborative/current/new.md"), b"x") == errno.ENOSPC
        assert m.path("agents/alice/keep.txt").read_bytes() == b"kept"
        assert m.ws.collab.list() == []
    assert m.proc.poll() is None
    assert write_and_close(m.path("collaborative/current/new.md"), b"x") is None


# -- regressions: a disk that fills up between the files of one change ---------------------------------------------


def disk_full_at(monkeypatch: pytest.MonkeyPatch, ws: Workspace, nth: int) -> None:
    """The ``nth`` file staged from now on (1-based) hits ENOSPC, as when the disk fills up mid-change."""
    stage = ws.writer.stage
    count = [0]

    def staged(data: bytes, what: Path, **kw: Any) -> Path:
        count[0] += 1
        if count[0] == nth:
            raise OSFailure(f"{what}: No space left on device", errno.ENOSPC)
        return stage(data, what, **kw)

    monkeypatch.setattr(ws.writer, "stage", staged)


def full_disk(*args: Any, **kw: Any) -> Any:
    raise OSFailure("No space left on device", errno.ENOSPC)


@pytest.mark.parametrize("step", ["content", "entry"])
def test_a_commit_that_fills_the_disk_before_its_commit_point_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """ENOSPC on the staged content or on the entry (the commit point): the commit fails and leaves nothing."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice"])
    ws.collab.write("alice", "plan.md", b"v1", expected_version=0)
    if step == "content":
        disk_full_at(monkeypatch, ws, 1)
    else:
        monkeypatch.setattr(collab, "create_exclusive", full_disk)
    with pytest.raises(OSFailure) as info:
        ws.collab.write("alice", "plan.md", b"v2", expected_version=1)
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert [e.version for e in ws.collab.history("plan.md")] == [1]
    assert (ws.collab.current_dir / "plan.md").read_bytes() == b"v1"
    assert sorted(os.listdir(ws.collab.versions_dir / "plan.md")) == ["history.json", "v1.json", "v1.txt"]
    assert os.listdir(ws.meta / "tmp") == []
    assert fsck(ws).clean


@pytest.mark.parametrize("nth", [2, 3])  # the 1st file staged is the content; then the history, the current copy
def test_a_commit_that_fills_the_disk_after_its_commit_point_is_a_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nth: int
) -> None:
    """Bug (before entry files): ENOSPC on the current copy failed a commit the history had already taken,
    reported as failed, yet there. Now the entry decides: once it exists the commit is reported as made, and the
    derived history and current copy that the full disk kept behind are debris that --repair completes."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice"])
    ws.collab.write("alice", "plan.md", b"v1", expected_version=0)
    disk_full_at(monkeypatch, ws, nth)
    assert ws.collab.write("alice", "plan.md", b"v2", expected_version=1).version == 2
    monkeypatch.undo()
    fresh = Workspace(ws.root)
    assert [e.version for e in fresh.collab.history("plan.md")] == [1, 2]
    assert fresh.collab.read("plan.md").content == b"v2"
    assert os.listdir(ws.meta / "tmp") == []
    assert not fsck(ws).corrupt
    fsck(ws, repair=True)
    assert (ws.collab.current_dir / "plan.md").read_bytes() == b"v2"
    assert fsck(ws).clean


@pytest.mark.parametrize("nth", [1, 2])
def test_a_delivery_that_fills_the_disk_midway_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nth: int
) -> None:
    """Bug: a re-delivery replaced the file, then hit ENOSPC on its metadata: the new content sat beside the
    old metadata (old sha256 and message) and the sender was told it failed."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    first = ws.handoff.deliver("alice", "bob", "d.txt", b"first", "read me")
    disk_full_at(monkeypatch, ws, nth)
    with pytest.raises(OSFailure):
        ws.handoff.deliver("alice", "bob", "d.txt", b"second", "again")
    monkeypatch.undo()
    assert ws.handoff.read("alice", "bob", "d.txt").content == b"first"
    assert ws.handoff.meta("alice", "bob", "d.txt") == first
    assert os.listdir(ws.meta / "tmp") == []
    assert fsck(ws).clean
