"""What a branch keeps besides its overlay (``omxfs.checkpoints.branches``), on real files: which sibling paths an
accepted branch collides with, the log of ended branches (a line a crash cut short loses no later one), the names a
branch may have, and the lock a running branch holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omxfs.checkpoints import Entry
from omxfs.checkpoints.branches import (
    ENDED_LOG,
    Made,
    change_record,
    check_name,
    conflicts,
    ended_branches,
    ended_now,
    hold_running,
    log_ended,
    overlap,
    running_pid,
)
from omxfs.errors import InvalidInput, OSFailure


def file(path: str, sha: str = "a" * 64) -> Entry:
    return Entry(path, "file", 0o644, 0, 0, 1, size=1, sha256=sha)


def folder(path: str, mode: int = 0o755) -> Entry:
    return Entry(path, "dir", mode, 0, 0, 1)


def test_a_path_both_changed_collides_unless_both_made_it_the_same() -> None:
    accepted = change_record({"notes.md": file("notes.md"), "new": folder("new"), "new/a": file("new/a")})
    assert overlap(accepted, {"notes.md": file("notes.md", "b" * 64)}) == ["notes.md"]
    assert overlap(accepted, {"notes.md": None}) == ["notes.md"]  # deleted here, changed there
    assert overlap(accepted, {"notes.md": file("notes.md", "a" * 64)}) == []  # the very same change
    assert overlap(accepted, {"new": folder("new"), "new/b": file("new/b")}) == []  # one new directory, other files
    assert overlap(accepted, {"new": folder("new", 0o700), "new/b": file("new/b")}) == ["new"]
    assert overlap(accepted, {"other.md": file("other.md")}) == []


def test_a_path_under_one_the_other_deleted_or_made_a_file_collides() -> None:
    deleted = change_record({"old": None, "old/a": None})
    assert overlap(deleted, {"old/b": file("old/b")}) == ["old/b"]  # a new file in a directory deleted there
    assert overlap(change_record({"doc/x": file("doc/x")}), {"doc": file("doc")}) == ["doc"]  # a file in its place
    assert overlap(change_record({".": folder(".", 0o700)}), {"a": file("a")}) == []  # the zone's root: no parent


def test_a_sibling_is_checked_against_branches_accepted_after_it_was_made(tmp_path: Path) -> None:
    made = Made("2026-01-01T00:00:00.000000Z", 1, "alice")
    before = ended_now("old", "accepted", "alice", None, change_record({"a": file("a")}))
    log_ended(tmp_path, "alice", before)
    sibling = Made("t", before.at_ns + 1, "alice")  # made after "old" was accepted: "old" is its base
    assert conflicts(tmp_path, "alice", "s", sibling, {"a": file("a", "c" * 64)}) == {}
    log_ended(tmp_path, "alice", ended_now("first", "accepted", "alice", made, change_record({"a": file("a")})))
    log_ended(tmp_path, "alice", ended_now("gone", "discarded", "alice", made, {}))
    assert conflicts(tmp_path, "alice", "s", sibling, {"a": file("a", "c" * 64), "b": file("b")}) == {"first": ["a"]}


def test_a_line_a_crash_cut_short_loses_no_line_after_it(tmp_path: Path) -> None:
    log_ended(tmp_path, "alice", ended_now("one", "discarded", "alice", None, {}))
    with open(tmp_path / "branches/alice" / ENDED_LOG, "a", encoding="utf-8") as log:
        log.write('{"name": "torn", "sta')  # killed mid-line
    log_ended(tmp_path, "alice", ended_now("two", "accepted", "bob", None, change_record({"x": None})))
    read = ended_branches(tmp_path, "alice")
    assert [(e.name, e.state, e.by) for e in read] == [("one", "discarded", "alice"), ("two", "accepted", "bob")]
    assert read[1].changed == {"x": None}


@pytest.mark.parametrize("name", ["", "..", ".", "../x", "a/b", ".hidden", "-x", "a b", "x" * 65, "é"])
def test_a_branch_name_is_a_plain_name(name: str) -> None:
    with pytest.raises(InvalidInput, match="is no branch name"):
        check_name(name)


@pytest.mark.parametrize("name", ["review", "try1", "A.b_c-9", "x" * 64])
def test_plain_names_are_branch_names(name: str) -> None:
    assert check_name(name) == name


def test_a_running_branch_is_held_by_one_process_and_freed_when_it_dies(tmp_path: Path) -> None:
    assert running_pid(tmp_path) is None
    with hold_running(tmp_path, "alice's branch b"):
        assert running_pid(tmp_path) == os.getpid()
        busy = f"alice's branch b is running in a view already \\(pid {os.getpid()}\\)"
        with pytest.raises(OSFailure, match=busy), hold_running(tmp_path, "alice's branch b"):
            pass
    assert running_pid(tmp_path) is None
    holder = (
        "import sys, time; from pathlib import Path; from omxfs.checkpoints.branches import hold_running\n"
        "with hold_running(Path(sys.argv[1]), 'b'):\n    print('held', flush=True); time.sleep(60)"
    )
    other = subprocess.Popen([sys.executable, "-c", holder, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        assert running_pid(tmp_path) == other.pid
        other.kill()
        other.wait(timeout=30)
        assert running_pid(tmp_path) is None  # kill -9 frees it
    finally:
        other.kill()
        other.communicate(timeout=30)


def test_a_branch_whose_parent_was_removed_by_hand_is_listed_orphaned_and_discarded(tmp_path: Path) -> None:
    """``omxfs branches`` failed on it, naming itself as the way out; it lists it now, with the discard to drop it."""
    from omxfs.checkpoints.review import Review
    from omxfs.store import Workspace

    ws = Workspace.init(tmp_path / "ws", agents=["bob"])
    parent, child = Review(ws, "bob", "p"), Review(ws, "bob", "c")
    parent.prepare()
    child.prepare("p")
    (child.upper / "b.md").write_text("b\n")
    subprocess.run(["rm", "-rf", str(parent.dir)], check=True)
    omxfs = [sys.executable, "-m", "cli.omxfs"]
    listed = subprocess.run([*omxfs, "branches", str(ws.root), "bob"], capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("c ")]
    drop = f"omxfs discard {ws.root} bob --branch c --as bob"
    assert "orphaned" in row and f"made from p, which is gone: drop it with `{drop}`" in row, row
    assert subprocess.run([*omxfs, *drop.split()[1:]], capture_output=True, check=False).returncode == 0
    assert not child.dir.exists()
