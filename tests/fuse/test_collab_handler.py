"""The collaborative zone handler, called directly (no mount): every rule of SPEC §4 "Collaborative"."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import PurePosixPath

import pytest

from omxfs.errors import (
    AlreadyExists,
    Conflict,
    InvalidInput,
    NoAttribute,
    NotEmpty,
    NotFound,
    NotSupported,
    ZoneDenied,
)
from omxfs.fuse.zones.base import AttrChanges, Caller, Handle
from omxfs.fuse.zones.collab import CollabHandler
from omxfs.fuse.zones.notes import AgentNotes
from omxfs.store import Workspace
from omxfs.store.scratch import is_scratch_name

CUR = PurePosixPath("collaborative/current")
PLAN = CUR / "plan.md"
W, WT = os.O_WRONLY, os.O_WRONLY | os.O_TRUNC


def who(agent: str) -> Caller:
    return Caller(agent, 1000, 1000, 4242)


@pytest.fixture
def h(ws: Workspace) -> CollabHandler:
    return CollabHandler(ws)


def close(handle: Handle) -> None:
    try:
        handle.flush()
    finally:
        handle.release()


def write(h: CollabHandler, agent: str, path: PurePosixPath, data: bytes, flags: int = WT) -> None:
    handle = h.open(who(agent), path, flags)
    handle.write(0, data)
    close(handle)


def create(h: CollabHandler, agent: str, path: PurePosixPath, data: bytes) -> None:
    handle = h.create(who(agent), path, 0o644, os.O_WRONLY | os.O_CREAT)
    if data:
        handle.write(0, data)
    close(handle)


def read(h: CollabHandler, agent: str, path: PurePosixPath) -> bytes:
    handle = h.open(who(agent), path, os.O_RDONLY)
    try:
        return handle.read(0, 1 << 20)
    finally:
        handle.release()


def history(ws: Workspace, path: str = "plan.md") -> list[tuple[int, str, str]]:
    return [(e.version, e.author, e.message) for e in ws.collab.history(path)]


# -- layout -----------------------------------------------------------------------------------------------------


def test_zone_directories(h: CollabHandler) -> None:
    assert h.listdir(who("alice"), PurePosixPath("collaborative")) == ["current", ".versions", ".conflicts"]
    assert h.getattr(PurePosixPath("collaborative")).is_dir
    assert h.getattr(CUR).is_dir and h.getattr(CUR).mode & 0o200
    assert h.listdir(who("alice"), CUR) == []
    with pytest.raises(NotFound):
        h.getattr(PurePosixPath("collaborative/elsewhere"))
    with pytest.raises(ZoneDenied):
        h.mkdir(who("alice"), PurePosixPath("collaborative/elsewhere"), 0o755)


# -- commits ----------------------------------------------------------------------------------------------------


def test_C_1_create_is_version_1_with_default_message(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, "初稿".encode())
    assert history(ws) == [(1, "alice", "write by alice")]
    assert ws.collab.read("plan.md").content.decode() == "初稿"
    attr = h.getattr(PLAN)
    assert stat.S_ISREG(attr.mode) and attr.size == len("初稿".encode()) and not attr.stable
    assert h.listdir(who("bob"), CUR) == ["plan.md"]


def test_message_set_before_close_is_the_commit_message(h: CollabHandler, ws: Workspace) -> None:
    handle = h.create(who("alice"), PLAN, 0o644, os.O_WRONLY | os.O_CREAT)
    handle.write(0, b"draft")
    h.setxattr(who("alice"), PLAN, "user.omx.message", "创建文档".encode())
    assert h.getxattr(who("alice"), PLAN, "user.omx.message") == "创建文档".encode()
    close(handle)
    assert history(ws) == [(1, "alice", "创建文档")]
    # Then the next commit's message, set on the file; used once.
    h.setxattr(who("alice"), PLAN, "user.omx.message", b"second")
    assert h.getxattr(who("alice"), PLAN, "user.omx.message") == "创建文档".encode()  # still the last commit's
    write(h, "alice", PLAN, b"v2")
    write(h, "alice", PLAN, b"v3")
    assert history(ws) == [(1, "alice", "创建文档"), (2, "alice", "second"), (3, "alice", "write by alice")]


def test_touch_creates_an_empty_version_and_staged_files_show_before_close(h: CollabHandler, ws: Workspace) -> None:
    handle = h.create(who("alice"), PLAN, 0o644, os.O_WRONLY | os.O_CREAT)
    assert h.getattr(PLAN).size == 0
    assert h.listdir(who("bob"), CUR) == ["plan.md"]
    with pytest.raises(NotFound):
        h.open(who("bob"), PLAN, os.O_RDONLY)  # not committed yet
    close(handle)
    assert ws.collab.read("plan.md").content == b""
    assert history(ws) == [(1, "alice", "write by alice")]


def test_a_close_before_any_write_does_not_commit(h: CollabHandler, ws: Workspace) -> None:
    """``echo x > f``: the shell dup2s the descriptor and closes the original (a flush) before echo writes."""
    handle = h.create(who("alice"), PLAN, 0o644, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    handle.flush()
    assert ws.collab.history("plan.md") == []
    handle.write(0, b"x\n")
    close(handle)
    assert history(ws) == [(1, "alice", "write by alice")]
    handle = h.open(who("alice"), PLAN, WT)  # `: > plan.md`: truncation alone, committed at release
    handle.flush()
    assert len(history(ws)) == 1
    handle.release()
    assert len(history(ws)) == 2 and ws.collab.read("plan.md").content == b""


def test_a_closed_file_is_committed_before_the_next_open(h: CollabHandler, ws: Workspace) -> None:
    """The release may reach the daemon after the next request (``touch x && cat x``)."""
    touched = h.create(who("alice"), PLAN, 0o644, os.O_WRONLY | os.O_CREAT)
    touched.flush()  # close() returned; the release is still on its way
    assert read(h, "bob", PLAN) == b""
    assert history(ws) == [(1, "alice", "write by alice")]
    touched.release()
    assert len(history(ws)) == 1
    writing = h.create(who("alice"), CUR / "b.md", 0o644, os.O_WRONLY | os.O_CREAT)
    writing.write(0, b"partial")  # still being written: never committed early
    with pytest.raises(NotFound):
        h.open(who("bob"), CUR / "b.md", os.O_RDONLY)
    close(writing)


def test_sequential_writes_use_the_committed_version_as_base(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"one")
    write(h, "alice", PLAN, b"two")
    write(h, "alice", PLAN, b"three")
    assert [v for v, _, _ in history(ws)] == [1, 2, 3]
    assert h.getxattr(who("alice"), PLAN, "user.omx.expected_version") == b"3"


def test_C_2_read_then_write(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, "初稿".encode())
    assert read(h, "bob", PLAN) == "初稿".encode()
    h.setxattr(who("bob"), PLAN, "user.omx.message", "补充内容".encode())
    write(h, "bob", PLAN, "修改稿".encode())
    assert history(ws)[-1] == (2, "bob", "补充内容")
    assert ws.collab.read("plan.md").content.decode() == "修改稿"


def test_unobserved_file_is_a_conflict_at_open(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"alice")
    with pytest.raises(Conflict) as err:
        h.open(who("bob"), PLAN, WT)
    assert err.value.errno == errno.EBUSY
    assert "read it first" in err.value.message
    assert err.value.info["current_version"] == 1 and err.value.info["your_base"] == 0
    assert ws.collab.conflict_record("bob", "plan.md")["current_content"] == "alice"
    assert ws.collab.read("plan.md").content == b"alice"


def test_C_3_stale_base_fails_at_open(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, "初稿".encode())
    assert read(h, "alice", PLAN) == read(h, "bob", PLAN)
    write(h, "alice", PLAN, "Alice的修改".encode())
    with pytest.raises(Conflict) as err:
        h.open(who("bob"), PLAN, WT)
    assert err.value.info["current_version"] == 2 and err.value.info["current_author"] == "alice"
    record = json.loads((ws.root / "collaborative/.conflicts/bob/plan.md.json").read_text("utf-8"))
    assert record["current_version"] == 2 and record["current_content"] == "Alice的修改" and record["your_base"] == 1
    assert "merge" in record["suggestion"]
    assert ws.collab.read("plan.md").content.decode() == "Alice的修改"


def test_C_3_a_write_after_a_newer_commit_fails_and_the_close_keeps_what_was_written(
    h: CollabHandler, ws: Workspace
) -> None:
    create(h, "alice", PLAN, b"v1")
    read(h, "bob", PLAN)
    bobs = h.open(who("bob"), PLAN, WT)
    bobs.write(0, b"bob's first line\n")
    write(h, "alice", PLAN, b"v2")
    with pytest.raises(Conflict):  # the write, not only the close: a shell ignores the close
        bobs.write(17, b"bob's second line\n")
    with pytest.raises(Conflict):
        bobs.truncate(0)
    with pytest.raises(Conflict):
        bobs.flush()
    bobs.release()
    record = ws.collab.conflict_record("bob", "plan.md")
    assert (record["your_content"], record["your_base"], record["current_version"]) == ("bob's first line\n", 1, 2)
    assert ws.collab.read("plan.md").content == b"v2"


def test_a_write_whose_base_is_current_or_unchecked_is_never_refused(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"v1")
    read(h, "bob", PLAN)
    bobs = h.open(who("bob"), PLAN, WT)
    for n in range(3):
        bobs.write(n, b"x")
    close(bobs)
    read(h, "alice", PLAN)
    h.setxattr(who("bob"), PLAN, "user.omx.expected_version", b"-1")
    bobs = h.open(who("bob"), PLAN, WT)
    bobs.write(0, b"bob, unchecked")
    write(h, "alice", PLAN, b"alice's v3")
    bobs.write(14, b", after alice")  # -1: no check, so no refusal
    close(bobs)
    assert ws.collab.read("plan.md").content == b"bob, unchecked, after alice"


def test_C_3_commit_race_fails_at_close_and_keeps_the_content(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, "初稿".encode())
    read(h, "alice", PLAN)
    read(h, "bob", PLAN)
    bobs = h.open(who("bob"), PLAN, WT)  # base 1 is current: the open and the write succeed
    bobs.write(0, "Bob的修改".encode())
    write(h, "alice", PLAN, "Alice的修改".encode())
    with pytest.raises(Conflict) as err:
        bobs.flush()
    bobs.release()
    info = err.value.info
    assert (info["current_version"], info["current_content"], info["current_author"]) == (2, "Alice的修改", "alice")
    assert info["your_content"] == "Bob的修改" and info["your_base"] == 1
    assert (ws.root / "collaborative/.conflicts/bob/plan.md").read_text("utf-8") == "Bob的修改"
    assert ws.collab.read("plan.md").content.decode() == "Alice的修改"
    # An open-time conflict right after does not replace the record that holds Bob's content.
    with pytest.raises(Conflict):
        h.open(who("bob"), PLAN, WT)
    assert ws.collab.conflict_record("bob", "plan.md")["your_content"] == "Bob的修改"
    # C-4: read, merge, write.
    assert read(h, "bob", PLAN).decode() == "Alice的修改"
    h.setxattr(who("bob"), PLAN, "user.omx.message", "合并Alice和Bob的修改".encode())
    write(h, "bob", PLAN, "合并后的内容".encode())
    assert history(ws)[-1] == (3, "bob", "合并Alice和Bob的修改")


def test_two_handlers_on_one_store_detect_the_conflict(ws: Workspace) -> None:
    """Two daemons: each has its own base table, the store's lock decides."""
    one, two = CollabHandler(ws), CollabHandler(Workspace(ws.root))
    create(one, "alice", PLAN, b"v1")
    read(one, "alice", PLAN)
    read(two, "bob", PLAN)
    write(one, "alice", PLAN, b"alice v2")
    with pytest.raises(Conflict):
        write(two, "bob", PLAN, b"bob v2")
    assert ws.collab.read("plan.md").content == b"alice v2"


