"""The scan's shortcuts never hide a change: a directory whose stat is unchanged is not listed again (its listing
is the previous checkpoint's), a file whose stat is unchanged is not read, and what changed too close to a scan for
its stat to tell (the same clock tick) is read again by the next one.

The tests that need the shortcuts taken narrow the racy window (``scan.RACY_NS``) to nothing: every entry here was
made a moment ago, and with the default window every one would be read and listed again, which proves nothing about
the shortcuts. A spy on ``os.scandir`` (the real call, counted) shows that they were taken."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from omxfs.checkpoints import ZoneHistory, diff, restore
from omxfs.checkpoints import scan as scan_module
from omxfs.checkpoints.manifest import SCAN, listings_of, load_manifest, stat_cache
from omxfs.checkpoints.scan import scan_zone
from omxfs.store import Workspace
from omxfs.store.layout import manifest_name
from tests.checkpoints.conftest import tree_state

DEEP = "a/b/c/d/e"


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "RACY_NS", 0)


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The directories ``os.scandir`` listed (by the inode of the descriptor it was given), through the real call."""
    calls: list[int] = []
    real: Callable[..., Any] = os.scandir

    def counting(target: Any = ".") -> Iterator[os.DirEntry[str]]:
        if isinstance(target, int):
            calls.append(os.fstat(target).st_ino)
        return real(target)  # type: ignore[no-any-return]

    monkeypatch.setattr(scan_module.os, "scandir", counting)
    return calls


def zone_with_tree(ws: Workspace) -> Path:
    zone = ws.root / "agents/alice"
    (zone / DEEP).mkdir(parents=True)
    (zone / f"{DEEP}/deep.txt").write_text("deep one\n")
    (zone / "a/b/side.txt").write_text("side\n")
    for n in range(5):
        (zone / f"top{n}.txt").write_text(f"top {n}\n")
    return zone


def changed_ctime(path: Path, recorded: int, change: Callable[[], None]) -> None:
    """``change()`` until the file's ctime is not ``recorded``: a clock that ticks coarsely may give a change made
    in the same tick as the checkpoint's stat the same ctime (the case the racy window is for, narrowed here)."""
    change()
    while os.lstat(path).st_ctime_ns == recorded:
        change()


def test_unchanged_directories_are_not_listed_again_and_their_entries_are_the_same(
    ws: Workspace, no_racy_window: None, listed: list[int]
) -> None:
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    listed.clear()
    scan = scan_zone(zone, first.by_path(), listings=first.listings)
    assert listed == []  # nothing changed: no directory listed, no file read
    assert scan.read == []
    assert [e.json_line for e in scan.entries] == [e.json_line for e in first.entries]


def test_a_file_rewritten_in_place_with_its_mtime_set_back_is_seen_in_a_directory_not_listed_again(
    ws: Workspace, no_racy_window: None, listed: list[int]
) -> None:
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    deep = zone / f"{DEEP}/deep.txt"
    st = os.lstat(deep)
    recorded = first.by_path()[f"{DEEP}/deep.txt"].ctime_ns
    assert recorded == st.st_ctime_ns  # the stat cache holds it (no racy window here)

    def rewrite() -> None:
        with open(deep, "r+b") as f:  # the same inode, the same size
            f.write(b"DEEP ONE\n")
        os.utime(deep, ns=(st.st_atime_ns, st.st_mtime_ns))

    changed_ctime(deep, recorded, rewrite)
    listed.clear()
    assert diff(history).modified == [f"{DEEP}/deep.txt"]
    assert listed == []  # the directories' listings were reused: the file's own stat told
    second = history.make("alice", "second")
    assert second is not None and second.changed == 1
    restore(history, "alice", first.number)
    assert deep.read_text() == "deep one\n"


def test_a_name_added_to_a_directory_whose_mtime_is_set_back_is_found(ws: Workspace, no_racy_window: None) -> None:
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    holder = zone / DEEP
    st = os.lstat(holder)

    def add() -> None:
        (holder / "new.txt").write_text("new\n")
        os.utime(holder, ns=(st.st_atime_ns, st.st_mtime_ns))  # its ctime still moves

    changed_ctime(holder, first.by_path()[DEEP].ctime_ns, add)
    assert diff(history).added == [f"{DEEP}/new.txt"]
    second = history.make("alice", "second")
    assert second is not None and f"{DEEP}/new.txt" in second.by_path()


