"""Seed 001 module A (private zones), through the store."""

from __future__ import annotations

import json
import os
import stat
from pathlib import PurePosixPath

import pytest

from omxfs.errors import InvalidInput, NotFound, ZoneDenied
from omxfs.store import Workspace


def test_A_1_write_own_zone(ws: Workspace) -> None:
    ws.private.write("alice", "alice", "notes.md", b"Hello World")
    assert (ws.root / "agents/alice/notes.md").read_bytes() == b"Hello World"


def test_A_2_overwrite_own_file(ws: Workspace) -> None:
    ws.private.write("alice", "alice", "notes.md", "旧内容".encode())
    ws.private.write("alice", "alice", "notes.md", "新内容".encode())
    assert (ws.root / "agents/alice/notes.md").read_text("utf-8") == "新内容"


def test_A_3_read_own_file(ws: Workspace) -> None:
    ws.private.write("alice", "alice", "notes.md", "我的笔记".encode())
    assert ws.private.read("alice", "notes.md").decode() == "我的笔记"


def test_A_4_read_other_agents_file(ws: Workspace) -> None:
    ws.private.write("bob", "bob", "report.md", "Bob的报告".encode())
    assert ws.private.read("bob", "report.md").decode() == "Bob的报告"


def test_A_5_write_other_zone_is_denied_and_changes_nothing(ws: Workspace) -> None:
    ws.private.write("bob", "bob", "report.md", b"bob's")
    with pytest.raises(ZoneDenied) as err:
        ws.private.write("alice", "bob", "report.md", b"alice was here")
    assert err.value.errno == 13  # EACCES
    with pytest.raises(ZoneDenied):
        ws.private.write("alice", "bob", "new.md", b"x")
    with pytest.raises(ZoneDenied):
        ws.private.delete("alice", "bob", "report.md")
    assert ws.private.list("bob") == ["report.md"]
    assert ws.private.read("bob", "report.md") == b"bob's"


def test_A_6_read_missing_file(ws: Workspace) -> None:
    with pytest.raises(NotFound, match=r"nonexistent\.md"):
        ws.private.read("alice", "nonexistent.md")


def test_A_7_list_files(ws: Workspace) -> None:
    for name in ("a.md", "b.txt", "c.json"):
        ws.private.write("alice", "alice", name, b"x")
    assert sorted(ws.private.list("alice")) == ["a.md", "b.txt", "c.json"]


def test_A_8_list_empty_zone(ws: Workspace) -> None:
    assert ws.private.list("bob") == []


def test_nested_paths_and_delete(ws: Workspace) -> None:
    ws.private.write("alice", "alice", "drafts/2026/a.md", b"a")
    assert ws.private.list("alice") == ["drafts/2026/a.md"]
    ws.private.delete("alice", "alice", "drafts/2026/a.md")
    assert ws.private.list("alice") == []
    with pytest.raises(NotFound):
        ws.private.delete("alice", "alice", "drafts/2026/a.md")


def test_supervisor_writes_anywhere_and_is_audited(ws: Workspace) -> None:
    ws.private.write("boss", "alice", "review.md", b"see me")
    assert ws.private.read("alice", "review.md") == b"see me"
    audit = json.dumps(ws.audit_trail().records)
    assert '"agent": "boss"' in audit and "agents/alice/review.md" in audit


@pytest.mark.parametrize("actor", ["mallory", "Alice", "al_ice", "", "../alice"])
def test_unknown_or_malformed_actor_is_refused(ws: Workspace, actor: str) -> None:
    with pytest.raises(ZoneDenied):
        ws.private.write(actor, "alice", "x.md", b"x")
    assert ws.private.list("alice") == []


@pytest.mark.parametrize(
    "path",
    ["../bob/x.md", "a/../../bob/x.md", "/etc/passwd", "", "a\x00b", "line\nbreak", "x" * 256, "a//../b", "\ud800"],
)
def test_paths_cannot_escape_the_zone(ws: Workspace, path: str) -> None:
    with pytest.raises(InvalidInput):
        ws.private.write("alice", "alice", path, b"x")
    assert ws.private.list("alice") == [] and ws.private.list("bob") == []


def test_symlink_inside_zone_is_not_followed(ws: Workspace) -> None:
    os.symlink("../bob", ws.root / "agents/alice/tobob")
    os.symlink("../bob/report.md", ws.root / "agents/alice/report-link")
    ws.private.write("bob", "bob", "report.md", b"bob's")
    with pytest.raises(InvalidInput):
        ws.private.write("alice", "alice", "tobob/evil.md", b"x")
    with pytest.raises(InvalidInput):
        ws.private.read("alice", "tobob/report.md")
    # Writing over a symlink replaces the link itself; it never writes through it.
    ws.private.write("alice", "alice", "report-link", b"alice's own")
    assert ws.private.read("bob", "report.md") == b"bob's"
    assert not (ws.root / "agents/alice/report-link").is_symlink()
    assert ws.private.list("bob") == ["report.md"]


def test_no_temp_files_are_left_in_zones(ws: Workspace) -> None:
    for i in range(20):
        ws.private.write("alice", "alice", "f.md", str(i).encode())
    assert os.listdir(ws.root / "agents/alice") == ["f.md"]
    assert os.listdir(ws.meta / "tmp") == []


# -- setattr through the mount (``PrivateZone.change``) ------------------------------------------------------------


def test_change_answers_with_the_attributes_it_made(ws: Workspace) -> None:
    ws.private.write("alice", "alice", "f.txt", b"x")
    path = PurePosixPath("agents/alice/f.txt")
    st = ws.private.change("alice", path, atime_ns=1_000_000_000, mtime_ns=2_000_000_000, mode=0o600)
    assert (st.st_atime_ns, st.st_mtime_ns, stat.S_IMODE(st.st_mode)) == (1_000_000_000, 2_000_000_000, 0o600)
    assert st == os.lstat(ws.root / path)


def test_change_stats_first_only_where_the_change_depends_on_the_node(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both times (``touch``, ``tar``, ``cp -a``) are one walk; one time of two keeps the other, so it stats first."""
    ws.private.write("alice", "alice", "f.txt", b"x")
    path = PurePosixPath("agents/alice/f.txt")
    before = os.lstat(ws.root / path)
    stats: list[PurePosixPath] = []
    lstat = ws.private.tree.lstat

    def counted(p: PurePosixPath) -> os.stat_result:
        stats.append(p)
        return lstat(p)

    monkeypatch.setattr(ws.private.tree, "lstat", counted)
    ws.private.change("alice", path, atime_ns=5_000_000_000, mtime_ns=6_000_000_000)
    assert stats == []
    st = ws.private.change("alice", path, mtime_ns=7_000_000_000)
    assert stats == [path] and (st.st_atime_ns, st.st_mtime_ns) == (5_000_000_000, 7_000_000_000)
    assert before.st_mtime_ns != st.st_mtime_ns