def test_C_8_declared_minus_one_skips_the_check(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"v1")
    write(h, "alice", PLAN, b"v2")
    h.setxattr(who("bob"), PLAN, "user.omx.expected_version", b"-1")
    assert h.getxattr(who("bob"), PLAN, "user.omx.expected_version") == b"-1"
    write(h, "bob", PLAN, b"bob wins")
    assert history(ws)[-1][:2] == (3, "bob")
    # The declaration was for one commit: bob's base is now the version it committed.
    assert h.getxattr(who("bob"), PLAN, "user.omx.expected_version") == b"3"


def test_declared_versions_are_checked(h: CollabHandler) -> None:
    create(h, "alice", PLAN, b"v1")
    for bad in (b"abc", b"-2", b"1.5", "١".encode()):
        with pytest.raises(InvalidInput):
            h.setxattr(who("bob"), PLAN, "user.omx.expected_version", bad)
    with pytest.raises(InvalidInput):
        h.setxattr(who("bob"), PLAN, "user.omx.message", b"\xff")
    h.setxattr(who("bob"), PLAN, "user.omx.expected_version", b"1")
    write(h, "bob", PLAN, b"bob")  # declared 1 == current: accepted


def test_a_version_declared_beyond_the_current_one_is_a_conflict_kept_with_its_content(
    h: CollabHandler, ws: Workspace
) -> None:
    """As the store's ``expected_version``: the declaration is taken, and the commit on it is refused and kept,
    content and all (the tools commit by renaming a temp file, so the mount holds the content when it refuses)."""
    create(h, "alice", PLAN, b"v1")
    h.setxattr(who("bob"), PLAN, "user.omx.expected_version", b"99")
    temp = PLAN.with_name(".plan.md.k3j_x9q2.omx-tmp")
    create(h, "bob", temp, b"bob's work")
    with pytest.raises(Conflict):
        h.rename(who("bob"), temp, PLAN, 0)
    record = ws.collab.conflict_record("bob", "plan.md")
    assert (record["your_content"], record["your_base"], record["current_version"]) == ("bob's work", 99, 1)
    assert (ws.root / record["kept_at"]).read_bytes() == b"bob's work"
    assert ws.collab.read("plan.md").content == b"v1"


