"""Seed 001 module C (collaborative zone, version control), through the store."""

from __future__ import annotations

import json
import stat

import pytest

from omxfs.errors import Conflict, InvalidInput, NotFound
from omxfs.store import Workspace
from omxfs.store.records import sha256


def test_C_1_create_gets_version_1(ws: Workspace) -> None:
    entry = ws.collab.write("alice", "plan.md", "初稿".encode(), expected_version=-1, message="创建文档")
    assert entry.version == 1
    assert (ws.root / "collaborative/current/plan.md").read_text("utf-8") == "初稿"
    [h] = ws.collab.history("plan.md")
    assert (h.version, h.author, h.message) == (1, "alice", "创建文档")


def test_C_2_sequential_edit(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", "初稿".encode(), expected_version=-1)
    seen = ws.collab.read("plan.md")
    assert seen.version == 1 and seen.content.decode() == "初稿"
    entry = ws.collab.write("bob", "plan.md", "修改稿".encode(), expected_version=seen.version, message="补充内容")
    assert entry.version == 2
    assert ws.collab.read("plan.md").content.decode() == "修改稿"


def test_C_3_stale_write_is_a_conflict(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", "初稿".encode(), expected_version=-1)
    alice_base = ws.collab.read("plan.md").version
    bob_base = ws.collab.read("plan.md").version
    assert ws.collab.write("alice", "plan.md", "Alice的修改".encode(), expected_version=alice_base).version == 2
    with pytest.raises(Conflict) as err:
        ws.collab.write("bob", "plan.md", "Bob的修改".encode(), expected_version=bob_base)
    info = err.value.info
    assert info["current_version"] == 2
    assert info["current_content"] == "Alice的修改"
    assert info["current_author"] == "alice"
    assert info["your_content"] == "Bob的修改"
    assert info["your_base"] == 1
    assert "expected_version=2" in info["suggestion"] and "merge" in info["suggestion"]
    assert ws.collab.read("plan.md").content.decode() == "Alice的修改"
    assert len(ws.collab.history("plan.md")) == 2
    # Nothing is lost: Bob's rejected content and the recovery info are kept on disk.
    kept = ws.root / "collaborative/.conflicts/bob"
    assert (kept / "plan.md").read_text("utf-8") == "Bob的修改"
    assert json.loads((kept / "plan.md.json").read_text("utf-8"))["current_version"] == 2
    assert ws.collab.conflict_record("bob", "plan.md")["your_content"] == "Bob的修改"


def test_C_4_recover_after_conflict(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", "初稿".encode(), expected_version=-1)
    ws.collab.write("alice", "plan.md", "Alice的修改".encode(), expected_version=1)
    with pytest.raises(Conflict):
        ws.collab.write("bob", "plan.md", "Bob的修改".encode(), expected_version=1)
    latest = ws.collab.read("plan.md")
    assert latest.version == 2 and latest.content.decode() == "Alice的修改"
    entry = ws.collab.write(
        "bob",
        "plan.md",
        "合并后的内容".encode(),
        expected_version=latest.version,
        message="合并Alice和Bob的修改",
    )
    assert entry.version == 3
    assert ws.collab.read("plan.md").content.decode() == "合并后的内容"


def test_C_5_history_ascending(ws: Workspace) -> None:
    for i, agent in enumerate(["alice", "bob", "charlie"]):
        ws.collab.write(agent, "plan.md", f"v{i + 1}".encode(), expected_version=i, message=f"edit {i + 1}")
    history = ws.collab.history("plan.md")
    assert [h.version for h in history] == [1, 2, 3]
    assert [h.author for h in history] == ["alice", "bob", "charlie"]
    assert all(h.message and h.timestamp for h in history)
    assert history == sorted(history, key=lambda h: h.timestamp)


def test_C_6_rollback_is_a_new_version(ws: Workspace) -> None:
    for i, text in enumerate(["初稿", "二稿", "三稿"]):
        ws.collab.write("alice", "plan.md", text.encode(), expected_version=i)
    entry = ws.collab.rollback("alice", "plan.md", 1)
    assert entry.version == 4
    assert ws.collab.read("plan.md").content.decode() == "初稿"
    history = ws.collab.history("plan.md")
    assert len(history) == 4 and "1" in history[-1].message and "rollback" in history[-1].message
    assert ws.collab.read_version("plan.md", 3).decode() == "三稿"


def test_C_7_read_missing_file(ws: Workspace) -> None:
    with pytest.raises(NotFound):
        ws.collab.read("nonexistent.md")


def test_C_8_minus_one_means_no_check(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", b"1", expected_version=-1)
    ws.collab.write("alice", "plan.md", b"2", expected_version=1)
    assert ws.collab.write("alice", "plan.md", b"3", expected_version=-1).version == 3


def test_expected_zero_means_create_only(ws: Workspace) -> None:
    assert ws.collab.write("alice", "new.md", b"a", expected_version=0).version == 1
    with pytest.raises(Conflict) as err:
        ws.collab.write("bob", "new.md", b"b", expected_version=0)
    assert err.value.info["current_version"] == 1


def test_conflict_on_a_file_that_does_not_exist(ws: Workspace) -> None:
    with pytest.raises(Conflict) as err:
        ws.collab.write("alice", "ghost.md", b"x", expected_version=3)
    assert err.value.info["current_version"] == 0
    assert ws.collab.list() == []


def test_every_version_is_kept_immutable_with_checksums(ws: Workspace) -> None:
    for i in range(5):
        ws.collab.write("alice", "docs/plan.md", f"content {i}".encode(), expected_version=i)
    for h in ws.collab.history("docs/plan.md"):
        data = ws.collab.read_version("docs/plan.md", h.version)
        assert sha256(data) == h.sha256
        mode = (ws.root / f"collaborative/.versions/docs/plan.md/v{h.version}.txt").stat().st_mode
        assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert ws.collab.list() == ["docs/plan.md"]


def test_default_message_names_the_writer(ws: Workspace) -> None:
    ws.collab.write("bob", "a.md", b"x", expected_version=-1)
    assert ws.collab.history("a.md")[0].message == "write by bob"


def test_file_and_directory_cannot_share_a_path(ws: Workspace) -> None:
    ws.collab.write("alice", "notes", b"x", expected_version=-1)
    with pytest.raises(InvalidInput):
        ws.collab.write("alice", "notes/inner.md", b"y", expected_version=-1)
    ws.collab.write("alice", "dir/inner.md", b"y", expected_version=-1)
    with pytest.raises(InvalidInput):
        ws.collab.write("alice", "dir", b"z", expected_version=-1)
    assert ws.collab.list() == ["dir/inner.md", "notes"]


def test_bad_expected_version_is_invalid(ws: Workspace) -> None:
    with pytest.raises(InvalidInput):
        ws.collab.write("alice", "a.md", b"x", expected_version=-2)
    with pytest.raises(InvalidInput):
        ws.collab.read_version("a.md", 0)


def test_rejected_write_is_kept_even_where_its_usual_place_is_taken(ws: Workspace) -> None:
    """Regression: a rejected ``a/b`` made ``.conflicts/alice/a`` a directory; a rejected ``a`` is still kept."""
    with pytest.raises(Conflict):
        ws.collab.write("alice", "a/b", b"first", expected_version=3)
    ws.collab.write("bob", "a", b"bob's", expected_version=0)
    with pytest.raises(Conflict) as err:
        ws.collab.write("alice", "a", b"second", expected_version=0)
    kept = ws.root / err.value.info["kept_at"]
    assert kept.read_bytes() == b"second"
    assert json.loads(kept.with_name(kept.name + ".json").read_text("utf-8"))["your_content"] == "second"
    assert (ws.root / "collaborative/.conflicts/alice/a/b").read_bytes() == b"first"


def test_booleans_are_not_version_numbers(ws: Workspace) -> None:
    ws.collab.write("alice", "a.md", b"x", expected_version=-1)
    with pytest.raises(InvalidInput):
        ws.collab.write("alice", "a.md", b"y", expected_version=True)
    with pytest.raises(InvalidInput):
        ws.collab.read_version("a.md", True)
    assert ws.collab.current_version("a.md") == 1
