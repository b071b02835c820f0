"""A restore of paths checkpoints only what it replaces (``ZoneHistory.make_paths``), and that checkpoint undoes it
exactly: restored with or without the paths, the zone is byte for byte what it was before the restore, while
what changed elsewhere since the last checkpoint stays as it is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from omxfs.checkpoints import ZoneHistory, diff, restore
from omxfs.errors import InvalidInput, NotFound
from omxfs.store import Workspace
from tests.checkpoints.conftest import kill_at, tree_state
from tests.checkpoints.test_restore import populate, scramble

SCRIPT = """
import sys
from omxfs.checkpoints import ZoneHistory, restore
from omxfs.store import Workspace
history = ZoneHistory(Workspace(sys.argv[1]), "alice")
restore(history, "alice", int(sys.argv[2]), tuple(sys.argv[3:]))
"""


def test_a_restore_of_paths_is_undone_exactly_by_its_checkpoint_of_those_paths(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    populate(zone)
    (zone / "keep").mkdir()
    (zone / "keep/deep").mkdir()
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "good")
    assert made is not None
    (zone / "keep/deep").rmdir()  # the restore makes it again, as a parent of the path it restores
    scramble(zone)  # src (with the first name of hard-mod.py) removed, run.sh rewritten, new-file added, ...
    (zone / "elsewhere.txt").write_text("changed after the checkpoint, not restored\n")
    scrambled = tree_state(zone)
    done = restore(history, "alice", made.number, ("src", "run.sh", "new-file", "keep/deep"))
    undo = history.load(done.undo)
    assert undo.paths == ("keep/deep", "new-file", "run.sh", "src")
    assert undo.message == f"before restoring checkpoint {made.number}"
    assert (zone / "run.sh").read_text() == "#!/bin/sh\necho run\n" and not (zone / "new-file").exists()
    assert tree_state(zone)["keep"]["mtime"] == scrambled["keep"]["mtime"]  # a path restore leaves its parent's times
    again = restore(history, "alice", done.undo)  # no paths: those the checkpoint vouches for
    assert again.paths == undo.paths
    assert tree_state(zone) == scrambled  # elsewhere.txt too: not walked, not reverted
    restore(history, "alice", done.undo, ("src",))  # with paths, as any checkpoint
    assert tree_state(zone) == scrambled


def test_a_checkpoint_of_paths_is_consistent_where_a_hard_link_crosses_their_edge(ws: Workspace) -> None:
    """Its paths are scanned on their own, so a file with a name inside and one outside is recorded as two files
    (what a restore of the paths builds), and a name outside that the parent recorded as a link to a first name
    inside holds the parent's content itself (the first name may be gone, or another file now)."""
    zone = ws.root / "agents/alice"
    (zone / "aa").mkdir()
    (zone / "aa/one.txt").write_text("one\n")
    os.link(zone / "aa/one.txt", zone / "zz.txt")  # zz.txt: a second name, after aa/ in walk order
    (zone / "a0.txt").write_text("a0\n")
    os.link(zone / "a0.txt", zone / "aa/second.txt")  # the first name outside, the second inside
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "good")
    assert made is not None
    assert made.by_path()["zz.txt"].link == "aa/one.txt" and made.by_path()["aa/second.txt"].link == "a0.txt"
    undo = history.make_paths("alice", "aa only", ["aa"])
    assert undo.paths == ("aa",)
    zz = undo.by_path()["zz.txt"]
    assert zz.link == "" and zz.sha256 == made.by_path()["aa/one.txt"].sha256
    second = undo.by_path()["aa/second.txt"]
    assert second.link == "" and second.sha256 == made.by_path()["a0.txt"].sha256  # a file of its own
    os.unlink(zone / "aa/one.txt")
    gone = history.make_paths("alice", "aa without one.txt", ["aa"])
    zz = gone.by_path()["zz.txt"]
    assert "aa/one.txt" not in gone.by_path() and zz.link == "" and zz.sha256 == made.by_path()["aa/one.txt"].sha256
    assert diff(history, str(made.number), str(gone.number)).deleted == ["aa/one.txt"]
    restore(history, "alice", made.number, ("aa",))
    assert (zone / "aa/one.txt").read_text() == "one\n"
    restore(history, "alice", gone.number)  # its paths: aa, without one.txt again
    assert not (zone / "aa/one.txt").exists() and (zone / "aa/second.txt").read_text() == "a0\n"