def test_base_declared_on_an_open_file_applies_at_its_close(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"v1")
    read(h, "bob", PLAN)
    bobs = h.open(who("bob"), PLAN, WT)
    write(h, "alice", PLAN, b"alice v2")
    h.setxattr(who("bob"), PLAN, "user.omx.expected_version", b"-1")
    bobs.write(0, b"bob overrides")  # stale by its base at open, not by the one declared since
    close(bobs)
    assert ws.collab.read("plan.md").content == b"bob overrides"


def test_reading_the_version_xattr_observes_it(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"v1")
    with pytest.raises(NoAttribute):
        h.getxattr(who("bob"), PLAN, "user.omx.expected_version")
    assert "user.omx.expected_version" not in h.listxattr(who("bob"), PLAN)
    assert h.getxattr(who("bob"), PLAN, "user.omx.version") == b"1"
    write(h, "bob", PLAN, b"v2 by bob")
    assert history(ws)[-1][:2] == (2, "bob")
    h.removexattr(who("bob"), PLAN, "user.omx.expected_version")
    with pytest.raises(Conflict):
        h.open(who("bob"), PLAN, WT)


def test_xattrs(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"v1")
    read(h, "bob", PLAN)
    write(h, "bob", PLAN, b"by bob")
    entry = ws.collab.history("plan.md")[-1]
    names = h.listxattr(who("bob"), PLAN)
    assert names == [
        "user.omx.owner",
        "user.omx.version",
        "user.omx.author",
        "user.omx.sha256",
        "user.omx.message",
        "user.omx.expected_version",
    ]
    got = {n: h.getxattr(who("bob"), PLAN, n).decode() for n in names}
    assert got == {
        "user.omx.owner": "bob",
        "user.omx.version": "2",
        "user.omx.author": "bob",
        "user.omx.sha256": entry.sha256,
        "user.omx.message": "write by bob",
        "user.omx.expected_version": "2",
    }
    for name in ("user.omx.owner", "user.omx.version", "user.omx.author", "user.omx.sha256"):
        with pytest.raises(ZoneDenied):
            h.setxattr(who("bob"), PLAN, name, b"x")
        with pytest.raises(ZoneDenied):
            h.removexattr(who("bob"), PLAN, name)
    with pytest.raises(NotSupported):
        h.setxattr(who("bob"), PLAN, "user.other", b"x")
    with pytest.raises(NoAttribute):
        h.getxattr(who("bob"), PLAN, "user.other")
    assert h.listxattr(who("bob"), CUR) == []
    with pytest.raises(NotSupported):
        h.setxattr(who("bob"), CUR, "user.omx.message", b"x")