def test_a_file_replaced_by_a_directory_and_two_directories_swapped_are_seen(
    ws: Workspace, no_racy_window: None
) -> None:
    zone = zone_with_tree(ws)
    (zone / "left").mkdir()
    (zone / "left/l.txt").write_text("left\n")
    (zone / "right").mkdir()
    (zone / "right/r.txt").write_text("right\n")
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    before = tree_state(zone)
    os.unlink(zone / "a/b/side.txt")
    (zone / "a/b/side.txt").mkdir()
    (zone / "a/b/side.txt/inside").write_text("now a directory\n")
    os.rename(zone / "left", zone / "swap")
    os.rename(zone / "right", zone / "left")
    os.rename(zone / "swap", zone / "right")
    found = diff(history)
    assert found.added == ["a/b/side.txt/inside", "left/r.txt", "right/l.txt"]
    assert found.deleted == ["left/l.txt", "right/r.txt"]
    assert found.modified == ["a/b/side.txt"] and found.details["a/b/side.txt"]["type"] == ["file", "dir"]
    second = history.make("alice", "second")
    assert second is not None and second.by_path()["left/r.txt"].type == "file"
    restore(history, "alice", first.number)
    assert tree_state(zone) == before


def test_what_changed_just_before_a_checkpoint_is_read_again_by_the_next(ws: Workspace) -> None:
    """The default racy window: a file written a moment before a checkpoint, then rewritten with the same size and
    mtime, may keep its whole stat on a filesystem whose clock has not ticked (git's "racy clean"). The checkpoint
    records it without its ctime, so the next scan reads it again and sees the second write whatever the clock."""
    zone = ws.root / "agents/alice"
    (zone / "d").mkdir()
    hot = zone / "d/hot.txt"
    hot.write_text("first\n")
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    assert first.by_path()["d/hot.txt"].ctime_ns == 0 and first.by_path()["d"].ctime_ns == 0
    st = os.lstat(hot)
    with open(hot, "r+b") as f:
        f.write(b"FIRST\n")
    os.utime(hot, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert diff(history).modified == ["d/hot.txt"]
    scan = scan_zone(zone, first.by_path(), listings=first.listings)
    assert "d/hot.txt" in scan.read


def test_a_checkpoint_counts_what_was_added_removed_and_changed_and_stores_only_new_content(ws: Workspace) -> None:
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    (zone / "top0.txt").write_text("top 0, changed\n")  # changed: a new blob
    (zone / "top1.txt").unlink()  # removed
    (zone / "copy.txt").write_text("top 2\n")  # added, with a content the parent holds: no new bytes
    (zone / "a/b/new").mkdir()  # added
    second = history.make("alice", "second")
    assert second is not None
    old, new = first.by_path(), second.by_path()
    differ = (old.keys() ^ new.keys()) | {p for p in old.keys() & new.keys() if not old[p].same_node(new[p])}
    assert second.changed == len(differ) == 6  # and the mtimes of the root and a/b, whose names changed
    found = diff(history, str(first.number), str(second.number))
    assert (found.added, found.deleted, found.modified) == (["a/b/new", "copy.txt"], ["top1.txt"], ["top0.txt"])
    assert second.bytes_added == len("top 0, changed\n")
    for entry in second.entries:
        if entry.type == "file" and entry.size:
            assert history.blobs.path(entry.sha256).read_bytes() == (zone / entry.path).read_bytes()


def test_the_listings_and_stat_cache_a_checkpoint_hands_on_are_those_its_entries_give(
    ws: Workspace, no_racy_window: None
) -> None:
    """A checkpoint keeps its scan's listings and stat cache for the next scan, instead of deriving them from its
    entries; a process that reads the manifest derives them. Both must say the same."""
    zone = zone_with_tree(ws)
    os.link(zone / "top0.txt", zone / "a/hard.txt")
    os.symlink("top1.txt", zone / "a/link")
    history = ZoneHistory(ws, "alice")
    assert history.make("alice", "first") is not None
    (zone / "top2.txt").write_text("changed\n")
    (zone / "a/b/c/new.txt").write_text("new\n")
    (zone / "top3.txt").unlink()
    made = history.make("alice", "second")
    assert made is not None
    derived = stat_cache(made.entries)
    assert made.listings == listings_of(made.entries)
    assert made.stat_cache == derived
    assert {"top2.txt", "top4.txt"} <= derived["."].keys() and "top3.txt" not in derived["."]
    assert "new.txt" in derived["a/b/c"]
    assert "top0.txt" not in derived["."] or derived["."]["top0.txt"][0][-1] == 1  # two names: read each time


def test_a_manifest_of_the_earlier_scan_lends_no_listing(ws: Workspace, listed: list[int]) -> None:
    """Its directory stats were taken after the listing: a name added in between would be hidden for good."""
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    made = history.make("alice", "first")
    assert made is not None
    assert load_manifest(made.dump(), "again").scan == SCAN and made.listings
    path = history.manifests_dir / manifest_name(made.number)
    head, rest = path.read_text().split("\n", 1)
    earlier = json.loads(head.removesuffix(', "entries": [') + "}")
    del earlier["scan"]
    older = load_manifest((json.dumps(earlier)[:-1] + ', "entries": [\n' + rest).encode(), "older")
    assert older.scan == 1 and older.listings == {} and older.entries == made.entries
    listed.clear()
    scan_zone(zone, older.by_path(), listings=older.listings)
    assert len(listed) == sum(1 for e in made.entries if e.type == "dir")  # every directory listed again


def touch_mtime_back(path: Path, mtime_ns: int) -> None:
    """``touch -m -d @SECONDS.NANOS``: the file's mtime set back to ``mtime_ns`` by the real tool."""
    subprocess.run(["touch", "-m", "-d", f"@{mtime_ns // 10**9}.{mtime_ns % 10**9:09d}", str(path)], check=True)


def test_a_directory_cache_handed_on_as_it_is_still_sees_a_file_rewritten_with_its_mtime_touched_back(
    ws: Workspace, no_racy_window: None, listed: list[int]
) -> None:
    """A checkpoint hands the next one the very stat cache of each directory where nothing changed; a file of
    such a directory rewritten in place, with its size kept and its mtime set back by ``touch -d``, still differs
    by its ctime (which no one can set back), and the next checkpoint and diff see it."""
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    (zone / "top0.txt").write_text("top 0, changed\n")  # elsewhere: the deep directory's cache is handed on
    second = history.make("alice", "second")
    assert second is not None and second.changed == 1
    assert second.stat_cache[DEEP] is first.stat_cache[DEEP]  # the shortcut was taken
    deep = zone / f"{DEEP}/deep.txt"
    st = os.lstat(deep)

    def rewrite() -> None:
        with open(deep, "r+b") as f:  # the same inode, the same size
            f.write(b"DEEP ONE\n")
        touch_mtime_back(deep, st.st_mtime_ns)

    changed_ctime(deep, st.st_ctime_ns, rewrite)
    after = os.lstat(deep)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    listed.clear()
    found = diff(history)
    assert found.modified == [f"{DEEP}/deep.txt"] and "DEEP ONE" in found.details[f"{DEEP}/deep.txt"]["diff"]
    assert listed == []  # no directory listed again: the file's own ctime told
    third = history.make("alice", "third")
    assert third is not None and third.changed == 1
    assert history.blobs.path(third.by_path()[f"{DEEP}/deep.txt"].sha256).read_bytes() == b"DEEP ONE\n"
    assert third.stat_cache == stat_cache(third.entries)  # what it hands on is what its entries say


def test_entries_by_path_are_handed_on_only_where_no_path_is_gone(ws: Workspace) -> None:
    """A checkpoint's entries by path are its parent's with the changed entries over them: right only if no path
    of the parent is gone, which the count tells even when a path is gone and another added (the same count of
    entries). Otherwise they are made from its entries."""
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    assert history.make("alice", "first") is not None
    (zone / "top0.txt").write_text("top 0, changed\n")
    (zone / "added.txt").write_text("added\n")
    grown = history.make("alice", "changed and added")
    assert grown is not None and "_by_path" in grown.__dict__  # handed on
    assert grown.by_path_view() == {e.path: e for e in grown.entries}
    (zone / "top1.txt").unlink()
    (zone / "other.txt").write_text("in its place\n")
    swapped = history.make("alice", "one gone, one added")
    assert swapped is not None and len(swapped.entries) == len(grown.entries)
    assert "_by_path" not in swapped.__dict__  # not handed on: made from its entries when asked
    assert swapped.by_path_view() == {e.path: e for e in swapped.entries} and "top1.txt" not in swapped.by_path()


@pytest.mark.parametrize("change", ["modify", "gone_and_added", "hard_link", "type_changed"])
def test_a_diff_of_the_zone_now_says_what_a_diff_of_its_checkpoint_says(ws: Workspace, change: str) -> None:
    """A diff of the zone as it is now looks only at the entries its scan did not take from the checkpoint,
    where no path is gone, and at every path otherwise: either way it says what a diff between the checkpoint
    and one made of the same zone says."""
    zone = zone_with_tree(ws)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None
    if change == "modify":
        (zone / "a/b/side.txt").write_text("side, changed\n")
    elif change == "gone_and_added":  # the same count of entries
        (zone / "top1.txt").unlink()
        (zone / "a/b/new.txt").write_text("new\n")
    elif change == "hard_link":  # the new name's content is its first name's
        os.link(zone / "top2.txt", zone / "a/second-name.txt")
    else:
        (zone / "top3.txt").unlink()
        (zone / "top3.txt").mkdir()
    now = diff(history)
    second = history.make("alice", "second")
    assert second is not None
    between = diff(history, str(first.number), str(second.number))
    assert (now.added, now.modified, now.deleted) == (between.added, between.modified, between.deleted)
    assert not now.empty
    assert now.details == between.details
