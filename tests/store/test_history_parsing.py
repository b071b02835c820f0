"""A history read again is parsed only past what was already parsed, and anything else from scratch."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from omxfs.errors import StoreCorrupt
from omxfs.store import Workspace, collab
from omxfs.store.records import VersionEntry, append_history, dump_history, extend_history, load_history


def entry(version: int) -> VersionEntry:
    return VersionEntry(
        version=version,
        author="alice",
        timestamp="2026-01-01T00:00:00Z",
        message=f"m{version}",
        sha256="0" * 64,
    )


def carol(version: int) -> VersionEntry:
    return VersionEntry(**{**entry(version).to_json(), "author": "carol"})


def test_commits_by_another_process_are_picked_up_and_match_a_full_parse(ws: Workspace) -> None:
    reader = Workspace(ws.root)  # a second process's view, with its own cache
    ws.collab.write("alice", "plan.md", b"v1", expected_version=-1)
    assert [e.version for e in reader.collab.history("plan.md")] == [1]
    for n in range(2, 6):
        ws.collab.write("alice", "plan.md", b"v%d" % n, expected_version=-1)
    raw = (ws.root / "collaborative/.versions/plan.md/history.json").read_bytes()
    assert reader.collab.history("plan.md") == load_history(raw, "history.json")
    assert [e.version for e in reader.collab.history("plan.md")] == [1, 2, 3, 4, 5]


def test_only_the_appended_tail_is_parsed() -> None:
    known_raw = dump_history([entry(1), entry(2)])
    # Entries that differ from the file's head: finding them in the result proves the head was not parsed again.
    known = (carol(1), carol(2))
    raw = append_history(append_history(known_raw, entry(3)), entry(4))
    assert extend_history(raw, known_raw, known, "h") == (carol(1), carol(2), entry(3), entry(4))


def test_a_history_that_is_not_an_append_is_parsed_from_scratch() -> None:
    known_raw = dump_history([entry(1), entry(2)])
    raw = dump_history([carol(1), entry(2), entry(3)])
    assert extend_history(raw, known_raw, (entry(1), entry(2)), "h") == (carol(1), entry(2), entry(3))


@pytest.mark.parametrize(
    ("tail", "why"),
    [(b',\n{"version": 3, "broken\n]\n', "unreadable"), (b",\n" + dump_history([entry(4)])[2:], "version 4 where 3")],
)
def test_a_bad_tail_is_reported_as_corrupt(tail: bytes, why: str) -> None:
    known_raw = dump_history([entry(1), entry(2)])
    with pytest.raises(StoreCorrupt, match=why):
        extend_history(known_raw[:-3] + tail, known_raw, (entry(1), entry(2)), "h")


def test_latest_sees_every_commit_of_another_process_and_reads_each_entry_once(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Workspace(ws.root)  # another daemon or the CLI
    assert ws.collab.latest("plan.md") is None
    reads: list[PurePosixPath] = []
    real = collab.read_bytes

    def counted(root: Path, relative: PurePosixPath) -> bytes:
        data = real(root, relative)
        reads.append(relative)
        return data

    for n in range(1, 5):
        other.collab.write("bob", "plan.md", b"v%d" % n, expected_version=-1)
        with monkeypatch.context() as patch:  # count only this process's reads
            patch.setattr(collab, "read_bytes", counted)
            for _ in range(3):
                seen = ws.collab.latest("plan.md")
                assert seen is not None and (seen.version, seen.author) == (n, "bob")
        # entries never change: each is read once, when it is new, not once per question
        assert reads == [PurePosixPath(f"plan.md/v{k}.json") for k in range(1, n + 1)]


def test_a_commit_never_reads_back_the_history_it_wrote(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """At version N the history is N lines: reading it whole before each commit made commits slower with age."""
    other = Workspace(ws.root)
    ws.collab.write("alice", "plan.md", b"v1", expected_version=-1)
    reads: list[PurePosixPath] = []
    real_stat, real_bytes = collab.read_with_stat, collab.read_bytes

    def counted(root: Path, relative: PurePosixPath) -> tuple[bytes, os.stat_result]:
        reads.append(relative)
        return real_stat(root, relative)

    def counted_bytes(root: Path, relative: PurePosixPath) -> bytes:
        data = real_bytes(root, relative)
        reads.append(relative)
        return data

    monkeypatch.setattr(collab, "read_with_stat", counted)
    monkeypatch.setattr(collab, "read_bytes", counted_bytes)
    for n in range(2, 6):
        assert ws.collab.write("alice", "plan.md", b"v%d" % n, expected_version=n - 1).version == n
        assert ws.collab.current_version("plan.md") == n
    assert reads == []
    other.collab.write("bob", "plan.md", b"v6", expected_version=5)  # its first look at the file reads it
    assert ws.collab.write("alice", "plan.md", b"v7", expected_version=6).version == 7  # changed elsewhere: read
    assert ws.collab.write("alice", "plan.md", b"v8", expected_version=7).version == 8  # known again
    history = PurePosixPath("plan.md/history.json")
    # the other process's first look, then this one's: the entry it lacks, and the history to append to
    assert reads == [history, PurePosixPath("plan.md/v6.json"), history]
    assert [e.author for e in ws.collab.history("plan.md")] == ["alice"] * 5 + ["bob", "alice", "alice"]


def test_a_commit_syncs_what_it_rests_on_and_not_the_copies(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged content, the entry and their directory are fsynced (3); history.json and current/ are copies of
    them, redone by fsck after a machine crash, and skip their fsyncs: 7 fsyncs per commit made it 1.3x slower."""
    ws.collab.write("alice", "plan.md", b"v1", expected_version=-1)
    real, synced = os.fsync, []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    ws.collab.write("alice", "plan.md", b"v2", expected_version=1)
    assert len(synced) == 3


def test_a_history_from_before_entry_files_is_still_written_durably(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before entry files keeps its old versions only in history.json: its one record."""
    directory = ws.root / "collaborative/.versions/plan.md"
    directory.mkdir(parents=True)
    (directory / "history.json").write_bytes(dump_history([entry(1)]))
    (directory / "v1.txt").write_bytes(b"v1")
    real, synced = os.fsync, []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    assert ws.collab.write("alice", "plan.md", b"v2", expected_version=1).version == 2
    assert len(synced) == 3 + 2  # and the history: its temp file and its directory
    assert [e.version for e in Workspace(ws.root).collab.history("plan.md")] == [1, 2]