def test_reads_are_a_snapshot_of_the_version_at_open(h: CollabHandler) -> None:
    create(h, "alice", PLAN, b"version one")
    reader = h.open(who("bob"), PLAN, os.O_RDONLY)
    write(h, "alice", PLAN, b"version two, longer")
    assert reader.read(0, 100) == b"version one"
    assert reader.getattr().size == len(b"version one")
    reader.release()
    assert h.getattr(PLAN).size == len(b"version two, longer")


def test_open_without_truncation_stages_the_current_content(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"hello world")
    handle = h.open(who("alice"), PLAN, os.O_RDWR)
    assert handle.read(0, 5) == b"hello"
    handle.write(6, b"there")
    close(handle)
    assert ws.collab.read("plan.md").content == b"hello there"
    untouched = h.open(who("alice"), PLAN, os.O_WRONLY)
    close(untouched)  # opened for writing, nothing written: no commit
    assert len(ws.collab.history("plan.md")) == 2


def test_truncate_by_path_is_a_commit_and_other_setattr_is_ignored(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"hello world")
    h.setattr(who("alice"), PLAN, AttrChanges(size=5), None)
    assert ws.collab.read("plan.md").content == b"hello"
    h.setattr(who("alice"), PLAN, AttrChanges(mode=0o600, mtime_ns=1), None)
    assert len(ws.collab.history("plan.md")) == 2
    with pytest.raises(Conflict):
        h.setattr(who("bob"), PLAN, AttrChanges(size=0), None)  # bob never read it


