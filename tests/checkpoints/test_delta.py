"""Checkpoints written as what differs from an earlier one written whole (``manifest.as_delta``), on a real store:
read back exactly, in this process and in a new one, restored, pruned and checked by fsck."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from omxfs.checkpoints import ZoneHistory, restore
from omxfs.checkpoints.history import forget_parsed_manifests
from omxfs.checkpoints.manifest import DELTA_FORMAT, FORMAT, Manifest
from omxfs.checkpoints.scan import RACY_NS
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from omxfs.store.layout import manifest_name
from tests.checkpoints.conftest import tree_state


def _tree(zone: Path, dirs: int = 8, files: int = 12) -> None:
    for d in range(dirs):
        (zone / f"d{d}").mkdir()
        for f in range(files):
            (zone / f"d{d}/f{f}.txt").write_text(f"{d}/{f}\n")
    # older than a checkpoint's racy margin: else the next checkpoint reads them all again, as new entries
    time.sleep(RACY_NS / 1e9 + 0.05)


def _head(history: ZoneHistory, number: int) -> dict[str, object]:
    text = (history.manifests_dir / manifest_name(number)).read_text()
    return json.loads(text[: text.index(', "entries": [')] + "}")


def _fresh(history: ZoneHistory, number: int) -> Manifest:
    """Checkpoint ``number`` as a new process reads it: from its file (and its base's)."""
    forget_parsed_manifests()
    return ZoneHistory(history.ws, history.zone).load(number)


def _whole_scan(ws: Workspace, zone: str) -> Manifest:
    """The zone as a checkpoint written whole has it, in a store of its own (the reference to compare with)."""
    other = Workspace.init(ws.root.parent / f"reference-{zone}", agents=[zone])
    target = other.root / "agents" / zone
    shutil.rmtree(target)
    shutil.copytree(ws.root / "agents" / zone, target, symlinks=True)
    made = ZoneHistory(other, zone).make(zone, "reference")
    assert made is not None and made.base is None
    return made


def test_a_few_changes_are_written_as_a_delta_that_reads_back_as_the_whole_zone(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    _tree(zone)
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None and first.base is None and _head(history, 1)["format"] == FORMAT
    (zone / "d1/f3.txt").write_text("changed\n")  # changed
    (zone / "d2/f0.txt").unlink()  # removed
    shutil.rmtree(zone / "d5")  # a removed directory and everything in it
    (zone / "d3/new").mkdir()  # added, in the middle of the walk order
    (zone / "d3/new/g.txt").write_text("g\n")
    (zone / "a-first.txt").write_text("before every directory\n")
    os.symlink("d1/f3.txt", zone / "zz-link")
    second = history.make("alice", "second")
    assert second is not None and second.base == 1
    head = _head(history, 2)
    assert head["format"] == DELTA_FORMAT and head["base"] == 1
    assert sorted(head["removed"]) == sorted(["d2/f0.txt", "d5", *(f"d5/f{f}.txt" for f in range(12))])  # type: ignore[arg-type]
    whole_size = (history.manifests_dir / manifest_name(1)).stat().st_size
    assert (history.manifests_dir / manifest_name(2)).stat().st_size < whole_size / 5
    reference = _whole_scan(ws, "alice")
    for read in (second, _fresh(history, 2)):
        assert [e.path for e in read.entries] == [e.path for e in reference.entries]  # walk order
        assert [e.key() for e in read.entries] == [e.key() for e in reference.entries]
    assert _fresh(history, 2).blobs() == reference.blobs()


def test_a_delta_checkpoint_restores_the_zone_exactly(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    _tree(zone)
    history = ZoneHistory(ws, "alice")
    history.make("alice", "first")
    (zone / "d0/f0.txt").write_text("second state\n")
    (zone / "d7/extra").mkdir()
    second = history.make("alice", "second")
    assert second is not None and second.base == 1
    expected = tree_state(zone)
    shutil.rmtree(zone / "d0")
    (zone / "d7/f1.txt").write_text("later\n")
    forget_parsed_manifests()  # the restore reads checkpoint 2 from its files, as `omxfs restore` does
    done = restore(ZoneHistory(ws, "alice"), "alice", 2)
    assert tree_state(zone) == expected
    assert _fresh(history, done.undo).base == 1  # the undo, too, is written against the first
    restore(ZoneHistory(ws, "alice"), "alice", done.undo)
    assert (zone / "d7/f1.txt").read_text() == "later\n" and not (zone / "d0").exists()


def test_a_checkpoint_that_changes_much_is_written_whole_and_is_the_next_base(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    _tree(zone)
    history = ZoneHistory(ws, "alice")
    history.make("alice", "first")
    for d in range(4):  # half the zone
        for f in range(12):
            (zone / f"d{d}/f{f}.txt").write_text("rewritten\n")
    time.sleep(RACY_NS / 1e9 + 0.05)  # else the third reads them again
    second = history.make("alice", "second")
    assert second is not None and second.base is None and _head(history, 2)["format"] == FORMAT
    (zone / "d6/f6.txt").write_text("one more\n")
    third = history.make("alice", "third")
    assert third is not None and third.base == 2
    assert _fresh(history, 3).by_path()["d6/f6.txt"].sha256 == third.by_path()["d6/f6.txt"].sha256


def test_a_prune_keeps_the_checkpoint_a_kept_one_is_written_against(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    _tree(zone, dirs=4)
    history = ZoneHistory(ws, "alice")
    history.make("alice", "base")
    for n in range(3):
        (zone / "d0/f0.txt").write_text(f"state {n}\n")
        history.make("alice", f"state {n}")
    assert [_fresh(history, n).base for n in (2, 3, 4)] == [1, 1, 1]
    pruned = history.prune("alice", 1)
    assert pruned.manifests == [2, 3] and pruned.bases == [1]  # 1 stays: 4 is written against it
    assert history.numbers() == [1, 4]
    assert _fresh(history, 4).by_path()["d0/f0.txt"].size == len("state 2\n")
    assert not fsck(ws).corrupt  # the pruned ones' blobs are younger than the grace: debris, kept


def test_fsck_reports_a_delta_whose_base_is_gone(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    _tree(zone, dirs=4)
    history = ZoneHistory(ws, "alice")
    history.make("alice", "base")
    (zone / "d0/f0.txt").write_text("changed\n")
    history.make("alice", "delta")
    (history.manifests_dir / manifest_name(1)).unlink()  # removed by hand, or by a tool that knows no deltas
    forget_parsed_manifests()
    report = fsck(ws)
    bad = [f for f in report.corrupt if f.kind == "bad-manifest"]
    assert len(bad) == 1 and "2.json" in bad[0].path and "checkpoint 1, which is gone" in bad[0].detail


def test_a_checkpoint_whose_base_was_pruned_meanwhile_is_written_whole(ws: Workspace) -> None:
    """A prune that ran while a checkpoint was being made (it saw none written against that base): the checkpoint
    is written whole rather than against a base that is gone."""
    zone = ws.root / "agents/alice"
    _tree(zone, dirs=4)
    history = ZoneHistory(ws, "alice")
    history.make("alice", "base")
    (zone / "d0/f0.txt").write_text("changed\n")
    history.make("alice", "delta")  # this process keeps it parsed, with its base
    (history.manifests_dir / manifest_name(1)).unlink()
    (zone / "d1/f1.txt").write_text("changed too\n")
    third = history.make("alice", "after the prune")
    assert third is not None and third.base is None
    assert _fresh(history, 3).by_path()["d1/f1.txt"].size == len("changed too\n")