def test_after_a_checkpoint_of_paths_a_whole_one_is_made_even_if_nothing_changed(ws: Workspace) -> None:
    """A view's start (``only_if_changed``) or a snapshot must name a checkpoint of the whole zone."""
    zone = ws.root / "agents/alice"
    (zone / "f").write_text("one\n")
    history = ZoneHistory(ws, "alice")
    assert history.make("alice") is not None
    partial = history.make_paths("alice", "f only", ["f"])
    whole = history.make("alice", "view", only_if_changed=True)
    assert whole is not None and whole.number == partial.number + 1 and whole.paths == ()
    assert history.make("alice", "view", only_if_changed=True) is None


def _twelve_changed_since_a_checkpoint(ws: Workspace) -> tuple[Path, ZoneHistory, int, list[str]]:
    """alice's zone with f0..f11.txt, checkpointed as "old n", then rewritten as "new n"."""
    zone = ws.root / "agents/alice"
    names = [f"f{n}.txt" for n in range(12)]
    for n, name in enumerate(names):
        (zone / name).write_text(f"old {n}\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "old")
    assert made is not None
    for n, name in enumerate(names):
        (zone / name).write_text(f"new {n}\n")
    return zone, history, made.number, names


def test_a_restore_of_paths_killed_while_swapping_leaves_the_zone_and_its_undo_whole(ws: Workspace) -> None:
    zone, history, number, names = _twelve_changed_since_a_checkpoint(ws)
    current = tree_state(zone)
    kill_at("restore-swapped:5", SCRIPT, ws.root, str(number), *names)
    # one path after the other, each whole: the first five swapped in, the rest untouched
    assert [(zone / name).read_text().split()[0] for name in names] == ["old"] * 5 + ["new"] * 7
    undo = history.latest()
    assert undo is not None and undo.paths == tuple(sorted(names))
    restore(history, "alice", undo.number)  # made before anything was swapped: the zone as it was
    assert tree_state(zone) == current


def test_a_restore_of_paths_killed_while_building_leaves_the_zone_untouched(ws: Workspace) -> None:
    """The new trees are built beside the zone before the undo checkpoint is made: a kill then changes nothing of
    the zone and makes no checkpoint."""
    zone, history, number, names = _twelve_changed_since_a_checkpoint(ws)
    current = tree_state(zone)
    kill_at("restore-file:6", SCRIPT, ws.root, str(number), *names)
    assert tree_state(zone) == current
    assert history.numbers() == [number]
    assert diff(history).modified == sorted(names)


def test_a_restore_of_a_path_below_a_missing_directory_is_undone_with_that_directory(
    ws: Workspace, tmp_path: Path
) -> None:
    zone = ws.root / "agents/alice"
    (zone / "top/mid/low").mkdir(parents=True)
    (zone / "top/mid/low/f.txt").write_text("f\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    (zone / "top/mid/low/f.txt").unlink()
    (zone / "top/mid/low").rmdir()
    (zone / "top/mid").rmdir()
    before = tree_state(zone)
    done = restore(history, "alice", made.number, ("top/mid/low/f.txt",))
    assert (zone / "top/mid/low/f.txt").read_text() == "f\n"
    assert history.load(done.undo).paths == ("top/mid",)
    restore(history, "alice", done.undo)
    assert tree_state(zone) == before


def test_a_nested_path_with_a_second_name_of_a_file_outside_its_parent_gets_that_content(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "d/aa").mkdir(parents=True)
    (zone / "b").mkdir()
    (zone / "b/first.txt").write_text("the content\n")
    os.link(zone / "b/first.txt", zone / "d/aa/second.txt")  # its first name is in b/, outside d/
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None and made.by_path()["d/aa/second.txt"].link == "b/first.txt"
    os.unlink(zone / "d/aa/second.txt")
    (zone / "d/aa/second.txt").write_text("replaced\n")
    restore(history, "alice", made.number, ("d/aa",))
    assert (zone / "d/aa/second.txt").read_text() == "the content\n"
    assert (zone / "b/first.txt").read_text() == "the content\n"
    # b/first.txt is still the checkpoint's file: the restored name is its link again
    assert os.stat(zone / "d/aa/second.txt").st_ino == os.stat(zone / "b/first.txt").st_ino


def test_restoring_one_name_of_a_hard_link_after_sed_i_gives_back_the_link(ws: Workspace) -> None:
    """`sed -i` replaces the file it edits by a new one: the other name keeps the old content, and a restore of the
    edited name makes it that file's link again, exactly as the checkpoint had it (link count included)."""
    zone = ws.root / "agents/alice"
    (zone / "src").mkdir()
    (zone / "src/config.ini").write_text("mode = safe\n")
    os.link(zone / "src/config.ini", zone / "config.ini")  # the first name outside src/, in walk order
    (zone / "src/also.ini").write_text("x\n")
    os.link(zone / "src/config.ini", zone / "src/again.ini")  # a third name, restored too
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    expected = tree_state(zone)
    subprocess.run(["sed", "-i", "s/safe/reckless/", str(zone / "src/config.ini")], check=True)
    subprocess.run(["sed", "-i", "s/safe/reckless/", str(zone / "src/again.ini")], check=True)
    assert os.stat(zone / "config.ini").st_nlink == 1
    restore(history, "alice", made.number, ("src",))
    assert tree_state(zone) == expected
    inodes = {os.stat(zone / name).st_ino for name in ("config.ini", "src/config.ini", "src/again.ini")}
    assert len(inodes) == 1 and os.stat(zone / "config.ini").st_nlink == 3


def test_a_name_outside_that_changed_too_is_left_alone_and_the_restored_one_is_its_own_file(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "a").mkdir()
    (zone / "a/f.txt").write_text("v1\n")
    os.link(zone / "a/f.txt", zone / "g.txt")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    (zone / "a/f.txt").write_text("v2 in place, through both names\n")
    restore(history, "alice", made.number, ("a/f.txt",))
    assert (zone / "a/f.txt").read_text() == "v1\n"
    assert (zone / "g.txt").read_text() == "v2 in place, through both names\n"  # not restored
    assert os.stat(zone / "a/f.txt").st_ino != os.stat(zone / "g.txt").st_ino


def test_a_link_is_never_made_to_a_file_outside_the_zone_through_a_symlink(ws: Workspace, tmp_path: Path) -> None:
    """The other name's directory replaced by a symlink to a same-content file elsewhere: the restore does not
    link the zone's name to that file."""
    zone = ws.root / "agents/alice"
    (zone / "keep").mkdir()
    (zone / "keep/secret.txt").write_text("same\n")
    (zone / "r").mkdir()
    os.link(zone / "keep/secret.txt", zone / "r/copy.txt")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(zone / "keep/secret.txt", elsewhere / "secret.txt")  # the same inode, now outside the zone
    os.rmdir(zone / "keep")
    os.symlink(elsewhere, zone / "keep")
    (zone / "r/copy.txt").unlink()
    restore(history, "alice", made.number, ("r",))
    assert (zone / "r/copy.txt").read_text() == "same\n"
    assert os.stat(zone / "r/copy.txt").st_ino != os.stat(elsewhere / "secret.txt").st_ino


def test_a_path_below_a_parent_that_is_a_symlink_now_is_refused_and_nothing_is_written_outside(
    ws: Workspace, tmp_path: Path
) -> None:
    """An agent that replaced a directory by a symlink to elsewhere must not get a supervisor's restore written
    there."""
    zone = ws.root / "agents/alice"
    (zone / "conf").mkdir()
    (zone / "conf/app.ini").write_text("mine\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    (zone / "conf/app.ini").unlink()
    (zone / "conf").rmdir()
    os.symlink(outside, zone / "conf")
    with pytest.raises(InvalidInput, match="conf is no directory"):
        restore(history, "boss", made.number, ("conf/app.ini",))
    assert list(outside.iterdir()) == []
    restore(history, "boss", made.number, ("conf",))  # the symlink itself is replaced by the directory
    assert (zone / "conf/app.ini").read_text() == "mine\n" and list(outside.iterdir()) == []


def test_a_restore_of_a_path_nobody_has_is_refused_before_anything_is_made(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "f").write_text("f\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    before = tree_state(zone)
    with pytest.raises(NotFound, match=r"nowhere\.txt: neither in checkpoint"):
        restore(history, "alice", made.number, ("f", "nowhere.txt"))
    assert history.numbers() == [made.number]  # no undo checkpoint
    assert tree_state(zone) == before
    assert not any("restore" in r["action"] for r in ws.audit_trail().records)


def test_a_restore_of_paths_by_a_supervisor_is_audited_with_its_undo(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "f").write_text("old\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    (zone / "f").write_text("new\n")
    done = restore(history, "boss", made.number, ("f",))
    assert (zone / "f").read_text() == "old\n"
    records = [(r["agent"], r["action"], r["path"]) for r in ws.audit_trail().records]
    assert ("boss", f"checkpoint {done.undo}", "agents/alice") in records  # the undo, made aside
    assert ("boss", f"restore checkpoint {made.number} (undo: {done.undo})", "agents/alice/f") in records