def test_versioned_files_are_not_deleted_or_renamed(h: CollabHandler) -> None:
    create(h, "alice", PLAN, b"v1")
    with pytest.raises(ZoneDenied):
        h.unlink(who("alice"), PLAN)
    with pytest.raises(ZoneDenied):
        h.rename(who("alice"), PLAN, CUR / "other.md", 0)
    with pytest.raises(ZoneDenied):
        h.link(who("alice"), PLAN, CUR / "other.md")
    with pytest.raises(ZoneDenied):
        h.symlink(who("alice"), CUR / "link.md", b"plan.md")
    with pytest.raises(NotFound):
        h.unlink(who("alice"), CUR / "missing.md")
    assert h.listdir(who("alice"), CUR) == ["plan.md"]


def test_directories(h: CollabHandler, ws: Workspace) -> None:
    docs = CUR / "docs"
    h.mkdir(who("alice"), docs, 0o755)
    with pytest.raises(AlreadyExists):
        h.mkdir(who("bob"), docs, 0o755)
    create(h, "bob", docs / "a.md", b"a")
    assert ws.collab.list() == ["docs/a.md"]
    assert h.listdir(who("alice"), docs) == ["a.md"]
    with pytest.raises(NotEmpty):
        h.rmdir(who("alice"), docs)
    with pytest.raises(ZoneDenied):
        h.rename(who("alice"), docs, CUR / "papers", 0)
    h.mkdir(who("alice"), CUR / "empty", 0o755)
    h.rmdir(who("bob"), CUR / "empty")
    with pytest.raises(NotFound):
        h.getattr(CUR / "empty")
    with pytest.raises(NotFound):
        create(h, "alice", CUR / "nowhere" / "x.md", b"x")
    with pytest.raises(ZoneDenied):
        h.rmdir(who("alice"), CUR)


def test_odd_names_and_unknown_agents_are_refused(h: CollabHandler) -> None:
    with pytest.raises(InvalidInput):
        h.create(who("alice"), CUR / "bad\nname", 0o644, os.O_WRONLY | os.O_CREAT)
    with pytest.raises(ZoneDenied):
        h.create(who("mallory"), PLAN, 0o644, os.O_WRONLY | os.O_CREAT)


# -- editors and scratch files ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "scratch"),
    [
        (".plan.md.swp", True),
        (".plan.md.swx", True),
        (".plan.md.swo", True),
        ("plan.md~", True),
        ("4913", True),
        ("5036", True),
        ("4914", False),
        (".#plan.md", True),
        ("#plan.md#", True),
        ("x.tmp", True),
        (".x.tmp", True),
        ("plan.md.bak", True),
        ("sedAb12Cd", True),
        ("tmpab_c1234", True),
        (".plan.md.Xy12Ab", True),
        (".goutputstream-ABC123", True),
        (".report.md.k3j_x9q2.omx-tmp", True),
        ("plan.md", False),
        ("sed.md", False),
        ("notes", False),
        ("2024", False),
        (".gitignore", False),
        ("README", False),
    ],
)
def test_scratch_names(name: str, scratch: bool) -> None:
    assert is_scratch_name(name) is scratch


