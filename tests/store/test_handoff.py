"""Seed 001 module B (handoffs), through the store."""

from __future__ import annotations

import json

import pytest

from omxfs.errors import InvalidInput, NotFound, ZoneDenied
from omxfs.store import Workspace


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
