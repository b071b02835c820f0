"""kill -9 of a checkpoint and of a restore at chosen points (``crashpoints``): earlier checkpoints stay whole, the
zone is old or new and never mixed, and ``fsck`` says what is left and removes it."""

from __future__ import annotations

import os
from pathlib import Path

from omxfs.checkpoints import ZoneHistory, restore
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from tests.checkpoints.conftest import kill_at, tree_state

#: a checkpoint or restore of alice's zone in its own process, which the crash point kills
SCRIPT = """
import sys
from omxfs.checkpoints import ZoneHistory, restore
from omxfs.store import Workspace
history = ZoneHistory(Workspace(sys.argv[1]), "alice")
if sys.argv[2] == "checkpoint":
    history.make("alice", "killed")
else:
    restore(history, "alice", int(sys.argv[3]))
"""


def killed_at(point: str, ws: Workspace, *args: str) -> None:
    kill_at(point, SCRIPT, ws.root, *args)


def files(zone: Path, count: int, tag: str) -> None:
    for n in range(count):
        (zone / f"dir{n % 7}").mkdir(exist_ok=True)
        (zone / f"dir{n % 7}/file{n}.txt").write_text(f"{tag} {n}\n")


def test_a_checkpoint_killed_midway_leaves_the_earlier_ones_whole_and_only_debris(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    files(zone, 40, "first")
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    files(zone, 40, "second")
    killed_at("checkpoint-blob:10", ws, "checkpoint")
    assert history.numbers() == [1]
    assert history.load(1) == first
    report = fsck(ws, temp_grace=0)
    kinds = [f.kind for f in report.findings]
    assert set(kinds) <= {"unreferenced-blob", "temp-file"}, [f.line() for f in report.findings]
    assert kinds.count("unreferenced-blob") == 10 and kinds.count("temp-file") <= 1  # the one being linked
    assert not report.corrupt
    assert fsck(ws, repair=True, temp_grace=0).findings and fsck(ws, temp_grace=0).clean
    again = history.make("alice", "after the crash")
    assert again is not None and again.number == 2 and again.changed == 40


def test_a_restore_killed_while_building_leaves_the_zone_as_it_was(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    files(zone, 30, "old")
    history = ZoneHistory(ws, "alice")
    history.make("alice", "old")
    files(zone, 30, "new")
    (zone / "extra").write_text("only now\n")
    current = tree_state(zone)
    killed_at("restore-file:12", ws, "restore", "1")
    assert tree_state(zone) == current
    assert history.numbers() == [1, 2]  # the checkpoint made first is whole: the restore can be undone
    report = fsck(ws, temp_grace=0)
    assert {f.kind for f in report.findings} == {"stale-restore"}, [f.line() for f in report.findings]
    fsck(ws, repair=True, temp_grace=0)
    assert fsck(ws, temp_grace=0).clean


def test_a_restore_killed_after_its_swap_leaves_the_zone_restored(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    files(zone, 30, "old")
    history = ZoneHistory(ws, "alice")
    history.make("alice", "old")
    wanted = tree_state(zone)
    files(zone, 30, "new")
    killed_at("restore-swapped", ws, "restore", "1")
    assert tree_state(zone) == wanted
    report = fsck(ws, temp_grace=0)
    assert {f.kind for f in report.findings} == {"stale-restore"}  # the old tree, swapped out
    fsck(ws, repair=True, temp_grace=0)
    assert fsck(ws, temp_grace=0).clean
    restore(history, "alice", 2)  # the checkpoint made before it still undoes it
    assert (zone / "dir0/file0.txt").read_text() == "new 0\n"


def test_fsck_finds_a_blob_that_lost_its_content_and_one_that_is_missing(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "a").write_text("aaa\n")
    (zone / "b").write_text("bbb\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    by_path = made.by_path()
    bad = history.blobs.path(by_path["a"].sha256)
    os.chmod(bad, 0o644)
    bad.write_text("not aaa\n")
    history.blobs.path(by_path["b"].sha256).unlink()
    report = fsck(ws, repair=True)
    assert sorted(f.kind for f in report.corrupt) == ["bad-blob", "missing-blob"]
    assert not report.clean
