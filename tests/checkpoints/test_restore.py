"""``omxfs.checkpoints.restore``: a zone back exactly as checkpointed, each restore undone by its own checkpoint."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from omxfs.checkpoints import ZoneHistory, restore
from omxfs.checkpoints.views import view_recorded
from omxfs.errors import OSFailure, ZoneDenied
from omxfs.store import Workspace
from tests.checkpoints.conftest import tree_state


def populate(zone: Path) -> None:
    """A zone with one of everything a zone holds."""
    (zone / "src/pkg").mkdir(parents=True)
    (zone / "src/pkg/mod.py").write_text("print('hi')\n")
    (zone / "empty/deeper").mkdir(parents=True)
    (zone / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(zone / "run.sh", 0o4755)  # set-user-ID kept
    os.symlink("src/pkg/mod.py", zone / "link-to-mod")
    os.symlink("../nowhere/at all", zone / "dangling")
    os.link(zone / "src/pkg/mod.py", zone / "hard-mod.py")
    os.mkfifo(zone / "pipe", 0o620)
    with open(zone / "sparse.img", "wb") as f:
        f.write(b"head")
        f.seek(8 << 20)
        f.write(b"tail")
    os.setxattr(zone / "src/pkg/mod.py", "user.origin", b"agent")
    os.setxattr(zone / "empty", "user.tag", b"\x00\xffbinary")
    (zone / ".git").mkdir()  # a nested repository is files like any other
    (zone / ".git/HEAD").write_text("ref: refs/heads/main\n")
    os.chmod(zone / "empty/deeper", 0o500)


def scramble(zone: Path) -> None:
    os.chmod(zone / "empty/deeper", 0o700)
    shutil.rmtree(zone / "src")
    (zone / "run.sh").write_text("changed\n")
    os.chmod(zone / "run.sh", 0o600)
    os.unlink(zone / "link-to-mod")
    os.symlink("elsewhere", zone / "link-to-mod")
    os.unlink(zone / "pipe")
    (zone / "new-file").write_text("added later\n")
    os.removexattr(zone / "empty", "user.tag")


def test_a_restore_brings_the_zone_back_exactly(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    populate(zone)
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "all kinds")
    assert made is not None
    before = tree_state(zone)
    assert before["sparse.img"]["data"] is not None  # the test's file is sparse, or the check below proves nothing
    scramble(zone)
    assert tree_state(zone) != before
    done = restore(history, "alice", made.number)
    assert tree_state(zone) == before
    assert done.undo == made.number + 1 and done.skipped == []


def test_a_restore_is_undone_by_the_checkpoint_it_made_first(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    populate(zone)
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "good")
    assert made is not None
    scramble(zone)
    scrambled = tree_state(zone)
    done = restore(history, "alice", made.number)
    assert history.load(done.undo).message == f"before restoring checkpoint {made.number}"
    restore(history, "alice", done.undo)
    assert tree_state(zone) == scrambled


def test_owners_are_restored_by_root(ws: Workspace, root_only: None) -> None:
    zone = ws.root / "agents/alice"
    (zone / "theirs").write_text("x")
    os.chown(zone / "theirs", 1234, 5678)
    os.symlink("theirs", zone / "their-link")
    os.chown(zone / "their-link", 4321, 8765, follow_symlinks=False)
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    before = tree_state(zone)
    os.chown(zone / "theirs", 0, 0)
    os.unlink(zone / "their-link")
    restore(history, "alice", made.number)
    assert tree_state(zone) == before
    assert os.lstat(zone / "their-link").st_uid == 4321


def test_a_restore_of_paths_changes_only_those_paths(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    populate(zone)
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    old = tree_state(zone)
    scramble(zone)
    done = restore(history, "alice", made.number, ("src", "new-file", "run.sh"))
    now = tree_state(zone)
    assert done.paths == ("src", "new-file", "run.sh")
    for path in ("src", "src/pkg", "run.sh"):
        assert now[path] == old[path]
    assert now["src/pkg/mod.py"] | {"nlink": 2} == old["src/pkg/mod.py"]  # its second name was not restored
    assert "new-file" not in now  # not in the checkpoint: removed
    assert os.readlink(zone / "link-to-mod") == "elsewhere"  # not named: left as it is
    assert not (zone / "pipe").exists()


def checkpointed_then_changed(ws: Workspace) -> tuple[Path, ZoneHistory, int]:
    """alice's zone with ``f`` = "a" in checkpoint N, then "b": the zone, its history, N."""
    zone = ws.root / "agents/alice"
    (zone / "f").write_text("a")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice")
    assert made is not None
    (zone / "f").write_text("b")
    return zone, history, made.number


def test_only_the_owner_or_a_supervisor_restores(ws: Workspace) -> None:
    zone, history, number = checkpointed_then_changed(ws)
    with pytest.raises(ZoneDenied):
        restore(history, "bob", number)
    assert (zone / "f").read_text() == "b"
    restore(history, "boss", number)
    assert (zone / "f").read_text() == "a"
    assert any("restore checkpoint 1" in a["action"] for a in ws.audit_trail().records)


def test_a_restore_is_refused_while_a_view_of_the_zone_runs(ws: Workspace) -> None:
    zone, history, number = checkpointed_then_changed(ws)
    with view_recorded(ws, "alice"), pytest.raises(OSFailure, match="a view of alice is running"):
        restore(history, "alice", number)
    assert (zone / "f").read_text() == "b"
    restore(history, "alice", number)  # the view ended: its record is gone
    assert (zone / "f").read_text() == "a"
