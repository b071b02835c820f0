"""The shortcuts that make checkpoints fast (``scripts/bench_checkpoint.py``) give what the long way gives: entries
built without the dataclass's constructor, entries and lines reused from the parent, parsed manifests kept per
process, manifests of any JSON layout, and a restore of paths that finds each subtree as one run of the walk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from omxfs.checkpoints import Entry, ZoneHistory, diff, restore
from omxfs.checkpoints.manifest import load_manifest, new_entry
from omxfs.errors import StoreCorrupt
from omxfs.store import Workspace
from omxfs.store.layout import manifest_name
from tests.checkpoints.conftest import tree_state


def test_new_entry_is_the_entry_the_constructor_makes_field_for_field() -> None:
    values = {name: f"v{i}" for i, name in enumerate(Entry.FIELDS)}  # a field added later shows here
    made = Entry(**values)  # type: ignore[arg-type]
    fast = new_entry(*values.values())  # type: ignore[arg-type]
    assert fast == made and hash(fast) == hash(made) and repr(fast) == repr(made)
    assert fast.replace(path="other") == made.replace(path="other") != made


def test_a_checkpoint_after_one_that_read_everything_finds_nothing_changed(ws: Workspace) -> None:
    """Reading files and listing directories moves their atimes (relatime): the first checkpoint records the atimes
    its reading left, so the next one takes every entry as it was and writes the very same lines."""
    zone = ws.root / "agents/alice"
    (zone / "src/pkg").mkdir(parents=True)
    for n in range(5):
        (zone / f"src/pkg/m{n}.py").write_text(f"x = {n}\n")
        os.utime(zone / f"src/pkg/m{n}.py", (1_000_000, 1_000_000))  # an atime older than the mtime: a read moves it
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    assert history.make("alice", "again", only_if_changed=True) is None
    (zone / "src/pkg/m3.py").write_text("x = 'changed'\n")
    second = history.make("alice", "one changed")
    assert second is not None and second.changed == 1
    old_lines = first.dump().decode().splitlines()[1:]
    new_lines = second.dump().decode().splitlines()[1:]
    assert [a == b for a, b in zip(old_lines, new_lines, strict=True)].count(False) == 1
    assert [line for line in new_lines if "m3.py" in line] != [line for line in old_lines if "m3.py" in line]


def test_a_manifest_of_another_json_layout_loads_diffs_and_restores(ws: Workspace) -> None:
    """A store written before the line-by-line reading, or a manifest rewritten by a tool as indented JSON."""
    zone = ws.root / "agents/alice"
    (zone / "d").mkdir()
    (zone / "d/a.txt").write_text("one\n")
    os.link(zone / "d/a.txt", zone / "hard")
    os.symlink("d/a.txt", zone / "link")
    os.setxattr(zone / "d/a.txt", "user.tag", b"\x00\xff")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "first")
    assert made is not None
    want = tree_state(zone)
    path = history.manifests_dir / manifest_name(made.number)
    indented = json.dumps(json.loads(path.read_bytes()), indent=2).encode()
    os.unlink(path)
    path.write_bytes(indented)
    again = ZoneHistory(ws, "alice").load(made.number)
    assert again.dump() == made.dump() and again.message == "first"
    (zone / "d/a.txt").write_text("two\n")
    assert diff(history).modified == ["d/a.txt"]
    restore(history, "alice", made.number)
    assert tree_state(zone) == want


def test_a_manifest_replaced_on_disk_is_read_again_not_taken_from_memory(ws: Workspace) -> None:
    (ws.root / "agents/alice/a").write_text("a")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "first")
    assert made is not None and history.load(made.number) == made
    path = history.manifests_dir / manifest_name(made.number)
    os.unlink(path)
    path.write_bytes(b"{not json")  # by hand, or a disk's damage
    with pytest.raises(StoreCorrupt):
        history.load(made.number)


def test_a_manifest_cut_short_is_corrupt_whatever_its_layout() -> None:
    raw = b'{"format": 1, "number": 1, "zone": "a", "entries": [\n{"path":".","type":"dir"'
    with pytest.raises(StoreCorrupt):
        load_manifest(raw, "checkpoint 1 of a")


def test_restoring_a_path_leaves_the_siblings_that_share_its_prefix(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    for rel in ("a/in.txt", "a/deep/x.txt", "a-b/in.txt", "a.b/in.txt", "b/in.txt"):
        (zone / rel).parent.mkdir(parents=True, exist_ok=True)
        (zone / rel).write_text(f"{rel} at first\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "first")
    assert made is not None
    for rel in ("a/in.txt", "a/deep/x.txt", "a-b/in.txt", "a.b/in.txt", "b/in.txt"):
        (zone / rel).write_text(f"{rel} later\n")
    (zone / "a/new.txt").write_text("new\n")
    restore(history, "alice", made.number, ("a", "b/in.txt"))
    assert sorted(str(p.relative_to(zone)) for p in zone.rglob("*") if p.is_file()) == [
        "a-b/in.txt",
        "a.b/in.txt",
        "a/deep/x.txt",
        "a/in.txt",
        "b/in.txt",
    ]
    for rel in ("a/in.txt", "a/deep/x.txt", "b/in.txt"):
        assert (zone / rel).read_text() == f"{rel} at first\n"
    for rel in ("a-b/in.txt", "a.b/in.txt"):
        assert (zone / rel).read_text() == f"{rel} later\n"


def test_a_path_restore_of_a_name_only_the_checkpoint_has_puts_it_back(ws: Workspace, tmp_path: Path) -> None:
    zone = ws.root / "agents/alice"
    (zone / "keep").mkdir()
    (zone / "keep/gone.txt").write_text("was here\n")
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "first")
    assert made is not None
    (zone / "keep/gone.txt").unlink()
    restore(history, "alice", made.number, ("keep/gone.txt",))
    assert (zone / "keep/gone.txt").read_text() == "was here\n"
