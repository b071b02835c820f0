"""``omxfs fsck``: every crash state the store's write order allows is found and repaired; corruption is reported.

Each crash state is built the way a SIGKILL between two writes leaves it, then fsck must name it, ``--repair``
must complete it, and a second run must find the store clean.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath

import pytest
from click.testing import CliRunner

from cli.omxfs import main
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from omxfs.store.scratch import ScratchArea


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    ws.private.write("alice", "alice", "notes.md", b"n")
    ws.collab.write("alice", "plan.md", b"v1", expected_version=0)
    ws.collab.write("bob", "plan.md", b"v2", expected_version=1)
    ws.handoff.deliver("alice", "bob", "d.csv", b"1,2", "first")
    ws.realtime.create("alice", "board", {"title": "lww_register", "body": "rga"})
    return ws


def kinds(ws: Workspace, repair: bool = False) -> list[str]:
    return sorted(f.kind for f in fsck(ws, repair=repair).findings)


def test_a_healthy_store_is_clean(ws: Workspace) -> None:
    report = fsck(ws)
    assert report.clean, [f.line() for f in report.findings]
    assert report.checked == {"collaborative files": 1, "versions": 2, "deliveries": 1, "realtime documents": 1}


def test_killed_between_version_and_history_leaves_an_orphan_version(ws: Workspace) -> None:
    orphan = ws.collab.versions_dir / "plan.md" / "v3.txt"
    orphan.write_bytes(b"never acknowledged")
    assert kinds(ws) == ["orphan-version"]
    assert ws.collab.read("plan.md").content == b"v2"  # readers never saw it
    assert kinds(ws, repair=True) == ["orphan-version"]
    assert not orphan.exists()
    assert fsck(ws).clean


def test_killed_after_the_commit_point_the_version_is_read_from_its_staged_name(ws: Workspace) -> None:
    """The entry v3.json exists (version 3 is committed) but its content was never renamed, nor the history and
    current copy brought up to date: readers see version 3 all the same, and --repair finishes the commit."""
    directory = ws.collab.versions_dir / "plan.md"
    ws.collab.write("alice", "plan.md", b"v3", expected_version=2)
    staged = json.loads((directory / "v3.json").read_text())["staged"]
    (directory / "v3.txt").rename(directory / staged)
    history = (directory / "history.json").read_bytes()
    (directory / "history.json").write_bytes(history[: history.rindex(b",\n")] + b"\n]\n")
    (ws.collab.current_dir / "plan.md").write_bytes(b"v2")
    fresh = Workspace(ws.root)
    assert (fresh.collab.read("plan.md").version, fresh.collab.read("plan.md").content) == (3, b"v3")
    assert kinds(ws) == ["stale-current", "stale-history", "unfinished-version"]
    fsck(ws, repair=True)
    assert (directory / "v3.txt").read_bytes() == b"v3" and not (directory / staged).exists()
    assert [e.version for e in Workspace(ws.root).collab.history("plan.md")] == [1, 2, 3]
    assert json.loads((directory / "history.json").read_text())[-1]["version"] == 3
    assert fsck(ws).clean


def test_a_broken_history_is_only_a_copy_of_the_entries(ws: Workspace) -> None:
    (ws.collab.versions_dir / "plan.md" / "history.json").write_bytes(b"[{")
    assert [e.version for e in Workspace(ws.root).collab.history("plan.md")] == [1, 2]
    assert kinds(ws, repair=True) == ["stale-history"]
    assert fsck(ws).clean


def test_a_race_lost_or_killed_before_its_commit_point_leaves_only_old_temp_files(ws: Workspace) -> None:
    directory = ws.collab.versions_dir / "plan.md"
    staged, entry_tmp = directory / ".v3.0123456789abcdef.staged", directory / ".v3.json.0123456789abcdef.tmp"
    staged.write_bytes(b"never committed")
    entry_tmp.write_bytes(b"{")
    assert kinds(ws) == ["temp-file", "temp-file"]
    assert ws.collab.read("plan.md").version == 2
    os.utime(staged, (0, 0))
    os.utime(entry_tmp, (0, 0))
    fsck(ws, repair=True)
    assert not staged.exists() and not entry_tmp.exists()
    assert fsck(ws).clean


def test_killed_before_the_current_copy_leaves_a_stale_current(ws: Workspace) -> None:
    (ws.collab.current_dir / "plan.md").write_bytes(b"v1")
    assert kinds(ws) == ["stale-current"]
    fsck(ws, repair=True)
    assert (ws.collab.current_dir / "plan.md").read_bytes() == b"v2"
    assert fsck(ws).clean


def test_killed_between_delivery_and_metadata(ws: Workspace) -> None:
    (ws.handoff.dir / "alice_to_bob" / "d.csv.meta.json").unlink()
    assert kinds(ws) == ["missing-meta"]
    fsck(ws, repair=True)
    assert ws.handoff.meta("alice", "bob", "d.csv").sha256 == ws.handoff.read("alice", "bob", "d.csv").meta.sha256
    assert fsck(ws).clean


def test_killed_while_redelivering_and_while_retracting(ws: Workspace) -> None:
    (ws.handoff.dir / "alice_to_bob" / "d.csv").write_bytes(b"3,4")
    ws.handoff.deliver("alice", "bob", "gone.txt", b"g")
    (ws.handoff.dir / "alice_to_bob" / "gone.txt").unlink()
    assert kinds(ws) == ["dangling-meta", "stale-meta"]
    fsck(ws, repair=True)
    assert not (ws.handoff.dir / "alice_to_bob" / "gone.txt.meta.json").exists()
    assert fsck(ws).clean


def test_old_temp_files_are_removed_young_ones_left_to_their_writer(ws: Workspace) -> None:
    old, young = ws.meta / "tmp" / "a.old.tmp", ws.meta / "tmp" / "b.young.tmp"
    old.write_bytes(b"x")
    young.write_bytes(b"y")
    os.utime(old, (0, 0))
    report = fsck(ws, repair=True)
    assert [(f.path, f.repaired) for f in report.findings] == [
        (".omxfs/tmp/a.old.tmp", True),
        (".omxfs/tmp/b.young.tmp", False),
    ]
    assert not old.exists() and young.exists()


def test_a_missing_zone_is_recreated(ws: Workspace) -> None:
    (ws.root / "agents" / "bob").rmdir()
    assert kinds(ws, repair=True) == ["missing-zone"]
    assert (ws.root / "agents" / "bob").is_dir()


@pytest.mark.parametrize(
    ("damage", "kind"),
    [
        (lambda ws: (ws.collab.versions_dir / "plan.md" / "v2.json").write_bytes(b"[{"), "bad-entry"),
        (lambda ws: (ws.collab.versions_dir / "plan.md" / "v1.txt").unlink(), "missing-version"),
        (lambda ws: (ws.collab.versions_dir / "plan.md" / "v1.txt").write_bytes(b"tampered"), "bad-checksum"),
        (lambda ws: (ws.handoff.dir / "alice_to_bob" / "d.csv.meta.json").write_bytes(b"{}"), "bad-meta"),
        (lambda ws: (ws.realtime.state_dir / "board.crdt.json").write_bytes(b"not json"), "bad-state"),
        (lambda ws: (ws.realtime.state_dir / "board.crdt.json").write_text('{"doc_id": "x"}'), "bad-state"),
        (lambda ws: (ws.meta / "config.toml").write_text("agents = ["), "bad-config"),
    ],
    ids=["history", "version-file", "checksum", "meta", "state-json", "state-shape", "config"],
)
def test_corruption_is_reported_and_not_guessed_at(ws: Workspace, damage: object, kind: str) -> None:
    assert callable(damage)
    damage(ws)
    (ws.collab.versions_dir / "plan.md").chmod(0o755)
    before = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and ".omxfs" not in p.parts}
    report = fsck(ws, repair=True)
    assert [f.kind for f in report.corrupt] == [kind]
    assert not report.clean
    after = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and ".omxfs" not in p.parts}
    assert after == before  # repair never touches what it cannot understand


def test_cli_fsck_reports_repairs_and_exits_by_what_is_left(ws: Workspace) -> None:
    (ws.collab.current_dir / "plan.md").write_bytes(b"v1")
    runner = CliRunner()
    checked = runner.invoke(main, ["fsck", str(ws.root)])
    assert checked.exit_code == 1
    assert "stale-current" in checked.output and "collaborative/current/plan.md" in checked.output
    repaired = runner.invoke(main, ["fsck", str(ws.root), "--repair"])
    assert repaired.exit_code == 0, repaired.output
    assert "repaired" in repaired.output
    clean = runner.invoke(main, ["fsck", str(ws.root)])
    assert clean.exit_code == 0
    assert "0 corrupt, 0 unresolved" in clean.output
    (ws.realtime.state_dir / "board.crdt.json").write_text(json.dumps([1]))
    broken = runner.invoke(main, ["fsck", str(ws.root), "--repair"])
    assert broken.exit_code == 1 and "CORRUPT" in broken.output and "Traceback" not in broken.output


def test_cli_fsck_of_a_non_workspace_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fsck", str(tmp_path)])
    assert result.exit_code == 1
    assert "not an omx workspace" in result.output


def test_scratch_of_an_agent_that_is_not_configured_is_stray(ws: Workspace) -> None:
    """The scratch area is the store's: an agent's editors' temp files stay; those of no configured agent go."""
    ScratchArea(ws).write("alice", PurePosixPath("collaborative/current/.plan.md.swp"), b"swap")
    ScratchArea(ws).write("carol", PurePosixPath("handoff/.x.swp"), b"swap")
    assert kinds(ws) == ["stray-scratch"]
    assert kinds(ws, repair=True) == ["stray-scratch"]
    assert fsck(ws).clean
    assert ScratchArea(ws).agents() == ["alice"]


def test_i15_a_shared_name_not_in_nfc_form_is_reported_as_unreachable(ws: Workspace) -> None:
    """Issue 15 (names): the mount looks shared names up in NFC form, so a store file named in NFD (made by hand, by
    a macOS tool on the store, or before names were normalised) cannot be reached through it: fsck says so."""
    composed, decomposed = "caf\u00e9.md", "cafe\u0301.md"
    ws.collab.write("alice", composed, b"v1", expected_version=0)
    zone = ws.collab
    os.rename(zone.versions_dir / composed, zone.versions_dir / decomposed)
    os.rename(zone.current_dir / composed, zone.current_dir / decomposed)
    report = fsck(ws)
    found = [f for f in report.findings if f.kind == "unreachable-name"]
    assert [f.path for f in found] == [f"collaborative/{decomposed}"]
    assert composed in found[0].detail
    assert found[0].is_corruption and not fsck(ws, repair=True).clean  # reported, never guessed at
    assert kinds(ws) == ["unreachable-name"]
