"""``omxfs fsck`` on realtime documents: writers' files are checked, a lagging merged file is debris it rewrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omxfs.crdt import Document, PNCounter
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from omxfs.store.layout import WRITERS

SCHEMA = {"title": "lww_register", "votes": "pn_counter"}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    ws.realtime.create("alice", "board", SCHEMA)
    for agent in ("alice", "bob"):
        Workspace(ws.root).realtime.update(agent, "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 2))
    return ws


def kinds(ws: Workspace, repair: bool = False) -> list[str]:
    return sorted(f.kind for f in fsck(ws, repair=repair).findings)


def folder(ws: Workspace) -> Path:
    return ws.realtime.state_dir / WRITERS / "board"


def test_documents_with_writer_files_are_clean(ws: Workspace) -> None:
    report = fsck(ws)
    assert report.clean, [f.line() for f in report.findings]
    assert report.checked == {"realtime documents": 1, "realtime writer files": 2}


def test_killed_before_the_merged_file_was_refreshed_leaves_it_stale(ws: Workspace) -> None:
    merged = ws.realtime.state_dir / "board.crdt.json"
    behind = Document("board", SCHEMA)
    merged.unlink()
    merged.write_text(json.dumps(behind.to_json()))  # as if no refresh had happened since the creation
    assert Workspace(ws.root).realtime.snapshot("board")["fields"]["votes"] == 4  # readers merge the writers
    assert kinds(ws) == ["stale-state"]
    assert kinds(ws, repair=True) == ["stale-state"]
    assert json.loads(merged.read_bytes())["fields"]["votes"]["p"] != {}
    assert Document.from_json(json.loads(merged.read_bytes())) == Workspace(ws.root).realtime.load("board")
    assert fsck(ws).clean


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("alice+00.1.crdt.json", b"not json"),
        ("alice+00.1.crdt.json", json.dumps(Document("other", SCHEMA).to_json()).encode()),
        ("alice+00.1.crdt.json", json.dumps(Document("board", {"title": "rga"}).to_json()).encode()),
        ("stray.txt", b"x"),
    ],
)
def test_bad_writer_files_are_corruption(ws: Workspace, name: str, content: bytes) -> None:
    (folder(ws) / name).write_bytes(content)
    report = fsck(ws, repair=True)
    assert [(f.kind, f.path.rsplit("/", 1)[-1], f.repaired) for f in report.findings] == [("bad-state", name, False)]


def test_writer_files_of_no_document_are_corruption(ws: Workspace) -> None:
    (ws.realtime.state_dir / WRITERS / "gone").mkdir()
    assert [(f.kind, f.path) for f in fsck(ws).findings] == [("bad-state", f"realtime/.crdt_state/{WRITERS}/gone")]
