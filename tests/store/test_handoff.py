"""Seed 001 module B (handoffs), through the store."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import shutil
from collections.abc import Iterator

import pytest

from omxfs.errors import InvalidInput, NotFound, ZoneDenied
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from omxfs.store.records import sha256


def test_B_1_handoff_writes_file_and_metadata(ws: Workspace) -> None:
    meta = ws.handoff.deliver("alice", "bob", "data.csv", b"1,2,3", "请分析这份数据")
    box = ws.root / "handoff/alice_to_bob"
    assert (box / "data.csv").read_bytes() == b"1,2,3"
    on_disk = json.loads((box / "data.csv.meta.json").read_text("utf-8"))
    assert on_disk["from"] == "alice" and on_disk["to"] == "bob"
    assert on_disk["message"] == "请分析这份数据" and on_disk["timestamp"]
    assert on_disk["sha256"] == meta.sha256


def test_B_2_recipient_sees_every_delivery(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"1,2,3", "请分析")
    ws.handoff.deliver("charlie", "bob", "config.json", b"{}", "新配置")
    ws.handoff.deliver("alice", "charlie", "other.txt", b"not for bob", "x")
    inbox = ws.handoff.inbox("bob")
    assert len(inbox) == 2
    assert {(m.sender, m.filename, m.message) for m in inbox} == {
        ("alice", "data.csv", "请分析"),
        ("charlie", "config.json", "新配置"),
    }


def test_B_3_empty_inbox(ws: Workspace) -> None:
    assert ws.handoff.inbox("bob") == []


def test_B_4_read_delivery(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"1,2,3", "请分析")
    delivery = ws.handoff.read("alice", "bob", "data.csv")
    assert delivery.content == b"1,2,3" and delivery.meta.sender == "alice"


def test_B_5_redelivery_replaces_content_and_message(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", "旧数据".encode(), "first")
    ws.handoff.deliver("alice", "bob", "data.csv", "新数据".encode(), "更新了")
    delivery = ws.handoff.read("alice", "bob", "data.csv")
    assert delivery.content.decode() == "新数据" and delivery.meta.message == "更新了"
    assert len(ws.handoff.inbox("bob")) == 1


def test_only_the_sender_delivers(ws: Workspace) -> None:
    with pytest.raises(ZoneDenied):
        ws.handoff.deliver("charlie", "bob", "data.csv", b"x", "spoof", sender="alice")
    assert not (ws.root / "handoff/alice_to_bob").exists()


def test_metadata_is_generated_and_read_only(ws: Workspace) -> None:
    with pytest.raises(ZoneDenied):
        ws.handoff.deliver("alice", "bob", "data.csv.meta.json", b"{}", "forged")


def test_set_message_rewrites_metadata(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"1", "")
    ws.handoff.set_message("alice", "bob", "data.csv", "now with a message")
    assert ws.handoff.read("alice", "bob", "data.csv").meta.message == "now with a message"
    with pytest.raises(ZoneDenied):
        ws.handoff.set_message("bob", "alice", "data.csv.meta.json", "x")


def test_delivery_to_unknown_or_self_is_refused(ws: Workspace) -> None:
    with pytest.raises(NotFound):
        ws.handoff.deliver("alice", "nobody", "x", b"x")
    with pytest.raises(InvalidInput):
        ws.handoff.deliver("alice", "alice", "x", b"x")


def test_file_without_metadata_still_shows(ws: Workspace) -> None:
    """A crash between the file and its metadata leaves a delivery that is still listed, not lost."""
    ws.handoff.deliver("alice", "bob", "data.csv", b"1,2,3", "m")
    (ws.root / "handoff/alice_to_bob/data.csv.meta.json").unlink()
    [meta] = ws.handoff.inbox("bob")
    assert meta.filename == "data.csv" and meta.message == "" and meta.sender == "alice"


def test_sender_retracts_a_delivery(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"1,2,3", "m")
    ws.handoff.deliver("alice", "bob", "keep.csv", b"4", "m")
    with pytest.raises(ZoneDenied):
        ws.handoff.retract("bob", "alice", "data.csv", sender="alice")
    ws.handoff.retract("alice", "bob", "data.csv")
    box = ws.root / "handoff/alice_to_bob"
    assert not (box / "data.csv").exists() and not (box / "data.csv.meta.json").exists()
    assert [m.filename for m in ws.handoff.inbox("bob")] == ["keep.csv"]
    with pytest.raises(NotFound):
        ws.handoff.retract("alice", "bob", "data.csv")


# -- the delivery history: a re-delivery keeps the earlier delivery (issue 27) ------------------------------------


def test_a_redelivery_keeps_the_earlier_delivery_readable(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"old", "first")
    ws.handoff.deliver("alice", "bob", "data.csv", b"new", "second")
    kept = ws.handoff.deliveries("alice", "bob", "data.csv")
    assert [(k.number, k.meta.message) for k in kept] == [(1, "first"), (2, "second")]
    earlier = ws.handoff.kept("alice", "bob", "data.csv", 1)
    assert earlier.content == b"old" and earlier.meta.message == "first" and earlier.meta.sender == "alice"
    assert ws.handoff.read("alice", "bob", "data.csv").content == b"new"  # handoff/ shows the latest only
    assert len(ws.handoff.inbox("bob")) == 1
    with pytest.raises(NotFound, match="has no delivery 3"):
        ws.handoff.kept("alice", "bob", "data.csv", 3)


def test_a_retracted_delivery_stays_in_the_history(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "dir/report.md", b"draft", "look")
    ws.handoff.retract("alice", "bob", "dir/report.md")
    assert ws.handoff.inbox("bob") == []
    assert ws.handoff.kept("alice", "bob", "dir/report.md", 1).content == b"draft"


def test_a_delivery_made_before_the_history_is_kept_when_it_is_replaced(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"from an older store", "old")
    shutil.rmtree(ws.meta / "deliveries")  # as a store from before the history has it
    ws.handoff.deliver("alice", "bob", "data.csv", b"newer", "new")
    contents = [
        ws.handoff.kept("alice", "bob", "data.csv", k.number).content
        for k in ws.handoff.deliveries("alice", "bob", "data.csv")
    ]
    assert contents == [b"from an older store", b"newer"]


@contextlib.contextmanager
def _no_lock(name: str) -> Iterator[None]:
    yield


def _deliver_many(root: str, tag: str, count: int) -> None:
    """Deliveries from a process whose locks hold nothing, as on a shared filesystem whose clients share none."""
    ws = Workspace(root)
    ws.locks.hold = _no_lock  # type: ignore[method-assign]
    for n in range(count):
        ws.handoff.deliver("alice", "bob", "data.csv", f"{tag} {n}".encode(), tag)


def test_deliveries_from_two_unlocked_processes_at_once_are_all_kept(ws: Workspace) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_deliver_many, args=(str(ws.root), tag, 15)) for tag in ("one", "two")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    kept = ws.handoff.deliveries("alice", "bob", "data.csv")
    assert len(kept) == 30 and len({(k.meta.sha256, k.meta.timestamp) for k in kept}) == 30  # each once
    contents = {ws.handoff.kept("alice", "bob", "data.csv", k.number).content for k in kept}
    assert contents == {f"{tag} {n}".encode() for tag in ("one", "two") for n in range(15)}
    assert fsck(ws).clean


def test_fsck_knows_the_delivery_history(ws: Workspace) -> None:
    ws.handoff.deliver("alice", "bob", "data.csv", b"kept", "x")
    blobs = ws.meta / "deliveries/blobs"
    stray = blobs / sha256(b"never recorded")[:2] / sha256(b"never recorded")
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"never recorded")  # a delivery killed between its content and its record
    assert [f.kind for f in fsck(ws, temp_grace=0).findings] == ["unreferenced-delivery-blob"]
    fsck(ws, repair=True, temp_grace=0)
    assert not stray.exists() and fsck(ws).clean
    (blobs / sha256(b"kept")[:2] / sha256(b"kept")).unlink()
    found = fsck(ws).findings
    assert [f.kind for f in found] == ["missing-delivery-blob"] and found[0].is_corruption