def test_scratch_files_are_per_agent_and_never_versions(h: CollabHandler, ws: Workspace) -> None:
    swap = CUR / ".plan.md.swp"
    handle = h.create(who("alice"), swap, 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    handle.write(0, b"swap data")
    close(handle)
    assert ws.collab.list() == []
    assert h.listdir(who("alice"), CUR) == [".plan.md.swp"]
    assert h.listdir(who("bob"), CUR) == []
    assert h.getattr(swap, who("alice")).size == 9
    with pytest.raises(NotFound):
        h.getattr(swap, who("bob"))
    assert h.getattr(swap).size == 9  # without a caller: the holder's
    assert (ws.root / ".omxfs/scratch/alice/collaborative/current/.plan.md.swp").read_bytes() == b"swap data"
    assert h.listxattr(who("alice"), swap) == []
    h.unlink(who("alice"), swap)
    assert h.listdir(who("alice"), CUR) == []


def test_two_agents_have_their_own_scratch_file_of_one_name(h: CollabHandler) -> None:
    swap = CUR / ".plan.md.swp"
    for agent, data in (("alice", b"a"), ("bob", b"bbb")):
        handle = h.create(who(agent), swap, 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        handle.write(0, data)
        close(handle)
    assert h.getattr(swap, who("alice")).size == 1 and h.getattr(swap, who("bob")).size == 3
    reader = h.open(who("bob"), swap, os.O_RDONLY)
    assert reader.read(0, 10) == b"bbb"
    reader.release()
    with pytest.raises(NotFound):
        h.open(who("charlie"), swap, os.O_RDONLY)
    h.unlink(who("alice"), swap)
    assert h.listdir(who("bob"), CUR) == [".plan.md.swp"] and h.listdir(who("alice"), CUR) == []


def test_sed_i_is_one_version(h: CollabHandler, ws: Workspace) -> None:
    """GNU sed -i: read the file, write sedXXXXXX, close it, fchmod, rename it onto the file."""
    create(h, "alice", PLAN, b"hello world\n")
    original = read(h, "alice", PLAN)
    temp = CUR / "sedK3x9Qa"
    handle = h.create(who("alice"), temp, 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    handle.write(0, original.replace(b"world", b"there"))
    h.setattr(who("alice"), temp, AttrChanges(mode=0o644), handle)
    close(handle)
    h.setxattr(who("alice"), PLAN, "user.omx.message", b"sed edit")
    h.rename(who("alice"), temp, PLAN, 0)
    assert ws.collab.read("plan.md").content == b"hello there\n"
    assert history(ws) == [(1, "alice", "write by alice"), (2, "alice", "sed edit")]
    assert h.listdir(who("alice"), CUR) == ["plan.md"]
    assert ws.collab.list() == ["plan.md"]


def test_rename_of_scratch_onto_an_unobserved_file_is_a_conflict(h: CollabHandler, ws: Workspace) -> None:
    create(h, "alice", PLAN, b"alice")
    temp = CUR / "sedAAAAAA"
    create(h, "bob", temp, b"bob's")
    with pytest.raises(Conflict):
        h.rename(who("bob"), temp, PLAN, 0)
    assert h.listdir(who("bob"), CUR) == ["plan.md", "sedAAAAAA"]  # nothing lost
    assert ws.collab.conflict_record("bob", "plan.md")["your_content"] == "bob's"
    h.rename(who("bob"), temp, CUR / "new.md", 0)  # onto a new name: a create
    assert ws.collab.read("new.md").content == b"bob's"
    with pytest.raises(NotFound):
        h.rename(who("bob"), temp, PLAN, 0)


def test_vim_backup_dance_is_one_version(h: CollabHandler, ws: Workspace) -> None:
    """vim: swap file, probe 4913, rename the file to file~, write the file anew, delete file~ and the swap."""
    create(h, "alice", PLAN, b"line one\n")
    me = who("alice")
    loaded = read(h, "alice", PLAN)
    swap = h.create(me, CUR / ".plan.md.swp", 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    swap.write(0, b"b0VIM")
    probe = h.create(me, CUR / "4913", 0o644, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    close(probe)
    h.unlink(me, CUR / "4913")
    h.rename(me, PLAN, CUR / "plan.md~", 0)
    assert h.getattr(PLAN).size == len(loaded)  # still there for everyone
    assert h.listdir(me, CUR) == [".plan.md.swp", "plan.md", "plan.md~"]
    write(h, "alice", PLAN, loaded + b"line two\n", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    h.setattr(me, PLAN, AttrChanges(mode=0o644), None)
    h.unlink(me, CUR / "plan.md~")
    close(swap)
    h.unlink(me, CUR / ".plan.md.swp")
    assert [v for v, _, _ in history(ws)] == [1, 2]
    assert ws.collab.read("plan.md").content == b"line one\nline two\n"
    assert h.listdir(me, CUR) == ["plan.md"]


def test_backup_by_rename_does_not_observe(h: CollabHandler) -> None:
    """Copying the current version to a backup must not make a stale editor's write look fresh."""
    create(h, "alice", PLAN, b"v1")
    read(h, "bob", PLAN)
    write(h, "alice", PLAN, b"v2")
    h.rename(who("bob"), PLAN, CUR / "plan.md~", 0)
    with pytest.raises(Conflict):
        h.open(who("bob"), PLAN, WT)


def test_scratch_renames_and_flags(h: CollabHandler) -> None:
    create(h, "alice", PLAN, b"v1")
    create(h, "alice", CUR / "a.tmp", b"a")
    create(h, "alice", CUR / "b.tmp", b"b")
    with pytest.raises(AlreadyExists):
        h.rename(who("alice"), CUR / "a.tmp", CUR / "b.tmp", 1)  # RENAME_NOREPLACE
    with pytest.raises(InvalidInput):
        h.rename(who("alice"), CUR / "a.tmp", CUR / "b.tmp", 2)  # RENAME_EXCHANGE
    h.rename(who("alice"), CUR / "a.tmp", CUR / "b.tmp", 0)
    assert h.listdir(who("alice"), CUR) == ["b.tmp", "plan.md"]
    read(h, "alice", PLAN)
    with pytest.raises(AlreadyExists):
        h.rename(who("alice"), CUR / "b.tmp", PLAN, 1)


def test_emacs_lock_symlink_is_scratch(h: CollabHandler) -> None:
    lock = CUR / ".#plan.md"
    h.symlink(who("alice"), lock, b"alice@host.123:1")
    assert h.readlink(lock, who("alice")) == b"alice@host.123:1"
    assert stat.S_ISLNK(h.getattr(lock, who("alice")).mode)
    h.unlink(who("alice"), lock)


def test_scratch_message_moves_with_the_rename(h: CollabHandler, ws: Workspace) -> None:
    temp = CUR / "tmpabcdefgh"
    create(h, "alice", temp, b"content")
    h.setxattr(who("alice"), temp, "user.omx.message", b"from the temp file")
    assert h.listxattr(who("alice"), temp) == ["user.omx.message"]
    h.rename(who("alice"), temp, PLAN, 0)
    assert history(ws) == [(1, "alice", "from the temp file")]


# -- the base table ---------------------------------------------------------------------------------------------


def test_agent_notes_are_bounded() -> None:
    notes = AgentNotes(size=2)
    for i in range(3):
        notes.set_base("alice", PurePosixPath(f"f{i}"), i)
    assert notes.base("alice", PurePosixPath("f0")) is None
    assert notes.base("alice", PurePosixPath("f2")) is not None
    notes.set_message("alice", PurePosixPath("m"), "one")
    notes.used_message("alice", PurePosixPath("m"), "other")
    assert notes.message("alice", PurePosixPath("m")) == "one"
    notes.used_message("alice", PurePosixPath("m"), "one")
    assert notes.message("alice", PurePosixPath("m")) is None


def test_concurrent_writers_lose_nothing_silently(h: CollabHandler, ws: Workspace) -> None:
    """Threads of several agents read and write one file: every commit either lands or raises Conflict."""
    create(h, "alice", PLAN, b"0")
    landed: list[str] = []
    refused: list[str] = []
    lock = threading.Lock()

    def work(agent: str) -> None:
        for i in range(10):
            read(h, agent, PLAN)
            try:
                write(h, agent, PLAN, f"{agent} {i}".encode())
            except Conflict:
                with lock:
                    refused.append(agent)
            else:
                with lock:
                    landed.append(f"{agent} {i}")

    threads = [threading.Thread(target=work, args=(a,)) for a in ("alice", "bob", "charlie")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ws.collab.history("plan.md")) == 1 + len(landed)
    assert len(landed) + len(refused) == 30
    assert sorted(e.version for e in ws.collab.history("plan.md")) == list(range(1, len(landed) + 2))
