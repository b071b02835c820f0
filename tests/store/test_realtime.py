"""Seed 001 module I at the store level: documents that persist, restore and merge remote states."""

from __future__ import annotations

import json

import pytest

from omxfs.crdt import Document, PNCounter
from omxfs.errors import AlreadyExists, InvalidInput, NotFound
from omxfs.store import Workspace

BOARD = {
    "title": "lww_register",
    "body": "rga",
    "members": "or_set",
    "settings": "lww_map",
    "view_count": "pn_counter",
}


def fill_board(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda d, r: d.field("title").set("看板", r))
    ws.realtime.update("alice", "board", lambda d, r: d.field("body").insert(0, "描述", r))
    ws.realtime.update("alice", "board", lambda d, r: d.field("members").add("alice", r))
    ws.realtime.update("bob", "board", lambda d, r: d.field("members").add("bob", r))
    ws.realtime.update("bob", "board", lambda d, r: d.field("view_count").increment(r, 5))


def test_I_3_missing_document(ws: Workspace) -> None:
    with pytest.raises(NotFound, match="nonexistent"):
        ws.realtime.snapshot("nonexistent")


def test_I_6_state_persists_across_restart(ws: Workspace) -> None:
    fill_board(ws)
    assert (ws.root / "realtime/.crdt_state/board.crdt.json").is_file()
    before = ws.realtime.load("board")
    restarted = Workspace(ws.root)  # a new store object: nothing in memory survives
    after = restarted.realtime.load("board")
    assert after == before
    snap = restarted.realtime.snapshot("board")
    assert snap["fields"]["title"] == "看板" and snap["fields"]["view_count"] == 5
    assert sorted(snap["fields"]["members"]) == ["alice", "bob"]


def test_schema_is_fixed_after_creation(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    with pytest.raises(AlreadyExists):
        ws.realtime.create("bob", "board", {"title": "rga"})
    assert ws.realtime.load("board").schema == BOARD


def test_failed_change_persists_nothing(ws: Workspace) -> None:
    fill_board(ws)
    before = (ws.root / "realtime/.crdt_state/board.crdt.json").read_bytes()

    def bad(doc: Document, replica: str) -> None:
        doc.field("view_count").increment(replica, 1)
        doc.field("no_such_field")

    with pytest.raises(NotFound):
        ws.realtime.update("alice", "board", bad)
    assert (ws.root / "realtime/.crdt_state/board.crdt.json").read_bytes() == before


def test_merge_remote_state_never_overwrites(ws: Workspace) -> None:
    ws.realtime.create("alice", "score", {"n": "pn_counter"})
    remote = ws.realtime.load("score")
    ws.realtime.update("alice", "score", lambda d, r: d.field("n").increment(r, 10))
    counter = remote.typed("n", PNCounter)
    counter.increment("alice+elsewhere", 5)  # alice's replica on another machine (FR-4.9)
    merged = ws.realtime.merge_state("alice", "score", json.dumps(remote.to_json()))
    assert merged.snapshot()["fields"]["n"] == 15
    ws.realtime.merge_state("alice", "score", remote.to_json())  # idempotent
    assert ws.realtime.snapshot("score")["fields"]["n"] == 15


def test_merge_refuses_other_documents_and_garbage(ws: Workspace) -> None:
    ws.realtime.create("alice", "score", {"n": "pn_counter"})
    other = Document("other", {"n": "pn_counter"})
    with pytest.raises(InvalidInput):
        ws.realtime.merge_state("alice", "score", other.to_json())
    with pytest.raises(InvalidInput):
        ws.realtime.merge_state("alice", "score", "{not json")
    differently_shaped = Document("score", {"n": "lww_register"})
    with pytest.raises(InvalidInput):
        ws.realtime.merge_state("alice", "score", differently_shaped.to_json())
    assert ws.realtime.snapshot("score")["fields"]["n"] == 0


def test_list_and_bad_ids(ws: Workspace) -> None:
    ws.realtime.create("alice", "b", {"x": "rga"})
    ws.realtime.create("alice", "a", {"x": "rga"})
    assert ws.realtime.list() == ["a", "b"]
    for bad in ["../x", ".hidden", "", "a/b"]:
        with pytest.raises(InvalidInput):
            ws.realtime.create("alice", bad, {"x": "rga"})


def test_a_change_that_changes_nothing_is_not_written(ws: Workspace) -> None:
    ws.realtime.create("alice", "score", {"n": "pn_counter"})
    ws.realtime.update("alice", "score", lambda d, r: d.field("n").increment(r, 1))
    state = ws.root / "realtime/.crdt_state/score.crdt.json"
    before = state.stat()
    ws.realtime.update("bob", "score", lambda d, r: d.field("n").value())
    ws.realtime.merge_state("bob", "score", ws.realtime.load("score").to_json())
    after = state.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    ws.realtime.update("bob", "score", lambda d, r: d.field("n").increment(r, 1))
    assert state.stat().st_ino != before.st_ino
    assert ws.realtime.snapshot("score")["fields"]["n"] == 2
