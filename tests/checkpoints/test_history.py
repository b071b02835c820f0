"""``omxfs.checkpoints.history``: checkpoints made, numbered, listed and pruned on a real store."""

from __future__ import annotations

import json
import os
import time

import pytest

from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.history import PRUNE_GRACE
from omxfs.errors import InvalidInput, ZoneDenied
from omxfs.store import Workspace
from omxfs.store.layout import BLOBS, CHECKPOINTS, MANIFESTS, manifest_name


def _blob_files(ws: Workspace, zone: str) -> list[str]:
    root = ws.meta / CHECKPOINTS / zone / BLOBS
    return sorted(name for _, _, names in os.walk(root) for name in names)


def test_a_file_unchanged_since_the_last_checkpoint_adds_no_blob_bytes(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "big.bin").write_bytes(os.urandom(1 << 20))
    (zone / "notes.md").write_text("one\n")
    history = ZoneHistory(ws, "alice")
    first = history.make("alice", "first")
    assert first is not None and first.bytes_added == (1 << 20) + 4
    blobs = _blob_files(ws, "alice")
    (zone / "notes.md").write_text("two\n")
    second = history.make("alice", "second")
    assert second is not None
    assert second.bytes_added == 4  # only the changed file's bytes
    assert len(_blob_files(ws, "alice")) == len(blobs) + 1
    os.utime(zone / "big.bin")  # its stat changes, its content does not: read again, stored nowhere
    third = history.make("alice", "touched")
    assert third is not None and third.bytes_added == 0 and third.changed == 1


def test_a_checkpoint_only_if_changed_is_skipped_when_nothing_changed(ws: Workspace) -> None:
    (ws.root / "agents/alice/a").write_text("a")
    history = ZoneHistory(ws, "alice")
    assert history.make("alice", only_if_changed=True) is not None
    assert history.make("alice", only_if_changed=True) is None
    assert history.numbers() == [1]


def test_a_number_another_writer_took_first_is_not_overwritten(ws: Workspace) -> None:
    """Two checkpoints of one zone at once (two daemons, two machines): the exclusive create gives each its own."""
    history = ZoneHistory(ws, "alice")
    assert history.make("alice", "one") is not None
    theirs = (history.manifests_dir / manifest_name(1)).read_bytes().replace(b'"number": 1', b'"number": 2')
    (history.manifests_dir / manifest_name(2)).write_bytes(theirs)  # the other writer's, made meanwhile
    real_numbers = history.numbers
    history.numbers = lambda: [1]  # type: ignore[method-assign]  # this writer listed before the other's create
    made = history.make("alice", "mine")
    history.numbers = real_numbers  # type: ignore[method-assign]
    assert made is not None and made.number == 3
    assert history.load(2).message == "one" and history.load(3).message == "mine"


def test_only_the_owner_or_a_supervisor_checkpoints_and_a_supervisor_is_audited(ws: Workspace) -> None:
    history = ZoneHistory(ws, "alice")
    with pytest.raises(ZoneDenied):
        history.make("bob", "not mine")
    assert history.numbers() == []
    made = history.make("boss", "supervised")
    assert made is not None and made.by == "boss"
    audit = json.dumps(ws.audit_trail().records)
    assert '"agent": "boss"' in audit and "checkpoint 1" in audit and "agents/alice" in audit


def test_prune_keeps_the_newest_and_the_blobs_they_name(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    history = ZoneHistory(ws, "alice")
    for n in range(4):
        (zone / "f").write_text(f"version {n}\n")
        history.make("alice", f"v{n}")
    with pytest.raises(InvalidInput):
        history.prune("alice", 0)
    past = time.time() - PRUNE_GRACE - 10
    for _, path in history.blobs.digests():
        os.utime(path, (past, past))  # written long ago: no checkpoint in progress can be about to name them
    pruned = history.prune("alice", 2)
    assert pruned.manifests == [1, 2] and pruned.blobs == 2
    assert history.numbers() == [3, 4]
    assert sorted(history.referenced()) == _blob_files(ws, "alice")
    assert (ws.meta / CHECKPOINTS / "alice" / MANIFESTS / manifest_name(4)).is_file()


def test_prune_leaves_young_unreferenced_blobs_a_checkpoint_may_be_about_to_name(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    history = ZoneHistory(ws, "alice")
    for n in range(3):
        (zone / "f").write_text(f"version {n}\n")
        history.make("alice", f"v{n}")
    pruned = history.prune("alice", 1)
    assert pruned.manifests == [1, 2] and pruned.blobs == 0
    assert len(_blob_files(ws, "alice")) == 3
