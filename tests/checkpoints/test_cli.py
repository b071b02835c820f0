"""``omxfs checkpoint``, ``checkpoints``, ``diff``, ``restore`` as real processes, on a store and through a mount."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from omxfs.checkpoints.scan import RACY_NS
from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.fuse.conftest import Mount, clean_env


def test_checkpoint_prints_its_id_and_checkpoints_lists_who_what_and_how_much(ws: Workspace) -> None:
    (ws.root / "agents/alice/a.txt").write_text("hello\n")
    made = omxfs("checkpoint", str(ws.root), "--as", "alice", "-m", "first one")
    assert made.stdout == "1\n" and "checkpoint 1 of alice: " in made.stderr
    (ws.root / "agents/alice/b.txt").write_text("more\n")
    assert omxfs("checkpoint", str(ws.root), "--as", "boss", "--zone", "alice").stdout == "2\n"
    listed = json.loads(omxfs("checkpoints", str(ws.root), "alice", "--json").stdout)
    assert [(c["id"], c["message"], c["by"], c["bytes_added"]) for c in listed] == [
        ("1", "first one", "alice", 6),
        ("2", "", "boss", 5),
    ]
    assert all(c["time"].endswith("Z") for c in listed)
    table = omxfs("checkpoints", str(ws.root), "alice").stdout.splitlines()
    assert table[0].split() == ["ID", "TIME", "BY", "CHANGED", "ADDED", "MESSAGE"]
    assert table[1].split()[0] == "1" and table[1].endswith("first one")


def test_refusals_are_one_line(ws: Workspace) -> None:
    (ws.root / "agents/alice/a").write_text("a")
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    for args, said in (
        (("checkpoint", str(ws.root), "--as", "bob", "--zone", "alice"), "bob may not checkpoint or restore"),
        (("restore", str(ws.root), "alice", "1", "--as", "bob"), "bob may not checkpoint or restore"),
        (("restore", str(ws.root), "alice", "7", "--as", "alice"), "alice has no checkpoint 7"),
        (("diff", str(ws.root), "bob"), "bob has no checkpoint yet"),
        (("checkpoint", str(ws.root)), "which is no agent of this workspace: name one with --as NAME"),
        (("checkpoints", str(ws.root), "alice", "--prune", "0", "--as", "alice"), "keeps at least 1"),
    ):
        done = omxfs(*args, check=False, env={**clean_env(), "USER": "nobody-here", "LOGNAME": "nobody-here"})
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_the_commands_reach_the_store_beneath_a_mount(mount: Callable[..., Mount]) -> None:
    m = mount(agents=["alice", "bob"], default="alice")
    (m.store / "agents/alice/notes.md").write_text("one\n")
    assert omxfs("checkpoint", str(m.root), "--as", "alice").stdout == "1\n"
    (m.path("agents/alice/notes.md")).write_text("two\n")  # written through the mount
    changes = json.loads(omxfs("diff", str(m.root), "alice", "--json").stdout)
    assert changes["modified"] == ["notes.md"] and "-one\n+two\n" in changes["details"]["notes.md"]["diff"]
    assert "undo with" in omxfs("restore", str(m.root), "alice", "1", "--as", "alice").stdout
    assert m.path("agents/alice/notes.md").read_text() == "one\n"  # the mount shows the restored zone
    assert [c["id"] for c in json.loads(omxfs("checkpoints", str(m.root), "alice", "--json").stdout)] == ["1", "2"]


def test_a_path_the_checkpoint_does_not_hold_is_said_to_be_removed(ws: Workspace) -> None:
    """Restoring a path to a checkpoint made before it existed removes it (as the checkpoint had it): the command
    said only "(0 file(s))", which reads like nothing happened."""
    zone = ws.root / "agents/alice"
    (zone / "old.txt").write_text("old\n")
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    (zone / "conf").mkdir()
    (zone / "conf/app.ini").write_text("a\n")
    done = omxfs("restore", str(ws.root), "alice", "1", "conf/app.ini", "old.txt", "--as", "alice")
    assert "not in checkpoint 1, so removed: conf/app.ini\n" in done.stderr
    assert not (zone / "conf/app.ini").exists() and (zone / "old.txt").read_text() == "old\n"


def test_a_prune_says_which_older_checkpoints_it_kept_and_why(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    for n in range(20):
        (zone / f"f{n}.txt").write_text(f"{n}\n")
    time.sleep(RACY_NS / 1e9 + 0.05)  # else the second checkpoint reads them all again: too much for a delta
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    for n in range(3):
        (zone / "f0.txt").write_text(f"state {n}\n")
        omxfs("checkpoint", str(ws.root), "--as", "alice")
    pruned = omxfs("checkpoints", str(ws.root), "alice", "--prune", "1", "--as", "alice")
    assert "removed 2 checkpoint(s)" in pruned.stderr
    assert "kept 1: newer ones are written as what changed since" in pruned.stderr
    listed = json.loads(omxfs("checkpoints", str(ws.root), "alice", "--json").stdout)
    assert [c["id"] for c in listed] == ["1", "4"]
