"""What the feed's poll finds of the zones' branches (``omxfs.ui.held_branches``), on real directories, locks and
view records as the launcher leaves them (``branches.hold_running``, ``.omxfs/views/<zone>/<pid>.json``): a branch
held is found once, the end of each of its runs once, a branch made again under its name again; a symlink in
the store's directory of branches is not followed."""

from __future__ import annotations

import os
from pathlib import Path

from omxfs.checkpoints.branches import BRANCH_RUNNING, hold_running
from omxfs.ui.held_branches import HeldBranches


def _found(held: HeldBranches) -> list[tuple[str, str, bool]]:
    return [(f.zone, f.name, f.ran) for f in held.poll()]


def _run(branch: Path, views: Path, pid: int, held: HeldBranches) -> list[tuple[str, str, bool]]:
    """A run of ``branch`` as the launcher makes one (its lock, then its view's record), polled while it runs; what
    that poll found."""
    with hold_running(branch, branch.name):
        record = views / f"{pid}.json"
        record.write_text("{}")
        found = _found(held)
        assert _found(held) == []  # nothing ended while it runs
        record.unlink()  # the record goes first, the lock after it (the launcher's exit stack)
    return found


def test_a_branch_is_found_once_and_each_end_of_its_runs_once(tmp_path: Path) -> None:
    meta = tmp_path / ".omxfs"
    views = meta / "views" / "bob"
    views.mkdir(parents=True)
    held = HeldBranches(meta)
    assert _found(held) == []
    branch = meta / "branches" / "bob" / "try1"
    branch.mkdir(parents=True)
    assert _run(branch, views, 100, held) == [("bob", "try1", False)]  # found while its first run runs
    assert _found(held) == [("bob", "try1", True)]  # its run ended: the change it holds is whole
    assert _found(held) == []

    running = branch / BRANCH_RUNNING
    earlier = os.stat(running).st_mtime_ns
    assert _run(branch, views, 101, held) == []  # a second run of it: not new
    os.utime(running, ns=(earlier + 10**9, earlier + 10**9))  # it started later than the first (a stamp's tick)
    assert _found(held) == [("bob", "try1", True)]
    assert _found(held) == []


def test_a_branch_ended_and_made_again_is_new_again_and_a_symlink_is_not_followed(tmp_path: Path) -> None:
    meta = tmp_path / ".omxfs"
    (meta / "branches" / "bob").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "planted").mkdir(parents=True)
    (meta / "branches" / "alice").symlink_to(outside)  # not the store's: never listed
    branch = meta / "branches" / "bob" / "try1"
    branch.mkdir()
    held = HeldBranches(meta)
    assert _found(held) == [("bob", "try1", False)]
    branch.rmdir()  # accepted or discarded
    assert _found(held) == []
    branch.mkdir()
    assert _found(held) == [("bob", "try1", False)]
    (meta / "branches" / "bob" / ".ended.jsonl").write_text("")  # the zone's records: no branch
    (meta / "branches" / "bob" / "not a name").mkdir()
    assert _found(held) == []
